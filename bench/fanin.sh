#!/usr/bin/env bash
# fanin.sh - fan-in curves of telem on namespaced nodes: for each size, a
# cluster of N network namespaces (bench/cluster/nsnodes.sh), one job on it
# started by telem_launch's template source, and bench_fanin's timings of
# an ac_query, a watcher round, a telem_agg query, restarts and the job's
# start-up; then the per-size table, the slopes and their extrapolation to
# 1,024 and 10,000 nodes, FIGURE lines against the targets, and the
# picture (bench/fanin_fit.py).
#
# Usage: bench/fanin.sh [-n "16 64 128 256"] [-r ROUNDS] [-k RESTARTS]
#                       [-j JOBS] [-R K[,K...]] [-s SVG] [-S]
#   -n SIZES     node counts (default "16 64 128 256")
#   -r ROUNDS    timed rounds of the query, watcher and telem_agg (20)
#   -k RESTARTS  restarts a job, each excluding one node (5)
#   -j JOBS      jobs a size (each one start-up sample; default 1)
#   -R K,...     relay mode: in the same job, after the direct rounds, for
#                each K relays of K nodes and R rounds alternating direct
#                and relayed (bench_fanin --relays; sizes <= K skip it)
#   -s SVG       where the picture goes (default docs/img/fanin.svg)
#   -S           under Slurm: each size is a namespaced multi-slurmd cluster
#                (tests/slurm/netns.sh, at most 60 nodes; default sizes
#                "16 60") and the job runs in `salloc -N N`, telem_launch
#                starting each daemon kind and the program as one srun
#                step; relays start through bench/cluster/slurm_node.sh.
#                No picture; raw lines and output go to fanin-slurm.tsv
#                and fanin-slurm.txt, and every FIGURE says "under Slurm".
# Needs root (namespaces) and the benchmark build (bench/run.sh builds it;
# BENCH_BUILD names it, default bench/build): it builds nothing itself.
# Installs python3-numpy and python3-matplotlib when root and missing.
# Raw lines go to $BENCH_BUILD/fanin.tsv, the whole output to
# $BENCH_BUILD/fanin.txt.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${BENCH_BUILD:-$here/build}"
sizes="16 64 128 256"
rounds=20
restarts=5
jobs=1
relays=''
svg="$here/../docs/img/fanin.svg"
slurm=''
sizes_set=''
while getopts "n:r:k:j:R:s:Sh" opt; do
    case "$opt" in
    n) sizes=$OPTARG; sizes_set=1 ;;
    r) rounds=$OPTARG ;;
    k) restarts=$OPTARG ;;
    j) jobs=$OPTARG ;;
    R) relays=$OPTARG ;;
    s) svg=$OPTARG ;;
    S) slurm=1 ;;
    h) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) sed -n '10,26p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || { echo "fanin.sh: unexpected argument '$1'" >&2; exit 2; }
[ -n "$slurm" ] && [ -z "$sizes_set" ] && sizes="16 60"
for v in $sizes "$rounds" "$jobs"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "fanin.sh: '$v' is not a positive count" >&2; exit 2; }
done
[[ $restarts =~ ^[0-9]+$ ]] || { echo "fanin.sh: bad -k '$restarts'" >&2; exit 2; }
[[ -z $relays || $relays =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] \
    || { echo "fanin.sh: bad -R '$relays' (K[,K...])" >&2; exit 2; }

bin=$build/bin
for p in bench_fanin bench_restart_prog telem_launch telemd telem_dictd telem_agg telem_relay telem_step; do
    [ -x "$bin/$p" ] || { echo "fanin.sh: $bin/$p is missing: build the benchmarks first (bench/run.sh, or cmake -S bench -B $build && cmake --build $build -j2)" >&2; exit 1; }
done
if [ -n "$slurm" ]; then
    for v in $sizes; do
        [ "$v" -le 60 ] || { echo "fanin.sh: -S: at most 60 nodes (tests/slurm/netns.sh), not $v" >&2; exit 2; }
    done
    why=$(bash "$here/../tests/slurm/netns.sh" check) || { echo "fanin.sh: skipped: $why" >&2; exit 77; }
else
    why=$(bash "$here/cluster/nsnodes.sh" check) || { echo "fanin.sh: cannot run here: $why" >&2; exit 77; }
fi
# Debian's python3 (its python3-* packages), not another one first in PATH.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c 'import numpy, matplotlib' 2>/dev/null; then
    [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        python3-numpy python3-matplotlib >/dev/null
    "$py" -c 'import numpy, matplotlib' \
        || { echo "fanin.sh: needs python3-numpy and python3-matplotlib" >&2; exit 1; }
fi

# Sizing: an idle telemd at level 2 samples /proc every --interval
# seconds (about 0.2-0.5 % of a core each at 1 s here); N of them share 2
# cores with the process that fans out, so the period grows with N to keep
# all N near a quarter of a core.  Every other cost (telem_dictd, the
# launcher's 1 s heartbeat to every node) is what the job really costs and
# is printed by bench_fanin as measured.
interval_for() { local n=$1; echo $(( n > 64 ? (n + 63) / 64 : 1 )); }

# What the harness itself costs a node each time the launcher starts a
# process there (the template `bash nsnodes.sh exec DIR NODE`: bash, then
# nsenter into the node's namespaces): the CPU of 20 runs of `true` one
# after the other (their own rusage, so other work on the machine does
# not count), and their wall time.  On a cluster ssh or srun pays this
# instead; a restart at N nodes pays it N times, on these 2 cores.
exec_cost() {
    local c=$1 t0 t1 cpu
    t0=$(date +%s%N)
    cpu=$( (for _ in $(seq 20); do
                bash "$here/cluster/nsnodes.sh" exec "$c" n1 env TELEM_X=1 true
            done
            times) | awk 'END { for (i = 1; i <= 2; i++) {
                                    split($i, p, /[ms]/); t += p[1] * 60 + p[2] }
                                print t }')
    t1=$(date +%s%N)
    awk -v c="$cpu" -v w="$((t1 - t0))" 'BEGIN {
        printf "harness exec cost: %.1f CPU-ms and %.1f ms wall a process started on a node (20 runs)\n", c * 1000 / 20, w / 1e6 / 20 }'
}

load=$(cut -d' ' -f1-3 /proc/loadavg)
out=fanin${slurm:+-slurm}
tsv=$build/$out.tsv
: >"$tsv"
work=$(mktemp -d /tmp/telem-fanin.XXXXXX)
cluster=''
cluster_down() {
    if [ -n "$slurm" ]; then
        bash "$here/../tests/slurm/netns.sh" down "$cluster"
    else
        bash "$here/cluster/nsnodes.sh" down "$cluster"
    fi
}
cleanup() {
    [ -n "$cluster" ] && cluster_down >&2 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

exec > >(tee "$build/$out.txt") 2>&1
echo "# bench/fanin.sh${slurm:+ -S} -n \"$sizes\" -r $rounds -k $restarts -j $jobs${relays:+ -R $relays}   (git $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'))"
echo "# nproc $(nproc), load at start $load"
for n in $sizes; do
    iv=$(interval_for "$n")
    echo
    if [ -n "$slurm" ]; then
        echo "== $n Slurm nodes (one slurmd each): level 2, telemd's default period, 8 devices a node fed at one round per timed operation"
    else
        echo "== $n nodes: level 2, telemd --interval $iv s (node metrics every $iv s keeps $n telemd near a quarter core), 8 devices a node fed at one round per timed operation"
    fi
    for job in $(seq "$jobs"); do
        cluster=$work/c$n.$job
        k=$restarts; [ "$k" -lt "$n" ] || k=$((n - 1))
        rl=()   # relay groups smaller than the job: a relay of every node is no tree
        for g in ${relays//,/ }; do [ "$g" -lt "$n" ] && rl+=("$g"); done
        ropt=(); [ ${#rl[@]} -gt 0 ] && ropt=(--relays "$(IFS=,; echo "${rl[*]}")")
        if [ -n "$slurm" ]; then
            mkdir -p "$cluster"
            bash "$here/../tests/slurm/netns.sh" up "$cluster" "$n" >"$work/up-$n.log" 2>&1 \
                || { echo "fanin.sh: Slurm cluster of $n nodes did not start: $(tail -n 3 "$work/up-$n.log")"; exit 1; }
            hosts=$(seq -f 'n%g' 1 "$n" | paste -sd,)
            echo "load before the job: $(cut -d' ' -f1-3 /proc/loadavg)"
            # salloc runs bench_fanin here, on the login node; the job's
            # telem_launch, started by it, sees the allocation.
            cmd=(env SLURM_CONF="$(. "$cluster/env"; echo "$SLURM_CONF")"
                 salloc --no-kill -N "$n" "$bin/bench_fanin" --slurm
                 --template "bash $here/cluster/slurm_node.sh $cluster {node}"
                 --agg-bind "$(bash "$here/../tests/slurm/netns.sh" node_addr "$cluster" n1)")
        else
            bash "$here/cluster/nsnodes.sh" up "$cluster" "$n" --interval "$iv"
            echo "load before the job: $(cut -d' ' -f1-3 /proc/loadavg)"
            exec_cost "$cluster"
            hosts=$(bash "$here/cluster/nsnodes.sh" hosts "$cluster")
            cmd=("$bin/bench_fanin" --template "$(bash "$here/cluster/nsnodes.sh" template "$cluster")")
        fi
        if ! "${cmd[@]}" --hosts "$hosts" \
            --bindir "$bin" --rundir "$cluster/run" --rounds "$rounds" \
            --restarts "$k" "${ropt[@]}" | tee -a "$work/raw"; then
            # What the launcher saw, before the cluster and its files go.
            echo "fanin.sh: bench_fanin failed at $n nodes; the launcher's last lines and daemon events:"
            grep -v 'telem_agg\[' "$cluster/run/launcher.log" | tail -n 20 || true
            tail -n 20 "$cluster/run/launch/daemons.log" 2>/dev/null || true
            exit 1
        fi
        cluster_down
        cluster=''
    done
done
grep -E '^(RESULT|IDLE|CONN|RESTART)' "$work/raw" >"$tsv"
echo
if [ -n "$slurm" ]; then
    "$py" "$here/fanin_fit.py" "$tsv" --load "$load" --where "under Slurm"
else
    mkdir -p "$(dirname "$svg")"
    "$py" "$here/fanin_fit.py" "$tsv" --svg "$svg" --load "$load"
fi
echo "# load at end $(cut -d' ' -f1-3 /proc/loadavg)"
