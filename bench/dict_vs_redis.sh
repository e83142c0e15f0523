#!/usr/bin/env bash
# dict_vs_redis.sh - telem's distributed dictionary against a real Redis,
# side by side in one run on loopback, then the checkpoint restore
# throughput (bench_dict.c, bench_dict_restore.c say what is measured).
#
# Usage: bench/dict_vs_redis.sh [-s SECONDS] [-r REPS] [-m MIB] [-x] [-o CELLS]
#   -s SECONDS  time per cell and system (default 1)
#   -r REPS     repetitions per cell, the median is printed (default 3)
#   -m MIB      bytes of the restore benchmark, in MiB (default 1024)
#   -x          skip the restore benchmark
#   -o CELLS    only these cells (bench_dict --only, e.g. 'SET:65536:*:*')
# Environment: BENCH_BUILD (build directory, default bench/build),
# DICT_SYNC (telem_dictd --sync for the comparison, default none: Redis
# runs without persistence too).
#
# Starts on 127.0.0.1, each on an ephemeral port: one redis-server (no RDB,
# no AOF), a second one with an append-only file (appendfsync no: the
# durability of telem_dictd --sync none), one telem_dictd with replication
# off, two telem_dictd with replication 2 (two servers, two copies of every
# key), and a raw libzmq echo server (bench_dict --echo-server) that gives
# the transport's floor.  Everything started here is stopped at the end.  When redis-server or hiredis is
# missing and we are root, they are installed with apt-get.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${BENCH_BUILD:-$here/build}"
seconds=1 reps=3 mib=1024 restore=1
sync="${DICT_SYNC:-none}"
cells=""
while getopts "s:r:m:o:xh" opt; do
    case "$opt" in
    s) seconds="$OPTARG" ;;
    r) reps="$OPTARG" ;;
    m) mib="$OPTARG" ;;
    x) restore=0 ;;
    o) cells="$OPTARG" ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
    esac
done

need=()
command -v redis-server >/dev/null || need+=(redis-server)
pkg-config --exists hiredis 2>/dev/null || need+=(libhiredis-dev)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "dict_vs_redis.sh: missing ${need[*]} (install them, or run as root)" >&2
        exit 1
    fi
    echo "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
fi

mkdir -p "$build"
if ! { cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        && cmake --build "$build" -j2 --target bench_dict bench_dict_restore \
           telem_dictd; } >"$build/build-dict.log" 2>&1; then
    tail -30 "$build/build-dict.log" >&2
    echo "dict_vs_redis.sh: build failed" >&2
    exit 1
fi

T="$(mktemp -d "${TMPDIR:-/tmp}/dictbench.XXXXXX")"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$T"
}
trap cleanup EXIT INT TERM

free_port() {   # an ephemeral port the kernel just handed out and released
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

port=$(free_port)
redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
    --protected-mode yes --daemonize no --dir "$T" --logfile "$T/redis.log" &
pids+=($!)
# The same durability as telem_dictd --sync none: every write is written to
# an append-only file before the reply, and the kernel flushes it.
aof_port=$(free_port)
mkdir -p "$T/aof"
redis-server --bind 127.0.0.1 --port "$aof_port" --save '' --appendonly yes \
    --appendfsync no --protected-mode yes --daemonize no --dir "$T/aof" \
    --logfile "$T/aof/redis.log" &
pids+=($!)

start_dictd() {   # start_dictd RUNDIR NAME NODES REPLICAS
    mkdir -p "$1"
    "$build/bin/telem_dictd" --rundir "$1" --nodefile "$1/dict_nodes" \
        --node "$2" --nodes "$3" --replicas "$4" --sync "$sync" \
        --bind 127.0.0.1 --log-level warn >"$1/$2.out" 2>"$1/$2.log" &
    pids+=($!)
    for _ in $(seq 200); do
        grep -qx ready "$1/$2.out" 2>/dev/null && return 0
        read -r -t 0.05 <> <(:) || true
    done
    echo "dict_vs_redis.sh: telem_dictd $2 did not start" >&2
    cat "$1/$2.log" >&2
    exit 1
}
"$build/bin/bench_dict" --echo-server >"$T/echo.out" &
pids+=($!)
start_dictd "$T/r1" n1 n1 1
start_dictd "$T/r2" n1 n1,n2 2
start_dictd "$T/r2" n2 n1,n2 2
echo_ep=$(awk -F'\t' '/^endpoint/ {print $2}' "$T/echo.out")
[ -n "$echo_ep" ] || { echo "dict_vs_redis.sh: echo server did not start" >&2; exit 1; }
for p in "$port" "$aof_port"; do
    for _ in $(seq 200); do
        redis-cli -h 127.0.0.1 -p "$p" ping 2>/dev/null | grep -q PONG && break
        read -r -t 0.05 <> <(:) || true
    done
done

echo "# bench/dict_vs_redis.sh -s $seconds -r $reps -m $mib   (git $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'), $(redis-server --version | cut -d' ' -f3), telem_dictd --sync $sync)"
"$build/bin/bench_dict" --redis "127.0.0.1:$port" --redis-aof "127.0.0.1:$aof_port" \
    --nodefile "$T/r1/dict_nodes" --nodefile2 "$T/r2/dict_nodes" \
    --zmq "$echo_ep" \
    --seconds "$seconds" --reps "$reps" ${cells:+--only "$cells"}
if [ "$restore" = 1 ]; then
    echo
    "$build/bin/bench_dict_restore" --mib "$mib" --reps "$reps"
fi
