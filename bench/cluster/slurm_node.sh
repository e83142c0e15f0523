#!/usr/bin/env bash
# slurm_node.sh - run a command on one node of tests/slurm/netns.sh's
# namespaced Slurm cluster, as bench_fanin --slurm's relay template:
#
#   bash bench/cluster/slurm_node.sh DIR NODE CMD...
#
# The command runs in NODE's network and UTS namespaces (netns.sh
# node_exec, which execs the command: its pid and signals are the
# command's), with `--bind 0.0.0.0` turned into `--bind <NODE's address>`,
# as bench/cluster/nsnodes.sh's `exec` does: a relay bound to every
# address would name itself by a host name nothing here resolves.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
net="$here/../../tests/slurm/netns.sh"
[ $# -ge 3 ] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
dir=$1 node=$2
shift 2
addr=$(bash "$net" node_addr "$dir" "$node")
args=()
while [ $# -gt 0 ]; do
    if [ "$1" = --bind ] && [ "${2:-}" = 0.0.0.0 ]; then
        args+=(--bind "$addr"); shift 2; continue
    fi
    args+=("$1"); shift
done
exec bash "$net" node_exec "$dir" "$node" "${args[@]}"
