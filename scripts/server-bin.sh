# Sourced by the scripts that run a binary of ocpp-examples (interop.sh, interop-ocpp.sh,
# autobahn.sh): `server_bin PREFIX NAME` sets BIN to the binary NAME, logging as PREFIX.
#
#   SERVER_BIN_DIR=DIR  DIR/NAME, not built (.ci/run: target/debug, where the test step's
#                       `cargo test` put every binary of ocpp-examples for its integration
#                       tests; `cargo build -p ocpp-examples` would build most of the graph
#                       again, since it resolves other features than `cargo test --workspace`)
#   SERVER_PROFILE=P    built in cargo profile P [release]
server_bin() {
  local prefix="$1" name="$2" profile dir target
  if [ -n "${SERVER_BIN_DIR:-}" ]; then
    BIN="$SERVER_BIN_DIR/$name"
    echo "$prefix: using $BIN (SERVER_BIN_DIR; not building)"
  else
    profile="${SERVER_PROFILE:-release}"
    echo "$prefix: building $name (profile $profile)"
    cargo build --profile "$profile" --quiet -p ocpp-examples --bin "$name" || return
    target="${CARGO_TARGET_DIR:-$(cargo metadata --format-version 1 --no-deps \
      | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')}"
    case "$profile" in dev | test) dir=debug ;; bench) dir=release ;; *) dir="$profile" ;; esac
    BIN="$target/$dir/$name"
  fi
  [ -x "$BIN" ] || { echo "$prefix: $BIN is not an executable" >&2; return 2; }
}
