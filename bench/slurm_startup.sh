#!/usr/bin/env bash
# slurm_startup.sh - start-up time of a telem_launch job under Slurm, on the
# namespaced multi-slurmd cluster of tests/slurm/netns.sh (one slurmd per
# node, each in its own network namespace, all on this machine).
#
# For each size N: a fresh cluster of N nodes, then R jobs of
# `salloc -N N telem_launch --nodes N --idle 0 -- PROG`, where PROG writes
# its CLOCK_REALTIME start time to OUT/<TELEM_NODE> and exits 0.  Printed:
# exec of salloc -> the program running on every node (the last stamp), and
# the whole job (until salloc exits), median and max of the R jobs.
#
# Usage: bench/slurm_startup.sh [-b BINDIR] [-r RUNS] N...
#   -b BINDIR  where telem_launch and the daemons are (default build/bin)
#   -r RUNS    jobs per size (default 3)
# Needs root, network namespaces and slurm-wlm + munge installed (the
# Slurm tests install them).  Exits 77 with the reason when it cannot run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$(cd "$here/.." && pwd)"
bindir="$src/build/bin"
runs=3
while getopts "b:r:h" opt; do
    case "$opt" in
    b) bindir="$OPTARG" ;;
    r) runs="$OPTARG" ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,17p' "$0"; exit 2; }
for n in "$@"; do
    [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] || { echo "slurm_startup: bad size '$n'" >&2; exit 2; }
done
[ -x "$bindir/telem_launch" ] || { echo "slurm_startup: no $bindir/telem_launch" >&2; exit 2; }
net() { bash "$src/tests/slurm/netns.sh" "$@"; }
why=$(net check) || { echo "slurm_startup: skipped: $why"; exit 77; }

S=""
cleanup() { [ -n "$S" ] && net down "$S" >/dev/null 2>&1 || true; }
trap cleanup EXIT
work=$(mktemp -d /tmp/telem-slurm-startup.XXXXXX)
cat >"$work/prog.sh" <<'PROG'
#!/bin/sh
date +%s%N >"$OUT/$TELEM_NODE.tmp" && mv "$OUT/$TELEM_NODE.tmp" "$OUT/$TELEM_NODE"
PROG
chmod +x "$work/prog.sh"

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
max() { sort -n | tail -n 1; }

echo "== slurm_startup  $(date -u +%FT%TZ)  nproc=$(nproc)  load=$(cut -d' ' -f1-3 /proc/loadavg)  git $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')"
for n in "$@"; do
    S=$(mktemp -d /tmp/telem-net.XXXXXX)
    net up "$S" "$n" >"$work/cluster-$n.log" 2>&1 \
        || { echo "slurm_startup: cluster of $n nodes did not start: $(tail -n 3 "$work/cluster-$n.log")" >&2; exit 1; }
    # shellcheck disable=SC1091
    source "$S/env"
    : >"$work/up.$n"; : >"$work/job.$n"
    for r in $(seq 1 "$runs"); do
        out="$work/out-$n-$r"; mkdir -p "$out" "$work/run-$n-$r"
        t0=$(date +%s%N)
        OUT="$out" salloc -N "$n" "$bindir/telem_launch" --nodes "$n" --idle 0 \
            --rundir "$work/run-$n-$r" --no-agg -- "$work/prog.sh" \
            >"$work/launch-$n-$r.log" 2>&1 || { echo "slurm_startup: job of $n nodes failed: $(tail -n 5 "$work/launch-$n-$r.log")" >&2; exit 1; }
        t1=$(date +%s%N)
        got=$(find "$out" -maxdepth 1 -type f ! -name '*.tmp' | wc -l)
        [ "$got" = "$n" ] || { echo "slurm_startup: $got of $n programs ran" >&2; exit 1; }
        last=$(cat "$out"/* | sort -n | tail -n 1)
        echo $(( (last - t0) / 1000000 )) >>"$work/up.$n"
        echo $(( (t1 - t0) / 1000000 )) >>"$work/job.$n"
    done
    printf '%3d nodes, %d jobs: salloc exec -> program on every node: median %s ms, max %s ms; whole job: median %s ms, max %s ms  (load %s)\n' \
        "$n" "$runs" "$(median <"$work/up.$n")" "$(max <"$work/up.$n")" \
        "$(median <"$work/job.$n")" "$(max <"$work/job.$n")" "$(cut -d' ' -f1 /proc/loadavg)"
    printf 'FIGURE\tjob start-up under Slurm, %d namespaced nodes, salloc exec -> program on every node, median of %d\t(reported)\t%s ms\tmax %s ms; whole job %s ms\t-\t-\n' \
        "$n" "$runs" "$(median <"$work/up.$n")" "$(max <"$work/up.$n")" \
        "$(median <"$work/job.$n")"
    net down "$S" >/dev/null 2>&1 || true
    S=""
done
rm -rf "$work"
