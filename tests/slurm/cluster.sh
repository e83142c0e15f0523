#!/usr/bin/env bash
# cluster.sh - a real three-node Slurm cluster on this one machine, for
# telem_launch's Slurm tests.
#
#   bash tests/slurm/cluster.sh check          # exit 0 if it can run here,
#                                              # else 77 and the reason
#   bash tests/slurm/cluster.sh up DIR         # start it in DIR (new, empty)
#   source DIR/env                             # SLURM_CONF for the clients
#   bash tests/slurm/cluster.sh down DIR       # stop it, remove DIR
#
# Debian's slurmd is built with --enable-multiple-slurmd, so one slurmctld
# and one `slurmd -N nX` per node, each on its own port on 127.0.0.1, make a
# real multi-node cluster on one host.  It runs with its own private munged
# (own key and socket), proctrack/linuxproc and task/none (no cgroup tree
# needed), per-node spool, pid and log files, and short failure timeouts.
# Ports are chosen free at start.  Needs root; installs slurm-wlm and munge
# only when CI=true or TELEM_SLURM_INSTALL=1.
set -euo pipefail

NODES=${TELEM_SLURM_NODES:-3}
NEEDED=(slurmctld slurmd munged srun salloc scontrol sinfo)

check() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "needs root (slurmd runs as root)"; return 77
    fi
    local missing=()
    for p in "${NEEDED[@]}"; do command -v "$p" >/dev/null || missing+=("$p"); done
    if ((${#missing[@]})); then
        if [ "${CI:-}" = true ] || [ "${TELEM_SLURM_INSTALL:-0}" = 1 ]; then
            { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
                apt-get install -y -qq --no-install-recommends slurm-wlm \
                munge; } >/dev/null 2>&1 \
                || { echo "installing slurm-wlm and munge failed"; return 77; }
        else
            echo "missing ${missing[*]} (apt-get install slurm-wlm munge, or" \
                 "set TELEM_SLURM_INSTALL=1 to let the test install them)"
            return 77
        fi
    fi
    return 0
}

free_ports() {   # free_ports N: N free TCP ports on 127.0.0.1
    python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

start_munge() {
    local d=$1/munge
    mkdir -p "$d"
    chmod 0755 "$1" "$d"            # munged wants every directory searchable
    dd if=/dev/urandom of="$d/munge.key" bs=1024 count=1 status=none
    chmod 0400 "$d/munge.key"
    munged --force --socket="$d/munge.sock" --key-file="$d/munge.key" \
        --pid-file="$d/munged.pid" --log-file="$d/munged.log" \
        --seed-file="$d/munged.seed"
}

write_conf() {
    local dir=$1 ports cpus mem
    read -r -a ports <<<"$(free_ports $((NODES + 1)))"
    cpus=$(nproc)
    mem=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2))
    {
        echo "ClusterName=telemtest"
        echo "SlurmctldHost=localhost(127.0.0.1)"
        echo "SlurmctldPort=${ports[0]}"
        echo "AuthType=auth/munge"
        echo "CredType=cred/munge"
        echo "AuthInfo=socket=$dir/munge/munge.sock"
        echo "SlurmUser=root"
        echo "SlurmdUser=root"
        echo "StateSaveLocation=$dir/state"
        echo "SlurmdSpoolDir=$dir/spool/%n"
        echo "SlurmctldPidFile=$dir/slurmctld.pid"
        echo "SlurmdPidFile=$dir/slurmd.%n.pid"
        echo "SlurmctldLogFile=$dir/slurmctld.log"
        echo "SlurmdLogFile=$dir/slurmd.%n.log"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "JobCompType=jobcomp/none"
        echo "SchedulerType=sched/builtin"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_Core"
        echo "MpiDefault=none"
        echo "ReturnToService=2"
        echo "SlurmdTimeout=5"
        echo "MessageTimeout=3"
        echo "KillWait=2"
        for i in $(seq "$NODES"); do
            echo "NodeName=n$i NodeHostname=localhost NodeAddr=127.0.0.1" \
                 "Port=${ports[$i]} CPUs=$cpus RealMemory=$mem State=UNKNOWN"
        done
        echo "PartitionName=debug Nodes=n[1-$NODES] Default=YES" \
             "MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
    } >"$dir/slurm.conf"
    echo "export SLURM_CONF=$dir/slurm.conf" >"$dir/env"
}

up() {
    local dir=$1
    [ -n "$dir" ] && mkdir -p "$dir" && [ -z "$(ls -A "$dir")" ] \
        || { echo "cluster.sh up: DIR must be a new or empty directory" >&2; exit 2; }
    dir=$(cd "$dir" && pwd)
    mkdir -p "$dir/state"
    for i in $(seq "$NODES"); do mkdir -p "$dir/spool/n$i"; done
    start_munge "$dir"
    write_conf "$dir"
    export SLURM_CONF=$dir/slurm.conf
    slurmctld
    for i in $(seq "$NODES"); do slurmd -N "n$i"; done
    # Every node idle, bounded: 30 s.
    for _ in $(seq 300); do
        if [ "$(sinfo -h -N -o '%t' 2>/dev/null | grep -c '^idle')" = "$NODES" ]; then
            return 0
        fi
        sleep 0.1
    done
    echo "cluster.sh: nodes did not become idle:" >&2
    sinfo -N 2>&1 >&2 || true
    tail -n 20 "$dir/slurmctld.log" >&2 || true
    return 1
}

stop_pidfile() {
    local f=$1 pid
    [ -f "$f" ] || return 0
    pid=$(cat "$f")
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
    kill -KILL "$pid" 2>/dev/null || true
}

down() {
    local dir=$1
    [ -f "$dir/slurm.conf" ] || { rm -rf "$dir"; return 0; }
    export SLURM_CONF=$dir/slurm.conf
    scancel --user=root 2>/dev/null || true
    for f in "$dir"/slurmd.*.pid; do stop_pidfile "$f"; done
    stop_pidfile "$dir/slurmctld.pid"
    stop_pidfile "$dir/munge/munged.pid"
    if [ "${TELEM_KEEP:-0}" = 1 ]; then echo "kept $dir"; else rm -rf "$dir"; fi
}

case ${1:-} in
check) check ;;
up) check && up "${2:-}" ;;
down) down "${2:?cluster.sh down DIR}" ;;
*) echo "usage: cluster.sh check | up DIR | down DIR" >&2; exit 2 ;;
esac
