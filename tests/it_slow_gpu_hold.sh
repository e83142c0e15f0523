# it_slow_gpu_hold.sh - slow_gpu's hold for a job that restarts twice.
#
#   bash tests/it_slow_gpu_hold.sh      (TELEM_BIN: the build's bin/)
#
# slow_gpu --hold-at 0.5 --hold-runs 2 holds half-way in the first run and
# in the run after the first restart, so a job can be restarted twice
# whatever the machine's speed.  Faults are kill -9 of a node's daemons
# under --daemon-failure exclude (no detector, no load: nothing here
# depends on timing).
#   1. --local 4 --nodes 2: run 0 holds; n2 is killed (restart 1, n3
#      promoted); run 1 holds again; n3 is killed (restart 2, n4 promoted);
#      run 2 does not hold and finishes: two restarts, no hold on n4, the
#      law holds and the checksum is that of an undisturbed run.
#   2. --local 3 --nodes 2: after restart 1 the held run is released by
#      the dictionary event slow_gpu/release: the job finishes with one
#      restart and the same checksum.
# Every wait is on what the job prints, bounded by lib.sh's wait_for.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
L=$TELEM_BIN/telem_launch
unset TELEM_LEVEL TELEM_DICT_NODEFILE SLURM_JOB_NODELIST || true
SG=(--tasks 4 --iterations 40 --size 100 --bins 40)

expect_rc 2 "$TELEM_BIN/slow_gpu" --hold-runs 0 2>/dev/null
"$TELEM_BIN/slow_gpu" --help >"$T/help.txt"
grep -q -- "--hold-runs N" "$T/help.txt" || fail "--hold-runs not in --help"

"$L" --rundir "$TELEM_RUNDIR" --local 1 -- "$TELEM_BIN/slow_gpu" --ns ref \
    --devices 2 "${SG[@]}" >"$T/ref.out" 2>"$T/ref.log" \
    || fail "reference run failed: $(cat "$T/ref.out")"
ref=$(sed -n 's/.*histogram checksum //p' "$T/ref.out")
[ -n "$ref" ] || fail "no checksum in the reference run"

# kill_node RUNDIR NODE: kill -9 of the node's telemd and telem_dictd.
kill_node() {
    kill -9 "$(pgrep -f "telem_dictd --node $2 --rundir $1 ")" \
        "$(sed -n 's/^pid\t//p' "$1/$2/endpoints")"
}

# start JOB NNODES: the held job in the foreground of a background shell.
start() {
    local run=$T/$1
    mkdir -m 700 "$run"
    "$L" --rundir "$run" --grace 2 --local "$2" --nodes 2 --resilient \
        --exhaust-resources --daemon-failure exclude -- "$TELEM_BIN/slow_gpu" \
        "${SG[@]}" --hold-at 0.5 --hold-runs 2 >"$T/$1.out" 2>"$T/$1.log" &
    LPID=$!
    EXTRA_PIDS+=("$LPID")
}

# check JOB RESTARTS: the job's exit, its restarts, the law, the checksum.
check() {
    local rc=0 got
    wait "$LPID" || rc=$?
    [ "$rc" = 0 ] || fail "$1: telem_launch exited $rc: $(cat "$T/$1.out")"
    got=$(grep -c "warn: restart [0-9]* (of at most" "$T/$1.log" || true)
    [ "$got" = "$2" ] || fail "$1: $got restart(s), expected $2"
    grep -q "semicircle law: PASS" "$T/$1.out" || fail "$1: $(cat "$T/$1.out")"
    got=$(sed -n 's/.*histogram checksum //p' "$T/$1.out")
    [ "$got" = "$ref" ] || fail "$1: histogram $got, $ref undisturbed"
}

# --- 1: two restarts, each run but the last held -------------------------
start two 4
wait_for grep -q "n2: task 1 holds at iteration 20 of 40" "$T/two.out" \
    || fail "run 0 did not hold: $(cat "$T/two.out")"
kill_node "$T/two" n2
wait_for grep -q "n3: task 1 holds at iteration 20 of 40" "$T/two.out" \
    || fail "run 1 did not hold: $(cat "$T/two.out")"
kill_node "$T/two" n3
check two 2
grep -q "restart 2 (of at most [0-9]*): trigger daemon; nodes n3; promoted n4" \
    "$T/two.log" || fail "restart 2: $(grep restart "$T/two.log")"
! grep -q "n4: task [0-9]* holds" "$T/two.out" || fail "run 2 held"

# --- 2: the release event ends the hold of a restarted run ---------------
start rel 3
wait_for grep -q "n2: task 1 holds at iteration 20 of 40" "$T/rel.out" \
    || fail "rel: run 0 did not hold: $(cat "$T/rel.out")"
kill_node "$T/rel" n2
wait_for grep -q "n3: task 1 holds at iteration 20 of 40" "$T/rel.out" \
    || fail "rel: run 1 did not hold: $(cat "$T/rel.out")"
TELEM_DICT_NODEFILE=$T/rel/dict_nodes "$TELEM_BIN/telem_dict" \
    event-set slow_gpu/release >/dev/null || fail "event-set failed"
check rel 1
echo "it_slow_gpu_hold: ok (two restarts with --hold-runs 2; release of a held restarted run)"
