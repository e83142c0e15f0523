#!/usr/bin/env bash
# slow_gpu.sh - the slow-device scenario end to end on one machine.
#
#   bash examples/slow_gpu.sh [PLOT.svg]
#
# Three virtual nodes, two active and one in reserve, run the slow_gpu
# example under telem_launch with collectors (one cpu device per node, 5
# DGEMMs spread over every 0.5 s round) and the slowgpu detector.  The
# virtual devices all take turns on core 0 (--local-devices 0), so they are
# compared on the same hardware.  Once the collectors run, a real
# contending load (telem_load pinned to that core, busy 1 ms of every 2 ms
# during n2's turn only, at real-time priority where this user may) slows
# the device of n2, a node that is not the first.  The watcher flags
# it and asks the launcher for a restart without n2; the reserve n3 is
# promoted, the dictionary re-forms without n2, and slow_gpu resumes from
# the dictionary without redoing finished iterations.  On a real cluster
# the slow GPU leaves the job with its node; here the virtual nodes share
# this machine's cores, so the script stops the load once n2 is out.  The
# final histogram is checked against the semicircle law and drawn.
# slow_gpu's workers stand for GPU work, which on a cluster does not share
# the cores the collectors time; here they share them, so they run at
# nice 19 and the collectors' figures show the load, not the workers.
#
# Environment: TELEM_BIN (default: build/bin of this tree), SLOW_GPU_ARGS
# (the example's options; default a run of some 10-30 s on two cores),
# SLOW_GPU_DETECTOR (the detector spec, default slowgpu).  On a machine
# busy with other work the wrong device may look slow: docs/examples.md.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${TELEM_BIN:-${TELEM_BUILD_DIR:-$top/build}/bin}
plot=${1:-$PWD/slow_gpu.svg}
read -r -a args <<<"${SLOW_GPU_ARGS:---tasks 8 --iterations 600 --size 150}"
for p in telem_launch telem_watch telem_collect telem_load slow_gpu; do
    [ -x "$bin/$p" ] || { echo "slow_gpu.sh: $bin/$p is not built" >&2; exit 2; }
done

work=$(mktemp -d /tmp/telem-slowgpu.XXXXXX)
export TELEM_RUNDIR=$work/run
unset TELEM_NODEFILE TELEM_DICT_NODEFILE SLURM_JOB_NODELIST || true
mkdir -m 700 "$TELEM_RUNDIR"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# wait_for SECONDS CMD...: runs CMD until it succeeds.
wait_for() {
    local n=$(($1 * 20)); shift
    for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.05; done
    return 1
}

echo "== telem_launch --local 3 --nodes 2 --resilient --exhaust-resources" \
     "--telemetry-level 3 --detector slowgpu --collect ... --" \
     "nice -n 19 slow_gpu ${args[*]}"
"$bin/telem_launch" --local 3 --nodes 2 --resilient --exhaust-resources \
    --telemetry-level 3 --detector "${SLOW_GPU_DETECTOR:-slowgpu}" \
    --collect "--period 0.5 --reps 5 --spread --devices 0 --local-devices 0" \
    -- nice -n 19 "$bin/slow_gpu" "${args[@]}" --plot "$plot" \
    > >(tee "$work/job.out") 2> >(tee "$work/job.log" >&2) &
job=$!
pids+=("$job")

# The collector map says which core n2's device 0 runs on and its phase;
# the collectors on that core take turns in every 0.1 s (period / reps).
wait_for 30 grep -q "^node n2 device 0 -> " "$work/job.out" \
    || { echo "slow_gpu.sh: the collectors did not start" >&2; exit 1; }
read -r core phase < <(awk '$1 == "node" && $2 == "n2" { print $8, $12 / 1000 }' \
                       "$work/job.out" | head -n 1)
ncoll=$(awk '$1 == "node" { n++ } END { print n }' "$work/job.out")
turn=$(awk -v n="$ncoll" 'BEGIN { printf "%.6f", 0.1 / n }')
rt=()
if chrt -f 30 true 2>/dev/null; then rt=(chrt -f 30); fi
echo "== telem_load --device $core --period 0.1 --window $turn --phase $phase:" \
     "contention on n2's device 0 only"
"${rt[@]}" "$bin/telem_load" --device "$core" --cycle-ms 2 --duty 0.5 \
    --period 0.1 --window "$turn" --phase "$phase" \
    >/dev/null 2>"$work/load.log" &
load=$!
pids+=("$load")

# Stop the load as soon as the launcher takes n2 out, before the reserve's
# collector starts on the same core.
if wait_for 120 grep -q "accepted: restart 1: nodes n2" "$work/job.log"; then
    echo "== n2 is out of the job: stopping the load"
else
    echo "== n2 was not excluded within 120 s"
fi
kill -TERM "$load" 2>/dev/null || true
rc=0
wait "$job" || rc=$?
echo
echo "== summary (telem_launch exited $rc)"
grep -h "restart [0-9]" "$work/job.log" || echo "no restart"
grep -h "resumed at iteration\|semicircle law\|checksum\|plot written" \
    "$work/job.out" || true
exit "$rc"
