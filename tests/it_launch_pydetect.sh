# it_launch_pydetect.sh - a detector written in Python (telem.Detector) run
# by the real telem_launch with --detector-cmd beside telem_watch:
#
#  1. --resilient: the program records bad=1 on n2 (telem.add_data); the
#     detector names n2, the launcher restarts the job without it on the
#     reserve n3, restarts.log's line names the detector as the trigger and
#     carries its why, and the job goes on to exit 0 on n1 and n3;
#  2. not resilient, a detector that dies on its first round: supervision
#     starts it again (launch/daemons.log), the new one reports the node,
#     nothing is restarted (it only reports) and the job ends 0;
#  3. a template source (three hosts on loopback): the restart endpoint is
#     TCP, and the detector's request goes there with the job's CURVE key;
#  4. --detector-cmd that a shell could not split, too many of them, level
#     0, a bad --watch-period: refused with exit 2.
#
# The program waits for a "go" file from the test, so every step waits on
# behaviour, never on time.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
L=$TELEM_BIN/telem_launch
PY=/usr/bin/python3
OUT=$T/out
mkdir "$OUT"
unset TELEM_LEVEL SLURM_JOB_NODELIST TELEM_WATCH_PERIOD TELEM_WATCH_RESTART \
    || true
export PYTHONPATH=$TELEM_BIN/../python PYTHONDONTWRITEBYTECODE=1
# The sanitizer build's libtelem needs its runtimes loaded first into the
# interpreter; every process of the test gets them (the instrumented
# programs have them already, leak checks are the unit tests' business).
if [ -n "${TELEM_PY_PRELOAD:-}" ]; then
    export LD_PRELOAD=$TELEM_PY_PRELOAD ASAN_OPTIONS=detect_leaks=0
fi
[ -x "$PY" ] || skip "no $PY"
"$PY" -c 'import telem, numpy' 2>/dev/null \
    || skip "the telem Python package (or numpy) is not importable from $PYTHONPATH"

cat >"$T/prog.sh" <<'EOF2'
#!/usr/bin/env bash
run=$OUT/run-$TELEM_RESTART_COUNT-$TELEM_NODE
env | grep '^TELEM_' | sort >"$run.tmp" && mv "$run.tmp" "$run.env"   # whole or absent
if [ "$TELEM_RANK" = 1 ] && [ -z "${TELEM_RESTARTED:-}" ]; then
    /usr/bin/python3 -c 'import telem; telem.add_data("bad", 1.0); assert telem.flush(10.0)'
fi
while [ ! -e "$OUT/go-$TELEM_RESTART_COUNT" ]; do sleep 0.05; done
EOF2
chmod +x "$T/prog.sh"

cat >"$T/mydet.py" <<'EOF2'
import os
import sys

import telem

OUT = os.environ["OUT"]


class BadFlag(telem.Detector):
    name = "pybad"
    metrics = ["bad"]
    window = 300

    def analyze(self, data):
        if os.environ.get("CRASH_ONCE") and not os.path.exists(f"{OUT}/crashed"):
            open(f"{OUT}/crashed", "w").close()
            os.kill(os.getpid(), 9)          # a detector that dies
        bad = sorted(n for n, v in data.latest("bad").items() if v >= 1)
        if bad:
            return telem.Restart(exclude=bad, why=f"the program set bad=1 on "
                                 f"{','.join(bad)} (seen in round {data.round})")
        return None


if __name__ == "__main__":
    n = len([f for f in os.listdir(OUT) if f.startswith("det-")])
    with open(f"{OUT}/det-{n}.env", "w") as f:
        f.write("".join(f"{k}={v}\n" for k, v in sorted(os.environ.items())
                        if k.startswith("TELEM_")))
    BadFlag().run()
EOF2
export OUT TELEM_BIN

# --- 1. resilient: the detector's request restarts the job without n2 -----
"$L" --rundir "$TELEM_RUNDIR" --grace 2 --local 3 --nodes 2 --resilient \
    --no-agg --watch-period 0.25 --detector-cmd "$PY '$T/mydet.py'" \
    -- "$T/prog.sh" >"$T/res.out" 2>"$T/res.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")
wait_for test -f "$OUT/run-1-n1.env" -a -f "$OUT/run-1-n3.env" \
    || wait_for test -f "$OUT/run-1-n1.env" -a -f "$OUT/run-1-n3.env" \
    || fail "no restart on n1 and n3 after the detector's request: $(cat "$T/res.out")"
[ ! -e "$OUT/run-1-n2.env" ] || fail "the flagged node ran the program again"
RL=$TELEM_RUNDIR/launch/restarts.log
grep -q "restart 1 (of at most 10): trigger pybad; nodes n2; promoted n3; why: the program set bad=1 on n2 (seen in round " \
    "$RL" || fail "restarts.log: $(cat "$RL")"
grep -q "ACT  pybad nodes=n2: the program set bad=1 on n2" "$T/res.out" \
    || fail "no event line from the detector: $(cat "$T/res.out")"
# The detector ran beside the watcher, with the watcher's environment.
D0=$OUT/det-0.env
grep -qx "TELEM_WATCH_PERIOD=0.25" "$D0" || fail "detector env: $(cat "$D0")"
grep -qx "TELEM_WATCH_RESTART=1" "$D0" || fail "detector env: $(cat "$D0")"
grep -qx "TELEM_NODE=n1" "$D0" || fail "detector env: $(cat "$D0")"
grep -q "^TELEM_LAUNCH_ENDPOINT=ipc://" "$D0" || fail "detector env: $(cat "$D0")"
grep -q "^TELEM_NODEFILE=" "$D0" && grep -q "^TELEM_KEYS=" "$D0" \
    || fail "detector env: $(cat "$D0")"
! grep -q "^TELEM_RANK=" "$D0" || fail "the detector got the program's rank"
# It is started again with the job: a second one runs after the restart.
wait_for test -f "$OUT/det-1.env" || fail "the detector was not started again after the restart"
touch "$OUT/go-1"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "telem_launch exited $rc"
[ "$(grep -c 'restart [0-9]' "$RL")" = 1 ] || fail "more than one restart: $(cat "$RL")"
# The detector read the launcher's acknowledgement before it was stopped.
grep -Eq "^restart [0-9a-f]+ accepted: restart 1: nodes n2; promoted n3$" \
    "$T/res.out" || fail "no accepted request in the detector's output: $(cat "$T/res.out")"

# --- 2. not resilient, a detector that dies: supervision restarts it -------
rm -rf "$OUT"; mkdir "$OUT"
CRASH_ONCE=1 "$L" --rundir "$TELEM_RUNDIR" --grace 2 --local 2 --nodes 2 \
    --no-agg --watch-period 0.25 --daemon-backoff 0.2 \
    --detector-cmd "$PY $T/mydet.py" -- "$T/prog.sh" \
    >"$T/nores.out" 2>"$T/nores.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")
DL=$TELEM_RUNDIR/launch/daemons.log
wait_for grep -q "ACT  pybad nodes=n2" "$T/nores.out" \
    || wait_for grep -q "ACT  pybad nodes=n2" "$T/nores.out" \
    || fail "the restarted detector reported nothing: $(cat "$T/nores.out")"
grep -q "daemon detector-cmd 1 on n1 killed by signal 9 (Killed); restarting it in 0.200 s (death 1 of at most 5 in 300 s)" \
    "$DL" || fail "daemons.log: $(cat "$DL")"
grep -q "daemon detector-cmd 1 on n1 restarted (restart 1)" "$DL" \
    || fail "daemons.log: $(cat "$DL")"
grep -Eq "^n1	detcmd1	running	[1-9][0-9]*	1	1	-$" \
    "$TELEM_RUNDIR/launch/daemons" \
    || fail "launch/daemons: $(cat "$TELEM_RUNDIR/launch/daemons")"
grep -qx "TELEM_WATCH_RESTART=0" "$OUT/det-1.env" \
    || fail "detector env: $(cat "$OUT/det-1.env")"
touch "$OUT/go-0"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "telem_launch exited $rc without --resilient"
[ ! -e "$OUT/run-1-n1.env" ] || fail "restarted without --resilient"
[ ! -s "$TELEM_RUNDIR/launch/restarts.log" ] \
    || fail "restarts.log: $(cat "$TELEM_RUNDIR/launch/restarts.log")"

# --- 3. a template source: the request goes over TCP, CURVE ---------------
rm -rf "$OUT"; mkdir "$OUT"
R3=$T/tjob
mkdir -m 700 "$R3"
env -u TELEM_RUNDIR -u TELEM_NODEFILE "$L" --rundir "$R3" --grace 2 \
    --exec-template "env TELEM_VIA={node}" \
    --hosts 127.0.0.1,127.0.0.2,127.0.0.3 --bind 127.0.0.1 --nodes 2 \
    --resilient --no-agg --watch-period 0.25 \
    --detector-cmd "$PY $T/mydet.py" -- "$T/prog.sh" \
    >"$T/tmpl.out" 2>"$T/tmpl.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")
wait_for test -f "$OUT/run-1-127.0.0.1.env" -a -f "$OUT/run-1-127.0.0.3.env" \
    || wait_for test -f "$OUT/run-1-127.0.0.1.env" -a -f "$OUT/run-1-127.0.0.3.env" \
    || fail "template job: no restart without 127.0.0.2: $(cat "$T/tmpl.out")"
grep -q "^TELEM_LAUNCH_ENDPOINT=tcp://127\." "$OUT/det-0.env" \
    || fail "template job: the detector's endpoint: $(cat "$OUT/det-0.env")"
grep -q "trigger pybad; nodes 127.0.0.2; promoted 127.0.0.3; why: the program set bad=1 on 127.0.0.2" \
    "$R3/launch/restarts.log" || fail "template restarts.log: $(cat "$R3/launch/restarts.log")"
grep -Eq "^restart [0-9a-f]+ accepted: restart 1: nodes 127.0.0.2; promoted 127.0.0.3$" \
    "$T/tmpl.out" || fail "template job: $(cat "$T/tmpl.out")"
touch "$OUT/go-1"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "template job: telem_launch exited $rc"

# --- 4. bad command lines: exit 2 with the reason --------------------------
bad() {
    local want=$1; shift
    local rc=0
    "$L" --rundir "$TELEM_RUNDIR" --local 1 "$@" -- true >"$T/bad.out" 2>&1 || rc=$?
    [ "$rc" = 2 ] || fail "telem_launch $* exited $rc, not 2: $(cat "$T/bad.out")"
    grep -q -- "$want" "$T/bad.out" || fail "telem_launch $*: $(cat "$T/bad.out")"
}
bad "invalid --detector-cmd" --detector-cmd "$PY 'mydet.py"
bad "split as a shell would" --detector-cmd '$(whoami)'
bad "split as a shell would" --detector-cmd ""
bad "4 at most" --detector-cmd a --detector-cmd b --detector-cmd c \
    --detector-cmd d --detector-cmd e
bad "level 0" --telemetry-level 0 --detector-cmd "$PY $T/mydet.py"
bad "invalid --watch-period" --watch-period 0.01
bad "invalid --watch-period" --watch-period soon
echo "ok"
