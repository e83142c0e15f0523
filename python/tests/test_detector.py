"""telem.Detector against real telemd daemons (jobfix): its schedule, its
verdicts, bad subclasses, Restart's checks, signals and live control."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jobfix  # noqa: E402

pytest.importorskip("numpy")
import telem  # noqa: E402
from telem import detector as tdet  # noqa: E402
from telem.errors import (ESTATE, TelemError, TelemInvalid,  # noqa: E402
                          TelemNotFound)

PY = "/usr/bin/python3"


@pytest.fixture(scope="module")
def job():
    """Three nodes; 'bad' is 1 on n2 (add_data_demo records 0, 1), 0 on n1
    and n3."""
    for j in jobfix.local_job(3, dict_servers=False):
        for node, count in (("n1", 1), ("n2", 2), ("n3", 1)):
            r = j.run(["add_data_demo", "--count", str(count), "--metric",
                       "bad", "--quiet"], node=node)
            assert r.returncode == 0, r.stderr
        yield j


class BadFlag(telem.Detector):
    """Names every node whose newest 'bad' is 1 or more."""
    name = "badflag"
    metrics = ["bad"]
    window = 120

    def __init__(self, **kw):
        super().__init__(**kw)
        self.seen = []          # (scheduled ts, called at, data)

    def analyze(self, data):
        self.seen.append((data.ts, time.time(), data))
        bad = sorted(n for n, v in data.latest("bad").items() if v >= 1)
        if bad:
            return telem.Restart(exclude=bad, why=f"bad=1 on {','.join(bad)}")
        return None


# ---- Restart, Warn and the class itself -------------------------------------

def test_restart_checks_its_arguments():
    r = telem.Restart(exclude=["n2", "n2", "n3"], why="slow")
    assert r.exclude == ("n2", "n3") and r.why == "slow"
    assert r.severity == "act" and "n2" in repr(r)
    with pytest.raises(TelemInvalid, match="names no node"):
        telem.Restart(exclude=[], why="x")
    with pytest.raises(TypeError, match="list of node names"):
        telem.Restart(exclude="n2", why="x")
    with pytest.raises(TypeError, match="node names are str"):
        telem.Restart(exclude=["n1", 2], why="x")
    with pytest.raises(TelemInvalid, match="bad node name"):
        telem.Restart(exclude=[""], why="x")
    with pytest.raises(TelemInvalid, match="why is empty"):
        telem.Restart(exclude=["n1"], why="  ")
    with pytest.raises(TypeError, match="why must be str"):
        telem.Restart(exclude=["n1"], why=None)
    w = telem.Warn("look at n1", nodes=["n1"])
    assert w.severity == "warn" and w.nodes == ("n1",)
    assert telem.Warn("nothing named").nodes == ()


def test_bad_subclasses_are_refused():
    class NoAnalyze(telem.Detector):
        metrics = ["bad"]
    with pytest.raises(TypeError, match="abstract"):
        NoAnalyze()

    class NoMetrics(telem.Detector):
        def analyze(self, data):
            return None
    with pytest.raises(TypeError, match="metrics"):
        NoMetrics()
    with pytest.raises(TelemInvalid, match="detector name"):
        BadFlag(name="../x")
    with pytest.raises(TelemInvalid, match="period"):
        BadFlag(period=0.001)
    with pytest.raises(TypeError, match="window"):
        BadFlag(window="10")
    with pytest.raises(TelemInvalid, match="non-empty"):
        BadFlag(metrics=[""])


def test_period_from_the_watcher(monkeypatch):
    monkeypatch.setenv("TELEM_WATCH_PERIOD", "0.25")
    assert BadFlag().period == 0.25
    monkeypatch.setenv("TELEM_WATCH_PERIOD", "soon")
    assert BadFlag().period == 1.0          # logged, the default
    monkeypatch.delenv("TELEM_WATCH_PERIOD")
    assert BadFlag().period == 1.0 and BadFlag(period=2).period == 2.0
    monkeypatch.setenv("TELEM_WATCH_RESTART", "1")
    assert BadFlag().act and not BadFlag(act=False).act
    monkeypatch.delenv("TELEM_WATCH_RESTART")
    assert not BadFlag().act


# ---- rounds against a real job ------------------------------------------------

def test_restart_verdict_on_schedule(job, capsys):
    period = 0.2
    d = BadFlag(period=period, act=False)
    assert d.run(rounds=6) == 0
    assert d.rounds == 6 and d.events == 6 and d.errors == 0
    ts = [s[0] for s in d.seen]
    # The schedule is absolute: round k is due at start + k * period (a
    # late round skips the due times it missed, never shifts the grid).
    steps = [(b - ts[0]) / period for b in ts]
    assert all(abs(s - round(s)) < 1e-6 for s in steps), steps
    late = max(called - due for due, called, _ in d.seen)
    if round(steps[-1]) != 5:
        pytest.skip(f"the machine is busy: rounds ran up to {late:.3f} s "
                    f"late (period {period} s), so some were skipped")
    data = d.seen[-1][2]
    assert data.nodes == ["n1", "n2", "n3"] and data.missing == {}
    assert data.latest("bad") == {"n1": 0.0, "n2": 1.0, "n3": 0.0}
    assert [s.node for s in data.get("bad")] == ["n1", "n2", "n3"]
    assert data.round == 6 and abs(data.ts - time.time()) < 60
    out = capsys.readouterr().out.splitlines()
    acts = [x for x in out if " ACT  badflag nodes=n2: bad=1 on n2" in x]
    assert len(acts) == 6, out
    assert acts[0].split(" ")[1] == "#1" and acts[5].split(" ")[1] == "#6"


def test_missing_nodes_reach_analyze(job):
    job.kill("telemd:n3")
    try:
        d = BadFlag(period=0.1, timeout=0.3, act=False)
        d.run(rounds=1)
        data = d.seen[0][2]
        assert set(data.missing) == {"n3"} and "n3" not in data.latest("bad")
        assert data.latest("bad")["n2"] == 1.0
    finally:
        name = "n3"
        job._start(f"telemd:{name}", [
            os.path.join(job.bin, "telemd"), "--node", name, "--nodefile",
            job.nodefile, "--bind", "none", "--level", "2", "--rundir",
            job.rundir])


def test_restart_request_without_launcher(job, capsys, monkeypatch):
    # Nothing listens at the endpoint: the request times out, is reported,
    # and the detector goes on to its next round.
    ep = f"ipc://{job.dir}/no-launcher.sock"
    monkeypatch.setenv("TELEM_LAUNCH_ENDPOINT", ep)
    d = BadFlag(period=0.1, act=True)
    d.restart_timeout = 0.2
    assert d.run(rounds=2) == 0 and d.rounds == 2
    out = capsys.readouterr().out
    lines = [x for x in out.splitlines() if x.startswith("restart ")]
    assert len(lines) == 2, out
    assert all(" timeout: " in x and "no launcher answered at " + ep in x
               for x in lines), lines
    assert d.excluded == set()


def test_a_failing_analyze_does_not_stop_the_detector(job, capsys):
    class Flaky(telem.Detector):
        name = "flaky"
        metrics = "bad"

        def analyze(self, data):
            if data.round == 1:
                return 1 / 0
            if data.round == 2:
                return 42
            if data.round == 3:
                return telem.Warn("n1 looks odd", nodes=["n1"])
            return None
    d = Flaky(period=0.05)
    assert d.run(rounds=4) == 0
    assert (d.rounds, d.errors, d.events) == (4, 2, 1)
    cap = capsys.readouterr()
    assert "analyze raised ZeroDivisionError" in cap.err
    assert "Traceback (most recent call last)" in cap.err
    assert "analyze returned int, not None, telem.Restart or telem.Warn" \
        in cap.err
    assert " #1 WARN flaky nodes=n1: n1 looks odd" in cap.out


def test_one_detector_per_name(job):
    d = BadFlag(period=0.05, act=False)
    d._open_state()
    try:
        with pytest.raises(TelemError, match="another detector") as e:
            BadFlag(period=0.05, act=False).run(rounds=1)
        assert e.value.code == ESTATE
    finally:
        d._close()


# ---- as a program: signals, command line, control ----------------------------

SCRIPT = textwrap.dedent("""
    import telem

    class BadFlag(telem.Detector):
        name = "badflag"
        metrics = ["bad"]
        window = 120

        def analyze(self, data):
            bad = [n for n, v in data.latest("bad").items() if v >= 1]
            return telem.Restart(bad, "bad=1") if bad else None

    if __name__ == "__main__":
        BadFlag.main()
""")


def _script(job):
    path = os.path.join(job.dir, "mydet.py")
    with open(path, "w") as f:
        f.write(SCRIPT)
    return path


def _env(job):
    env = dict(job.env, PYTHONPATH=os.environ.get("PYTHONPATH", ""))
    env.pop("TELEM_WATCH_RESTART", None)
    return env


def _ctl(job, *args):
    return subprocess.run([PY, "-m", "telem.detector", "ctl", *args],
                          env=_env(job), capture_output=True, text=True,
                          timeout=30)


def test_program_sigterm_and_control(job):
    p = subprocess.Popen([PY, _script(job), "--period", "0.05"],
                         env=_env(job), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    state = os.path.join(job.rundir, "detectors", "badflag", "state")
    try:
        def rounds():
            try:
                with open(state) as f:
                    return json.load(f)["rounds"]
            except (OSError, ValueError):
                return 0
        assert jobfix.wait_until(lambda: rounds() >= 3, 30), "no rounds"
        r = _ctl(job, "badflag", "status")
        assert r.returncode == 0 and "badflag: running" in r.stdout, r
        r = _ctl(job, "badflag", "pause")
        assert r.returncode == 0 and r.stdout.strip() == "badflag: paused"
        assert jobfix.wait_until(
            lambda: json.loads(_ctl(job, "--json", "badflag", "status")
                               .stdout)["state"] == "paused", 30)
        n = rounds()
        # Paused: no round runs, however long we look (a busy machine only
        # makes this look shorter).
        assert not jobfix.wait_until(lambda: rounds() > n, 0.5)
        assert _ctl(job, "badflag", "resume").returncode == 0
        assert jobfix.wait_until(lambda: rounds() > n, 30), "not resumed"
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert "ACT  badflag nodes=n2: bad=1" in out
    assert "stopped after" in err and not os.path.exists(state)


def test_program_command_line_errors(job):
    path = _script(job)
    for args in (["--period", "soon"], ["--period", "0"], ["--rounds", "0"],
                 ["--window", "-1"], ["--no-such-flag"]):
        r = subprocess.run([PY, path, *args], env=_env(job),
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, (args, r)
        assert "usage:" in r.stderr, (args, r.stderr)
    r = subprocess.run([PY, path, "--help"], env=_env(job),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and "--period" in r.stdout
    r = subprocess.run([PY, path, "--rounds", "2", "--period", "0.05",
                        "--no-restart"], env=_env(job), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.count("ACT  badflag") == 2, r


def test_ctl_errors(job):
    r = _ctl(job, "badflag", "status")            # none runs
    assert r.returncode == 1 and "no detector 'badflag' runs" in r.stderr
    for args in (["badflag", "restart"], ["../x", "status"], ["badflag"]):
        r = _ctl(job, *args)
        assert r.returncode == 2 and "usage:" in r.stderr, (args, r)
    r = subprocess.run([PY, "-m", "telem.detector", "stop"], env=_env(job),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "unknown command" in r.stderr
    with pytest.raises(TelemNotFound):
        tdet.control("badflag", "status", job.rundir)
    with pytest.raises(TelemInvalid):
        tdet.control("badflag", "kill", job.rundir)
