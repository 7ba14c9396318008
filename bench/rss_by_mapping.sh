#!/usr/bin/env bash
# Where a server's resident memory is, by mapping, before and after it holds idle charge points:
#
#   bash bench/rss_by_mapping.sh SERVER_BINARY [CHARGE_POINTS] [LOAD_BINARY]
#
# Starts the server (state in memory, one thread), reads /proc/PID/smaps, boots CHARGE_POINTS
# (10000) idle charge points with ocpp-load at 1,000 a second, reads smaps again once all are
# booted, and prints for each kind of mapping the resident KiB before and after and the growth
# per charge point: the executable's pages (file-backed: code and read-only data, shared by
# every process that runs it, read back from the file when the kernel wants the memory), the
# shared libraries', and the anonymous memory (heap and mmap'd: what the charge points cost).
# RSS counts all of them; `bench/run.sh` reports RSS and the anonymous part beside it.
# Build first: cargo build --release -p ocpp-examples --bin mio-server --bin tokio-server --bin ocpp-load
set -euo pipefail
server=${1:?the server binary (mio-server or tokio-server)}
count=${2:-10000}
cd "$(dirname "$0")/.."
load=${3:-./target/release/ocpp-load}
port=${RSS_PORT:-9612}
export OCPP_DATABASE_URL=memory

# Resident KiB by kind of mapping of process $1, as "kind kib" lines.
by_mapping() {
    python3 - "$1" "$(basename "$server")" <<'EOF'
import re, sys
pid, exe = sys.argv[1], sys.argv[2]
kinds, kind = {}, None
with open(f"/proc/{pid}/smaps") as smaps:
    for line in smaps:
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            fields = line.split()
            path = fields[5] if len(fields) > 5 else ""
            perms = fields[1]
            if path.endswith("/" + exe):
                kind = "executable, writable" if "w" in perms else "executable, code and read-only data"
            elif path.startswith("/"):
                kind = "shared libraries"
            else:
                kind = "anonymous (heap, mmap, stacks)"
        elif line.startswith("Rss:") and kind:
            kinds[kind] = kinds.get(kind, 0) + int(line.split()[1])
for kind, kib in sorted(kinds.items()):
    print(f"{kind}\t{kib}")
EOF
}

"$server" --listen "127.0.0.1:$port" --admin 127.0.0.1:0 --threads 1 >/dev/null 2>&1 &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true' EXIT
sleep 2
before=$(by_mapping "$server_pid")
"$load" idle --url "ws://127.0.0.1:$port/ocpp" --count "$count" --rate 1000 \
    --duration-s $(( count / 1000 + 15 )) >/dev/null 2>&1 &
load_pid=$!
sleep $(( count / 1000 + 10 ))
after=$(by_mapping "$server_pid")
wait "$load_pid" || true
echo "$(basename "$server"), $count idle booted charge points: resident KiB by mapping"
python3 - "$count" "$before" "$after" <<'EOF'
import sys
count = int(sys.argv[1])
parse = lambda text: dict((l.split("\t")[0], int(l.split("\t")[1])) for l in text.splitlines() if l)
before, after = parse(sys.argv[2]), parse(sys.argv[3])
print(f"{'mapping':40} {'before':>9} {'after':>9} {'B per charge point':>19}")
total = 0
for kind in sorted(set(before) | set(after)):
    b, a = before.get(kind, 0), after.get(kind, 0)
    total += a - b
    print(f"{kind:40} {b:9} {a:9} {(a - b) * 1024 / count:19.0f}")
print(f"{'all (RSS)':40} {sum(before.values()):9} {sum(after.values()):9} {total * 1024 / count:19.0f}")
EOF
