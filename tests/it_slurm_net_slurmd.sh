# it_slurm_net_slurmd.sh - telem_launch under Slurm on a real network (the
# namespaced cluster of tests/slurm/netns.sh): kill -9 of a node's slurmd,
# on n2 and on the first node n1: telemd's slurmd watch fails the node
# before Slurm marks it DOWN.
# Each scenario is a fresh `salloc -N 3 telem_launch --nodes 2 --resilient
# --exhaust-resources` job on the 4-node cluster; tests/slurm/faults.sh
# says what each fault does and what is checked.
#
# Skipped, with the reason, where it cannot run: not root, no network
# namespaces, or slurm-wlm and munge missing and not installable: the test
# installs them (tests/peer_install.sh) unless there is no apt, the install
# fails, or TELEM_SLURM_INSTALL=0.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "${TELEM_SRC:-$(dirname "${BASH_SOURCE[0]}")/..}/tests/slurm/faults.sh"

net_setup
run_scenarios "slurmd n2" "slurmd n1"
echo "it_slurm_net_slurmd: ok"
