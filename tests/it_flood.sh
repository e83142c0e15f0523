# it_flood.sh - one million malformed messages, with good requests between.
#
# telemd (TCP with the job's keys, /metrics on --http-port 0), telem_dictd
# (ipc and TCP, the same keys) and telem_agg (a bearer token) run twice,
# each time fresh, on the same node of a private run directory:
#
#   clean: the good requests alone;
#   flood: the same good requests between malformed ones.
#
# The flood (tests/flood_peer.c, flood_bad.c, flood_good.c) sends
# 1,000,000 malformed messages in 10,000 rounds of 100, spread evenly over
# telemd's ingest socket (ipc), its control socket (ipc), its TCP query
# endpoint (CURVE: the helper holds the keys, so the bytes reach the
# decoders) and telem_dictd's ipc and TCP (CURVE) endpoints: random
# bytes, valid messages cut short, fields of a wrong msgpack type, counts
# and lengths of 2^32-1 (array32, map32, str32, bin32), nesting thousands
# deep (in a field, or under an unknown key a decoder must skip), more
# frames than a socket takes, and messages of a kind the socket
# does not take (a batch on a request socket, a request on ingest, a
# dictionary message to telemd and telemd's to the dictionary, replies).
# After each round, on each of those sockets, good requests that must be
# answered correctly: a batch confirmed by SYNC (a good sample in every
# tenth), a query that must end with the newest good samples, a status, a
# dictionary put on one dictionary socket read back on the other (50,000
# in all); at the end telemd must hold every good sample.  Each round's good
# requests are answered only after its malformed messages were read (a
# connection keeps its order), so no daemon holds more than a round of
# them queued.  telemd's bad_messages
# must grow by exactly what it was sent, each malformed request to it must
# get its refusal, and telem_dictd's telem_dict_bad_messages must reach
# exactly what it was sent.
#
# Then 10,000 malformed HTTP requests each to telem_agg and to telemd's
# /metrics (flood_http.c: bad request lines, bad and huge headers, bad
# Content-Length, bodies cut short, bad JSON, bad tokens), a good request
# after every 100 that must be answered 200 with the good metric, while a
# few partial requests (slowloris) are held open: 16 to telem_agg (its cap
# is 64 connections), 8 to /metrics (cap 32).
#
# Each daemon's peak (VmHWM) and resident (VmRSS) memory after the flood
# must be within 10 % of the clean run's; each must still answer, and exit
# 0 on SIGTERM.  Under AddressSanitizer the memory figures are printed, not
# compared: its allocator keeps freed memory in quarantine (256 MB), so
# the churn of a million messages raises both whatever the daemon holds.
# Waits are for behaviour (ready lines, replies); all traffic is on
# 127.0.0.1 or ipc.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
F=$TELEM_BIN/flood_peer
[ -x "$F" ] || fail "$F missing"
ROUNDS=10000
PER_ROUND=100
HTTP_BAD=10000
HTTP_EVERY=100
# (ldd's output is read whole, as in it_hostile.sh.)
ASAN=0
[[ $(ldd "$TELEM_BIN/telemd") == *libasan* ]] && ASAN=1
NODE=f1
"$F" keys "$T/keys" || fail "no keys"
echo "flood-token-$RANDOM$RANDOM" >"$T/token"
chmod 600 "$T/token"
declare -A MEM=()

# endpoint FILE KIND: the endpoint a daemon printed as 'KIND<TAB>EP'.
endpoint() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

status_kb() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }

# start NAME OUT READY CMD...: starts a daemon, waits for its READY line.
start() {
    local name=$1 out=$2 ready=$3; shift 3
    "$@" >"$out" 2>"$T/$name.log" &
    NODE_PID[$name]=$!
    wait_for grep -q "$ready" "$out" || fail "$name did not start"
}

# stop NAME: SIGTERM, then its exit status must be 0 (within 30 s).
stop() {
    local pid=${NODE_PID[$1]} rc=0
    kill -TERM "$pid"
    for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$pid" 2>/dev/null && fail "$1 did not stop on SIGTERM"
    wait "$pid" || rc=$?
    unset "NODE_PID[$1]"
    [ "$rc" = 0 ] || fail "$1 exited $rc on SIGTERM"
}

# start_all PHASE: telemd, telem_dictd and telem_agg for one phase.
start_all() {
    local p=$1 rd=$T/$1/run
    mkdir -p "$T/$p" && mkdir -m 700 "$rd"
    start "$p.telemd" "$T/$p/telemd.out" '^ready$' "$TELEM_BIN/telemd" \
        --node "$NODE" --rundir "$rd" --keys "$T/keys" --no-log --level 1 \
        --window 3600 --http-port 0
    start "$p.dictd" "$T/$p/dictd.out" '^ready$' "$TELEM_BIN/telem_dictd" \
        --node "$NODE" --rundir "$rd" --keys "$T/keys" --bind 127.0.0.1 \
        --sync none
    printf '%s\t%s\n' "$NODE" "$(endpoint "$T/$p/telemd.out" ctl)" \
        >"$T/$p/nodes"
    start "$p.agg" "$T/$p/agg.out" '^telem_agg: serving' \
        "$TELEM_BIN/telem_agg" --port 0 --rundir "$rd" \
        --nodefile "$T/$p/nodes" --token-file "$T/token"
}

# floods PHASE [--clean]: the ZeroMQ flood, then the HTTP floods.
floods() {
    local p=$1; shift
    local out=$T/$p/telemd.out
    local ports rc=0
    "$F" zmq "$@" --node "$NODE" --keys "$T/keys" \
        --ingest "$(endpoint "$out" ingest)" --ctl "$(endpoint "$out" ctl)" \
        --tcp "$(endpoint "$out" query)" \
        --dict-ipc "ipc://$T/$p/run/$NODE/dict.sock" \
        --dict-tcp "$(endpoint "$T/$p/dictd.out" endpoint)" \
        --rounds "$ROUNDS" --per-round "$PER_ROUND" >"$T/$p/zmq.txt" 2>&1 \
        || rc=$?
    sed "s/^/$p: /" "$T/$p/zmq.txt"
    [ "$rc" = 0 ] || fail "$p: the ZeroMQ flood failed"
    ports=$(endpoint "$out" metrics | sed 's|.*:\([0-9]*\)/metrics|\1|')
    "$F" http "$@" --metrics --port "$ports" --bad "$HTTP_BAD" \
        --every "$HTTP_EVERY" --slow 8 >"$T/$p/metrics.txt" 2>&1 \
        || { cat "$T/$p/metrics.txt"; fail "$p: the /metrics flood failed"; }
    sed "s/^/$p: /" "$T/$p/metrics.txt"
    ports=$(sed -n 's|^telem_agg: serving http://[^:]*:\([0-9]*\)/.*|\1|p' \
        "$T/$p/agg.out")
    "$F" http "$@" --port "$ports" --token-file "$T/token" --bad "$HTTP_BAD" \
        --every "$HTTP_EVERY" --slow 16 >"$T/$p/agg.txt" 2>&1 \
        || { cat "$T/$p/agg.txt"; fail "$p: the telem_agg flood failed"; }
    sed "s/^/$p: /" "$T/$p/agg.txt"
}

# answering PHASE: each daemon still answers (over other connections).
answering() {
    local p=$1 ports
    "$TELEM_BIN/telem_client" --nodefile "$T/$p/nodes" --timeout 10000 \
        status >"$T/$p/status.txt" || fail "$p: telemd does not answer"
    grep -q "| $NODE | ok |" "$T/$p/status.txt" || fail "$p: telemd status"
    printf '%s\tipc://%s\n' "$NODE" "$T/$p/run/$NODE/dict.sock" \
        >"$T/$p/dict_ipc"
    [ "$("$TELEM_BIN/telem_dict" --nodefile "$T/$p/dict_ipc" --ns flood \
        get good-1)" = "value of round 1, seed 42" ] \
        || fail "$p: telem_dictd does not answer"
    ports=$(sed -n 's|^telem_agg: serving http://[^:]*:\([0-9]*\)/.*|\1|p' \
        "$T/$p/agg.out")
    "$F" http --clean --port "$ports" --token-file "$T/token" --bad 1 \
        --every 1 >/dev/null || fail "$p: telem_agg does not answer"
}

# phase NAME [--clean]: fresh daemons, the floods, their memory, SIGTERM.
phase() {
    local p=$1; shift
    start_all "$p"
    local t0=$SECONDS
    floods "$p" "$@"
    echo "$p: the floods took $((SECONDS - t0)) s"
    for d in telemd dictd agg; do
        local pid=${NODE_PID[$p.$d]}
        MEM[$p.$d.hwm]=$(status_kb "$pid" VmHWM)
        MEM[$p.$d.rss]=$(status_kb "$pid" VmRSS)
    done
    answering "$p"
    for d in agg dictd telemd; do stop "$p.$d"; done
    echo "$p: every daemon answered to the end and exited 0 on SIGTERM"
}

# compare DAEMON FIELD: flood within 10 % of clean (KiB).
compare() {
    local c=${MEM[clean.$1.$2]} f=${MEM[flood.$1.$2]}
    local pct=$(( (f - c) * 1000 / c ))
    printf '  %-7s %-6s clean %7d KiB  flood %7d KiB  (%+d.%d %%)\n' "$1" \
        "$2" "$c" "$f" $((pct / 10)) $(( (pct < 0 ? -pct : pct) % 10 ))
    [ "$ASAN" = 1 ] || [ $((f * 10)) -le $((c * 11)) ] \
        || fail "$1: $2 after the flood $f KiB, over 110 % of the clean run's $c KiB"
}

t0=$SECONDS
phase clean --clean
phase flood
echo "memory after the floods (VmHWM: peak, VmRSS: resident):"
for d in telemd dictd agg; do
    compare "$d" hwm
    compare "$d" rss
done
if [ "$ASAN" = 1 ]; then
    echo "ASan build: memory printed, not compared (its allocator keeps" \
         "freed memory in quarantine, so a million messages raise it)"
fi
echo "it_flood: ok in $((SECONDS - t0)) s"
