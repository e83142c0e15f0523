#!/usr/bin/env bash
# bench_telemd_cpu.sh - CPU an otherwise idle telemd costs its node.
#
# Starts the real telemd program at levels 1, 2 and 4 with 1 s sampling
# (each on its own node name and run directory, side by side: they sleep
# almost all the time, so they do not disturb each other), skips the first
# second (start-up), then measures each for DURATION seconds of wall time:
#   cpu% (stat)       (utime + stime) from /proc/PID/stat, clock ticks
#   cpu% (schedstat)  run time summed over /proc/PID/task/*/schedstat, ns
# Target (issue): level 2, 1 s sampling <= 0.5 % of one core.
#
# Usage: bench_telemd_cpu.sh [-d SECONDS] [-t TELEMD] [-s]
#   -d SECONDS  measuring time (default $BENCH_CPU_SECONDS or 30)
#   -t TELEMD   telemd binary (default bench/build/bin/telemd)
#   -s          run the levels one after another instead of side by side
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
duration="${BENCH_CPU_SECONDS:-30}"
telemd="$here/build/bin/telemd"
sequential=0
while getopts "d:t:sh" opt; do
    case "$opt" in
    d) duration="$OPTARG" ;;
    t) telemd="$OPTARG" ;;
    s) sequential=1 ;;
    *) sed -n '2,16p' "$0"; exit 2 ;;
    esac
done
[[ -x "$telemd" ]] || { echo "no telemd binary at $telemd (build bench first)" >&2; exit 1; }

hz="$(getconf CLK_TCK)"
work="$(mktemp -d "${TMPDIR:-/tmp}/telem-bench-cpu-XXXXXX")"
declare -A pid
stuck=()

# stop LEVEL...: SIGTERM to each, up to 5 s for a clean exit, then SIGKILL
# (reported: a telemd must exit on SIGTERM).
stop() {
    local l p left
    for l in "$@"; do kill -TERM "${pid[$l]}" 2>/dev/null || true; done
    for _ in $(seq 50); do
        left=0
        for l in "$@"; do kill -0 "${pid[$l]}" 2>/dev/null && left=1; done
        (( left )) || break
        sleep 0.1
    done
    for l in "$@"; do
        p="${pid[$l]}"
        if kill -0 "$p" 2>/dev/null; then
            stuck+=("$l")
            kill -KILL "$p" 2>/dev/null || true
        fi
        wait "$p" 2>/dev/null || true
        unset "pid[$l]"
    done
}

cleanup() {
    if (( ${#pid[@]} )); then stop "${!pid[@]}"; fi
    rm -rf "$work"
}
trap cleanup EXIT

# ticks PID -> utime+stime in clock ticks
ticks() {
    local stat rest
    stat="$(cat "/proc/$1/stat")"
    rest="${stat##*) }"          # fields from 3 on; comm may hold spaces
    # shellcheck disable=SC2086
    set -- $rest
    echo $(( ${12} + ${13} ))
}

# runns PID -> nanoseconds on CPU, summed over the process's threads
runns() {
    local sum=0 t v
    for t in /proc/"$1"/task/*/schedstat; do
        read -r v _ < "$t" 2>/dev/null || continue
        sum=$(( sum + v ))
    done
    echo "$sum"
}

start() {   # level
    local l="$1" dir="$work/run$1"
    mkdir -m 0700 "$dir"
    "$telemd" --node "cpu$l" --rundir "$dir" --level "$l" --interval 1 \
        --log-level warn > "$work/out$l" 2> "$work/err$l" &
    pid[$l]=$!
    for _ in $(seq 100); do
        grep -q '^ready' "$work/out$l" 2>/dev/null && return 0
        kill -0 "${pid[$l]}" 2>/dev/null || break
        sleep 0.1
    done
    echo "telemd level $l did not start:" >&2
    cat "$work/err$l" >&2
    exit 1
}

declare -A t0 c0 n0 w0 t1 n1 w1 rss
snap0() { t0[$1]=$(ticks "${pid[$1]}"); n0[$1]=$(runns "${pid[$1]}"); w0[$1]=$(date +%s%N); }
snap1() {
    t1[$1]=$(ticks "${pid[$1]}"); n1[$1]=$(runns "${pid[$1]}"); w1[$1]=$(date +%s%N)
    rss[$1]=$(awk '/^VmRSS/ {print $2}' "/proc/${pid[$1]}/status")
}

levels=(1 2 4)
echo "== bench_telemd_cpu  $(date -u +%Y-%m-%dT%H:%M:%SZ)  nproc=$(nproc)" \
     " cpu=\"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)\"" \
     " load=\"$(cut -d" " -f1-3 /proc/loadavg)\"  telemd=$telemd  duration=${duration}s  mode=$([[ $sequential = 1 ]] && echo sequential || echo side-by-side)"
if [[ $sequential = 1 ]]; then
    for l in "${levels[@]}"; do
        start "$l"; sleep 1; c0[$l]=$(ticks "${pid[$l]}"); snap0 "$l"
        sleep "$duration"; snap1 "$l"
        stop "$l"
    done
else
    for l in "${levels[@]}"; do start "$l"; done
    sleep 1
    for l in "${levels[@]}"; do c0[$l]=$(ticks "${pid[$l]}"); snap0 "$l"; done
    sleep "$duration"
    for l in "${levels[@]}"; do snap1 "$l"; done
    stop "${levels[@]}"
fi

printf '\n  %-5s %8s %7s %10s %11s %12s %10s %8s  %s\n' level interval wall_s \
    cpu_ticks "cpu% stat" "cpu% sched" "startup_ms" rss_MiB target
for l in "${levels[@]}"; do
    awk -v l="$l" -v hz="$hz" -v dt=$(( t1[$l] - t0[$l] )) \
        -v dn=$(( n1[$l] - n0[$l] )) -v dw=$(( w1[$l] - w0[$l] )) \
        -v c0="${c0[$l]}" -v rss="${rss[$l]}" 'BEGIN {
        wall = dw / 1e9
        stat = 100 * (dt / hz) / wall
        sched = 100 * dn / dw
        tgt = "-"
        if (l == 2) tgt = sprintf("<= 0.5%%  %s", sched <= 0.5 && stat <= 0.5 ? "PASS" : "MISS")
        printf "  %-5s %8s %7.1f %10d %11.3f %12.3f %10.0f %8.1f  %s\n",
            l, "1 s", wall, dt, stat, sched, 1000 * c0 / hz, rss / 1024, tgt
        if (l == 2)
            printf "FIGURE\tidle telemd CPU, level 2, 1 s sampling\t<= 0.5 %% of a core\t%.3f %%\t-\t%.2f of target\t%s\n",
                sched, sched / 0.5, sched <= 0.5 && stat <= 0.5 ? "met" : "missed"
    }'
done
echo "  (cpu% is of one core; stat has a resolution of 1/$hz s, schedstat of 1 ns;"
echo "   startup_ms is the CPU used before measuring began)"
if (( ${#stuck[@]} )); then
    echo "  WARNING: telemd at level(s) ${stuck[*]} did not exit within 5 s of SIGTERM (killed)"
fi
