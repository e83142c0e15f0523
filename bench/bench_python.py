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
<= 1 us.  Beside them, for scale, Dragon's add_data from Python: one
synchronous HTTP POST per sample (http.client, one kept-alive connection)
to bench_sqlite_server (from --bin), which commits each sample into SQLite
before it answers; samples/s over about 2 s, and telem.add_data's rate as a
multiple of it.  Skipped, with the reason, where bench_sqlite_server was
not built (no libsqlite3-dev).

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


def median_ns(body: Callable[[int], None], n: int) -> tuple[float, float]:
    """Median ns per iteration of body(n) over REPS runs: wall time, and the
    thread's own CPU time (which leaves out other processes' time slices
    on a shared machine)."""
    runs, cpu = [], []
    for _ in range(REPS):
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        body(n)
        runs.append((time.perf_counter_ns() - t0) / n)
        cpu.append((time.thread_time_ns() - c0) / n)
    return statistics.median(runs), statistics.median(cpu)


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
        if k in ("add_data_ns", "section_pair_ns", "add_data_cpu_ns",
                 "section_pair_cpu_ns"):
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

    f = {}
    f["loop"], f["loop_cpu"] = median_ns(loop, N)
    for name, body in (("add_data", adds), ("section", sections),
                       ("call", calls), ("decorated", deco_calls),
                       ("batch", batches)):
        telem.flush(5.0)
        f[name], f[name + "_cpu"] = median_ns(body, N)
    telem.flush(10.0)
    return f


def dragon_style(bindir: Path, seconds: float = 2.0) -> tuple[float, str]:
    """Samples/s of a synchronous POST + SQLite commit per sample, from
    Python; (0, why) when bench_sqlite_server cannot run here."""
    import http.client
    server = bindir / "bench_sqlite_server"
    if not os.access(server, os.X_OK):
        return 0.0, f"no {server} (needs libsqlite3-dev)"
    d = Path(tempfile.mkdtemp(prefix="telem-bench-sqlite."))
    p = subprocess.Popen([str(server), str(d / "samples.db")],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    try:
        port = 0
        for line in p.stdout:
            if line.startswith("port\t"):
                port = int(line.split("\t")[1])
            if line.strip() == "ready":
                break
        if not port:
            return 0.0, "bench_sqlite_server did not start"
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            conn.request("POST", "/api/add_data",
                         body=f"x {float(n)} {time.time_ns()}")
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                return 0.0, f"bench_sqlite_server answered {r.status}"
            n += 1
        rate = n / (time.perf_counter() - t0)
        conn.close()
        return rate, f"{n} samples"
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
        shutil.rmtree(d, ignore_errors=True)


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
    drate, dwhy = dragon_style(args.bin)
    print(f"bench_python: {sys.version.split()[0]}, libtelem "
          f"{telem.libtelem_path()}, median of {REPS} x {N:,}")
    print(f"  {'case':<44} {'ns/op':>9} {'ops/s':>12} {'x C':>8} "
          f"{'cpu ns':>9} {'x C cpu':>8}")
    rows = [("empty loop iteration", "loop", None),
            ("telem.add_data", "add_data", "add_data"),
            ("with telem.section(): pass", "section", "section_pair"),
            ("@telem.section call - bare call", "decorated-call",
             "section_pair"),
            ("add_data_batch, per sample (1,000/call)", "batch", "add_data")]
    for name, key, ckey in rows:
        if key == "decorated-call":
            ns = f["decorated"] - f["call"]
            cpu = f["decorated_cpu"] - f["call_cpu"]
        else:
            ns, cpu = f[key], f[key + "_cpu"]
        cns = c.get(ckey + "_ns") if ckey else None
        ccpu = c.get(ckey + "_cpu_ns") if ckey else None
        ratio = f"{ns / cns:8.1f}" if cns else f"{'-':>8}"
        cratio = f"{cpu / ccpu:8.1f}" if ccpu else f"{'-':>8}"
        print(f"  {name:<44} {ns:9.1f} {1e9 / ns:12,.0f} {ratio} "
              f"{cpu:9.1f} {cratio}")
    nan = float("nan")
    print(f"  C: telem_add_data {c.get('add_data_ns', nan):.1f} ns "
          f"({c.get('add_data_cpu_ns', nan):.1f} CPU), section pair "
          f"{c.get('section_pair_ns', nan):.1f} ns "
          f"({c.get('section_pair_cpu_ns', nan):.1f} CPU)"
          + ("" if c else " (no bench_add_data in --bin)"))
    print("  (ns/op: wall time; cpu ns: the thread's own CPU time)")
    print(f"  samples: queued {st.queued} sent {st.sent} dropped "
          f"{st.dropped}")
    if drate:
        print(f"  Dragon-style add_data from Python (POST + SQLite commit "
              f"a sample): {drate:,.0f} samples/s ({dwhy}); telem.add_data "
              f"{1e9 / f['add_data'] / drate:,.0f}x that rate")
    else:
        print(f"  Dragon-style add_data from Python: not measured: {dwhy}")
    cr = c.get("add_data_ns")
    figure("telem.add_data calls/s (Python, one thread)", ">= 1 M/s",
           f"{1e3 / f['add_data']:.2f} M/s",
           f"C {1e3 / cr:.1f} M/s" if cr else "",
           f"{f['add_data'] / cr:.1f}x C's ns" if cr else "",
           int(f["add_data"] <= 1000))
    cs = c.get("section_pair_cpu_ns")
    figure("with telem.section() pair (Python, the thread's CPU time)",
           "<= 1,000 ns",
           f"{f['section_cpu']:.0f} ns (wall {f['section']:.0f} ns)",
           f"C {cs:.0f} ns" if cs else "",
           f"{f['section_cpu'] / cs:.1f}x C" if cs else "",
           int(f["section_cpu"] <= 1000))
    if drate:
        figure("Dragon-style add_data from Python: HTTP POST + SQLite "
               "commit a sample", "(reported)", f"{drate:,.0f} samples/s",
               f"telem.add_data {1e3 / f['add_data']:.2f} M/s",
               f"telem {1e9 / f['add_data'] / drate:,.0f}x faster", -1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
