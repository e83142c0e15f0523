#!/usr/bin/env bash
# nsnodes.sh - a cluster of up to 1,000 nodes on this one machine, each node
# a network namespace with its own address on a bridge and its own UTS
# namespace (hostname nI).  For the fan-in benchmark (bench/fanin.sh) and
# its test (tests/it_fanin.sh): telem_launch starts the job's daemons on
# these nodes through its command template, so the figures are the
# launcher's and the daemons' own, over real TCP (CURVE) between addresses.
#
#   nsnodes.sh check                 0 if it can run here, else 77 and why
#   nsnodes.sh up DIR N [--interval S]   make nodes n1..nN (DIR new/empty)
#   nsnodes.sh down DIR              remove everything DIR names; 0 when
#                                    nothing is left, 1 naming what is
#   nsnodes.sh exec DIR NODE CMD...  run CMD in NODE's net and UTS ns
#   nsnodes.sh template DIR          the --exec-template for telem_launch
#   nsnodes.sh hosts DIR             n1,n2,...,nN (telem_launch --hosts)
#   nsnodes.sh addr DIR NODE         NODE's address
#   nsnodes.sh pids DIR              every process in any node's namespace
#   nsnodes.sh left DIR              what of the cluster still exists
#
# Layout: 10.X.Y.0/22 (Y a multiple of 4; a /24 does not hold 256 nodes and
# the bridge), the bridge in the root namespace has 10.X.Y.1, node nI the
# (I+1)th address after the network's.  Names carry a random 5-character id
# (tf<ID>br, tf<ID>v<I>, tf<ID>n<I>), so two clusters run at once; the id,
# the prefix and the size are written to DIR/net before anything is made,
# and `down` removes every namespace and link carrying the id, so it also
# cleans what a failed `up` left.  Subnets are picked under the lock that
# tests/slurm/netns.sh takes, so the two never pick the same one.
#
# As telem_launch's template (`exec DIR {node}`), `exec` gives each node its
# own address: the launcher has one --bind for every template node, and a
# node bound to 0.0.0.0 would be named by its host name, which nothing here
# resolves.  So `--bind 0.0.0.0` in the command becomes `--bind <the node's
# address>` (what Slurm's NodeAddr gives each node under srun), and telemd
# gets `--interval S` when `up` was given one (the node-metric sampling
# period the benchmark sizes).  nsenter replaces itself with the command, so
# the launcher's pid and signals are the daemon's own.
set -euo pipefail

LOCK=/run/lock/telem-netns.lock
MAX_NODES=1000

check() {
    [ "$(id -u)" = 0 ] || { echo "needs root to make network namespaces"; return 77; }
    local t
    for t in ip nsenter unshare; do
        command -v "$t" >/dev/null \
            || { echo "missing $t (apt-get install iproute2 util-linux)"; return 77; }
    done
    local probe=tfchk$$ err
    if ! err=$(ip netns add "$probe" 2>&1); then
        echo "cannot create a network namespace: $err"; return 77
    fi
    ip netns del "$probe" 2>/dev/null || true
    return 0
}

load() {   # load DIR: reads DIR/net (ID, NODES, NET_A, NET_B, INTERVAL)
    [ -f "$1/net" ] || { echo "nsnodes.sh: $1 is not a cluster" >&2; exit 2; }
    DIR=$(cd "$1" && pwd)
    # shellcheck disable=SC1091
    source "$DIR/net"
}
ns_of() { echo "tf${ID}n${1#n}"; }
uts_of() { echo "$DIR/ns/$1.uts"; }
addr_of() {   # the (I+1)th address after 10.A.B.0
    local k=$((${1#n} + 1))
    echo "10.$NET_A.$((NET_B + k / 256)).$((k % 256))"
}

node_ok() {
    [[ ${1:-} =~ ^n[1-9][0-9]*$ ]] && [ "${1#n}" -le "$NODES" ] \
        || { echo "nsnodes.sh: no node '${1:-}' (n1..n$NODES)" >&2; exit 2; }
}

pick_net() {   # a free 10.A.B.0/22: none of its four /24s in use here
    local a b used k ok
    used=$(ip -4 -o addr show; ip -4 route show)
    for _ in $(seq 200); do
        a=$((RANDOM % 200 + 20)); b=$(((RANDOM % 64) * 4)); ok=1
        for k in 0 1 2 3; do
            case $used in *"10.$a.$((b + k))."*) ok=0 ;; esac
        done
        [ "$ok" = 1 ] && { echo "$a $b"; return 0; }
    done
    echo "nsnodes.sh: no free 10.A.B.0/22 found" >&2; return 1
}

# Every node's links and addresses in two ip batches per 64 nodes plus one
# ip per node (its namespace side): ~10 ms a node instead of ~60.
make_nodes() {
    local br=tf${ID}br i ns batch
    ip link add "$br" type bridge
    ip addr add "10.$NET_A.$NET_B.1/22" dev "$br"
    ip link set "$br" up
    batch=$DIR/ip.batch
    : >"$batch"
    for i in $(seq "$NODES"); do
        echo "netns add $(ns_of n$i)" >>"$batch"
    done
    ip -batch "$batch"
    : >"$batch"
    for i in $(seq "$NODES"); do
        ns=$(ns_of n$i)
        echo "link add tf${ID}v$i type veth peer name eth0 netns $ns" >>"$batch"
        echo "link set tf${ID}v$i master $br up" >>"$batch"
    done
    ip -batch "$batch"
    for i in $(seq "$NODES"); do
        printf 'addr add %s/22 dev eth0\nlink set lo up\nlink set eth0 up\n' \
            "$(addr_of n$i)" | ip -n "$(ns_of n$i)" -batch -
        touch "$(uts_of n$i)"
        unshare --uts="$(uts_of n$i)" hostname "n$i"
    done
    rm -f "$batch"
}

# The kernel's neighbour (ARP) table is one table for every namespace, and
# its default hard limit (net.ipv4.neigh.default.gc_thresh3, 1,024 entries)
# is what a cluster of a few hundred nodes reaches: the host, telem_agg and
# the watcher on n1, the relays and the dictionary's replicas each learn the
# addresses they talk to.  Past the limit the kernel logs "neighbor table
# overflow" and new connections between nodes wait until entries expire:
# at 256 nodes, queries that should take 80 ms missed nodes for whole
# deadlines.  `up` raises the three thresholds to fit N nodes talking to
# every other (never lowering them) and saves the values it found, once,
# in $NEIGH_SAVED; the last `down` of every cluster puts them back.
NEIGH_SAVED=/run/lock/telem-nsnodes-neigh.saved
NEIGH_KEYS="gc_thresh1 gc_thresh2 gc_thresh3"

neigh_raise() {   # neigh_raise N (under the lock)
    local n=$1 k cur want i=0
    [ -f "$NEIGH_SAVED" ] || for k in $NEIGH_KEYS; do
        echo "$k $(sysctl -n "net.ipv4.neigh.default.$k")"
    done >"$NEIGH_SAVED"
    for want in $((n * 8)) $((n * 32)) $((n * 64)); do
        i=$((i + 1))
        k=$(echo "$NEIGH_KEYS" | cut -d' ' -f$i)
        cur=$(sysctl -n "net.ipv4.neigh.default.$k")
        [ "$want" -gt "$cur" ] && sysctl -qw "net.ipv4.neigh.default.$k=$want"
    done
    return 0
}

neigh_restore() {   # when no cluster of this script is left (under the lock)
    local k v
    [ -f "$NEIGH_SAVED" ] || return 0
    ip netns list 2>/dev/null | awk '{print $1}' | grep -q '^tf[0-9a-f]\{5\}n' \
        && return 0
    while read -r k v; do
        sysctl -qw "net.ipv4.neigh.default.$k=$v" || true
    done <"$NEIGH_SAVED"
    rm -f "$NEIGH_SAVED"
}

up() {
    local d=${1:-} n=${2:-} interval=0
    shift 2 || true
    while [ $# -gt 0 ]; do
        case $1 in
        --interval) interval=${2:-}; shift 2 || true ;;
        *) echo "nsnodes.sh up: unknown option '$1'" >&2; exit 2 ;;
        esac
    done
    [[ $interval =~ ^[0-9]+$ ]] \
        || { echo "nsnodes.sh up: --interval takes whole seconds" >&2; exit 2; }
    [[ $n =~ ^[1-9][0-9]*$ ]] && [ "$n" -le $MAX_NODES ] \
        || { echo "nsnodes.sh up: N must be 1-$MAX_NODES" >&2; exit 2; }
    [ -n "$d" ] && mkdir -p "$d" && [ -z "$(ls -A "$d")" ] \
        || { echo "nsnodes.sh up: DIR must be a new or empty directory" >&2; exit 2; }
    DIR=$(cd "$d" && pwd)
    mkdir -p "$DIR/ns" "$(dirname "$LOCK")"
    exec 9>"$LOCK"
    flock 9
    ID=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' | cut -c1-5)
    read -r NET_A NET_B < <(pick_net)
    NODES=$n
    INTERVAL=$interval
    printf 'ID=%s\nNODES=%s\nNET_A=%s\nNET_B=%s\nINTERVAL=%s\n' \
        "$ID" "$NODES" "$NET_A" "$NET_B" "$INTERVAL" >"$DIR/net"
    neigh_raise "$NODES"
    make_nodes
    exec 9>&-
    echo "nsnodes: $NODES nodes on 10.$NET_A.$NET_B.0/22 (id $ID, bridge tf${ID}br)"
}

# --- processes and what is left ----------------------------------------------

ns_inodes() {   # the inode of every namespace of the cluster, one a line
    local f
    for f in /run/netns/tf"${ID}"n*; do
        [ -e "$f" ] && stat -L -c %i "$f" 2>/dev/null
    done
    return 0
}

cluster_pids() {   # every process whose network namespace is a node's
    local inos
    inos=$(ns_inodes | tr '\n' '|')
    [ -n "$inos" ] || return 0
    # One scan of /proc for the whole cluster (not one per node).
    find /proc/[0-9]*/ns/net -maxdepth 0 -printf '%p %l\n' 2>/dev/null \
        | awk -v inos="|$inos" '{
              ino = $2; gsub(/[^0-9]/, "", ino)
              if (index(inos, "|" ino "|")) { split($1, p, "/"); print p[3] } }'
}

left() {   # prints what is left; 0 when nothing
    local out
    out=$( { ip netns list 2>/dev/null | awk '{print "netns " $1}' \
                 | grep " tf${ID}n" || true
             ip -o link show 2>/dev/null | awk -F': ' '{print "link " $2}' \
                 | grep " tf${ID}" || true
             cluster_pids | sed 's/^/pid /'
             grep -F "$DIR/ns/" /proc/self/mountinfo | awk '{print "mount " $5}' \
                 || true; } )
    [ -z "$out" ] && return 0
    echo "$out"; return 1
}

kill_all() {   # TERM every process of the cluster, KILL what stays 5 s
    local p
    for p in $(cluster_pids); do kill -TERM "$p" 2>/dev/null || true; done
    for _ in $(seq 100); do
        [ -z "$(cluster_pids)" ] && return 0
        sleep 0.05
    done
    for p in $(cluster_pids); do kill -KILL "$p" 2>/dev/null || true; done
    for _ in $(seq 100); do [ -z "$(cluster_pids)" ] && return 0; sleep 0.05; done
}

down() {
    local d=$1 ns link m
    [ -d "$d" ] || return 0
    [ -f "$d/net" ] || { rm -rf "$d"; return 0; }
    load "$d"
    kill_all
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^tf${ID}n" || true); do
        ip netns del "$ns" 2>/dev/null || true
    done
    for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' \
                  | sed 's/@.*//' | grep "^tf${ID}" || true); do
        ip link del "$link" 2>/dev/null || true
    done
    for m in "$DIR"/ns/*.uts; do
        [ -e "$m" ] && umount "$m" 2>/dev/null || true
    done
    if ! left; then
        echo "nsnodes.sh down: the above is left of cluster $ID" >&2
        return 1
    fi
    mkdir -p "$(dirname "$LOCK")"
    exec 9>"$LOCK"
    flock 9
    neigh_restore
    exec 9>&-
    if [ "${TELEM_KEEP:-0}" = 1 ]; then echo "kept $DIR"; else rm -rf "$DIR"; fi
}

# --- running on a node --------------------------------------------------------

node_exec() {   # node_exec NODE CMD...: see the header for the rewrites
    local node=$1 addr args=() prog='' a
    shift
    addr=$(addr_of "$node")
    while [ $# -gt 0 ]; do
        a=$1; shift
        if [ "$a" = --bind ] && [ "${1:-}" = 0.0.0.0 ]; then
            args+=(--bind "$addr"); shift; continue
        fi
        if [ -z "$prog" ] && [ "$a" != env ] && [[ ! $a =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; then
            prog=${a##*/}
        fi
        args+=("$a")
    done
    [ ${#args[@]} -gt 0 ] || { echo "nsnodes.sh exec: no command" >&2; exit 2; }
    if [ "$prog" = telemd ] && [ "${INTERVAL:-0}" -gt 0 ]; then
        args+=(--interval "$INTERVAL")
    fi
    exec nsenter --net="/run/netns/$(ns_of "$node")" --uts="$(uts_of "$node")" \
        -- "${args[@]}"
}

usage() {
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
check) check ;;
up) check && up "$@" ;;
down) down "${1:?nsnodes.sh down DIR}" ;;
exec) load "${1:?nsnodes.sh exec DIR NODE CMD...}"; node_ok "${2:-}"
      node_exec "${@:2}" ;;
template) load "${1:?nsnodes.sh template DIR}"
          echo "bash $(cd "$(dirname "$0")" && pwd)/nsnodes.sh exec $DIR {node}" ;;
hosts) load "${1:?nsnodes.sh hosts DIR}"; seq -f 'n%g' 1 "$NODES" | paste -sd, ;;
addr) load "${1:?nsnodes.sh addr DIR NODE}"; node_ok "${2:-}"; addr_of "$2" ;;
pids) load "${1:?nsnodes.sh pids DIR}"; cluster_pids ;;
left) load "${1:?nsnodes.sh left DIR}"; left ;;
-h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) usage ;;
esac
