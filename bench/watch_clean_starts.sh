#!/usr/bin/env bash
# watch_clean_starts.sh - does a freshly started slowgpu watcher name clean
# devices?  Starts the same clean job N times and counts the events.
#
# A detector that is right on a long recording can still be wrong in its
# first rounds: collectors and the watcher start on the same cores, caches
# are cold, the collectors start at slightly different times.  A unit test
# cannot show what a real start does, so this starts it for real, many
# times.  Each start: 3 telemd virtual nodes (level 1, no TCP), one
# collector per node taking turns on one core (telem_collect --period 0.5
# --reps 5 --spread --devices 0 --local-devices 0), and a watcher with the
# detector spec (default: slowgpu with its defaults), started right after
# the collectors, until the detector has judged ROUNDS rounds (read from
# `telem_watch ctl --json status`, row "rounds"), bounded in time.  Nothing
# this script starts loads the devices, so on a quiet machine every event
# is a false one.
#
# Work it did not start can still slow a device for real (a compiler on a
# vCPU, another job's collectors or telem_load on the same core), and naming
# it then is right.  So every start is watched, once a second: a start is
# "quiet" when no core was over 70 % busy in any second of it (our own
# processes use a few %) and no other telem_load or telem_collector ran;
# otherwise it is "busy", reported, and not counted.  Starts go on until
# STARTS quiet ones have run, or 3 x STARTS in all.
#
# Usage: bench/watch_clean_starts.sh [-n STARTS] [-r ROUNDS] [-b BINDIR]
#                                    [-d SPEC] [-k DIR]
#   -n STARTS  starts (default 20)
#   -r ROUNDS  rounds each watcher judges (default 80)
#   -b BINDIR  telem programs (default: $TELEM_BIN, else build/bin)
#   -d SPEC    detector spec (default slowgpu)
#   -k DIR     keep each start's events and raw rounds (DIR/start-I.*)
# Prints one line per start and the totals of the quiet starts: starts,
# device-rounds judged (rounds x devices of each start), ACT and WARN
# events, and the load average before and after (/proc/loadavg); busy
# starts are totalled apart.  Exit status: 0 no ACT in a quiet start,
# 1 some ACT in a quiet start, 2 usage, a start that could not run, or
# fewer than STARTS quiet starts.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export HERE=$here
starts=20 rounds=80 spec=slowgpu keep=""
bin=${TELEM_BIN:-$here/../build/bin}
while getopts "n:r:b:d:k:h" opt; do
    case "$opt" in
    n) starts=$OPTARG ;;
    r) rounds=$OPTARG ;;
    b) bin=$OPTARG ;;
    d) spec=$OPTARG ;;
    k) keep=$OPTARG ;;
    *) sed -n '26,38p' "$0"; exit 2 ;;
    esac
done
[[ $starts =~ ^[0-9]+$ && $rounds =~ ^[0-9]+$ ]] && ((starts > 0 && rounds > 0)) \
    || { echo "watch_clean_starts.sh: -n and -r take whole numbers > 0" >&2; exit 2; }
for p in telemd telem_collect telem_collector telem_watch telem_client; do
    [ -x "$bin/$p" ] || { echo "watch_clean_starts.sh: $bin/$p is not built" >&2; exit 2; }
done
[ -z "$keep" ] || mkdir -p "$keep"

period=0.5
# A start gets its rounds' worth of time twice over plus 60 s of start-up
# before it is given up (and counted as a failure, never as clean).
limit=$(awk -v r="$rounds" -v p="$period" 'BEGIN { printf "%d", 2 * r * p + 60 }')
work=""
pids=()

# Stops what this start began, newest first (the watcher, the collectors,
# then the nodes), by process id; KILL after 5 s.
stop_all() {
    local i p
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        p=${pids[i]}
        kill -TERM "$p" 2>/dev/null || continue
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    pids=()
    [ -z "$work" ] || rm -rf "$work"
    work=""
}
trap stop_all EXIT
trap 'exit 2' INT TERM

# wait_file SECONDS FILE LINE: waits until FILE has the line LINE.
wait_file() {
    local n=$(($1 * 20))
    for _ in $(seq "$n"); do grep -qx "$3" "$2" 2>/dev/null && return 0; sleep 0.05; done
    return 1
}

# rounds_judged NAME: the detector's "rounds" row of the watcher's status.
rounds_judged() {
    "$bin/telem_watch" ctl --name "$1" --json status 2>/dev/null | python3 -c '
import json, sys
try:
    rows = json.load(sys.stdin)["rows"]
except Exception:
    rows = []
v = [int(r["value"]) for r in rows if r.get("key") == "rounds"]
d = [int(r["value"]) for r in rows if r.get("key") == "devices"]
print(max(v + [0]), max(d + [0]))'
}

# The quiet-machine monitor: every second, the busiest core's share of that
# second, and any telem_load or telem_collector not of group $1; writes
# "MAX_BUSY_PERCENT OTHERS" to $2 after every sample.
monitor() {
    exec python3 - "$1" "$2" <<'PY'
import os, sys, time
group, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(os.environ["HERE"], "..", "examples"))
import cpu_busy                      # (total, not busy) jiffies per core
def cores():
    return cpu_busy.cores(count_nice=True)
def others():
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            comm = open(f"/proc/{pid}/comm").read().strip()
            if comm not in ("telem_load", "telem_collector"):
                continue
            cmd = open(f"/proc/{pid}/cmdline").read().split("\0")
        except OSError:
            continue
        if comm == "telem_load" or group not in cmd:
            found.add(comm)
    return found
worst, seen, prev = 0.0, set(), cores()
while True:
    time.sleep(1)
    now = cores()
    for c, (tot, idle) in now.items():
        dt = tot - prev.get(c, (0, 0))[0]
        if dt > 0:
            worst = max(worst, 100.0 * (1 - (idle - prev[c][1]) / dt))
    prev = now
    seen |= others()
    with open(out + ".tmp", "w") as f:
        f.write("%.0f %s\n" % (worst, ",".join(sorted(seen)) or "-"))
    os.replace(out + ".tmp", out)
PY
}

# one_start I: runs start I in this shell (so that stop_all sees what it
# started); sets R (rounds judged), D (devices), ACT, WARN and SECS.
one_start() {
    local i=$1 n t0
    R=0 D=0 ACT=0 WARN=0 SECS=0 BUSY=0 OTHERS=-
    work=$(mktemp -d /tmp/telem-wcs.XXXXXX)
    export TELEM_RUNDIR=$work/run TELEM_NODEFILE=$work/nodes
    mkdir -m 700 "$TELEM_RUNDIR"
    for n in n1 n2 n3; do
        "$bin/telemd" --node "$n" --nodefile "$TELEM_NODEFILE" --level 1 \
            --bind none >"$work/$n.out" 2>"$work/$n.log" &
        pids+=("$!")
        wait_file 20 "$work/$n.out" ready || { echo "telemd $n did not start" >&2; return 1; }
    done
    "$bin/telem_collect" --period "$period" --reps 5 --spread --devices 0 \
        --local-devices 0 --name "wcs-$$-$i" >"$work/collect.out" \
        2>"$work/collect.log" &
    pids+=("$!")
    wait_file 30 "$work/collect.out" ready || { echo "telem_collect did not start" >&2; return 1; }
    monitor "wcs-$$-$i" "$work/quiet" &
    pids+=("$!")
    t0=$SECONDS
    "$bin/telem_watch" --name wcs --detector "$spec" --json \
        >"$work/watch.out" 2>"$work/watch.log" &
    pids+=("$!")
    while ((SECONDS - t0 < limit)); do
        read -r R D < <(rounds_judged wcs)
        ((R >= rounds)) && break
        sleep 1
    done
    if [ -n "$keep" ]; then
        cp "$work/watch.out" "$keep/start-$i.events.json"
        "$bin/telem_client" --timeout 5000 -f json query cg_dgemm_seconds \
            >"$keep/start-$i.rounds.json" 2>/dev/null || true
    fi
    SECS=$((SECONDS - t0))
    [ ! -f "$work/quiet" ] || read -r BUSY OTHERS <"$work/quiet"
    ACT=$(grep '"type":"event"' "$work/watch.out" | grep -c '"severity":"act"' || true)
    WARN=$(grep '"type":"event"' "$work/watch.out" | grep -c '"severity":"warn"' || true)
    grep '"type":"event"' "$work/watch.out" | sed 's/^/    /' || true
    stop_all
    ((R >= rounds)) || { echo "start $i judged $R of $rounds rounds in $limit s" >&2; return 1; }
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "# watch_clean_starts.sh -n $starts -r $rounds -d $spec   $(date -u +%FT%TZ)  nproc=$(nproc)  load=$load0"
quiet=0 tot_dr=0 tot_act=0 tot_warn=0 failed=0
busy=0 busy_dr=0 busy_act=0 busy_warn=0
for ((i = 1; quiet < starts && i <= 3 * starts; i++)); do
    if ! one_start "$i"; then
        stop_all
        failed=$((failed + 1))
        echo "start $i: could not run"
        continue
    fi
    what="quiet"
    if ((BUSY > 70)) || [ "$OTHERS" != - ]; then
        what="busy (a core ${BUSY} % busy in a second; others: $OTHERS): not counted"
        busy=$((busy + 1)) busy_dr=$((busy_dr + R * D))
        busy_act=$((busy_act + ACT)) busy_warn=$((busy_warn + WARN))
    else
        quiet=$((quiet + 1)) tot_dr=$((tot_dr + R * D))
        tot_act=$((tot_act + ACT)) tot_warn=$((tot_warn + WARN))
    fi
    echo "start $i: rounds $R devices $D act $ACT warn $WARN (${SECS} s, load $(cut -d' ' -f1 /proc/loadavg), busiest core ${BUSY} %) $what"
done
echo "total: quiet starts $quiet of $starts wanted, device-rounds $tot_dr, ACT $tot_act, WARN $tot_warn; load before $load0, after $(cut -d' ' -f1-3 /proc/loadavg)"
echo "busy starts (not counted): $busy, device-rounds $busy_dr, ACT $busy_act, WARN $busy_warn; starts that could not run: $failed"
((tot_act == 0)) || exit 1
((quiet == starts && failed == 0)) || exit 2
