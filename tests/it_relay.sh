# it_relay.sh - relays under the analysis client (docs/relay.md).
#
# Eight telemd nodes on 127.0.0.1 with a job key (telem_keygen), three
# telem_relay processes serving n1-n3, n4-n6 and n7 (n8 is no relay's),
# and a relays file beside the node file.  Checked:
#   - telem_client query and status through the relays print exactly what
#     they print directly (TELEM_RELAYS= turns relays off), and the relays
#     did serve them (their counters at exit);
#   - a killed node is reported missing through its relay with the same
#     sentence (and so the same code) and exit status as directly;
#   - a client without the key gets nothing from a relay; a control
#     operation that changes a node (shutdown, set level) is refused by a
#     relay with TELEM_EPERM and changes nothing;
#   - a killed relay: the next call still answers every live node (asked
#     directly) within two deadlines;
#   - a stopped (hung) relay costs one call its share of the deadline,
#     then the client skips it for its back-off: the calls after are
#     answered directly without waiting;
#   - telem_relay exits 0 on SIGTERM, 2 on bad usage, and has --help.
# Waits are for behaviour; every bound on time below is the deadline's
# own (a relay's share is 3/4 of it, the direct path keeps the last
# quarter), and the deadlines are seconds, many times what loopback takes
# even on a loaded machine.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
B=$TELEM_BIN
C=$B/telem_client
unset TELEM_KEYS TELEM_RELAYS TELEM_LEVEL || true
"$B/telem_keygen" >/dev/null || fail "telem_keygen"
[ -e "$TELEM_RUNDIR/keys/job.key" ] || fail "no key in the run directory"

for i in 1 2 3 4 5 6 7 8; do
    start_node "n$i" --no-log --interval 5
    TELEM_NODE=n$i "$B/add_data_demo" --count 50 --metric relay_it --quiet \
        || fail "add_data_demo n$i"
done

declare -A RELAY_PID=() RELAY_EP=()
start_relay() {
    local name=$1 group=$2
    "$B/telem_relay" --nodefile "$TELEM_NODEFILE" --group "$group" \
        --name "$name" >"$T/$name.out" 2>"$T/$name.log" &
    RELAY_PID[$name]=$!
    EXTRA_PIDS+=("$!")
    wait_for grep -qx ready "$T/$name.out" || fail "relay $name did not start"
    RELAY_EP[$name]=$(awk -F'\t' '$1 == "query" { print $2 }' "$T/$name.out")
    [[ ${RELAY_EP[$name]} == tcp://127.0.0.1:* ]] \
        || fail "relay $name: no TCP endpoint"
    printf '%s\t%s\t%s\n' "$name" "${RELAY_EP[$name]}" "$group" \
        >>"$(dirname "$TELEM_NODEFILE")/relays"
}
start_relay r1 n1,n2,n3
start_relay r2 n4,n5,n6
start_relay r3 n7

# ---- same answers ---------------------------------------------------------
both() {   # both NAME ARGS...: the client's output through relays and direct
    local name=$1; shift
    local rc=0
    "$C" "$@" >"$T/$name.relay" 2>"$T/$name.relay.err" || rc=$?
    echo "$rc" >"$T/$name.relay.rc"
    rc=0
    TELEM_RELAYS= "$C" "$@" >"$T/$name.direct" 2>"$T/$name.direct.err" || rc=$?
    echo "$rc" >"$T/$name.direct.rc"
}
same() {
    cmp -s "$T/$1.relay" "$T/$1.direct" \
        || fail "$1 differs: $(diff "$T/$1.relay" "$T/$1.direct" | head -n 10)"
    cmp -s "$T/$1.relay.rc" "$T/$1.direct.rc" \
        || fail "$1: exit $(cat "$T/$1.relay.rc") through relays, $(cat "$T/$1.direct.rc") direct"
}
both query --timeout 10000 -f json query relay_it
same query
grep -q '"relay_it"' "$T/query.relay" || fail "no relay_it in $(head -c 300 "$T/query.relay")"
[ "$(grep -o '"host": *"n[0-9]"' "$T/query.relay" | sort -u | wc -l)" = 8 ] \
    || fail "not every node in the query's answer"
# Status rows change between calls (uptime, points): compare what does not.
cols() { awk -F'|' 'NR > 2 { print $2, $3, $4 }' "$1"; }
both status --timeout 10000 status
cols "$T/status.relay" >"$T/st.relay"
cols "$T/status.direct" >"$T/st.direct"
cmp -s "$T/st.relay" "$T/st.direct" || fail "status differs: $(diff "$T/st.relay" "$T/st.direct")"
[ "$(cat "$T/status.relay.rc")" = 0 ] || fail "status through relays: exit $(cat "$T/status.relay.rc")"
echo "query and status: the same through relays as direct"

# ---- a dead node -----------------------------------------------------------
stop_node n2 KILL
both dead --timeout 3000 status
grep -F '| n2 |' "$T/dead.relay" >"$T/n2.relay" || fail "n2 not reported through relays"
grep -F '| n2 |' "$T/dead.direct" >"$T/n2.direct" || fail "n2 not reported directly"
cmp -s "$T/n2.relay" "$T/n2.direct" \
    || fail "n2's row differs: '$(cat "$T/n2.relay")' against '$(cat "$T/n2.direct")'"
cmp -s "$T/dead.relay.err" "$T/dead.direct.err" \
    || fail "the missing node's sentence differs: $(cat "$T/dead.relay.err") / $(cat "$T/dead.direct.err")"
[ "$(cat "$T/dead.relay.rc")" = 3 ] && [ "$(cat "$T/dead.direct.rc")" = 3 ] \
    || fail "exit through relays $(cat "$T/dead.relay.rc"), direct $(cat "$T/dead.direct.rc"), expected 3"
echo "dead node: $(cat "$T/n2.relay")"

# ---- trust -----------------------------------------------------------------
nokey() { TELEM_KEYS= "$B/probe" "$@" 1500; }
withkey() { TELEM_KEYS=$TELEM_RUNDIR/keys "$B/probe" "$@" 5000; }
[ "$(nokey "${RELAY_EP[r1]}" relay:n1:status)" = timeout ] \
    || fail "a client without the key got an answer from a relay"
got=$(withkey "${RELAY_EP[r1]}" relay:n1:status)
[[ $got == "via n1: control code=0 level=2 "* ]] || fail "relay status: '$got'"
for op in shutdown level:0 window:1 handover; do
    got=$(withkey "${RELAY_EP[r1]}" "relay:n1:$op")
    [[ $got == "error code=-14 "* ]] || fail "relay passed $op on: '$got'"
done
got=$(withkey "${RELAY_EP[r1]}" relay:n1:status)
[[ $got == "via n1: control code=0 level=2 window=300000000000" ]] \
    || fail "n1 changed or stopped after refused control: '$got'"
echo "trust: keyless client ignored, control refused"

# ---- a dead relay ------------------------------------------------------------
kill -KILL "${RELAY_PID[r1]}"
wait "${RELAY_PID[r1]}" 2>/dev/null || true
t0=$(date +%s%N)
rc=0
"$C" --timeout 3000 status >"$T/norelay.out" 2>"$T/norelay.err" || rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$rc" = 3 ] || fail "status without relay r1: exit $rc (n2 is the only one missing)"
for n in n1 n3 n4 n5 n6 n7 n8; do
    grep -Eq "^\| $n \| ok \|" "$T/norelay.out" || fail "$n not answered without its relay"
done
[ "$ms" -le 6000 ] || fail "the call took $ms ms, over two deadlines"
echo "dead relay: every live node answered in $ms ms (deadline 3000)"

# ---- a hung relay and the back-off -------------------------------------------
# n2 back (a dead node would make every call wait its whole deadline).
start_node n2 --no-log --interval 5
kill -STOP "${RELAY_PID[r2]}"
"$B/relay_calls" 3 4000 60000 >"$T/calls.out" 2>"$T/calls.err" \
    || fail "relay_calls: $(cat "$T/calls.err")"
kill -CONT "${RELAY_PID[r2]}"
cat "$T/calls.out"
grep -qx 'relays 3' "$T/calls.out" || fail "relay_calls saw no relays"
field() { sed -n "s/^call $1 .*$2=\([0-9]*\).*/\1/p" "$T/calls.out"; }
for k in 1 2 3; do
    [ "$(field $k answered)" = 8 ] || fail "call $k: $(field $k answered) answered, 8 live"
done
[ "$(field 1 ms)" -ge 3000 ] || fail "call 1 did not wait for the hung relay's share"
[ "$(field 1 ms)" -le 8000 ] || fail "call 1 took $(field 1 ms) ms"
[ "$(field 2 ms)" -lt 3000 ] && [ "$(field 3 ms)" -lt 3000 ] \
    || fail "calls 2-3 waited for the relay in back-off: $(field 2 ms), $(field 3 ms) ms"

# ---- the program ---------------------------------------------------------------
"$B/telem_relay" --help | grep -q -- '--group' || fail "--help"
expect_rc 2 "$B/telem_relay" --group n1
expect_rc 2 "$B/telem_relay" --nodefile "$TELEM_NODEFILE" --group n1 --workers 0
for r in r2 r3; do
    kill -TERM "${RELAY_PID[$r]}"
    rc=0
    wait "${RELAY_PID[$r]}" || rc=$?
    [ "$rc" = 0 ] || fail "relay $r exited $rc on SIGTERM"
done
served=$(sed -n 's/.* requests, \([0-9]*\) served,.*/\1/p' "$T/r3.log")
[ "${served:-0}" -ge 2 ] || fail "relay r3 served ${served:-no} requests: $(tail -n 3 "$T/r3.log")"
echo "PASS"
