#!/usr/bin/python3
"""train_torch.py - a small PyTorch model trained data-parallel across the
nodes of a telem job, checkpointed in the job's dictionary, that resumes
where it left off when telem_launch restarts the job without a node.

The model is an MLP (--features -> --hidden -> --hidden -> 1, tanh) fitted
by Adam to a synthetic regression set drawn from --seed.  It runs on the
CPU with one thread per process.  The job's nodes form one
torch.distributed group (backend gloo): world size TELEM_NNODES, rank
TELEM_RANK, rendezvous through a torch FileStore in the job's run
directory whose name carries the launcher's pid and TELEM_RESTART_COUNT,
so every run of the job meets in a file of its own and no port is fixed.
On local virtual nodes gloo uses the loopback interface (127.0.0.1);
GLOO_SOCKET_IFNAME overrides it.

Every step takes a FIXED global batch of --batch samples, drawn from
(seed, step) alone, splits it over the ranks, and all-reduces the summed
gradients (and the summed loss) before dividing them by the global batch
size: the update does not depend on the number of nodes, float summation
order aside.  So a job that loses a node and goes on with fewer computes
the same model as an undisturbed one.

Rank 0 puts the model, the optimizer's state and the step into the
dictionary (key "ckpt" of namespace --ns, bytes of torch.save) every
--ckpt-every steps.  A restarted run (TELEM_RESTARTED=1) restores that
checkpoint on every rank and continues from its step.  Rank 0 prints
"step N loss L" for every step and, at the end, "final loss L", the loss
of the whole data set (also written to --out).

It records, through telem: every step as a section "step"
(telem_section_seconds and telem_section_step, tags section and rank; a
resumed run continues the numbering), and the loss (metric "loss", level
1, rank 0).

Run it under telem_launch: three nodes and a reserve, restarted without a
node that fails:

    telem_launch --local 4 --nodes 3 --resilient --exhaust-resources -- \\
        /usr/bin/python3 examples/python/train_torch.py --steps 200

--hold-at S makes the runs whose TELEM_RESTART_COUNT is below --hold-runs
(default 1) stop after step S and wait until the job is restarted or the
dictionary event "<ns>/release" is set: a test or a demonstration can then
fail a node at a known step, whatever the machine's speed.

Exit status: 0 trained, 1 a failure (the dictionary, a peer lost and no
restart came within --peer-grace seconds), 2 bad command line.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import io
import os
import re
import sys
import time

import numpy as np

try:
    import torch
    import torch.distributed as dist
except ImportError as e:   # pragma: no cover - reported, not tested
    sys.exit(f"train_torch: PyTorch is needed (apt-get install "
             f"python3-torch): {e}")

import telem
from telem import DDict, TelemError



def say(*parts, file=None) -> None:
    """Prints one line with one write: the ranks share the launcher's
    output, and print() writes its text and its end separately when
    Python's output is unbuffered (PYTHONUNBUFFERED), so another rank's
    line could land inside this one."""
    f = sys.stdout if file is None else file
    f.write(" ".join(str(p) for p in parts) + "\n")
    f.flush()

def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="train_torch.py",
        description="An MLP trained data-parallel (torch.distributed, gloo) "
        "over the job's nodes, checkpointed in the telem dictionary and "
        "resumed from it after a restart.",
        epilog="Environment (set by telem_launch): TELEM_RANK, TELEM_NNODES, "
        "TELEM_RESTART_COUNT, TELEM_RESTARTED, TELEM_RUNDIR, "
        "TELEM_DICT_NODEFILE, TELEM_NODEFILE.  Exit status: 0 trained, 1 "
        "failure, 2 bad command line.")
    p.add_argument("--steps", type=int, default=60, help="steps (default 60)")
    p.add_argument("--batch", type=int, default=240,
                   help="global batch size, split over the ranks "
                   "(default 240)")
    p.add_argument("--ckpt-every", type=int, default=10,
                   help="rank 0 checkpoints every K steps (default 10)")
    p.add_argument("--lr", type=float, default=0.01,
                   help="Adam's learning rate (default 0.01)")
    p.add_argument("--samples", type=int, default=4096,
                   help="size of the synthetic data set (default 4096)")
    p.add_argument("--features", type=int, default=16,
                   help="input features (default 16)")
    p.add_argument("--hidden", type=int, default=64,
                   help="hidden units per layer (default 64)")
    p.add_argument("--seed", type=int, default=7, help="random seed")
    p.add_argument("--ns", default="train_torch",
                   help="dictionary namespace and event prefix")
    p.add_argument("--hold-at", type=int, default=0,
                   help="stop after this step and wait for a restart or "
                   "the event <ns>/release (default 0: never)")
    p.add_argument("--hold-runs", type=int, default=1,
                   help="runs with TELEM_RESTART_COUNT below this hold "
                   "(default 1)")
    p.add_argument("--peer-grace", type=float, default=60.0,
                   help="after a collective fails, seconds to wait for "
                   "telem_launch's stop before exiting 1 (default 60)")
    p.add_argument("--rendezvous-timeout", type=float, default=120.0,
                   help="seconds for the ranks to meet (default 120)")
    p.add_argument("--out", help="write the final loss to this file "
                   "(rank 0)")
    a = p.parse_args(argv)
    for name in ("steps", "batch", "ckpt_every", "samples", "features",
                 "hidden", "hold_runs"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be 1 or more")
    if not 0 < a.lr < 10 or a.hold_at < 0 or a.peer_grace < 0 \
            or not a.rendezvous_timeout > 0:
        p.error("--lr must be in (0, 10), --hold-at and --peer-grace 0 "
                "or more, --rendezvous-timeout above 0")
    if not a.ns or "/" in a.ns:
        p.error("--ns: a non-empty name without '/'")
    return a


def job_env() -> tuple:
    """(rank, world size, restart count, restarted) from telem_launch."""
    try:
        rank = int(os.environ.get("TELEM_RANK", "0"))
        world = int(os.environ.get("TELEM_NNODES", "1"))
        restarts = int(os.environ.get("TELEM_RESTART_COUNT", "0"))
    except ValueError:
        raise SystemExit("train_torch: bad TELEM_RANK, TELEM_NNODES or "
                         "TELEM_RESTART_COUNT")
    if not 0 <= rank < world:
        raise SystemExit(f"train_torch: rank {rank} outside 0-{world - 1}")
    return rank, world, restarts, os.environ.get("TELEM_RESTARTED") == "1"


# ---- data and model ------------------------------------------------------

def make_data(a) -> tuple:
    """The data set: x ~ N(0, 1), y a smooth function of x plus noise."""
    rng = np.random.default_rng(a.seed)
    x = rng.standard_normal((a.samples, a.features))
    w = rng.standard_normal(a.features) / np.sqrt(a.features)
    y = np.sin(2.0 * x @ w) + 0.5 * np.tanh(x[:, 0] * x[:, 1]) \
        + 0.05 * rng.standard_normal(a.samples)
    return (torch.from_numpy(x.astype(np.float32)),
            torch.from_numpy(y.astype(np.float32)).unsqueeze(1))


def make_model(a) -> torch.nn.Module:
    torch.manual_seed(a.seed)
    return torch.nn.Sequential(
        torch.nn.Linear(a.features, a.hidden), torch.nn.Tanh(),
        torch.nn.Linear(a.hidden, a.hidden), torch.nn.Tanh(),
        torch.nn.Linear(a.hidden, 1))


def batch_of(a, step: int, rank: int, world: int) -> np.ndarray:
    """This rank's part of step's global batch (drawn from (seed, step))."""
    idx = np.random.default_rng((a.seed, step)).choice(
        a.samples, a.batch, replace=False)
    return np.array_split(idx, world)[rank]


def train_step(a, model, opt, x, y, step: int, rank: int,
               world: int) -> float:
    """One step: local summed loss, gradients and loss all-reduced as one
    flat tensor, divided by the global batch.  Returns the batch's mean
    loss."""
    idx = torch.from_numpy(batch_of(a, step, rank, world))
    opt.zero_grad(set_to_none=False)
    loss_sum = torch.nn.functional.mse_loss(model(x[idx]), y[idx],
                                            reduction="sum")
    loss_sum.backward()
    params = list(model.parameters())
    flat = torch.cat([p.grad.reshape(-1) for p in params]
                     + [loss_sum.detach().reshape(1)])
    if world > 1:
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    flat /= a.batch
    off = 0
    for p in params:
        n = p.numel()
        p.grad.copy_(flat[off:off + n].view_as(p))
        off += n
    opt.step()
    return float(flat[-1])


# ---- the dictionary: checkpoints, the hold -------------------------------

def save_ckpt(d: DDict, model, opt, step: int) -> None:
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "optim": opt.state_dict(),
                "step": step}, buf)
    d["ckpt"] = buf.getvalue()


def load_ckpt(d: DDict, model, opt) -> int:
    """Restores the last checkpoint; returns its step (0: none yet)."""
    try:
        raw = d["ckpt"]
    except KeyError:
        return 0
    st = torch.load(io.BytesIO(bytes(raw)))
    model.load_state_dict(st["model"])
    opt.load_state_dict(st["optim"])
    return int(st["step"])


def hold(d: DDict, a, rank: int, step: int) -> None:
    """Waits for <ns>/release (or for telem_launch to stop this run)."""
    say(f"train_torch: rank {rank}: holding after step {step} until the "
          f"job is restarted or {a.ns}/release is set")
    while True:
        try:
            if d.wait(f"{a.ns}/release", timeout=1.0):
                return
        except TelemError:
            # A node's dictionary server is gone: the launcher is about to
            # stop this run and re-form the dictionary; keep holding.
            time.sleep(0.2)


# ---- the process group ---------------------------------------------------

def store_path(a, restarts: int) -> str:
    """This run's FileStore: in the run directory, named after the
    launcher's pid (launch/job) and the restart count."""
    rundir = os.environ.get("TELEM_RUNDIR") or "."
    job = "local"
    try:
        with open(os.path.join(rundir, "launch", "job")) as f:
            m = re.search(r"telem_launch pid (\d+)", f.read())
            job = m.group(1) if m else job
    except OSError:
        pass
    return os.path.join(rundir, f"torch.{a.ns}.{job}.{restarts}.store")


def loopback_only() -> bool:
    """True when every node of the job is reached on 127.0.0.1 or ipc."""
    try:
        with open(os.environ["TELEM_NODEFILE"]) as f:
            eps = [ln.split("\t")[-1].strip() for ln in f if ln.strip()
                   and not ln.startswith("#")]
    except (KeyError, OSError):
        return True
    return all(e.startswith("ipc://") or e.startswith("tcp://127.")
               for e in eps)


def join_group(a, rank: int, world: int, restarts: int) -> None:
    if world == 1:
        return
    if "GLOO_SOCKET_IFNAME" not in os.environ and loopback_only():
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    path = store_path(a, restarts)
    if rank == 0:   # the files of earlier runs of this job are done with
        stem = path.rsplit(".", 2)[0]
        for old in glob.glob(glob.escape(stem) + ".*.store"):
            if old != path:
                try:
                    os.unlink(old)
                except OSError:
                    pass
    store = dist.FileStore(path, world)
    dist.init_process_group(
        "gloo", store=store, rank=rank, world_size=world,
        timeout=datetime.timedelta(seconds=a.rendezvous_timeout))


def final_loss(model, x, y) -> float:
    with torch.no_grad():
        return float(torch.nn.functional.mse_loss(model(x), y))


def run(a, d: DDict, rank: int, world: int, restarts: int,
        restarted: bool) -> float:
    x, y = make_data(a)
    model = make_model(a)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    start = load_ckpt(d, model, opt) if restarted else 0
    if restarted and rank == 0:
        say(f"train_torch: restart {restarts}: {world} rank(s) resume "
              f"from the checkpoint of step {start}")
    telem.section("step").step = start
    holding = a.hold_at and restarts < a.hold_runs
    for step in range(start + 1, a.steps + 1):
        t0 = time.perf_counter()
        with telem.section("step"):
            loss = train_step(a, model, opt, x, y, step, rank, world)
        if rank == 0:
            telem.add_data("loss", loss)
            telem.add_data("train_torch_step_seconds",
                           time.perf_counter() - t0)
            say(f"step {step} loss {loss:.9g}")
            if step % a.ckpt_every == 0:
                save_ckpt(d, model, opt, step)
                say(f"train_torch: checkpoint at step {step}")
        if holding and step == a.hold_at:
            hold(d, a, rank, step)
    return final_loss(model, x, y)


def main(argv=None) -> int:
    a = parse_args(argv)
    rank, world, restarts, restarted = job_env()
    torch.set_num_threads(1)
    d = DDict(namespace=a.ns)
    try:
        join_group(a, rank, world, restarts)
        try:
            loss = run(a, d, rank, world, restarts, restarted)
        except RuntimeError as e:
            # A peer is gone (its node failed): telem_launch stops this run
            # and restarts the job; wait for that rather than exit first.
            say(f"train_torch: rank {rank}: a collective failed ({e}); "
                  f"waiting up to {a.peer_grace:.0f} s for telem_launch to "
                  "restart the job", file=sys.stderr)
            time.sleep(a.peer_grace)
            return 1
        if rank == 0:
            say(f"final loss {loss:.9g} after {a.steps} steps on {world} "
                  f"rank(s)")
            if a.out:
                with open(a.out, "w") as f:
                    f.write(f"{loss:.17g}\n")
        if world > 1:
            dist.barrier()
            dist.destroy_process_group()
    except TelemError as e:
        say(f"train_torch: rank {rank}: {e}", file=sys.stderr)
        return 1
    finally:
        d.close()
        telem.finalize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
