# it_dict.sh - the distributed dictionary with several real telem_dictd on
# one machine (ipc sockets in a private run directory): --nodes without
# the server's node and a run directory without its parent refused, a
# relative run directory made absolute; put/get/keys/len,
# events (a waiter is woken by a set), checkpoint and restore, kill -9 of a
# server mid-stream, a re-form that fails because it lists the dead server,
# then its retry without it (every acknowledged key readable with its
# value), restart of every server from its log, and re-form on a new node
# set with one node excluded and one new node.
source "$(dirname "$0")/lib.sh"
export TELEM_DICT_NODEFILE=$T/dict_nodes
D=$TELEM_BIN/telem_dict
declare -A DPID=()

start_dict() {   # start_dict NAME [options]
    local name=$1; shift
    "$TELEM_BIN/telem_dictd" --node "$name" "$@" >"$T/$name.out" 2>>"$T/$name.log" &
    DPID[$name]=$!
    EXTRA_PIDS+=("$!")
    wait_for grep -qx ready "$T/$name.out" || fail "telem_dictd $name did not start"
}
stop_dict() {    # stop_dict NAME [SIGNAL]
    kill -"${2:-TERM}" "${DPID[$1]}" 2>/dev/null || true
    wait "${DPID[$1]}" 2>/dev/null || true
}

expect_rc 2 "$TELEM_BIN/telem_dictd" --replicas 9
expect_rc 2 "$TELEM_BIN/telem_dictd" --sync sometimes
expect_rc 2 "$D"
# Commands are checked before any node file is read.
for bad in "frob" "get" "put k" "fill x" "event-wait e soon" "len extra"; do
    # shellcheck disable=SC2086
    expect_rc 2 "$TELEM_BIN/telem_dict" -N "$T/no-such-file" $bad
done
"$TELEM_BIN/telem_dictd" --help | grep -q Usage || fail "--help"
# --nodes must hold the server's own node, named or by default: one
# outside its first map would own no shard and its clients would wait.
expect_rc 2 "$TELEM_BIN/telem_dictd" --node n1 --nodes n2,n3 2>"$T/nodes.err"
grep -q "invalid --nodes 'n2,n3': the list must contain this node, 'n1'" \
    "$T/nodes.err" || fail "--nodes without this node: $(cat "$T/nodes.err")"
TELEM_NODE=n9 expect_rc 2 "$TELEM_BIN/telem_dictd" --nodes n1 2>"$T/nodes.err"
grep -q "contain this node, 'n9'" "$T/nodes.err" \
    || fail "--nodes without the default node: $(cat "$T/nodes.err")"
# A run directory whose parent is missing is refused, the parent named; a
# relative one is made absolute (the endpoint below is).
expect_rc 1 "$TELEM_BIN/telem_dictd" --node n1 --rundir "$T/no/such/run" \
    2>"$T/noparent.err"
grep -q "its parent $T/no/such does not exist" "$T/noparent.err" \
    || fail "missing parent: $(cat "$T/noparent.err")"
[ ! -e "$T/no" ] || fail "telem_dictd created the run directory's parents"
(cd "$T" && exec "$TELEM_BIN/telem_dictd" --node r1 --rundir rel \
    --nodefile rel-nodes) >"$T/r1.out" 2>"$T/r1.log" &
DPID[r1]=$!
EXTRA_PIDS+=("$!")
wait_for grep -qx ready "$T/r1.out" || fail "relative --rundir: no ready"
grep -qx "r1	ipc://$(cd "$T" && pwd -P)/rel/r1/dict.sock" "$T/rel-nodes" \
    || fail "relative --rundir: node file $(cat "$T/rel-nodes")"
stop_dict r1

for n in n1 n2 n3; do start_dict $n --nodes n1,n2,n3; done

# Basic operations.
$D put hello world || fail "put"
[ "$($D get hello)" = world ] || fail "get"
expect_rc 3 $D get missing
$D fill 2000 k || fail "fill"
[ "$($D check 2000 k)" = 2000 ] || fail "check after fill"
[ "$($D len)" = 2001 ] || fail "len"
[ "$($D keys | wc -l)" = 2001 ] || fail "keys"
$D del hello || fail "del"
expect_rc 3 $D del hello
[ "$($D -s other len)" = 0 ] || fail "namespaces are separate"

# Events: a waiter blocks until the set, then returns 0.
expect_rc 3 $D event-is-set stop
$D event-wait stop 20000 >"$T/wait.out" 2>&1 &
WAITER=$!
EXTRA_PIDS+=("$WAITER")
expect_rc 1 $D event-wait other 200      # times out
kill -0 $WAITER || fail "waiter returned before the event was set"
$D event-set stop || fail "event-set"
wait $WAITER || fail "waiter did not return 0"
$D event-is-set stop || fail "event-is-set after set"

# Checkpoint and restore.
$D -s app put a 1 && $D -s app checkpoint 7 || fail "checkpoint"
$D -s app put a 2 && $D -s app put b 3 || fail "puts after checkpoint"
[ "$($D -s app restore)" = 7 ] || fail "restore id"
[ "$($D -s app get a)" = 1 ] || fail "restored value"
expect_rc 3 $D -s app get b

# kill -9 one server while a writer is in the middle of a stream.
# Puts whose shard involves the killed server time out (-t 500); only the
# acknowledged ones are checked, whatever the timeout.
( for i in $(seq 30); do $D -t 500 put "s$i" "v$i" && echo "s$i" >>"$T/acked"; done ) &
WRITER=$!
wait_for test -s "$T/acked" || fail "writer made no progress"
stop_dict n2 KILL
wait $WRITER || true
expect_rc 1 $D -t 500 check 2000 k     # some shards lost their primary: timeout, not a hang
# A re-form that lists the dead server fails and leaves n1 and n3
# re-forming; the retry without it learns their epoch and succeeds.
expect_rc 1 $D -t 1500 reform n1,n2,n3
$D -t 10000 reform n1,n3 || fail "reform without n2 after a failed re-form"
[ "$($D check 2000 k)" = 2000 ] || fail "keys lost after reform"
while read -r k; do
    [ "$($D get "$k")" = "v${k#s}" ] || fail "acknowledged $k lost"
done <"$T/acked"
[ "$($D -s app get a)" = 1 ] || fail "namespace app after reform"

# Restart every server from its log.
kill -TERM "${DPID[n1]}"
rc=0
wait "${DPID[n1]}" || rc=$?
[ "$rc" = 0 ] || fail "telem_dictd exited $rc after SIGTERM (its help says 0)"
stop_dict n3
start_dict n1; start_dict n3
[ "$($D check 2000 k)" = 2000 ] || fail "keys lost after restart"
$D event-is-set stop || fail "event lost after restart"

# Re-form on a new node set: n1 excluded, n4 new.
start_dict n4
$D -t 10000 reform n3,n4 || fail "reform n3,n4"
stop_dict n1
[ "$($D check 2000 k)" = 2000 ] || fail "keys lost after reform onto n3,n4"
[ "$($D -s app get a)" = 1 ] || fail "namespace app after second reform"
$D put after reform || fail "put after reform"
echo "it_dict: ok"
