# it_watch_rules.sh - threshold, proc-threshold and heartbeat through the
# real watcher, on data from add_data_demo and telemd's own samplers.
#
# Three nodes at level 2 sampling every 0.2 s, each reading a proc root of
# its own (telemd --proc-root: the real /proc files by symbolic links plus
# fake process directories), so the process counts are fixed whatever else
# runs: none on n1 and n2, 40 on n3.  proc-threshold with limit 10 names n3
# only.  add_data_demo records "hot" = 0..39 on n2
# and 0..9 on n1: threshold hot >= 30 for 0.1 s names n2 only.  Then n1 is
# killed with SIGKILL: heartbeat (timeout 5 s) names n1, and only n1, and
# says it did not answer.  Every event at warn or above also goes through
# --exec, whose output must hold the same events as JSON.  Each event is
# reported once.  The restart action points at an endpoint nobody serves:
# the request for n3 is reported as timed out and the watcher goes on.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
B=$TELEM_BIN
W=$B/telem_watch
# Fake proc roots: the real /proc files, and either no process at all
# (n1, n2) or 40 processes of the user running the test (n3).
for r in none forty; do
    mkdir "$T/proc-$r"
    for f in stat meminfo loadavg uptime net diskstats; do
        ln -s "/proc/$f" "$T/proc-$r/$f"
    done
done
for p in $(seq 101 140); do mkdir "$T/proc-forty/$p"; done

# Agents without TCP endpoints: queries go over ipc in this test's run
# directory, so no other test's agent (also called n1...) can answer them.
start_node n1 --level 2 --interval 0.2 --proc-root "$T/proc-none" --bind none
start_node n2 --level 2 --interval 0.2 --proc-root "$T/proc-none" --bind none
start_node n3 --level 2 --interval 0.2 --proc-root "$T/proc-forty" --bind none

# procs: node<TAB>newest num_running_processes, for every node.
procs() {
    "$B/telem_client" -f json -g num_running_processes | python3 -c '
import json, sys
for s in json.load(sys.stdin)["series"]:
    print(s["tags"]["host"] + "\t" + str(int(s["points"][-1][1])))'
}
nprocs_is() { [ "$(procs | wc -l)" = "$1" ]; }
wait_for nprocs_is 3 || fail "no num_running_processes"
[ "$(procs | sort | tr '\t\n' ':,')" = "n1:0,n2:0,n3:40," ] \
    || fail "unexpected process counts: $(procs)"
limit=10

"$W" --json --period 0.25 --timeout 1000 --act-on warn \
    --detector "hot=threshold:metric=hot,op=>=,value=30,duration=0.1" \
    --detector "proc-threshold:limit=$limit" \
    --detector heartbeat:timeout=5 \
    --exec "cat >> '$T/exec.jsonl'" \
    --restart-endpoint "ipc://$T/nobody-listens.sock" --restart-timeout 1000 \
    >"$T/watch.out" 2>"$T/watch.log" &
WATCH=$!
EXTRA_PIDS+=("$WATCH")
wait_for test -S "$TELEM_RUNDIR/telem_watch/ctl.sock" || fail "watcher not up"

TELEM_NODE=n2 "$B/add_data_demo" --count 40 --metric hot --interval-ms 25 \
    --quiet || fail "add_data_demo on n2"
TELEM_NODE=n1 "$B/add_data_demo" --count 10 --metric hot --quiet \
    || fail "add_data_demo on n1"

# has DETECTOR NODE: an event of DETECTOR naming NODE was printed.
has() {
    python3 - "$T/watch.out" "$1" "$2" <<'PY'
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1]) if '"type":"event"' in l]
sys.exit(0 if any(e["detector"] == sys.argv[2] and sys.argv[3] in e["nodes"]
                  for e in evs) else 1)
PY
}
wait_for has hot n2 || fail "threshold did not name n2: $(cat "$T/watch.out")"
wait_for has proc-threshold n3 || fail "proc-threshold did not name n3"
# A few more ticks: nothing else may come.
ticks() {
    "$W" ctl --json status | python3 -c '
import json, sys
print([r["value"] for r in json.load(sys.stdin)["rows"] if r["key"] == "ticks"][0])'
}
ticks_above() { [ "$(ticks)" -gt "$1" ]; }
wait_for ticks_above $(($(ticks) + 8)) || fail "watcher stopped ticking"

# The restart request for n3 finds no launcher: reported as timed out,
# and the watcher goes on.
restart_timed_out() {
    grep -q '"type":"restart".*"status":"timeout".*"exclude":\["n3"\]' \
        "$T/watch.out"
}
wait_for restart_timed_out || fail "no restart timeout: $(grep restart "$T/watch.out")"
grep -q "no acknowledgement from" "$T/watch.log" || fail "timeout not logged"

stop_node n1 KILL
wait_for has heartbeat n1 || fail "heartbeat did not name n1: $(cat "$T/watch.out")"
# --exec runs in the background: wait for the third event to be written.
lines_ge() { [ "$(wc -l <"$1")" -ge "$2" ]; }
wait_for lines_ge "$T/exec.jsonl" 3 || fail "--exec output missing"
kill -TERM "$WATCH"
wait "$WATCH" || fail "telem_watch did not exit cleanly"

python3 - "$T/watch.out" "$T/exec.jsonl" <<'PY' || fail "events wrong: $(grep event "$T/watch.out"; echo; cat "$T/exec.jsonl")"
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1]) if '"type":"event"' in l]
seen = sorted((e["detector"], tuple(e["nodes"])) for e in evs)
assert seen == [("heartbeat", ("n1",)), ("hot", ("n2",)),
                ("proc-threshold", ("n3",))], seen
hot = [e for e in evs if e["detector"] == "hot"][0]
assert hot["severity"] == "warn" and hot["evidence"]["value"] >= 30, hot
assert hot["evidence"]["held_s"] >= 0.1, hot
proc = [e for e in evs if e["detector"] == "proc-threshold"][0]
assert proc["severity"] == "act", proc
hb = [e for e in evs if e["detector"] == "heartbeat"][0]
assert hb["severity"] == "act" and hb["evidence"]["answered"] == 0, hb
assert hb["evidence"]["silent_s"] > 5, hb
ex = [json.loads(l) for l in open(sys.argv[2])]
assert sorted(e["seq"] for e in ex) == sorted(e["seq"] for e in evs), ex
assert all(x == y for x, y in zip(sorted(ex, key=lambda e: e["seq"]),
                                  sorted(evs, key=lambda e: e["seq"])))
PY
echo "it_watch_rules: ok"
