#!/usr/bin/env bash
# it_durable.sh - the flush log survives telemd (docs/telemd.md, "The
# flush log"): kill -9 under a steady load loses at most what came after
# the last completed flush; SIGTERM loses nothing; a byte flipped in the
# newest segment is reported and skipped; a range older than --window is
# answered from the log.  Flushes are observed in the status (fl, lf),
# never guessed with sleeps.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
B=$TELEM_BIN
C="$B/telem_client"
export TELEM_NODE=n1
OPTS=(--level 1 --flush 1 --window 3)

status() {  # status KEY: the node's status value
    "$C" status -f json | python3 -c "import json,sys; print(json.load(sys.stdin)['nodes'][0]['$1'])"
}
flushed_past() {  # flushed_past N: at least N flushes done
    [ "$(status flushes 2>/dev/null || echo 0)" -ge "$1" ]
}
points_before() {  # points_before T: ho_value points with ts <= T (ns)
    "$C" query ho_value --start 1 -f json | python3 -c "
import json,sys
t=int(sys.argv[1]); n=0
for s in json.load(sys.stdin)['series']:
    n += sum(1 for p in s['points'] if p[0] <= t)
print(n)" "$1"
}

start_node n1 "${OPTS[@]}"
grep -q "no flush log" "$T/n1.log" && skip "this build has no flush log (its store cannot hand out blocks)"
TELEM_LEVEL=1 "$B/add_data_demo" --metric ho_value --duration 30 \
    --interval-ms 2 >"$T/add.out" 2>"$T/add.log" &
prod=$!
EXTRA_PIDS+=($prod)
wait_for flushed_past 3 || fail "no flushes reported in the status"
# ---- 1. kill -9: everything before the last completed flush is there ----
lf=$(status last_flush_ns)
cut=$((lf - 500000000))
before=$(points_before $cut)
[ "$before" -gt 0 ] || fail "no points before the last flush"
stop_node n1 KILL
start_node n1 "${OPTS[@]}"
after=$(points_before $cut)
[ "$after" -ge "$before" ] || fail "kill -9 lost flushed points: $before before, $after after"
# ---- 2. SIGTERM loses nothing ---------------------------------------------
kill "$prod"; wait "$prod" 2>/dev/null || true
wait_for flushed_past 1
n_before=$(points_before 9223372036854775807)
stop_node n1 TERM
start_node n1 "${OPTS[@]}"
n_after=$(points_before 9223372036854775807)
[ "$n_after" = "$n_before" ] || fail "SIGTERM: $n_before points before, $n_after after"
# ---- 3. older than --window: answered from the log -------------------------
windowed() {  # a range inside the 3 s window: fewer points than history
    local w
    w=$("$C" query ho_value --start -2s -f json | python3 -c "import json,sys; print(sum(len(s['points']) for s in json.load(sys.stdin)['series']))")
    [ "$w" -lt "$n_after" ]
}
wait_for windowed || fail "points did not leave the window"
[ "$(points_before 9223372036854775807)" = "$n_after" ] || fail "history query did not reach the log"
# ---- 4. a flipped byte in the newest segment: reported and skipped --------
stop_node n1 TERM
seg=$(ls "$TELEM_RUNDIR/n1/log/"*.tseg | tail -n 1)
size=$(stat -c %s "$seg")
[ "$size" -gt 200 ] || seg=$(ls "$TELEM_RUNDIR/n1/log/"*.tseg | tail -n 2 | head -n 1)
python3 - "$seg" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[len(b) - 10] ^= 0xff
open(p, 'wb').write(b)
PY
start_node n1 "${OPTS[@]}"
grep -q "damaged stretch" "$T/n1.log" || fail "the damaged record was not reported"
echo "it_durable: ok (kill -9 kept $before flushed points, SIGTERM kept $n_after, history from the log, damage reported)"
