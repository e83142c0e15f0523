# it_fanin.sh - the fan-in benchmark's harness at a small size: 6 nodes,
# each a network and UTS namespace on a bridge (bench/cluster/nsnodes.sh),
# one job started by the real telem_launch through its template source,
# and bench_fanin's operations a few rounds each, with --check: every node
# answers the ac_query, the watcher round and telem_agg's query; each of 2
# restarts takes its node out of the job.  The relay case runs in the
# same job (--relays 3): 2 telem_relay of 3 nodes, started in n1's and
# n4's namespaces; every node answers the query, the watcher round and a
# second telem_agg through them, a query of every fed point gives the
# same series and points through the relays as directly, and the relayed
# clients hold 2 TCP connections where the direct ones hold 6.  Then the
# checks of the harness
# itself: every daemon ran in its own node's namespace with its own
# address and host name, the program ran everywhere, and `down` leaves no
# namespace, link, mount or process behind.  Skipped (77) when network
# namespaces cannot be made here.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
NS="$TELEM_SRC/bench/cluster/nsnodes.sh"
unset TELEM_LEVEL TELEM_DICT_NODEFILE TELEM_NODEFILE TELEM_KEYS SLURM_JOB_NODELIST || true
why=$(bash "$NS" check) || skip "$why"
for p in bench_fanin bench_restart_prog telem_launch telem_dictd telem_agg telem_relay; do
    [ -x "$TELEM_BIN/$p" ] || fail "$p is not built"
done

C=$T/cluster
down_cluster() { [ -d "$C" ] && bash "$NS" down "$C" >/dev/null 2>&1 || true; }
trap 'down_cluster; cleanup' EXIT

# Malformed use of the harness is refused with exit 2.
expect_rc 2 bash "$NS" up "$T/x" 0
expect_rc 2 bash "$NS" up "$T/y" 1001
expect_rc 2 bash "$NS" up "$T/z" 2 --interval soon
expect_rc 2 bash "$NS" exec "$T" n1 true
expect_rc 2 bash "$NS" nonsense

neigh0=$(sysctl -n net.ipv4.neigh.default.gc_thresh3)
bash "$NS" up "$C" 6 --interval 1 >"$T/up.log" || fail "nsnodes up failed: $(cat "$T/up.log")"
# The kernel's one neighbour table for every namespace fits 64 entries a node.
[ "$(sysctl -n net.ipv4.neigh.default.gc_thresh3)" -ge 384 ] \
    || fail "gc_thresh3 not raised for 6 nodes: $(sysctl -n net.ipv4.neigh.default.gc_thresh3)"
expect_rc 2 bash "$NS" exec "$C" n7 true
[ "$(bash "$NS" exec "$C" n4 hostname)" = n4 ] || fail "n4's host name is not n4"
a4=$(bash "$NS" addr "$C" n4)
bash "$NS" exec "$C" n4 ip -4 -o addr show eth0 | grep -q " $a4/22 " \
    || fail "n4 does not hold $a4/22"

for bad in 1 x 3, ,3 3,,4; do
    expect_rc 2 "$TELEM_BIN/bench_fanin" --template t --hosts a,b --bindir . \
        --rundir "$T/no" --relays "$bad"
done
rc=0
"$TELEM_BIN/bench_fanin" --template "$(bash "$NS" template "$C")" \
    --hosts "$(bash "$NS" hosts "$C")" --bindir "$TELEM_BIN" \
    --rundir "$C/run" --rounds 4 --restarts 2 --wait 120 --check \
    --relays 3 >"$T/fanin.log" 2>&1 || rc=$?
cat "$T/fanin.log"
[ "$rc" = 0 ] || { tail -n 30 "$C/run/launcher.log" >&2 || true; fail "bench_fanin --check exited $rc"; }

# Every operation ran its rounds with no node missing.
for op in query watch agg restart startup query/r3 watch/r3 agg/r3; do
    line=$(grep -P "^RESULT\t6\t$op\t" "$T/fanin.log") || fail "no RESULT line for $op"
    bad=$(echo "$line" | cut -f8)
    [ "$bad" = 0 ] || fail "$op: $bad samples with a node missing"
done
# Through the relays: the same answers, 2 connections instead of 6.
grep -q "^relays of 3: answers identical: direct: 48 series" "$T/fanin.log" \
    || fail "answers through relays differ from direct ones"
conn=$(grep -P "^CONN\t6\tr3\t" "$T/fanin.log") || fail "no CONN line"
[ "$(echo "$conn" | cut -f4-8)" = "$(printf '2\t6\t2\t6\t2')" ] \
    || fail "connections (relays, direct, relayed, agg direct, agg relayed): $(echo "$conn" | cut -f4-8)"
[ ! -e "$C/run/relays" ] && [ ! -e "$C/run/relays.tmp" ] || fail "the relays file was left"
grep -q "restart 1 excluding n6: .* n6 is down" "$T/fanin.log" || fail "restart 1 did not take n6 out"
[ "$(grep -cP '^RESTART\t6\t' "$T/fanin.log")" = 2 ] || fail "not one RESTART line a restart"
grep -q "restart 2 excluding n5: .* n5 is down" "$T/fanin.log" || fail "restart 2 did not take n5 out"
# The program ran on all 6 nodes, then on 5, then on 4 (bench_restart_prog's
# stamps), and each restart line names its node.
for run in 0 1 2; do
    got=$(ls "$C/run/rb" | grep -c "^$run\.")
    [ "$got" = $((6 - run)) ] || fail "run $run: the program ran on $got nodes"
done
[ ! -e "$C/run/rb/1.n6" ] && [ ! -e "$C/run/rb/2.n5" ] || fail "an excluded node ran the program"
grep -q "trigger bench; nodes n6" "$C/run/launch/restarts.log" || fail "no restart line for n6"
# telemd on n4 served on n4's own address (the node file's endpoint).
grep -q " n4=tcp://$a4:" "$T/fanin.log" || fail "n4's telemd did not bind $a4"

# The fit script refuses malformed input (exit 2) and fits the real lines.
if /usr/bin/python3 -c 'import numpy, matplotlib' 2>/dev/null; then
    printf 'RESULT\t6\tquery\tfast\t1\t1\t4\t0\n' >"$T/bad.tsv"
    expect_rc 2 /usr/bin/python3 "$TELEM_SRC/bench/fanin_fit.py" "$T/bad.tsv"
    printf 'garbage\n' >"$T/bad2.tsv"
    expect_rc 2 /usr/bin/python3 "$TELEM_SRC/bench/fanin_fit.py" "$T/bad2.tsv"
    printf 'RESULT\t6\tquery/x3\t1\t1\t1\t4\t0\n' >"$T/bad3.tsv"
    expect_rc 2 /usr/bin/python3 "$TELEM_SRC/bench/fanin_fit.py" "$T/bad3.tsv"
    printf 'RESTART\t6\t1\t1\t1\t1\t1\t1\t1\t1\n' >"$T/bad4.tsv"
    expect_rc 2 /usr/bin/python3 "$TELEM_SRC/bench/fanin_fit.py" "$T/bad4.tsv"
    grep -E '^(RESULT|IDLE|CONN|RESTART)' "$T/fanin.log" >"$T/ok.tsv"
    /usr/bin/python3 "$TELEM_SRC/bench/fanin_fit.py" "$T/ok.tsv" --svg "$T/f.svg" >"$T/fit.log" \
        || fail "fanin_fit.py failed on good input: $(cat "$T/fit.log")"
    grep -q "^FIGURE" "$T/fit.log" && [ -s "$T/f.svg" ] || fail "no FIGURE line or picture"
    grep -q "^FIGURE	watcher round, 1,024 nodes x 8 devices, through relays of 3 nodes" \
        "$T/fit.log" || fail "no FIGURE line for the relayed watcher round"
    grep -q "^FIGURE	restart at 6 nodes, request -> running everywhere, against this machine's floor" \
        "$T/fit.log" || fail "no FIGURE line for the restart against the floor"
else
    echo "fanin_fit.py not checked: Debian's python3-numpy/matplotlib are not installed"
fi

# Teardown leaves nothing: no namespace, veth, bridge, mount or process.
id=$(sed -n 's/^ID=//p' "$C/net")
TELEM_KEEP=0 bash "$NS" down "$C" || fail "nsnodes down left something"
[ ! -d "$C" ] || fail "down left $C"
ip netns list | grep -q "tf${id}n" && fail "a namespace of $id is left"
ip -o link show | grep -q "tf${id}" && fail "a link of $id is left"
grep -q "$C/" /proc/self/mountinfo && fail "a mount under $C is left"
# The last cluster's down puts the neighbour table's limits back.
if ! ip netns list | grep -q '^tf[0-9a-f]\{5\}n'; then
    [ "$(sysctl -n net.ipv4.neigh.default.gc_thresh3)" = "$neigh0" ] \
        || fail "gc_thresh3 not restored to $neigh0"
fi
echo "it_fanin: ok"
