# it_watch.sh - telem_watch --detector slowgpu on a real collector group.
#
# Three virtual nodes, one cpu device each (telem_collect --devices 0
# --local-devices 0 --spread, 0.25 s rounds of 5 repetitions): all three
# collectors take turns on core 0, each in its own third of every 50 ms,
# so they are measured on the same hardware at nearly the same instants.
#
# 1. Clean: a watcher judges at least 60 rounds and reports nothing.
# 2. Load: telem_load contends for core 0 inside n2's turn only (busy 1.5
#    ms of every 2 ms of that window), which leaves n2's repetitions about
#    a quarter of the core; a fresh watcher names n2 and device 0, and its
#    restart request reaches a receiver playing the launcher (test_watch
#    --restart-sink), which acks it.
# 3. Live control: status, thresholds, set (good and bad), pause, resume.
# 4. A node killed with SIGKILL is reported missing and the watcher goes on
#    ticking and answering.
#
# Where this user may use real-time scheduling (root), the collectors run
# SCHED_FIFO 20 and the load SCHED_FIFO 30, as in it_collect: other work
# cannot preempt the collectors, and the load preempts n2's at once.  The
# test's slowgpu asks for a 2x slowdown (effect=1) in 3 of 4 rounds, the
# load's effect is about 4x.  The drift rule is off (drift=0): it is
# tested on fixed tables in test_detectors.
# Work this test did not start can still make a device really slow
# (a compiler on n2's core is contention too, and flagging it is right), so
# the test samples /proc/stat while it waits: events before the load (or
# naming another node during it) fail the test unless some core was over
# 70 % busy for a second, which our own processes never reach; then the
# detection parts are undecided, not passed.  Likewise, when n2 is not
# named under the load, the collectors' own figures decide: if n2's
# slowdown cleared the detector's bar against the devices' measured
# round-to-round noise (examples/slow_gpu_noise.py), the test fails;
# if other work made the noise too high, the detection is undecided.  The
# other parts (live control, a dead node) still run, and an undecided
# detection makes the test report itself skipped with the measured figures
# (never passed, never failed).  CTest runs this test alone (RUN_SERIAL).
# Waits are on behaviour (rounds judged, events seen) with generous caps,
# never on fixed times.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
B=$TELEM_BIN
W=$B/telem_watch

# ---- command lines ------------------------------------------------------
expect_rc 0 "$W" --help >/dev/null
expect_rc 0 "$W" --list >"$T/list.txt"
grep -q "^slowgpu" "$T/list.txt" || fail "--list does not show slowgpu"
expect_rc 2 "$W"
expect_rc 2 "$W" --detector nope
expect_rc 2 "$W" --detector slowgpu --period 0
expect_rc 2 "$W" --detector slowgpu --act-on maybe
expect_rc 2 "$W" --detector slowgpu:k=9
expect_rc 2 "$W" --detector threshold
expect_rc 2 "$W" --detector slowgpu stray
expect_rc 0 "$W" ctl --help >/dev/null
expect_rc 2 "$W" ctl
expect_rc 2 "$W" ctl set slowgpu
expect_rc 2 "$W" ctl frobnicate
expect_rc 1 "$W" ctl --name nobody status
expect_rc 1 "$W" --detector slowgpu --nodefile "$T/missing" --count 1

# ---- the job ------------------------------------------------------------
# Agents without TCP endpoints: queries go over ipc in this test's run
# directory, so no other test's agent (also called n1...) can answer them.
for n in n1 n2 n3; do start_node "$n" --level 1 --bind none; done
COLPRIO=() LOADPRIO=()
if chrt -f 20 true 2>/dev/null; then COLPRIO=(chrt -f 20) LOADPRIO=(chrt -f 30); fi
"${COLPRIO[@]}" "$B/telem_collect" --devices 0 --period 0.25 --reps 5 \
    --spread --local-devices 0 --name "itw-$$" \
    >"$T/collect.out" 2>"$T/collect.log" &
EXTRA_PIDS+=("$!")
wait_for grep -qx ready "$T/collect.out" || fail "telem_collect not ready"
# "node n2 device 0 -> cpu device J (id C) phase P ms pid PID"
core2=$(awk '$1 == "node" && $2 == "n2" { print $8 }' "$T/collect.out")
phase2=$(awk '$1 == "node" && $2 == "n2" { print $12 / 1000 }' "$T/collect.out")
[ -n "$core2" ] && [ -n "$phase2" ] || fail "no device map: $(cat "$T/collect.out")"

UNDECIDED=()
# start_watcher NAME OUT [options]: a watcher of this test's slowgpu.
start_watcher() {
    local name=$1 out=$2; shift 2
    "$W" --name "$name" --detector slowgpu:effect=1,k=3,n=4,drift=0 --json \
        --period 0.25 --timeout 500 "$@" >"$out" 2>"$out.log" &
    EXTRA_PIDS+=("$!")
    WATCH=$!
    wait_for test -S "$TELEM_RUNDIR/$name/ctl.sock" || fail "watcher $name not up"
}
start_watcher clean "$T/clean.out"
CLEAN=$WATCH
grep -q '"type":"start"' "$T/clean.out" || fail "no start line"
expect_rc 1 "$W" --name clean --detector slowgpu --count 1  # name taken

# ctl_value KEY [DETECTOR]: a row of `ctl --json status` of the watcher
# called $NAME.
NAME=clean
ctl_value() {
    "$W" ctl --name "$NAME" --json status | python3 -c '
import json, sys
doc = json.load(sys.stdin)
vals = [r["value"] for r in doc["rows"]
        if r["key"] == sys.argv[1] and r["detector"] == sys.argv[2]]
print("\n".join(vals))' "$1" "${2:-}"
}

# monitor.py TELEM_WATCH NAME OUT UNTIL: waits (at most 120 s) until slowgpu has judged N more
# rounds ("rounds N") or an event names n2/0 ("n2"), sampling /proc/stat
# meanwhile; prints the highest share of any core that was busy over any
# 1 s, in percent (our own processes use well under 30 % of a core).
export SRC=${TELEM_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cat >"$T/monitor.py" <<'PY'
import json, os, subprocess, sys, time
W, name, out, until = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
sys.path.insert(0, os.path.join(os.environ["SRC"], "examples"))
import cpu_busy                      # (total, not busy) jiffies per core
def cores():
    return cpu_busy.cores(count_nice=True)
def rounds():
    try:
        doc = json.loads(subprocess.run([W, "ctl", "--name", name, "--json",
                                         "status"],
                         capture_output=True, text=True, timeout=10).stdout)
        return max([int(r["value"]) for r in doc["rows"]
                    if r["detector"] == "slowgpu" and r["key"] == "rounds"] + [0])
    except Exception:
        return 0
def n2_named():
    for l in open(out):
        if '"type":"event"' in l and '{"node":"n2","device":"0"}' in l:
            return True
    return False
start_rounds, busiest, hist = rounds(), 0.0, [(time.time(), cores())]
deadline = time.time() + 120
while time.time() < deadline:
    time.sleep(0.2)
    now = (time.time(), cores())
    hist.append(now)
    old = [h for h in hist if now[0] - h[0] >= 1.0]
    if old:
        t0, c0 = old[-1]
        for k in now[1]:
            dt, di = now[1][k][0] - c0[k][0], now[1][k][1] - c0[k][1]
            if dt > 0:
                busiest = max(busiest, 100.0 * (dt - di) / dt)
        hist = [h for h in hist if now[0] - h[0] < 2.0]
    if until[0] == "rounds" and rounds() - start_rounds >= int(until[1]):
        break
    if until[0] == "n2" and n2_named():
        break
else:
    print(int(busiest)); sys.exit(1)
print(int(busiest))
PY

events() { grep -c '"type":"event"' "$1" || true; }

# Events during a phase are only forgiven when some core was more than 70 %
# busy for a second with work this test did not start: then they are real
# contention, which is what the detector is for.  CTest runs this test
# alone (RUN_SERIAL), so on a CI machine that never happens.
BUSY=70

# ---- 1. clean rounds: no event -----------------------------------------
busy=$(python3 "$T/monitor.py" "$W" clean "$T/clean.out" rounds 60) \
    || fail "the watcher did not judge 60 rounds in 120 s"
if [ "$(events "$T/clean.out")" != 0 ]; then
    [ "$busy" -gt "$BUSY" ] || fail "events without any load (busiest \
core ${busy} %): $(grep event "$T/clean.out")"
    UNDECIDED+=("$(events "$T/clean.out") event(s) in the clean phase while a \
core was ${busy} % busy with work this test did not start")
fi
echo "clean: $(ctl_value rounds slowgpu) rounds judged," \
    "$(events "$T/clean.out") events, busiest core ${busy} %"
kill -TERM "$CLEAN"
wait "$CLEAN" || fail "telem_watch did not exit cleanly on SIGTERM"
[ ! -e "$TELEM_RUNDIR/clean/endpoints" ] || fail "endpoints file left"

# ---- 2. a real load on n2's device -------------------------------------
# A fresh watcher (1 s of history) with the restart action, then the load.
"$B/test_watch" --restart-sink "ipc://$T/launch.sock" --count 20 --idle 0 \
    >"$T/sink.out" 2>"$T/sink.log" &
EXTRA_PIDS+=("$!")
wait_for grep -qx ready "$T/sink.out" || fail "restart receiver not ready"
NAME=telem_watch
start_watcher telem_watch "$T/watch.out" --set slowgpu.window=1 \
    --restart-endpoint "ipc://$T/launch.sock" --restart-timeout 5000
load_ns=$(date +%s%N)
"${LOADPRIO[@]}" "$B/telem_load" --device "$core2" --cycle-ms 2 --duty 0.75 \
    --period 0.05 --window 0.0166 --phase "$phase2" >"$T/load.out" \
    2>"$T/load.log" &
LOAD=$!
EXTRA_PIDS+=("$LOAD")
named=1
busy=$(python3 "$T/monitor.py" "$W" telem_watch "$T/watch.out" n2) || named=0
if [ "$named" = 0 ]; then
    # Not named: was the slowdown clear against the devices' own noise?
    # (slowgpu:effect=1 here, z 3.)
    "$B/telem_client" -f json query cg_dgemm_seconds --start -300s \
        >"$T/rounds.json" || true
    jrc=0
    figures=$(python3 "$SRC/examples/slow_gpu_noise.py" n2 "$load_ns" 1 3 \
              <"$T/rounds.json") || jrc=$?
    [ "$jrc" = 3 ] || fail "n2/0 not named within 120 s of the load \
(busiest core ${busy} %): $figures"
    UNDECIDED+=("n2/0 not named within 120 s of the load: $figures")
    kill "$LOAD"
fi
prc=0
[ "$named" = 0 ] || python3 - "$T/watch.out" "$busy" "$BUSY" <<'PY' || prc=$?
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1]) if '"type":"event"' in l]
n2 = [e for e in evs if e["devices"] == [{"node": "n2", "device": "0"}]
      and e["severity"] == "act"]
assert n2, evs
e = n2[0]
assert e["detector"] == "slowgpu" and e["nodes"] == ["n2"], e
assert e["evidence"]["ratio"] >= 2, e
others = [x for x in evs[:evs.index(e)] if x["nodes"] != ["n2"]]
assert not others or int(sys.argv[2]) > int(sys.argv[3]), others
if others:
    print(f"{len(others)} event(s) naming other nodes before n2's")
    sys.exit(3)
PY
case $prc in
0) ;;
3) UNDECIDED+=("events naming other nodes during the load while a core was \
${busy} % busy with work this test did not start") ;;
*) fail "wrong events: $(grep event "$T/watch.out")" ;;
esac
# The restart request naming n2 reached the receiver and was accepted
# (other nodes only ever with a busy machine, as checked above).
n2_restarted() {
    grep -Eq "^restart exclude=([^ ]*,)?n2(,[^ ]*)? devices=([^ ]*,)?n2/0" \
        "$T/sink.out" &&
        grep -q '"type":"restart".*"status":"accepted".*"exclude":\[[^]]*"n2"' \
            "$T/watch.out"
}
if [ "$named" = 1 ]; then
    for _ in $(seq 300); do n2_restarted && break; sleep 0.2; done
    n2_restarted || fail "restart for n2 not received or not acknowledged \
within 60 s: $(cat "$T/sink.out"; grep restart "$T/watch.out")"
    kill "$LOAD"
    echo "load: $(grep '{"node":"n2","device":"0"}' "$T/watch.out" | grep -m1 '"act"' | head -c 300)"
fi

# ---- 3. live control ----------------------------------------------------
"$W" ctl status >"$T/status.txt" || fail "ctl status failed"
grep -q "slowgpu" "$T/status.txt" || fail "status: $(cat "$T/status.txt")"
"$W" ctl thresholds >"$T/thr.txt" || fail "ctl thresholds failed"
grep -Eq "^slowgpu +effect +1$" "$T/thr.txt" || fail "thresholds: $(cat "$T/thr.txt")"
"$W" ctl set slowgpu effect 1.5 | grep -q "1 -> 1.5" || fail "ctl set"
"$W" ctl thresholds slowgpu | grep -Eq "effect +1.5$" || fail "set not applied"
expect_rc 1 "$W" ctl set slowgpu effect lots
expect_rc 1 "$W" ctl set slowgpu nosuch 1
expect_rc 1 "$W" ctl pause ghost
"$W" ctl pause slowgpu >/dev/null || fail "ctl pause"
[ "$(ctl_value state slowgpu)" = paused ] || fail "not paused"
"$W" ctl resume slowgpu >/dev/null || fail "ctl resume"
[ "$(ctl_value state slowgpu)" = running ] || fail "not resumed"
"$W" ctl --endpoint "ipc://$TELEM_RUNDIR/telem_watch/ctl.sock" status \
    >/dev/null || fail "ctl --endpoint"

# ---- 4. a dead node -----------------------------------------------------
stop_node n3 KILL
for _ in $(seq 300); do
    ctl_value missing | grep -qx n3 && break
    sleep 0.2
done
ctl_value missing | grep -qx n3 || fail "dead node n3 not reported missing"
t1=$(ctl_value ticks)
for _ in $(seq 300); do
    [ "$(ctl_value ticks)" -gt $((t1 + 3)) ] && break
    sleep 0.2
done
[ "$(ctl_value ticks)" -gt $((t1 + 3)) ] || fail "the watcher stopped ticking"
kill -0 "$WATCH" || fail "the watcher died"

kill -TERM "$WATCH"
wait "$WATCH" || fail "telem_watch did not exit cleanly on SIGTERM"
if ((${#UNDECIDED[@]})); then
    skip "live control and the dead node passed; the detection is" \
         "undecided: ${UNDECIDED[*]}"
fi
echo "it_watch: ok"
