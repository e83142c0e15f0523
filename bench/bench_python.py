"""bench_python.py - the Python API's cost against the C API's, one run.

Starts a real telemd (from --bin) in a private run directory, then
measures in this interpreter, one thread, median of 3 runs:
  - telem.add_data("x", v): calls/s and ns per call;
  - `with telem.section("x"): pass`: ns per pair;
  - @telem.section: ns per decorated call, less the bare call;
  - telem.add_data_batch of a 1,000-element float64 array: samples/s;
  - an empty Python loop iteration (what every loop here pays).
The C figures come from `bench_add_data --c-reference` run in the same
invocation (its own in-process telemd), and each Python figure is printed
as a ratio to them.  Targets: add_data >= 1 M calls/s; a section pair
<= 1 us.

    python3 bench/bench_python.py --bin BUILD/bin --python BUILD/python
"""

from __future__ import annotations

import argparse
import array
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

N = 1_000_000
REPS = 3


def median_ns(body: Callable[[int], None], n: int) -> float:
    """Median ns per iteration of body(n) over REPS runs."""
    runs = []
    for _ in range(REPS):
        t0 = time.perf_counter_ns()
        body(n)
        runs.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(runs)


def start_telemd(bindir: Path, rundir: Path) -> subprocess.Popen:
    """telemd as node bench, waiting (20 s at most) for "ready"."""
    out = rundir.parent / "telemd.out"
    p = subprocess.Popen([str(bindir / "telemd"), "--node", "bench",
                          "--nodefile", str(rundir.parent / "nodes"),
                          "--level", "1", "--bind", "none"],
                         stdout=open(out, "w"), stderr=subprocess.DEVNULL,
                         env=dict(os.environ, TELEM_RUNDIR=str(rundir)))
    end = time.monotonic() + 20
    while "ready\n" not in out.read_text():
        if p.poll() is not None or time.monotonic() > end:
            raise SystemExit("bench_python: telemd did not start")
        time.sleep(0.02)
    return p


def c_reference(bindir: Path) -> dict[str, float]:
    """bench_add_data --c-reference: ns per add_data call and section pair."""
    exe = bindir / "bench_add_data"
    if not exe.exists():
        return {}
    r = subprocess.run([str(exe), "--c-reference"], capture_output=True,
                       text=True, timeout=600)
    figs = {}
    for line in r.stdout.splitlines():
        k, _, v = line.partition(" ")
        if k in ("add_data_ns", "section_pair_ns"):
            figs[k] = float(v)
    return figs


def figure(name: str, target: str, measured: str, peer: str, ratio: str,
           ok: int) -> None:
    """One FIGURE line, as bench_common.c prints them."""
    verdict = "-" if ok < 0 else "met" if ok else "missed"
    print("\t".join(["FIGURE", name, target, measured, peer or "-",
                     ratio or "-", verdict]))


def measure(telem) -> dict[str, float]:
    """The Python figures, ns per operation."""
    add = telem.add_data
    sec = telem.section

    def loop(n: int) -> None:
        for _ in range(n):
            pass

    def adds(n: int) -> None:
        for _ in range(n):
            add("bench_py", 1.0)

    def sections(n: int) -> None:
        for _ in range(n):
            with sec("bench_py_step"):
                pass

    def bare() -> None:
        pass
    deco = sec("bench_py_fn")(bare)

    def calls(n: int) -> None:
        for _ in range(n):
            bare()

    def deco_calls(n: int) -> None:
        for _ in range(n):
            deco()

    vals = array.array("d", [1.0] * 1000)

    def batches(n: int) -> None:
        for _ in range(n // 1000):
            telem.add_data_batch("bench_py_batch", vals)

    f = {"loop": median_ns(loop, N)}
    for name, body in (("add_data", adds), ("section", sections),
                       ("call", calls), ("decorated", deco_calls),
                       ("batch", batches)):
        telem.flush(5.0)
        f[name] = median_ns(body, N)
    telem.flush(10.0)
    return f


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, type=Path,
                    help="bin directory with telemd and bench_add_data")
    ap.add_argument("--python", required=True, type=Path,
                    help="directory holding the built telem package")
    args = ap.parse_args()
    sys.path.insert(0, str(args.python))
    d = Path(tempfile.mkdtemp(prefix="telem-bench-py."))
    rundir = d / "run"
    rundir.mkdir(mode=0o700)
    os.environ.update(TELEM_RUNDIR=str(rundir), TELEM_NODE="bench",
                      TELEM_LEVEL="1")
    for k in ("TELEM_INGEST", "TELEM_CTL"):
        os.environ.pop(k, None)
    td = start_telemd(args.bin, rundir)
    try:
        import telem
        f = measure(telem)
        st = telem.stats()
        telem.finalize()
    finally:
        td.send_signal(signal.SIGTERM)
        td.wait(timeout=30)
        shutil.rmtree(d, ignore_errors=True)
    c = c_reference(args.bin)
    print(f"bench_python: {sys.version.split()[0]}, libtelem "
          f"{telem.libtelem_path()}, median of {REPS} x {N:,}")
    print(f"  {'case':<44} {'ns/op':>9} {'ops/s':>12} {'x C':>8}")
    rows = [("empty loop iteration", f["loop"], None),
            ("telem.add_data", f["add_data"], c.get("add_data_ns")),
            ("with telem.section(): pass", f["section"],
             c.get("section_pair_ns")),
            ("@telem.section call - bare call", f["decorated"] - f["call"],
             c.get("section_pair_ns")),
            ("add_data_batch, per sample (1,000/call)", f["batch"],
             c.get("add_data_ns"))]
    for name, ns, cns in rows:
        ratio = f"{ns / cns:8.1f}" if cns else f"{'-':>8}"
        print(f"  {name:<44} {ns:9.1f} {1e9 / ns:12,.0f} {ratio}")
    print(f"  C: telem_add_data {c.get('add_data_ns', float('nan')):.1f} ns, "
          f"section pair {c.get('section_pair_ns', float('nan')):.1f} ns"
          + ("" if c else " (no bench_add_data in --bin)"))
    print(f"  samples: queued {st.queued} sent {st.sent} dropped "
          f"{st.dropped}")
    cr = c.get("add_data_ns")
    figure("telem.add_data calls/s (Python, one thread)", ">= 1 M/s",
           f"{1e3 / f['add_data']:.2f} M/s",
           f"C {1e3 / cr:.1f} M/s" if cr else "",
           f"{f['add_data'] / cr:.1f}x C's ns" if cr else "",
           int(f["add_data"] <= 1000))
    cs = c.get("section_pair_ns")
    figure("with telem.section() pair (Python)", "<= 1,000 ns",
           f"{f['section']:.0f} ns", f"C {cs:.0f} ns" if cs else "",
           f"{f['section'] / cs:.1f}x C" if cs else "",
           int(f["section"] <= 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
