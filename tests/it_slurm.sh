# it_slurm.sh - telem_launch inside a real Slurm allocation: a three-node
# cluster on this machine (tests/slurm/cluster.sh: slurmctld, one
# `slurmd -N nX` per node, a private munged), `salloc -N 3 telem_launch`.
# Checks that every daemon and every program ran as its Slurm node (the
# name telemd takes from SLURMD_NODENAME, the program's SLURMD_NODENAME),
# that the job answers queries while it runs, and that a node whose telemd
# is killed is replaced by the reserve through srun.
#
# Skipped, with the reason, where it cannot run: not root, or slurm-wlm and
# munge missing and not installable: the test installs them
# (tests/peer_install.sh) unless there is no apt, the install fails, or
# TELEM_SLURM_INSTALL=0.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CLUSTER=${TELEM_SRC:-$(dirname "${BASH_SOURCE[0]}")/..}/tests/slurm/cluster.sh

rc=0
why=$(bash "$CLUSTER" check) || rc=$?
if [ "$rc" != 0 ]; then
    skip "$why"
fi

S=$(mktemp -d /tmp/telem-slurm.XXXXXX)
slurm_cleanup() {
    bash "$CLUSTER" down "$S" >/dev/null 2>&1 || true
    cleanup
}
trap slurm_cleanup EXIT
bash "$CLUSTER" up "$S" >"$T/cluster.log" 2>&1 || fail "cluster did not start: $(cat "$T/cluster.log")"
source "$S/env"
unset TELEM_NODE TELEM_LEVEL || true

OUT=$T/out
mkdir -m 755 "$OUT"
export OUT
cat >"$T/prog.sh" <<'EOF'
#!/usr/bin/env bash
run=$OUT/run-$TELEM_RESTART_COUNT-$TELEM_NODE
{ env | grep -E '^(TELEM|SLURMD_NODENAME|SLURM_STEP_ID)=|^TELEM_' | sort; } >"$run.tmp"
mv "$run.tmp" "$run.env"
[ "$MODE" = quick ] && exit 0
while [ ! -e "$OUT/go-$TELEM_RESTART_COUNT" ]; do sleep 0.05; done
EOF
chmod +x "$T/prog.sh"

envval() { sed -n "s/^$3=//p" "$OUT/run-$1-$2.env"; }

# --- every daemon and program runs as its Slurm node ----------------------
MODE=wait salloc -N 3 "$TELEM_BIN/telem_launch" --rundir "$TELEM_RUNDIR" \
    --nodes 2 --resilient --daemon-failure exclude --grace 2 -- "$T/prog.sh" \
    >"$T/launch.out" 2>"$T/launch.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")
wait_for test -f "$OUT/run-0-n1.env" -a -f "$OUT/run-0-n2.env" \
    || fail "the program did not start on n1 and n2"
for n in n1 n2; do
    [ "$(envval 0 $n SLURMD_NODENAME)" = "$n" ] || fail "program for $n ran on $(envval 0 $n SLURMD_NODENAME)"
    [ -n "$(envval 0 $n SLURM_STEP_ID)" ] || fail "program for $n is not a Slurm step"
done
[ "$(envval 0 n2 TELEM_RANK)" = 1 ] || fail "rank of n2"
for n in n1 n2 n3; do
    # telemd was not told its name: it took it from SLURMD_NODENAME.
    # (the reserve n3's telemd may still be starting when the program has
    # started on the active nodes: wait for its line)
    wait_for grep -q "node $n ready" "$TELEM_RUNDIR/launch/$n.telemd.log" \
        || fail "telemd for $n did not run as $n: $(cat "$TELEM_RUNDIR/launch/$n.telemd.log")"
    # Its TCP endpoint, at the node's address, is CURVE with the job's key.
    grep -q "TCP is CURVE with the job's key from $TELEM_RUNDIR/keys" \
        "$TELEM_RUNDIR/launch/$n.telemd.log" \
        || fail "telemd for $n is not CURVE: $(cat "$TELEM_RUNDIR/launch/$n.telemd.log")"
done
[ "$(envval 0 n1 TELEM_KEYS)" = "$TELEM_RUNDIR/keys" ] \
    || fail "the program's TELEM_KEYS: $(envval 0 n1 TELEM_KEYS)"
# A client without the key gets nothing from a node.
Q2=$(awk -F'\t' '$1 == "n2" { print $2 }' "$TELEM_NODEFILE")
[ "$(TELEM_KEYS= "$TELEM_BIN/probe" "$Q2" status 1500)" = timeout ] \
    || fail "n2 answered a client without the key"
"$TELEM_BIN/telem_client" status \
    >"$T/status.txt" || fail "the job's nodes do not answer"
grep -q n2 "$T/status.txt" || fail "status: $(cat "$T/status.txt")"
# One step per kind on all its nodes (telemd and telem_dictd on every
# node, the program on the active ones), plus telem_agg's one-node step.
steps_are() {
    [ "$(squeue -h -s -o '%j %N' | sort | paste -sd ' ' -)" = "$1" ]
}
wait_for steps_are "telem-agg n1 telem-dictd n[1-3] telem-program n[1-2] telem-telemd n[1-3]" \
    || fail "expected one step per kind: $(squeue -s -o '%i %j %N')"

# --- n2's telemd dies: the job goes on on n1 and n3 -----------------------
kill -9 "$(sed -n 's/^pid\t//p' "$TELEM_RUNDIR/n2/endpoints")"
wait_for test -f "$OUT/run-1-n1.env" -a -f "$OUT/run-1-n3.env" \
    || fail "no restart on n1, n3: $(grep -v '^$' "$T/launch.log" | tail -n 5)"
[ "$(envval 1 n3 SLURMD_NODENAME)" = n3 ] || fail "restarted program not on n3"
[ "$(envval 1 n3 TELEM_RESTARTED)" = 1 ] || fail "TELEM_RESTARTED under Slurm"
touch "$OUT/go-1"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "salloc telem_launch exited $rc"
grep -q "trigger daemon; nodes n2; promoted n3" "$T/launch.log" \
    || fail "restart line: $(grep restart "$T/launch.log")"
# The allocation completes (CG) shortly after salloc returns.
wait_for bash -c '[ -z "$(squeue -h)" ]' || fail "jobs left: $(squeue)"
if pgrep -f "$T/" >"$T/left.txt"; then
    fail "processes left behind: $(xargs -r ps -o pid,args -p <"$T/left.txt")"
fi

# --- slowgpu's collectors on every node; n2's slurmd dies --------------
# Each active node runs its own telem_collect (its map names that node
# only); restart requests listen on TCP; a killed slurmd is seen by the
# node's telemd and the node is taken out at the next heartbeat (trigger
# slurmd), given back to Slurm, and the allocation goes on when Slurm
# marks it DOWN.
rm -f "$OUT"/run-* "$OUT"/go-*
MODE=wait salloc -N 3 "$TELEM_BIN/telem_launch" --rundir "$TELEM_RUNDIR" \
    --nodes 2 --resilient --no-agg --grace 2 --detector slowgpu -- "$T/prog.sh" \
    >"$T/launch2.out" 2>"$T/launch2.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")
wait_for test -f "$OUT/run-0-n1.env" -a -f "$OUT/run-0-n2.env" \
    || fail "second job: the program did not start on n1 and n2"
wait_for bash -c "[ \$(grep -c '^ready\$' '$T/launch2.out') -ge 2 ]" \
    || fail "two telem_collect maps expected: $(cat "$T/launch2.out")"
for n in n1 n2; do
    grep -q "^node $n device 0 -> cpu device 0 (id 0) phase 0.0 ms" "$T/launch2.out" \
        || fail "no collector of $n on its own device 0: $(grep '^node ' "$T/launch2.out")"
done
if grep -q "^node n3 " "$T/launch2.out"; then fail "collectors on the reserve n3"; fi
envval 0 n1 TELEM_LAUNCH_ENDPOINT | grep -q '^tcp://' \
    || fail "restart endpoint not on TCP: $(envval 0 n1 TELEM_LAUNCH_ENDPOINT)"
kill -9 "$(cat "$S/slurmd.n2.pid")"
wait_for test -f "$OUT/run-1-n3.env" \
    || fail "no restart on n3 after n2's slurmd died: $(grep -v collector "$T/launch2.log" | tail -n 5)"
line=$(grep "restart 1 " "$T/launch2.log" || true)
[[ $line == *"trigger slurmd; nodes n2; promoted n3"* ]] || fail "restart line: $line"
grep -q "n2 given back to Slurm" "$T/launch2.log" || fail "n2 not given back to Slurm"
# Slurm notices n2 is not responding (DOWN, or '*' while it still
# completes the steps it was told to end) while the job goes on without it.
wait_for_s() { local n=$1; shift; for _ in $(seq $((n * 10))); do "$@" && return 0; sleep 0.1; done; return 1; }
wait_for_s 60 bash -c '[[ $(sinfo -h -N -n n2 -o %t) == down* || $(sinfo -h -N -n n2 -o %t) == *"*" ]]' \
    || fail "Slurm did not notice n2: $(sinfo -h -N -o '%N %t' | paste -sd ' ' -)"
touch "$OUT/go-1"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "the job did not survive n2's loss: exit $rc: $(tail -n 5 "$T/launch2.log")"
SLURM_CONF=$S/slurm.conf slurmd -N n2
echo "it_slurm: ok"
