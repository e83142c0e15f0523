#!/usr/bin/python3
"""bench_python_client.py - the Python clients against the C calls they wrap.

Starts a real local job (telemd + telem_dictd on 3 virtual nodes, the test
fixture python/tests/jobfix.py), then measures in the same run, interleaved
so that both sides see the same machine:

* get_data of one 3,600-point series: AnalysisClient.get_data (points into
  numpy arrays) against ac_query + ac_result_destroy called straight from
  ctypes (the C call itself; one foreign call, no conversion).  Target:
  Python's median latency <= 2x C's.
* put and get of a 64 MiB numpy array: DDict.put and DDict.get_into (into
  an array kept between rounds) against ddict_put and ddict_get_into called
  straight on the arrays' memory.  Target: Python's throughput >= 0.8x C's.
  d[key], which returns a new array each time (its pages faulted in), is
  printed beside them.  The copies Python adds are counted with
  tracemalloc (numpy reports its buffers to it): the peak Python memory
  of a put should be far below the array's size (no copy), of a get the
  array it returns (one buffer, no second copy).

Run with PYTHONPATH=<builddir>/python and TELEM_BIN=<builddir>/bin.
Prints FIGURE lines (bench/run.sh's format) and exits 0, or 77 when no
build is found.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import sys
import time
import tracemalloc
from ctypes import byref, c_size_t, c_uint64, c_void_p

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python", "tests"))

import numpy as np  # noqa: E402

POINTS = 3600
QUERY_ROUNDS = int(os.environ.get("BENCH_QUERY_ROUNDS", "300"))
BIG = 64 << 20
BIG_ROUNDS = int(os.environ.get("BENCH_BIG_ROUNDS", "7"))


def figure(name: str, target: str, measured: str, peer: str, ratio: float,
           met: bool) -> None:
    print(f"FIGURE\t{name}\t{target}\t{measured}\t{peer}\t{ratio:.2f}\t"
          f"{'met' if met else 'missed'}", flush=True)


def bench_query(job) -> None:
    from telem import _lib
    from telem.analysis import AnalysisClient
    r = job.run(["add_data_demo", "--count", str(POINTS), "--metric",
                 "bench_loss", "--quiet"], node="n1")
    assert r.returncode == 0, r.stderr
    ac = AnalysisClient(timeout=5)
    L = _lib.lib()
    q = _lib.QueryC()
    names = (ctypes.c_char_p * 1)(b"bench_loss")
    q.metrics, q.nmetrics = names, 1
    res = ac.get_data("bench_loss")
    assert len(res.series) == 1 and len(res.series[0]) == POINTS
    py, c = [], []
    for i in range(QUERY_ROUNDS):
        t0 = time.perf_counter_ns()
        out = c_void_p()
        rc = L.ac_query(ac._ac, byref(q), byref(out))
        n = L.ac_result_series(out, 0).contents.npoints
        L.ac_result_destroy(byref(out))
        t1 = time.perf_counter_ns()
        s = ac.get_data("bench_loss").series[0]
        t2 = time.perf_counter_ns()
        assert rc == 0 and n == POINTS and len(s.values) == POINTS
        c.append(t1 - t0)
        py.append(t2 - t1)
    ac.close()
    mp, mc = statistics.median(py) / 1e3, statistics.median(c) / 1e3
    print(f"get_data 3,600 points: Python median {mp:.0f} us, C median "
          f"{mc:.0f} us ({QUERY_ROUNDS} rounds each, interleaved)")
    figure("Python get_data, one 3,600-point series (median latency)",
           "<= 2x C", f"{mp:.0f} us", f"{mc:.0f} us (ac_query)", mp / mc,
           mp <= 2 * mc)


def bench_dict(job) -> None:
    from telem import _lib
    from telem.ddict import DDict
    L = _lib.lib()
    d = DDict(namespace="bench", timeout=60)
    arr = np.random.default_rng(1).random(BIG // 8)
    dst = np.empty_like(arr)
    h = d._d
    put_py, put_c, get_py, get_c, new_py = [], [], [], [], []
    pdst = np.empty_like(arr)
    for i in range(BIG_ROUNDS):
        t0 = time.perf_counter()
        v = c_uint64()
        rc = L.ddict_put(h, b"c-key", 5, arr.ctypes.data, arr.nbytes,
                         byref(v))
        t1 = time.perf_counter()
        d["py-key"] = arr
        t2 = time.perf_counter()
        n = c_size_t()
        rc2 = L.ddict_get_into(h, b"c-key", 5, dst.ctypes.data, dst.nbytes,
                               byref(n), None)
        t3 = time.perf_counter()
        got = d.get_into("py-key", pdst)
        t4 = time.perf_counter()
        back = d["py-key"]
        t5 = time.perf_counter()
        assert rc == 0 and rc2 == 0 and n.value == BIG and got == BIG
        assert back.shape == arr.shape and back[-1] == arr[-1]
        put_c.append(t1 - t0)
        put_py.append(t2 - t1)
        get_c.append(t3 - t2)
        get_py.append(t4 - t3)
        new_py.append(t5 - t4)
        del back
    assert np.array_equal(dst, arr) and np.array_equal(pdst, arr)
    mb = BIG / 1e6
    for what, py, c in (("put", put_py, put_c), ("get", get_py, get_c)):
        tp, tc = mb / statistics.median(py), mb / statistics.median(c)
        print(f"DDict {what} 64 MiB: Python {tp:.0f} MB/s, C {tc:.0f} MB/s "
              f"(medians of {BIG_ROUNDS}; Python runs: "
              f"{', '.join(f'{mb / x:.0f}' for x in py)})")
        how = "put" if what == "put" else "get_into into a kept array"
        figure(f"Python DDict {how}, 64 MiB numpy array (throughput)",
               ">= 0.8x C", f"{tp:.0f} MB/s", f"{tc:.0f} MB/s "
               f"(ddict_{'put' if what == 'put' else 'get_into'})", tp / tc,
               tp >= 0.8 * tc)
    tn = mb / statistics.median(new_py)
    print(f"DDict d[key] of 64 MiB (a new array each time, its pages "
          f"faulted in): {tn:.0f} MB/s (runs: "
          f"{', '.join(f'{mb / x:.0f}' for x in new_py)})")
    # Copies: Python-side memory of one put and one get, traced.
    tracemalloc.start()
    tracemalloc.reset_peak()
    d["py-key"] = arr
    put_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    back = d["py-key"]
    get_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"Python memory traced: put peak {put_peak / 2**20:.2f} MiB, get "
          f"peak {get_peak / 2**20:.2f} MiB, for a {BIG >> 20} MiB array")
    figure("Python DDict put of 64 MiB: Python-side copies (traced peak)",
           "no copy (< 1 MiB)", f"{put_peak / 2**20:.2f} MiB", "-",
           put_peak / BIG, put_peak < (1 << 20))
    figure("Python DDict get of 64 MiB: Python-side buffers (traced peak)",
           "one buffer (< 1.1x the array)", f"{get_peak / 2**20:.2f} MiB",
           "-", get_peak / BIG, get_peak < 1.1 * BIG)
    del back
    d.close()


def main() -> int:
    if not os.environ.get("TELEM_BIN"):
        print("SKIPPED: TELEM_BIN must name a telem build's bin directory")
        return 77
    import jobfix
    job = jobfix.LocalJob(3)
    try:
        from telem import _lib
        print(f"nproc {os.cpu_count()}, load {os.getloadavg()[0]:.2f}, "
              f"libtelem {_lib.library_path()}")
        bench_query(job)
        bench_dict(job)
    finally:
        job.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
