"""telem's metrics calls from Python, against a real telemd.

Every public function of the metrics API: what lands in telemd (read back
with telem_client), and what bad input, a missing daemon and a finalized
library give.
"""

from __future__ import annotations

import array
import math
import os
import time

import pytest

import telem
from telem import errors
from conftest import point_libtelem, series_of

try:
    import numpy as np
except ImportError:  # the package works without numpy
    np = None


def flushed() -> None:
    assert telem.flush(10.0) is True


def points(node, metric: str, **tags: str) -> list[list[float]]:
    ss = series_of(node.query(metric), metric, **tags)
    assert len(ss) == 1, ss
    return ss[0]["points"]


def test_add_data_lands_with_tags(telemd_node):
    assert telem.add_data("py_loss", 1.5) is True
    assert telem.add_data("py_loss", 2.5, tags={"phase": "fwd"}) is True
    assert telem.add_data("py_loss", value=3.5, level=1,
                          tags={"phase": "bwd", "layer": "7"}) is True
    flushed()
    ss = series_of(telemd_node.query("py_loss"), "py_loss")
    by_phase = {s["tags"].get("phase"): s for s in ss}
    assert set(by_phase) == {None, "fwd", "bwd"}
    assert by_phase[None]["points"][-1][1] == 1.5
    assert by_phase["fwd"]["points"][-1][1] == 2.5
    assert by_phase["bwd"]["tags"]["layer"] == "7"
    s = by_phase[None]
    assert s["tags"]["host"] == "n1"
    assert s["tags"]["pid"] == str(os.getpid())


def test_timestamps_seconds_and_nanoseconds(telemd_node):
    now_ns = time.time_ns()
    assert telem.add_data("py_ts", 1.0, ts=now_ns - 2_000_000_000)
    assert telem.add_data("py_ts", 2.0, ts=(now_ns - 1_000_000_000) / 1e9)
    flushed()
    pts = points(telemd_node, "py_ts")
    assert pts[0] == [now_ns - 2_000_000_000, 1.0]
    assert abs(pts[1][0] - (now_ns - 1_000_000_000)) < 1000   # float: ~us
    assert pts[1][1] == 2.0


def test_bad_input(telemd_node):
    before = telem.stats().invalid
    for name in ("", "x" * 256, "a\0b"):
        with pytest.raises(telem.TelemInvalid) as e:
            telem.add_data(name, 1.0)
        assert isinstance(e.value, ValueError)
        assert e.value.code == errors.EINVAL
        assert e.value.sentence == telem._native.strerror(errors.EINVAL)
    for name in (None, b"x", 3):
        with pytest.raises(TypeError):
            telem.add_data(name, 1.0)
    for v in (math.nan, math.inf, -math.inf, 10 ** 400):
        with pytest.raises(telem.TelemInvalid):
            telem.add_data("py_bad", v)
    for v in ("1", None, True, [1.0]):
        with pytest.raises(TypeError):
            telem.add_data("py_bad", v)
    for ts in (-1, 0, -1.5, 1e300, math.nan, 2 ** 70):
        with pytest.raises(telem.TelemInvalid):
            telem.add_data("py_bad", 1.0, ts=ts)
    with pytest.raises(TypeError):
        telem.add_data("py_bad", 1.0, ts="now")
    for level in (0, 5, -1, 2 ** 40):
        with pytest.raises(telem.TelemInvalid):
            telem.add_data("py_bad", 1.0, level=level)
    with pytest.raises(TypeError):
        telem.add_data("py_bad", 1.0, level=1.0)
    bad_tags = [{"host": "h"}, {"pid": "1"}, {"": "v"}, {"k": "x" * 256},
                {f"k{i}": "v" for i in range(9)}]
    for tags in bad_tags:
        with pytest.raises(telem.TelemInvalid):
            telem.add_data("py_bad", 1.0, tags=tags)
    for tags in ({"k": 1}, {1: "v"}, [("k", "v")], "k=v"):
        with pytest.raises(TypeError):
            telem.add_data("py_bad", 1.0, tags=tags)
    with pytest.raises(TypeError):
        telem.add_data("py_bad")
    with pytest.raises(TypeError):
        telem.add_data("py_bad", 1.0, nonsense=1)
    with pytest.raises(TypeError):
        telem.add_data("py_bad", 1.0, value=2.0)
    # Refused by libtelem (not by the binding's own type checks): counted.
    assert telem.stats().invalid > before
    flushed()
    assert series_of(telemd_node.query("py_bad"), "py_bad") == []


def test_level(telemd_node):
    assert telem.level() == 1
    f0 = telem.stats().filtered
    assert telem.add_data("py_level", 1.0, level=2) is False
    assert telem.stats().filtered == f0 + 1
    telem.set_level(0)
    try:
        assert telem.level() == 0
        assert telem.add_data("py_level", 2.0) is False
        assert telem.counter_add("py_level_total", 1) is False
    finally:
        telem.set_level(1)
    for bad in (-1, 5):
        with pytest.raises(telem.TelemInvalid):
            telem.set_level(bad)
    with pytest.raises(TypeError):
        telem.set_level("1")
    assert telem.add_data("py_level", 3.0) is True
    flushed()
    assert [p[1] for p in points(telemd_node, "py_level")] == [3.0]


def test_add_data_batch_buffers(telemd_node):
    vals = array.array("d", [1.0, 2.0, 3.0])
    assert telem.add_data_batch("py_batch_arr", vals) == 3
    assert telem.add_data_batch("py_batch_mv", memoryview(vals)) == 3
    assert telem.add_data_batch("py_batch_list", [1, 2.5]) == 2
    assert telem.add_data_batch("py_batch_empty", []) == 0
    base = time.time_ns() - 10_000_000_000
    times = array.array("q", [base + i * 1000 for i in range(3)])
    assert telem.add_data_batch("py_batch_ns", vals, times=times,
                                tags={"k": "v"}) == 3
    secs = array.array("d", [(base + 5_000_000) / 1e9, (base + 6_000_000) / 1e9,
                             (base + 7_000_000) / 1e9])
    assert telem.add_data_batch("py_batch_s", vals, times=secs) == 3
    assert telem.add_data_batch("py_batch_seq", [4.0, 5.0],
                                times=[base, (base + 1000) / 1e9]) == 2
    flushed()
    assert [p[1] for p in points(telemd_node, "py_batch_arr")] == [1, 2, 3]
    assert [p[1] for p in points(telemd_node, "py_batch_mv")] == [1, 2, 3]
    assert [p[1] for p in points(telemd_node, "py_batch_list")] == [1, 2.5]
    pts = points(telemd_node, "py_batch_ns", k="v")
    assert pts == [[base + i * 1000, float(i + 1)] for i in range(3)]
    pts = points(telemd_node, "py_batch_s")
    assert [p[1] for p in pts] == [1, 2, 3]
    assert all(abs(p[0] - (base + (5 + i) * 1_000_000)) < 1000
               for i, p in enumerate(pts))
    pts = points(telemd_node, "py_batch_seq")
    assert pts[0][0] == base                     # int: exact ns
    assert abs(pts[1][0] - (base + 1000)) < 1000  # float s: ~0.25 us


@pytest.mark.skipif(np is None, reason="numpy is not installed")
def test_add_data_batch_numpy(telemd_node):
    n = 10_000
    v = np.arange(n, dtype=np.float64)
    t = np.int64(time.time_ns() - 20_000_000_000) + np.arange(n,
                                                              dtype=np.int64)
    assert telem.add_data_batch("py_batch_np", v, times=t) == n
    assert telem.add_data_batch("py_batch_np_s", v[:5],
                                times=t[:5].astype(np.float64) / 1e9) == 5
    flushed()
    pts = points(telemd_node, "py_batch_np")
    assert len(pts) == n
    assert pts[0] == [int(t[0]), 0.0] and pts[-1] == [int(t[-1]), n - 1.0]
    with pytest.raises(TypeError):
        telem.add_data_batch("py_bad", v.astype(np.float32))
    with pytest.raises(TypeError):
        telem.add_data_batch("py_bad", np.arange(4, dtype=np.int64))
    with pytest.raises(TypeError):
        telem.add_data_batch("py_bad", v.reshape(100, 100))
    with pytest.raises(TypeError):
        telem.add_data_batch("py_bad", v[:3], times=t[:3].astype(np.int32))


def test_add_data_batch_bad_input(telemd_node):
    q0 = telem.stats().queued
    vals = array.array("d", [1.0, math.nan, 3.0])
    with pytest.raises(telem.TelemInvalid):
        telem.add_data_batch("py_bad_batch", vals)      # checked before any
    with pytest.raises(telem.TelemInvalid):
        telem.add_data_batch("py_bad_batch", [1.0, 2.0], times=[1])
    with pytest.raises(telem.TelemInvalid):
        telem.add_data_batch("py_bad_batch", [1.0], times=[-5])
    with pytest.raises(telem.TelemInvalid):
        telem.add_data_batch("py_bad_batch", [1.0], times=array.array("q", [0]))
    with pytest.raises(telem.TelemInvalid):
        telem.add_data_batch("", [1.0])
    with pytest.raises(TypeError):
        telem.add_data_batch("py_bad_batch", ["a"])
    with pytest.raises(TypeError):
        telem.add_data_batch("py_bad_batch", 5)
    with pytest.raises(TypeError):
        telem.add_data_batch("py_bad_batch", array.array("f", [1.0]))
    with pytest.raises(TypeError):
        telem.add_data_batch("py_bad_batch", b"\x00" * 8)
    with pytest.raises(TypeError):
        telem.add_data_batch("py_bad_batch", [1.0], times=[None])
    assert telem.stats().queued == q0
    flushed()
    assert series_of(telemd_node.query("py_bad_batch"), "py_bad_batch") == []


def test_counters_gauges_describe(telemd_node):
    assert telem.describe("py_hits_total", "counter", "", "Hits.") is True
    for _ in range(10):
        assert telem.counter_add('py_hits_total{kind="a"}', 2) is True
    assert telem.counter_add("py_hits_total", delta=0.5) is True
    assert telem.gauge_set('py_depth{queue="in"}', 7) is True
    assert telem.describe("py_depth", type="gauge", unit="items") is True
    flushed()
    ss = series_of(telemd_node.query("py_hits_total"), "py_hits_total")
    by_kind = {s["tags"].get("kind"): s for s in ss}
    assert by_kind["a"]["points"][-1][1] == 20.0
    assert by_kind[None]["points"][-1][1] == 0.5
    assert by_kind["a"]["type"] == "counter"
    assert "pid" not in by_kind["a"]["tags"]
    g = series_of(telemd_node.query("py_depth"), "py_depth", queue="in")
    assert g[0]["points"][-1][1] == 7.0
    assert g[0]["tags"]["pid"] == str(os.getpid())
    assert g[0]["unit"] == "items"
    for name in ("", "a-b", 'm{a=1}', 'm{host="h"}', "x" * 5000):
        with pytest.raises(telem.TelemInvalid):
            telem.counter_add(name, 1)
        with pytest.raises(telem.TelemInvalid):
            telem.gauge_set(name, 1)
    with pytest.raises(telem.TelemInvalid):
        telem.counter_add("py_hits_total", -1)
    with pytest.raises(telem.TelemInvalid):
        telem.gauge_set("py_depth", math.nan)
    with pytest.raises(TypeError):
        telem.counter_add("py_hits_total", "1")
    with pytest.raises(TypeError):
        telem.gauge_set(None, 1)
    with pytest.raises(telem.TelemInvalid):
        telem.describe("py_depth", "histogram")
    with pytest.raises(TypeError):
        telem.describe("py_depth", None)


def test_stats_and_path(telemd_node):
    st = telem.stats()
    assert isinstance(st, telem.Stats)
    assert st.queued == st[0] and st.invalid == st[4]
    assert all(isinstance(x, int) and x >= 0 for x in st)
    flushed()
    assert telem.stats().sent >= 1
    path = telem.libtelem_path()
    assert os.path.isabs(path) and os.path.exists(path)
    with open("/proc/self/maps") as f:
        maps = f.read()
    assert path in maps                # the library this process runs
    with pytest.raises(telem.TelemInvalid):
        telem.flush(-1)
    with pytest.raises(TypeError):
        telem.flush("1")


def test_no_telemd_drops_and_counts(telemd_node, tmp_path):
    """No daemon: calls return at once, never raise; samples are dropped
    and counted."""
    rundir = tmp_path / "run"
    rundir.mkdir(mode=0o700)
    point_libtelem({"TELEM_RUNDIR": str(rundir), "TELEM_NODE": "nobody",
                    "TELEM_FINALIZE_MS": "200"})
    try:
        for i in range(5000):
            assert telem.add_data("py_nodaemon", float(i)) in (True, False)
        telem.add_data_batch("py_nodaemon", [1.0] * 1000)
        with telem.section("py_nodaemon_section"):
            pass
        assert telem.flush(0.2) is False
        assert telem.stats().dropped > 0
        assert telem.finalize() is False
    finally:
        point_libtelem(dict(telemd_node.env(), TELEM_FINALIZE_MS="10000"))
    flushed()
    assert series_of(telemd_node.query("py_nodaemon"), "py_nodaemon") == []


def test_after_finalize(telemd_node):
    assert telem.add_data("py_fin", 1.0) is True
    assert telem.finalize() is True        # flushed, confirmed by telemd
    assert telem.finalize() is True        # again: nothing to do
    try:
        with pytest.raises(telem.TelemError) as e:
            telem.add_data("py_fin", 2.0)
        assert e.value.code == errors.ESTATE
        for call in (lambda: telem.add_data_batch("py_fin", [1.0]),
                     lambda: telem.counter_add("py_fin_total", 1),
                     lambda: telem.gauge_set("py_fin_g", 1),
                     lambda: telem.describe("py_fin", "gauge"),
                     lambda: telem.flush(0.1)):
            with pytest.raises(telem.TelemError) as e:
                call()
            assert e.value.code == errors.ESTATE
        with pytest.raises(telem.TelemError) as e:
            with telem.section("py_fin_section"):
                pass
        assert e.value.code == errors.ESTATE
    finally:
        telem.init()
    assert telem.add_data("py_fin", 3.0) is True
    flushed()
    assert [p[1] for p in points(telemd_node, "py_fin")] == [1.0, 3.0]


def test_lazy_names():
    assert "AnalysisClient" in dir(telem) and "DDict" in dir(telem)
    with pytest.raises(AttributeError):
        telem.no_such_name  # noqa: B018
