# it_slurm_net_sbatch.sh - telem_launch in a batch script (`sbatch --no-kill
# -N 3`) on the namespaced cluster of tests/slurm/netns.sh: the launcher
# then runs on the allocation's first node n1 (in its namespace), not on
# the login node.  Scenarios (tests/slurm/faults.sh says what each checks):
#   partition n2   n2's link cut: the launcher on n1 names it, gives it
#                  back to Slurm from inside the batch job (the batch host
#                  n1 itself is never given back), the job finishes on n1,n3
#   program n1     the program killed on the launcher's own node: restart
#                  without n1, telem_agg and the dictionary move to n2,n3
#                  while the launcher stays on n1
#   dictd n1       the dictionary's first server killed beside the launcher
# Each job's exit status comes back through a file the batch script writes.
#
# Skipped, with the reason, where it cannot run: not root, no network
# namespaces, or slurm-wlm and munge missing and not installable: the test
# installs them (tests/peer_install.sh) unless there is no apt, the install
# fails, or TELEM_SLURM_INSTALL=0.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "${TELEM_SRC:-$(dirname "${BASH_SOURCE[0]}")/..}/tests/slurm/faults.sh"

net_setup
NET_SBATCH=1
run_scenarios "partition n2" "program n1" "dictd n1"
echo "it_slurm_net_sbatch: ok"
