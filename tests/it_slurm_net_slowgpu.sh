# it_slurm_net_slowgpu.sh - the resilient slow-device job on a real
# network: the namespaced Slurm cluster of tests/slurm/netns.sh (4 nodes),
# `salloc -N 3 telem_launch --nodes 2 --resilient --exhaust-resources
# --telemetry-level 3 --detector slowgpu -- slow_gpu ...`.
#
# 1. The walkthrough of docs/telem_launch.md, literally (its command, a
#    run directory of the test's own): the lines it shows come, in its
#    words (the detector's collectors started by default, the job's shape
#    and restart endpoint, the dictionary, telem_agg, one collector map per
#    active node); the job ends 0 with no restart, the histogram of an
#    undisturbed run, and clean stops (every srun step ends on its stop
#    signal: no "CANCELLED" step, no killed task).
# 2. The seed scenario: the same job, its collectors taking turns on one
#    core (--local-devices 0: the nodes share this machine's cores, so
#    they are compared on the same hardware) and slow_gpu holding half-way
#    in its first two runs (--hold-at 0.5 --hold-runs 2) so the job lasts
#    until the detector has acted, however fast the machine.  A real load
#    (telem_load, SCHED_FIFO, run inside n2's namespace) slows n2's device
#    in its turn: slowgpu names n2, the job restarts on n1 and the reserve
#    n3.  The load then moves to n3's device: slowgpu names n3 and, with
#    --exhaust-resources, the job goes on and finishes on n1 alone.  The
#    histogram equals an undisturbed run's, every eigenvalue counted once,
#    tasks resumed from the dictionary, one line per restart, and nothing
#    left in any node's namespace once the allocation ends.
# When slowgpu does not act within the bound, the collectors' own figures
# decide (examples/slow_gpu_noise.py): if the machine's noise hid the
# slowdown, the test is skipped with those figures; otherwise it fails.
#
# Skipped, with the reason, where it cannot run: not root, no network
# namespaces, no real-time scheduling, or slurm-wlm and munge missing and
# not installable: the test installs them (tests/peer_install.sh) unless
# there is no apt, the install fails, or TELEM_SLURM_INSTALL=0.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "${TELEM_SRC:-$(dirname "${BASH_SOURCE[0]}")/..}/tests/slurm/faults.sh"
SRC=${TELEM_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
WAIT=${TELEM_NET_SLOWGPU_WAIT:-150}     # seconds for each detection
if ! chrt -f 30 true 2>/dev/null; then
    skip "real-time scheduling (chrt -f) is not permitted here, and" \
         "without it the load cannot slow one device"
fi
net_setup
B=$TELEM_BIN
SG=(--tasks 8 --iterations 600)         # the walkthrough's program

# The reference: the same work on one node, undisturbed.
"$B/telem_launch" --rundir "$TELEM_RUNDIR" --local 1 -- "$B/slow_gpu" \
    --ns ref --devices 2 "${SG[@]}" >"$T/ref.out" 2>"$T/ref.err" \
    || fail "reference run failed: $(cat "$T/ref.out" "$T/ref.err")"
ref=$(sed -n 's/.*histogram checksum //p' "$T/ref.out")
[ -n "$ref" ] || fail "no checksum in the reference run"

# check_result DIR: the program's result in DIR/launch.out is right.
check_result() {
    local got
    grep -q "semicircle law: PASS" "$1/launch.out" \
        || fail "$1: $(grep "slow_gpu:" "$1/launch.out" | tail -n 3)"
    grep -Eq "^slow_gpu: .*: ([0-9]+) eigenvalues \(expected \1\)" "$1/launch.out" \
        || fail "$1: eigenvalues counted twice or lost: $(grep eigenvalues "$1/launch.out")"
    got=$(sed -n 's/.*histogram checksum //p' "$1/launch.out")
    [ "$got" = "$ref" ] || fail "$1: histogram $got, $ref undisturbed"
}

# after_job DIR: the allocation is over and no node keeps a process.
after_job() {
    W=$1
    until_t 30 bash -c '[ -z "$(squeue -h)" ]' || fail "jobs left: $(squeue)"
    until_t 30 only_slurmd_left \
        || fail "processes left in node namespaces:$(cat "$W/left")"
}

# --- 1. the walkthrough, literally -------------------------------------------
W1=$T/walk
mkdir -p "$W1"
mkdir -m 700 "$W1/run"
chmod 755 "$W1"
rc=0
(cd "$W1" && salloc -N 3 "$B/telem_launch" --rundir "$W1/run" --nodes 2 \
    --resilient --exhaust-resources --telemetry-level 3 --detector slowgpu \
    -- "$B/slow_gpu" "${SG[@]}" --plot slow_gpu.svg \
    >"$W1/launch.out" 2>"$W1/launch.err") || rc=$?
[ "$rc" = 0 ] || fail "walkthrough: salloc telem_launch exited $rc: $(tail -n 20 "$W1/launch.err")"
for want in \
    "info: --detector slowgpu reads cg_dgemm_seconds from collectors and no --collect was given: starting telem_collect --backend cpu --kernel dgemm on every active node" \
    "info: job of 3 slurm node(s): 2 active, 1 in reserve; restart requests at tcp://[0-9.]*:[0-9]*$" \
    "info: dictionary formed on 3 node(s) in " \
    "info: telem_agg on n1: dashboard and OpenTSDB API at http://localhost:4242/ there; from a login node run 'ssh -NL localhost:4242:localhost:4242 n1' and open http://localhost:4242/" \
    "info: program started on 2 node(s), 1 in reserve" \
    "info: job ends (exit 0): the program finished on every node"; do
    grep -q -- "$want" "$W1/launch.err" \
        || fail "walkthrough: no line '$want' in: $(cut -c1-200 "$W1/launch.err")"
done
for n in n1 n2; do
    grep -q "^node $n device 0 -> cpu device 0 (id 0) phase 0.0 ms pid [0-9]*$" "$W1/launch.out" \
        || fail "walkthrough: no collector map of $n: $(grep '^node' "$W1/launch.out")"
done
! grep -q "^node n3 " "$W1/launch.out" || fail "walkthrough: collectors on the reserve n3"
! grep -q "restart [0-9]* (of at most" "$W1/launch.err" \
    || fail "walkthrough: an undisturbed job restarted: $(grep restart "$W1/launch.err")"
# Every step stopped on its signal: srun was not made to kill it.
! grep -E "CANCELLED|task [0-9]+: Killed|srun: error" "$W1/launch.err" \
    || fail "walkthrough: steps were killed, not stopped"
[ "$(grep -c "telem_collect\[[0-9]*\] info: signal 2: stopping the group" "$W1/launch.err")" = 2 ] \
    || fail "walkthrough: telem_collect did not stop on its signal on both nodes"
check_result "$W1"
grep -q "<polyline" "$W1/slow_gpu.svg" || fail "walkthrough: no plot"
after_job "$W1"
echo "walkthrough: ok ($(grep -c '^node ' "$W1/launch.out") collector maps, exit 0, histogram $ref)"

# --- 2. the seed scenario: two slowed nodes, the end on the last one ---------
W2=$T/seed
mkdir -p "$W2" "$W2/out"
mkdir -m 700 "$W2/run"
chmod 755 "$W2" "$W2/out"
salloc --no-kill -N 3 "$B/telem_launch" --rundir "$W2/run" --nodes 2 \
    --resilient --exhaust-resources --telemetry-level 3 --detector slowgpu \
    --agg-port 0 --grace 2 \
    --collect "--period 0.5 --reps 5 --spread --devices 0 --local-devices 0" \
    -- nice -n 19 "$B/slow_gpu" "${SG[@]}" --hold-at 0.5 --hold-runs 2 \
    --plot "$W2/slow_gpu.svg" >"$W2/launch.out" 2>"$W2/launch.err" &
LPID=$!
EXTRA_PIDS+=("$LPID")
echo "$LPID" >"$W2/salloc.pid"

# Other work on the machine at normal priority (slow_gpu's workers run at
# nice 19) is contention too, on any device: measured for the verdict.
python3 "$SRC/examples/cpu_busy.py" "$W2/busy" &
EXTRA_PIDS+=("$!")

job_alive() { kill -0 "$LPID" 2>/dev/null; }
# until_job SECONDS CMD...: CMD succeeds (0), the job ends first (1) or
# SECONDS pass (2).
until_job() {
    local end=$((SECONDS + $1)); shift
    while ((SECONDS < end)); do
        "$@" >/dev/null 2>&1 && return 0
        job_alive || return 1
        sleep 0.05
    done
    return 2
}
# The newest map line of NODE's collector: "CORE PHASE_SECONDS".
map_of() {
    awk -v n="$1" '$1 == "node" && $2 == n { c = $8; p = $12 / 1000 } END { if (c != "") print c, p }' \
        "$W2/launch.out"
}
has_map() { [ -n "$(map_of "$1")" ]; }
stop_load() {
    local n p
    for n in n1 n2 n3 n4; do
        for p in $(net pid_of "$S" "$n" telem_load); do kill -TERM "$p" 2>/dev/null || true; done
    done
    until_t 10 bash -c "[ -z \"\$(bash $NETNS pid_of $S $1 telem_load)\" ]" || true
}
seed_fail() {
    stop_load "$1"
    kill -TERM "$LPID" 2>/dev/null || true
    fail "seed: $2: $(grep -E 'restart|warn|error' "$W2/launch.err" | tail -n 10 | cut -c1-300)"
}
# named NODE RESTART: restart RESTART took out NODE on slowgpu's word.  A
# healthy node taken out while other work kept a core busy: that work
# slowed its device for real, which this machine cannot tell from a slow
# device (skipped, with the figure); otherwise a detection error.
named() {
    local line busy
    line=$(grep -m1 " restart $2 (of at most" "$W2/launch.err" | sed 's/.*: restart/restart/')
    [[ $line == *": trigger slowgpu; nodes $1; "* ]] && return 0
    busy=$(cat "$W2/busy" 2>/dev/null || echo 0)
    if [[ $line == *"trigger slowgpu"* ]] && ((busy > 70)); then
        stop_load "$1"
        skip "slowgpu took out another node than $1 while a core was" \
             "$busy % busy with work this test did not start: $line"
    fi
    seed_fail "$1" "restart $2 does not name $1: $line"
}

# load NODE NCOLL: telem_load inside NODE's namespace, on its collector's
# core, busy 1 ms of every 2 ms during its turn (period/reps = 0.1 s
# shared by NCOLL collectors) only.  Prints the load's start (ns).
load() {
    local core phase turn
    read -r core phase < <(map_of "$1")
    turn=$(awk -v n="$2" 'BEGIN { printf "%.6f", 0.1 / n }')
    date +%s%N
    net node_exec "$S" "$1" chrt -f 30 "$B/telem_load" --device "$core" \
        --cycle-ms 2 --duty 0.5 --period 0.1 --window "$turn" --phase "$phase" \
        --duration $((WAIT + 30)) >/dev/null 2>"$W2/load-$1.log" &
}

# undecided NODE LOAD_NS SINCE: no restart in time; the collectors' rounds
# since SINCE (seconds ago) decide whether the noise hid the slowdown.
undecided() {
    local figures rc=0
    TELEM_NODEFILE=$W2/run/nodes "$B/telem_client" --timeout 5000 -f json \
        query cg_dgemm_seconds --start "-$3s" >"$W2/rounds.json" 2>/dev/null || true
    figures=$(python3 "$SRC/examples/slow_gpu_noise.py" "$1" "$2" 0.06 3 \
              <"$W2/rounds.json") || rc=$?
    stop_load "$1"
    kill -TERM "$LPID" 2>/dev/null || true
    [ "$rc" = 3 ] && skip "slowgpu did not name $1 within $WAIT s, and the" \
        "machine's noise hid the slowdown: $figures"
    fail "seed: slowgpu did not name $1 within $WAIT s: ${figures:-no figures}"
}

# slow NODE RESTART NCOLL: slows NODE until restart RESTART names it.
slow() {
    local t0 load_ns rc=0
    until_job 60 has_map "$1" || seed_fail "$1" "no collector map of $1"
    t0=$SECONDS
    load_ns=$(load "$1" "$3")
    until_job "$WAIT" grep -q "restart $2 (of at most" "$W2/launch.err" || rc=$?
    case $rc in
    1) seed_fail "$1" "the job ended before restart $2" ;;
    2) undecided "$1" "$load_ns" $((SECONDS - t0 + 5)) ;;
    esac
    DETECT_S=$((SECONDS - t0))
    stop_load "$1"
}

# detect NODE RESTART REST: once the run RESTART-1 holds on NODE, NODE is
# slowed until slowgpu names it; restart RESTART's line goes on with REST.
detect() {
    until_job 60 grep -q "$1: task [0-9]* holds at iteration 300 of 600" "$W2/launch.out" \
        || seed_fail "$1" "run $(($2 - 1)) did not hold on $1"
    slow "$1" "$2" 2
    named "$1" "$2"
    grep -q "restart $2 (of at most [0-9]*): trigger slowgpu; nodes $1; $3" "$W2/launch.err" \
        || seed_fail "$1" "restart $2: $(grep " restart $2 " "$W2/launch.err")"
}
detect n2 1 "promoted n3; why: .*device 0 on node 'n2' is"
first_s=$DETECT_S
# The restarted run holds on n1 and n3; n3's map line is its own.
detect n3 2 "promoted none; why: .*device 0 on node 'n3' is.*; active n1$"
second_s=$DETECT_S
until_t 120 bash -c "! kill -0 $LPID" || seed_fail n1 "the job did not end within 120 s of restart 2"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "seed: salloc telem_launch exited $rc: $(tail -n 20 "$W2/launch.err")"
[ "$(grep -c ' restart [0-9]* (of at most' "$W2/launch.err")" = 2 ] \
    || fail "seed: restart lines: $(grep ' restart ' "$W2/launch.err")"
[ "$(wc -l <"$W2/run/launch/restarts.log")" = 2 ] \
    || fail "seed: restarts.log: $(cat "$W2/run/launch/restarts.log")"
grep -Eq "n3: task [0-9]+ resumed at iteration [0-9]+ of 600" "$W2/launch.out" \
    || fail "seed: nothing resumed on n3"
grep -Eq "n1: task [0-9]+ resumed at iteration [0-9]+ of 600" "$W2/launch.out" \
    || fail "seed: nothing resumed on n1 after restart 2"
check_result "$W2"
grep -q "<polyline" "$W2/slow_gpu.svg" || fail "seed: no plot"
after_job "$W2"
echo "seed: ok (slowgpu named n2 ${first_s} s after its load, n3 ${second_s} s after its load; finished on n1; histogram $ref)"
echo "it_slurm_net_slowgpu: ok"
