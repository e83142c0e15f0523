#!/usr/bin/env bash
# demo.sh - telem end to end on one machine.
#
#   bash examples/demo.sh
#
# Installs what is missing and builds (examples/setup.sh), starts a local job
# of three virtual nodes (one telemd each, with its own sockets), has a
# program on every node record its metrics through telem.h, reads them back
# across the nodes with telem_client, then kills one node with SIGKILL and
# shows that the next query still returns within its deadline, naming the
# node that did not answer.  Then a resilient job under telem_launch loses
# a node, restarts on the reserve and resumes from the dictionary.  Last,
# the slow-device scenario (examples/slow_gpu.sh): a real load slows one
# node's device, slowgpu finds it, and the launcher restarts the job
# without that node; and a PyTorch model trained on three nodes survives
# the loss of one, resuming from its checkpoint in the dictionary.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$top/examples/setup.sh"
bin=${TELEM_BUILD_DIR:-$top/build}/bin
# As root, telem is installed under /usr/local too (TELEM_INSTALL=0 leaves
# it out), so that after this set-up `import telem` works in Debian's
# python3 and the programs are on PATH; the demo itself runs the build's.
if [ "$(id -u)" = 0 ] && [ "${TELEM_INSTALL:-1}" != 0 ]; then
    cmake --install "${bin%/bin}" --prefix /usr/local >"${bin%/bin}/install.log" 2>&1 \
        && ldconfig 2>/dev/null \
        && echo "setup: installed telem under /usr/local (programs, libtelem, the Python package)" \
        || echo "setup: installing under /usr/local failed (see ${bin%/bin}/install.log); the demo runs the build" >&2
fi

work=$(mktemp -d /tmp/telem-demo.XXXXXX)
export TELEM_RUNDIR=$work/run TELEM_NODEFILE=$work/nodes
mkdir -m 700 "$TELEM_RUNDIR"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
client() { echo "\$ telem_client $*"; "$bin/telem_client" "$@"; }

step "1. Start a local job of three virtual nodes (telemd, level 2, 0.5 s sampling, flush log every 1 s)"
start_node() {
    "$bin/telemd" --node "$1" --nodefile "$TELEM_NODEFILE" --level 2 \
        --interval 0.5 --flush 1 >"$work/$1.out" 2>>"$work/$1.log" &
}
for n in node1 node2 node3; do
    start_node "$n"
    pids+=($!)
done
for n in node1 node2 node3; do
    for _ in $(seq 200); do grep -qx ready "$work/$n.out" && break; sleep 0.05; done
    grep -qx ready "$work/$n.out" || { cat "$work/$n.log"; exit 1; }
done
cat "$TELEM_NODEFILE"

step "2. A program on every node records metrics through telem.h"
for n in node1 node2 node3; do
    echo "\$ TELEM_NODE=$n add_data_demo --count 200 --metric train_loss"
    TELEM_NODE=$n "$bin/add_data_demo" --count 200 --metric train_loss
done
sleep 1   # let each node take two rounds of node metrics

step "3. The metric catalog of the job"
client -l -f md

step "4. Latest values across the nodes"
client -g train_loss,cpu_percent,used_ram,num_running_processes -f txt

step "5. A query: the last 3 points of train_loss on every node"
client query train_loss --start -60s --max-points 3 -f txt

step "6. Tracking cpu_percent at 10 Hz for 2 s (only changed values are written)"
client -T cpu_percent -F 10 -d 2 -f txt | tail -n 8

step "7. node2 dies (SIGKILL); the next query returns within its 1 s deadline"
kill -KILL "${pids[1]}"
wait "${pids[1]}" 2>/dev/null || true   # reap it quietly
start=$(date +%s%N)
rc=0
client --timeout 1000 query train_loss --max-points 1 -f txt || rc=$?
echo "exit status $rc (3 = partial answer) after $(( ($(date +%s%N) - start) / 1000000 )) ms"

step "8. node2's telemd starts again: its history comes back from its flush log"
start_node node2
pids[1]=$!
for _ in $(seq 200); do grep -qx ready "$work/node2.out" && break; sleep 0.05; done
grep -E "flush log .*reloaded" "$work/node2.log" | tail -n 1 | sed 's/^.*info: //'
client --timeout 1000 query train_loss --start -300s --max-points 1 -f txt

step "9. Node status (log: bytes and segments of each node's flush log)"
client --timeout 1000 status || true
echo
# The resilient job runs in its own run directory under telem_launch, which
# starts telemd and telem_dictd on every node and supervises them.
step "10. A resilient job: telem_launch --local 3 --nodes 2 --resilient -- slow_gpu"
for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
pids=()
export TELEM_RUNDIR=$work/job TELEM_NODEFILE=$work/job/nodes
export TELEM_DICT_NODEFILE=$TELEM_RUNDIR/dict_nodes
mkdir -m 700 "$TELEM_RUNDIR"
# The node's death is played by killing its daemons: --daemon-failure
# exclude makes that a node failure (by default a daemon that dies is only
# restarted on its node).
"$bin/telem_launch" --rundir "$TELEM_RUNDIR" --grace 2 --local 3 --nodes 2 \
    --resilient --exhaust-resources --daemon-failure exclude \
    --dump "$work/dumps" -- \
    "$bin/slow_gpu" --tasks 4 \
    --iterations 40 --size 120 --bins 40 >"$work/job.out" 2>"$work/job.log" &
launcher=$!
pids+=("$launcher")
echo "slow_gpu checkpoints each task's histogram in the distributed dictionary;"
echo "waiting until node n2 has finished an iteration of its task..."
for _ in $(seq 600); do
    "$bin/telem_dict" --ns slow_gpu get task/1 2>/dev/null | grep -q ' done [1-9]' && break
    sleep 0.1
done
echo "node n2 dies: SIGKILL to its telemd and telem_dictd"
kill -9 "$(pgrep -f "telem_dictd --node n2 --rundir $TELEM_RUNDIR ")" \
    "$(sed -n 's/^pid\t//p' "$TELEM_RUNDIR/n2/endpoints")" 2>/dev/null || true
rc=0
wait "$launcher" || rc=$?
grep "restart" "$work/job.log" | sed 's/^[^]]*] //' || true
grep -E "resumed|semicircle|checksum" "$work/job.out" || true
echo "telem_launch exit status $rc (0 = the job finished on the nodes left)"
job_rc=$rc
unset TELEM_RUNDIR TELEM_NODEFILE TELEM_DICT_NODEFILE

step "11. The finished job from its dump: telem_view (the dashboard's API, offline)"
dump=$(ls "$work"/dumps/*.tdump 2>/dev/null | head -n 1)
if [ -n "$dump" ]; then
    echo "\$ telem_view --export csv --metric slow_gpu_iteration_seconds $(basename "$dump")"
    "$bin/telem_view" --export csv --metric slow_gpu_iteration_seconds "$dump" \
        2>/dev/null | head -n 4 || true
    echo "(telem_view $(basename "$dump") serves it at http://127.0.0.1:4242/ for a browser or Grafana)"
else
    echo "no dump was written (see $work/job.log)"
    job_rc=1
fi

step "12. A slow device: slowgpu finds it and telem_launch restarts without its node"
rc=0
report=$PWD/telem_demo_report.html
TELEM_BIN=$bin bash "$top/examples/slow_gpu.sh" "$work/slow_gpu.svg" \
    "$report" >"$work/sg.out" 2>"$work/sg.log" || rc=$?
grep -E "^== telem_l" "$work/sg.out" || true
# While the job ran, telem_agg served its live dashboard; the launcher said
# where (open it in a browser during a job; docs/grafana.md).
grep -hE "telem_agg on " "$work/sg.log" | sed 's/^[^]]*] //' | head -n 1 || true
sed -n '/^== summary/,$p' "$work/sg.out" \
    | grep -E "restart [0-9]+ \(of at most|resumed at|semicircle law" \
    | sed 's/^[^]]*] //' || true
grep -E "^slow_gpu.sh: " "$work/sg.out" || true
echo "slow_gpu.sh exit status $rc (0 = n2 named by slowgpu and excluded;" \
     "1 = it was not; 3 = the machine was too busy to tell)"
if [ -s "$report" ]; then
    echo "The job's report (open it in a browser, it needs no network): $report"
fi

step "13. Python: a PyTorch model trained on three nodes survives one node's loss"
# examples/python/train_torch.py: data-parallel (torch.distributed, gloo)
# over the job's nodes, a section per step, the model and optimizer
# checkpointed into the dictionary every 10 steps.  It holds after step 25
# until the job is restarted; n2 is killed then, the launcher restarts on
# n1 and n3, and every rank resumes from the checkpoint of step 20.
py_rc=0
if PYTHONPATH=${bin%/bin}/python /usr/bin/python3 -c 'import telem, torch' 2>/dev/null; then
    export PYTHONPATH=${bin%/bin}/python
    mkdir -m 700 "$work/torch"
    echo "\$ telem_launch --local 3 --resilient --exhaust-resources --daemon-failure exclude -- \\"
    echo "      /usr/bin/python3 examples/python/train_torch.py --steps 60 --ckpt-every 10"
    "$bin/telem_launch" --rundir "$work/torch/run" --grace 2 --local 3 \
        --resilient --exhaust-resources --daemon-failure exclude -- \
        /usr/bin/python3 "$top/examples/python/train_torch.py" --steps 60 \
        --ckpt-every 10 --hold-at 25 >"$work/torch.out" 2>"$work/torch.log" &
    tl=$!
    pids+=("$tl")
    for _ in $(seq 1200); do
        grep -q "holding after step 25" "$work/torch.out" 2>/dev/null && break
        kill -0 "$tl" 2>/dev/null || break
        sleep 0.1
    done
    grep -E "^step (1|10|20|25) loss|^train_torch: checkpoint" "$work/torch.out" || true
    echo "node n2 dies after step 25: SIGKILL to its telemd"
    kill -9 "$(sed -n 's/^pid\t//p' "$work/torch/run/n2/endpoints")" 2>/dev/null || true
    wait "$tl" || py_rc=$?
    grep "restart 1" "$work/torch.log" | sed 's/^[^]]*] //' || true
    grep -E "resume from the checkpoint|^step (21|60) loss|^final loss" "$work/torch.out" || true
    echo "telem_launch exit status $py_rc (0 = training finished on the nodes left)"
    unset PYTHONPATH
else
    echo "skipped: the telem Python package or python3-torch is not importable"
fi

if [ "$job_rc" != 0 ] || [ "$rc" != 0 ] || [ "$py_rc" != 0 ]; then
    echo "demo finished, but a job failed (logs above)" >&2
    exit 1
fi
echo "demo finished"
