# it_view.sh - dumps and the offline viewer over a real local job: three
# telemd nodes hold agg_client's golden data set (put through telem_agg at
# exact times) and their own node metrics; telem_client dump writes dumps
# of the job (everything; an overlapping part; one node alone); telem_view
# serves them and answers every request of view_client.py (aggregators,
# downsampling, rates, filters, the dashboard's and Grafana's queries,
# suggest, lookup) exactly as the live telem_agg does on the same absolute
# ranges - so the overlapping dumps merged without a duplicate point;
# --export csv/json hold the data set, each point once; report --dump
# writes a page; damaged files give a warning or a clear error, never a
# crash; node snapshots from both sources (/telem/snapshot, telem_client
# snapshot --dump); a job's dump made by telem_launch --dump carries its detector
# events and restarts, and telem_view answers globalAnnotations as
# telem_agg does; telem_view over the nodes' flush logs (a run directory,
# one node's log directory) answers as over the dumps.  Every wait is for
# behaviour.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
for b in telem_agg telem_view telem_client telemd; do
    [ -x "$TELEM_BIN/$b" ] || fail "$b is not built"
done
command -v python3 >/dev/null || skip "python3 is not installed"
CLIENT="python3 $(dirname "${BASH_SOURCE[0]}")/view_client.py"
unset TELEM_LEVEL SLURM_JOB_NODELIST TELEM_LAUNCH_ENDPOINT || true

# start_http NAME PROG ARGS...: starts telem_agg or telem_view on an
# ephemeral port, waits for its "serving" line and sets URL.
start_http() {
    local name=$1 prog=$2; shift 2
    "$TELEM_BIN/$prog" --port 0 "$@" >"$T/$name.out" 2>"$T/$name.log" &
    EXTRA_PIDS+=("$!")
    wait_for grep -q "^$prog: serving" "$T/$name.out" \
        || fail "$prog $name did not start"
    URL=$(sed -n "s/^$prog: serving \([^ ]*\) .*/\1/p" "$T/$name.out")
}

# --- the live job ------------------------------------------------------------
for n in n1 n2 n3; do
    start_node "$n" --level 2 --interval 0.2 --window 86400
done
T0=$(( $(date +%s) / 3600 * 3600 - 7200 ))
# /api/put needs a token; the clients send it (servers without one
# ignore it).
(umask 077 && echo "view-token-for-it" >"$T/agg.token")
export TELEM_AGG_TOKEN_FILE=$T/agg.token
start_http agg telem_agg --nodefile "$TELEM_NODEFILE" --rundir "$TELEM_RUNDIR" \
    --token-file "$T/agg.token"
AGG=$URL
$CLIENT put "$AGG" "$T0" || fail "the data set could not be put"
S_MS=$(( $(date +%s%N) / 1000000 ))
# A few rounds of node metrics on every node, inside [S_MS, E_MS]: rounds
# from before S_MS (the put can outlast several) do not count, or the range
# the two servers are compared on may hold none.
rounds() {
    "$TELEM_BIN/telem_client" -f txt query cpu_percent --start "${S_MS}ms" \
        | awk '$1 ~ /^n[123]$/ { n[$1]++ } END { exit !(n["n1"] >= 3 &&
               n["n2"] >= 3 && n["n3"] >= 3) }'
}
wait_for rounds || fail "the nodes did not sample cpu_percent"
# The range ends on the last millisecond of a second, and the dumps are made
# once that second is over: a downsampled bucket holding the end takes the
# points after the end too (OpenTSDB's scan), so with 1 s buckets the live
# nodes and the dumps then hold the same points for it.
E_MS=$(( $(date +%s) * 1000 + 999 ))
past_end() { [ $(( $(date +%s%N) / 1000000 )) -gt $(( E_MS + 300 )) ]; }
wait_for past_end || fail "the clock did not pass $E_MS"

# --- dumps -------------------------------------------------------------------
D=$T/dumps
mkdir "$D"
"$TELEM_BIN/telem_client" dump -o "$D/all.tdump" >"$T/dump1.out" \
    2>"$T/dump1.log" || fail "dump of the job: $(cat "$T/dump1.log")"
grep -q "^wrote $D/all.tdump: [1-9][0-9]* series" "$T/dump1.out" \
    || fail "dump summary: $(cat "$T/dump1.out")"
# An existing file is never overwritten.
expect_rc 1 "$TELEM_BIN/telem_client" dump -o "$D/all.tdump"
# An overlapping part of the range, and one node alone.
"$TELEM_BIN/telem_client" dump -o "$D/part.tdump" --start "${T0}s" \
    --end "$(( T0 + 20 ))s" >/dev/null || fail "dump of a part"
grep -P '^n3\t' "$TELEM_NODEFILE" >"$T/n3.nodes"
"$TELEM_BIN/telem_client" --nodefile "$T/n3.nodes" dump -o "$D/n3.tdump" \
    >/dev/null || fail "dump of n3"
# A node that does not answer: a partial dump, exit 3, the node named.
kill -STOP "${NODE_PID[n2]}"
rc=0
"$TELEM_BIN/telem_client" --timeout 500 dump -o "$D/partial.tdump" it.cpu \
    >/dev/null 2>"$T/partial.log" || rc=$?
kill -CONT "${NODE_PID[n2]}"
[ "$rc" = 3 ] || fail "a dump without n2: exit $rc, want 3"
grep -q "n2" "$T/partial.log" || fail "the partial dump does not name n2"

# --- telem_view against telem_agg ----------------------------------------------
start_http view telem_view "$D/all.tdump" "$D/part.tdump" "$D/n3.tdump"
VIEW=$URL
$CLIENT same "$AGG" "$VIEW" "$T0" "$S_MS" "$E_MS" \
    || fail "telem_view's answers differ from telem_agg's (above)"
$CLIENT offline "$VIEW" || fail "/api/put, /api/reboot on telem_view"
$CLIENT job "$VIEW" n1,n2,n3 "$(( T0 * 1000 ))" "$S_MS" || fail "/telem/job"
curl -sf "$VIEW" | grep -q "telem.js" || fail "the dashboard's page"
# Node snapshots: /telem/snapshot from both sources, snapshot --dump.
$CLIENT snaps "$AGG" "$VIEW" n1,n2,n3 || fail "/telem/snapshot"
"$TELEM_BIN/telem_client" -f json snapshot >"$T/snap-live.json" \
    || fail "telem_client snapshot"
"$TELEM_BIN/telem_client" -f json snapshot --dump "$D/all.tdump" \
    --dump "$D/n3.tdump" >"$T/snap-dump.json" || fail "snapshot --dump"
$CLIENT snapfile "$T/snap-live.json" "$T/snap-dump.json" n1,n2,n3 \
    || fail "snapshot --dump differs from the nodes' snapshots"
"$TELEM_BIN/telem_client" -f txt snapshot n2 --dump "$D/all.tdump" \
    >"$T/snap-n2.txt" || fail "snapshot --dump n2"
grep -q "^Node: *n2$" "$T/snap-n2.txt" && ! grep -q "^Node: *n1" \
    "$T/snap-n2.txt" || fail "snapshot --dump n2: $(head -3 "$T/snap-n2.txt")"
expect_rc 1 "$TELEM_BIN/telem_client" snapshot nx --dump "$D/all.tdump"

# --- export ------------------------------------------------------------------
"$TELEM_BIN/telem_view" --export csv -o "$T/all.csv" "$D/all.tdump" \
    "$D/part.tdump" 2>"$T/export.log" || fail "export csv"
$CLIENT csv "$T/all.csv" "$T0" || fail "the CSV export"
"$TELEM_BIN/telem_view" --export json -o "$T/all.json" "$D/part.tdump" \
    "$D/all.tdump" || fail "export json"
$CLIENT json "$T/all.json" "$T0" || fail "the JSON export"
"$TELEM_BIN/telem_view" --export csv --metric it.cpu --tag host=n2 \
    "$D/all.tdump" >"$T/sel.csv" || fail "export with a selection"
[ "$(tail -n +2 "$T/sel.csv" | cut -d, -f1,2 | sort -u)" = "n2,it.cpu" ] \
    || fail "selection: $(cat "$T/sel.csv")"
[ "$(tail -n +2 "$T/sel.csv" | wc -l)" = 3 ] || fail "selection: 3 points"

# --- the report from dumps -----------------------------------------------------
"$TELEM_BIN/telem_client" report --dump "$D/all.tdump" --dump "$D/n3.tdump" \
    -o "$T/job.html" >"$T/report.out" || fail "report --dump"
grep -q "^wrote $T/job.html: 3 nodes, [1-9][0-9]* series" "$T/report.out" \
    || fail "report summary: $(cat "$T/report.out")"
grep -q 'id="telem-data"' "$T/job.html" || fail "the report holds no data"

# --- damaged files -------------------------------------------------------------
size=$(stat -c %s "$D/all.tdump")
head -c $(( size / 2 )) "$D/all.tdump" >"$T/cut.tdump"
# Bytes inside the payload of the 5th BLOCK record (docs/store.md: a
# record starts with the sync marker 0x0a52ec7e, then u32 len, u8 kind);
# and the dump cut where a record starts.
python3 - "$D/all.tdump" "$T/flip.tdump" "$T/edge.tdump" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
i, seen = 0, 0
while seen < 5:
    i = b.index(b"\x7e\xec\x52\x0a", i + 1)
    seen += b[i + 8] == 2
b[i + 20:i + 24] = b"\xff\xff\xff\xff"
open(sys.argv[2], "wb").write(b)
# Cut at the record boundary nearest the middle: every record whole, only
# the index at the end missing.
src = open(sys.argv[1], "rb").read()
at = src.index(b"\x7e\xec\x52\x0a", len(src) // 2)
open(sys.argv[3], "wb").write(src[:at])
PY
head -c 4096 /dev/urandom >"$T/noise.tdump"
for f in cut edge flip; do
    rc=0
    "$TELEM_BIN/telem_view" --export csv "$T/$f.tdump" >"$T/$f.csv" \
        2>"$T/$f.err" || rc=$?
    [ "$rc" = 0 ] || fail "$f.tdump: exit $rc: $(cat "$T/$f.err")"
    grep -q "damaged" "$T/$f.err" || fail "$f.tdump: no warning"
    [ "$(wc -l <"$T/$f.csv")" -gt 1 ] || fail "$f.tdump: no point read"
done
rc=0
"$TELEM_BIN/telem_view" --export csv "$T/noise.tdump" >/dev/null \
    2>"$T/noise.err" || rc=$?
[ "$rc" = 1 ] || fail "noise: exit $rc"
grep -q "not a telem dump" "$T/noise.err" || fail "noise: $(cat "$T/noise.err")"
expect_rc 1 "$TELEM_BIN/telem_view" "$T/missing.tdump"
expect_rc 2 "$TELEM_BIN/telem_view"
rc=0
"$TELEM_BIN/telem_client" report --dump "$T/noise.tdump" -o "$T/x.html" \
    2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "report of noise: exit $rc"
# --- telem_launch --dump: a dump when the job ends, with its annotations ------
# A job with a real detector event and a restart: the watcher's threshold
# detector flags n2 (the program records it_flag there on the first run),
# the launcher restarts the job on n1 and n3, the restarted program ends
# once n1 and n3 hold cpu_percent rounds, and the dump made at the end
# holds the run directory's event and restart.  telem_view over the dump
# must answer globalAnnotations exactly as a telem_agg reading that run
# directory (its series come from this test's nodes, still running).
LR=$T/lrun
mkdir -m 700 "$LR"
cat >"$T/prog.sh" <<'PROG'
#!/usr/bin/env bash
if [ -z "${TELEM_RESTARTED:-}" ]; then
    [ "$TELEM_NODE" = n2 ] && "$TELEM_BIN/add_data_demo" --count 3 \
        --metric it_flag --quiet
    for _ in $(seq 1200); do sleep 0.05; done   # until the restart stops it
    exit 1
fi
for _ in $(seq 400); do
    [ "$("$TELEM_BIN/telem_client" -f txt -g cpu_percent 2>/dev/null \
         | grep -c '^n[13] ')" -ge 2 ] && exit 0
    sleep 0.05
done
exit 1
PROG
chmod +x "$T/prog.sh"
export TELEM_BIN
DET="flag=threshold:metric=it_flag,op=>,value=0,severity=act"
J_MS=$(( $(date +%s%N) / 1000000 ))
env -u TELEM_RUNDIR -u TELEM_NODEFILE "$TELEM_BIN/telem_launch" \
    --rundir "$LR" --grace 2 --local 3 --nodes 2 --resilient --no-agg \
    --detector "$DET" --dump "$T/jobdumps" -- "$T/prog.sh" \
    >"$T/launch.out" 2>"$T/launch.log" || fail "telem_launch --dump: $(tail -5 "$T/launch.log")"
ls "$T"/jobdumps/job-*.tdump >/dev/null 2>&1 || fail "no dump in --dump DIR"
grep -q "dump written: $T/jobdumps/job-" "$T/launch.log" \
    || fail "no 'dump written' line"
grep -q "restart" "$LR/launch/restarts.log" || fail "the job did not restart"
[ -s "$LR/telem_watch/events.jsonl" ] || fail "the watcher wrote no event"
"$TELEM_BIN/telem_view" --export csv --metric cpu_percent \
    "$T"/jobdumps/job-*.tdump >"$T/job.csv" || fail "export of the job dump"
[ "$(tail -n +2 "$T/job.csv" | cut -d, -f1 | sort -u | tr '\n' ' ')" \
    = "n1 n2 n3 " ] || fail "the job's dump: $(head "$T/job.csv")"
start_http lagg telem_agg --nodefile "$TELEM_NODEFILE" --rundir "$LR"
LAGG=$URL
start_http lview telem_view "$T"/jobdumps/job-*.tdump
LVIEW=$URL
$CLIENT notes "$LAGG" "$LVIEW" "$J_MS" || fail "globalAnnotations differ"
# report --dump takes them from the dump, without --rundir.
"$TELEM_BIN/telem_client" report --dump "$T"/jobdumps/job-*.tdump \
    -o "$T/jobr.html" >/dev/null || fail "report --dump of the job"
grep -q '"kind":"restart"\|restart 1 (' "$T/jobr.html" \
    || fail "the report of the job dump shows no restart"
for n in n1 n2 n3; do stop_node "$n"; done

# --- telem_view over the nodes' flush logs, no dump made -----------------------
# SIGTERM drained every node's store into its log (RUNDIR/NODE/log): the
# run directory, read as the nodes' segment files, answers every request
# as the dumps do.  One node's log directory alone holds only that node.
ls "$TELEM_RUNDIR"/n1/log/*.tseg >/dev/null 2>&1 \
    || skip "telemd wrote no flush log in $TELEM_RUNDIR/n1/log"
start_http logview telem_view "$TELEM_RUNDIR"
$CLIENT same "$VIEW" "$URL" "$T0" "$S_MS" "$E_MS" \
    || fail "telem_view over the flush logs differs from over the dumps"
"$TELEM_BIN/telem_view" --export csv --metric it.cpu "$TELEM_RUNDIR/n2/log" \
    >"$T/log2.csv" || fail "export of n2's log"
[ "$(tail -n +2 "$T/log2.csv" | cut -d, -f1 | sort -u)" = n2 ] \
    || fail "n2's log: $(head -3 "$T/log2.csv")"
"$TELEM_BIN/telem_view" --export csv --metric it.cpu "$D/all.tdump" \
    | grep '^n2,' | sort >"$T/dump2.csv"
[ -s "$T/dump2.csv" ] && tail -n +2 "$T/log2.csv" | sort \
    | cmp -s - "$T/dump2.csv" || fail "n2's log and the dump differ"
mkdir "$T/empty"
rc=0
"$TELEM_BIN/telem_view" --export csv "$T/empty" >/dev/null 2>"$T/empty.err" \
    || rc=$?
[ "$rc" = 1 ] && grep -q "holds no segment" "$T/empty.err" \
    || fail "an empty directory: exit $rc: $(cat "$T/empty.err")"
echo "it_view: ok"
