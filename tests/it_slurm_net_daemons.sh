# it_slurm_net_daemons.sh - telem_launch under Slurm on a real network (the
# namespaced cluster of tests/slurm/netns.sh): kill -9 of a node's telemd,
# telem_dictd and a collector, on n2 and on the first node n1: supervision
# restarts the daemon on its node, the job is not restarted.
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
run_scenarios "telemd n2" "telemd n1" "dictd n2" "dictd n1" "collector n2" "collector n1"
echo "it_slurm_net_daemons: ok"
