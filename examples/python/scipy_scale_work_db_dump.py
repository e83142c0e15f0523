#!/usr/bin/python3
"""scipy_scale_work_db_dump.py - runs scipy_scale_work.py's image work on
every node of a job, then dumps the job's telemetry into one file that
telem_view serves and exports (telem's version of Dragon's
scipy_scale_work_db_dump example, which copies each node's SQLite file).

Every rank does the work of scipy_scale_work.py (same options), has its
samples confirmed by its node's telemd (telem.flush) and says so with the
dictionary event "<ns>/done/<rank>".  Rank 0 waits for every rank, then
writes the dump with telem.AnalysisClient.dump(): every node's series
(the program's metrics and, at level 2 and above, the node metrics
telemd sampled meanwhile), metric metas, system snapshots and the job's
restarts and detector events.  A file that exists is never overwritten:
rank 0 refuses it before any work starts (exit 2).

Run it under telem_launch, then look at the dump:

    telem_launch --local 2 --telemetry-level 2 -- /usr/bin/python3 \\
        examples/python/scipy_scale_work_db_dump.py --dump job.tdump
    telem_view job.tdump                  # the dashboard, OpenTSDB's API
    telem_view --export csv job.tdump     # or every point as CSV

Exit status: 0 dumped, 1 a failure (a rank did not finish, no node
answered the dump), 2 bad command line or an existing dump file;
a dump that misses some node is written, names them and exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys

import telem
from telem import DDict, TelemError

import scipy_scale_work as work



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
        prog="scipy_scale_work_db_dump.py",
        description="scipy_scale_work.py's image work on every node, then "
        "rank 0 dumps the job's telemetry (AnalysisClient.dump) into a file "
        "telem_view opens.",
        epilog="Environment (set by telem_launch): TELEM_RANK, TELEM_NNODES, "
        "TELEM_LEVEL, TELEM_NODEFILE, TELEM_DICT_NODEFILE, TELEM_RUNDIR.  "
        "Exit status: 0 dumped, 1 failure, 2 bad command line or an "
        "existing dump file.")
    work.add_options(p)
    p.add_argument("--dump", default="scipy_scale_work.tdump",
                   help="the dump file rank 0 writes; must not exist "
                   "(default scipy_scale_work.tdump)")
    p.add_argument("--ns", default="scipy_scale_work_db_dump",
                   help="dictionary namespace and event prefix")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds rank 0 waits for the other ranks "
                   "(default 300)")
    a = p.parse_args(argv)
    work.check_options(p, a)
    if not a.ns or "/" in a.ns or not a.timeout > 0:
        p.error("--ns: a non-empty name without '/'; --timeout above 0")
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    try:
        rank = int(os.environ.get("TELEM_RANK", "0"))
        nnodes = int(os.environ.get("TELEM_NNODES", "1"))
    except ValueError:
        say("scipy_scale_work_db_dump: bad TELEM_RANK or TELEM_NNODES",
              file=sys.stderr)
        return 2
    path = os.path.abspath(a.dump)
    if rank == 0 and os.path.lexists(path):
        say(f"scipy_scale_work_db_dump: {path} exists: a dump never "
              "overwrites a file; name another with --dump", file=sys.stderr)
        return 2
    d = DDict(namespace=a.ns)
    try:
        work.work(a, rank)
        if not telem.flush(30.0):
            say(f"scipy_scale_work_db_dump: rank {rank}: telemd did not "
                  "confirm the last samples; the dump may miss them",
                  file=sys.stderr)
        d.set_event(f"{a.ns}/done/{rank}")
        if rank != 0:
            return 0
        for r in range(nnodes):
            if not d.wait(f"{a.ns}/done/{r}", timeout=a.timeout):
                say(f"scipy_scale_work_db_dump: rank {r} did not finish "
                      f"within {a.timeout:.0f} s; no dump", file=sys.stderr)
                return 1
        with telem.AnalysisClient() as ac:
            res = ac.dump(path, rundir=os.environ.get("TELEM_RUNDIR"))
        say(f"scipy_scale_work_db_dump: {res.summary}")
        for node, why in res.missing.items():
            say(f"scipy_scale_work_db_dump: not in the dump: {node}: {why}")
        say(f"scipy_scale_work_db_dump: open it with: telem_view {path}")
        return 0
    except TelemError as e:
        say(f"scipy_scale_work_db_dump: rank {rank}: {e}", file=sys.stderr)
        return 1
    finally:
        d.close()
        telem.finalize()


if __name__ == "__main__":
    sys.exit(main())
