# it_gpu_health.sh - the gpu-health detector in a real job under
# telem_launch: three local nodes, two active, --resilient, level 3, each
# telemd loading the test-only NVML (tests/nvml_test) through
# TELEM_NVML_LIB with its own script (TELEM_NVML_TEST_SCRIPT holds
# "{node}").
#   - XID 79 on n2's GPU 0: the job restarts without n2 (n3 promoted), the
#     restart line naming the GPU, XID 79 and its meaning;
#   - an uncorrectable ECC error on n1's GPU 1 (0 -> 1 mid-run): restart
#     without n1;
#   - uncorrectable ECC errors on all 8 GPUs of n2 in the same sample: one
#     restart, its why holding the 8 sentences whole, on the launcher's
#     line and in launch/restarts.log;
#   - hw_thermal_slowdown on n2's GPU 0 all along: a warning, no restart;
#   - a clean run: no event at all.
# Also: the launcher refuses gpu-health below level 3, with the fix.
# The program waits for a "go" file from the test; the quiet cases end
# once the watcher's gpu-health has run 10 times over data of every GPU
# (telem_watch ctl status), never after a guessed time.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
L=$TELEM_BIN/telem_launch
W=$TELEM_BIN/telem_watch
LIB=$(dirname "$TELEM_BIN")/tests/nvml_test/libnvml_test.so
unset TELEM_LEVEL SLURM_JOB_NODELIST || true
[ -f "$LIB" ] || fail "the test NVML is not built: $LIB"
[ -x "$W" ] || fail "telem_watch is not built"

# ---- refused below level 3 ----
rc=0
"$L" --local 2 -L 2 --detector gpu-health -- true >"$T/r.out" 2>"$T/r.err" || rc=$?
[ "$rc" = 2 ] || fail "gpu-health at level 2: exit $rc: $(cat "$T/r.err")"
grep -q "gpu-health reads gpu_xid_total.*use --telemetry-level 3" "$T/r.err" \
    || fail "no fix named: $(cat "$T/r.err")"

cat >"$T/prog.sh" <<'EOF2'
#!/usr/bin/env bash
touch "$OUT/run-$TELEM_RESTART_COUNT-$TELEM_NODE"
while [ ! -e "$OUT/go-$TELEM_RESTART_COUNT" ]; do sleep 0.05; done
EOF2
chmod +x "$T/prog.sh"
export TELEM_NVML_LIB=$LIB TELEM_NVML_TEST_SCRIPT=$T/nvml-{node}.script TELEM_BIN

# scripts CASE EXTRA_N1 EXTRA_N2: every node two healthy GPUs, plus lines.
scripts() {
    for n in n1 n2 n3; do
        {
            echo "gpus 2"
            for g in 0 1; do
                echo "gpu $g temp 40"
                echo "gpu $g clocks_event 0"
                echo "gpu $g ecc 0 0"
                echo "gpu $g remapped 0 0 0 0"
            done
            if [ "$n" = n1 ]; then printf '%b' "$2"; fi
            if [ "$n" = n2 ]; then printf '%b' "$3"; fi
        } >"$T/nvml-$n.script"
    done
}

# start CASE: the job in the background, output in $T/CASE.*; each case
# has its own run directory (a node's history outlives its job).
start() {
    OUT=$T/out-$1; export OUT
    RD=$T/run-$1; mkdir -m 700 "$RD"; mkdir -p "$OUT"
    EV=$RD/telem_watch/events.jsonl
    "$L" --rundir "$RD" --grace 2 --local 3 --nodes 2 --resilient \
        -L 3 --watch-period 0.5 --detector gpu-health -- "$T/prog.sh" \
        >"$T/$1.out" 2>"$T/$1.log" &
    LPID=$!
    EXTRA_PIDS+=("$LPID")
}

finish() {   # finish CASE RESTARTS: lets run RESTARTS end, checks exit 0
    touch "$OUT/go-$2"
    local rc=0
    wait "$LPID" || rc=$?
    [ "$rc" = 0 ] || fail "$1: telem_launch exited $rc: $(tail -n 5 "$T/$1.log")"
}

# runs_ok: gpu-health ran 10 more times than $1 and watches the series of
# both active nodes' GPUs (4 GPUs x 4 series at least).
status() { "$W" ctl --rundir "$RD" status 2>/dev/null; }
field() { awk -v k="$1" '/^\[/ { sec = $0 } sec == "[gpu-health]" && $1 == k { print $2 }'; }
runs_past() {
    local s; s=$(status) || return 1
    local runs series
    runs=$(field runs <<<"$s"); series=$(field series <<<"$s")
    [ -n "$runs" ] && [ "$runs" -ge "$1" ] && [ "${series:-0}" -ge 16 ]
}

# ---- XID 79 on n2: restart without n2 ----
scripts xid "" "xid 0 79 1500\n"
start xid
wait_for test -f "$OUT/run-1-n3" || wait_for test -f "$OUT/run-1-n3" \
    || fail "xid: no restart on n3: $(grep -i 'restart\|gpu-health' "$T/xid.log" | tail -n 5)"
[ ! -e "$OUT/run-1-n2" ] || fail "xid: n2 ran the program again"
finish xid 1
grep -q "restart 1 (of at most [0-9]*): trigger gpu-health; nodes n2; promoted n3; why: GPU 0 on node 'n2': XID 79 (GPU has fallen off the bus): gpu_xid_total{xid=79} 0 -> 1" \
    "$T/xid.log" || fail "xid: restart line: $(grep 'restart 1' "$T/xid.log")"

# ---- an uncorrectable ECC error on n1: restart without n1 ----
scripts ecc "at 2500 gpu 1 ecc 0 1\n" ""
start ecc
wait_for test -f "$OUT/run-1-n3" || wait_for test -f "$OUT/run-1-n3" \
    || fail "ecc: no restart on n3: $(grep -i 'restart\|gpu-health' "$T/ecc.log" | tail -n 5)"
[ ! -e "$OUT/run-1-n1" ] || fail "ecc: n1 ran the program again"
finish ecc 1
grep -q "trigger gpu-health; nodes n1; promoted n3; why: GPU 1 on node 'n1': uncorrectable ECC errors grew: gpu_ecc_uncorrected_errors_total 0 -> 1" \
    "$T/ecc.log" || fail "ecc: restart line: $(grep 'restart 1' "$T/ecc.log")"

# ---- uncorrectable ECC errors on all 8 GPUs of n2 at once: one restart
# whose why holds every GPU's sentence whole (over 1,000 characters: it
# used to be cut at 511 in the launcher, and at 1,024 in its log line) ----
eight="gpus 8\n"
for g in 2 3 4 5 6 7; do
    eight+="gpu $g temp 40\ngpu $g clocks_event 0\ngpu $g ecc 0 0\ngpu $g remapped 0 0 0 0\n"
done
for g in 0 1 2 3 4 5 6 7; do eight+="at 2500 gpu $g ecc 0 1\n"; done
scripts ecc8 "" "$eight"
start ecc8
wait_for test -f "$OUT/run-1-n3" || wait_for test -f "$OUT/run-1-n3" \
    || fail "ecc8: no restart on n3: $(grep -i 'restart\|gpu-health' "$T/ecc8.log" | tail -n 5)"
finish ecc8 1
line=$(grep "restart 1 (of at most" "$T/ecc8.log") \
    || fail "ecc8: no restart line: $(tail -n 5 "$T/ecc8.log")"
grep -q "trigger gpu-health; nodes n2; promoted n3; why: " <<<"$line" \
    || fail "ecc8: restart line: $line"
logged=$(grep "restart 1 (of at most" "$RD/launch/restarts.log")
for g in 0 1 2 3 4 5 6 7; do
    want="GPU $g on node 'n2': uncorrectable ECC errors grew: gpu_ecc_uncorrected_errors_total 0 -> 1 (1 since the first value seen, threshold 1)"
    grep -qF "$want" <<<"$line" || fail "ecc8: GPU $g's sentence is not whole in: $line"
    grep -qF "$want" <<<"$logged" || fail "ecc8: restarts.log lacks GPU $g: $logged"
done
grep -q "; stop [0-9.]* s, re-form .*; active n1,n3$" <<<"$line" \
    || fail "ecc8: the line does not end whole: $line"
((${#line} > 1024)) || fail "ecc8: a line of ${#line} characters proves nothing"

# ---- throttling on n2: a warning only ----
scripts throttle "" "gpu 0 clocks_event 0x40\n"
start throttle
wait_for grep -q '"severity":"warn"' "$EV" 2>/dev/null \
    || wait_for grep -q '"severity":"warn"' "$EV" \
    || fail "throttle: no warning: $(tail -n 5 "$T/throttle.log")"
grep -q "GPU 0 on node 'n2': throttled (hw_thermal_slowdown)" "$EV" \
    || fail "throttle: warning text: $(cat "$EV")"
now=$(field runs <<<"$(status)")
wait_for runs_past $((now + 10)) || wait_for runs_past $((now + 10)) \
    || fail "throttle: the watcher stopped running: $(status)"
finish throttle 0
[ ! -e "$OUT/run-1-n1" ] || fail "throttle: the job was restarted"
! grep -q '"severity":"act"' "$EV" || fail "throttle: an act event: $(cat "$EV")"
[ "$(grep -c . "$EV")" = 1 ] || fail "throttle: more than one event: $(cat "$EV")"

# ---- a clean run: no event ----
scripts clean "" ""
start clean
wait_for runs_past 10 || wait_for runs_past 10 \
    || fail "clean: gpu-health never ran over the GPUs' data: $(status)"
finish clean 0
[ ! -s "$EV" ] || fail "clean: events: $(cat "$EV")"
echo "it_gpu_health: ok"
