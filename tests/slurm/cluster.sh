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
# where they are missing (tests/peer_install.sh; TELEM_SLURM_INSTALL=0
# leaves them to the user).
set -euo pipefail

NODES=${TELEM_SLURM_NODES:-3}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

check() { slurm_check; }

write_conf() {
    local dir=$1 ports cpus mem
    read -r -a ports <<<"$(slurm_free_ports 127.0.0.1 $((NODES + 1)))"
    cpus=$(nproc)
    mem=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2))
    {
        slurm_conf_common "$dir"
        echo "SlurmctldHost=localhost(127.0.0.1)"
        echo "SlurmctldPort=${ports[0]}"
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
    slurm_start_munge "$dir"
    write_conf "$dir"
    export SLURM_CONF=$dir/slurm.conf
    slurmctld
    for i in $(seq "$NODES"); do slurmd -N "n$i"; done
    # Every node idle, bounded: 30 s.
    slurm_wait_idle "$NODES" && return 0
    echo "cluster.sh: nodes did not become idle:" >&2
    sinfo -N 2>&1 >&2 || true
    tail -n 20 "$dir/slurmctld.log" >&2 || true
    return 1
}

down() {
    local dir=$1
    [ -f "$dir/slurm.conf" ] || { rm -rf "$dir"; return 0; }
    export SLURM_CONF=$dir/slurm.conf
    scancel --user=root 2>/dev/null || true
    for f in "$dir"/slurmd.*.pid; do slurm_stop_pidfile "$f"; done
    slurm_kill_steps "$dir"
    slurm_stop_pidfile "$dir/slurmctld.pid"
    slurm_stop_pidfile "$dir/munge/munged.pid"
    if [ "${TELEM_KEEP:-0}" = 1 ]; then echo "kept $dir"; else rm -rf "$dir"; fi
}

case ${1:-} in
check) check ;;
up) check && up "${2:-}" ;;
down) down "${2:?cluster.sh down DIR}" ;;
*) echo "usage: cluster.sh check | up DIR | down DIR" >&2; exit 2 ;;
esac
