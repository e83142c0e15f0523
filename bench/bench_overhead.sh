#!/usr/bin/env bash
# bench_overhead.sh - telemd's cost beside the node daemons users already
# run: collectd and prometheus-node-exporter, in one run, side by side.
#
# Each daemon runs as its own instance with its own configuration in a
# temporary directory, at a 1 s interval:
#   telemd          level 2, --interval 1, flush log every 30 s
#   collectd        cpu, memory, load, interface, disk plugins, Interval 1,
#                   the csv write plugin into the temporary directory (values
#                   are really written), unixsock for the user series
#   node_exporter   on 127.0.0.1 at a free port, its default collectors plus
#                   the textfile collector, scraped every second by
#                   bench_feed (as Prometheus would)
# As root, all of it runs in a network namespace made for the run (only its
# loopback interface), so that every daemon reports the same interfaces and
# interfaces that other work on the machine adds or removes do not change
# the series counts mid-run; -N runs in the machine's own namespace.
# Two phases in one run, the same daemons throughout:
#   node   node metrics only
#   user   plus N user series (-n, default 1000) at 1 Hz: into telemd with
#          telem_add_data (libtelem), into collectd with PUTVAL over its
#          unixsock plugin, into node_exporter through a textfile rewritten
#          every second
# Per daemon and phase, over DURATION seconds after WARMUP seconds:
#   cpu_s/h   CPU seconds per hour, from /proc/PID/stat (utime+stime) and
#             from schedstat summed over the threads (reported: schedstat)
#   rss, hwm  VmRSS, VmHWM;  pss, priv  from smaps (bench/mem_breakdown.py;
#             priv = Private_Clean + Private_Dirty: what the process owns)
#   series    per interval: telemd's samples ingested a second (its status;
#             the store's series count is printed beside), collectd's values
#             a second in its csv files, node_exporter's sample lines per
#             scrape
#   cpu/series  cpu_s/h divided by series
# The feeders' and the scraper's CPU is printed apart (not the daemons').
# Series counts, at the end of the node phase: the distinct series telemd
# holds at level 2 (its latest value of every series, telem_client -v) and
# their metric names; the same of a second telemd started at level 3 after
# the phases (GPU samplers where this machine has GPUs); node_exporter's
# sample lines of one scrape, those named node_*, and its metric names;
# collectd's values a second and its value columns (csv files x columns).
# Then the CPU of each of telemd's samplers per call on this machine
# (bench_samplers, as the same user: the job user whose processes the proc
# and job samplers walk).
# Ratios: telemd against the lighter peer on each figure, target <= 1.0x,
# as FIGURE lines.  Memory breakdowns (mem_breakdown.py) of each daemon at
# the end of each phase follow with -v.
#
# Usage: bench_overhead.sh [-d SECONDS] [-w SECONDS] [-n SERIES] [-v] [-N] [-b BUILD]
#   -d  measured window per phase (default $BENCH_OVH_SECONDS or 60)
#   -w  warm-up before each window (default 5)
#   -n  user series in the user phase (default 1000; 0 skips the phase)
#   -v  print each daemon's memory breakdown
#   -N  no network namespace of its own
#   -b  the bench build directory (default $BENCH_BUILD or bench/build)
# As root on Debian, installs collectd-core and prometheus-node-exporter when
# missing (tests/peer_install.sh) and stops the services their packages start.
# Exit 0 after a measurement, 1 when a daemon is missing or fails, 2 on bad
# usage.  Python is Debian's /usr/bin/python3.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
duration="${BENCH_OVH_SECONDS:-60}"
warmup=5
nuser=1000
verbose=0
own_ns=1
build="${BENCH_BUILD:-$here/build}"
py=/usr/bin/python3
while getopts "d:w:n:vNb:h" opt; do
    case "$opt" in
    d) duration="$OPTARG" ;;
    w) warmup="$OPTARG" ;;
    n) nuser="$OPTARG" ;;
    v) verbose=1 ;;
    N) own_ns=0 ;;
    b) build="$OPTARG" ;;
    h) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) sed -n '/^# Usage:/,/^#   -b/p' "$0" >&2; exit 2 ;;
    esac
done
for v in "$duration" "$warmup" "$nuser"; do
    [[ "$v" =~ ^[0-9]+$ ]] || { echo "bench_overhead: '$v' is not a count" >&2; exit 2; }
done
(( duration > 0 )) || { echo "bench_overhead: -d must be > 0" >&2; exit 2; }

bin="$build/bin"
for p in telemd telem_client bench_feed bench_samplers; do
    [[ -x "$bin/$p" ]] || { echo "bench_overhead: no $bin/$p (build bench first: bench/run.sh or cmake -S bench -B bench/build)" >&2; exit 1; }
done

# --- the peers: installed when root and missing, Debian's services stopped
if ! command -v collectd >/dev/null 2>&1 && [[ -x /usr/sbin/collectd ]]; then PATH="$PATH:/usr/sbin"; fi
if ! command -v collectd >/dev/null 2>&1 || ! command -v prometheus-node-exporter >/dev/null 2>&1; then
    why=$(bash "$here/../tests/peer_install.sh" collectd-core prometheus-node-exporter) || {
        echo "bench_overhead: collectd and node_exporter are needed: $why" >&2; exit 1; }
    PATH="$PATH:/usr/sbin"
fi
for svc in collectd prometheus-node-exporter; do
    if command -v service >/dev/null 2>&1 && service "$svc" status >/dev/null 2>&1; then
        echo "stopping Debian's $svc service (it must not run beside the measurement)"
        service "$svc" stop >/dev/null 2>&1 || true
    fi
done
for b in collectd prometheus-node-exporter; do
    if others=$(pgrep -x "$b" 2>/dev/null); then
        echo "bench_overhead: $b already runs (pid $others): stop it first, it would share the machine" >&2
        exit 1
    fi
done
collectd_bin="$(command -v collectd)"
nodeexp_bin="$(command -v prometheus-node-exporter)"
typesdb=/usr/share/collectd/types.db
[[ -r "$typesdb" ]] || { echo "bench_overhead: no $typesdb (collectd-core)" >&2; exit 1; }

hz="$(getconf CLK_TCK)"
work="$(mktemp -d "${TMPDIR:-/tmp}/telem-bench-ovh-XXXXXX")"
chmod 0700 "$work"
declare -A pid
nsname=
ns=()
cleanup() {
    local k
    for k in "${!pid[@]}"; do kill -TERM "${pid[$k]}" 2>/dev/null || true; done
    for k in "${!pid[@]}"; do wait "${pid[$k]}" 2>/dev/null || true; done
    [[ -n "$nsname" ]] && ip netns delete "$nsname" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
if (( own_ns )); then
    nsname="telem-ovh-$$"
    if [[ $(id -u) = 0 ]] && ip netns add "$nsname" 2>/dev/null &&
            ip -n "$nsname" link set lo up; then
        ns=(ip netns exec "$nsname")
    else
        echo "bench_overhead: no network namespace (needs root and ip netns): the machine's interfaces are measured, as they change" >&2
        nsname=
    fi
fi

free_port() {
    "${ns[@]}" "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_for WHAT CMD...: polls CMD every 0.1 s for up to 10 s
wait_for() {
    local what="$1"; shift
    for _ in $(seq 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
    echo "bench_overhead: $what did not come up" >&2
    exit 1
}

start_telemd() {
    mkdir -m 0700 "$work/td"
    "${ns[@]}" "$bin/telemd" --node benchnode --rundir "$work/td" --level 2 --interval 1 \
        --flush 30 --nodefile "$work/nodes" --log-level warn \
        > "$work/td.out" 2> "$work/td.err" &
    pid[telemd]=$!
    wait_for telemd grep -q '^ready' "$work/td.out"
}

# tseries NODEFILE: "series names" of a telemd, from its latest value of
# every series (telem_client -v)
tseries() {
    "${ns[@]}" "$bin/telem_client" --nodefile "$1" -f json -v 2>/dev/null |
        "$py" -c 'import json,sys
s = json.load(sys.stdin)["series"]
print(len(s), len({r["metric"] for r in s}))'
}

# level3_series: C[td3] and C[td3n], series and names of a second telemd at
# level 3, once it has
# sampled three rounds with the same series count (the first round has no
# rates), up to 20 s; run after the phases, so it measures nothing else
level3_series() {
    local d="$work/td3" s prev=-1 i
    mkdir -m 0700 "$d"
    "${ns[@]}" "$bin/telemd" --node benchnode3 --rundir "$d" --level 3 --interval 1 \
        --no-log --nodefile "$d/nodes" --log-level warn > "$d.out" 2> "$d.err" &
    pid[telemd3]=$!
    wait_for "telemd at level 3" grep -q '^ready' "$d.out"
    for _ in $(seq 100); do
        read -r s i < <("${ns[@]}" "$bin/telem_client" --nodefile "$d/nodes" -f json status 2>/dev/null |
            "$py" -c 'import json,sys; r=json.load(sys.stdin)["nodes"][0]; print(r["series"] or 0, r["ingested"] or 0)')
        (( s > 0 && s == prev && i >= 3 * s )) && break
        prev=$s
        sleep 0.2
    done
    (( s > 0 && s == prev && i >= 3 * s )) ||
        echo "bench_overhead: the level 3 telemd did not settle in 20 s (series $s, ingested $i)" >&2
    read -r 'C[td3]' 'C[td3n]' < <(tseries "$d/nodes")
    kill -TERM "${pid[telemd3]}"; wait "${pid[telemd3]}" 2>/dev/null || true; unset "pid[telemd3]"
}

# prom_counts URL: "lines node_lines names" of one scrape
prom_counts() {
    "${ns[@]}" curl -sf "$1" | "$py" -c 'import re,sys
lines = [l for l in sys.stdin.read().splitlines() if l and not l.startswith("#")]
names = {re.split(r"[{ ]", l, 1)[0] for l in lines}
print(len(lines), sum(l.startswith("node_") for l in lines), len(names))'
}

# cd_columns: collectd's distinct value series: value columns over its csv
# files of today (one file per plugin instance, type and day)
cd_columns() {
    find "$work/cd/csv" -type f -name "*-$(date +%Y-%m-%d)" -print0 |
        xargs -0 -r awk -F, 'FNR == 1 { n += NF - 1 } END { print n + 0 }'
}

start_collectd() {
    mkdir -p "$work/cd/csv"
    cat > "$work/cd/collectd.conf" <<CONF
Interval 1
Hostname "benchnode"
FQDNLookup false
BaseDir "$work/cd"
PIDFile "$work/cd/collectd.pid"
PluginDir "/usr/lib/collectd"
TypesDB "$typesdb"
LoadPlugin logfile
<Plugin logfile>
  LogLevel warning
  File "$work/cd/collectd.log"
</Plugin>
LoadPlugin cpu
LoadPlugin memory
LoadPlugin load
LoadPlugin interface
LoadPlugin disk
LoadPlugin csv
LoadPlugin unixsock
<Plugin csv>
  DataDir "$work/cd/csv"
  StoreRates false
</Plugin>
<Plugin unixsock>
  SocketFile "$work/cd/sock"
  SocketPerms "0600"
</Plugin>
CONF
    "${ns[@]}" "$collectd_bin" -f -C "$work/cd/collectd.conf" > "$work/cd.out" 2>&1 &
    pid[collectd]=$!
    wait_for collectd test -S "$work/cd/sock"
}

start_nodeexp() {
    mkdir -p "$work/tf"
    neport=$(free_port)
    "${ns[@]}" "$nodeexp_bin" --web.listen-address="127.0.0.1:$neport" \
        --collector.textfile.directory="$work/tf" --log.level=warn \
        > "$work/ne.out" 2>&1 &
    pid[nodeexp]=$!
    wait_for node_exporter "${ns[@]}" curl -sf "http://127.0.0.1:$neport/metrics"
    "${ns[@]}" "$bin/bench_feed" scrape 0 0 "http://127.0.0.1:$neport/metrics" \
        > "$work/scrape.out" 2>&1 &
    pid[scrape]=$!
}

start_feeders() {   # N
    "${ns[@]}" env TELEM_RUNDIR="$work/td" TELEM_NODE=benchnode TELEM_LEVEL=1 \
        "$bin/bench_feed" telem "$1" 0 > "$work/f_telem.out" 2>&1 &
    pid[f_telem]=$!
    "${ns[@]}" "$bin/bench_feed" collectd "$1" 0 "$work/cd/sock" > "$work/f_cd.out" 2>&1 &
    pid[f_cd]=$!
    "${ns[@]}" "$bin/bench_feed" textfile "$1" 0 "$work/tf/bench.prom" > "$work/f_tf.out" 2>&1 &
    pid[f_tf]=$!
}

ticks() {   # PID -> utime+stime
    local stat rest
    stat="$(cat "/proc/$1/stat")"
    rest="${stat##*) }"
    # shellcheck disable=SC2086
    set -- $rest
    echo $(( ${12} + ${13} ))
}
runns() {   # PID -> ns on CPU over its threads
    local sum=0 t v
    for t in /proc/"$1"/task/*/schedstat; do
        read -r v _ < "$t" 2>/dev/null || continue
        sum=$(( sum + v ))
    done
    echo "$sum"
}
tstatus() {  # telemd status field (json) KEY
    "${ns[@]}" "$bin/telem_client" --nodefile "$work/nodes" -f json status 2>/dev/null |
        "$py" -c 'import json,sys; d=json.load(sys.stdin); r=d if isinstance(d,list) else d.get("nodes",d.get("rows",[d])); r=r[0] if isinstance(r,list) else r; print(r.get(sys.argv[1],-1))' "$1"
}
# collectd values a second in [T0, T1): rows x value columns in csv files
cd_values() {
    find "$work/cd/csv" -type f -name '*-[0-9][0-9][0-9][0-9]-*' -print0 |
        xargs -0 -r awk -F, -v t0="$1" -v t1="$2" '
            FNR == 1 { next }
            $1 >= t0 && $1 < t1 { n += NF - 1 }
            END { printf "%.1f\n", n / (t1 - t0) }'
}

daemons=(telemd collectd nodeexp)
helpers=(scrape f_telem f_cd f_tf)
declare -A T0 N0 T1 N1 R C
measure() {   # PHASE
    local ph="$1" k t0w t1w
    sleep "$warmup"
    local ks=("${daemons[@]}")
    for k in "${helpers[@]}"; do [[ -n "${pid[$k]:-}" ]] && ks+=("$k"); done
    local in0; in0=$(tstatus ingested)
    for k in "${ks[@]}"; do T0[$k]=$(ticks "${pid[$k]}"); N0[$k]=$(runns "${pid[$k]}"); done
    t0w=$(date +%s%N)
    sleep "$duration"
    for k in "${ks[@]}"; do T1[$k]=$(ticks "${pid[$k]}"); N1[$k]=$(runns "${pid[$k]}"); done
    t1w=$(date +%s%N)
    local in1; in1=$(tstatus ingested)
    local wall; wall=$(awk -v a="$t0w" -v b="$t1w" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    for k in "${ks[@]}"; do
        R[$ph,$k,cpu]=$(awk -v n=$(( N1[$k] - N0[$k] )) -v w="$wall" 'BEGIN { printf "%.3f", n / 1e9 / w * 3600 }')
        R[$ph,$k,cpustat]=$(awk -v t=$(( T1[$k] - T0[$k] )) -v hz="$hz" -v w="$wall" 'BEGIN { printf "%.3f", t / hz / w * 3600 }')
    done
    for k in "${daemons[@]}"; do
        read -r R[$ph,$k,rss] R[$ph,$k,pss] R[$ph,$k,priv] R[$ph,$k,hwm] R[$ph,$k,thr] \
            < <("$py" "$here/mem_breakdown.py" -t "${pid[$k]}")
        if (( verbose )); then
            echo "-- memory of $k at the end of phase $ph (pid ${pid[$k]})"
            "$py" "$here/mem_breakdown.py" "${pid[$k]}"
        fi
    done
    R[$ph,telemd,store]=$(tstatus series)
    R[$ph,telemd,rate]=$(awk -v a="$in0" -v b="$in1" -v w="$wall" 'BEGIN { printf "%.1f", (b - a) / w }')
    R[$ph,telemd,series]=${R[$ph,telemd,rate]}
    R[$ph,collectd,series]=$(cd_values $(( t0w / 1000000000 + 1 )) $(( t1w / 1000000000 - 1 )))
    R[$ph,collectd,rate]=${R[$ph,collectd,series]}
    R[$ph,nodeexp,series]=$("${ns[@]}" curl -sf "http://127.0.0.1:$neport/metrics" | grep -vc '^#')
    R[$ph,nodeexp,rate]=${R[$ph,nodeexp,series]}
    R[$ph,wall]=$wall
    if [[ $ph = node ]]; then
        read -r 'C[td2]' 'C[td2n]' < <(tseries "$work/nodes")
        read -r 'C[ne]' 'C[nenode]' 'C[nen]' < <(prom_counts "http://127.0.0.1:$neport/metrics")
        C[cd]=$(cd_columns)
    fi
}

echo "== bench_overhead  $(date -u +%Y-%m-%dT%H:%M:%SZ)  nproc=$(nproc)" \
     " load=\"$(cut -d' ' -f1-3 /proc/loadavg)\"  duration=${duration}s warmup=${warmup}s user_series=$nuser" \
     " netns=${nsname:-none}"
echo "   telemd=$bin/telemd  collectd=$("$collectd_bin" -h 2>&1 | sed -n 's/^collectd \([0-9.]*\).*/\1/p' | head -1)" \
     " node_exporter=$("$nodeexp_bin" --version 2>&1 | sed -n 's/.*version \([0-9.]*\).*/\1/p' | head -1)"
start_telemd
start_collectd
start_nodeexp
phases=(node)
measure node
if (( nuser > 0 )); then
    start_feeders "$nuser"
    phases+=(user)
    measure user
fi

declare -A names=([telemd]=telemd [collectd]=collectd [nodeexp]=node_exporter)
for ph in "${phases[@]}"; do
    echo
    echo "  phase $ph ($( [[ $ph = node ]] && echo 'node metrics only' || echo "plus $nuser user series at 1 Hz")), window ${R[$ph,wall]} s"
    printf '  %-14s %9s %9s %8s %8s %8s %8s %4s %8s %10s\n' daemon cpu_s/h "(stat)" \
        rss_KiB hwm_KiB pss_KiB priv_KiB thr series cpu_ms/h/s
    for k in "${daemons[@]}"; do
        awk -v n="${names[$k]}" -v c="${R[$ph,$k,cpu]}" -v cs="${R[$ph,$k,cpustat]}" \
            -v r="${R[$ph,$k,rss]}" -v h="${R[$ph,$k,hwm]}" -v p="${R[$ph,$k,pss]}" \
            -v v="${R[$ph,$k,priv]}" -v t="${R[$ph,$k,thr]}" -v s="${R[$ph,$k,series]}" 'BEGIN {
            printf "  %-14s %9.2f %9.2f %8d %8d %8d %8d %4d %8.0f %10.3f\n",
                n, c, cs, r, h, p, v, t, s, (s > 0 ? 1000 * c / s : 0) }'
    done
    echo "  (series per interval: telemd's samples ingested a second (${R[$ph,telemd,store]} series in its store);" \
         "collectd's values a second written to csv; node_exporter's sample lines per scrape)"
    for k in "${helpers[@]}"; do
        [[ -n "${R[$ph,$k,cpu]:-}" ]] && printf '  %-14s %9.2f cpu_s/h (load generator, not counted)\n' "$k" "${R[$ph,$k,cpu]}"
    done
    # ratios: telemd against the lighter peer on each figure
    for f in cpu rss pss priv cps; do
        for k in "${daemons[@]}"; do
            if [[ $f = cps ]]; then
                R[$ph,$k,cps]=$(awk -v c="${R[$ph,$k,cpu]}" -v s="${R[$ph,$k,series]}" 'BEGIN { printf "%.6f", (s > 0 ? c / s : 0) }')
            fi
        done
        awk -v ph="$ph" -v f="$f" -v t="${R[$ph,telemd,$f]}" -v a="${R[$ph,collectd,$f]}" \
            -v b="${R[$ph,nodeexp,$f]}" 'BEGIN {
            peer = a <= b ? "collectd" : "node_exporter"; p = a <= b ? a : b
            label["cpu"] = "CPU s/h"; label["rss"] = "RSS"; label["pss"] = "PSS"
            label["priv"] = "private memory"; label["cps"] = "CPU per series"
            unit["cpu"] = " s/h"; unit["rss"] = " KiB"; unit["pss"] = " KiB"
            unit["priv"] = " KiB"; unit["cps"] = " s/h"
            fmt = f == "cps" ? "%.4f" : (f == "cpu" ? "%.2f" : "%d")
            r = p > 0 ? t / p : 0
            printf "FIGURE\ttelemd %s vs lighter peer, %s phase\t<= 1.0x\t" fmt "%s\t%s " fmt "%s\t%.2fx\t%s\n",
                label[f], ph, t, unit[f], peer, p, unit[f], r, (r <= 1.0 ? "met" : "missed")
        }'
    done
done
for k in f_telem f_cd f_tf; do
    [[ -n "${pid[$k]:-}" ]] || continue
    kill -TERM "${pid[$k]}"; wait "${pid[$k]}" 2>/dev/null || true; unset "pid[$k]"
    echo "  $(cat "$work/$k.out")"
done

# series counts: telemd at levels 2 (the measured one, end of the node
# phase) and 3 (a second one, now), node_exporter's one scrape and
# collectd's value columns, all in this run
level3_series
echo
echo "  series at the end of the node phase (this machine$( [[ -n $nsname ]] && echo ", network namespace $nsname"))"
printf '  %-30s %8s %8s\n' source series names
printf '  %-30s %8d %8d\n' "telemd level 2" "${C[td2]}" "${C[td2n]}"
printf '  %-30s %8d %8d\n' "telemd level 3" "${C[td3]}" "${C[td3n]}"
printf '  %-30s %8d %8d\n' "node_exporter, one scrape" "${C[ne]}" "${C[nen]}"
printf '  %-30s %8d %8s\n' "node_exporter, node_* lines" "${C[nenode]}" -
printf '  %-30s %8d %8s\n' "collectd, value columns" "${C[cd]}" -
printf '  %-30s %8.0f %8s\n' "collectd, values a second" "${R[node,collectd,series]}" -
for l in 2 3; do
    awk -v l="$l" -v t="${C[td$l]}" -v p="${C[ne]}" -v q="${C[nenode]}" 'BEGIN {
        printf "FIGURE\ttelemd series, level %d / node_exporter sample lines\t-\t%d\tnode_exporter %d (node_* %d)\t%.2fx\t-\n",
            l, t, p, q, (p > 0 ? t / p : 0) }'
done
awk -v t="${C[td2n]}" -v p="${C[nen]}" 'BEGIN {
    printf "FIGURE\ttelemd metric names, level 2 / node_exporter'"'"'s\t-\t%d\tnode_exporter %d\t%.2fx\t-\n",
        t, p, (p > 0 ? t / p : 0) }'
awk -v t="${C[td2]}" -v p="${C[cd]}" 'BEGIN {
    printf "FIGURE\ttelemd series, level 2 / collectd value columns\t-\t%d\tcollectd %d\t%.2fx\t-\n",
        t, p, (p > 0 ? t / p : 0) }'

echo
echo "  telemd's samplers on this machine, CPU per call (bench_samplers, same namespace and user)"
"${ns[@]}" "$bin/bench_samplers"
