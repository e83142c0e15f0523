# it_job_history.sh - a whole job run twice in one run directory: the
# second run's nodes reload the first run's history from their flush logs
# (RUNDIR/NODE/log), so a query of the first run's range, made by the
# second run's program, answers the first run's points.  The first job's
# telemds stop with SIGTERM at its end, which drains everything into the
# log (docs/telemd.md): nothing depends on a flush interval or on time.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
L=$TELEM_BIN/telem_launch
unset TELEM_LEVEL SLURM_JOB_NODELIST || true
export OUT=$T/out B=$TELEM_BIN
mkdir "$OUT"

cat >"$T/prog.sh" <<'PROG'
#!/usr/bin/env bash
# First run: record 50 points of run1_loss on this node.  Second run: ask
# every node for run1_loss since the first run's start.
set -euo pipefail
if [ "$RUN" = 1 ]; then
    "$B/add_data_demo" --count 50 --metric run1_loss >"$OUT/add-$TELEM_NODE.out"
else
    "$B/telem_client" query run1_loss --start "$START" -f json \
        >"$OUT/q-$TELEM_NODE.json"
fi
PROG
chmod +x "$T/prog.sh"

job() {  # job RUN: one run of the job, to its end
    RUN=$1 "$L" --rundir "$TELEM_RUNDIR" --grace 5 --local 2 --no-agg \
        -L 1 -- "$T/prog.sh" >"$T/job$1.out" 2>"$T/job$1.log" \
        || fail "job $1 failed: $(tail -n 20 "$T/job$1.log")"
}

export START=$(( $(date +%s%N) - 1000000000 ))
job 1
for n in n1 n2; do
    ls "$TELEM_RUNDIR/$n/log/"*.tseg >/dev/null 2>&1 \
        || fail "no flush log for $n after the first job"
done
job 2
python3 - "$OUT" <<'PY' || fail "the second run did not see the first run's points"
import glob, json, sys
out = sys.argv[1]
answers = sorted(glob.glob(out + "/q-*.json"))
assert answers, "no answer written"
for path in answers:            # each program asked both nodes
    nodes = {}
    for s in json.load(open(path))["series"]:
        nodes[s["node"]] = nodes.get(s["node"], 0) + len(s["points"])
    print(path.rsplit("/", 1)[1], "saw the first run's points:", nodes)
    assert nodes == {"n1": 50, "n2": 50}, nodes
PY
echo "it_job_history: ok"
