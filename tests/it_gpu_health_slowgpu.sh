# it_gpu_health_slowgpu.sh - slowgpu beside gpu-health in a real job: a
# slow GPU that also throttles is named once, with both reasons.
#
# telem_launch --local 3 --nodes 2 --resilient -L 3 with --detector slowgpu
# (on the collectors' per-round times) and --detector gpu-health (on the
# GPUs' health fields), each telemd loading the test NVML with its own
# script.  The collectors are Python ones (telem.CollectorGroup under
# telem_collect, two devices per node): their test waits 20 ms a
# repetition, 80 ms on n2's device 0, so that device is 4x slower than its
# peers in every round whatever the machine's speed (a wait, not work: a
# busy machine's other work does not slow one device more than another;
# here its wake-ups stretched 20 ms waits by about 4 ms).
# n2's GPU 0 reports hw_thermal_slowdown all along, so gpu-health warns
# about it first; slowgpu then acts on the same device.  Checked: exactly
# one restart, its trigger `slowgpu+gpu-health`, n2 excluded once (n3
# promoted), its why naming device 0 of n2 with slowgpu's figures and
# gpu-health's throttling; the watcher's events hold one act event, naming
# n2/0 once; the program finishes on n1 and n3.
#
# The program waits for a "go" file from the test, so every step waits on
# behaviour.  When no restart comes within the bound, the collectors'
# own figures decide: n2/0 not clearly slower than its peers (a machine so
# busy that the waits themselves stretched) is reported skipped with the
# figures; a clear slowdown that was not acted on fails.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
L=$TELEM_BIN/telem_launch
PY=/usr/bin/python3
LIB=$(dirname "$TELEM_BIN")/tests/nvml_test/libnvml_test.so
unset TELEM_LEVEL SLURM_JOB_NODELIST TELEM_WATCH_PERIOD || true
[ -f "$LIB" ] || fail "the test NVML is not built: $LIB"
[ -x "$TELEM_BIN/telem_watch" ] || fail "telem_watch is not built"
[ -x "$PY" ] || skip "no $PY"
export PYTHONPATH=$TELEM_BIN/../python PYTHONDONTWRITEBYTECODE=1
# The sanitizer build's libtelem needs its runtimes loaded first into the
# interpreter (the Python collectors load it).
if [ -n "${TELEM_PY_PRELOAD:-}" ]; then
    export LD_PRELOAD=$TELEM_PY_PRELOAD ASAN_OPTIONS=detect_leaks=0
fi
"$PY" -c 'import telem' 2>/dev/null \
    || skip "the telem Python package is not importable from $PYTHONPATH"

OUT=$T/out
RD=$T/job
mkdir -p "$OUT" && mkdir -m 700 "$RD"
export OUT TELEM_BIN

cat >"$T/slow.py" <<'EOF2'
import sys
import time

import telem

BASE_S = 0.02


def slow(device):
    """One repetition: a wait, 4x as long on n2's device 0."""
    time.sleep(BASE_S * (4 if (device.node, device.index) == ("n2", 0)
                         else 1))


cg = telem.CollectorGroup("slow", slow)
if cg.is_collector():
    sys.exit(cg.main())
EOF2

cat >"$T/prog.sh" <<'EOF2'
#!/usr/bin/env bash
touch "$OUT/run-$TELEM_RESTART_COUNT-$TELEM_NODE"
while [ ! -e "$OUT/go-$TELEM_RESTART_COUNT" ]; do sleep 0.05; done
EOF2
chmod +x "$T/prog.sh"

for n in n1 n2 n3; do
    {
        echo "gpus 2"
        for g in 0 1; do
            echo "gpu $g temp 40"
            echo "gpu $g ecc 0 0"
            echo "gpu $g remapped 0 0 0 0"
            if [ "$n/$g" = n2/0 ]; then
                echo "gpu $g clocks_event 0x40"
            else
                echo "gpu $g clocks_event 0"
            fi
        done
    } >"$T/nvml-$n.script"
done
export TELEM_NVML_LIB=$LIB TELEM_NVML_TEST_SCRIPT=$T/nvml-{node}.script

PERIOD=0.5
COLLECT="--collector $PY --collector-arg $T/slow.py --collector-arg --telem-collector --kernel slow --period $PERIOD --reps 3 --devices 0-1"
# Judged from a device's 9th round (settle 2, learn 6), named after 3 slow
# rounds in a row: 6 s of 0.5 s rounds, not the defaults' half minute.
SLOW="slowgpu:metric=cg_slow_seconds,settle=2,learn=6,k=3,n=3"
"$L" --rundir "$RD" --grace 2 --local 3 --nodes 2 --resilient -L 3 \
    --watch-period 0.5 --detector "$SLOW" --detector gpu-health \
    --collect "$COLLECT" -- "$T/prog.sh" >"$T/job.out" 2>"$T/job.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")
EV=$RD/telem_watch/events.jsonl

# figures: each device's median round time over the job so far, from the
# nodes' own series (n2's telemd stays for the job's history).
figures() {
    "$TELEM_BIN/telem_client" --nodefile "$RD/launch/telemd_nodes" -f json \
        query cg_slow_seconds >"$T/q.json" 2>"$T/q.log" || true
    "$PY" - "$T/q.json" <<'EOF2'
import json, statistics, sys
try:
    doc = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("no figures"); sys.exit(0)
med = {}
def walk(o):
    if isinstance(o, dict):
        tags = o.get("tags")
        pts = o.get("points") or o.get("dps") or o.get("values")
        if isinstance(tags, dict) and isinstance(pts, list) and pts:
            vals = [p[1] if isinstance(p, list) else p.get("value", p.get("v"))
                    for p in pts]
            vals = [v for v in vals if isinstance(v, (int, float))]
            if vals:
                med[f"{tags.get('host')}/{tags.get('gpu')}"] = \
                    statistics.median(vals)
        for v in o.values():
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(doc)
slow = med.get("n2/0")
peers = [v for k, v in med.items() if k != "n2/0"]
if slow is None or not peers:
    print("no figures: " + " ".join(f"{k} {v:.4f} s" for k, v in med.items()))
    sys.exit(0)
ratio = slow / statistics.median(peers)
print(f"ratio {ratio:.2f}: n2/0 {slow * 1e3:.1f} ms, peers' median "
      f"{statistics.median(peers) * 1e3:.1f} ms over {len(peers)} devices")
EOF2
}

# The restart: bounded at 3 waits of 20 s (wait_for), each on behaviour.
if ! { wait_for test -f "$OUT/run-1-n3" || wait_for test -f "$OUT/run-1-n3" \
       || wait_for test -f "$OUT/run-1-n3"; }; then
    fig=$(figures)
    ratio=$(sed -n 's/^ratio \([0-9.]*\):.*/\1/p' <<<"$fig")
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    if [ -z "$ratio" ] || awk -v r="$ratio" 'BEGIN { exit !(r < 2) }'; then
        skip "no restart in 60 s and n2's device 0 was not clearly slower" \
             "than its peers ($fig; load average $load): the machine's" \
             "other work stretched the collectors' waits"
    fi
    fail "no restart in 60 s although n2/0 was slow ($fig; load $load):" \
         "$(grep -i 'restart\|slowgpu\|gpu-health' "$T/job.log" | tail -n 5)"
fi
[ ! -e "$OUT/run-1-n2" ] || fail "n2 ran the program again"
[ -e "$OUT/run-1-n1" ] || wait_for test -f "$OUT/run-1-n1" \
    || fail "the program did not start again on n1"
touch "$OUT/go-1"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "telem_launch exited $rc: $(tail -n 5 "$T/job.log")"

grep "restart [0-9]* (of at most" "$T/job.log" >"$T/restarts" || true
[ "$(grep -c . "$T/restarts")" = 1 ] \
    || fail "expected one restart: $(cat "$T/restarts")"
line=$(cat "$T/restarts")
grep -q "restart 1 (of at most [0-9]*): trigger slowgpu+gpu-health; nodes n2; promoted n3; why: " <<<"$line" \
    || fail "restart line: $line"
why=${line#*; why: }
grep -q "^device 0 on node 'n2' is .*slower" <<<"$why" \
    || fail "the why does not start with slowgpu's device: $why"
grep -q "; also gpu-health earlier: GPU 0 on node 'n2': throttled (hw_thermal_slowdown)" <<<"$why" \
    || fail "the why lacks gpu-health's throttling: $why"
[ "$(grep -o "on node 'n2'" <<<"$why" | wc -l)" = 2 ] \
    || fail "n2 named other than once by each reason: $why"

# The watcher's events: one act event, both detectors, n2/0 named once.
got=$("$PY" - "$EV" <<'EOF2'
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
acts = [e for e in evs if e.get("severity") == "act"]
assert len(acts) == 1, f"{len(acts)} act events"
e = acts[0]
assert e.get("detector") == "slowgpu+gpu-health", e.get("detector")
devs = [(d.get("node"), d.get("device")) for d in e.get("devices", [])]
assert devs == [("n2", "0")], devs
assert e.get("nodes") == ["n2"], e.get("nodes")
ev = e["evidence"]
print(f"n2/0 {ev['value_s'] * 1e3:.1f} ms against its peers' "
      f"{ev['peer_median_s'] * 1e3:.1f} ms, robust z {ev['z']:.1f}")
EOF2
) || fail "events: $got: $(cat "$EV")"
echo "it_gpu_health_slowgpu: ok ($got)"
