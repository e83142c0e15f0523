"""AnalysisClient.dump(): a real dump of a local job (real telemd on three
virtual nodes, telem_client dump) opened by telem_view, a partial dump
when a node is down, and the refusals: bad paths, bad arguments, no node,
a closed client."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

import telem
from jobfix import LocalJob
from telem import TelemError, TelemInvalid, TelemNotFound, TelemTimeout
from telem._dump import find_telem_client


@pytest.fixture
def job():
    """Three telemd at level 1; this process records as node n1."""
    j = LocalJob(3, dict_servers=False, level=1)
    saved = os.environ.get("TELEM_NODE")
    try:
        os.environ["TELEM_NODE"] = "n1"
        telem.finalize()
        telem.init()
        yield j
    finally:
        telem.finalize()
        telem.init()
        if saved is None:
            os.environ.pop("TELEM_NODE", None)
        else:
            os.environ["TELEM_NODE"] = saved
        j.close()


def export(job, path) -> dict:
    """telem_view --export json of one dump file."""
    r = subprocess.run([os.path.join(job.bin, "telem_view"), "--export",
                        "json", str(path)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def record(name: str, n: int) -> tuple:
    """n samples of `name` (values 0..n-1), confirmed by telemd."""
    t0 = time.time_ns()
    for i in range(n):
        telem.add_data(name, float(i), ts=t0 + i * 1000)
    assert telem.flush(10.0), "telemd did not confirm the samples"
    return t0, t0 + (n - 1) * 1000


def test_dump_opened_by_telem_view(job):
    t0, t1 = record("dump_test_values", 500)
    with telem.AnalysisClient() as ac:
        res = ac.dump(os.path.join(job.dir, "all.tdump"))
        assert not res.partial and res.series >= 1 and res.points >= 500
        assert os.stat(res.path).st_mode & 0o777 == 0o600
        # Only one metric, in a range that holds exactly the samples.
        one = ac.dump(os.path.join(job.dir, "one.tdump"),
                      metrics=["dump_test_values"], start=t0 / 1e9 - 1e-6,
                      end=t1 / 1e9 + 1e-6)
        assert (one.series, one.points) == (1, 500), one.summary
    doc = export(job, res.path)
    mine = [s for s in doc["series"] if s["metric"] == "dump_test_values"]
    assert len(mine) == 1 and mine[0]["node"] == "n1"
    pts = mine[0]["points"]
    assert [p[1] for p in pts] == [float(i) for i in range(500)]
    assert [p[0] for p in pts] == [t0 + i * 1000 for i in range(500)]
    doc = export(job, one.path)
    assert [s["metric"] for s in doc["series"]] == ["dump_test_values"]
    assert len(doc["series"][0]["points"]) == 500


def test_dump_partial_names_missing_node(job):
    record("dump_partial", 10)
    job.kill("telemd:n2")
    with telem.AnalysisClient(timeout=0.5) as ac:
        t = time.monotonic()
        res = ac.dump(os.path.join(job.dir, "part.tdump"),
                      metrics="dump_partial", start=-600)
        assert time.monotonic() - t < 30
    assert res.partial and list(res.missing) == ["n2"], res.missing
    assert res.missing["n2"].startswith("no connection to ")
    assert (res.series, res.points) == (1, 10)
    assert export(job, res.path)["series"][0]["node"] == "n1"


def test_dump_no_node_answers(job):
    for n in ("n1", "n2", "n3"):
        job.kill(f"telemd:{n}")
    with telem.AnalysisClient(timeout=0.3) as ac:
        path = os.path.join(job.dir, "none.tdump")
        with pytest.raises(TelemTimeout) as e:
            ac.dump(path)
    assert "no node answered" in str(e.value) and "n3" in str(e.value)
    assert not os.path.exists(path), "a half dump was left"


def test_dump_bad_paths(job):
    ac = telem.AnalysisClient()
    existing = os.path.join(job.dir, "exists.tdump")
    with open(existing, "w") as f:
        f.write("not a dump\n")
    with pytest.raises(TelemInvalid, match="never overwrites"):
        ac.dump(existing)
    assert open(existing).read() == "not a dump\n"
    with pytest.raises(TelemInvalid, match="never overwrites"):
        ac.dump(job.dir)                        # a directory
    with pytest.raises(TelemNotFound, match="no such directory"):
        ac.dump(os.path.join(job.dir, "no", "such", "x.tdump"))
    with pytest.raises(TelemInvalid):
        ac.dump("")
    with pytest.raises(TelemInvalid):
        ac.dump("a\0b")
    with pytest.raises(TypeError):
        ac.dump(42)
    # A file telem_client cannot create: a path under a plain file.
    with pytest.raises(TelemNotFound):
        ac.dump(os.path.join(existing, "x.tdump"))
    ac.close()
    with pytest.raises(TelemError) as e:
        ac.dump(os.path.join(job.dir, "closed.tdump"))
    assert e.value.code == telem.errors.ESTATE


def test_dump_bad_arguments(job):
    with telem.AnalysisClient() as ac:
        p = os.path.join(job.dir, "bad.tdump")
        with pytest.raises(TelemInvalid):
            ac.dump(p, start=0)
        with pytest.raises(TelemInvalid):
            ac.dump(p, end=float("nan"))
        with pytest.raises(TypeError):
            ac.dump(p, start="-60s")
        with pytest.raises(TelemInvalid):
            ac.dump(p, metrics=[])
        with pytest.raises(TelemInvalid):
            ac.dump(p, metrics="a,b")
        with pytest.raises(TypeError):
            ac.dump(p, metrics=[1])
        # telem_client's own refusal (start after end) comes back as
        # TelemInvalid with its message.
        with pytest.raises(TelemInvalid, match="telem_client"):
            ac.dump(p, start=-10, end=-20)
        assert not os.path.exists(p)


def test_dump_finds_telem_client_beside_libtelem(monkeypatch):
    lib = os.path.realpath(telem.libtelem_path())
    want = os.path.join(os.path.dirname(os.path.dirname(lib)), "bin",
                        "telem_client")
    monkeypatch.delenv("TELEM_BIN", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert find_telem_client() == os.path.normpath(want)


def test_missing_nodes_line_parser():
    from telem._dump import _named
    assert _named("n2 (no connection (node down)), n3 (timed out)") == {
        "n2": "no connection (node down)", "n3": "timed out"}
    # Malformed lines give what can be read, never an exception.
    assert _named("") == {}
    assert _named("n2 without reason") == {}
    assert _named("n2 (unclosed (paren") == {"n2": "unclosed (paren"}
    assert _named("((((") == {}
