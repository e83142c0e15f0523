# it_browser_rows.sh - the dashboard's rows below the node metrics (per-core
# CPU, pressure, InfiniBand, GPU health with XID events) as headless
# Chromium renders them, live and in the job report, and the Grafana
# dashboard's panels of those rows against the same job.
#
# A real local job (telem_launch --local 2, level 3) whose telemd load the
# test-only NVML (tests/nvml_test, TELEM_NVML_LIB) with a script per node:
# n1's GPU 1 throttles (hw_thermal_slowdown) and counts corrected ECC
# errors, n2's GPU 0 gets XID 79 1.5 s after start.  Each telemd reads
# /sys from its own copy of the InfiniBand fixture of tests/data/
# samplers_hw (telem_launch --sys-root with {node}): mlx5_0 port 1
# active, mlx5_1 port 1 down; while the job runs the test advances the
# mlx5_0 data counters of both nodes and the symbol errors of n2's, in
# place, as a port's driver does.  Once telem_agg answers the XID, the
# per-core series and those counters risen, the page must show: a heat
# map per node with one row per core the node records; the pressure
# charts where this kernel has /proc/pressure (else the row's "no
# pressure" line); the InfiniBand charts: state with both ports of both
# nodes on an axis holding 1 and 4, n2's mlx5_0 errors beside one folded
# line for the ports without any, data rates in the millions of bytes/s;
# the GPU health charts, each drawn, ECC with n1/gpu1 beside one folded
# line, the all-zero remapped rows as one line on a 0-1 axis, the XID
# listed as "XID 79: GPU has fallen off the bus" on n2/gpu0 and marked on
# every GPU chart at the time its counter rose, its label beside the line
# and not over it.  A screenshot must hold the XID marker's colour and
# the heat maps'.  Then every panel of docs/grafana/telem-job.json is
# queried as Grafana does (tests/agg_client.py dashboard), with the rows'
# metrics that the job has wanted with data from both nodes.  Then the
# report, from its file, checked as the live page.
# TELEM_SHOT_DIR, if set, receives the screenshots.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
L=$TELEM_BIN/telem_launch
C=$TELEM_BIN/telem_client
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=/usr/bin/python3
LIB=$(dirname "$TELEM_BIN")/tests/nvml_test/libnvml_test.so
OUT=$T/out
mkdir "$OUT"
unset TELEM_LEVEL TELEM_NODEFILE SLURM_JOB_NODELIST || true
[ -f "$LIB" ] || fail "the test NVML is not built: $LIB"
for p in telem_launch telem_agg telem_client; do
    [ -x "$TELEM_BIN/$p" ] || fail "$p is not built"
done

# The XID meanings the page shows are the detector's.
rows() { "$PY" "$TOP/tests/browser_rows.py" "$@"; }
rows xidtable "$TOP" || fail "the XID tables of telem_rows.js and gpu-health differ"

# ---- the browser (tests/browser.sh) ---------------------------------------------
source "$(dirname "${BASH_SOURCE[0]}")/browser.sh"

# ---- the job --------------------------------------------------------------------
for n in n1 n2; do
    {
        echo "gpus 2"
        for g in 0 1; do
            echo "gpu $g temp 4$g"
            echo "gpu $g power_mw 2${g}0000"
            echo "gpu $g power_limit_mw 300000"
            echo "gpu $g clocks_event 0"
            echo "gpu $g ecc 0 0"
            echo "gpu $g remapped 0 0 0 0"
        done
        if [ "$n" = n1 ]; then
            echo "gpu 1 clocks_event 0x40"
            echo "at 1000 gpu 1 ecc 3 0"
            echo "at 2000 gpu 1 ecc 7 0"
        else
            echo "xid 0 79 1500"
        fi
    } >"$T/nvml-$n.script"
done
cat >"$T/prog.sh" <<'EOF2'
#!/usr/bin/env bash
while [ ! -e "$OUT/go" ]; do sleep 0.05; done
EOF2
chmod +x "$T/prog.sh"
# Each node's /sys (telem_launch --sys-root "$T/sys-{node}"): the
# InfiniBand fixture only (the other /sys samplers find nothing there and
# are skipped).
for n in n1 n2; do
    mkdir -p "$T/sys-$n/class"
    cp -r "$TOP/tests/data/samplers_hw/good/sys/class/infiniband" "$T/sys-$n/class/"
done
# Traffic on mlx5_0 port 1 until the job ends, n1's twice n2's, and
# symbol errors on n2's.  telemd opens each counter file once and re-reads
# it, so each value is written in place (1<>, no truncation; the values
# only grow, so no old digit is left behind).
ib_traffic() {
    local c1=$T/sys-n1/class/infiniband/mlx5_0/ports/1/counters
    local c2=$T/sys-n2/class/infiniband/mlx5_0/ports/1/counters
    local x=1000 r=2000 e=3 i=0
    while [ ! -e "$OUT/go" ]; do
        x=$((x + 1000000 + (i % 5) * 200000)) r=$((r + 700000 + (i % 3) * 100000))
        ((i % 4 == 0)) && e=$((e + 1 + i % 3))
        printf '%d\n' $((2 * x)) 1<>"$c1/port_xmit_data"
        printf '%d\n' $((2 * r)) 1<>"$c1/port_rcv_data"
        printf '%d\n' "$x" 1<>"$c2/port_xmit_data"
        printf '%d\n' "$r" 1<>"$c2/port_rcv_data"
        printf '%d\n' "$e" 1<>"$c2/symbol_error"
        i=$((i + 1))
        sleep 0.25
    done
}
ib_traffic &
EXTRA_PIDS+=("$!")

export OUT TELEM_BIN TELEM_NVML_LIB=$LIB TELEM_NVML_TEST_SCRIPT=$T/nvml-{node}.script
"$L" --rundir "$TELEM_RUNDIR" --grace 2 --local 2 --telemetry-level 3 \
    --sys-root "$T/sys-{node}" --agg-port 0 -- "$T/prog.sh" >"$T/job.out" 2>"$T/job.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")

wait_s() {
    local end=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < end)) || return 1
        sleep 0.1
    done
}
URLF=$TELEM_RUNDIR/telem_agg/url
wait_s 60 test -s "$URLF" || fail "telem_agg wrote no URL"
U=$(cat "$URLF")
AGG_TOKEN=$(cat "$TELEM_RUNDIR/keys/agg.token") || fail "no job token"
export AGG_TOKEN
wait_s 60 rows ready "$U" "$T/want.json" \
    || fail "the job's series: $(rows ready "$U" "$T/want.json" 2>&1)"
PSI=1
[ -r /proc/pressure/cpu ] || PSI=0

# retry WHAT CMD...: CMD until it passes or the page's time is up; then
# the last three reasons it gave (the last may be only the time limit).
retry() {
    local what=$1
    shift
    until "$@"; do
        cat "$T/check.out" >>"$T/checks.log"
        ((SECONDS < PAGE_END)) || fail "$what: $(tail -n 3 "$T/checks.log")"
        sleep 0.2
    done
}
dom_ok() {
    local html=$1 url=$2
    shift 2
    browse "$html" "$@" --virtual-time-budget=4000 --dump-dom "$url" \
        || { echo "chromium exited $?" >"$T/check.out"; return 1; }
    rows dom "$html" "$T/want.json" "$PSI" >"$T/check.out" 2>&1
}
shot_ok() {
    local shot=$1 url=$2
    shift 2
    rm -f "$shot"
    browse "$T/shot.out" "$@" --virtual-time-budget=4000 \
        --window-size=1280,4200 --screenshot="$shot" "$url" \
        || { echo "chromium exited $?" >"$T/check.out"; return 1; }
    rows png "$shot" >"$T/check.out" 2>&1
}
load_until() {
    local html=$1 shot=$2 url=$3
    shift 3
    PAGE_END=$((SECONDS + 90))
    retry "page $url" dom_ok "$html" "$url" "$@"
    retry "screenshot of $url" shot_ok "$shot" "$url" "$@"
    echo "$(basename "$shot"): $(cat "$T/check.out")"
    if [ -n "${TELEM_SHOT_DIR:-}" ]; then cp "$shot" "$TELEM_SHOT_DIR/"; fi
}

load_until "$T/live.html" "$T/rows-live.png" "$U?token=$AGG_TOKEN"

# ---- Grafana: every panel as Grafana asks, the rows' metrics with data ------------
want=$("$PY" -c 'import json,sys; print(",".join(json.load(open(sys.argv[1]))["grafana"]))' \
       "$T/want.json")
TELEM_AGG_TOKEN_FILE=$TELEM_RUNDIR/keys/agg.token \
    "$PY" "$TOP/tests/agg_client.py" dashboard "$U" "$TOP/docs/grafana/telem-job.json" \
    "$TOP/docs/grafana/datasource.yaml" "$want" n1,n2 >"$T/dash.out" 2>&1 \
    || fail "the Grafana dashboard's panels: $(tail -n 20 "$T/dash.out")"
echo "grafana: every panel answered; with data from n1 and n2: $want"

# ---- the report ----------------------------------------------------------------------
"$C" report -o "$T/job.html" >"$T/report.out" 2>"$T/report.log" \
    || fail "telem_client report: $(cat "$T/report.out" "$T/report.log")"
touch "$OUT/go"
wait_s 60 eval '! kill -0 "$LPID"' || fail "the job did not end"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "telem_launch exited $rc"
load_until "$T/report.html" "$T/rows-report.png" "file://$T/job.html" \
    --host-resolver-rules="MAP * ~NOTFOUND"
echo "it_browser_rows: ok"
