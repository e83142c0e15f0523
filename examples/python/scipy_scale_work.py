#!/usr/bin/python3
"""scipy_scale_work.py - SciPy image work over worker processes, recording
its own metrics with telem.add_data (telem's version of Dragon's
scipy_scale_work example).

Every iteration filters --images random images of --size x --size pixels
(scipy.ndimage: a convolution with a random 5x5 kernel, then a Gaussian
blur and a Sobel edge filter) on a multiprocessing.Pool of --workers
processes (each iteration's filtering marked as the section "iteration",
which the straggler detector compares across ranks), and prints the
iteration's time; at the end the average and the
standard deviation of the iterations after the --burns first ones, as
Dragon's example does.  An image and its kernel are drawn from (seed,
rank, iteration, index), so a run's checksum does not depend on how the
work was split over the workers.

Run it under telem_launch at telemetry level 2 (node metrics too):

    telem_launch --local 2 --telemetry-level 2 -- \\
        /usr/bin/python3 examples/python/scipy_scale_work.py --iterations 10

What it records (tags host, pid, rank; level decides what is kept):

    level 1  scipy_scale_work_iteration_seconds          one iteration
    level 1  scipy_scale_work_progress                   fraction done
    level 2  scipy_scale_work_images_per_second          this rank's rate
    level 2  scipy_scale_work_task_seconds   tag worker  each image's time,
                                                         measured in the
                                                         worker, recorded
                                                         in one batch
    level 3  scipy_scale_work_edge_mean                  the mean edge
                                                         strength of an
                                                         iteration's images

Exit status: 0 done, 1 a failure (a worker died), 2 bad command line.  A
missing telemd is not a failure: samples are dropped and counted.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time

import numpy as np

try:
    from scipy import ndimage
except ImportError as e:   # pragma: no cover - reported, not tested
    sys.exit(f"scipy_scale_work: SciPy is needed (apt-get install "
             f"python3-scipy): {e}")

import telem



def say(*parts, file=None) -> None:
    """Prints one line with one write: the ranks share the launcher's
    output, and print() writes its text and its end separately when
    Python's output is unbuffered (PYTHONUNBUFFERED), so another rank's
    line could land inside this one."""
    f = sys.stdout if file is None else file
    f.write(" ".join(str(p) for p in parts) + "\n")
    f.flush()

def _positive(kind):
    def parse(s: str):
        try:
            v = kind(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {s!r}")
        if v <= 0:
            raise argparse.ArgumentTypeError(f"must be above 0: {s!r}")
        return v
    return parse


def add_options(p: argparse.ArgumentParser) -> None:
    """The work's options (scipy_scale_work_db_dump.py takes them too)."""
    p.add_argument("--workers", type=_positive(int), default=2,
                   help="worker processes (default 2)")
    p.add_argument("--iterations", type=_positive(int), default=10,
                   help="timed iterations (default 10)")
    p.add_argument("--burns", type=int, default=2,
                   help="first iterations left out of the statistics "
                   "(default 2)")
    p.add_argument("--images", type=_positive(int), default=32,
                   help="images per iteration (default 32)")
    p.add_argument("--size", type=_positive(int), default=256,
                   help="image side in pixels (default 256)")
    p.add_argument("--seed", type=int, default=1, help="random seed")


def check_options(p: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    if a.burns < 0:
        p.error("--burns must be 0 or more")
    if a.size < 8:
        p.error("--size must be at least 8")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="scipy_scale_work.py",
        description="SciPy image filters over a pool of worker processes; "
        "prints each iteration's time, the average and the standard "
        "deviation, and records its metrics with telem.add_data.",
        epilog="Environment (set by telem_launch): TELEM_LEVEL, TELEM_NODE, "
        "TELEM_RANK, TELEM_RUNDIR.  Exit status: 0 done, 1 failure, 2 bad "
        "command line.")
    add_options(p)
    a = p.parse_args(argv)
    check_options(p, a)
    return a


def filter_image(job: tuple) -> tuple:
    """One task: (seed, rank, iteration, index, size) -> (checksum,
    seconds, worker pid).  Runs in a worker process."""
    seed, rank, it, idx, size = job
    t0 = time.perf_counter()
    rng = np.random.default_rng((seed, rank, it, idx))
    image = rng.random((size, size))
    kernel = rng.random((5, 5))
    kernel /= kernel.sum()
    out = ndimage.convolve(image, kernel, mode="reflect")
    out = ndimage.gaussian_filter(out, sigma=2.0)
    edges = np.hypot(ndimage.sobel(out, axis=0), ndimage.sobel(out, axis=1))
    return float(edges.sum()), time.perf_counter() - t0, os.getpid()


def work(a: argparse.Namespace, rank: int) -> None:
    """The iterations, their lines and metrics, the statistics."""
    telem.describe("scipy_scale_work_iteration_seconds", "gauge", "s",
                   "time of one iteration over every image")
    telem.describe("scipy_scale_work_task_seconds", "gauge", "s",
                   "time of one image's filters in a worker")
    telem.describe("scipy_scale_work_images_per_second", "gauge", "1/s",
                   "images filtered per second by this rank")
    total = a.iterations + a.burns
    times, checksum = [], 0.0
    ctx = mp.get_context("fork")
    with ctx.Pool(a.workers) as pool:
        for it in range(total):
            jobs = [(a.seed, rank, it, i, a.size) for i in range(a.images)]
            t0 = time.perf_counter()
            with telem.section("iteration"):
                res = pool.map(filter_image, jobs,
                               chunksize=max(1, a.images // (4 * a.workers)))
            dt = time.perf_counter() - t0
            sums = sum(r[0] for r in res)
            checksum += sums
            say(f"rank {rank}: Time for iteration {it} is {dt:.4f} seconds")
            telem.add_data("scipy_scale_work_iteration_seconds", dt)
            telem.add_data("scipy_scale_work_progress", (it + 1) / total)
            telem.add_data("scipy_scale_work_images_per_second",
                           a.images / dt, level=2)
            telem.add_data("scipy_scale_work_edge_mean",
                           sums / (a.images * a.size * a.size), level=3)
            for pid in sorted({r[2] for r in res}):
                telem.add_data_batch(
                    "scipy_scale_work_task_seconds",
                    [r[1] for r in res if r[2] == pid], level=2,
                    tags={"worker": str(pid)})
            if it >= a.burns:
                times.append(dt)
    arr = np.array(times)
    say(f"rank {rank}: Average time: {arr.mean():.4f} second(s)")
    say(f"rank {rank}: Standard deviation: {arr.std():.4f} second(s)")
    say(f"rank {rank}: checksum {checksum:.10g} over "
          f"{total * a.images} images")


def main(argv=None) -> int:
    a = parse_args(argv)
    rank = int(os.environ.get("TELEM_RANK", "0") or 0)
    work(a, rank)
    st, lvl = telem.stats(), telem.level()
    ok = telem.finalize()
    say(f"rank {rank}: level {lvl}: queued {st.queued}, "
          f"skipped by level {st.filtered}, dropped {st.dropped}; "
          f"finalize: {'ok' if ok else 'not confirmed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
