# it_collect.sh - a collector group on three virtual nodes, and a real load
# that makes one device slow.
#
# telem_collect starts one cpu collector per node (device 0 each, 0.25 s
# rounds of 5 DGEMMs); the device map it prints says which core each node's
# device runs on.  After a clean phase, telem_load contends for the core of
# node n2's device: two threads, each busy 1 ms of every 2 ms.  Short busy
# bursts make the scheduler preempt the collector inside every repetition,
# so each one is slowed alike (long bursts slow some repetitions badly and
# leave others untouched, and a round's median then flips between the two).
# Checked from the stored data (telem_client query): every node has points
# with the right tags, all timestamps sit on the group's epoch grid and are
# shared across nodes, n2's rounds during the load are clearly slower than
# its own clean rounds, and clearly slower than the other nodes' rounds of
# the same timestamps (median over many rounds of the per-round ratio
# n2 / max(n1, n3), so noise that hits every core at once cancels and a few
# disturbed rounds do not matter).  That last ratio is reported but not
# asserted when the machine was already oversubscribed by other work before
# the load started: the whole machine then stalls in turns and no core can
# be told from another.  Finally SIGTERM stops telem_collect, every
# collector flushes with an acknowledgement and exits 0, and no process of
# this run is left.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
B=$TELEM_BIN
G="it-$$"

# ---- command lines ----
expect_rc 0 "$B/telem_collect" --help >/dev/null
expect_rc 0 "$B/telem_collector" --help >/dev/null
expect_rc 0 "$B/telem_load" --help >/dev/null
expect_rc 2 "$B/telem_collect" --period 0
expect_rc 2 "$B/telem_collect" --devices x
expect_rc 2 "$B/telem_collect" --backend tpu
expect_rc 2 "$B/telem_collect" stray
expect_rc 2 "$B/telem_collector" --reps 0
expect_rc 2 "$B/telem_collector" --period 1 --phase 1000000000
expect_rc 2 "$B/telem_load" --duty 0.5
expect_rc 2 "$B/telem_load" --device 0 --duty 2
expect_rc 2 "$B/telem_load" --device 99999
expect_rc 2 "$B/telem_load" --device 0 --cycle-ms 0
expect_rc 2 "$B/telem_load" --device 0 --threads 65
expect_rc 0 "$B/telem_load" --device 0 --duty 0.5 --cycle-ms 1 --threads 2 \
    --duration 0.2 >/dev/null 2>&1
"$B/telem_collector" --list-devices >"$T/list.txt" 2>"$T/list.log" \
    || fail "--list-devices failed"
grep -q "^cpu	0	" "$T/list.txt" || fail "no cpu device 0 listed"
"$B/telem_collector" --list-devices --json >"$T/list.json" 2>/dev/null \
    || fail "--list-devices --json failed"
python3 - "$T/list.json" <<'PY' || fail "bad device list: $(cat "$T/list.json")"
import json, os, sys
doc = json.load(open(sys.argv[1]))
cpu = [b for b in doc["backends"] if b["backend"] == "cpu"][0]
assert len(cpu["devices"]) == len(os.sched_getaffinity(0)), cpu
assert [d["index"] for d in cpu["devices"]] == list(range(len(cpu["devices"])))
PY
nogpu=0
if ! "$B/telem_collector" --list-devices --backend cuda >/dev/null 2>&1; then
    nogpu=1
    # No GPU here: cuda is skipped with one line, cpu is used instead.
    expect_rc 3 "$B/telem_collector" --backend cuda --rounds 1
    [ "$(grep -c "backend cuda skipped" "$T/list.log")" = 1 ] \
        || fail "cuda not skipped with exactly one line"
fi
expect_rc 2 "$B/telem_collect" --nodefile "$T/missing"

# ---- a group on three virtual nodes ----
# Where the test may raise priority (root), the collectors and the load run
# at nice -15: other work on a shared machine then barely touches them,
# while they still share their cores evenly among themselves, so the load's
# effect is measured instead of the neighbours'.  Without the privilege
# they run as they are; the assertions are the same.
PRIO=()
if nice -n -15 true 2>/dev/null; then PRIO=(nice -n -15); fi
for n in n1 n2 n3; do start_node "$n" --level 1 --bind none; done
"${PRIO[@]}" "$B/telem_collect" --backend cuda,cpu --devices 0 --period 0.25 --reps 5 \
    --name "$G" >"$T/collect.out" 2>"$T/collect.log" &
COLLECT=$!
EXTRA_PIDS+=("$COLLECT")
wait_for grep -qx ready "$T/collect.out" || fail "telem_collect not ready"
cat "$T/collect.out"
epoch=$(awk '$1 == "group" { print $NF }' "$T/collect.out")
# "node n2 device 0 -> cpu device J (id C) phase P ms pid PID"
core2=$(awk '$1 == "node" && $2 == "n2" { print $8 }' "$T/collect.out")
[ -n "$epoch" ] && [ -n "$core2" ] || fail "no device map printed"
# On a one-core machine every node shares n2's core: the load slows them
# all alike and only n2's own before/after ratio can be asserted.
shared=$(awk -v c="$core2" '$1 == "node" && $2 != "n2" && $8 == c { s = 1 }
                            END { print s + 0 }' "$T/collect.out")
[ "$(grep -c '^node ' "$T/collect.out")" = 3 ] || fail "expected 3 collectors"
[ "$(pgrep -f -- "--group $G" | wc -l)" = 3 ] || fail "not 3 collectors"
if [ "$nogpu" = 1 ]; then
    [ "$(grep -c "backend cuda skipped" "$T/collect.log")" = 1 ] \
        || fail "telem_collect did not skip cuda with one line"
fi

sleep 4                                   # clean rounds
clean_end=$(date +%s%N)
# The machine's load before ours: where other work already oversubscribes
# every core (and the whole machine stalls in turns), no core can be told
# from another and the ratio is reported, not asserted.
busy=$(awk -v n="$(nproc)" -v s="$shared" \
    '{ print ($1 > 1.5 * n || s) ? 1 : 0 }' /proc/loadavg)
"${PRIO[@]}" "$B/telem_load" --device "$core2" --duty 0.5 --cycle-ms 2 --threads 2 >"$T/load.out" 2>"$T/load.log" &
LOAD=$!
EXTRA_PIDS+=("$LOAD")
wait_for grep -qx ready "$T/load.out" || fail "telem_load not ready"
load_start=$(date +%s%N)
sleep 6                                   # loaded rounds
load_end=$(date +%s%N)
kill -TERM "$LOAD"
wait "$LOAD" || fail "telem_load did not exit 0 on SIGTERM"

kill -TERM "$COLLECT"
rc=0
wait "$COLLECT" || rc=$?
[ "$rc" = 0 ] || fail "telem_collect exited $rc after SIGTERM"
[ "$(grep -c 'flush: confirmed' "$T/collect.log")" = 3 ] \
    || fail "not every collector confirmed its last samples"
if pgrep -f -- "$TELEM_RUNDIR" >/dev/null; then
    fail "processes left behind: $(pgrep -af -- "$TELEM_RUNDIR")"
fi

for m in cg_dgemm_seconds cg_dgemm_seconds_spread; do
    "$B/telem_client" -f json query "$m" >"$T/$m.json" || fail "query $m failed"
done
python3 - "$T/cg_dgemm_seconds.json" "$T/cg_dgemm_seconds_spread.json" "$busy" "$G" "$epoch" "$clean_end" "$load_start" "$load_end" \
    <<'PY' || fail "collected data wrong"
import json, statistics, sys
series = (json.load(open(sys.argv[1]))["series"]
          + json.load(open(sys.argv[2]))["series"])
busy = sys.argv[3] == "1"
group, epoch = sys.argv[4], int(sys.argv[5])
clean_end, load_start, load_end = map(int, sys.argv[6:9])
period = 250_000_000
med = {}
for s in series:
    t = s["tags"]
    assert t["backend"] == "cpu" and t["group"] == group, t
    assert t["gpu"] == "0" and t["pid"].isdigit(), t
    assert all((ts - epoch) % period == 0 for ts, _ in s["points"]), t
    assert all(v >= 0 for _, v in s["points"]), t
    if s["metric"] == "cg_dgemm_seconds":
        med[t["host"]] = dict(s["points"])
spreads = [s for s in series if s["metric"].endswith("_spread")]
assert sorted(med) == ["n1", "n2", "n3"], sorted(med)
assert len(spreads) == 3, len(spreads)
common = set.intersection(*(set(m) for m in med.values()))
for h, m in med.items():
    assert len(m) >= 15, (h, len(m))
    # Before the load no round overruns: (nearly) every round of every
    # node carries the same timestamps.
    before = {ts for ts in m if ts < clean_end}
    assert len(before & common) >= 0.8 * len(before), (h, len(before))

def ratios(lo, hi):
    return [med["n2"][ts] / max(med["n1"][ts], med["n3"][ts])
            for ts in sorted(common) if lo <= ts < hi]

clean = ratios(epoch + period, clean_end)
loaded = ratios(load_start + 2 * period, load_end)
assert len(clean) >= 8 and len(loaded) >= 8, (len(clean), len(loaded))
rc, rl = statistics.median(clean), statistics.median(loaded)
print(f"n2 / max(n1, n3): clean {rc:.2f} ({len(clean)} rounds), "
      f"loaded {rl:.2f} ({len(loaded)} rounds)")
# n2 against its own clean rounds: the load must slow it whatever the
# other cores do.
n2 = med["n2"]
own = (statistics.median(v for ts, v in n2.items()
                         if load_start + 2 * period <= ts < load_end)
       / statistics.median(v for ts, v in n2.items()
                           if epoch + period <= ts < clean_end))
print(f"n2 loaded / n2 clean: {own:.2f}")
assert own > 1.3, f"the load did not slow its device: {own:.2f}"
if rl <= 1.3 and busy:
    print("ratio not asserted: n2's core is shared with another node, or "
          "the machine was oversubscribed before the load started "
          "(/proc/loadavg above 1.5 x cores)")
elif rl <= 1.3:
    for ts in sorted(common):
        print(ts, " ".join(f"{med[h][ts] * 1e3:.2f}" for h in ("n1", "n2", "n3")),
              "load" if ts >= load_start else "")
    sys.exit(f"loaded device not slower than the others: ratio {rl:.2f}")
PY
echo "it_collect: ok"
