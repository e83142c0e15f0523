# it_launch_watch.sh - telem_launch and telem_watch: the watcher started by
# the launcher asks for a restart without the node a detector flagged, the
# launcher acknowledges it and restarts on the reserve (the restart line
# names the detector), and keeps the flagged node's telemd, with its
# history, until the job ends; without --resilient the watcher only reports and the
# job goes on.
#
# The detector is a threshold on a metric that the program records on one
# node only (it_flag > 0), so the event is certain; the program waits for a
# "go" file from the test, so every step waits on behaviour, never on time.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
L=$TELEM_BIN/telem_launch
OUT=$T/out
mkdir "$OUT"
unset TELEM_LEVEL SLURM_JOB_NODELIST || true
[ -x "$TELEM_BIN/telem_watch" ] || fail "telem_watch is not built"

cat >"$T/prog.sh" <<'EOF2'
#!/usr/bin/env bash
run=$OUT/run-$TELEM_RESTART_COUNT-$TELEM_NODE
env | grep '^TELEM_' | sort >"$run.tmp" && mv "$run.tmp" "$run.env"   # whole or absent
if [ "$TELEM_NODE" = n2 ] && [ -z "${TELEM_RESTARTED:-}" ]; then
    "$TELEM_BIN/add_data_demo" --count 3 --metric it_flag --quiet
fi
while [ ! -e "$OUT/go-$TELEM_RESTART_COUNT" ]; do sleep 0.05; done
EOF2
chmod +x "$T/prog.sh"
export OUT TELEM_BIN
DET="flag=threshold:metric=it_flag,op=>,value=0,severity=act"

# --- resilient: the watcher's request restarts the job without n2 --------
"$L" --rundir "$TELEM_RUNDIR" --grace 2 --local 3 --nodes 2 --resilient \
    --detector "$DET" -- "$T/prog.sh" >"$T/res.out" 2>"$T/res.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")
wait_for test -f "$OUT/run-1-n1.env" -a -f "$OUT/run-1-n3.env" \
    || wait_for test -f "$OUT/run-1-n1.env" -a -f "$OUT/run-1-n3.env" \
    || fail "no restart on n1 and n3 after the watcher's request"
[ ! -e "$OUT/run-1-n2.env" ] || fail "the flagged node ran the program again"
# n2 is out of the job (the node file) but its telemd stays for its
# history (launch/telemd_nodes), which still holds what got it flagged.
NF=$(sed -n 's/^TELEM_NODEFILE=//p' "$OUT/run-1-n1.env")
TN=$TELEM_RUNDIR/launch/telemd_nodes
[ "$(grep -v '^#' "$NF" | cut -f1 | tr '\n' ' ')" = "n1 n3 " ] \
    || fail "node file after the restart: $(cat "$NF")"
[ "$(grep -v '^#' "$TN" | cut -f1 | tr '\n' ' ')" = "n1 n2 n3 " ] \
    || fail "telemd_nodes after the restart: $(cat "$TN")"
"$TELEM_BIN/telem_client" --nodefile "$TN" -f txt -g it_flag >"$T/hist.txt" \
    2>&1 || fail "telem_client over telemd_nodes: $(cat "$T/hist.txt")"
grep -q "n2" "$T/hist.txt" || fail "n2's history is gone: $(cat "$T/hist.txt")"
touch "$OUT/go-1"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "telem_launch exited $rc"
grep -q "restart 1 (of at most 10): trigger flag; nodes n2; promoted n3" \
    "$T/res.log" || fail "restart line: $(grep restart "$T/res.log")"
grep -Eq "restart request [0-9]+ accepted: restart 1: nodes n2; promoted n3" \
    "$T/res.log" || fail "no accepted request in the launcher's log"
# (the watcher is stopped with the program, perhaps before it prints the ack)
# The watcher's events file holds the event that asked for the restart,
# with its time in milliseconds (what the dashboard and the report read).
grep -Eq '"detector":"flag","severity":"act".*"time_ms":[0-9]{13}' \
    "$TELEM_RUNDIR/telem_watch/events.jsonl" \
    || fail "events.jsonl: $(cat "$TELEM_RUNDIR/telem_watch/events.jsonl")"

# --- not resilient: the watcher reports, the job goes on -----------------
rm -rf "$OUT"; mkdir "$OUT"
"$L" --rundir "$TELEM_RUNDIR" --grace 2 --local 2 --nodes 2 \
    --detector "$DET" -- "$T/prog.sh" >"$T/nores.out" 2>"$T/nores.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")
wait_for grep -q n2 "$T/nores.out" || wait_for grep -q n2 "$T/nores.out" \
    || fail "the watcher reported no event: $(cat "$T/nores.out")"
touch "$OUT/go-0"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "telem_launch exited $rc without --resilient"
[ ! -e "$OUT/run-1-n1.env" ] || fail "restarted without --resilient"
! grep -Eq "restart request [0-9]" "$T/nores.log" \
    || fail "the watcher asked a job that is not resilient"
echo "it_launch_watch: ok"
