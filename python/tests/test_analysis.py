"""telem.analysis.AnalysisClient against real telemd daemons (jobfix)."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jobfix  # noqa: E402

np = pytest.importorskip("numpy")
from telem.analysis import AnalysisClient, Missing  # noqa: E402
from telem import errors  # noqa: E402
from telem.errors import TelemError, TelemNotFound, TelemTimeout  # noqa: E402

POINTS = 3600


@pytest.fixture(scope="module")
def job():
    """Three nodes; n1 holds one series 'loss' of 3,600 points (values
    0..3599, as add_data_demo records them) and n2 one of 10 'acc'."""
    yield from _job_with_data()


def _job_with_data():
    for j in jobfix.local_job(3, dict_servers=False):
        for node, metric, count in (("n1", "loss", POINTS), ("n2", "acc", 10)):
            r = j.run(["add_data_demo", "--count", str(count), "--metric",
                       metric, "--quiet", "--tag", "phase=train"], node=node)
            assert r.returncode == 0, r.stderr
        yield j


def test_get_data_one_series(job):
    with AnalysisClient() as ac:
        res = ac.get_data("loss")
    assert res.missing == {} and res.truncated == 0 and not res.partial
    assert len(res.series) == 1
    s = res.series[0]
    assert (s.node, s.metric) == ("n1", "loss")
    assert s.tags["host"] == "n1" and s.tags["phase"] == "train"
    assert isinstance(s.values, np.ndarray) and s.values.dtype == np.float64
    assert s.times_ns.dtype == np.int64 and len(s) == POINTS
    assert np.array_equal(s.values, np.arange(POINTS, dtype=np.float64))
    assert np.all(np.diff(s.times_ns) >= 0)
    now = time.time()
    assert now - 300 < s.times[0] <= s.times[-1] <= now + 1
    assert s.times[-1] == pytest.approx(s.times_ns[-1] / 1e9)


def test_get_data_filters(job):
    with AnalysisClient() as ac:
        both = ac.get_data(["loss", "acc"])
        assert sorted(s.metric for s in both.series) == ["acc", "loss"]
        assert ac.get_data(["loss", "acc"], nodes=["n2"]).series[0].node \
            == "n2"
        assert ac.get_data("loss", nodes=["n2", "n3"]).series == []
        assert len(ac.get_data("loss", tags={"phase": "train"}).series) == 1
        assert ac.get_data("loss", tags={"phase": "eval"}).series == []
        assert len(ac.get_data("loss", tags={"phase": "*"}).series) == 1
        # relative and absolute ranges, as ac_query_t takes them
        assert len(ac.get_data("loss", start=-120).series[0]) == POINTS
        future = time.time() + 3600
        assert ac.get_data("loss", start=future).series == []
        t = ac.get_data("loss").series[0].times
        mid = float(t[POINTS // 2])
        part = ac.get_data("loss", start=mid, end=time.time()).series[0]
        assert 0 < len(part) <= POINTS - POINTS // 2 + 1
        assert len(ac.get_data("loss", max_points=7).series[0]) == 7
        last = ac.get_data("loss", latest=True).series[0]
        assert len(last) == 1 and last.values[0] == POINTS - 1
        assert ac.get_data("no_such_metric").series == []


def test_get_metrics_status_snapshot(job):
    with AnalysisClient() as ac:
        assert ac.nodes == ["n1", "n2", "n3"]
        cat = ac.get_metrics()
        assert cat.missing == {}
        loss = [m for m in cat.series if m.metric == "loss"]
        assert len(loss) == 1 and loss[0].node == "n1"
        assert loss[0].type == "gauge"
        assert {"loss", "acc"} <= set(ac.metric_names())
        st = ac.status()
        assert sorted(st.nodes) == ["n1", "n2", "n3"] and st.missing == {}
        assert st.nodes["n1"]["node"] == "n1"
        assert st.nodes["n1"]["ingested"] >= POINTS
        assert st.nodes["n2"]["pid"] == job.procs["telemd:n2"].pid
        assert list(ac.status("n3").nodes) == ["n3"]
        snaps = ac.snapshot()
        assert sorted(snaps) == ["n1", "n2", "n3"]
        assert snaps["n2"]["node"] == "n2"
        assert list(ac.snapshot("n1")) == ["n1"]


def test_bad_arguments(job):
    with AnalysisClient() as ac:
        with pytest.raises(TypeError):
            ac.get_data(5)
        with pytest.raises(TypeError):
            ac.get_data(["loss", 3])
        with pytest.raises(TypeError):
            ac.get_data("loss", tags=[("phase", "train")])
        with pytest.raises(TypeError):
            ac.get_data("loss", tags={"phase": 1})
        with pytest.raises(TypeError):
            ac.get_data("loss", start="yesterday")
        with pytest.raises(TypeError):
            ac.get_data("loss", max_points=-1)
        for bad in (float("nan"), float("inf"), 0):
            with pytest.raises(TelemError) as e:
                ac.get_data("loss", start=bad)
            assert e.value.code == errors.EINVAL
        with pytest.raises(TelemError) as e:
            ac.get_data("")
        assert e.value.code == errors.EINVAL
        with pytest.raises(TelemError) as e:
            ac.get_data([f"m{i}" for i in range(257)])
        assert e.value.code == errors.ETOOBIG
        with pytest.raises(TelemNotFound) as e:
            ac.get_data("loss", nodes=["n9"])
        assert isinstance(e.value, KeyError)
        with pytest.raises(TelemNotFound):
            ac.status("n9")
        with pytest.raises(TypeError):
            ac.snapshot(3)
        with pytest.raises(TelemError) as e:
            ac.get_data("loss", nodes=[])
        assert e.value.code == errors.EINVAL
        with pytest.raises(TelemError) as e:
            ac.get_data("loss", timeout=-1)
        assert e.value.code == errors.EINVAL
        with pytest.raises(TelemError) as e:
            ac.reboot([])
        assert e.value.code == errors.EINVAL
        with pytest.raises(TypeError):
            ac.reboot([1])
    with pytest.raises(TypeError):
        AnalysisClient(nodefile=3)
    with pytest.raises(TelemError):
        AnalysisClient(timeout=0)


def test_closed_client(job):
    ac = AnalysisClient()
    ac.close()
    ac.close()                                   # twice is fine
    assert ac.closed
    calls = [lambda: ac.get_data("loss"), ac.get_metrics, ac.status,
             ac.snapshot, lambda: ac.nodes, lambda: ac.reboot(["n1"]),
             lambda: ac.__enter__()]
    for call in calls:
        with pytest.raises(TelemError) as e:
            call()
        assert e.value.code == errors.ESTATE
        assert "closed" in str(e.value)


def test_no_job(tmp_path, monkeypatch):
    monkeypatch.setenv("TELEM_NODEFILE", str(tmp_path / "absent"))
    with pytest.raises(TelemNotFound):
        AnalysisClient()
    bad = tmp_path / "bad"
    bad.write_text("n1 no-tab-here\n")
    with pytest.raises(TelemError) as e:
        AnalysisClient(str(bad))
    assert e.value.code == errors.EINVAL and "tab" in str(e.value)
    empty = tmp_path / "empty"
    empty.write_text("# nothing\n\n")
    with pytest.raises(TelemNotFound):
        AnalysisClient(str(empty))
    # a node file whose node runs no telemd: an error within the deadline
    ghost = tmp_path / "ghost"
    ghost.write_text(f"g1\tipc://{tmp_path}/g1.sock\n")
    with AnalysisClient(str(ghost), timeout=0.5) as ac:
        t0 = time.monotonic()
        with pytest.raises(TelemError) as e:
            ac.get_data("loss")
        took = time.monotonic() - t0
        assert e.value.code in (errors.ECONN, errors.ETIMEDOUT)
        assert "g1" in str(e.value)
        assert took < 0.5 + 2.0, f"took {took:.2f} s for a 0.5 s deadline"
        t0 = time.monotonic()
        with pytest.raises(TelemError):
            ac.status()
        assert time.monotonic() - t0 < 2.5


def test_reboot_without_launcher(job, tmp_path, monkeypatch):
    with AnalysisClient(timeout=0.3) as ac:
        t0 = time.monotonic()
        with pytest.raises(TelemTimeout) as e:
            ac.reboot(["n2"])
        assert time.monotonic() - t0 < 2.3
        assert "not restarted" in str(e.value)
        with pytest.raises(TelemError) as e:
            ac.reboot(["n2"], endpoint="http://127.0.0.1:1")
        assert e.value.code == errors.EUNSUPPORTED
        # TCP is CURVE with the job's key: none here (TELEM_KEYS empty).
        monkeypatch.setenv("TELEM_KEYS", "")
        with pytest.raises(TelemError) as e:
            ac.reboot(["n2"], endpoint="tcp://127.0.0.1:1")
        assert e.value.code == errors.EPERM and "key" in str(e.value)


def test_dead_node_partial_answer():
    for j in _job_with_data():
        j.kill("telemd:n2", signal.SIGKILL)
        with AnalysisClient(timeout=0.5) as ac:
            t0 = time.monotonic()
            res = ac.get_data(["loss", "acc"])
            took = time.monotonic() - t0
            assert took < 0.5 + 2.0, f"{took:.2f} s for a 0.5 s deadline"
            assert res.partial and list(res.missing) == ["n2"]
            m = res.missing["n2"]
            assert isinstance(m, Missing)
            assert m.code in (errors.ECONN, errors.ETIMEDOUT) and m.sentence
            assert [s.metric for s in res.series] == ["loss"]
            assert len(res.series[0]) == POINTS
            st = ac.status()
            assert sorted(st.nodes) == ["n1", "n3"] and "n2" in st.missing
            snaps, missing = ac.snapshot_result()
            assert sorted(snaps) == ["n1", "n3"] and list(missing) == ["n2"]
            # only the dead node asked: no node answered, an error
            with pytest.raises(TelemError) as e:
                ac.get_data("acc", nodes=["n2"])
            assert "n2" in str(e.value)
