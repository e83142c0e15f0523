# common.sh - helpers shared by the one-host Slurm test clusters
# (cluster.sh: every slurmd on 127.0.0.1; netns.sh: every slurmd in its own
# network namespace).  Sourced, not run.
#
#   slurm_check [PACKAGE...]   exit status 0 if a cluster can run here, else
#                              77 with the reason on stdout; installs
#                              slurm-wlm, munge and PACKAGE... when Slurm
#                              is missing (peer_install.sh: as root on
#                              Debian, unless TELEM_SLURM_INSTALL=0)
#   slurm_free_ports ADDR N    N free TCP ports on ADDR
#   slurm_start_munge DIR      a private munged (own key, socket, files)
#   slurm_conf_common DIR      the slurm.conf lines both clusters share
#   slurm_wait_idle N          until N nodes are idle (bounded: 30 s)
#   slurm_stop_pidfile FILE    SIGTERM the pid in FILE, SIGKILL after 5 s
#   slurm_kill_steps DIR       SIGKILL every slurmstepd of the cluster in
#                              DIR and everything it runs
#
# Why shared: munged's directory rules, the per-node file names that
# several slurmd on one host need, and the short failure timeouts are the
# same for both clusters; one place keeps them from drifting apart.

SLURM_TESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SLURM_NEEDED=(slurmctld slurmd munged srun salloc scontrol sinfo)

slurm_check() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "needs root (slurmd runs as root)"; return 77
    fi
    local missing=() p why
    for p in "${SLURM_NEEDED[@]}"; do command -v "$p" >/dev/null || missing+=("$p"); done
    ((${#missing[@]})) || return 0
    why=$(bash "$SLURM_TESTS/peer_install.sh" --opt-out TELEM_SLURM_INSTALL \
          slurm-wlm munge "$@") \
        || { echo "missing ${missing[*]}: $why"; return 77; }
    missing=()
    for p in "${SLURM_NEEDED[@]}"; do command -v "$p" >/dev/null || missing+=("$p"); done
    ((${#missing[@]})) || return 0
    echo "slurm-wlm and munge were installed but ${missing[*]} not on PATH"
    return 77
}

slurm_free_ports() {
    python3 - "$1" "$2" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[2])):
    s = socket.socket()
    s.bind((sys.argv[1], 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

slurm_start_munge() {
    local d=$1/munge
    mkdir -p "$d"
    chmod 0755 "$1" "$d"            # munged wants every directory searchable
    dd if=/dev/urandom of="$d/munge.key" bs=1024 count=1 status=none
    chmod 0400 "$d/munge.key"
    munged --force --socket="$d/munge.sock" --key-file="$d/munge.key" \
        --pid-file="$d/munged.pid" --log-file="$d/munged.log" \
        --seed-file="$d/munged.seed"
}

slurm_conf_common() {
    local dir=$1
    echo "ClusterName=telemtest"
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
}

slurm_wait_idle() {
    local n=$1
    for _ in $(seq 300); do
        if [ "$(sinfo -h -N -o '%t' 2>/dev/null | grep -c '^idle')" = "$n" ]; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

slurm_stop_pidfile() {
    local f=$1 pid
    [ -f "$f" ] || return 0
    pid=$(cat "$f")
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
    kill -KILL "$pid" 2>/dev/null || true
}

# A step whose node lost its slurmd (a test kills it) is never ended by
# Slurm: its slurmstepd and the step's processes outlive the cluster unless
# they are killed.  They are this cluster's by SLURM_CONF in slurmstepd's
# environment, which it has from its slurmd.
slurm_kill_steps() {
    local conf=SLURM_CONF=$1/slurm.conf p all=() todo kids
    for p in $(pgrep -x slurmstepd || true); do
        tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "$conf" || continue
        todo=("$p")
        while ((${#todo[@]})); do
            all+=("${todo[@]}")
            kids=$(pgrep -P "$(IFS=,; echo "${todo[*]}")" || true)
            read -r -a todo <<<"$(echo $kids)"
        done
    done
    ((${#all[@]})) && kill -KILL "${all[@]}" 2>/dev/null || true
}
