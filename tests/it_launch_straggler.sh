# it_launch_straggler.sh - the straggler detector in a live job under
# telem_launch: slow_gpu on three local nodes (two active, one reserve),
# --resilient, --detector straggler beside --detector slowgpu (whose
# collectors time the nodes' test kernels).
#   (b) data imbalance: rank 1 (n2) does twice the work per step
#       (slow_gpu --work-scale 2) on hardware that times normally: the
#       straggler warns naming rank 1, "not the hardware", nothing is
#       restarted, and the job finishes;
#   (a) n2 slowed: a real load (telem_load at SCHED_FIFO 30) in n2's turn
#       slows n2's rank and n2's test kernels alike: the straggler act
#       names n2, "the hardware", the job restarts without n2 (n3
#       promoted), resumes its tasks from the dictionary ("resumed at
#       iteration") and passes the semicircle check with the checksum of
#       job (b);
#   (c) clean ranks: n1 in both jobs, and n1 and n3 after the restart of
#       (a) (once the new watcher has judged 20 windows), are named by no
#       straggler event.
# Before them, the launcher's check of straggler's test kernels (refused
# when the collectors record another kernel; one line when none run), and
# slow_gpu refusing malformed --work-scale and --pace.
#
# The virtual nodes take turns, as the other live tests' devices do: their
# collectors on cpu device 0 (--local-devices 0, --spread: a repetition
# every 0.1 s, n1's at phase 0, n2's at 50 ms), their ranks on cpu device
# 1 (slow_gpu --pace 0.1: rank r's iteration at (r + 0.5) x 50 ms, within
# its node's half of every 0.1 s).  The load, on both cores, covers n2's
# half: it slows n2's kernels and n2's rank, nothing of n1's.  Ranks are
# compared with ranks and kernels with kernels, each on one core: each
# vCPU of a virtual machine changes speed on its own by up to 2x
# (docs/collectors.md).  They are on separate cores because a rank with
# twice the work on the collectors' core made its node's kernels 13 %
# slower while it ran, which attribution reads as the hardware.  The job
# runs at SCHED_FIFO 20 (chrt on the launcher, inherited by all it
# starts; the load at 30 preempts it), so other work at normal priority
# delays no turn; a machine with one cpu device skips the test.
#
# slowgpu runs with effect=10 (a device ten times slower than its peers):
# it is there for its collectors, whose kernel times straggler's
# attribution reads, and cannot act on the load's 2x slowdown, so the
# restart of (a) is the straggler's own: trigger straggler, its sentence
# as the restart line's why.
#
# Waiting is on behaviour.  slow_gpu --hold-at 0.5 stops every task of
# the first run half-way until the job restarts or the test releases it,
# so the job lasts until the detector has judged every window of that
# half, however fast the machine.  The test waits for the detection, or
# for both ranks held, six more straggler runs and no report waiting for
# its test kernels (straggler attributes only from kernels that cover
# hw_window, 15 s).  When the outcome is not the expected one, the job's
# own figures decide (figures.py below): the slowed rank's median step
# time over the clean rank's, the spread of the clean rank's window
# medians, and the two nodes' median kernel times.  If the effect was
# clear (well past the threshold, the clean rank steadier than the
# effect, the kernels as this test made them), the test fails; if not,
# other work on this machine kept it from deciding, and it reports itself
# skipped with those figures.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
L=$TELEM_BIN/telem_launch
W=$TELEM_BIN/telem_watch
# Each job writes its node file into its own run directory.
unset TELEM_LEVEL TELEM_NODEFILE TELEM_DICT_NODEFILE SLURM_JOB_NODELIST || true
for p in telem_watch telem_collect telem_load telem_dict slow_gpu; do
    [ -x "$TELEM_BIN/$p" ] || fail "$p is not built"
done
# ---- the launcher's check of straggler's test kernels ----
# Where collectors run they must record what kernels= reads (exit 2 and
# the fix); where none run, one line says a straggler cannot be excluded.
launch_rc() {   # launch_rc RC PATTERN ARGS...: a job of `true`
    local want=$1 pat=$2 rc=0; shift 2
    rm -rf "$T/chk"; mkdir -m 700 "$T/chk"
    "$L" --rundir "$T/chk" --local 2 --no-agg "$@" -- true >"$T/chk.out" \
        2>"$T/chk.err" || rc=$?
    [ "$rc" = "$want" ] || fail "telem_launch $*: exit $rc, not $want: $(cat "$T/chk.err")"
    grep -q -- "$pat" "$T/chk.err" || fail "telem_launch $*: no '$pat' in: $(cat "$T/chk.err")"
}
launch_rc 2 "straggler reads cg_dgemm_seconds, but the collectors of --collect (--backend cuda) record cg_fma_seconds: use --detector straggler:kernels=cg_fma_seconds, or --collect '--backend cpu" \
    --detector straggler --collect "--backend cuda"
launch_rc 2 "straggler reads cg_fma_seconds, but the collectors the launcher starts (--kernel dgemm) record cg_dgemm_seconds: use --detector straggler:kernels=cg_dgemm_seconds" \
    --detector straggler:kernels=cg_fma_seconds --detector slowgpu
launch_rc 0 "runs no collectors: a straggler is warned about and never excluded; add --detector slowgpu" \
    --detector straggler
launch_rc 0 "a straggler is excluded only on its GPU health fields" \
    -L 3 --detector straggler
launch_rc 0 "starting telem_collect --backend cpu --kernel dgemm" \
    --detector straggler --detector slowgpu
! grep -q "straggler" "$T/chk.err" || fail "straggler beside slowgpu: $(cat "$T/chk.err")"

if ! chrt -f 30 true 2>/dev/null; then
    skip "real-time scheduling (chrt -f) is not permitted here, and" \
         "without it the load cannot take n2's turns from the job"
fi
command -v taskset >/dev/null || skip "no taskset to pin the ranks to one core"
# The ranks take turns on this machine's cpu device 1, the collectors on
# device 0.
read -r RDEV RCORE < <("$TELEM_BIN/telem_collector" --list-devices \
    --backend cpu 2>/dev/null | awk '$1 == "cpu" && $2 == 1 { print $2, $3 }')
[ -n "${RCORE:-}" ] || skip "one cpu device here: the ranks and the collectors need a core each"

# ---- slow_gpu's options for this test, refused when malformed ----
sg_quiet() { "$TELEM_BIN/slow_gpu" "$@" 2>/dev/null; }
for bad in "--work-scale 0" "--work-scale 17" "--work-scale x" "--pace -1" \
           "--pace 11" "--pace 0.1s" "--pace ''"; do
    eval "expect_rc 2 sg_quiet $bad"
done

ARGS=(--tasks 4 --iterations 80 --size 250 --pace 0.1 --hold-at 0.5)
COLLECT="--period 0.5 --reps 5 --spread --devices 0 --local-devices 0"
DETS=(--detector straggler --detector slowgpu:effect=10)
BOUND=60                    # seconds for any one thing the test waits for

# The program: each run records that it ran and starts once the test has
# written go-<restart count> (and the ranks' core into core);
# rank $HEAVY does twice the work per step.
cat >"$T/prog.sh" <<'EOF'
#!/usr/bin/env bash
touch "$OUT/run-$TELEM_RESTART_COUNT-$TELEM_NODE"
while [ ! -e "$OUT/go-$TELEM_RESTART_COUNT" ]; do sleep 0.05; done
ws=1
[ "$TELEM_RANK" = "$HEAVY" ] && ws=2
exec taskset -c "$(cat "$OUT/core")" "$TELEM_BIN/slow_gpu" --ns "$NS" \
    --work-scale "$ws" "$@"
EOF
chmod +x "$T/prog.sh"

# figures.py JSON MODE: from the first run of n1 and n2 (each node's
# earliest series), n2's median step time over n1's, the spread (max /
# min) of n1's medians over windows of 8 steps (every 4, past the first
# 2), and their median kernel times.  MODE slow: clear when n2 took over
# 1.6x n1's (1.2 x the detector's 1 / 0.75), n1's spread is under the
# square root of that, and n2's kernels are over 1.1x n1's; imbalance: the
# same for the steps, with the kernels within 5 % of each other (the
# detector's hw_effect).  Prints the figures; exit 0 clear, 3 not.
cat >"$T/figures.py" <<'EOF'
import json, statistics, sys
doc = json.load(open(sys.argv[1]))
mode = sys.argv[2]
first = {}                       # (node, kind) -> the earliest series
for s in doc.get("series", []):
    node = s.get("tags", {}).get("host") or s.get("node")
    kind = s.get("metric")
    if not s.get("points") or kind not in (
            "cg_dgemm_seconds", "telem_section_seconds", "telem_section_step"):
        continue
    old = first.get((node, kind))
    if old is None or s["points"][0][0] < old["points"][0][0]:
        first[(node, kind)] = s
def steps(node):
    secs = first.get((node, "telem_section_seconds"), {}).get("points", [])
    have = {ts for ts, _ in first.get((node, "telem_section_step"),
                                      {}).get("points", [])}
    return [v for ts, v in secs if ts in have][2:]
def kernels(node):
    return statistics.median(
        [v for _, v in first.get((node, "cg_dgemm_seconds"),
                                 {}).get("points", [[0, float("nan")]])])
a, b = steps("n2"), steps("n1")
if len(a) < 16 or len(b) < 16:
    print(f"too few steps to judge (n2: {len(a)}, n1: {len(b)})")
    sys.exit(3)
ratio = statistics.median(a) / statistics.median(b)
wb = [statistics.median(b[i:i + 8]) for i in range(0, len(b) - 7, 4)]
spread = max(wb) / min(wb)
kr = kernels("n2") / kernels("n1")
print(f"n2's rank took {ratio:.2f}x n1's median step time "
      f"({statistics.median(a):.4g} s against {statistics.median(b):.4g} s "
      f"over {len(a)} and {len(b)} steps; the detector names it from "
      f"1.33x); n1's own window medians spread {spread:.2f}x; n2's test "
      f"kernels took {kr:.3f}x n1's")
clear = ratio > 1.6 and spread < ratio ** 0.5 and (
    kr > 1.1 if mode == "slow" else kr < 1.05)
sys.exit(0 if clear else 3)
EOF

# start JOB: the job in the background, at SCHED_FIFO 20; its own run
# directory (a node's history outlives its job) and output in $T/JOB.*.
start() {
    JOB=$1 RD=$T/run-$1 OUT=$T/out-$1 NS=sg-$1 HELD_RUNS=
    mkdir -m 700 "$RD"; mkdir "$OUT"
    export OUT NS HEAVY TELEM_BIN
    chrt -f 20 "$L" --rundir "$RD" --grace 2 --local 3 --nodes 2 --resilient \
        --no-agg --watch-period 0.5 "${DETS[@]}" --collect "$COLLECT" \
        -- "$T/prog.sh" "${ARGS[@]}" >"$T/$JOB.out" 2>"$T/$JOB.log" &
    LPID=$!
    EXTRA_PIDS+=("$LPID")
}
running() { kill -0 "$LPID" 2>/dev/null; }
# until_ CMD...: runs CMD until it succeeds (0), the job ends (1) or the
# bound passes (2).
until_() {
    local end=$((SECONDS + BOUND))
    while ! "$@" >/dev/null 2>&1; do
        running || { "$@" >/dev/null 2>&1 && return 0; return 1; }
        ((SECONDS < end)) || return 2
        sleep 0.1
    done
}
status() { "$W" ctl --rundir "$RD" status 2>/dev/null; }
field() { awk -v k="$1" '/^\[/ { s = $0 } s == "[straggler]" && $1 == k { print $2 }'; }
held() { [ "$(grep -c 'holds at iteration' "$T/$JOB.out")" -ge 2 ]; }
events() { grep -h '"detector":"straggler"' "$RD/telem_watch/events.jsonl" 2>/dev/null || true; }
# decided PATTERN FILE: PATTERN in FILE (the detection); or both ranks
# held, six more straggler runs and no report waiting for its kernels.
decided() {
    grep -q "$1" "$2" && return 0
    held || return 1
    local s runs; s=$(status) || return 1
    runs=$(field runs <<<"$s")
    [ -n "$HELD_RUNS" ] || HELD_RUNS=$((runs + 6))
    ((runs >= HELD_RUNS)) && [ "$(field waiting <<<"$s")" = none ]
}
# mapped: waits for the collector map (n2's collector at 50 ms on cpu
# device 0) and gives the program the ranks' core.
map_line() { grep -q "^node n2 device 0 -> " "$T/$JOB.out"; }
mapped() {
    until_ map_line || fail "$JOB: no collector map: $(tail -n 5 "$T/$JOB.log")"
    grep -q "^node n2 device 0 -> cpu device 0 (id [0-9]*) phase 50.0 ms" "$T/$JOB.out" \
        || fail "$JOB: collector map: $(grep '^node ' "$T/$JOB.out")"
    echo "$RCORE" >"$OUT/core"
}
# loaded N: n2 has N test-kernel rounds that began after the load did.
loaded() {
    TELEM_NODEFILE=$RD/nodes "$TELEM_BIN/telem_client" -f json \
        query cg_dgemm_seconds --start -60s 2>/dev/null | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
n = sum(1 for s in d.get("series", []) if s.get("tags", {}).get("host") == "n2"
        for ts, v in s["points"] if ts >= int(sys.argv[1]))
sys.exit(0 if n >= int(sys.argv[2]) else 1)' "$LOAD_NS" "$1"
}
release() {
    TELEM_DICT_NODEFILE=$RD/dict_nodes "$TELEM_BIN/telem_dict" \
        event-set "$NS/release" >/dev/null
}
# verdict MODE WHAT: the outcome was not the expected one (WHAT): the
# job's figures say whether this machine could have decided (fail) or
# not (skip).
verdict() {
    TELEM_RUNDIR=$RD TELEM_NODEFILE=$RD/launch/telemd_nodes "$TELEM_BIN/telem_client" \
        --timeout 5000 -f json query \
        telem_section_seconds,telem_section_step,cg_dgemm_seconds \
        --start -600s >"$T/$JOB.json" 2>&1 || fail "$JOB: $2; query: $(cat "$T/$JOB.json")"
    local fig rc=0
    fig=$(/usr/bin/python3 "$T/figures.py" "$T/$JOB.json" "$1") || rc=$?
    [ "$rc" = 3 ] && skip "$JOB: $2, and other work on this machine kept it from deciding: $fig"
    fail "$JOB: $2, though the effect was clear: $fig; straggler: $(status | sed -n '/\[straggler\]/,/^$/p')"
}
# finish: waits for the job's end, bounded; its exit status must be 0.
finish() {
    local end=$((SECONDS + BOUND)) rc=0
    while running && ((SECONDS < end)); do sleep 0.2; done
    running && fail "$JOB: the job did not finish within $BOUND s"
    wait "$LPID" || rc=$?
    [ "$rc" = 0 ] || fail "$JOB: telem_launch exited $rc: $(tail -n 5 "$T/$JOB.log")"
}
checksum() { sed -n 's/.*histogram checksum //p' "$T/$1.out" | tail -n 1; }
passed() {
    grep -Eq "^slow_gpu: .*: ([0-9]+) eigenvalues \(expected \1\)" "$T/$JOB.out" \
        || fail "$JOB: eigenvalues counted twice or lost: $(grep eigenvalues "$T/$JOB.out")"
    grep -q "semicircle law: PASS" "$T/$JOB.out" \
        || fail "$JOB: $(grep 'slow_gpu: ' "$T/$JOB.out" | tail -n 3)"
}

# ---- (b) data imbalance: a warning naming rank 1, no restart ----
HEAVY=1
start imbalance
mapped
touch "$OUT/go-0"
rc=0
until_ decided '"detector":"straggler"' "$RD/telem_watch/events.jsonl" || rc=$?
[ "$rc" = 2 ] && fail "$JOB: neither an event nor both ranks held within $BOUND s"
[ "$rc" = 1 ] && fail "$JOB: the job ended while held: $(tail -n 5 "$T/$JOB.log")"
ev=$(events)
if ! grep -q '"severity":"warn".*"nodes":\["n2"\]' <<<"$ev"; then
    verdict imbalance "rank 1, with twice the work, was not named by a warning (${ev:-no straggler event})"
fi
grep -q "rank 1 on node 'n2' is a straggler in section 'iteration': it takes .* not the hardware: test kernels cg_dgemm_seconds [-+][0-9.]* % against the other nodes' .*, no GPU health field off; it is not excluded" <<<"$ev" \
    || fail "$JOB: the warning: $ev"
release || fail "$JOB: could not release the hold"
finish
[ "$(events | grep -c .)" = 1 ] || fail "$JOB: straggler events: $(events)"
! grep -q "restart [0-9]" "$T/$JOB.log" || fail "$JOB: restarted: $(grep restart "$T/$JOB.log")"
[ ! -e "$OUT/run-1-n1" ] || fail "$JOB: the program ran again"
passed
warning=$(grep -o "it takes [0-9.e-]* s a step against the fastest rank's [0-9.e-]* s\|test kernels cg_dgemm_seconds [-+][0-9.]* %" <<<"$ev" | paste -sd ',' -)

# ---- (a) n2's turn loaded: the hardware, a restart without n2 ----
HEAVY=none
start slow
mapped
# The load before the program: n2's half of every 0.1 s on both cores
# (its collector's turn and its rank's), busy 1 ms of every 2: n2's
# kernels and steps about 2x slower.
LOAD_NS=$(date +%s%N)
LOAD=()
for dev in 0 "$RDEV"; do
    chrt -f 30 "$TELEM_BIN/telem_load" --device "$dev" --cycle-ms 2 \
        --duty 0.5 --period 0.1 --window 0.05 --phase 0.05 \
        --duration $((4 * BOUND)) >"$T/load$dev.out" 2>"$T/load$dev.log" &
    LOAD+=("$!")
    EXTRA_PIDS+=("$!")
done
# The program starts once n2's kernels have 4 rounds under the load.
until_ loaded 4 || fail "$JOB: n2's collector timed no round under the load: $(cat "$T"/load*.log)"
touch "$OUT/go-0"
rc=0
until_ decided "accepted: restart 1: nodes" "$T/$JOB.log" || rc=$?
[ "$rc" = 2 ] && fail "$JOB: neither a restart nor both ranks held within $BOUND s"
[ "$rc" = 1 ] && fail "$JOB: the job ended while held: $(tail -n 5 "$T/$JOB.log")"
# n2 is out: on a cluster its slow device leaves with it; here the reserve
# takes n2's turn on the same core, so the load stops before the restarted
# program starts.
kill "${LOAD[@]}"
wait "${LOAD[@]}" 2>/dev/null || true
# The restart line comes once the program has been started again.
if grep -q "accepted: restart 1: nodes" "$T/$JOB.log"; then
    until_ grep -q "warn: restart 1 (of at most" "$T/$JOB.log" || true
fi
line=$(grep -m1 "warn: restart 1 (of at most" "$T/$JOB.log" || true)
if ! grep -q "trigger straggler; nodes n2; promoted n3; why: node 'n2' is a straggler" <<<"$line"; then
    verdict slow "n2 under the load was not excluded by straggler (${line:-no restart}; straggler events: $(events))"
fi
touch "$OUT/go-1"
# (c) after the restart: the new watcher's straggler judges n1 and n3
# (20 windows: at most 8 of them from n1's first run alone) while the
# job runs, so its silence about them below means something.
judged() {
    local s; s=$(status) || return 1
    [ "$(field ranks <<<"$s")" -ge 2 ] || return 1
    [ "$(sed -n 's/^ *sections *iteration (\([0-9]*\) windows)$/\1/p' <<<"$s")" -ge 20 ]
}
rc=0
until_ judged || rc=$?
if [ "$rc" != 0 ]; then
    running && fail "$JOB: after the restart, straggler judged too few windows: $(status | sed -n '/\[straggler\]/,/^$/p')"
    skip "$JOB: the job ended before the watcher after the restart had judged 20 windows of n1 and n3"
fi
finish
grep -q "restart 1 (of at most [0-9]*): trigger straggler; nodes n2; promoted n3; why: node 'n2' is a straggler in section 'iteration' (rank 1): rank 1 takes .* the hardware: test kernels cg_dgemm_seconds +[0-9.]* % against the other nodes' .*; asking to exclude the node" \
    <<<"$line" || fail "$JOB: restart line: $line"
[ "$(grep -c "warn: restart [0-9]* (of at most" "$T/$JOB.log")" = 1 ] \
    || fail "$JOB: restarts: $(grep 'warn: restart' "$T/$JOB.log")"
[ ! -e "$OUT/run-1-n2" ] || fail "$JOB: n2 ran the program again"
[ -e "$OUT/run-1-n3" ] || fail "$JOB: n3 did not run the program"
grep -Eq "(n1|n3): task [0-9]+ resumed at iteration [0-9]+ of 80" "$T/$JOB.out" \
    || fail "$JOB: nothing resumed: $(grep 'slow_gpu: ' "$T/$JOB.out")"
passed
[ "$(checksum slow)" = "$(checksum imbalance)" ] \
    || fail "checksum $(checksum slow) after the restart, $(checksum imbalance) undisturbed"
# (c): one straggler event in the whole job, the act on n2: none for n1,
# none for n1 and n3 after the restart.
[ "$(events | grep -c .)" = 1 ] || fail "$JOB: straggler events: $(events)"
events | grep -q '"severity":"act",.*"nodes":\["n2"\]' \
    || fail "$JOB: the act event: $(events)"
why=$(grep -o "rank 1 takes [0-9.e-]* s a step against the fastest rank's [0-9.e-]* s\|test kernels cg_dgemm_seconds +[0-9.]* %" <<<"$line" | paste -sd ',' -)
echo "it_launch_straggler: ok (imbalance: $warning; n2 slowed: $why)"
