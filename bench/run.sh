#!/usr/bin/env bash
# run.sh - build telem's benchmarks (a separate CMake project) and run them
# all, printing one table per benchmark; docs/performance.md records a run.
#
# Usage: bench/run.sh [-d SECONDS] [-D]
#   -d SECONDS  how long bench_telemd_cpu.sh measures (default 30)
#   -D          also run bench/dict_vs_redis.sh (the dictionary against
#               Redis and its restore throughput; ~5 minutes; installs
#               redis-server and libhiredis-dev when root and missing)
# Environment: BENCH_BUILD (build directory, default bench/build);
# BENCH_DETECT=0 skips bench_detect (about 4 minutes of real rounds);
# BENCH_CURVE=0 skips bench_curve (CURVE against plain TCP, about 45 s;
# bench/bench_curve.sh runs it several times and prints medians).
# bench_restart starts 15 small local jobs under telem_launch (~10 s).
# BENCH_OVERHEAD=0 skips bench_overhead.sh (telemd beside collectd and
# node_exporter, two phases of -d seconds; installs collectd-core and
# prometheus-node-exporter when root and missing); BENCH_APP=0 skips
# bench_app_cost (the application's cost, ~2 minutes; its HTTP+SQLite
# baseline needs libsqlite3-dev, installed when root and missing).
# The tables are also written to $BENCH_BUILD/results.txt.  The whole run
# takes about a minute plus the telemd CPU measurement and bench_detect.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${BENCH_BUILD:-$here/build}"
cpu_seconds="${BENCH_CPU_SECONDS:-30}"
dict=0
while getopts "d:Dh" opt; do
    case "$opt" in
    d) cpu_seconds="$OPTARG" ;;
    D) dict=1 ;;
    *) sed -n '2,21p' "$0"; exit 2 ;;
    esac
done

started=$(date +%s)
mkdir -p "$build"
if [ "${BENCH_APP:-1}" != 0 ] && ! pkg-config --exists sqlite3 2>/dev/null; then
    why=$(bash "$here/../tests/peer_install.sh" libsqlite3-dev) ||
        echo "run.sh: bench_app_cost runs without its HTTP+SQLite baseline: $why"
fi
echo "building benchmarks in $build (log: $build/build.log)"
if ! { cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        && cmake --build "$build" -j2; } > "$build/build.log" 2>&1; then
    tail -40 "$build/build.log" >&2
    echo "run.sh: build failed" >&2
    exit 1
fi

{
    echo "# bench/run.sh -d $cpu_seconds   (git $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'))"
    for b in bench_add_data bench_push bench_ingest bench_query bench_agg \
             bench_prom bench_watch bench_restart bench_block; do
        echo
        "$build/bin/$b"
    done
    echo
    "$build/bin/bench_snapshot"       # the one-time system snapshot
    if [ "${BENCH_DETECT:-1}" != 0 ]; then
        echo
        "$build/bin/bench_detect"     # about 4 minutes of real collector rounds
    fi
    if [ "${BENCH_CURVE:-1}" != 0 ]; then
        echo
        "$build/bin/bench_curve"      # CURVE against plain TCP: about 45 s
    fi
    echo
    "$build/bin/bench_seg"            # the flush log: ~15 s, ~330 MB of disk
    echo
    "$build/bin/bench_reload"         # telemd start over an hour of log: ~12 s
    echo
    "$here/bench_telemd_cpu.sh" -d "$cpu_seconds" -t "$build/bin/telemd"
    echo
    if [ "${BENCH_OVERHEAD:-1}" != 0 ]; then
        "$here/bench_overhead.sh" -d "$cpu_seconds" -b "$build"
        echo
    fi
    if [ "${BENCH_APP:-1}" != 0 ]; then
        "$build/bin/bench_app_cost"
        echo
    fi
    "$here/bench_run.sh" "$build"
    echo
    if [ "$dict" = 1 ]; then
        BENCH_BUILD="$build" "$here/dict_vs_redis.sh"
        echo
    fi
    echo "# total $(( $(date +%s) - started )) s"
} 2>&1 | tee "$build/results.txt"
