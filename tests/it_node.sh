# it_node.sh - one real telemd: flags, a relative run directory and one
# whose parent is missing, start-up, a program's samples stored and read
# back, the per-node lock, and a clean stop.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
C=$TELEM_BIN/telem_client

expect_rc 0 "$TELEM_BIN/telemd" --help
expect_rc 2 "$TELEM_BIN/telemd" --level 7
expect_rc 2 "$TELEM_BIN/telemd" --window -1
expect_rc 2 "$TELEM_BIN/telemd" --no-such-flag
expect_rc 2 "$TELEM_BIN/telemd" --node "a/b"
expect_rc 0 "$C" --help
expect_rc 2 "$C" --no-such-flag

# A relative run directory, from --rundir or $TELEM_RUNDIR, is made
# absolute against the current directory: the printed endpoints, the
# endpoints file and the node file all name absolute paths.
abs=$(cd "$T" && pwd -P)
(cd "$T" && exec "$TELEM_BIN/telemd" --node r1 --rundir rel --bind none \
    --nodefile rel-nodes) >"$T/r1.out" 2>"$T/r1.log" &
NODE_PID[r1]=$!
(cd "$T" && TELEM_RUNDIR=./rel exec "$TELEM_BIN/telemd" --node r2 \
    --bind none --nodefile rel-nodes) >"$T/r2.out" 2>"$T/r2.log" &
NODE_PID[r2]=$!
for n in r1 r2; do
    wait_for grep -qx ready "$T/$n.out" || fail "$n: relative run directory"
    grep -qx "ingest	ipc://$abs/rel/$n/ingest.sock" "$T/$n.out" \
        || fail "$n: relative ingest endpoint: $(cat "$T/$n.out")"
    grep -qx "ctl	ipc://$abs/rel/$n/ctl.sock" "$T/rel/$n/endpoints" \
        || fail "$n: endpoints file: $(cat "$T/rel/$n/endpoints")"
    grep -qx "$n	ipc://$abs/rel/$n/ctl.sock" "$T/rel-nodes" \
        || fail "$n: node file: $(cat "$T/rel-nodes")"
    stop_node "$n"
done
# Only the run directory itself is created: a missing parent is named.
expect_rc 1 "$TELEM_BIN/telemd" --node m1 --rundir "$T/no/such/run" \
    2>"$T/noparent.err"
grep -q "run directory $T/no/such/run: its parent $T/no/such does not exist" \
    "$T/noparent.err" || fail "missing parent: $(cat "$T/noparent.err")"
[ ! -e "$T/no" ] || fail "telemd created the run directory's parents"

start_node n1 --interval 0.1 --level 2
grep -q "^query	tcp://127.0.0.1:" "$T/n1.out" || fail "no TCP query endpoint printed"
grep -q "^n1	tcp://127.0.0.1:" "$TELEM_NODEFILE" || fail "node file not written"
test -S "$TELEM_RUNDIR/n1/ingest.sock" || fail "no ingest socket"
[ "$(stat -c %a "$TELEM_RUNDIR/n1")" = 700 ] || fail "node directory not private"

# A second agent for the same node must refuse, not steal its sockets.
expect_rc 1 "$TELEM_BIN/telemd" --node n1 --no-handover
grep -q "already running" "$T/n1.log" 2>/dev/null || true

# A real program records 500 samples; all of them are read back.
TELEM_NODE=n1 TELEM_LEVEL=1 "$TELEM_BIN/add_data_demo" --count 500 \
    --metric demo_value >"$T/demo.out" 2>&1 || fail "add_data_demo failed: $(cat "$T/demo.out")"
"$C" -f json query demo_value >"$T/q.json" || fail "query failed"
python3 - "$T/q.json" <<'PY' || fail "query result wrong: $(head -c 600 "$T/q.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
series = [s for s in doc["series"] if s["metric"] == "demo_value"]
assert len(series) == 1, series
s = series[0]
assert s["tags"]["host"] == "n1", s["tags"]
assert "pid" in s["tags"], s["tags"]
ts = [p[0] for p in s["points"]]
assert len(ts) == 500, len(ts)
assert ts == sorted(ts)
PY

# Node metrics appear at level 2.
wait_for "$C" -g cpu_percent -f json || fail "no cpu_percent"
"$C" -f json -g cpu_percent,used_ram,num_running_processes >"$T/g.json"
python3 - "$T/g.json" <<'PY' || fail "node metrics wrong: $(cat "$T/g.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
got = {s["metric"]: s["points"][-1][1] for s in doc["series"]}
assert 0 <= got["cpu_percent"] <= 100, got
assert 0 < got["used_ram"] < 100, got
assert got["num_running_processes"] >= 1, got
PY

"$C" status >"$T/status.txt" || fail "status failed"
grep -q n1 "$T/status.txt" || fail "status does not name n1"

# SIGTERM stops it cleanly and removes its sockets.
pid=${NODE_PID[n1]}
kill -TERM "$pid"
rc=0; wait "$pid" || rc=$?
unset "NODE_PID[n1]"
[ "$rc" = 0 ] || fail "telemd exited $rc after SIGTERM"
test ! -e "$TELEM_RUNDIR/n1/ingest.sock" || fail "ingest socket left behind"
echo "it_node: ok"
