#!/usr/bin/env bash
# run.sh - build telem's benchmarks (a separate CMake project) and run them,
# printing each benchmark's own tables and, at the end, one summary table
# of every headline figure: its target, the measured value, the peer or
# limit it is measured against in the same run, the ratio and whether the
# target is met.  docs/performance.md records a run.
#
# Usage: bench/run.sh [--all] [-d SECONDS] [-D] [-h]
#   --all       every benchmark: also the dictionary against Redis (-D),
#               the fan-in curves on network-namespaced nodes with relays
#               of 32 (bench/fanin.sh -R 32, as root; about 10 minutes)
#               and, under Slurm (skipped without slurm-wlm), the same
#               fan-in harness at 16 and 60 nodes with relays of 8
#               (bench/fanin.sh -S -R 8) and the start-up of jobs of 8
#               and 32 nodes (bench/slurm_startup.sh)
#   -d SECONDS  how long bench_telemd_cpu.sh measures (default 30)
#   -D          also run bench/dict_vs_redis.sh (the dictionary against
#               Redis and its restore throughput; ~5 minutes; installs
#               redis-server and libhiredis-dev when root and missing)
# Environment: BENCH_BUILD (build directory, default bench/build);
# BENCH_DETECT=0 skips bench_detect (about 4 minutes of real rounds);
# BENCH_STRAGGLER=0 skips bench_straggler (about 7 minutes of real steps);
# BENCH_CURVE=0 skips bench_curve (CURVE against plain TCP, about 45 s;
# bench/bench_curve.sh runs it several times and prints medians).
# bench_restart starts small local jobs under telem_launch (~10 s).
# BENCH_OVERHEAD=0 skips bench_overhead.sh (telemd beside collectd and
# node_exporter, two phases of -d seconds; installs collectd-core and
# prometheus-node-exporter when root and missing); BENCH_APP=0 skips
# bench_app_cost (the application's cost, ~2 minutes; its HTTP+SQLite
# baseline needs libsqlite3-dev, installed when root and missing).
# Before each benchmark a line "## NAME  nproc=N  load=L1 L5 L15" gives the
# machine's core count and load at its start.  The output is also written
# to $BENCH_BUILD/results.txt and the summary to $BENCH_BUILD/summary.md.
# Benchmarks print their headline figures as lines
#   FIGURE<TAB>name<TAB>target<TAB>measured<TAB>peer<TAB>ratio<TAB>met
# which the summary collects (bench_figure() in bench_common.c).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${BENCH_BUILD:-$here/build}"
cpu_seconds="${BENCH_CPU_SECONDS:-30}"
dict=0
all=0
args=()
for a in "$@"; do
    case "$a" in
    --all) all=1; dict=1 ;;
    --help) set -- -h; args=(-h); break ;;
    *) args+=("$a") ;;
    esac
done
set -- "${args[@]+"${args[@]}"}"
while getopts "d:Dh" opt; do
    case "$opt" in
    d) cpu_seconds="$OPTARG" ;;
    D) dict=1 ;;
    h) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
if (( $# )); then
    echo "run.sh: unexpected argument '$1' (see bench/run.sh --help)" >&2
    exit 2
fi

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

# run_one NAME CMD...: the header line, then the benchmark; a failing
# benchmark is reported and the others still run.
failed=()
run_one() {
    local name="$1"; shift
    echo
    echo "## $name  nproc=$(nproc)  load=$(cut -d' ' -f1-3 /proc/loadavg)  $(date -u +%FT%TZ)"
    local rc=0
    "$@" || rc=$?
    if [ "$rc" = 77 ]; then
        echo "run.sh: $name skipped (it says why above)"
    elif [ "$rc" != 0 ]; then
        echo "run.sh: $name failed (exit $rc)"
        failed+=("$name")
    fi
}

# summary FILE: the FIGURE lines of FILE as one markdown table.
summary() {
    awk -F'\t' 'BEGIN {
        print "| figure | target | measured | peer or limit | ratio | verdict |"
        print "|---|---|---|---|---|---|"
    }
    $1 == "FIGURE" && NF >= 7 {
        printf "| %s | %s | %s | %s | %s | %s |\n", $2, $3, $4, $5, $6, $7
        n++; if ($7 == "met") met++; if ($7 == "missed") missed++
    }
    END { printf "\n%d figures: %d met, %d missed, %d without a target\n",
                 n, met, missed, n - met - missed }' "$1"
}

{
    echo "# bench/run.sh $([ "$all" = 1 ] && echo --all) -d $cpu_seconds   (git $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'))"
    for b in bench_add_data bench_push bench_ingest bench_query bench_agg \
             bench_prom bench_watch bench_restart bench_block \
             bench_snapshot; do
        run_one "$b" "$build/bin/$b"
    done
    # The Python API against the C one (bench_add_data --c-reference).
    run_one bench_python.py /usr/bin/python3 "$here/bench_python.py" \
        --bin "$build/bin" --python "$build/python"
    # The Python analysis client and dictionary against the C calls.
    run_one bench_python_client.py env PYTHONPATH="$build/python" \
        TELEM_BIN="$build/bin" /usr/bin/python3 "$here/bench_python_client.py"
    if [ "${BENCH_DETECT:-1}" != 0 ]; then
        run_one bench_detect "$build/bin/bench_detect"  # ~4 min of rounds
    fi
    if [ "${BENCH_STRAGGLER:-1}" != 0 ]; then
        run_one bench_straggler "$build/bin/bench_straggler"  # ~7 min of steps
    fi
    if [ "${BENCH_CURVE:-1}" != 0 ]; then
        run_one bench_curve "$build/bin/bench_curve"    # ~45 s
    fi
    run_one bench_seg "$build/bin/bench_seg"        # ~15 s, ~330 MB of disk
    run_one bench_flush "$build/bin/bench_flush"
    run_one bench_drain "$build/bin/bench_drain"
    run_one bench_reload "$build/bin/bench_reload"  # ~12 s
    run_one bench_telemd_cpu.sh \
        "$here/bench_telemd_cpu.sh" -d "$cpu_seconds" -t "$build/bin/telemd"
    if [ "${BENCH_OVERHEAD:-1}" != 0 ]; then
        run_one bench_overhead.sh \
            "$here/bench_overhead.sh" -d "$cpu_seconds" -b "$build"
    fi
    if [ "${BENCH_APP:-1}" != 0 ]; then
        run_one bench_app_cost "$build/bin/bench_app_cost"
    fi
    run_one bench_run.sh "$here/bench_run.sh" "$build"
    if [ "$dict" = 1 ]; then
        run_one dict_vs_redis.sh env BENCH_BUILD="$build" "$here/dict_vs_redis.sh"
    fi
    if [ "$all" = 1 ]; then
        run_one fanin.sh env BENCH_BUILD="$build" "$here/fanin.sh" -R 32
        # Under Slurm's multi-slurmd set-up, namespaced nodes: the fan-in
        # harness (one srun step a daemon kind), then the start-up alone.
        run_one fanin-slurm env BENCH_BUILD="$build" "$here/fanin.sh" -S -R 8
        run_one slurm_startup.sh "$here/slurm_startup.sh" -b "$build/bin" \
            -r 3 8 32
    fi
    echo
    if (( ${#failed[@]} )); then
        echo "# failed: ${failed[*]}"
    fi
    echo "# total $(( $(date +%s) - started )) s"
} 2>&1 | tee "$build/results.txt"

{
    echo
    echo "## Summary: every headline figure of this run"
    echo
    summary "$build/results.txt"
} | tee "$build/summary.md"
