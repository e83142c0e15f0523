# it_prometheus.sh - telemd's /metrics against Prometheus's own tools: two
# real telemd with --http-port 0, samples pushed by real processes,
# `promtool check metrics` on what they serve, Prometheus's OpenMetrics
# parser on the other format, a real Prometheus server scraping both nodes
# every second and answering PromQL with exactly the values pushed, bad
# HTTP that leaves telemd serving, and telem_launch --prometheus-config
# followed by Prometheus across a restart.
#
# What is pushed (through libtelem, by a small program built here against
# the build's telem.h; and examples/add_data_demo):
#   n1: prom_jobs_total{kind="a\"b\\c"}, a counter (telem_counter_add) that
#       four processes add 1.5 to ten times each: 60 once they have
#       finalized (every push acknowledged); described with a doc;
#       prom_temp_celsius{where="a\"b\\c"} = 21.5, a gauge with a unit and
#       a doc holding quotes, a backslash and a new line;
#   n2: prom_demo{where="x\"y\\z"} = 4 (add_data_demo --count 5);
#       prom_queue{queue="in"} = 7 (telem_gauge_set), never described:
#       untyped.
# Then: text 0.0.4 passes promtool with no warning; OpenMetrics (asked by
# Prometheus's own Accept header) parses in prometheus_client's strict
# parser and ends with "# EOF"; gzip comes compressed and passes promtool
# once decompressed; the exact sample lines are in the text; wrong methods,
# unknown paths, huge headers, junk and a stalled client leave telemd
# serving.  A Prometheus server on an ephemeral port of 127.0.0.1 with a
# generated configuration (scrape_interval 1s, both nodes) answers
# /api/v1/query with exactly those values and labels.  Then a local job of
# telem_launch (2 nodes and a reserve) writes its Prometheus configuration;
# a second Prometheus started on that file sees every node's telemd, and
# after n2's telemd is killed and the job restarts on n3 it follows the
# rewritten targets by itself: n3 active, n2 gone.
#
# prometheus and promtool (Debian's prometheus) and, for the OpenMetrics
# parser, python3-prometheus-client are installed where missing
# (tests/peer_install.sh, as root on Debian); without prometheus, where
# installing it cannot happen (not root, no apt, the install failed, or
# TELEM_PROMETHEUS_INSTALL=0), the test is skipped with the reason.  Every
# wait is on behaviour, bounded only to fail instead of hanging.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLIENT="python3 $HERE/prom_client.py"
unset TELEM_LEVEL SLURM_JOB_NODELIST || true
for p in telemd telem_launch add_data_demo; do
    [ -x "$TELEM_BIN/$p" ] || fail "$p is not built"
done

# ---- Prometheus --------------------------------------------------------------
has_om_parser() {
    python3 -c 'import prometheus_client.openmetrics.parser' 2>/dev/null \
        || /usr/bin/python3 -c 'import prometheus_client.openmetrics.parser' \
            2>/dev/null
}
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
    why=$(bash "$HERE/peer_install.sh" --opt-out TELEM_PROMETHEUS_INSTALL \
          prometheus python3-prometheus-client) \
        || skip "prometheus and promtool are not installed: $why"
    command -v prometheus >/dev/null && command -v promtool >/dev/null \
        || skip "prometheus was installed but is not on PATH"
elif ! has_om_parser; then
    # Without it the OpenMetrics checks below are left to the server.
    why=$(bash "$HERE/peer_install.sh" --opt-out TELEM_PROMETHEUS_INSTALL \
          python3-prometheus-client) || echo "note: $why"
fi
# The OpenMetrics parser lives in Debian's python3 (python3-prometheus-client).
OMPY=
for py in python3 /usr/bin/python3; do
    if "$py" -c 'import prometheus_client.openmetrics.parser' 2>/dev/null; then
        OMPY=$py
        break
    fi
done

# ---- a pushing program, built against this build's telem.h -------------------
cat >"$T/push.c" <<'EOF'
/* push OP ARGS... : describe NAME TYPE UNIT DOC | counter NAME DELTA TIMES |
 * gauge NAME VALUE | tagged METRIC VALUE KEY VALUE; then telem_finalize().
 * Exit 0 when every call was accepted and the finalize confirmed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <telem/telem.h>

int main(int argc, char **argv) {
    int bad = 0;
    for (int i = 1; i < argc;) {
        const char *op = argv[i];
        if (!strcmp(op, "describe") && i + 4 < argc) {
            bad |= telem_describe(argv[i + 1], argv[i + 2], argv[i + 3],
                                  argv[i + 4]) != 0;
            i += 5;
        } else if (!strcmp(op, "counter") && i + 3 < argc) {
            for (int k = 0; k < atoi(argv[i + 3]); k++)
                bad |= telem_counter_add(argv[i + 1],
                                         strtod(argv[i + 2], NULL)) != 0;
            i += 4;
        } else if (!strcmp(op, "gauge") && i + 2 < argc) {
            bad |= telem_gauge_set(argv[i + 1],
                                   strtod(argv[i + 2], NULL)) != 0;
            i += 3;
        } else if (!strcmp(op, "tagged") && i + 4 < argc) {
            bad |= telem_add_data_tags(argv[i + 1], strtod(argv[i + 2], NULL),
                                       0, 1, 1, argv[i + 3],
                                       argv[i + 4]) != 0;
            i += 5;
        } else {
            fprintf(stderr, "push: bad arguments at '%s'\n", op);
            return 2;
        }
    }
    int rc = telem_finalize();
    if (bad || rc)
        fprintf(stderr, "push: refused %d, finalize %d\n", bad, rc);
    return bad || rc;
}
EOF
build=$(dirname "$TELEM_BIN")
san=()
[ "$(build_cache TELEM_SANITIZE)" = ON ] \
    && san=(-fsanitize=address,undefined -fno-omit-frame-pointer)
"$(build_cache CMAKE_C_COMPILER)" "${san[@]}" -o "$T/push" "$T/push.c" \
    -I"$build/include" -L"$build/lib" -Wl,-rpath,"$build/lib" -ltelem \
    2>"$T/cc.log" || fail "cannot build the pushing program: $(cat "$T/cc.log")"
PUSH=$T/push

# ---- two nodes, samples pushed ------------------------------------------------
start_node n1 --level 4 --http-port 0
start_node n2 --level 4 --http-port 0
url() { sed -n 's/^metrics\t//p' "$T/$1.out"; }
U1=$(url n1)
U2=$(url n2)
[[ $U1 == http://127.0.0.1:*/metrics ]] || fail "n1 printed no metrics URL: $U1"
grep -qx "metrics	$U2" "$TELEM_RUNDIR/n2/endpoints" \
    || fail "n2's endpoints file lacks its metrics URL"

COUNTER='prom_jobs_total{kind="a\"b\\c"}'
DOC=$'Temperature "near" the \\ rack,\nsecond line.'
TELEM_NODE=n1 "$PUSH" describe prom_jobs_total counter "" \
    "Jobs done on the node, summed over its processes." \
    describe prom_temp_celsius gauge celsius "$DOC" \
    tagged prom_temp_celsius 21.5 where 'a"b\c' || fail "push on n1"
pids=()
for _ in 1 2 3 4; do
    TELEM_NODE=n1 "$PUSH" counter "$COUNTER" 1.5 10 & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a counter pusher failed"; done
TELEM_NODE=n2 TELEM_LEVEL=1 "$TELEM_BIN/add_data_demo" --count 5 \
    --metric prom_demo --tag 'where=x"y\z' --quiet || fail "add_data_demo on n2"
TELEM_NODE=n2 "$PUSH" gauge 'prom_queue{queue="in"}' 7 || fail "push on n2"

# ---- what telemd serves -------------------------------------------------------
get() {   # get URL OUT [--om] [--gzip]: the answer's status line on stdout
    $CLIENT get "$@" || fail "GET $1"
}
[ "$(get "$U1" "$T/n1.txt")" = $'200\ttext/plain; version=0.0.4; charset=utf-8\t' ] \
    || fail "n1: not text 0.0.4"
get "$U2" "$T/n2.txt" >/dev/null
for n in n1 n2; do
    promtool check metrics <"$T/$n.txt" >"$T/promtool.$n" 2>&1 \
        || fail "promtool check metrics on $n: $(cat "$T/promtool.$n")"
    [ ! -s "$T/promtool.$n" ] || fail "promtool warns on $n: $(cat "$T/promtool.$n")"
done
has() {   # has FILE LINE: the exact line is there
    grep -Fqx -- "$2" "$1" || fail "$1 lacks: $2"
}
has "$T/n1.txt" 'prom_jobs_total{host="n1",kind="a\"b\\c"} 60'
has "$T/n1.txt" '# TYPE prom_jobs_total counter'
has "$T/n1.txt" '# HELP prom_jobs_total Jobs done on the node, summed over its processes.'
has "$T/n1.txt" '# HELP prom_temp_celsius Temperature "near" the \\ rack,\nsecond line.'
grep -Eqx 'prom_temp_celsius\{host="n1",pid="[0-9]+",where="a\\"b\\\\c"\} 21.5' \
    "$T/n1.txt" || fail "n1 lacks prom_temp_celsius: $(grep prom_temp "$T/n1.txt")"
grep -Eqx 'prom_demo\{host="n2",pid="[0-9]+",where="x\\"y\\\\z"\} 4' "$T/n2.txt" \
    || fail "n2 lacks prom_demo: $(grep prom_demo "$T/n2.txt")"
has "$T/n2.txt" '# TYPE prom_queue untyped'
has "$T/n2.txt" '# TYPE telemd_ingested_total counter'

st=$(get "$U1" "$T/n1.om" --om)
[ "$st" = $'200\tapplication/openmetrics-text; version=1.0.0; charset=utf-8\t' ] \
    || fail "n1: not OpenMetrics with Prometheus's Accept header: $st"
[ "$(tail -n 1 "$T/n1.om")" = "# EOF" ] || fail "OpenMetrics without # EOF"
has "$T/n1.om" '# TYPE prom_jobs counter'
has "$T/n1.om" 'prom_jobs_total{host="n1",kind="a\"b\\c"} 60'
has "$T/n1.om" '# UNIT prom_temp_celsius celsius'
has "$T/n1.om" '# HELP prom_temp_celsius Temperature \"near\" the \\ rack,\nsecond line.'
if [ -n "$OMPY" ]; then
    for n in 1 2; do
        get "$(url n$n)" "$T/n$n.om" --om >/dev/null
        "$OMPY" "$HERE/prom_client.py" om "$T/n$n.om" \
            >"$T/om.$n" 2>&1 || fail "OpenMetrics parser on n$n: $(tail -n 5 "$T/om.$n")"
    done
    grep -qx "prom_jobs counter  1" "$T/om.1" || fail "parsed: $(cat "$T/om.1")"
    grep -qx "prom_temp_celsius gauge celsius 1" "$T/om.1" || fail "parsed: $(cat "$T/om.1")"
else
    echo "note: python3-prometheus-client is not installed: OpenMetrics checked" \
         "by the Prometheus server's scrape only"
fi
st=$(get "$U2" "$T/n2.gz.txt" --gzip)
[ "$st" = $'200\ttext/plain; version=0.0.4; charset=utf-8\tgzip' ] \
    || fail "n2: no gzip when asked: $st"
promtool check metrics <"$T/n2.gz.txt" >"$T/promtool.gz" 2>&1 && [ ! -s "$T/promtool.gz" ] \
    || fail "promtool on the gzip'd answer: $(cat "$T/promtool.gz")"
grep -q '^prom_demo{' "$T/n2.gz.txt" || fail "gzip'd answer lacks prom_demo"

# ---- bad HTTP ----------------------------------------------------------------
$CLIENT hostile "$U1" || fail "bad HTTP on n1"
kill -0 "${NODE_PID[n1]}" 2>/dev/null || fail "telemd n1 died of bad HTTP"
"$TELEM_BIN/telem_client" status >/dev/null || fail "n1 and n2 stopped answering queries"

# ---- a real Prometheus server --------------------------------------------------
# start_prom NAME CONFIG: Prometheus on a free port of 127.0.0.1 (another
# free port if that one was taken meanwhile); sets PROM to its URL.
start_prom() {
    local name=$1 config=$2 port pid
    promtool check config "$config" >"$T/$name.check" 2>&1 \
        || fail "promtool check config $config: $(cat "$T/$name.check")"
    for _ in 1 2 3; do
        port=$($CLIENT free-port)
        prometheus --config.file="$config" --storage.tsdb.path="$T/$name-data" \
            --web.listen-address="127.0.0.1:$port" --log.level=warn \
            >"$T/$name.log" 2>&1 &
        pid=$!
        EXTRA_PIDS+=("$pid")
        PROM=http://127.0.0.1:$port
        if $CLIENT ready "$PROM" 60 2>"$T/$name.ready"; then
            kill -0 "$pid" 2>/dev/null && return 0
        fi
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    fail "Prometheus did not start: $(tail -n 5 "$T/$name.log")"
}
target() { local u=${1#http://}; echo "${u%/metrics}"; }
cat >"$T/prom.yml" <<EOF
scrape_configs:
  - job_name: telemd
    scrape_interval: 1s
    scrape_timeout: 1s
    static_configs:
      - targets: ["$(target "$U1")", "$(target "$U2")"]
EOF
start_prom prom "$T/prom.yml"
$CLIENT targets "$PROM" 60 "{\"up\": [{\"instance\": \"$(target "$U1")\"},
    {\"instance\": \"$(target "$U2")\"}]}" || fail "Prometheus does not scrape both nodes"
$CLIENT expect "$PROM" 60 '[
  {"query": "prom_jobs_total", "labels": {"host": "n1", "kind": "a\"b\\c",
   "job": "telemd"}, "value": 60},
  {"query": "prom_temp_celsius", "labels": {"host": "n1", "where": "a\"b\\c"},
   "value": 21.5},
  {"query": "prom_demo", "labels": {"host": "n2", "where": "x\"y\\z"},
   "value": 4},
  {"query": "prom_queue", "labels": {"host": "n2", "queue": "in"}, "value": 7},
  {"query": "sum(prom_jobs_total)", "labels": {}, "value": 60},
  {"query": "count(up == 1)", "labels": {}, "value": 2}
]' || fail "PromQL answers"

# ---- telem_launch --prometheus-config ----------------------------------------
mkdir "$T/job"
cat >"$T/job/prog.sh" <<'EOF'
#!/usr/bin/env bash
# The job's program: counts itself once, then waits for the test's "go".
"$PUSH" counter 'prom_runs_total{phase="start"}' 1 1 || exit 1
while [ ! -e "$JOB/go-$TELEM_RESTART_COUNT" ]; do sleep 0.05; done
EOF
chmod +x "$T/job/prog.sh"
export PUSH JOB=$T/job
JR=$T/jobrun
mkdir -m 700 "$JR"
TELEM_NODEFILE=$JR/nodes "$TELEM_BIN/telem_launch" --rundir "$JR" --local 3 \
    --nodes 2 --resilient --daemon-failure exclude --no-agg --grace 2 \
    --telemetry-level 1 --prometheus-config "$T/job/prom.yml" -- "$T/job/prog.sh" \
    >"$T/launch.out" 2>"$T/launch.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")
ready3() { [ "$(grep -c '^- targets' "$T/job/prom.targets.yml")" = 3 ]; }
wait_for ready3 || fail "the job's targets file: $(cat "$T/job/prom.targets.yml" 2>&1)"
grep -q 'job_name: "telem"' "$T/job/prom.yml" || fail "no scrape job in the job's configuration"
start_prom jobprom "$T/job/prom.yml"
$CLIENT targets "$PROM" 60 '{"up": [
    {"node": "n1", "telem_state": "active", "job": "telem"},
    {"node": "n2", "telem_state": "active"},
    {"node": "n3", "telem_state": "idle"}]}' || fail "Prometheus on the job's file"
$CLIENT expect "$PROM" 60 '[
  {"query": "prom_runs_total", "labels": {"host": "n1", "phase": "start"}, "value": 1},
  {"query": "prom_runs_total", "labels": {"host": "n2", "phase": "start"}, "value": 1}
]' || fail "the job's counters through Prometheus"
kill -9 "$(sed -n 's/^pid\t//p' "$JR/n2/endpoints")"
$CLIENT targets "$PROM" 90 '{"up": [
    {"node": "n1", "telem_state": "active"},
    {"node": "n3", "telem_state": "active"}],
  "absent": [{"node": "n2"}]}' || fail "Prometheus did not follow the restart"
$CLIENT expect "$PROM" 60 '[
  {"query": "prom_runs_total", "labels": {"host": "n3", "phase": "start"}, "value": 1}
]' || fail "the restarted program's counter on n3"
touch "$T/job/go-1"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "the job ended $rc: $(tail -n 5 "$T/launch.log")"
grep -qx '\[\]' "$T/job/prom.targets.yml" || fail "targets left after the job"
echo "it_prometheus: ok"
