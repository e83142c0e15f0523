# it_launch.sh - telem_launch on local virtual nodes: the program's
# environment, a relative run directory and one without its parent, a node
# killed mid-run (the job restarts on the reserve), a hung node found by
# the heartbeat (the first node, which is not special),
# --restart-on-failure, exit codes, and Ctrl-C leaving no process behind.
#
# The program is a small shell script that records its environment in
# files named after the restart count and node, and waits for a "go" file
# from the test, so every step waits on behaviour, never on time.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
L=$TELEM_BIN/telem_launch
OUT=$T/out
mkdir "$OUT"
unset TELEM_LEVEL SLURM_JOB_NODELIST || true

cat >"$T/prog.sh" <<'EOF'
#!/usr/bin/env bash
# A job's program: records its environment, then acts as MODE says.
run=$OUT/run-$TELEM_RESTART_COUNT-$TELEM_NODE
env | grep '^TELEM_' | sort >"$run.tmp" && mv "$run.tmp" "$run.env"
echo $$ >"$run.pid"
case $MODE in
quick) exit 0 ;;
wait)      # a forked helper too: it must die with the program's group
    (exec -a "$OUT/helper" sleep 600) &
    while [ ! -e "$OUT/go-$TELEM_RESTART_COUNT" ]; do sleep 0.05; done
    exit 0 ;;
crash)     # rank 1 fails on the first run only
    [ -z "${TELEM_RESTARTED:-}" ] && [ "$TELEM_RANK" = 1 ] && exit 3
    exit 0 ;;
always) [ "$TELEM_RANK" = 1 ] && exit 7; exit 0 ;;
esac
EOF
chmod +x "$T/prog.sh"
export OUT

# launch NAME [telem_launch options]: starts the launcher in the background
# with MODE from the environment; its output goes to $T/NAME.out/.log.
launch() {
    local name=$1; shift
    "$L" --rundir "$TELEM_RUNDIR" --grace 2 "$@" -- "$T/prog.sh" \
        >"$T/$name.out" 2>"$T/$name.log" &
    LPID=$!
    EXTRA_PIDS+=("$LPID")
}

finish() {   # finish EXPECTED_RC: waits for the launcher and checks its code
    local rc=0
    wait "$LPID" || rc=$?
    [ "$rc" = "$1" ] || fail "telem_launch exited $rc, expected $1"
}

envval() {   # envval RUN NODE KEY: a variable the program saw
    sed -n "s/^$3=//p" "$OUT/run-$1-$2.env"
}

telemd_pid() {
    sed -n 's/^pid\t//p' "$TELEM_RUNDIR/$1/endpoints"
}

reset_out() { rm -rf "$OUT"; mkdir "$OUT"; }

# --- command line --------------------------------------------------------
# (read whole: grep -q would leave the longer help's last write to SIGPIPE)
"$L" --help >"$T/help.txt" && grep -q "Exit status" "$T/help.txt" \
    || fail "--help does not list exit codes"
expect_rc 2 "$L" --local 4 --nodes 3 --idle 2 -- true 2>"$T/usage.err"
grep -q "plus --idle 2 needs 5 nodes, the allocation has 4" "$T/usage.err" \
    || fail "no clear message for N + K > allocation"
expect_rc 2 "$L" --nodes 0 -- true 2>/dev/null
expect_rc 2 "$L" --local 2 2>/dev/null
expect_rc 2 "$L" --telemetry-level 9 -- true 2>/dev/null
expect_rc 2 "$L" --local 2 --exec-template "ssh {node}" -- true 2>/dev/null
expect_rc 5 "$L" --bindir "$T/none" --local 1 -- true 2>/dev/null

# --- environment on every node -------------------------------------------
MODE=quick launch env --local 3 --nodes 2 --telemetry-level 1
finish 0
for n in n1 n2; do [ -f "$OUT/run-0-$n.env" ] || fail "no program on $n"; done
[ ! -e "$OUT/run-0-n3.env" ] || fail "the reserve node ran the program"
[ "$(envval 0 n1 TELEM_RANK)" = 0 ] || fail "n1 rank"
[ "$(envval 0 n2 TELEM_RANK)" = 1 ] || fail "n2 rank"
[ "$(envval 0 n2 TELEM_NODE)" = n2 ] || fail "n2 TELEM_NODE"
[ "$(envval 0 n1 TELEM_NNODES)" = 2 ] || fail "TELEM_NNODES"
[ "$(envval 0 n1 TELEM_LEVEL)" = 1 ] || fail "TELEM_LEVEL"
[ "$(envval 0 n1 TELEM_RESTART_COUNT)" = 0 ] || fail "TELEM_RESTART_COUNT"
[ -z "$(envval 0 n1 TELEM_RESTARTED)" ] || fail "TELEM_RESTARTED on first run"
[ "$(envval 0 n1 TELEM_RUNDIR)" = "$TELEM_RUNDIR" ] || fail "TELEM_RUNDIR"
[ "$(envval 0 n1 TELEM_NODEFILE)" = "$TELEM_NODEFILE" ] || fail "TELEM_NODEFILE"
envval 0 n1 TELEM_LAUNCH_ENDPOINT | grep -q '^ipc://.*restart.sock$' \
    || fail "TELEM_LAUNCH_ENDPOINT"
[ ! -e "$TELEM_RUNDIR/n1/ctl.sock" ] || fail "telemd of n1 left running"

# --- the run directory: a relative one made absolute, parents not made ----
# Every daemon and the program get the absolute path the launcher made.
reset_out
(cd "$T" && MODE=quick exec "$L" --rundir relrun --grace 2 --local 2 \
    --telemetry-level 1 -- "$T/prog.sh") >"$T/rel.out" 2>"$T/rel.log" \
    || fail "relative --rundir: $(tail -n 5 "$T/rel.log")"
[ "$(envval 0 n1 TELEM_RUNDIR)" = "$(cd "$T" && pwd -P)/relrun" ] \
    || fail "relative --rundir: TELEM_RUNDIR=$(envval 0 n1 TELEM_RUNDIR)"
expect_rc 5 "$L" --rundir "$T/no/such/run" --local 1 -- true \
    2>"$T/noparent.err"
grep -q "its parent $T/no/such does not exist" "$T/noparent.err" \
    || fail "missing parent: $(cat "$T/noparent.err")"
[ ! -e "$T/no" ] || fail "telem_launch created the run directory's parents"

# --- a command template: every command goes through it ------------------
reset_out
MODE=quick launch tmpl --exec-template "env TELEM_VIA={node}" --hosts "h1,h 2"
finish 0
[ "$(envval 0 h1 TELEM_VIA)" = h1 ] || fail "template not used for h1"
[ "$(envval 0 'h 2' TELEM_VIA)" = "h 2" ] || fail "template not used for 'h 2'"
[ "$(envval 0 'h 2' TELEM_RANK)" = 1 ] || fail "template: rank of 'h 2'"

# --- kill -9 one node's telemd mid-run: restart on the reserve ------------
# (--daemon-failure exclude: a dead daemon fails its node; by default it is
# restarted in place, tests/it_supervise.sh)
reset_out
MODE=wait launch kill --local 3 --nodes 2 --resilient --daemon-failure exclude
wait_for test -f "$OUT/run-0-n2.env" -a -f "$OUT/run-0-n1.env" \
    || fail "first run did not start"
# The node file lists the active nodes, and they answer.
"$TELEM_BIN/telem_client" status >"$T/status.txt" || fail "status of the job"
grep -q n1 "$T/status.txt" && grep -q n2 "$T/status.txt" \
    || fail "node file: $(cat "$TELEM_NODEFILE")"
old=$(cat "$OUT/run-0-n1.pid")
kill -9 "$(telemd_pid n2)"
wait_for test -f "$OUT/run-1-n1.env" -a -f "$OUT/run-1-n3.env" \
    || fail "no restart on n1 and n3"
[ ! -e "$OUT/run-1-n2.env" ] || fail "the failed node ran the program again"
[ "$(envval 1 n3 TELEM_RESTARTED)" = 1 ] || fail "TELEM_RESTARTED after restart"
[ "$(envval 1 n3 TELEM_RANK)" = 1 ] || fail "promoted node's rank"
[ "$(envval 1 n1 TELEM_RESTART_COUNT)" = 1 ] || fail "restart count"
kill -0 "$old" 2>/dev/null && fail "the first run's program still runs"
! pgrep -f "$OUT/helper" | grep -q . || true
touch "$OUT/go-1"
finish 0
grep -q "restart 1 (of at most 10): trigger daemon; nodes n2; promoted n3" "$T/kill.log" \
    || fail "restart line: $(grep restart "$T/kill.log")"
grep -q "active n1,n3" "$T/kill.log" || fail "active set not reported"
grep -q "trigger daemon" "$TELEM_RUNDIR/launch/restarts.log" \
    || fail "restart not logged"

# --- a hung first node: found by the heartbeat ---------------------------
reset_out
MODE=wait launch hb --local 3 --nodes 2 --resilient --heartbeat 0.2 \
    --heartbeat-timeout 1 --heartbeat-misses 2
wait_for test -f "$OUT/run-0-n1.env" -a -f "$OUT/run-0-n2.env" \
    || fail "first run did not start"
kill -STOP "$(telemd_pid n1)"
wait_for test -f "$OUT/run-1-n2.env" -a -f "$OUT/run-1-n3.env" \
    || fail "no restart after a hung telemd"
[ "$(envval 1 n2 TELEM_RANK)" = 0 ] || fail "n2 should be rank 0 now"
touch "$OUT/go-1"
finish 0
grep -q "trigger heartbeat; nodes n1; promoted n3" "$T/hb.log" \
    || fail "heartbeat restart line: $(grep restart "$T/hb.log")"

# --- without --resilient a node failure ends the job ---------------------
reset_out
MODE=wait launch nores --local 2 --nodes 2 --daemon-failure exclude
wait_for test -f "$OUT/run-0-n2.env" || fail "did not start"
kill -9 "$(telemd_pid n2)"
finish 3

# --- --restart-on-failure ------------------------------------------------
reset_out
MODE=crash launch crash --local 3 --nodes 2 --restart-on-failure
finish 0
[ "$(envval 1 n3 TELEM_RESTARTED)" = 1 ] || fail "crash: no restart on n3"
grep -q "trigger crash; nodes n2" "$T/crash.log" || fail "crash restart line"
reset_out
MODE=crash launch crash2 --local 3 --nodes 2
finish 1
reset_out
MODE=always launch budget --local 4 --nodes 2 --restart-on-failure \
    --max-restarts 1 --backoff 0
finish 4
grep -q "restart refused (budget)" "$T/budget.log" || fail "budget line"
reset_out
MODE=always launch unrec --local 2 --nodes 2 --restart-on-failure
finish 3

# --- SIGINT: nothing left behind -----------------------------------------
reset_out
MODE=wait launch int --local 3 --nodes 2
wait_for test -f "$OUT/run-0-n1.env" -a -f "$OUT/run-0-n2.env" \
    || fail "did not start"
wait_for pgrep -f "$OUT/helper" || fail "helper did not start"
# A second launcher in the same run directory is refused.
expect_rc 5 "$L" --rundir "$TELEM_RUNDIR" --local 1 -- true 2>"$T/second.err"
grep -q "another telem_launch runs" "$T/second.err" || fail "second launcher"
kill -INT "$LPID"
finish 130
if pgrep -f "$T/" >"$T/left.txt"; then
    fail "processes left behind: $(xargs -r ps -o pid,args -p <"$T/left.txt")"
fi
[ ! -e "$TELEM_NODEFILE" ] || fail "node file left behind"
echo "it_launch: ok"
