# it_launch_dict.sh - telem_launch and the distributed dictionary: every
# node runs telem_dictd, the program finds it through TELEM_DICT_NODEFILE,
# and after kill -9 of one node's daemons (telemd and telem_dictd) under
# --resilient, the restarted program reads every key it had acknowledged
# (the launcher re-forms the dictionary without the lost node).  A second
# job in the same run directory sees the first one's data.
#
# The program writes keys one at a time with telem_dict and appends each
# key whose put returned 0 (acknowledged means replicated) to a file of its
# own; the test waits for those files, never for time.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
L=$TELEM_BIN/telem_launch
OUT=$T/out
mkdir "$OUT"
unset TELEM_LEVEL TELEM_DICT_NODEFILE SLURM_JOB_NODELIST || true
[ -x "$TELEM_BIN/telem_dictd" ] || fail "telem_dictd is not built"

cat >"$T/prog.sh" <<'EOF'
#!/usr/bin/env bash
# MODE=write: first run writes keys until stopped; after the restart,
# rank 0 checks every acknowledged key.  MODE=verify: rank 0 checks.
D=$TELEM_BIN/telem_dict
env | grep '^TELEM_' | sort >"$OUT/env-$TELEM_RESTART_COUNT-$TELEM_NODE"
check() {   # every acknowledged key has its value
    local bad=0 n=0 k v
    for f in "$OUT"/acked-*; do
        while read -r k; do
            n=$((n + 1))
            v=$("$D" get "$k") || { echo "missing $k" >&2; bad=$((bad + 1)); continue; }
            [ "$v" = "value of $k" ] || { echo "wrong $k: $v" >&2; bad=$((bad + 1)); }
        done <"$f"
    done
    echo "$n $bad" >"$OUT/check-$1.tmp" && mv "$OUT/check-$1.tmp" "$OUT/check-$1"
    [ "$bad" = 0 ]
}
if [ "$MODE" = verify ] || [ -n "${TELEM_RESTARTED:-}" ]; then
    [ "$TELEM_RANK" = 0 ] || exit 0
    check "$MODE-$TELEM_RESTART_COUNT"
    exit
fi
i=0
while :; do
    k="k-$TELEM_NODE-$i"
    "$D" --timeout 2000 put "$k" "value of $k" 2>/dev/null \
        && echo "$k" >>"$OUT/acked-$TELEM_NODE"
    i=$((i + 1))
done
EOF
chmod +x "$T/prog.sh"
export OUT TELEM_BIN

acked() { [ -f "$OUT/acked-$1" ] && [ "$(wc -l <"$OUT/acked-$1")" -ge "$2" ]; }

# --- write, kill -9 node n2's daemons, restart, read back ----------------
MODE=write "$L" --rundir "$TELEM_RUNDIR" --grace 2 --local 3 --nodes 2 \
    --resilient --daemon-failure exclude -- "$T/prog.sh" >"$T/write.out" 2>"$T/write.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")
wait_for acked n1 30 || fail "n1 acknowledged no keys"
wait_for acked n2 30 || fail "n2 acknowledged no keys"
grep -q "^TELEM_DICT_NODEFILE=$TELEM_RUNDIR/dict_nodes$" "$OUT/env-0-n1" \
    || fail "TELEM_DICT_NODEFILE: $(grep DICT "$OUT/env-0-n1")"
for n in n1 n2 n3; do
    grep -q "^$n	" "$TELEM_RUNDIR/dict_nodes" || fail "no telem_dictd of $n"
done
dpid=$(pgrep -f "telem_dictd --node n2 --rundir $TELEM_RUNDIR ") \
    || fail "no telem_dictd for n2"
tpid=$(sed -n 's/^pid\t//p' "$TELEM_RUNDIR/n2/endpoints")
kill -9 "$dpid" "$tpid"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "telem_launch exited $rc: $(cat "$OUT"/check-* 2>&1)"
[ -f "$OUT/check-write-1" ] || fail "the restarted program did not check"
read -r n bad <"$OUT/check-write-1"
[ "$bad" = 0 ] && [ "$n" -ge 60 ] || fail "after the restart $bad of $n keys bad"
grep -q "trigger daemon; nodes n2; promoted n3" "$T/write.log" \
    || fail "restart line: $(grep restart "$T/write.log")"
grep -Eq "re-form [0-9.]+ s, back-off" "$T/write.log" \
    || fail "re-form not timed or failed: $(grep restart "$T/write.log")"
[ ! -e "$OUT/env-1-n2" ] || fail "the lost node ran the program again"
grep -q "^TELEM_RESTARTED=1$" "$OUT/env-1-n3" || fail "n3 not restarted"
[ ! -e "$TELEM_RUNDIR/dict_nodes" ] || fail "dictionary node file left behind"
if pgrep -f "telem_dictd .*--rundir $TELEM_RUNDIR " >/dev/null; then
    fail "telem_dictd left running"
fi

# --- the next job in the same run directory reads the same keys ---------
MODE=verify "$L" --rundir "$TELEM_RUNDIR" --grace 2 --local 3 --nodes 3 \
    -- "$T/prog.sh" >"$T/verify.out" 2>"$T/verify.log" \
    || fail "second job: $(cat "$T/verify.log")"
read -r n2 bad <"$OUT/check-verify-0"
[ "$bad" = 0 ] && [ "$n2" = "$n" ] || fail "second job: $bad of $n2 keys bad"
grep -q "dictionary formed on 3 node(s)" "$T/verify.log" \
    || fail "no forming line: $(cat "$T/verify.log")"
echo "it_launch_dict: ok ($n keys acknowledged and read back)"
