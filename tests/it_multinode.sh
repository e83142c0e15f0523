# it_multinode.sh - three virtual nodes; queries fan out to all of them, and
# a node killed with SIGKILL costs one deadline, never a hang: the answer is
# partial and names the node that did not answer.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
C=$TELEM_BIN/telem_client

for n in n1 n2 n3; do start_node "$n" --level 1; done
for n in n1 n2 n3; do
    TELEM_NODE=$n "$TELEM_BIN/add_data_demo" --count 50 --metric job_step \
        >"$T/demo-$n.out" 2>&1 || fail "add_data_demo on $n failed"
done

"$C" -f json query job_step >"$T/all.json" || fail "query over 3 nodes failed"
python3 - "$T/all.json" <<'PY' || fail "fan-out wrong: $(head -c 800 "$T/all.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
hosts = sorted(s["tags"]["host"] for s in doc["series"] if s["metric"] == "job_step")
assert hosts == ["n1", "n2", "n3"], hosts
assert all(len(s["points"]) == 50 for s in doc["series"] if s["metric"] == "job_step")
PY

stop_node n2 KILL
start=$(date +%s%N)
rc=0
"$C" --timeout 1000 -f json query job_step >"$T/partial.json" 2>"$T/partial.err" || rc=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$rc" = 3 ] || fail "expected exit 3 (partial) with a dead node, got $rc"
grep -q "n2" "$T/partial.err" || fail "the dead node is not named: $(cat "$T/partial.err")"
# Generous bound: the deadline is 1 s; a hang would be unbounded.
[ "$elapsed_ms" -lt 15000 ] || fail "partial query took ${elapsed_ms} ms"
python3 - "$T/partial.json" <<'PY' || fail "partial result wrong: $(cat "$T/partial.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
hosts = sorted(s["tags"]["host"] for s in doc["series"] if s["metric"] == "job_step")
assert hosts == ["n1", "n3"], hosts
assert doc["missing"] == ["n2"], doc.get("missing")
PY

# status: two nodes answer, one is reported missing.
rc=0
"$C" --timeout 1000 status >"$T/status.txt" 2>"$T/status.err" || rc=$?
[ "$rc" = 3 ] || fail "status with a dead node: expected exit 3, got $rc"
grep -q n2 "$T/status.err" || fail "status does not name the dead node"
echo "it_multinode: ok"
