#!/usr/bin/env bash
# bench_run.sh - what telem_run costs the program it runs, as ratios from
# one run:
#   1. telem_run -s on a system-call-heavy program (bench_run_sys: N rounds
#      of a 64-byte write to /dev/null and read from /dev/zero) against
#      `strace -f -c` on the same program and against the program alone:
#      the wall time each adds, and telem_run's added time over strace's
#      (target <= 1.0).
#   2. telem_run -m on an 8-byte MPI ping-pong between two ranks
#      (bench_run_pingpong, timed inside the program): the time per round
#      trip with the library against without (target <= 2 %), and the
#      library's own cost per call, from sends to MPI_PROC_NULL (which
#      move nothing), with the slowdown those four calls per round trip
#      account for.
# Each figure is the median of R runs, the variants interleaved run by run
# so a change in the machine's load touches all of them alike; for the
# ping-pong, which another tenant of the machine slows by 2x in whole runs,
# the best run of each is printed beside the median.  A telemd
# runs as the node's agent, so the counts really are pushed.
#
# Usage: bench/bench_run.sh [BUILD]   (default: bench/build, as run.sh
#                                      builds it)
# Environment: BENCH_RUN_RUNS (R, default 5), BENCH_RUN_CALLS (N, default
# 100000), BENCH_RUN_TRIPS (round trips, default 200000), BENCH_RUN_CPU
# (a CPU to run part 1 on, with taskset: the program and its tracer then
# hand over on one CPU, as on an idle machine, and the figures do not
# depend on what else the machine runs; default: not pinned).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build=${1:-$here/build}
bin=$build/bin
runs=${BENCH_RUN_RUNS:-5}
calls=${BENCH_RUN_CALLS:-100000}
trips=${BENCH_RUN_TRIPS:-200000}
for p in telem_run telemd bench_run_sys; do
    [ -x "$bin/$p" ] || { echo "bench_run: $bin/$p is not built" >&2; exit 1; }
done

tmp=$(mktemp -d)
export TELEM_RUNDIR=$tmp/run TELEM_NODEFILE=$tmp/nodes TELEM_NODE=bench
mkdir -m 700 "$TELEM_RUNDIR"
"$bin/telemd" --node bench --nodefile "$TELEM_NODEFILE" >"$tmp/telemd.out" \
    2>"$tmp/telemd.log" &
telemd=$!
trap 'kill $telemd 2>/dev/null; wait $telemd 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 200); do grep -qx ready "$tmp/telemd.out" && break; sleep 0.05; done
grep -qx ready "$tmp/telemd.out" || { echo "bench_run: telemd did not start" >&2; exit 1; }

# wall_ns CMD...: the command's wall time in ns (output discarded).
wall_ns() {
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    echo $((t1 - t0))
}

minimum() {
    printf '%s\n' "$@" | sort -n | head -n 1
}

median() {
    printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 }
        END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ---- 1. system calls ---------------------------------------------------------
have_strace=0
command -v strace >/dev/null && have_strace=1
pin=()
[ -n "${BENCH_RUN_CPU:-}" ] && pin=(taskset -c "$BENCH_RUN_CPU")
plain=() traced=() straced=()
for _ in $(seq "$runs"); do
    plain+=("$(wall_ns "${pin[@]}" "$bin/bench_run_sys" "$calls")")
    traced+=("$(wall_ns "${pin[@]}" "$bin/telem_run" -s -- "$bin/bench_run_sys" "$calls")")
    if ((have_strace)); then
        straced+=("$(wall_ns "${pin[@]}" strace -f -c -o /dev/null "$bin/bench_run_sys" "$calls")")
    fi
done
p=$(median "${plain[@]}")
t=$(median "${traced[@]}")
echo "telem_run -s: $((2 * calls)) system calls (bench_run_sys $calls), median of $runs runs${pin[*]:+ (${pin[*]})}"
awk -v p="$p" -v t="$t" -v n=$((2 * calls)) 'BEGIN {
    printf "  %-28s %10.1f ms\n", "untraced", p / 1e6
    printf "  %-28s %10.1f ms   %.2f us added per call   %.1fx untraced\n",
           "telem_run -s", t / 1e6, (t - p) / n / 1e3, t / p }'
if ((have_strace)); then
    s=$(median "${straced[@]}")
    awk -v p="$p" -v t="$t" -v s="$s" -v n=$((2 * calls)) 'BEGIN {
        printf "  %-28s %10.1f ms   %.2f us added per call   %.1fx untraced\n",
               "strace -f -c", s / 1e6, (s - p) / n / 1e3, s / p
        printf "  telem_run -s overhead / strace overhead: %.2f (target <= 1.0)\n",
               (t - p) / (s - p)
        r = (t - p) / (s - p)
        printf "FIGURE\ttelem_run -s overhead per system call\t<= 1.0x strace\t%.2f us\tstrace -f -c %.2f us\t%.2f\t%s\n",
               (t - p) / n / 1e3, (s - p) / n / 1e3, r, r <= 1.0 ? "met" : "missed" }'
else
    echo "  strace is not installed: no comparison (apt-get install strace)"
fi

# ---- 2. MPI ------------------------------------------------------------------
echo
if [ ! -x "$bin/bench_run_pingpong" ] || ! command -v mpirun >/dev/null; then
    echo "telem_run -m: skipped (no MPI: bench_run_pingpong or mpirun missing)"
    exit 0
fi
mpi=(mpirun --oversubscribe -np 2)
if [ "$(id -u)" = 0 ]; then
    mpi+=(--allow-run-as-root)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# pingpong CMD...: "NS_PER_ROUND_TRIP NS_PER_NULL_SEND" from the program.
pingpong() {
    "$@" 2>/dev/null | sed -nE 's/.* ([0-9.]+) ns per (round trip|call)/\1/p' \
        | tr '\n' ' '
    echo
}
bare=() with=() bare_null=() with_null=()
for _ in $(seq "$runs"); do
    read -r rt null < <(pingpong "${mpi[@]}" "$bin/bench_run_pingpong" "$trips")
    bare+=("$rt") bare_null+=("$null")
    read -r rt null < <(pingpong "${mpi[@]}" "$bin/telem_run" -m -- \
        "$bin/bench_run_pingpong" "$trips")
    with+=("$rt") with_null+=("$null")
done
b=$(median "${bare[@]}")
w=$(median "${with[@]}")
b1=$(minimum "${bare[@]}")
w1=$(minimum "${with[@]}")
bn=$(median "${bare_null[@]}")
wn=$(median "${with_null[@]}")
echo "telem_run -m: 8-byte ping-pong, $trips round trips, median (best) of $runs runs"
awk -v b="$b" -v w="$w" -v b1="$b1" -v w1="$w1" -v bn="$bn" -v wn="$wn" 'BEGIN {
    printf "  %-16s %8.1f (%6.1f) ns per round trip   %6.2f ns per null send\n", "without", b, b1, bn
    printf "  %-16s %8.1f (%6.1f) ns per round trip   %6.2f ns per null send\n", "telem_run -m", w, w1, wn
    printf "  slowdown, measured: median %+.2f %%, best %+.2f %% (target <= 2 %%)\n",
           (w / b - 1) * 100, (w1 / b1 - 1) * 100
    s = (w / b - 1) * 100
    printf "FIGURE\ttelem_run -m slowdown of an 8-byte MPI ping-pong\t<= 2 %%\t%+.2f %%\twithout %.1f ns\t%.3f\t%s\n",
           s, b, w / b, s <= 2 ? "met" : "missed"
    printf "  slowdown the library accounts for (4 calls x %.2f ns): %+.2f %%\n",
           wn - bn, 4 * (wn - bn) / b1 * 100 }'
