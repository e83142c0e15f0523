#!/usr/bin/python3
"""slow_gpu.py - eigenvalues of Wigner matrices, one worker per device on
every node of a job, checkpointed in the job's dictionary so that a
restarted job resumes without redoing finished work (telem's version of
Dragon's slow GPU example, in Python; examples/slow_gpu.c is the C one).

The work is --tasks tasks of --iterations iterations.  An iteration draws
an M x M matrix of the Gaussian orthogonal ensemble (off-diagonal N(0,1),
diagonal N(0,2); M = --size) from (seed, task, iteration) alone, computes
its eigenvalues (numpy's LAPACK; torch on a GPU where one is usable) and
adds eigenvalue / sqrt(M) to the task's histogram, which tends to
Wigner's semicircle sqrt(4 - x^2) / (2 pi) on [-2, 2].

Workers: one process per device (--devices, default: the GPUs torch sees,
else 1) on every node; worker w of W (w = rank * devices + device) does
the tasks t with t mod W == w.  A task's state (iterations done and
histogram, an int64 array) is the dictionary key "task/<t>" of namespace
--ns, written after every iteration by compare-and-set on the key's
version: acknowledged only once replicated, and a stale writer can never
overwrite newer state.  With TELEM_RESTARTED=1 every worker resumes its
tasks from there (a task moves to another worker when the node set
changed; a task the first run never reached is created then); a first
run refuses a namespace that already holds a run.
Because an iteration's random numbers depend on (seed, task, iteration)
only, a run that lost a node and resumed gives exactly the histogram of
an undisturbed run (the same checksum); an iteration counted twice or
lost would change it.

Rank 0 waits for every task's event "<ns>/done/<t>", merges the
histograms and prints the number of eigenvalues, the histogram's
checksum, the largest distance between its distribution function and the
semicircle's, and the verdict; --plot writes eigvals.png (matplotlib,
Agg) with the semicircle over the histogram.

The slow-device detector's data: a telem.CollectorGroup "eig" (metric
cg_eig_seconds) whose test kernel is one eigenvalue computation of a fixed
Wigner matrix.  This script is also its own collector program, which
telem_launch's collectors run:

    telem_launch --local 3 --nodes 2 --resilient --exhaust-resources \\
        --telemetry-level 3 --detector slowgpu:metric=cg_eig_seconds \\
        --collect "--collector /usr/bin/python3 --collector-arg \\
                   $PWD/examples/python/slow_gpu.py --collector-arg \\
                   --telem-collector --kernel eig" -- \\
        /usr/bin/python3 examples/python/slow_gpu.py --plot

Without the launcher's detector, --collectors has rank 0 start the group
for the job's devices itself (Dragon's style) and stop it at the end.

--hold-at F makes the runs whose TELEM_RESTART_COUNT is below --hold-runs
(default 1) stop every task at fraction F of its iterations and wait until
the job is restarted or the event "<ns>/release" is set, so a node can be
failed (or slowed until the detector acts) at a known point.

Telemetry: slow_gpu_py_iteration_seconds (level 1, tag gpu),
slow_gpu_py_task_done (level 2, tag task), slow_gpu_py_eigen_max (level 3).

Exit status: 0 the semicircle check passed, 1 it failed or the work
failed (the dictionary, a worker), 2 bad command line.
"""

from __future__ import annotations

import os

# One thread per worker: workers are the parallelism, and one LAPACK
# thread keeps every eigenvalue bit for bit the same from run to run.
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse                                          # noqa: E402
import hashlib                                           # noqa: E402
import math                                              # noqa: E402
import multiprocessing as mp                             # noqa: E402
import sys                                               # noqa: E402
import time                                              # noqa: E402

import numpy as np                                       # noqa: E402

import telem                                             # noqa: E402
from telem import DDict, TelemError                      # noqa: E402
from telem.errors import ECONFLICT                       # noqa: E402

RANGE = 2.5                 # the histogram covers [-RANGE, RANGE]
KERNEL_SIZE = 64            # the collector's fixed matrix


# ---- the collector group: the test kernel --------------------------------

_KERNEL_MATRIX = None



def say(*parts, file=None) -> None:
    """Prints one line with one write: the ranks share the launcher's
    output, and print() writes its text and its end separately when
    Python's output is unbuffered (PYTHONUNBUFFERED), so another rank's
    line could land inside this one."""
    f = sys.stdout if file is None else file
    f.write(" ".join(str(p) for p in parts) + "\n")
    f.flush()

def eig_test(device) -> None:
    """The collectors' test kernel, one repetition on `device` (the group
    pins the process to it): the eigenvalues of one fixed Wigner matrix of
    order KERNEL_SIZE.  It returns None, so the group times the call (a
    float would be taken as the figure itself, in seconds)."""
    global _KERNEL_MATRIX
    if _KERNEL_MATRIX is None:
        _KERNEL_MATRIX = wigner(KERNEL_SIZE, (0, 0, 0))
    np.linalg.eigvalsh(_KERNEL_MATRIX)
    return None


def collector_group():
    """telem.CollectorGroup("eig", ...), or None when this telem package
    has none."""
    try:
        cls = getattr(telem, "CollectorGroup")
    except (AttributeError, ImportError):
        return None
    return cls("eig", eig_test, backend="cpu", reps=5, period=1.0)


# ---- the work -------------------------------------------------------------

def wigner(m: int, key: tuple) -> np.ndarray:
    """A GOE matrix drawn from key: off-diagonal N(0,1), diagonal N(0,2)."""
    a = np.random.default_rng(key).standard_normal((m, m))
    return (a + a.T) / math.sqrt(2.0)


class Eig:
    """Eigenvalues on one device: numpy, or torch on a GPU."""

    def __init__(self, backend: str, device: int) -> None:
        self.backend, self.device, self.torch = backend, device, None
        if backend == "torch":
            import torch
            self.torch = torch
            self.dev = torch.device("cuda", device)

    def __call__(self, h: np.ndarray) -> np.ndarray:
        if self.torch is None:
            return np.linalg.eigvalsh(h)
        t = self.torch.from_numpy(h).to(self.dev)
        return self.torch.linalg.eigvalsh(t).cpu().numpy()


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="slow_gpu.py",
        description="Eigenvalues of Wigner matrices, one worker per device "
        "on every node, checkpointed in the telem dictionary and resumed "
        "after a restart; rank 0 checks the semicircle law.",
        epilog="Environment (set by telem_launch): TELEM_RANK, TELEM_NNODES, "
        "TELEM_RESTART_COUNT, TELEM_RESTARTED, TELEM_DICT_NODEFILE.  Exit "
        "status: 0 the semicircle check passed, 1 it failed or the work "
        "failed, 2 bad command line.")
    p.add_argument("--tasks", type=int, default=8, help="tasks (default 8)")
    p.add_argument("--iterations", type=int, default=20,
                   help="iterations per task (default 20)")
    p.add_argument("--size", type=int, default=100,
                   help="matrix order M, 4-4000 (default 100)")
    p.add_argument("--bins", type=int, default=40,
                   help="histogram bins over [-2.5, 2.5] (default 40)")
    p.add_argument("--seed", type=int, default=1, help="random seed")
    p.add_argument("--devices", type=int, default=0,
                   help="workers per node (default: the GPUs torch sees, "
                   "else 1)")
    p.add_argument("--backend", choices=("auto", "numpy", "torch"),
                   default="numpy", help="numpy (default), torch (a GPU), "
                   "auto: torch where it sees a GPU")
    p.add_argument("--ns", default="slow_gpu_py",
                   help="dictionary namespace and event prefix")
    p.add_argument("--tolerance", type=float, default=0.02,
                   help="largest distance to the semicircle's distribution "
                   "function that passes (default 0.02)")
    p.add_argument("--plot", nargs="?", const="eigvals.png", default=None,
                   help="write the histogram and the semicircle to this PNG "
                   "(default eigvals.png)")
    p.add_argument("--collectors", action="store_true",
                   help="rank 0 starts the CollectorGroup 'eig' "
                   "(cg_eig_seconds) for the job and stops it at the end")
    p.add_argument("--hold-at", type=float, default=0.0,
                   help="stop every task at this fraction of its iterations "
                   "and wait for a restart or <ns>/release (default 0: "
                   "never)")
    p.add_argument("--hold-runs", type=int, default=1,
                   help="runs with TELEM_RESTART_COUNT below this hold "
                   "(default 1)")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds rank 0 waits for the tasks (default 600)")
    a = p.parse_args(argv)
    if a.tasks < 1 or a.iterations < 1 or not 4 <= a.size <= 4000 \
            or not 4 <= a.bins <= 10000 or a.devices < 0 \
            or a.hold_runs < 1 or not 0 <= a.hold_at < 1 \
            or not a.tolerance > 0 or not a.timeout > 0:
        p.error("--tasks and --iterations 1 or more, --size 4-4000, --bins "
                "4-10000, --devices 0 or more, --hold-at in [0, 1), "
                "--hold-runs 1 or more, --tolerance and --timeout above 0")
    if not a.ns or "/" in a.ns:
        p.error("--ns: a non-empty name without '/'")
    return a


def pick_backend(a) -> tuple:
    """(backend, devices per node)."""
    gpus = 0
    if a.backend in ("auto", "torch"):
        try:
            import torch
            gpus = torch.cuda.device_count() if torch.cuda.is_available() \
                else 0
        except ImportError:
            gpus = 0
        if a.backend == "torch" and not gpus:
            raise SystemExit("slow_gpu: --backend torch needs a GPU that "
                             "torch can use; none was found")
    backend = "torch" if gpus else "numpy"
    return backend, a.devices or max(1, gpus)


def fresh_state(a) -> np.ndarray:
    return np.zeros(1 + a.bins, dtype=np.int64)    # [done, counts...]


def run_task(a, d: DDict, eig: Eig, t: int, device: int, hold: int) -> None:
    """Runs task t from its checkpoint to the end (or the hold)."""
    key = f"task/{t}"
    state, version = d.get_versioned(key)
    state = np.array(state, dtype=np.int64)
    if state[0]:
        say(f"slow_gpu: {os.environ.get('TELEM_NODE', '?')}: task {t} "
              f"resumed at iteration {state[0]} of {a.iterations}")
    edges = np.linspace(-RANGE, RANGE, a.bins + 1)
    gpu = {"gpu": str(device)}
    while state[0] < a.iterations:
        if hold and state[0] == hold:
            hold_here(a, d, t)
            hold = 0
        t0 = time.perf_counter()
        ev = eig(wigner(a.size, (a.seed, t, int(state[0])))) \
            / math.sqrt(a.size)
        state[1:] += np.histogram(np.clip(ev, -RANGE, RANGE), edges)[0]
        state[0] += 1
        try:
            version = d.cas(key, state, version)
        except TelemError as e:
            if e.code == ECONFLICT:
                raise TelemError(e.code, f"task {t} was written by another "
                                 "worker (a stale run?)", "slow_gpu")
            raise
        telem.add_data("slow_gpu_py_iteration_seconds",
                       time.perf_counter() - t0, tags=gpu)
        telem.add_data("slow_gpu_py_eigen_max", float(ev[-1]), level=3,
                       tags=gpu)
    telem.add_data("slow_gpu_py_task_done", 1, level=2, tags={"task": str(t)})
    d.set_event(f"{a.ns}/done/{t}")


def hold_here(a, d: DDict, t: int) -> None:
    say(f"slow_gpu: {os.environ.get('TELEM_NODE', '?')}: task {t} holds "
          f"at iteration {int(a.hold_at * a.iterations)} until the job is "
          f"restarted or {a.ns}/release is set")
    while True:
        try:
            if d.wait(f"{a.ns}/release", timeout=1.0):
                return
        except TelemError:
            time.sleep(0.2)     # a server is gone: the launcher acts next


def worker(a, backend: str, w: int, nworkers: int, device: int,
           restarted: bool, hold: int) -> None:
    """One device's worker process: its tasks, one after the other."""
    d = DDict(namespace=a.ns)
    try:
        eig = Eig(backend, device)
        mine = [t for t in range(a.tasks) if t % nworkers == w]
        # A first run creates its tasks and refuses a namespace that holds
        # a run.  A restarted run creates only the tasks the first never
        # reached (its worker had not started when a node was lost; no
        # iteration of them was counted) and resumes the others.
        for t in mine:
            try:
                d.cas(f"task/{t}", fresh_state(a), 0)
            except TelemError as e:
                if e.code != ECONFLICT:
                    raise
                if not restarted:
                    sys.exit(f"slow_gpu: namespace {a.ns!r} already holds "
                             f"a run (task/{t}); use another --ns")
        for t in mine:
            run_task(a, d, eig, t, device, hold)
    except TelemError as e:
        sys.exit(f"slow_gpu: worker {w}: {e}")
    finally:
        d.close()
        telem.finalize()


# ---- rank 0: the result ---------------------------------------------------

def semicircle_cdf(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, -2.0, 2.0)
    return 0.5 + x * np.sqrt(4.0 - x * x) / (4 * math.pi) \
        + np.arcsin(x / 2.0) / math.pi


def result(a, d: DDict) -> int:
    for t in range(a.tasks):
        if not d.wait(f"{a.ns}/done/{t}", timeout=a.timeout):
            say(f"slow_gpu: task {t} not done within {a.timeout:.0f} s",
                  file=sys.stderr)
            return 1
    hist = np.zeros(a.bins, dtype=np.int64)
    done = 0
    for t in range(a.tasks):
        st = np.asarray(d[f"task/{t}"], dtype=np.int64)
        done += int(st[0])
        hist += st[1:]
    n, want = int(hist.sum()), a.tasks * a.iterations * a.size
    edges = np.linspace(-RANGE, RANGE, a.bins + 1)
    dist = np.abs(np.cumsum(hist) / max(n, 1) - semicircle_cdf(edges[1:]))
    i = int(np.argmax(dist))
    check = hashlib.sha256(hist.astype("<i8").tobytes()).hexdigest()[:16]
    say(f"slow_gpu: {a.tasks} task(s) x {a.iterations} iteration(s) of "
          f"{a.size}x{a.size} matrices: {n} eigenvalues (expected {want})")
    say(f"slow_gpu: histogram checksum {check}")
    say(f"slow_gpu: largest distance to the semicircle's distribution "
          f"function {dist[i]:.5f} at x = {edges[i + 1]:.2f} (tolerance "
          f"{a.tolerance:.5f})")
    ok = n == want and done == a.tasks * a.iterations \
        and dist[i] <= a.tolerance
    say(f"slow_gpu: semicircle law: {'PASS' if ok else 'FAIL'} "
          f"({'every eigenvalue counted once' if n == want else 'counted %d' % n}"
          f"; distance {dist[i]:.5f} {'<=' if dist[i] <= a.tolerance else '>'}"
          f" tolerance {a.tolerance:.5f})")
    if a.plot:
        plot(a, hist, edges, a.plot)
        say(f"slow_gpu: plot written to {a.plot}")
    return 0 if ok else 1


def plot(a, hist: np.ndarray, edges: np.ndarray, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    width = edges[1] - edges[0]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar(edges[:-1], hist / (hist.sum() * width), width=width,
           align="edge", alpha=0.6, label="eigenvalues / sqrt(M)")
    x = np.linspace(-2, 2, 400)
    ax.plot(x, np.sqrt(4 - x * x) / (2 * math.pi), "r-",
            label="semicircle sqrt(4 - x^2) / (2 pi)")
    ax.set_xlabel("x")
    ax.set_ylabel("density")
    ax.set_title(f"{int(hist.sum())} eigenvalues of {a.size}x{a.size} "
                 "Wigner matrices")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None) -> int:
    a = parse_args(argv)
    try:
        rank = int(os.environ.get("TELEM_RANK", "0"))
        nnodes = int(os.environ.get("TELEM_NNODES", "1"))
        restarts = int(os.environ.get("TELEM_RESTART_COUNT", "0"))
    except ValueError:
        say("slow_gpu: bad TELEM_RANK, TELEM_NNODES or TELEM_RESTART_COUNT",
              file=sys.stderr)
        return 2
    cg = collector_group() if a.collectors and rank == 0 else None
    if a.collectors and rank == 0 and cg is None:
        say("slow_gpu: --collectors needs telem.CollectorGroup, which this "
              "telem package does not have", file=sys.stderr)
        return 2
    backend, devices = pick_backend(a)
    restarted = os.environ.get("TELEM_RESTARTED") == "1"
    hold = int(a.hold_at * a.iterations) if restarts < a.hold_runs else 0
    # The workers first: the sockets of this process come after the forks.
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=worker, args=(
        a, backend, rank * devices + dev, nnodes * devices, dev, restarted,
        hold)) for dev in range(devices)]
    for p in procs:
        p.start()
    if cg is not None:
        cg.start()
    rc = 0
    try:
        if rank == 0:
            d = DDict(namespace=a.ns)
            try:
                rc = result(a, d)
            except TelemError as e:
                say(f"slow_gpu: {e}", file=sys.stderr)
                rc = 1
            finally:
                d.close()
        for p in procs:
            p.join()
            if p.exitcode != 0:
                rc = 1
    finally:
        if cg is not None:
            wait_first_round(cg)
            cg.stop()
        telem.finalize()
    return rc


def wait_first_round(cg, timeout: float = 60.0) -> None:
    """Before a short run stops its collectors: waits (at most `timeout`
    seconds) until the store holds a round of the group's metric, so that
    even a run shorter than the group's period leaves its devices' figures
    behind; says so when it gives up."""
    end = time.monotonic() + timeout
    with telem.AnalysisClient() as ac:
        while time.monotonic() < end:
            try:
                if ac.get_data(cg.metric, latest=True).series:
                    return
            except TelemError:
                pass            # no node answered yet: try again
            time.sleep(0.1)
    say(f"slow_gpu: no round of {cg.metric} within {timeout:.0f} s",
          file=sys.stderr)


if __name__ == "__main__":
    # The script is also the collector group's program: a collector
    # started by the group (or by telem_launch --collect) runs here.
    _cg = collector_group()
    if _cg is not None and _cg.is_collector():
        sys.exit(_cg.main())
    sys.exit(main())
