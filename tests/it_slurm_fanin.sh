# it_slurm_fanin.sh - the fan-in benchmark's harness under Slurm at a
# small size: the namespaced multi-slurmd cluster of tests/slurm/netns.sh
# (4 nodes, each with its own address and host name) and bench_fanin
# --slurm inside `salloc -N 4`, so that the real telem_launch starts each
# daemon kind and the program as one srun step, with --check: every node
# answers the ac_query, the watcher round and telem_agg's query (telem_agg
# on n1's address, its CPU read from its own process, not srun's); 2
# telem_relay of 2 nodes, started in n1's and n3's namespaces through
# bench/cluster/slurm_node.sh, give the same answers as the direct path
# with 2 connections instead of 4; a restart excluding n4 takes it out and
# the program runs again, as a new srun step, on n1-n3.  Skipped (77), with
# the reason, where the cluster cannot run (not root, no namespaces, no
# Slurm and no way to install it).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "${TELEM_SRC:-$(dirname "${BASH_SOURCE[0]}")/..}/tests/slurm/faults.sh"
for p in bench_fanin bench_restart_prog telem_launch telem_dictd telem_agg telem_relay telem_step; do
    [ -x "$TELEM_BIN/$p" ] || fail "$p is not built"
done
SN="$TELEM_SRC/bench/cluster/slurm_node.sh"
net_setup

# The relay template refuses a missing command.
expect_rc 2 bash "$SN" "$S" n1
# --slurm needs no template unless relays are asked for.
expect_rc 2 "$TELEM_BIN/bench_fanin" --slurm --hosts n1,n2 --bindir . \
    --rundir "$T/no" --relays 2
a1=$(net node_addr "$S" n1)
rc=0
salloc --no-kill -N 4 "$TELEM_BIN/bench_fanin" --slurm \
    --template "bash $SN $S {node}" --agg-bind "$a1" --hosts n1,n2,n3,n4 \
    --bindir "$TELEM_BIN" --rundir "$T/job" --rounds 3 --restarts 1 \
    --wait 120 --check --relays 2 >"$T/fanin.log" 2>&1 || rc=$?
cat "$T/fanin.log"
[ "$rc" = 0 ] || { tail -n 30 "$T/job/launcher.log" >&2 || true; fail "bench_fanin --slurm --check exited $rc"; }

for op in query watch agg restart startup query/r2 watch/r2 agg/r2; do
    line=$(grep -P "^RESULT\t4\t$op\t" "$T/fanin.log") || fail "no RESULT line for $op"
    [ "$(echo "$line" | cut -f8)" = 0 ] || fail "$op: samples with a node missing: $line"
done
# telem_agg's CPU is its own process's (srun's would be about 0).
agg_cpu=$(grep -P "^RESULT\t4\tagg\t" "$T/fanin.log" | cut -f6)
awk -v c="$agg_cpu" 'BEGIN { exit !(c > 0) }' || fail "telem_agg's CPU per query is $agg_cpu ms"
grep -q "^relays of 2: answers identical: direct: 32 series" "$T/fanin.log" \
    || fail "answers through relays differ from direct ones"
conn=$(grep -P "^CONN\t4\tr2\t" "$T/fanin.log") || fail "no CONN line"
[ "$(echo "$conn" | cut -f4-6)" = "$(printf '2\t4\t2')" ] \
    || fail "connections (relays, direct, relayed): $(echo "$conn" | cut -f4-6)"
grep -q "restart 1 excluding n4: .* n4 is down" "$T/fanin.log" || fail "the restart did not take n4 out"
# The program ran on 4 nodes, then on 3, not on n4 again.
[ "$(ls "$T/job/rb" | grep -c '^0\.')" = 4 ] || fail "run 0 did not run on 4 nodes"
[ "$(ls "$T/job/rb" | grep -c '^1\.')" = 3 ] || fail "run 1 did not run on 3 nodes"
[ ! -e "$T/job/rb/1.n4" ] || fail "the excluded node ran the program"
# Each node's telemd served on that node's own address.
for i in 1 2 3 4; do
    grep -q " n$i=tcp://$(net node_addr "$S" "n$i"):" "$T/fanin.log" \
        || fail "n$i's telemd is not on its own address"
done
echo "it_slurm_fanin: ok"
