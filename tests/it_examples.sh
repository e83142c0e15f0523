# it_examples.sh - the telem_launch examples in a small configuration:
#   scale_work   metrics at every level reach telemd, filtered by the level;
#   merge_sort   sorted output; a stop event set beforehand cuts the
#                recursion at depth 0; a proc-threshold watch sets it when
#                the forks push the nodes over a limit (--until-stop ends on
#                that behaviour, not on time);
#   slow_gpu     kill -9 of a node's daemons mid-run under --resilient: the
#                job resumes on the reserve from the dictionary, and the
#                final histogram is exactly that of an undisturbed run (same
#                checksum: no iteration lost or counted twice) and passes
#                the semicircle check.
# The detector-driven slow_gpu scenario (a contending load, slowgpu) is
# examples/slow_gpu.sh, run by it_slow_gpu.sh.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
L=$TELEM_BIN/telem_launch
unset TELEM_LEVEL TELEM_DICT_NODEFILE SLURM_JOB_NODELIST || true
for p in scale_work merge_sort slow_gpu; do
    "$TELEM_BIN/$p" --help | grep -q "Exit status" || fail "$p --help"
    expect_rc 2 "$TELEM_BIN/$p" --no-such-flag 2>/dev/null
done
expect_rc 2 "$TELEM_BIN/slow_gpu" --size 1 2>/dev/null
expect_rc 2 "$TELEM_BIN/merge_sort" --sizes 10,x 2>/dev/null

launch() {   # launch NAME [telem_launch options] -- PROGRAM...: in the foreground
    local name=$1; shift
    "$L" --rundir "$TELEM_RUNDIR" --grace 2 "$@" >"$T/$name.out" 2>"$T/$name.log"
}

# --- scale_work: level 2 keeps levels 1-2 --------------------------------
cat >"$T/scale.sh" <<EOF
#!/usr/bin/env bash
"$TELEM_BIN/scale_work" --sizes 16,32 --steps 5 || exit 1
[ "\$TELEM_RANK" = 0 ] || exit 0
# Rank 1 may still be recording: wait (at most 30 s) until both nodes have.
for _ in \$(seq 300); do
    "$TELEM_BIN/telem_client" -g scale_work_gflops -f txt >"$T/gflops.txt" 2>&1
    grep scale_work_gflops "$T/gflops.txt" | grep -q n1 \\
        && grep scale_work_gflops "$T/gflops.txt" | grep -q n2 && break
    sleep 0.1
done
cat "$T/gflops.txt"
"$TELEM_BIN/telem_client" -g scale_work_residual -f txt 2>&1
exit 0
EOF
chmod +x "$T/scale.sh"
launch scale --local 2 --telemetry-level 2 -- "$T/scale.sh" \
    || fail "scale_work job failed"
[ "$(grep -c "queued 50, skipped by level 20, dropped 0; finalize: ok" \
    "$T/scale.out")" = 2 ] || fail "scale_work counters: $(cat "$T/scale.out")"
for n in n1 n2; do
    grep -q "scale_work_gflops.*$n\|$n.*scale_work_gflops" "$T/scale.out" \
        || fail "no scale_work_gflops from $n: $(cat "$T/scale.out")"
done
grep -q "no series for metric 'scale_work_residual'" "$T/scale.out" \
    || fail "a level-3 metric was kept at level 2: $(cat "$T/scale.out")"

# --- merge_sort ----------------------------------------------------------
launch sort --local 2 -- "$TELEM_BIN/merge_sort" --sizes 1000,50000 \
    --min-chunk 1000 --max-depth 3 || fail "merge_sort job failed"
[ "$(grep -c "sorted: yes" "$T/sort.out")" = 2 ] || fail "$(cat "$T/sort.out")"
grep -q "size 50000: .* on 2 node(s); peak [2-8] processes per node; cut-off none" \
    "$T/sort.out" || fail "merge_sort line: $(cat "$T/sort.out")"

cat >"$T/stop.sh" <<EOF
#!/usr/bin/env bash
# The stop event is set before the sort starts on any node.
if [ "\$TELEM_RANK" = 0 ]; then
    "$TELEM_BIN/telem_dict" event-set presort/stop || exit 1
else
    "$TELEM_BIN/telem_dict" event-wait presort/stop 20000 || exit 1
fi
exec "$TELEM_BIN/merge_sort" --ns presort --sizes 50000 --min-chunk 1000
EOF
chmod +x "$T/stop.sh"
launch stop --local 2 -- "$T/stop.sh" || fail "merge_sort with stop failed"
grep -q "size 50000: .*peak 1 processes per node; cut-off depth 0; sorted: yes" \
    "$T/stop.out" || fail "stop event not honoured: $(cat "$T/stop.out")"

# The watch: a limit some 40 processes above what runs now; the sort forks
# up to 32 per node on 2 nodes of this machine.  The sort repeats until the
# watch has stopped it (at most 100 rounds, a bound for a broken watch,
# not a guess at how fast the machine is).
base=$(ps -U "$(id -u)" --no-headers | wc -l)
launch watch --local 2 -- "$TELEM_BIN/merge_sort" --ns watched \
    --sizes 2000000 --min-chunk 20000 --max-depth 5 --until-stop 100 \
    --limit $((base + 40)) || fail "merge_sort with a watch failed"
grep -q "ACT  proc-threshold" "$T/watch.out" || fail "no proc-threshold event (limit $((base + 40))): $(tail -n 5 "$T/watch.out")"
grep -q "cut-off depth [0-9]; sorted: yes" "$T/watch.out" \
    || fail "the watch did not stop the recursion: $(cat "$T/watch.out")"
! grep -q "sorted: NO" "$T/watch.out" || fail "unsorted output"

# --- slow_gpu: reference, then kill -9 of a node mid-run -----------------
SG=(--tasks 4 --iterations 40 --size 120 --bins 40)
launch ref --local 1 -- "$TELEM_BIN/slow_gpu" --ns ref --devices 2 "${SG[@]}" \
    --plot "$T/ref.svg" || fail "slow_gpu reference run failed"
grep -q "semicircle law: PASS" "$T/ref.out" || fail "$(cat "$T/ref.out")"
grep -q "<polyline" "$T/ref.svg" || fail "no plot"
ref=$(sed -n 's/.*histogram checksum //p' "$T/ref.out")
[ -n "$ref" ] || fail "no checksum"

"$L" --rundir "$TELEM_RUNDIR" --grace 2 --local 3 --nodes 2 --resilient \
    --exhaust-resources --daemon-failure exclude --telemetry-level 3 -- "$TELEM_BIN/slow_gpu" \
    "${SG[@]}" >"$T/sg.out" 2>"$T/sg.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")
# Rank 1 (n2) starts with task 1: kill its node once one iteration of it
# is acknowledged in the dictionary.
export TELEM_DICT_NODEFILE=$TELEM_RUNDIR/dict_nodes
wait_for sh -c "'$TELEM_BIN/telem_dict' --ns slow_gpu get task/1 | grep -q ' done [1-9]'" \
    || fail "no progress on task 1"
kill -9 "$(pgrep -f "telem_dictd --node n2 --rundir $TELEM_RUNDIR ")" \
    "$(sed -n 's/^pid\t//p' "$TELEM_RUNDIR/n2/endpoints")"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "slow_gpu job exited $rc: $(cat "$T/sg.out")"
grep -q "trigger daemon; nodes n2; promoted n3" "$T/sg.log" \
    || fail "restart line: $(grep restart "$T/sg.log")"
grep -Eq "n3: task [0-9]+ resumed at iteration [1-9][0-9]* of 40" "$T/sg.out" \
    || fail "nothing resumed on n3: $(cat "$T/sg.out")"
grep -q "semicircle law: PASS" "$T/sg.out" || fail "$(cat "$T/sg.out")"
got=$(sed -n 's/.*histogram checksum //p' "$T/sg.out")
[ "$got" = "$ref" ] || fail "histogram $got after the restart, $ref undisturbed"
echo "it_examples: ok"
