"""Shared fixtures of telem's Python tests: a real telemd, read back with
telem_client.

``telemd_node`` starts one telemd from ``$TELEM_BIN`` as node ``n1`` in a
private 0700 run directory (ipc sockets), points libtelem at it
(TELEM_RUNDIR, TELEM_NODE, TELEM_NODEFILE; libtelem is finalized and
initialised again so it reads them), and kills it at the end.  Its
``query()`` runs ``telem_client -f json query`` and returns the series.

A test file whose every test was skipped exits 77, which CTest counts as
skipped, never as passed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

RANK_VARS = ("TELEM_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
             "RANK")
READY_S = 20.0      # deadline for telemd to say "ready"


def telem_bin() -> Path:
    """The build's bin directory ($TELEM_BIN); skips the test without it."""
    b = os.environ.get("TELEM_BIN")
    if not b or not (Path(b) / "telemd").exists():
        pytest.skip("TELEM_BIN does not name a telem build's bin directory")
    return Path(b)


def wait_until(cond: Any, deadline_s: float, what: str) -> Any:
    """Polls cond() until it returns a true value or the deadline passes."""
    end = time.monotonic() + deadline_s
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {deadline_s} s")
        time.sleep(0.02)


class Node:
    """One real telemd, started in a private run directory."""

    def __init__(self, name: str = "n1") -> None:
        self.bin = telem_bin()
        self.name = name
        self.dir = Path(tempfile.mkdtemp(prefix="telem-py."))
        self.rundir = self.dir / "run"
        self.rundir.mkdir(mode=0o700)
        self.nodefile = self.dir / "nodes"
        self.out = open(self.dir / f"{name}.out", "w+")
        self.log = open(self.dir / f"{name}.log", "w")
        env = dict(os.environ, TELEM_RUNDIR=str(self.rundir))
        self.proc = subprocess.Popen(
            [str(self.bin / "telemd"), "--node", name, "--nodefile",
             str(self.nodefile), "--level", "1", "--bind", "none"],
            stdout=self.out, stderr=self.log, env=env)

    def wait_ready(self) -> None:
        """Waits for telemd's "ready" line (or its death)."""
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"telemd exited {self.proc.returncode}: "
                    f"{(self.dir / (self.name + '.log')).read_text()}")
            return "ready\n" in (self.dir / f"{self.name}.out").read_text()
        wait_until(ready, READY_S, "telemd ready")

    def env(self) -> dict[str, str]:
        """The variables that point libtelem and telem_client here."""
        return {"TELEM_RUNDIR": str(self.rundir), "TELEM_NODE": self.name,
                "TELEM_NODEFILE": str(self.nodefile)}

    def query(self, metrics: str, *tags: str) -> list[dict[str, Any]]:
        """Series of `metrics` (comma-separated) through telem_client;
        tags as "k=v" filters."""
        args = [str(self.bin / "telem_client"), "-f", "json", "query",
                metrics, "--start", "-300s"]
        for t in tags:
            args += ["--tag", t]
        r = subprocess.run(args, capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, **self.env()))
        if r.returncode not in (0, 1):
            raise AssertionError(f"telem_client: rc {r.returncode}: "
                                 f"{r.stderr}")
        return json.loads(r.stdout)["series"] if r.stdout.strip() else []

    def stop(self) -> None:
        """Kills telemd and removes its directory."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def point_libtelem(env: dict[str, Optional[str]]) -> None:
    """Finalizes libtelem, sets (None: removes) environment variables and
    initialises it again, so it reads them."""
    import telem
    telem.finalize()
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    telem.init()


@pytest.fixture(scope="module")
def telemd_node() -> Iterator[Node]:
    """A real telemd that libtelem in this process sends to."""
    node = Node()
    try:
        node.wait_ready()
        point_libtelem(dict(node.env(), TELEM_INGEST=None, TELEM_CTL=None,
                            TELEM_LEVEL=None, TELEM_FINALIZE_MS="10000"))
        yield node
    finally:
        import telem
        telem.finalize()
        node.stop()


def series_of(series: list[dict[str, Any]], metric: str,
              **tags: str) -> list[dict[str, Any]]:
    """The series of `metric` carrying every tag given."""
    return [s for s in series if s["metric"] == metric
            and all(s["tags"].get(k) == v for k, v in tags.items())]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Every test skipped: exit 77 (CTest: skipped, not passed)."""
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is None or exitstatus != 0:
        return
    skipped = len(tr.stats.get("skipped", []))
    passed = len(tr.stats.get("passed", []))
    if skipped and not passed:
        session.exitstatus = 77
