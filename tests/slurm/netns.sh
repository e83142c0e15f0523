#!/usr/bin/env bash
# netns.sh - a Slurm cluster on this one machine whose nodes are on a real
# network: each node is a network namespace with its own address on a
# bridge, and its own UTS namespace (hostname nX).  For telem_launch's
# fault tests (tests/it_slurm_net*.sh).
#
#   bash tests/slurm/netns.sh check            # 0 if it can run here, else
#                                              # 77 and the reason
#   bash tests/slurm/netns.sh up DIR [NODES]   # start NODES (default 4)
#   source DIR/env                             # SLURM_CONF for the clients
#   bash tests/slurm/netns.sh down DIR         # stop it all, remove DIR
#
# Fault and inspection helpers (NODE is n1..nN):
#   node_exec DIR NODE CMD...   run CMD inside NODE (its net and UTS ns)
#   node_addr DIR NODE          NODE's address
#   node_pids DIR NODE          every process whose network namespace is
#                               NODE's, one pid a line
#   pid_of DIR NODE NAME        pids of NODE's processes whose command
#                               name (comm) is NAME
#   link DIR NODE down|up       set the bridge side of NODE's veth down/up
#   stop DIR NODE [--keep-slurmd]  SIGSTOP every process of NODE
#   cont DIR NODE               SIGCONT every process of NODE
#   kill_slurmd DIR NODE        kill -9 NODE's slurmd (its steps go on)
#   start_slurmd DIR NODE       start NODE's slurmd again
#
# Layout: a bridge in the root namespace holds 10.X.Y.1/24 (X, Y random,
# checked unused on this host), node nI has 10.X.Y.(I+1) on its veth
# (named eth0 inside, `lo` up too).  Bridge, veth and namespace names carry
# a random 5-character id, so two clusters run at once.  slurmctld and a
# private munged run in the root namespace ("the login node", where salloc,
# srun and telem_launch run), slurmctld on the bridge's address; each
# slurmd is started with `nsenter --net=... --uts=...` (slurmd fails to
# start under `ip netns exec`), NodeName=nI NodeHostname=nI NodeAddr=its
# address.  munge's socket is a file, so it is reachable from every
# namespace.  Everything made is named in DIR/net before it is made, so
# `down` removes what a failed `up` left.
#
# "Every process of a node" is every process whose /proc/PID/ns/net is the
# node's namespace: its slurmd, the slurmstepd of each step and everything
# they run there (telemd, telem_dictd, collectors, the program).  `stop`
# freezes all of them, slurmd included, as a hung machine would; that is
# the heartbeat test's fault, and Slurm itself then marks the node DOWN
# after SlurmdTimeout, so the test can compare telem's detection with
# Slurm's.  `--keep-slurmd` leaves slurmd running (a hang of the job's
# processes only, which Slurm never notices).
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
LOCK=/run/lock/telem-netns.lock

check() {
    slurm_check iproute2 || return $?
    local why
    if ! command -v ip >/dev/null; then
        why=$(bash "$SLURM_TESTS/peer_install.sh" \
              --opt-out TELEM_SLURM_INSTALL iproute2) \
            || { echo "missing ip: $why"; return 77; }
    fi
    command -v ip >/dev/null && command -v nsenter >/dev/null \
        && command -v unshare >/dev/null \
        || { echo "missing ip, nsenter or unshare (apt-get install iproute2 util-linux)"; return 77; }
    local probe=tlchk$$ err
    if ! err=$(ip netns add "$probe" 2>&1); then
        echo "cannot create a network namespace: $err"; return 77
    fi
    ip netns del "$probe" 2>/dev/null || true
    return 0
}

# --- the cluster's description, DIR/net --------------------------------------

load() {   # load DIR: reads DIR/net into ID, NODES, NET (10.X.Y)
    DIR=$(cd "$1" && pwd)
    [ -f "$DIR/net" ] || { echo "netns.sh: $DIR is not a cluster" >&2; exit 2; }
    # shellcheck disable=SC1091
    source "$DIR/net"
}
ns_of() { echo "tl${ID}n${1#n}"; }          # namespace of node nI
veth_of() { echo "tl${ID}v${1#n}"; }        # bridge side of its veth
bridge() { echo "tl${ID}br"; }
uts_of() { echo "$DIR/ns/$1.uts"; }
node_addr() { echo "$NET.$((${1#n} + 1))"; }
ns_enter() { nsenter --net="/run/netns/$(ns_of "$1")" --uts="$(uts_of "$1")" "${@:2}"; }

pick_net() {   # a 10.X.Y prefix no address or route of this host uses
    local x y used
    used=$(ip -4 -o addr show; ip -4 route show)
    for _ in $(seq 100); do
        x=$((RANDOM % 200 + 20)); y=$((RANDOM % 256))
        case $used in *"10.$x.$y."*) continue ;; esac
        echo "10.$x.$y"; return 0
    done
    echo "netns.sh: no free 10.X.Y.0/24 found" >&2; return 1
}

# --- up ----------------------------------------------------------------------

make_net() {
    local br n ns v
    br=$(bridge)
    ip link add "$br" type bridge
    ip addr add "$NET.1/24" dev "$br"
    ip link set "$br" up
    for i in $(seq "$NODES"); do
        n=n$i; ns=$(ns_of $n); v=$(veth_of $n)
        ip netns add "$ns"
        ip link add "$v" type veth peer name "tl${ID}p$i"
        ip link set "tl${ID}p$i" netns "$ns"
        ip -n "$ns" link set "tl${ID}p$i" name eth0
        ip -n "$ns" addr add "$(node_addr $n)/24" dev eth0
        ip -n "$ns" link set lo up
        ip -n "$ns" link set eth0 up
        ip link set "$v" master "$br"
        ip link set "$v" up
        touch "$(uts_of $n)"
        unshare --uts="$(uts_of $n)" hostname "$n"
    done
}

write_conf() {
    local cpus mem port
    port=$(slurm_free_ports 0.0.0.0 1)
    cpus=$(nproc)
    mem=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2))
    {
        slurm_conf_common "$DIR"
        echo "SlurmctldHost=localhost($NET.1)"
        echo "SlurmctldPort=$port"
        for i in $(seq "$NODES"); do
            echo "NodeName=n$i NodeHostname=n$i NodeAddr=$(node_addr n$i)" \
                 "Port=6818 CPUs=$cpus RealMemory=$mem State=UNKNOWN"
        done
        echo "PartitionName=debug Nodes=n[1-$NODES] Default=YES" \
             "MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
    } >"$DIR/slurm.conf"
    echo "export SLURM_CONF=$DIR/slurm.conf" >"$DIR/env"
}

start_slurmd() {   # start_slurmd NODE (after load)
    SLURM_CONF=$DIR/slurm.conf ns_enter "$1" slurmd -N "$1"
}

up() {
    local d=${1:-}
    [ -n "$d" ] && mkdir -p "$d" && [ -z "$(ls -A "$d")" ] \
        || { echo "netns.sh up: DIR must be a new or empty directory" >&2; exit 2; }
    NODES=${2:-4}
    [[ $NODES =~ ^[1-9][0-9]?$ ]] && [ "$NODES" -le 60 ] \
        || { echo "netns.sh up: NODES must be 1-60" >&2; exit 2; }
    DIR=$(cd "$d" && pwd)
    mkdir -p "$DIR/state" "$DIR/ns"
    for i in $(seq "$NODES"); do mkdir -p "$DIR/spool/n$i"; done
    mkdir -p "$(dirname "$LOCK")"
    # One cluster at a time picks its subnet and names and takes them.
    exec 9>"$LOCK"
    flock 9
    ID=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' | cut -c1-5)
    NET=$(pick_net)
    printf 'ID=%s\nNODES=%s\nNET=%s\n' "$ID" "$NODES" "$NET" >"$DIR/net"
    make_net
    exec 9>&-
    slurm_start_munge "$DIR"
    write_conf
    export SLURM_CONF=$DIR/slurm.conf
    slurmctld
    for i in $(seq "$NODES"); do start_slurmd "n$i"; done
    slurm_wait_idle "$NODES" && return 0
    echo "netns.sh: nodes did not become idle:" >&2
    sinfo -N 2>&1 >&2 || true
    tail -n 20 "$DIR/slurmctld.log" >&2 || true
    return 1
}

# --- processes of a node -----------------------------------------------------

node_pids() {   # node_pids NODE (after load)
    local ino p
    ino=$(stat -L -c %i "/run/netns/$(ns_of "$1")" 2>/dev/null) || return 0
    # find, not a readlink per process: a down scans /proc many times.
    for p in $(find /proc/[0-9]*/ns/net -maxdepth 0 -lname "net:?$ino?" 2>/dev/null); do
        p=${p#/proc/}; echo "${p%%/*}"
    done
    return 0
}

pid_of() {   # pid_of NODE NAME
    local p
    for p in $(node_pids "$1"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] && echo "$p"
    done
    return 0
}

slurmd_pid() { cat "$DIR/slurmd.$1.pid" 2>/dev/null || true; }

stopped() { [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = T ]; }

stop_node() {   # stop_node NODE [--keep-slurmd]: until every one is stopped
    local keep='' p left
    [ "${2:-}" = --keep-slurmd ] && keep=$(slurmd_pid "$1")
    for _ in $(seq 100); do
        left=0
        for p in $(node_pids "$1"); do
            [ "$p" = "$keep" ] && continue
            stopped "$p" && continue
            kill -STOP "$p" 2>/dev/null && left=1
        done
        [ "$left" = 0 ] && return 0
        sleep 0.02
    done
    echo "netns.sh stop: $1 kept starting processes" >&2; return 1
}

cont_node() {
    local p
    for p in $(node_pids "$1"); do kill -CONT "$p" 2>/dev/null || true; done
}

# --- down ----------------------------------------------------------------------

kill_node() {   # every process of the node: TERM, then KILL (bounded)
    local p
    cont_node "$1"
    for p in $(node_pids "$1"); do kill -TERM "$p" 2>/dev/null || true; done
    for _ in $(seq 100); do
        [ -z "$(node_pids "$1")" ] && return 0
        sleep 0.05
    done
    for p in $(node_pids "$1"); do kill -KILL "$p" 2>/dev/null || true; done
    for _ in $(seq 100); do [ -z "$(node_pids "$1")" ] && return 0; sleep 0.05; done
}

down() {
    local d=$1 n
    [ -d "$d" ] || return 0
    if [ ! -f "$d/net" ]; then
        [ -f "$d/slurm.conf" ] || { rm -rf "$d"; return 0; }
    fi
    DIR=$(cd "$d" && pwd)
    if [ -f "$DIR/slurm.conf" ]; then
        export SLURM_CONF=$DIR/slurm.conf
        timeout 10 scancel --user=root 2>/dev/null || true
    fi
    if [ -f "$DIR/net" ]; then
        source "$DIR/net"
        # slurmd takes about 2 s to stop: stop them all at once.
        for i in $(seq "$NODES"); do
            slurm_stop_pidfile "$DIR/slurmd.n$i.pid" &
        done
        wait
        for i in $(seq "$NODES"); do
            n=n$i
            kill_node "$n"
            ip netns del "$(ns_of $n)" 2>/dev/null || true
            ip link del "$(veth_of $n)" 2>/dev/null || true
            umount "$(uts_of $n)" 2>/dev/null || true
        done
        ip link del "$(bridge)" 2>/dev/null || true
    fi
    slurm_stop_pidfile "$DIR/slurmctld.pid"
    slurm_stop_pidfile "$DIR/munge/munged.pid"
    if [ "${TELEM_KEEP:-0}" = 1 ]; then echo "kept $DIR"; else rm -rf "$DIR"; fi
}

usage() {
    echo "usage: netns.sh check | up DIR [NODES] | down DIR | node_exec DIR NODE CMD..." \
         "| node_addr | node_pids | pid_of DIR NODE NAME | link DIR NODE down|up" \
         "| stop DIR NODE [--keep-slurmd] | cont | kill_slurmd | start_slurmd" >&2
    exit 2
}

node_arg() {   # node_arg DIR NODE: load DIR and check NODE
    load "$1"
    [[ ${2:-} =~ ^n[0-9]+$ ]] && [ "${2#n}" -ge 1 ] && [ "${2#n}" -le "$NODES" ] \
        || { echo "netns.sh: no node '${2:-}' (n1..n$NODES)" >&2; exit 2; }
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
check) check ;;
up) check && up "$@" ;;
down) down "${1:?netns.sh down DIR}" ;;
node_exec)   # nsenter replaces this shell: the caller's pid and signals are CMD's
    node_arg "$@"
    exec nsenter --net="/run/netns/$(ns_of "$2")" --uts="$(uts_of "$2")" "${@:3}" ;;
node_addr) node_arg "$@"; node_addr "$2" ;;
node_pids) node_arg "$@"; node_pids "$2" ;;
pid_of) node_arg "$@"; pid_of "$2" "${3:?pid_of DIR NODE NAME}" ;;
link)
    node_arg "$@"
    case ${3:-} in down|up) ip link set "$(veth_of "$2")" "$3" ;; *) usage ;; esac ;;
stop) node_arg "$@"; stop_node "$2" "${3:-}" ;;
cont) node_arg "$@"; cont_node "$2" ;;
kill_slurmd)
    node_arg "$@"
    p=$(slurmd_pid "$2")
    [ -n "$p" ] && kill -KILL "$p" ;;
start_slurmd) node_arg "$@"; start_slurmd "$2" ;;
*) usage ;;
esac
