#!/usr/bin/env bash
# scale_work.sh - a finished job looked at from its dump.
#
#   bash examples/scale_work.sh [SIZES [STEPS]]
#
# A local job of three virtual nodes under telem_launch runs the
# scale_work example (dense linear solves of growing order, its own step
# times, GFLOP/s, residuals and pivots recorded with telem_add_data) at
# telemetry level 4, beside each node's own metrics.  With --dump the
# launcher writes the whole job's history to one dump file when the job
# ends, before the node daemons stop (as Dragon's db-dump example does).
# Then the job is gone, and telem_view serves the dump with telem_agg's
# OpenTSDB API and dashboard: the script prints the URL and answers a
# sample query, exports the points as CSV, writes the job report from the
# dump, and stops the viewer.  Set KEEP_VIEW=1 to keep serving (Ctrl-C
# stops it), for a browser or Grafana.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${TELEM_BIN:-${TELEM_BUILD_DIR:-$top/build}/bin}
[ -x "$bin/telem_launch" ] || bash "$top/examples/setup.sh"
sizes=${1:-64,128,256}
steps=${2:-20}

work=$(mktemp -d /tmp/telem-scale.XXXXXX)
view=
cleanup() {
    [ -n "$view" ] && kill -TERM "$view" 2>/dev/null && wait "$view" || true
    rm -rf "$work"
}
trap cleanup EXIT
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "1. A job of 3 local nodes runs scale_work (sizes $sizes, $steps steps), dumped at its end"
mkdir -m 700 "$work/run"
"$bin/telem_launch" --rundir "$work/run" --local 3 -L 4 --no-agg \
    --dump "$work/dumps" -- "$bin/scale_work" --sizes "$sizes" \
    --steps "$steps" 2>"$work/launch.log"
grep "dump written" "$work/launch.log" | sed 's/^.*info: //'
dump=$(ls "$work"/dumps/job-*.tdump)

step "2. telem_view serves the finished job from $dump"
"$bin/telem_view" --port 0 "$dump" >"$work/view.out" 2>"$work/view.log" &
view=$!
for _ in $(seq 200); do grep -q '^telem_view: serving' "$work/view.out" && break; sleep 0.05; done
url=$(sed -n 's/^telem_view: serving \([^ ]*\) .*/\1/p' "$work/view.out")
[ -n "$url" ] || { cat "$work/view.log"; exit 1; }
echo "dashboard and OpenTSDB API: $url   (Grafana: an OpenTSDB data source at that URL, version 2.4)"
start=$(curl -s "${url}telem/job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["job"]["range"]["start_ms"])')
echo "\$ curl -s '${url}api/query?start=$start&m=max:scale_work_gflops{size=*}'"
curl -s "${url}api/query?start=$start&m=max:scale_work_gflops%7Bsize=*%7D" \
    | python3 -c 'import json,sys
for r in json.load(sys.stdin):
    v = list(r["dps"].values())
    print("  size %-5s %3d points, best %.2f GFLOP/s" % (r["tags"]["size"], len(v), max(v)))'

step "3. The points as CSV, and the job report from the dump"
"$bin/telem_view" --export csv -o "$work/scale_work.csv" \
    --metric scale_work_step_seconds "$dump"
head -n 4 "$work/scale_work.csv"
"$bin/telem_client" report --dump "$dump" -o "$work/job.html"

if [ "${KEEP_VIEW:-0}" = 1 ]; then
    echo "serving $url until Ctrl-C"
    wait "$view"
fi
