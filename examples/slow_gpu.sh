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
# The job runs until the detector has acted or a bound passes: slow_gpu
# --hold-at 0.5 stops every task half-way on its first run and waits until
# the launcher restarts the job (a restarted run does not wait), so however
# fast the machine, the job is still running when slowgpu has seen enough
# rounds.  The wait is bounded (SLOW_GPU_WAIT seconds); when it runs out,
# the script releases the hold (the dictionary event slow_gpu/release),
# lets the job finish (at most SLOW_GPU_FINISH seconds), and says in one
# line "no restart happened: ..." why: the slowdown the load caused on n2
# against the round-to-round noise of the devices, both measured from the
# collectors' own figures.
#
# The load stops when the job ends, whatever way it ends: it is stopped
# once n2 is out, it runs for at most the bound (telem_load --duration), a
# guard stops it (and the core sampler) as soon as the launcher's process
# is gone, and the script's cleanup (on exit, an error, Ctrl-C, SIGTERM or
# SIGHUP) stops the load first, then the job.  If the script itself is
# killed (kill -9), its guards stop the job, and with it the load.
#
# Exit status: 0 the job was restarted without n2 on slowgpu's word and
# finished; 1 it was not (or the job failed), with the reason; 2 not built;
# 3 undecidable: other work on the machine made the devices' noise too
# high for slowgpu to tell the slowdown from it (the figures are printed),
# or kept the job's workers (at nice 19) from finishing within the bound;
# 128 + the signal when it was interrupted.
#
# Environment: TELEM_BIN (default: build/bin of this tree), SLOW_GPU_ARGS
# (the example's options; default a run of some 10-30 s on two cores),
# SLOW_GPU_DETECTOR (the detector spec, default slowgpu), SLOW_GPU_WAIT
# (seconds to wait for the restart after the load starts, default 240),
# SLOW_GPU_FINISH (seconds the job may take to finish after the restart or
# the release, default 300).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${TELEM_BIN:-${TELEM_BUILD_DIR:-$top/build}/bin}
plot=${1:-$PWD/slow_gpu.svg}
report=${2:-$PWD/slow_gpu_report.html}
read -r -a args <<<"${SLOW_GPU_ARGS:---tasks 8 --iterations 600 --size 150}"
for p in telem_launch telem_watch telem_collect telem_load slow_gpu; do
    [ -x "$bin/$p" ] || { echo "slow_gpu.sh: $bin/$p is not built" >&2; exit 2; }
done

# whole_seconds NAME VALUE: VALUE, checked to be a positive whole number.
whole_seconds() {
    [[ $2 =~ ^[0-9]+$ ]] && (($2 > 0)) && return 0
    echo "slow_gpu.sh: $1 must be a whole number of seconds" >&2
    exit 2
}
wait_s=${SLOW_GPU_WAIT:-240}
finish_s=${SLOW_GPU_FINISH:-300}
whole_seconds SLOW_GPU_WAIT "$wait_s"
whole_seconds SLOW_GPU_FINISH "$finish_s"

work=$(mktemp -d /tmp/telem-slowgpu.XXXXXX)
export TELEM_RUNDIR=$work/run
unset TELEM_NODEFILE TELEM_DICT_NODEFILE SLURM_JOB_NODELIST || true
mkdir -m 700 "$TELEM_RUNDIR"
job="" load="" busy_pid=""
helpers=()
# stop PID...: SIGTERM, then SIGKILL to whatever is left after 20 s (the
# launcher stops its nodes within its grace, 5 s by default).
stop() {
    local p left
    kill -TERM "$@" 2>/dev/null || true
    for _ in $(seq 200); do
        left=0
        for p in "$@"; do kill -0 "$p" 2>/dev/null && left=1; done
        ((left)) || return 0
        sleep 0.1
    done
    kill -KILL "$@" 2>/dev/null || true
}
# The load first (it slows the machine for everyone), then the job, then
# the helpers; every path out of the script comes here.
cleanup() {
    trap "" INT TERM HUP
    [ -n "$load" ] && stop "$load"
    [ -n "$busy_pid" ] && stop "$busy_pid"
    [ -n "$job" ] && stop "$job"
    ((${#helpers[@]})) && stop "${helpers[@]}"
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "slow_gpu.sh: interrupted: the load and the job stop" >&2; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
# tie PID...: a guard that stops PID... once the job or this script is gone,
# so nothing outlives them even when this script is killed with SIGKILL.
tie() {
    local me=$$
    (   trap '' INT
        while kill -0 "$job" 2>/dev/null && kill -0 "$me" 2>/dev/null; do
            sleep 0.5
        done
        kill -TERM "$@" 2>/dev/null || true
    ) &
    helpers+=("$!")
}
# If this script is killed (kill -9), its cleanup cannot run: once the job
# is gone too (its guard stops it), this guard removes the work directory.
me=$$
(   trap '' INT
    while kill -0 "$me" 2>/dev/null; do sleep 1; done
    for _ in $(seq 60); do
        [ -n "$(pgrep -f -- "--rundir $TELEM_RUNDIR" || true)" ] || break
        sleep 0.5
    done
    rm -rf "$work"
) &
helpers+=("$!")
# job_wait SECONDS CMD...: runs CMD until it succeeds; 1 when the job ended
# or SECONDS passed first.
job_wait() {
    local n=$(($1 * 20)); shift
    for _ in $(seq "$n"); do
        "$@" >/dev/null 2>&1 && return 0
        kill -0 "$job" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
# no_restart WHY: the one line that says no restart happened, and why.
no_restart() {
    echo "slow_gpu.sh: no restart happened: $1"
}

echo "== telem_launch --local 3 --nodes 2 --resilient --exhaust-resources" \
     "--telemetry-level 3 --detector slowgpu --collect ... --" \
     "nice -n 19 slow_gpu ${args[*]} --hold-at 0.5"
"$bin/telem_launch" --local 3 --nodes 2 --resilient --exhaust-resources \
    --telemetry-level 3 --detector "${SLOW_GPU_DETECTOR:-slowgpu}" \
    --collect "--period 0.5 --reps 5 --spread --devices 0 --local-devices 0" \
    -- nice -n 19 "$bin/slow_gpu" "${args[@]}" --hold-at 0.5 --plot "$plot" \
    >"$work/job.out" 2>"$work/job.log" &
job=$!
# What the job prints, shown as it comes; each ends with the job.
tail -n +1 -f --pid="$job" "$work/job.out" &
helpers+=("$!")
tail -n +1 -f --pid="$job" "$work/job.log" >&2 &
helpers+=("$!")
tie "$job"
# Other work on the machine (at normal priority: slow_gpu's own workers run
# at nice 19) is contention too, on any device; measured for the verdict.
python3 "$top/examples/cpu_busy.py" "$work/busy" &
busy_pid=$!
tie "$busy_pid"

# The collector map says which core n2's device 0 runs on and its phase;
# the collectors on that core take turns in every 0.1 s (period / reps).
if ! job_wait 60 grep -q "^node n2 device 0 -> " "$work/job.out"; then
    rc=0
    kill -0 "$job" 2>/dev/null || wait "$job" || rc=$?
    no_restart "the collectors did not start ($( ((rc)) \
        && echo "telem_launch exited $rc" || echo "no map within 60 s"))"
    echo "slow_gpu.sh: FAILED: the collectors did not start" >&2
    exit 1
fi
read -r core phase < <(awk '$1 == "node" && $2 == "n2" { print $8, $12 / 1000 }' \
                       "$work/job.out" | head -n 1)
ncoll=$(awk '$1 == "node" { n++ } END { print n }' "$work/job.out")
turn=$(awk -v n="$ncoll" 'BEGIN { printf "%.6f", 0.1 / n }')
rt=()
if chrt -f 30 true 2>/dev/null; then rt=(chrt -f 30); fi
echo "== telem_load --device $core --period 0.1 --window $turn --phase $phase" \
     "--duration $((wait_s + 60)): contention on n2's device 0 only"
load_ns=$(date +%s%N)
"${rt[@]}" "$bin/telem_load" --device "$core" --cycle-ms 2 --duty 0.5 \
    --period 0.1 --window "$turn" --phase "$phase" --duration $((wait_s + 60)) \
    >/dev/null 2>"$work/load.log" &
load=$!
tie "$load"

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

# stop_load: the load stops (it is stopped once, here or in cleanup).
stop_load() {
    [ -n "$load" ] && stop "$load"
    load=""
}

verdict=0 why=""
if line=$(restart_line); then
    # On a real cluster the slow GPU leaves the job with its node; here the
    # reserve's collector would start on the same core, so the load stops.
    stop_load
    if [[ $line =~ nodes\ n2([^0-9]|$) ]]; then
        echo "== n2 is out of the job: the load stopped"
        # The job report, while the nodes still hold the job's data: the
        # devices' round times with the detector's decision, the restart
        # (once the launcher has logged it, after the new start).
        job_wait 30 grep -q "restart 1 (of at most" \
            "$TELEM_RUNDIR/launch/restarts.log" || true
        echo "== telem_client report -o $report"
        TELEM_NODEFILE=$TELEM_RUNDIR/nodes "$bin/telem_client" report \
            -o "$report" --rundir "$TELEM_RUNDIR" --timeout 5000 || true
    else
        verdict=1 why="the launcher took out the wrong node first: ${line##*accepted: }"
    fi
elif kill -0 "$job" 2>/dev/null; then
    # No restart in time: stop the load, measure why from the rounds it
    # left in the nodes, then release the hold so the job finishes.
    stop_load
    TELEM_NODEFILE=$TELEM_RUNDIR/nodes "$bin/telem_client" --timeout 5000 \
        -f json query cg_dgemm_seconds --start -600s >"$work/rounds.json" || true
    # The bar the detector spec sets (slowgpu's defaults: effect 0.06, z 3).
    spec=${SLOW_GPU_DETECTOR:-slowgpu}
    effect=$(sed -nE 's/.*[:,]effect=([0-9.]+).*/\1/p' <<<"$spec")
    z=$(sed -nE 's/.*[:,]z=([0-9.]+).*/\1/p' <<<"$spec")
    figures=$(python3 "$top/examples/slow_gpu_noise.py" n2 "$load_ns" \
              "${effect:-0.06}" "${z:-3}" <"$work/rounds.json") \
        && verdict=1 || verdict=$?
    why="n2 was not excluded within $wait_s s of the load: ${figures:-no figures}"
    # A watcher that could not run decides nothing: say so, with its words.
    if grep -q "daemon telem_watch on [^ ]* exited" "$work/job.log"; then
        why="$why; the watcher kept failing: $(grep "^telem_watch: " \
            "$work/job.out" "$work/job.log" -h | tail -n 1)"
    fi
    echo "== no restart within $wait_s s: the load stopped; releasing the hold"
    TELEM_DICT_NODEFILE=$TELEM_RUNDIR/dict_nodes "$bin/telem_dict" \
        event-set slow_gpu/release >/dev/null 2>&1 \
        || echo "slow_gpu.sh: could not release the hold" >&2
else
    stop_load
    verdict=1 why="the job ended before any restart, $(( SECONDS - deadline + wait_s )) s after the load started"
fi
# The job finishes within its bound, or is stopped.
rc=0
finish=$((SECONDS + finish_s))
while kill -0 "$job" 2>/dev/null && ((SECONDS < finish)); do sleep 0.2; done
late=0
if kill -0 "$job" 2>/dev/null; then
    stop "$job"
    ((verdict)) || late=1 verdict=1 why="the job did not finish within $finish_s s"
fi
wait "$job" || rc=$?
job=""
echo
echo "== summary (telem_launch exited $rc)"
if ! grep -h "accepted: restart [0-9]*: \|warn: restart [0-9]* (of at most" \
    "$work/job.log"; then
    no_restart "$why"
fi
# From the file, not the stream above: the clean-up stops tail as soon as
# the script ends, on a busy machine before it has read the last lines.
grep -h "resumed at iteration\|eigenvalues (expected\|semicircle law\|checksum\|plot written" \
    "$work/job.out" || true
busy_pct=$(cat "$work/busy" 2>/dev/null || echo 0)
echo "busiest core with work at normal priority over any second: $busy_pct %"
if ((verdict == 0)); then
    restarts=$(grep -c "accepted: restart [0-9]*: nodes" "$work/job.log" || true)
    ((restarts == 1)) || verdict=1 why="after n2, the launcher also took out: \
$(grep "accepted: restart [0-9]*: nodes" "$work/job.log" | tail -n +2 \
  | sed 's/.*accepted: //' | paste -sd ';' -)"
fi
# A healthy node taken out while other work kept a core busy: that work
# slowed its device for real, and this machine cannot tell it from a slow
# device; undecidable, not a detection error.
# The same for a job whose workers (at nice 19) other work kept from the
# cores until the bound passed: this machine was too busy to finish it.
if ((verdict == 1)) && { [[ $why == *"took out"* ]] || ((late)); } &&
   ((busy_pct > 70)); then
    verdict=3 why="$why, while a core was $busy_pct % busy with work this script did not start"
fi
if ((rc != 0)) && ((verdict == 0)); then
    verdict=1 why="telem_launch exited $rc"
fi
if ((verdict != 0)); then
    echo "slow_gpu.sh: FAILED: $why"
    if ((verdict == 3 && late)); then
        echo "slow_gpu.sh: undecidable here: other work on the machine kept" \
             "the job's workers (at nice 19) from the cores until the bound passed"
    elif ((verdict == 3)); then
        echo "slow_gpu.sh: undecidable here: other work on the machine or its" \
             "noise kept slowgpu from telling n2's slowdown apart (figures above)"
    fi
    exit "$verdict"
fi
echo "slow_gpu.sh: ok: slowgpu named n2 and the job finished without it"
