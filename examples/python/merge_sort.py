#!/usr/bin/python3
"""merge_sort.py - a multiprocessing merge sort on every node of a job, and
a cluster-wide stop when a node runs too many processes (telem's version of
Dragon's merge sort example, in Python).

For every input size (--sizes), rank r sorts its share of the input
(numbers drawn from (seed, size), so rank 0 can regenerate all of it).
The sort forks a worker process for one half and sorts the other half
itself, recursively, down to --min-chunk elements or --max-depth levels;
halves live in shared memory (an anonymous mapping made before the forks)
and the parent merges them.  Each rank puts its sorted share into the
job's dictionary (telem.DDict); rank 0 merges the shares, checks that the
result is sorted and holds exactly the input (count and sum) and prints
one line per size.

The stop.  With --limit N, rank 0 runs a watch thread: an
telem.AnalysisClient reads num_running_processes (the node metric telemd
records from telemetry level 2, once a second) from every node of the job
each --watch-period; when a node runs more than N processes it sets the
dictionary's cluster-wide event "<ns>/stop".  Anyone may set it the same
way (telem_dict event-set <ns>/stop).  On every rank a thread waits for
the event (the dictionary notifies it, nothing polls) and sets a
multiprocessing.Event shared with the workers; every worker checks that
event before it forks again, so from then on the recursion stops and sorts
locally.  The smallest depth where it stopped is the cut-off.  Workers
only compute in shared memory: the sockets stay in the first process.
With --limit and a telemetry level below 2 there is nothing to watch: it
says so and exits 2.

--until-stop R sorts the last size again, at most R times, until a round
shows a cut-off: a demonstration that ends on behaviour, not on time.
Rank 0 decides after each round and tells the others through the
dictionary.  The stop event stays set: run again in the same run
directory with another --ns.

Run it under telem_launch (level 2 is the default there):

    telem_launch --local 2 -- /usr/bin/python3 examples/python/merge_sort.py \\
        --sizes 1000000 --until-stop 30 --limit 150

Records (level 1, tag size): merge_sort_py_seconds,
merge_sort_py_peak_processes, merge_sort_py_cutoff_depth (the cut-off, or
--max-depth when none).

Exit status: 0 sorted, 1 failure (a wrong result, the dictionary), 2 bad
command line or a level too low for the watch.
"""

from __future__ import annotations

import argparse
import mmap
import multiprocessing as mp
import os
import sys
import threading
import time

import numpy as np

import telem
from telem import DDict, TelemError

_LIVE, _PEAK, _CUT = 0, 1, 2          # slots of the shared counters



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
        prog="merge_sort.py",
        description="A merge sort forking worker processes on every node; a "
        "watch on num_running_processes sets a cluster-wide stop event in "
        "the dictionary, after which the recursion sorts locally.",
        epilog="Environment (set by telem_launch): TELEM_RANK, TELEM_NNODES, "
        "TELEM_LEVEL, TELEM_NODEFILE, TELEM_DICT_NODEFILE.  Exit status: 0 "
        "sorted, 1 failure, 2 bad command line or a level below 2 with "
        "--limit.")
    p.add_argument("--sizes", default="100000,1000000",
                   help="input sizes, comma-separated (default "
                   "100000,1000000)")
    p.add_argument("--min-chunk", type=int, default=10000,
                   help="sort locally below this many elements (default "
                   "10000)")
    p.add_argument("--max-depth", type=int, default=5,
                   help="fork at most this many levels, 0-12 (default 5)")
    p.add_argument("--seed", type=int, default=1, help="random seed")
    p.add_argument("--ns", default="merge_sort_py",
                   help="dictionary namespace and event prefix")
    p.add_argument("--limit", type=int, default=0,
                   help="rank 0 watches num_running_processes on every node "
                   "and sets <ns>/stop above this many (default 0: no watch)")
    p.add_argument("--watch-period", type=float, default=0.2,
                   help="seconds between the watch's queries (default 0.2)")
    p.add_argument("--until-stop", type=int, default=0,
                   help="sort the last size again, at most this often, "
                   "until a round shows a cut-off (default 0)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds to wait for the other ranks (default 60)")
    a = p.parse_args(argv)
    try:
        a.sizes = [int(s) for s in a.sizes.split(",")]
    except ValueError:
        p.error(f"--sizes: not a list of integers: {a.sizes!r}")
    if not a.sizes or len(a.sizes) > 16 or min(a.sizes) < 1 \
            or max(a.sizes) > 100_000_000:
        p.error("--sizes: 1 to 16 sizes of 1-100000000 elements")
    if a.min_chunk < 2 or not 0 <= a.max_depth <= 12:
        p.error("--min-chunk must be 2 or more and --max-depth 0-12")
    if a.limit < 0 or a.until_stop < 0 or not 0 < a.watch_period <= 60 \
            or not a.timeout > 0:
        p.error("--limit and --until-stop are 0 or more, --watch-period "
                "0-60 s, --timeout above 0")
    if not a.ns or "/" in a.ns:
        p.error("--ns: a non-empty name without '/'")
    return a


def the_input(seed: int, size: int) -> np.ndarray:
    """The whole input of one size; every rank draws the same."""
    return np.random.default_rng((seed, size)).integers(
        0, 2 ** 32, size, dtype=np.uint64).astype(np.uint32)


# ---- the fork tree (runs in the rank's process and its workers) ----------

class Tree:
    """One rank's sort: the data and counters in shared memory, the stop
    event, the limits."""

    def __init__(self, n: int, min_chunk: int, max_depth: int,
                 stop: mp.synchronize.Event) -> None:
        self.mem = mmap.mmap(-1, max(8, 4 * n))
        self.data = np.frombuffer(self.mem, dtype=np.uint32, count=n)
        self.cmem = mmap.mmap(-1, 8 * 3)
        self.counts = np.frombuffer(self.cmem, dtype=np.int64)
        self.counts[:] = (1, 1, -1)
        self.lock = mp.get_context("fork").Lock()
        self.min_chunk, self.max_depth, self.stop = min_chunk, max_depth, stop

    def _enter(self) -> None:
        with self.lock:
            self.counts[_LIVE] += 1
            self.counts[_PEAK] = max(self.counts[_PEAK], self.counts[_LIVE])

    def _leave(self) -> None:
        with self.lock:
            self.counts[_LIVE] -= 1

    def _stopped_at(self, depth: int) -> None:
        with self.lock:
            if self.counts[_CUT] < 0 or depth < self.counts[_CUT]:
                self.counts[_CUT] = depth

    def sort(self, lo: int, hi: int, depth: int) -> None:
        """Sorts data[lo:hi], forking a worker for the left half."""
        a = self.data
        if hi - lo <= self.min_chunk or depth >= self.max_depth:
            a[lo:hi].sort()
            return
        if self.stop.is_set():           # the cluster-wide stop: no fork
            self._stopped_at(depth)
            a[lo:hi].sort()
            return
        mid = (lo + hi) // 2
        self._enter()
        w = mp.get_context("fork").Process(target=self._worker,
                                           args=(lo, mid, depth + 1))
        w.start()
        self.sort(mid, hi, depth + 1)
        w.join()
        if w.exitcode != 0:
            raise RuntimeError(f"worker for [{lo}, {mid}) exited "
                               f"{w.exitcode}")
        a[lo:hi] = np.sort(a[lo:hi], kind="stable")   # merges two runs

    def _worker(self, lo: int, hi: int, depth: int) -> None:
        try:
            self.sort(lo, hi, depth)
        finally:
            self._leave()


# ---- the stop: a watch on rank 0, a waiter on every rank -----------------

def watch(a, done: threading.Event) -> None:
    """Rank 0: sets <ns>/stop once a node runs more than --limit
    processes (num_running_processes, level 2)."""
    ac, d = telem.AnalysisClient(), DDict(namespace=a.ns)
    ev = f"{a.ns}/stop"
    try:
        while not done.wait(a.watch_period):
            if d.is_set(ev):
                return
            try:
                res = ac.get_data("num_running_processes", latest=True,
                                  start=-10)
            except TelemError:
                continue           # no node answered yet: ask again
            over = [(s.node, s.values[-1]) for s in res.series
                    if len(s) and s.values[-1] > a.limit]
            if over:
                node, n = max(over, key=lambda x: x[1])
                d.set_event(ev)
                say(f"merge_sort: watch: node {node} runs {n:.0f} "
                      f"processes (> {a.limit}): stop event {ev} set")
                return
    finally:
        ac.close()
        d.close()


def wait_stop(ns: str, stop, done: threading.Event) -> None:
    """Every rank: mirrors the dictionary's <ns>/stop into ``stop``."""
    d = DDict(namespace=ns)
    try:
        while not done.is_set():
            if d.wait(f"{ns}/stop", timeout=0.5):
                stop.set()
                return
    finally:
        d.close()


# ---- one round -----------------------------------------------------------

def sort_share(a, d: DDict, stop, size: int, rnd: int, rank: int,
               nnodes: int) -> None:
    share = np.array_split(the_input(a.seed, size), nnodes)[rank]
    if d.is_set(f"{a.ns}/stop"):
        stop.set()
    tree = Tree(len(share), a.min_chunk, a.max_depth, stop)
    tree.data[:] = share
    t0 = time.perf_counter()
    tree.sort(0, len(share), 0)
    dt = time.perf_counter() - t0
    peak, cut = int(tree.counts[_PEAK]), int(tree.counts[_CUT])
    tags = {"size": str(size)}
    telem.add_data("merge_sort_py_seconds", dt, tags=tags)
    telem.add_data("merge_sort_py_peak_processes", peak, tags=tags)
    telem.add_data("merge_sort_py_cutoff_depth",
                   cut if cut >= 0 else a.max_depth, tags=tags)
    d[f"sorted/{rnd}/{rank}"] = tree.data.copy()
    d[f"stats/{rnd}/{rank}"] = np.array([dt, peak, cut], dtype=np.float64)
    d.set_event(f"{a.ns}/done/{rnd}/{rank}")


def gather(a, d: DDict, size: int, rnd: int, nnodes: int) -> tuple:
    """Rank 0: merges and checks every share; returns (line, cut-off)."""
    t0 = time.perf_counter()
    shares, stats = [], []
    for r in range(nnodes):
        if not d.wait(f"{a.ns}/done/{rnd}/{r}", timeout=a.timeout):
            raise TelemError(-6, f"rank {r} did not finish size {size} "
                             f"within {a.timeout} s", "gather")
        shares.append(d[f"sorted/{rnd}/{r}"])
        stats.append(d[f"stats/{rnd}/{r}"])
    out = np.sort(np.concatenate(shares), kind="stable")
    gather_s = time.perf_counter() - t0
    ref = the_input(a.seed, size)
    ok = len(out) == size and bool(np.all(out[1:] >= out[:-1])) \
        and int(out.sum(dtype=np.uint64)) == int(ref.sum(dtype=np.uint64))
    slowest = max(s[0] for s in stats)
    peak = int(max(s[1] for s in stats))
    cuts = [int(s[2]) for s in stats if s[2] >= 0]
    cut = min(cuts) if cuts else -1
    line = (f"merge_sort: size {size}: {slowest:.3f} s (slowest node) + "
            f"{gather_s:.3f} s gather on {nnodes} node(s); peak {peak} "
            f"processes per node; cut-off "
            f"{'none' if cut < 0 else f'depth {cut}'}; "
            f"sorted: {'yes' if ok else 'NO'}")
    return line, cut, ok


def next_round(a, d: DDict, rank: int, rnd: int, again: bool) -> bool:
    """Rank 0 says whether round rnd+1 happens; the others wait for it."""
    key, ev = f"round/{rnd}", f"{a.ns}/round/{rnd}"
    if rank == 0:
        d[key] = b"again" if again else b"done"
        d.set_event(ev)
        return again
    if not d.wait(ev, timeout=a.timeout):
        raise TelemError(-6, f"rank 0 did not decide round {rnd} within "
                         f"{a.timeout} s", "merge_sort")
    return bytes(d[key]) == b"again"


def main(argv=None) -> int:
    a = parse_args(argv)
    try:
        rank = int(os.environ.get("TELEM_RANK", "0"))
        nnodes = int(os.environ.get("TELEM_NNODES", "1"))
    except ValueError:
        say("merge_sort: bad TELEM_RANK or TELEM_NNODES", file=sys.stderr)
        return 2
    if a.limit and telem.level() < 2:
        say(f"merge_sort: the process watch (--limit) needs telemetry "
              f"level 2 (telemd records num_running_processes from level "
              f"2); this job runs at level {telem.level()}: start it with "
              f"telem_launch --telemetry-level 2", file=sys.stderr)
        return 2
    stop, done = mp.get_context("fork").Event(), threading.Event()
    threads = [threading.Thread(target=wait_stop, args=(a.ns, stop, done),
                                daemon=True)]
    if a.limit and rank == 0:
        threads.append(threading.Thread(target=watch, args=(a, done),
                                        daemon=True))
    d = DDict(namespace=a.ns, timeout=a.timeout)
    for t in threads:
        t.start()
    sizes = list(a.sizes)
    rnd, failed, repeats = 0, False, 0
    try:
        while sizes:
            size = sizes.pop(0)
            sort_share(a, d, stop, size, rnd, rank, nnodes)
            again = False
            if rank == 0:
                line, cut, ok = gather(a, d, size, rnd, nnodes)
                say(line)
                failed |= not ok
                again = not sizes and cut < 0 and repeats < a.until_stop
            if not sizes and next_round(a, d, rank, rnd, again):
                sizes.append(size)
                repeats += 1
            rnd += 1
    except TelemError as e:
        say(f"merge_sort: {e}", file=sys.stderr)
        failed = True
    finally:
        done.set()
        for t in threads:
            t.join(timeout=5)
        d.close()
        telem.finalize()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
