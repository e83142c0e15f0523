# it_slurm_steps.sh - under Slurm, telem_launch starts each kind of process
# on all its nodes as one job step: proved from Slurm itself.
#
# On the namespaced cluster of tests/slurm/netns.sh (4 nodes, each with its
# own address), `salloc --no-kill -N 3 telem_launch --nodes 2 --resilient
# --restart-on-failure`.  While the job runs, `scontrol -o show step` is
# polled; it must show one telem-telemd step on n[1-3], one telem-dictd
# step on n[1-3] and one telem-program step on n[1-2], each of one task per
# node, the program's being the job's third step (step id 2: nothing else
# was started before it).  Every node's telemd reported its own name (its
# log), is in launch/telemd_nodes at its own node's address, and answers
# `telem_client status` with the pid of the process in that node's
# namespace, which launch/daemons also names.  The step files are 0600 in
# a 0700 directory while the job runs and gone after it.
#
# Then the program is killed on n2: the job restarts without n2 (trigger
# crash, n3 promoted) and Slurm shows a second telem-program step, on n1
# and n3, while the telemd and telem_dictd steps are the same ones; n2's
# telem_dictd was stopped alone (its step goes on on n1 and n3) and n2's
# telemd keeps running.  The job ends 0 and leaves no step, no step file
# and no process in any node's namespace.
#
# Skipped, with the reason, where it cannot run: not root, no network
# namespaces, or slurm-wlm and munge missing and not installable: the test
# installs them (tests/peer_install.sh) unless there is no apt, the install
# fails, or TELEM_SLURM_INSTALL=0.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "${TELEM_SRC:-$(dirname "${BASH_SOURCE[0]}")/..}/tests/slurm/faults.sh"

net_setup
R=$T/job OUT=$T/out
mkdir -m 700 "$R"
mkdir -m 755 "$OUT"
cat >"$T/steps_prog.sh" <<'EOF'
#!/usr/bin/env bash
c=$TELEM_RESTART_COUNT n=$TELEM_NODE
echo $$ >"$OUT/pid-$c-$n.tmp" && mv "$OUT/pid-$c-$n.tmp" "$OUT/pid-$c-$n"
echo "$SLURMD_NODENAME $TELEM_RANK $SLURM_STEP_ID" >"$OUT/ready-$c-$n"
while [ ! -e "$OUT/go-$c" ]; do sleep 0.05; done
EOF
chmod +x "$T/steps_prog.sh"

OUT=$OUT salloc --no-kill -N 3 "$TELEM_BIN/telem_launch" --rundir "$R" \
    --nodes 2 --resilient --restart-on-failure --no-agg --grace 2 \
    --start-timeout 30 -- "$T/steps_prog.sh" >"$T/launch.out" 2>"$T/launch.err" &
LPID=$!
EXTRA_PIDS+=("$LPID")

# Every step Slurm shows while the job runs, one line each (the last seen).
poll_steps() {
    while :; do
        scontrol -o show step 2>/dev/null | grep '^StepId=' >>"$T/steps.poll" || true
        sleep 0.1
    done
}
poll_steps &
POLL=$!
EXTRA_PIDS+=("$POLL")

until_t 60 test -f "$OUT/ready-0-n1" -a -f "$OUT/ready-0-n2" \
    || fail "the program did not start on n1 and n2: $(tail -n 5 "$T/launch.err")"
JOB=$(squeue -h -o %i | head -n 1)
[ -n "$JOB" ] || fail "no Slurm job"

# field STEPLINE KEY: the value of KEY= in one line of scontrol -o.
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }
# step NAME: the lines of the steps named NAME, distinct step ids.
steps_named() { grep " Name=$1 " "$T/steps.poll" | sort -u -t' ' -k1,1; }
have_steps() { [ "$(steps_named telem-telemd | wc -l)" = 1 ] \
               && [ "$(steps_named telem-dictd | wc -l)" = 1 ] \
               && [ "$(steps_named telem-program | wc -l)" = "$1" ]; }
until_t 30 have_steps 1 || fail "steps seen: $(sort -u -t' ' -k1,1 "$T/steps.poll")"
check_step() {   # check_step NAME NODELIST N: the one step of that name
    local l
    l=$(steps_named "$1" | tail -n 1)
    [ "$(field "$l" NodeList)" = "$2" ] && [ "$(field "$l" Nodes)" = "$3" ] \
        && [ "$(field "$l" Tasks)" = "$3" ] \
        || fail "step $1: $l (expected $3 tasks on $2)"
}
check_step telem-telemd 'n[1-3]' 3
check_step telem-dictd 'n[1-3]' 3
check_step telem-program 'n[1-2]' 2
TELEMD_STEP=$(field "$(steps_named telem-telemd)" StepId)
DICTD_STEP=$(field "$(steps_named telem-dictd)" StepId)
PROG_STEP=$(field "$(steps_named telem-program)" StepId)
[ "$PROG_STEP" = "$JOB.2" ] \
    || fail "the program's step is $PROG_STEP, not the job's third ($JOB.2): $(cat "$T/steps.poll" | sort -u -t' ' -k1,1)"
for n in n1 n2; do
    read -r sn rank sid <"$OUT/ready-0-$n"
    [ "$sn" = "$n" ] && [ "$JOB.$sid" = "$PROG_STEP" ] \
        || fail "the program of $n ran on $sn in step $JOB.$sid"
done

# The step files: 0600 in a 0700 directory, while the job runs.
[ "$(stat -c %a "$R/launch/steps")" = 700 ] || fail "launch/steps is $(stat -c %a "$R/launch/steps")"
for f in "$R"/launch/steps/*; do
    [ "$(stat -c %a "$f")" = 600 ] || fail "$f is $(stat -c %a "$f")"
done
ls "$R/launch/steps" | grep -q '^telemd\.1\.tasks$' || fail "no telemd step file: $(ls "$R/launch/steps")"

# Every node's telemd: its own name, its own address, reachable, its pid.
# The program starts once the active nodes are ready; the reserve's
# telemd (n3) may still be starting then, on a busy machine.
three_telemds() { [ "$(grep -vc '^#' "$R/launch/telemd_nodes")" = 3 ]; }
wait_for three_telemds \
    || fail "launch/telemd_nodes: $(cat "$R/launch/telemd_nodes")"
TELEM_KEYS=$R/keys "$TELEM_BIN/telem_client" --nodefile "$R/launch/telemd_nodes" \
    -f txt status >"$T/status.txt" 2>"$T/status.err" \
    || fail "telem_client status: $(cat "$T/status.err")"
for n in n1 n2 n3; do
    grep -q "node $n ready" "$R/launch/$n.telemd.log" \
        || fail "telemd of $n: $(tail -n 3 "$R/launch/$n.telemd.log")"
    ep=$(awk -F'\t' -v n=$n '$1 == n { print $2 }' "$R/launch/telemd_nodes")
    [[ $ep == "tcp://$(net node_addr "$S" $n):"* ]] \
        || fail "telemd of $n at $ep, not at its node's address"
    row=$(awk -v n=$n '$1 == n' "$T/status.txt")
    [ "$(awk '{ print $2 }' <<<"$row")" = ok ] || fail "$n did not answer: $row"
    pid=$(awk '{ print $11 }' <<<"$row")
    [ "$(net pid_of "$S" $n telemd)" = "$pid" ] \
        || fail "$n's telemd answers as pid $pid; in its namespace: $(net pid_of "$S" $n telemd)"
    grep -Eq "^$n	telemd	running	$pid	" "$R/launch/daemons" \
        || fail "launch/daemons does not name $n's telemd $pid: $(cat "$R/launch/daemons")"
done

# --- the program dies on n2: a second program step, on n1 and n3 --------
kill -9 "$(cat "$OUT/pid-0-n2")"
until_t 60 test -f "$OUT/ready-1-n1" -a -f "$OUT/ready-1-n3" \
    || fail "no restarted program on n1, n3: $(tail -n 5 "$T/launch.err")"
grep -q "restart 1 (of at most [0-9]*): trigger crash; nodes n2; promoted n3" "$T/launch.err" \
    || fail "restart line: $(grep restart "$T/launch.err")"
until_t 30 have_steps 2 || fail "steps seen: $(sort -u -t' ' -k1,1 "$T/steps.poll")"
l=$(steps_named telem-program | grep -v "^StepId=$PROG_STEP ")
[ "$(field "$l" NodeList)" = 'n[1,3]' ] && [ "$(field "$l" Tasks)" = 2 ] \
    || fail "the second program step: $l"
PROG2=$(field "$l" StepId)
[ "$JOB.$(cut -d' ' -f3 "$OUT/ready-1-n3")" = "$PROG2" ] || fail "n3's program is not in $PROG2"
now=$(scontrol -o show step 2>/dev/null)
for s in "$TELEMD_STEP" "$DICTD_STEP" "$PROG2"; do
    grep -q "^StepId=$s " <<<"$now" || fail "step $s is not running: $now"
done
# srun of the first program step has ended (the launcher waits for it);
# slurmctld lists a step until its slurmstepd has reported the end, which
# under load comes a moment later: wait for that, bounded.
step_gone() { ! scontrol -o show step 2>/dev/null | grep -q "^StepId=$1 "; }
until_t 30 step_gone "$PROG_STEP" \
    || fail "the first program step still runs: $(scontrol -o show step 2>/dev/null)"
# n2's telem_dictd was stopped alone, the others run on; n2's telemd stays.
until_t 30 bash -c "[ -z \"\$(bash '$NETNS' pid_of '$S' n2 telem_dictd)\" ]" \
    || fail "n2's telem_dictd still runs"
for n in n1 n3; do
    [ -n "$(net pid_of "$S" $n telem_dictd)" ] || fail "$n's telem_dictd is gone"
done
[ -n "$(net pid_of "$S" n2 telemd)" ] || fail "n2's telemd is gone"
grep -q "dictd\.2 step $DICTD_STEP: signal 2 to task 1 (n2, pid [0-9]*) alone" "$R/launch/steps.log" \
    || fail "steps.log does not show n2's telem_dictd stopped alone: $(grep signal "$R/launch/steps.log")"

# --- the end ---------------------------------------------------------------
touch "$OUT/go-1"
rc=0
until_t 60 bash -c "! kill -0 $LPID" || fail "the job did not end"
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "salloc telem_launch exited $rc: $(tail -n 5 "$T/launch.err")"
kill "$POLL" 2>/dev/null || true
# Every step of the job: the three kinds, the second program step, and at
# most the one-node srun that stopped n2's telem_dictd (too short to be
# seen by the poll, but it takes a step id).
last=$(sort -u -t' ' -k1,1 "$T/steps.poll" | sed -n "s/^StepId=$JOB\.\([0-9]*\) .*/\1/p" | sort -n | tail -n 1)
[ "$last" -le 4 ] || fail "the job made $((last + 1)) steps: $(sort -u -t' ' -k1,1 "$T/steps.poll")"
until_t 30 bash -c '[ -z "$(squeue -h)" ]' || fail "jobs left: $(squeue)"
[ ! -e "$R/launch/steps" ] || fail "step files left: $(ls "$R/launch/steps")"
W=$T until_t 30 only_slurmd_left || fail "processes left in node namespaces:$(cat "$T/left")"
echo "it_slurm_steps: ok (steps $TELEMD_STEP telemd, $DICTD_STEP dictd, $PROG_STEP and $PROG2 program)"
