#!/usr/bin/env bash
# it_log_bounds.sh - the flush log's bounds on a real telemd
# (docs/telemd.md, "Flush log"):
#  1. --log-max 1 (MiB; segments rotate at a quarter of it): under a load
#     that rotates several segments the directory stays within the bound
#     plus one segment, and segments go oldest first;
#  2. --history 2: once the load stops, segments whose newest point is
#     older than the bound are removed, and a query reaching back further
#     returns no point older than the bound.
# Every wait is on telemd's status figures (flushes, log_segments).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
B=$TELEM_BIN
C="$B/telem_client"
export TELEM_NODE=n1
MAX=$((1024 * 1024))

# stat_of FIELD: the node's status figure.
stat_of() {
    "$C" status -f json | python3 -c \
        "import json,sys; print(json.load(sys.stdin)['nodes'][0]['$1'])"
}
# flushed_after N: a flush later than the count N.
flushed_after() { [ "$(stat_of flushes)" -gt "$1" ]; }
# load: one point for each of 3,000 counters, then waits for a flush.
load() {
    local f
    f=$(stat_of flushes)
    "$B/push_demo" --flood 3000 --count 0 --quiet || fail "push_demo"
    wait_for flushed_after "$((f + 1))" || fail "no flush after the load"
}
segs() { ls "$TELEM_RUNDIR/n1/log" | grep '\.tseg$' | sort; }

# ---- 1. --log-max ----------------------------------------------------
start_node n1 --flush 1 --log-max 1
seen=()
for round in $(seq 1 40); do
    load
    mapfile -t now < <(segs)
    for s in "${now[@]}"; do
        [[ " ${seen[*]} " == *" $s "* ]] || seen+=("$s")
    done
    # what is left is the newest of every segment seen: oldest removed first
    keep=("${seen[@]: -${#now[@]}}")
    [ "${now[*]}" = "${keep[*]}" ] || fail "removed out of order: ${now[*]} of ${seen[*]}"
    total=$(cat "$TELEM_RUNDIR"/n1/log/*.tseg | wc -c)
    largest=$(for s in "${now[@]}"; do wc -c <"$TELEM_RUNDIR/n1/log/$s"; done | sort -n | tail -n 1)
    [ "$total" -le $((MAX + largest)) ] || fail "log $total bytes > $MAX + one segment ($largest)"
    [ $((${#seen[@]} - ${#now[@]})) -ge 3 ] && break
done
[ $((${#seen[@]} - ${#now[@]})) -ge 3 ] || fail "fewer than 3 segments removed in 40 loads"
echo "it_log_bounds: --log-max 1: ${#seen[@]} segments written, ${#now[@]} kept, $total bytes"
stop_node n1

# ---- 2. --history ----------------------------------------------------
rm -rf "$TELEM_RUNDIR/n1"
start_node n1 --flush 1 --log-max 1 --history 2
for round in 1 2 3; do load; done
before=$(segs | head -n 1)
# the flood's segments age out; telemd's own samples keep committing
gone() { ! [ -e "$TELEM_RUNDIR/n1/log/$before" ]; }
wait_for gone || fail "segment $before outlived --history 2"
t=$(date +%s%N)
"$C" query 'demo_flood_total' --start -1h -f json >"$T/q.json" || fail "query"
python3 - "$T/q.json" "$t" <<'PY' || fail "query reached past --history: $(head -c 400 "$T/q.json")"
import json, sys
cut = int(sys.argv[2]) - 2 * 10**9
old = [p[0] for s in json.load(open(sys.argv[1]))["series"] for p in s["points"] if p[0] < cut]
assert not old, (len(old), "points older than the bound")
PY
echo "it_log_bounds: --history 2: $before removed, no older point answered"
echo "it_log_bounds: ok"
