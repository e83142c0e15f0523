# it_report.sh - `telem_client report` against two real nodes.
#
# Two telemd nodes with collector samples (cg_dgemm_seconds on n1 device 0
# and n2 device 1) and their own node metrics; a run directory laid out
# as telem_launch and telem_watch write it, each file with malformed lines
# among good ones.  The report must hold the job's three nodes with their
# states, the series of both devices and of the node metrics, the good
# events and restarts, skip each bad line with one warning, keep hostile
# text inside its data element, load nothing from elsewhere, and be
# replaced atomically.  Then: a node that does not answer (exit 3, named
# as missing), no launcher files at all (nodes from the node file), an
# events file over the line bound, an unwritable target, and bad command
# lines.  Every wait is on behaviour (lib.sh's wait_for).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
C=$TELEM_BIN/telem_client
R=$TELEM_RUNDIR
H=$T/job.html

for n in n1 n2; do start_node "$n" --bind none; done
# Three rounds each, flushed to telemd before the collector exits.
"$TELEM_BIN/telem_collector" --node n1 --device 0 --period 0.2 --rounds 3 \
    --reps 1 2>"$T/col1.log" || fail "collector n1 failed"
"$TELEM_BIN/telem_collector" --node n2 --device 1 --pin 0 --period 0.2 \
    --rounds 3 --reps 1 2>"$T/col2.log" || fail "collector n2 failed"
# cpu_percent needs two samples of /proc/stat: wait until both nodes have it.
wait_for "$C" -g cpu_percent,used_ram,load_average \
    || fail "node metrics never appeared"

# ---- the run directory, with malformed lines ---------------------------------
mkdir -p "$R/launch" "$R/telem_watch"
now_s=$(date +%s)
iso=$(date -u -d "@$now_s" +%Y-%m-%dT%H:%M:%SZ)
{
    printf '# telem_launch pid 4242 restart ipc:///x/restart.sock restarts 1\n'
    printf 'n1\tactive\t0\tipc:///x/n1\n'
    printf 'n2\tactive\t1\tipc:///x/n2\n'
    printf 'n3\tdown\t-1\t-\n'
    printf 'this line has no tabs\n'
    printf 'n4\tsleepy\t0\t-\n'
    printf 'n5\tidle\tone\t-\n'
    printf 'n6\tidle\t-1\t-\textra\n'
} >"$R/launch/job"
{
    printf '%s restart 1 (of at most 3): trigger slowgpu; nodes n3; why: test\n' "$iso"
    printf 'not a time restart 2\n'
    printf '2026-13-45T99:00:00Z impossible date\n'
} >"$R/launch/restarts.log"
ev_ms=$((now_s * 1000))
{
    printf '{"time_ms":%s,"detector":"slowgpu","severity":"act","nodes":["n2"],"devices":[{"node":"n2","device":"1"}],"text":"device 1 on node n2 is slow </script><script>alert(1)</script><!--"}\n' "$ev_ms"
    printf '{"time_ms":%s,"detector":"threshold","severity":"warn","nodes":["n1"],"devices":[],"text":"n1 warm"}\n' "$((ev_ms + 1000))"
    printf '{not json\n'
    printf '{"detector":"x","text":"no time"}\n'
    printf '[1,2,3]\n'
    printf '{"time_ms":1,"text":"bad nodes","nodes":"n1"}\n'
    printf '{"time_ms":1,"text":"a NUL after it"}\0junk\n'
} >"$R/telem_watch/events.jsonl"

# ---- the report ----------------------------------------------------------------
echo old >"$H"
"$C" report -o "$H" --rundir "$R" >"$T/report.out" 2>"$T/report.err" \
    || fail "report failed: $(cat "$T/report.err")"
cat "$T/report.out" "$T/report.err"
grep -qx "wrote $H: 3 nodes, [0-9]* series, 2 events, 1 restart" "$T/report.out" \
    || fail "unexpected summary: $(cat "$T/report.out")"
[ "$(grep -c 'launch/job: 4 malformed lines skipped' "$T/report.err")" = 1 ] \
    || fail "no single warning for the job file's bad lines"
[ "$(grep -c 'restarts.log: 2 malformed lines skipped' "$T/report.err")" = 1 ] \
    || fail "no single warning for the restart log's bad lines"
[ "$(grep -c 'events.jsonl: 5 malformed lines skipped' "$T/report.err")" = 1 ] \
    || fail "no single warning for the events' bad lines"
ls "$T" | grep -q '\.tmp\.' && fail "a temporary file was left behind"

# check.py HTML EXPR: the data element parsed back (as `d`), the page as `h`;
# EXPR must hold.
cat >"$T/check.py" <<'PY'
import json, re, sys
h = open(sys.argv[1], encoding="utf-8").read()
tag = '<script type="application/json" id="telem-data">'
i = h.index(tag) + len(tag)
j = h.lower().index("</script", i)
raw = h[i:j]
if "<" in raw:
    sys.exit("the data element holds a '<'")
d = json.loads(raw)
def series(metric):
    return sorted((s["tags"]["host"], s["tags"].get("gpu")) for s in d["series"]
                  if s["metric"] == metric and s["dps"])
if not eval(sys.argv[2]):
    sys.exit("check failed: " + sys.argv[2] + "\n" + json.dumps(d)[:3000])
PY
chk() { python3 "$T/check.py" "$H" "$1" || fail "report check: $1"; }
chk 'd["version"] == 1 and d["generated_ms"] > 1.7e12'
chk '[(n["name"], n["state"], n["rank"]) for n in d["job"]["nodes"]] == [("n1", "active", 0), ("n2", "active", 1), ("n3", "down", -1)]'
chk 'd["job"]["launcher_pid"] == 4242 and d["job"]["restarts"] == 1'
chk 'd["job"]["rundir"] == "'"$R"'"'
chk 'series("cg_dgemm_seconds") == [("n1", "0"), ("n2", "1")]'
chk 'series("cg_dgemm_seconds_spread") == []'
chk 'series("cpu_percent") == [("n1", None), ("n2", None)]'
chk 'series("used_ram") == [("n1", None), ("n2", None)]'
chk 'all(isinstance(p[0], int) and p[0] > 1.7e12 and len(p) == 2 for s in d["series"] for p in s["dps"])'
chk 'all(s["aggregateTags"] == [] for s in d["series"])'
chk '[e["detector"] for e in d["events"]] == ["slowgpu", "threshold"]'
chk 'd["events"][0]["text"].endswith("</script><script>alert(1)</script><!--")'
chk 'd["events"][0]["devices"] == [{"node": "n2", "device": "1"}]'
chk 'len(d["restarts"]) == 1 and d["restarts"][0]["time_ms"] == '"$ev_ms"
chk 'd["restarts"][0]["line"].startswith("restart 1 (of at most 3)")'
chk 'd["missing"] == []'
chk 'h.count("<script") == 4 and "src=" not in h and "rel=\"stylesheet\"" not in h'
chk '"var uPlot" in h and "telem-chart" in h'

# ---- a node that does not answer ----------------------------------------------
kill -STOP "${NODE_PID[n2]}"
expect_rc 3 "$C" report -o "$H" --rundir "$R" --timeout 300 >"$T/r2.out" \
    2>"$T/r2.err"
kill -CONT "${NODE_PID[n2]}"
grep -q "1 node missing" "$T/r2.out" || fail "summary names no missing node"
chk '[m["node"] for m in d["missing"]] == ["n2"] and d["missing"][0]["why"]'
chk 'series("cg_dgemm_seconds") == [("n1", "0")]'

# ---- no launcher, no watcher: nodes from the node file -------------------------
rm -rf "$R/launch" "$R/telem_watch"
"$C" report -o "$H" >"$T/r3.out" 2>"$T/r3.err" || fail "report without files failed"
grep -q "no launcher job file" "$T/r3.err" || fail "missing job file not said"
grep -q "no detector events" "$T/r3.err" || fail "missing events not said"
chk 'sorted(n["name"] for n in d["job"]["nodes"]) == ["n1", "n2"]'
chk 'all(n["state"] == "active" for n in d["job"]["nodes"])'
chk 'd["events"] == [] and d["restarts"] == [] and d["job"]["launcher_pid"] == 0'

# ---- the events file over its line bound ---------------------------------------
mkdir -p "$R/telem_watch"
python3 - "$R/telem_watch/events.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(10050):
        f.write(json.dumps({"time_ms": 1700000000000 + i, "text": f"e{i}"}) + "\n")
PY
"$C" report -o "$H" >"$T/r4.out" 2>"$T/r4.err" || fail "report failed"
grep -q "events.jsonl: read only its last 10000 lines" "$T/r4.err" \
    || fail "cut events file not said"
chk 'len(d["events"]) == 10000 and d["events"][0]["text"] == "e50"'

# ---- an unwritable target, bad command lines -----------------------------------
expect_rc 1 "$C" report -o "$T/no/such/dir/job.html"
ls "$T/no" 2>/dev/null && fail "the unwritable target created something"
expect_rc 2 "$C" report
expect_rc 2 "$C" report -o "$H" --end now
expect_rc 2 "$C" report -o "$H" --max-points 3
expect_rc 2 "$C" report -o "$H" --tag host=n1
expect_rc 2 "$C" query --rundir "$R"
expect_rc 2 "$C" report -o "$H" --start yesterday
"$C" report -o "$H" --start -60s >/dev/null 2>&1 || fail "--start -60s refused"
echo "it_report: ok"
