# faults.sh - the fault scenarios of telem_launch on the namespaced Slurm
# cluster (netns.sh), shared by tests/it_slurm_net_*.sh.  Sourced after
# tests/lib.sh, not run.
#
#   net_setup              skip unless the cluster can run; start a 4-node
#                          cluster (cleaned up on exit, however it exits)
#   scenario FAULT NODE    one fresh job with FAULT on NODE; returns 0 or
#                          1 with the reason in $T/why
#   run_scenarios "F N"... every scenario, one after the other; fails the
#                          test listing those that failed
#
# Each scenario is `salloc --no-kill -N 3 telem_launch --nodes 2
# --resilient --exhaust-resources --rundir ... -- prog` on the 4-node
# cluster (n4 stays idle in Slurm).  The program stores keys in the
# dictionary (telem_dict fill; a fill that exits 0 is acknowledged and
# recorded in OUT/acked), writes OUT/ready-C-NODE, waits for OUT/go-C,
# reads back every acknowledged key (telem_dict check) and writes
# OUT/result-C-NODE atomically.  FAULT is one of
#   telemd dictd            kill -9 of the daemon
#   collector               kill -9 of one telem_collector of the node (the
#                           job runs with --collect); a line must name it
#                           and the node must get its collector back
#   program                  kill -9 of the program (--restart-on-failure)
#   partition                ip link set <veth> down, up after the restart
#   stop                     SIGSTOP of every process of the node (slurmd
#                            included: a hung machine), SIGCONT after
#   slurmd                   kill -9 of the node's slurmd, started again after
# Daemon faults expect supervision's lines ("daemon D on NODE ... restarting
# it", then "restarted") and no job restart; the others exactly one restart
# line naming NODE, the reserve n3 promoted.  Node-loss faults (partition,
# stop, slurmd) also record when Slurm marks the node DOWN (sinfo, polled)
# and require telem's restart line first.  Every scenario then checks: the
# job exits 0, the last run's result on the right nodes, every acknowledged
# key intact, one line per restart, for a fault on n1 telem_agg and the
# dictionary's first server on the new first node, and, once the job and
# the allocation are over, no process left in any node's namespace but its
# slurmd.  Timings go to stdout, one line per scenario.
#
# Environment: TELEM_NET_KEYS (keys per write, default 20),
# TELEM_NET_DOWN_WAIT (seconds to wait for Slurm's DOWN, default 40),
# TELEM_NET_LAUNCH_ARGS (extra telem_launch options, e.g. --bind ADDR).

NETNS=${TELEM_SRC:-$(dirname "${BASH_SOURCE[0]}")/../..}/tests/slurm/netns.sh
KEYS=${TELEM_NET_KEYS:-20}
DOWN_WAIT=${TELEM_NET_DOWN_WAIT:-40}

net() { bash "$NETNS" "$@"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# until_t SECONDS CMD...: runs CMD every 0.05 s until it succeeds or
# SECONDS pass (a bound, not a guess at a duration).
until_t() {
    local end
    end=$(awk -v t="$1" -v n="$(now)" 'BEGIN { printf "%.3f", n + t }')
    shift
    while :; do
        "$@" >/dev/null 2>&1 && return 0
        awk -v e="$end" -v n="$(now)" 'BEGIN { exit !(n > e) }' && return 1
        sleep 0.05
    done
}

net_setup() {
    local rc=0 why
    why=$(net check) || rc=$?
    [ "$rc" = 0 ] || skip "$why"
    S=$(mktemp -d /tmp/telem-net.XXXXXX)
    trap net_cleanup EXIT
    net up "$S" 4 >"$T/cluster.log" 2>&1 \
        || fail "cluster did not start: $(cat "$T/cluster.log")"
    source "$S/env"
    unset TELEM_NODE TELEM_LEVEL TELEM_NODEFILE TELEM_DICT_NODEFILE || true
    cat >"$T/prog.sh" <<EOF
#!/usr/bin/env bash
# The fault tests' program: keys into the dictionary, a go file, a result.
BIN=$TELEM_BIN KEYS=$KEYS
EOF
    cat >>"$T/prog.sh" <<'EOF'
c=$TELEM_RESTART_COUNT n=$TELEM_NODE
put() { echo "$2" >"$1.tmp" && mv "$1.tmp" "$1"; }
put "$OUT/pid-$c-$n" $$
if "$BIN/telem_dict" fill "$KEYS" "k-$n-$c-" >/dev/null 2>"$OUT/fill-$c-$n.err"; then
    put "$OUT/acked/$n-$c" "k-$n-$c- $KEYS"
fi
put "$OUT/ready-$c-$n" "$SLURMD_NODENAME $(hostname)"
while [ ! -e "$OUT/go-$c" ]; do sleep 0.05; done
bad=''
for f in "$OUT"/acked/*; do
    read -r p k <"$f"
    got=$("$BIN/telem_dict" check "$k" "$p" 2>&1) || true
    [ "$got" = "$k" ] || bad="$bad $p:$got/$k"
done
if [ -z "$bad" ]; then
    put "$OUT/result-$c-$n" "ok rank $TELEM_RANK of $TELEM_NNODES on $SLURMD_NODENAME"
else
    put "$OUT/result-$c-$n" "bad keys:$bad"
fi
EOF
    chmod +x "$T/prog.sh"
}

net_cleanup() {
    [ -n "${S:-}" ] && net down "$S" >/dev/null 2>&1 || true
    cleanup
}

# --- one scenario ------------------------------------------------------------

why() { echo "$*" >"$T/why"; return 1; }

launch() {   # launch FAULT: the job in the background, pid in LPID
    local extra=()
    case $1 in
    collector) extra=(--collect "--backend cpu --period 1 --reps 1 --local-devices 0") ;;
    program) extra=(--restart-on-failure) ;;
    esac
    local cmd=("$TELEM_BIN/telem_launch" --rundir "$R" --nodes 2 --resilient
               --exhaust-resources --grace 2 --start-timeout 15 --agg-port 0
               "${extra[@]}")
    # shellcheck disable=SC2206
    cmd+=(${TELEM_NET_LAUNCH_ARGS:-} -- "$T/prog.sh")
    if [ "${NET_SBATCH:-0}" = 1 ]; then
        # The launcher in the batch script, on the allocation's first node
        # n1; its exit status comes back through a file, to a local waiter
        # that stands for salloc.
        { echo '#!/usr/bin/env bash'
          printf '%q ' "${cmd[@]}"
          printf '>%q 2>%q\n' "$W/launch.out" "$W/launch.err"
          printf 'echo $? >%q.tmp && mv %q.tmp %q\n' "$W/rc" "$W/rc" "$W/rc"
        } >"$W/batch.sh"
        OUT=$OUT sbatch --no-kill -N 3 -o "$W/batch.log" "$W/batch.sh" \
            >"$W/sbatch.out" 2>&1 || why "sbatch failed: $(cat "$W/sbatch.out")" || return 1
        ( while [ ! -e "$W/rc" ]; do
              [ -n "$(squeue -h 2>/dev/null)" ] || [ -e "$W/rc" ] || sleep 1
              [ -n "$(squeue -h 2>/dev/null)" ] || [ -e "$W/rc" ] || exit 99
              sleep 0.1
          done; exit "$(cat "$W/rc")" ) &
    else
        OUT=$OUT salloc --no-kill -N 3 "${cmd[@]}" \
            >"$W/launch.out" 2>"$W/launch.err" &
    fi
    LPID=$!
    echo "$LPID" >"$W/salloc.pid"
}

poll_sinfo() {   # in the background: "TIME NODE STATE" lines, until killed
    while :; do
        sinfo -N -h -o '%N %t' 2>/dev/null | sed "s/^/$(now) /" >>"$W/sinfo.log"
        sleep 0.2
    done
}

inject() {   # inject FAULT NODE
    local p
    case $1 in
    telemd) p=$(net pid_of "$S" "$2" telemd) ;;
    dictd) p=$(net pid_of "$S" "$2" telem_dictd) ;;
    collector)
        NCOLL=$(net pid_of "$S" "$2" telem_collector | wc -l)
        p=$(net pid_of "$S" "$2" telem_collector | head -n 1) ;;
    program) p=$(cat "$OUT/pid-0-$2") ;;
    partition) net link "$S" "$2" down; return ;;
    stop) net stop "$S" "$2"; return ;;
    slurmd) net kill_slurmd "$S" "$2"; return ;;
    esac
    [ -n "$p" ] || why "no $1 process in $2's namespace (processes there:" \
        "$(net node_pids "$S" "$2" | xargs -r ps -o comm= -p | tr '\n' ' '))" || return 1
    kill -9 $p
}

repair() {   # repair FAULT NODE: undo a node-loss fault
    case $1 in
    partition) net link "$S" "$2" up ;;
    stop) net cont "$S" "$2" ;;
    slurmd) net start_slurmd "$S" "$2" ;;
    esac
}

ncollectors_is() { [ "$(net pid_of "$S" "$1" telem_collector | wc -l)" = "$2" ]; }

grep_err() { grep -q -- "$1" "$W/launch.err"; }

# expect_line FAULT NODE: waits for the line the fault must produce; sets
# LINE_T (seconds after the fault).
expect_line() {
    local d
    case $1 in
    collector)
        # One of the node's collectors died: a line names it and its node,
        # and the node has as many collectors again (restarted by
        # telem_collect, or telem_collect restarted by supervision).
        until_t 30 grep_err "collector of node $2 .*signal 9\|daemon telem_collect on $2 " \
            || why "no line names the killed collector of $2" || return 1
        LINE_T=$(since "$T0")
        until_t 30 ncollectors_is "$2" "$NCOLL" \
            || why "$2 has $(net pid_of "$S" "$2" telem_collector | wc -l) collectors" \
                   "after the kill, $NCOLL before: none was restarted" || return 1 ;;
    telemd|dictd)
        d=$1; [ "$1" = dictd ] && d=telem_dictd
        until_t 30 grep_err "daemon $d on $2 .*restarting it" \
            || why "no supervision line for $d on $2" || return 1
        LINE_T=$(since "$T0")
        until_t 30 grep_err "daemon $d on $2 restarted" \
            || why "$d on $2 was not restarted" || return 1
        if [ "$1" = dictd ]; then
            until_t 30 grep_err "daemon telem_dictd on $2 rejoined" \
                || why "telem_dictd on $2 did not rejoin" || return 1
        fi ;;
    *)
        until_t 40 grep_err "restart 1 (of at most" \
            || why "no restart line within 40 s" || return 1
        LINE_T=$(since "$T0") ;;
    esac
}

down_time() {   # first time NODE shows down in sinfo.log, seconds after T0
    awk -v n="$1" -v t0="$T0" '$2 == n && $3 ~ /^down/ { printf "%.1f", $1 - t0; exit }' \
        "$W/sinfo.log" 2>/dev/null
}

has_down() { [ -n "$(down_time "$1")" ]; }

check_moved() {   # check_moved: after a restart without n1
    local agg first
    # Its process, its row in launch/daemons, the line that says where.
    agg=$(net pid_of "$S" n2 telem_agg)
    [ -n "$agg" ] || why "no telem_agg on the new first node n2" || return 1
    grep -Eq "^n2	agg	running	[1-9][0-9]*	" "$R/launch/daemons" \
        && grep -Eq "^n1	agg	stopped	0	" "$R/launch/daemons" \
        || why "launch/daemons does not show the observers on n2: $(cat "$R/launch/daemons" 2>&1)" || return 1
    grep_err "info: telem_agg on n2: dashboard and OpenTSDB API" \
        || why "no line says telem_agg moved to n2" || return 1
    # The dictionary's servers are the new nodes' (its map is re-formed on
    # n2,n3 in that order); the node file's line order is only the order
    # the servers registered in.
    first=$(grep -v '^#' "$R/dict_nodes" 2>/dev/null | cut -f1 | sort | paste -sd, -)
    [ "$first" = n2,n3 ] || why "dictionary servers are '$first', not n2,n3: $(cat "$R/dict_nodes" 2>&1)" || return 1
}

only_slurmd_left() {
    local n p left=''
    for n in n1 n2 n3 n4; do
        for p in $(net node_pids "$S" "$n"); do
            [ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmd ] && continue
            left="$left $n:$p"
        done
    done
    [ -z "$left" ] || { echo "$left" >"$W/left"; return 1; }
}

# The job's course after the fault; every check of the brief.
scenario_body() {
    local fault=$1 node=$2 c=0 actives rc=0 down_t='' lines
    launch "$fault" || return 1
    until_t 60 test -f "$OUT/ready-0-n1" -a -f "$OUT/ready-0-n2" \
        || why "the program did not start on n1 and n2: $(tail -n 5 "$W/launch.err")" || return 1
    [ "$(ls "$OUT/acked" | wc -l)" = 2 ] \
        || why "the first run's writes were not acknowledged: $(cat "$OUT"/fill-0-*.err)" || return 1
    poll_sinfo & SPID=$!
    T0=$(now)
    inject "$fault" "$node" || return 1
    expect_line "$fault" "$node" || return 1
    case $fault in
    telemd|dictd|collector) actives="n1 n2" ;;
    *)
        c=1
        if [ "$node" = n1 ]; then actives="n2 n3"; else actives="n1 n3"; fi
        grep_err "restart 1 (of at most [0-9]*): trigger [a-z+]*; nodes $node; promoted n3" \
            || why "restart line: $(grep 'restart ' "$W/launch.err")" || return 1
        until_t 60 test -f "$OUT/ready-1-${actives% *}" -a -f "$OUT/ready-1-${actives#* }" \
            || why "no restarted program on $actives" || return 1
        # telem_agg starts on the new first node once the program runs.
        if [ "$node" = n1 ]; then until_t 30 check_moved; check_moved || return 1; fi ;;
    esac
    case $fault in
    partition|stop|slurmd)
        until_t "$DOWN_WAIT" has_down "$node" || true
        down_t=$(down_time "$node")
        repair "$fault" "$node" ;;
    esac
    local down="Slurm DOWN after $down_t s"
    case $fault in
    partition|stop|slurmd) [ -n "$down_t" ] || down="Slurm DOWN not within $DOWN_WAIT s" ;;
    *) down="the node stays up in Slurm (not waited for)" ;;
    esac
    echo "$fault $node: line after ${LINE_T} s, $down" >"$W/timing"
    if [ -n "$down_t" ]; then
        awk -v a="$LINE_T" -v b="$down_t" 'BEGIN { exit !(a < b) }' \
            || why "Slurm marked $node DOWN (${down_t} s) before telem's restart line (${LINE_T} s)" || return 1
    fi
    touch "$OUT/go-$c"
    until_t 120 bash -c "! kill -0 $LPID" || why "the job did not end within 120 s" || return 1
    wait "$LPID" || rc=$?
    [ "$rc" = 0 ] || why "salloc telem_launch exited $rc: $(tail -n 5 "$W/launch.err")" || return 1
    for n in $actives; do
        grep -q '^ok' "$OUT/result-$c-$n" 2>/dev/null \
            || why "result of $n: $(cat "$OUT/result-$c-$n" 2>&1)" || return 1
    done
    lines=$(grep -c ' restart [0-9]* (of at most' "$W/launch.err" || true)
    [ "$lines" = "$c" ] || why "$lines restart lines, expected $c: $(grep ' restart ' "$W/launch.err")" || return 1
    [ "$(wc -l <"$R/launch/restarts.log")" = "$c" ] || why "restarts.log: $(cat "$R/launch/restarts.log")" || return 1
    until_t 30 bash -c '[ -z "$(squeue -h)" ]' || why "jobs left: $(squeue)" || return 1
    until_t 30 only_slurmd_left \
        || why "processes left in node namespaces:$(cat "$W/left"); $(for p in $(cat "$W/left"); do ps -o pid=,args= -p "${p#*:}"; done)" || return 1
}

# reset: whatever a scenario left (failed or not), before the next one.
reset_cluster() {
    local n p
    kill "${SPID:-}" 2>/dev/null || true
    p=$(cat "$W/salloc.pid" 2>/dev/null || true)
    [ -n "$p" ] && kill -TERM "$p" 2>/dev/null || true
    scancel --user=root 2>/dev/null || true
    for n in n1 n2 n3 n4; do
        net link "$S" "$n" up
        net cont "$S" "$n"
        [ -n "$(net pid_of "$S" "$n" slurmd)" ] || net start_slurmd "$S" "$n" || true
    done
    [ -n "$p" ] && { until_t 30 bash -c "! kill -0 $p" || kill -KILL "$p" 2>/dev/null || true; }
    until_t 60 bash -c '[ "$(sinfo -h -N -o %t | grep -c "^idle$")" = 4 ]' || true
    until_t 30 only_slurmd_left || true
}

scenario() {
    local fault=$1 node=$2 t rc=0
    W=$T/$fault-$node
    R=$W/run OUT=$W/out
    mkdir -p "$W" "$R" "$OUT/acked"
    chmod 755 "$W" "$OUT" "$OUT/acked"
    SPID=''
    t=$(now)
    rm -f "$T/why"
    scenario_body "$fault" "$node" || rc=1
    reset_cluster
    echo "$(cat "$W/timing" 2>/dev/null || echo "$fault $node:"); scenario $(since "$t") s"
    return $rc
}

run_scenarios() {
    local s failed=()
    for s in "$@"; do
        # shellcheck disable=SC2086
        if scenario $s; then
            echo "PASS $s"
        else
            echo "FAIL $s: $(cat "$T/why" 2>/dev/null)"
            failed+=("$s: $(cat "$T/why" 2>/dev/null)")
            echo "--- $s: launcher's stderr (last 15 lines)"
            tail -n 15 "$T/${s% *}-${s#* }/launch.err" 2>/dev/null || true
        fi
    done
    ((${#failed[@]} == 0)) || fail "$(printf '%s; ' "${failed[@]}")"
}
