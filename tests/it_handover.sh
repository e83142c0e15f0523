#!/usr/bin/env bash
# it_handover.sh - a second telemd for a node takes it over under a steady
# push load with no sample lost (docs/telemd.md, "Hand-over").
#
# Four producers (libtelem) push samples at a steady rate, beside a plain
# PUSH that is not libtelem (tests/ingest_raw.c).  While they run, a
# second telemd starts for the node: it binds the ingest socket and asks
# the first to hand over (TELEM_CTL_HANDOVER).  libtelem's senders see the
# new socket file and move to it by themselves; the first telemd waits for
# them, then lets the connections still open go (the plain PUSH's), reads
# each to its end, flushes its log and exits.  Asserted:
#  - every producer's finalize is acknowledged (by the new telemd) and
#    none dropped a sample;
#  - zero loss: what the old telemd received (its last log line) plus what
#    the new one received equals what the producers and the plain PUSH
#    sent; the old telemd let the plain PUSH's connection go itself;
#  - with the flush log, the counter continues: its total on the new
#    telemd equals the sum of every increment sent (the old total reloaded
#    from the log), and its series has no gap (no step between two points
#    longer than a few flush intervals);
#  - the old telemd logged each hand-over step and exited 0, and a
#    --no-handover telemd still refuses.
# Every wait is a bounded poll on what is observed: the producers run
# --count steps and then go on until the test creates their --until-file,
# after the hand-over, so the load spans it however fast the machine is.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
B=$TELEM_BIN
C="$B/telem_client"
HITS='ho_hits_total{k="v"}'
NPROC=4
COUNT=500
RATE=1000

start_node n1 --level 1 --flush 1
old_pid=${NODE_PID[n1]}
old_log=n1.log
export TELEM_NODE=n1

# handover N: starts telemd number N for n1 while the load runs, waits
# until the old one (pid $old_pid, log $T/$old_log) has exited 0 after
# logging each step, and checks the load was still running.
handover() {
    local n=$1
    "$B/telemd" --node n1 --nodefile "$TELEM_NODEFILE" --level 1 --flush 1 \
        >"$T/n1.$n.out" 2>"$T/n1.$n.log" &
    new_pid=$!
    EXTRA_PIDS+=($new_pid)
    wait_for grep -qx ready "$T/n1.$n.out" || fail "telemd $n not ready: $(cat "$T/n1.$n.log")"
    local rc=0
    wait "$old_pid" || rc=$?
    [ "$rc" = 0 ] || fail "old telemd exited $rc"
    for step in "hand-over requested" "released"; do
        grep -q "$step" "$T/$old_log" || fail "old telemd did not log '$step'"
    done
    grep -q "hand-over: node n1 lock taken" "$T/n1.$n.log" || fail "no hand-over logged"
    for p in "${pids[@]}"; do
        kill -0 "$p" 2>/dev/null || fail "a producer ended before its --until-file"
    done
}

# reaped NAME: lets the producers end (their --until-file), waits for
# them; sets sent to the sum of accepted.
reaped() {
    touch "$T/stop.$1"
    sent=0
    for i in $(seq 1 $NPROC); do
        wait "${pids[$((i - 1))]}" || fail "$1 $i: $(cat "$T/$1$i.out" "$T/$1$i.log")"
        grep -q "finalize=ok" "$T/$1$i.out" || fail "$1 $i not acknowledged: $(cat "$T/$1$i.out")"
        grep -q " dropped=0 " "$T/$1$i.out" || fail "$1 $i dropped samples: $(cat "$T/$1$i.out")"
        acc=$(sed -n 's/.* accepted=\([0-9]*\) .*/\1/p' "$T/$1$i.out")
        sent=$((sent + acc))
    done
    [ "$sent" -ge $((NPROC * COUNT)) ] || fail "producers accepted $sent, fewer than $((NPROC * COUNT))"
}

# ---- 1. samples: what the old telemd received + the new one == sent -----
pids=()
for i in $(seq 1 $NPROC); do
    TELEM_LEVEL=1 TELEM_RANK=$i "$B/add_data_demo" --metric ho_value \
        --count $COUNT --interval-ms 1 --until-file "$T/stop.add" \
        >"$T/add$i.out" 2>"$T/add$i.log" &
    pids+=($!)
done
"$TELEM_BIN/ingest_raw" "ipc://$TELEM_RUNDIR/n1/ingest.sock" ho_raw 5 \
    "$T/stop.add" >"$T/raw.out" 2>"$T/raw.log" &
raw_pid=$!
# has_points ARGS...: the client's JSON answer to ARGS has a point.  The
# whole answer is read first: grep -q on a pipe would close it at the first
# match, and the client, killed by SIGPIPE while it still writes a large
# answer, would fail the pipeline (pipefail) on every later poll.
has_points() {
    local out
    out=$("$C" "$@" -f json 2>/dev/null) || return 1
    [[ $out == *'"points": [['* ]]
}
seen() { has_points query ho_value && has_points query ho_raw; }
wait_for seen || fail "no samples reached the first telemd"
old_log=n1.log
handover 2
unset "NODE_PID[n1]"
reaped add
wait "$raw_pid" || fail "ingest_raw: $(cat "$T/raw.out" "$T/raw.log")"
raw=$(sed -n 's/^sent \([0-9]*\)$/\1/p' "$T/raw.out")
[ -n "$raw" ] || fail "ingest_raw did not say what it sent: $(cat "$T/raw.log")"
sent=$((sent + raw))
grep -Eq "hand-over: [0-9]+ of [0-9]+ ingest connections .*released [1-9]" \
    "$T/n1.log" || fail "the old telemd did not let the plain PUSH go: $(grep 'hand-over' "$T/n1.log")"
old_got=$(sed -n 's/.*received \([0-9]*\) samples since start.*/\1/p' "$T/n1.log")
[ -n "$old_got" ] || fail "old telemd did not report what it received"
# The plain PUSH has no acknowledgement: its last samples may still be on
# their way into the new telemd when it exits.
ingested() {
    "$C" status -f json | python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"][0]["ingested"])'
}
all_in() { [ $((old_got + $(ingested))) -ge "$sent" ]; }
wait_for all_in || true
new_got=$(ingested)
echo "it_handover: sent $sent samples ($raw from the plain PUSH); the old telemd received $old_got, the new $new_got; $(grep -o '[0-9]* of [0-9]* ingest connections.*released [0-9]*' "$T/n1.log")"
[ $((old_got + new_got)) = "$sent" ] || fail "lost $((sent - old_got - new_got)) of $sent samples in the hand-over"
old_pid=$new_pid

# ---- 2. a counter continues across a hand-over (needs the flush log) -----
if grep -q "no flush log" "$T/n1.2.log"; then
    skip "zero loss held ($sent samples); counter continuity not checked: this build has no flush log"
fi
pids=()
for i in $(seq 1 $NPROC); do
    TELEM_RANK=$i "$B/push_demo" --counter "$HITS" --count $COUNT \
        --rate $RATE --until-file "$T/stop.push" >"$T/push$i.out" 2>"$T/push$i.log" &
    pids+=($!)
done
seen2() { has_points -g ho_hits_total; }
wait_for seen2 || fail "no increments reached telemd 2"
old_log=n1.2.log
handover 3
reaped push
"$C" query ho_hits_total --start -300s -f json >"$T/get.json" || fail "query"
python3 - "$T/get.json" "$sent" <<'PY' || fail "counter: $(head -c 800 "$T/get.json")"
import json, sys
s = json.load(open(sys.argv[1]))["series"]
assert len(s) == 1, s
pts = s[0]["points"]
last = pts[-1][1]
assert last == float(sys.argv[2]), ("total", last, "sent", sys.argv[2])
ts = [p[0] for p in pts]
gaps = [b - a for a, b in zip(ts, ts[1:])]
assert all(v2 >= v1 for (_, v1), (_, v2) in zip(pts, pts[1:])), "counter went back"
print("points", len(pts), "of", sys.argv[2], "increments; largest step",
      max(gaps) if gaps else 0, "ns")
PY

expect_rc 1 "$B/telemd" --node n1 --no-handover
echo "it_handover: ok (zero loss, counter continued across the hand-over)"
