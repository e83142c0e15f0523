#!/usr/bin/env bash
# slow_gpu.sh - the slow-device scenario end to end on one machine.
#
#   bash examples/slow_gpu.sh [PLOT.svg [REPORT.html]]
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
# The job runs until the detector has acted: slow_gpu --hold-at 0.5 stops
# every task half-way on its first run and waits until the launcher
# restarts the job (a restarted run never waits), so however fast the
# machine, the job is still running when slowgpu has seen enough rounds.
# The wait is bounded (SLOW_GPU_WAIT seconds); when it runs out, the
# script releases the hold (the dictionary event slow_gpu/release), lets
# the job finish, and says why no restart happened: the slowdown the load
# caused on n2 against the round-to-round noise of the devices, both
# measured from the collectors' own figures.  The load always stops with
# the job.
#
# Exit status: 0 the job was restarted without n2 on slowgpu's word and
# finished; 1 it was not (or the job failed), with the reason; 2 not built;
# 3 undecidable: other work on the machine made the devices' noise too
# high for slowgpu to tell the slowdown from it (the figures are printed).
#
# Environment: TELEM_BIN (default: build/bin of this tree), SLOW_GPU_ARGS
# (the example's options; default a run of some 10-30 s on two cores),
# SLOW_GPU_DETECTOR (the detector spec, default slowgpu), SLOW_GPU_WAIT
# (seconds to wait for the restart after the load starts, default 240).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${TELEM_BIN:-${TELEM_BUILD_DIR:-$top/build}/bin}
plot=${1:-$PWD/slow_gpu.svg}
report=${2:-$PWD/slow_gpu_report.html}
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

wait_s=${SLOW_GPU_WAIT:-240}
[[ $wait_s =~ ^[0-9]+$ ]] && ((wait_s > 0)) \
    || { echo "slow_gpu.sh: SLOW_GPU_WAIT must be a whole number of seconds" >&2; exit 2; }

echo "== telem_launch --local 3 --nodes 2 --resilient --exhaust-resources" \
     "--telemetry-level 3 --detector slowgpu --collect ... --" \
     "nice -n 19 slow_gpu ${args[*]} --hold-at 0.5"
"$bin/telem_launch" --local 3 --nodes 2 --resilient --exhaust-resources \
    --telemetry-level 3 --detector "${SLOW_GPU_DETECTOR:-slowgpu}" \
    --collect "--period 0.5 --reps 5 --spread --devices 0 --local-devices 0" \
    -- nice -n 19 "$bin/slow_gpu" "${args[@]}" --hold-at 0.5 --plot "$plot" \
    > >(tee "$work/job.out") 2> >(tee "$work/job.log" >&2) &
job=$!
pids+=("$job")
# Other work on the machine (at normal priority: slow_gpu's own workers run
# at nice 19) is contention too, on any device; measured for the verdict.
python3 "$top/examples/cpu_busy.py" "$work/busy" &
pids+=("$!")

# The collector map says which core n2's device 0 runs on and its phase;
# the collectors on that core take turns in every 0.1 s (period / reps).
wait_for 60 grep -q "^node n2 device 0 -> " "$work/job.out" \
    || { echo "slow_gpu.sh: the collectors did not start" >&2; exit 1; }
read -r core phase < <(awk '$1 == "node" && $2 == "n2" { print $8, $12 / 1000 }' \
                       "$work/job.out" | head -n 1)
ncoll=$(awk '$1 == "node" { n++ } END { print n }' "$work/job.out")
turn=$(awk -v n="$ncoll" 'BEGIN { printf "%.6f", 0.1 / n }')
rt=()
if chrt -f 30 true 2>/dev/null; then rt=(chrt -f 30); fi
echo "== telem_load --device $core --period 0.1 --window $turn --phase $phase:" \
     "contention on n2's device 0 only"
load_ns=$(date +%s%N)
"${rt[@]}" "$bin/telem_load" --device "$core" --cycle-ms 2 --duty 0.5 \
    --period 0.1 --window "$turn" --phase "$phase" \
    >/dev/null 2>"$work/load.log" &
load=$!
pids+=("$load")

# Waits until the launcher has taken a node out on the detector's word, the
# job has ended, or the wait has run out; progress every 30 s.
restart_line() { grep -m1 "accepted: restart 1: nodes" "$work/job.log"; }
deadline=$((SECONDS + wait_s)) next=$((SECONDS + 30))
while ! restart_line >/dev/null 2>&1 && kill -0 "$job" 2>/dev/null &&
      ((SECONDS < deadline)); do
    if ((SECONDS >= next)); then
        echo "== waiting for slowgpu to name n2: $((SECONDS - deadline + wait_s)) s of at most $wait_s s"
        next=$((SECONDS + 30))
    fi
    sleep 0.2
done

verdict=0 why=""
if line=$(restart_line); then
    # On a real cluster the slow GPU leaves the job with its node; here the
    # reserve's collector would start on the same core, so the load stops.
    kill -TERM "$load" 2>/dev/null || true
    if [[ $line =~ nodes\ n2([^0-9]|$) ]]; then
        echo "== n2 is out of the job: the load stopped"
        # The job report, while the nodes still hold the job's data: the
        # devices' round times with the detector's decision, the restart.
        echo "== telem_client report -o $report"
        TELEM_NODEFILE=$TELEM_RUNDIR/nodes "$bin/telem_client" report \
            -o "$report" --rundir "$TELEM_RUNDIR" --timeout 5000 || true
    else
        verdict=1 why="the launcher took out the wrong node first: ${line##*accepted: }"
    fi
elif kill -0 "$job" 2>/dev/null; then
    # No restart in time: measure why, then release the hold and finish.
    TELEM_NODEFILE=$TELEM_RUNDIR/nodes "$bin/telem_client" --timeout 5000 \
        -f json query cg_dgemm_seconds --start -600s >"$work/rounds.json" || true
    # The bar the detector spec sets (slowgpu's defaults: effect 0.06, z 3).
    spec=${SLOW_GPU_DETECTOR:-slowgpu}
    effect=$(sed -nE 's/.*[:,]effect=([0-9.]+).*/\1/p' <<<"$spec")
    z=$(sed -nE 's/.*[:,]z=([0-9.]+).*/\1/p' <<<"$spec")
    figures=$(python3 "$top/examples/slow_gpu_noise.py" n2 "$load_ns" \
              "${effect:-0.06}" "${z:-3}" <"$work/rounds.json") \
        && verdict=1 || verdict=$?
    kill -TERM "$load" 2>/dev/null || true
    why="n2 was not excluded within $wait_s s of the load: $figures"
    "$bin/telem_dict" event-set slow_gpu/release >/dev/null 2>&1 \
        || echo "slow_gpu.sh: could not release the hold" >&2
else
    kill -TERM "$load" 2>/dev/null || true
    verdict=1 why="the job ended before any restart"
fi
rc=0
wait "$job" || rc=$?
echo
echo "== summary (telem_launch exited $rc)"
grep -h "restart [0-9]" "$work/job.log" || echo "no restart"
grep -h "resumed at iteration\|semicircle law\|checksum\|plot written" \
    "$work/job.out" || true
busy=$(cat "$work/busy" 2>/dev/null || echo 0)
echo "busiest core with work at normal priority over any second: $busy %"
if ((verdict == 0)); then
    restarts=$(grep -c "accepted: restart [0-9]*: nodes" "$work/job.log" || true)
    ((restarts == 1)) || verdict=1 why="after n2, the launcher also took out: \
$(grep "accepted: restart [0-9]*: nodes" "$work/job.log" | tail -n +2 \
  | sed 's/.*accepted: //' | paste -sd ';' -)"
fi
# A healthy node taken out while other work kept a core busy: that work
# slowed its device for real, and this machine cannot tell it from a slow
# device; undecidable, not a detection error.
if ((verdict == 1)) && [[ $why == *"took out"* ]] && ((busy > 70)); then
    verdict=3 why="$why, while a core was $busy % busy with work this script did not start"
fi
if ((rc != 0)) && ((verdict == 0)); then
    verdict=1 why="telem_launch exited $rc"
fi
if ((verdict != 0)); then
    echo "slow_gpu.sh: FAILED: $why"
    ((verdict == 3)) && echo "slow_gpu.sh: undecidable here: other work on" \
        "the machine or its noise kept slowgpu from telling n2's slowdown" \
        "apart (figures above)"
    exit "$verdict"
fi
echo "slow_gpu.sh: ok: slowgpu named n2 and the job finished without it"
