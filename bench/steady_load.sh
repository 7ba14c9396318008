# Sourced by bench/callgrind_servers.sh and bench/syscalls_servers.sh: the server's command line
# and the steady load both measure, so that their figures are per the same unit.
#
# In: the arguments SERVER_BINARY [CHARGE_POINTS] [LOAD_BINARY], $port, $admin,
# CALLGRIND_SCENARIO (heartbeat or push), CALLGRIND_EXTRA. Out: $server, $count, $load, $out (a
# new directory), $scenario, the array args, $metric (the counter the unit is read from), $unit
# and $units; start_load COUNT DURATION_S LOAD_BINARY OUT_FILE (in the background, its PID in
# $load_pid); counter (the metric's value now).
server=${1:?the server binary (mio-server, tokio-server or uring-server)}
count=${2:-200}
load=${3:-./target/release/ocpp-load}
out=$(mktemp -d)
scenario=${CALLGRIND_SCENARIO:-heartbeat}
# The servers keep no state between runs here unless OCPP_DATABASE_URL says where (their
# default is a SQLite file in the working directory).
export OCPP_DATABASE_URL="${OCPP_DATABASE_URL:-memory}"
args=(--listen "127.0.0.1:$port" --admin "127.0.0.1:$admin")
case "$(basename "$server")" in
    mio-server | uring-server) args+=(--threads 1) ;;
esac
# shellcheck disable=SC2206 # words on purpose
args+=(${CALLGRIND_EXTRA:-})
metric=ocpp_messages_in_total unit=request units=requests
if [ "$scenario" = push ]; then
    args+=(--push-interval-ms 500)
    metric=ocpp_calls_sent_total unit=push units=pushes
fi

start_load() {
    local count=$1 duration=$2 load=$3 log=$4
    if [ "$scenario" = push ]; then
        "$load" push --url "ws://127.0.0.1:$port/ocpp" --count "$count" --rate 100 \
            --duration-s "$duration" >"$log" 2>&1 &
    else
        "$load" heartbeat --url "ws://127.0.0.1:$port/ocpp" --count "$count" --rate 100 \
            --duration-s "$duration" --heartbeat-s 1 --status-s 3 --meter-s 3 >"$log" 2>&1 &
    fi
    load_pid=$!
}

counter() { curl -s "http://127.0.0.1:$admin/metrics" | awk -v m="$metric" '$1 == m {print $2}'; }
