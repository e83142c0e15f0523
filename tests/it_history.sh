#!/usr/bin/env bash
# it_history.sh - hand-over escalation (docs/telemd.md, "Hand-over"): an
# old telemd stopped with SIGSTOP cannot answer the hand-over request;
# the new one sends SIGTERM (a stopped process does not act on it), then
# SIGKILL, logs each step and takes the node over, reloading the old
# one's flushed points; --no-handover still refuses while a telemd runs.
# Every wait is a bounded poll on what is observed (the old telemd's
# flushes in the status, the new one's 'ready'), never a sleep.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
B=$TELEM_BIN
C="$B/telem_client"
export TELEM_NODE=n1

status() {  # status KEY: the node's status value
    "$C" status -f json | python3 -c "import json,sys; print(json.load(sys.stdin)['nodes'][0]['$1'])"
}
flushed_past() { [ "$(status flushes 2>/dev/null || echo 0)" -ge "$1" ]; }
npoints() {
    "$C" query hi_value --start 1 -f json | python3 -c "import json,sys; print(sum(len(s['points']) for s in json.load(sys.stdin)['series']))"
}

start_node n1 --level 1 --flush 1
old_pid=${NODE_PID[n1]}
TELEM_LEVEL=1 "$B/add_data_demo" --metric hi_value --count 200 \
    --interval-ms 0 >"$T/add.out" 2>"$T/add.log" || fail "add_data_demo: $(cat "$T/add.log")"
n=$(npoints)
[ "$n" -gt 0 ] || fail "no points stored"
f0=$(status flushes)
wait_for flushed_past $((f0 + 2)) || fail "no flushes after the load"
# --no-handover refuses while the old telemd runs.
expect_rc 1 "$B/telemd" --node n1 --nodefile "$TELEM_NODEFILE" --no-handover
kill -STOP "$old_pid"
"$B/telemd" --node n1 --nodefile "$TELEM_NODEFILE" --level 1 --flush 1 \
    >"$T/n1.2.out" 2>"$T/n1.2.log" &
new_pid=$!
EXTRA_PIDS+=($new_pid)
# The escalation's waits are bounded by telemd (ask, SIGTERM, SIGKILL):
# poll for 'ready' up to three times the helper's 20 s.
ready() { grep -qx ready "$T/n1.2.out"; }
wait_for ready || wait_for ready || wait_for ready \
    || fail "telemd 2 not ready: $(cat "$T/n1.2.log")"
rc=0
wait "$old_pid" || rc=$?
unset "NODE_PID[n1]"
[ "$rc" = $((128 + 9)) ] || fail "old telemd: exit $rc, not killed by SIGKILL"
for step in "asking it to flush and exit" "no answer to the request" \
            "sending SIGTERM to telemd pid $old_pid" \
            "sending SIGKILL to telemd pid $old_pid" "lock taken"; do
    grep -q "$step" "$T/n1.2.log" || fail "new telemd did not log '$step': $(cat "$T/n1.2.log")"
done
after=$(npoints)
[ "$after" = "$n" ] || fail "the flushed points were not reloaded: $n before, $after after"
expect_rc 1 "$B/telemd" --node n1 --nodefile "$TELEM_NODEFILE" --no-handover
echo "it_history: ok (SIGSTOPped telemd: SIGTERM, SIGKILL, taken over with its $n points)"
