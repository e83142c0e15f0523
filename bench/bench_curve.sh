#!/usr/bin/env bash
# bench_curve.sh - what CURVE costs telem: runs bench_curve (each figure
# over plain TCP and over CURVE, side by side, one run) several times and
# prints every run, then the medians (bench_curve.c says what is measured).
#
# Usage: bench/bench_curve.sh [-n RUNS] [-s SECONDS] [-o PARTS]
#   -n RUNS     runs of bench_curve, one after another (default 3)
#   -s SECONDS  bound on each connection storm (default 60)
#   -o PARTS    only these parts (query,watch,push,dict,storm)
# Environment: BENCH_BUILD (build directory, default bench/build).
#
# bench_curve starts its own telemd and telem_dictd processes on
# 127.0.0.1 and ipc in a private directory; each dies with it.  The
# outputs are kept in $BENCH_BUILD/curve-RUN.txt.  Medians: of each side
# and of the per-run ratios (a ratio is measured back to back, so it moves
# less than either side); "met" counts the runs that met the target.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${BENCH_BUILD:-$here/build}"
runs=3
args=()
while getopts "n:s:o:h" opt; do
    case "$opt" in
    n) runs="$OPTARG" ;;
    s) args+=(-s "$OPTARG") ;;
    o) args+=(-o "$OPTARG") ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
    esac
done

mkdir -p "$build"
if ! { cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        && cmake --build "$build" -j2 --target bench_curve; } \
        >"$build/build-curve.log" 2>&1; then
    tail -30 "$build/build-curve.log" >&2
    echo "bench_curve.sh: build failed" >&2
    exit 1
fi

rm -f "$build"/curve-[0-9]*.txt
pid=""
cleanup() {
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "# bench/bench_curve.sh -n $runs ${args[*]}   (git $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'))"
for r in $(seq "$runs"); do
    echo
    echo "# run $r of $runs"
    "$build/bin/bench_curve" "${args[@]}" >"$build/curve-$r.txt" 2>&1 &
    pid=$!
    wait "$pid" || { cat "$build/curve-$r.txt"; echo "bench_curve.sh: run $r failed" >&2; exit 1; }
    pid=""
    grep -v '^row	' "$build/curve-$r.txt"
done

echo
echo "== medians of $runs runs (ratio: median of the per-run ratios, how many times worse CURVE is; (T): timed out)"
cat "$build"/curve-[0-9]*.txt | awk -F'\t' -v runs="$runs" '
function med(a, n,    i, j, t) {
    for (i = 2; i <= n; i++)
        for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
            t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
        }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
$1 == "row" {
    id = $2
    if (!(id in n)) { order[++ids] = id; n[id] = 0 }
    k = ++n[id]
    what[id] = $3; rate[id] = $6; target[id] = $9
    P[id, k] = $4; C[id, k] = $5
    R[id, k] = $6 ? $4 / $5 : $5 / $4
    if (int($7 / 1) % 2) tp[id]++
    if (int($7 / 2) % 2) tc[id]++
    if ($8 == 1) met[id]++
}
END {
    printf "  %-62s %10s %10s %7s %-13s %-20s %s\n", "figure", "plain",
        "CURVE", "ratio", "(which)", "target", "met"
    for (i = 1; i <= ids; i++) {
        id = order[i]
        for (k = 1; k <= n[id]; k++) { a[k] = P[id, k]; b[k] = C[id, k]; c[k] = R[id, k] }
        p = med(a, n[id]); q = med(b, n[id]); r = med(c, n[id])
        ps = sprintf("%.3f%s", p, tp[id] * 2 > n[id] ? " (T)" : "")
        qs = sprintf("%.3f%s", q, tc[id] * 2 > n[id] ? " (T)" : "")
        printf "  %-62s %10s %10s %7.2f %-13s %-20s %s\n", what[id], ps, qs, r,
            rate[id] ? "plain/CURVE" : "CURVE/plain",
            target[id] == "-" ? "(reported)" : target[id],
            target[id] == "-" ? "-" : sprintf("%d of %d runs", met[id], n[id])
    }
}'
