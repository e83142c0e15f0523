"""A real local job for the Python tests: telemd and telem_dictd per node.

:class:`LocalJob` starts, for each of 2-3 virtual nodes, the build's real
``telemd`` (queries on ipc only, ``--bind none``) and ``telem_dictd`` in a
private 0700 temporary run directory, as tests/it_multinode.sh and
tests/it_dict.sh do, and waits until each printed ``ready``.  It sets the
environment a program under telem_launch sees (TELEM_RUNDIR,
TELEM_NODEFILE, TELEM_DICT_NODEFILE) so clients opened with no arguments
find the job.  :meth:`LocalJob.close` kills everything it started and
removes the directory, and runs however the test ends (the pytest fixture
:func:`local_job` calls it in its teardown).

TELEM_BIN names the build's bin directory; without it the tests skip.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Callable, Optional

import pytest

SKIP_RC = 77


def telem_bin() -> str:
    """The build's bin directory ($TELEM_BIN), or skip the test."""
    b = os.environ.get("TELEM_BIN")
    if not b or not os.path.isfile(os.path.join(b, "telemd")):
        pytest.skip("TELEM_BIN does not name a telem build's bin directory "
                    f"(TELEM_BIN={b!r})")
    return b


def wait_until(cond: Callable[[], bool], deadline_s: float,
               step_s: float = 0.02) -> bool:
    """Polls ``cond`` until it is true or ``deadline_s`` seconds passed."""
    end = time.monotonic() + deadline_s
    while True:
        if cond():
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(step_s)


class LocalJob:
    """Daemons of ``n`` virtual nodes named n1..nN (see module doc)."""

    START_DEADLINE_S = 30.0

    def __init__(self, n: int = 3, dict_servers: bool = True,
                 level: int = 2) -> None:
        self.bin = telem_bin()
        self.dir = tempfile.mkdtemp(prefix="telem-py.")
        os.chmod(self.dir, 0o700)
        self.rundir = os.path.join(self.dir, "run")
        os.mkdir(self.rundir, 0o700)
        self.nodefile = os.path.join(self.dir, "nodes")
        self.dict_nodefile = os.path.join(self.dir, "dict_nodes")
        self.names = [f"n{i + 1}" for i in range(n)]
        self.procs: dict = {}
        self._saved = {k: os.environ.get(k) for k in
                       ("TELEM_RUNDIR", "TELEM_NODEFILE",
                        "TELEM_DICT_NODEFILE", "TELEM_NODE",
                        "TELEM_LAUNCH_ENDPOINT", "TELEM_RELAYS")}
        self.env = dict(os.environ, TELEM_RUNDIR=self.rundir,
                        TELEM_NODEFILE=self.nodefile,
                        TELEM_DICT_NODEFILE=self.dict_nodefile)
        self.env.pop("TELEM_RELAYS", None)
        try:
            for name in self.names:
                self._start(f"telemd:{name}", [
                    os.path.join(self.bin, "telemd"), "--node", name,
                    "--nodefile", self.nodefile, "--bind", "none",
                    "--level", str(level), "--rundir", self.rundir])
            if dict_servers:
                for name in self.names:
                    self._start(f"dictd:{name}", [
                        os.path.join(self.bin, "telem_dictd"), "--node",
                        name, "--nodes", ",".join(self.names), "--rundir",
                        self.rundir])
        except BaseException:
            self.close()
            raise
        os.environ.update(TELEM_RUNDIR=self.rundir,
                          TELEM_NODEFILE=self.nodefile,
                          TELEM_DICT_NODEFILE=self.dict_nodefile)
        os.environ.pop("TELEM_LAUNCH_ENDPOINT", None)
        os.environ.pop("TELEM_RELAYS", None)

    def _start(self, key: str, argv: list) -> None:
        out = os.path.join(self.dir, key.replace(":", "-") + ".out")
        log = os.path.join(self.dir, key.replace(":", "-") + ".log")
        with open(out, "wb") as fo, open(log, "wb") as fl:
            p = subprocess.Popen(argv, stdout=fo, stderr=fl, env=self.env,
                                 stdin=subprocess.DEVNULL)
        self.procs[key] = p

        def ready() -> bool:
            if p.poll() is not None:
                return True
            with open(out, "rb") as f:
                return b"ready\n" in f.read()
        if not wait_until(ready, self.START_DEADLINE_S) or \
                p.poll() is not None:
            with open(log, "rb") as f:
                tail = f.read()[-2000:].decode("utf-8", "replace")
            raise RuntimeError(f"{key} did not start (exit {p.poll()}): "
                               f"{tail}")

    def kill(self, key: str, sig: int = signal.SIGKILL) -> None:
        """Kills one daemon ("telemd:n2", "dictd:n3") and reaps it."""
        p = self.procs.pop(key)
        p.send_signal(sig)
        p.wait(timeout=30)

    def run(self, argv: list, node: Optional[str] = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
        """Runs a program of the build (argv[0] under bin) as on ``node``."""
        env = dict(self.env)
        if node:
            env["TELEM_NODE"] = node
        return subprocess.run([os.path.join(self.bin, argv[0])] + argv[1:],
                              env=env, capture_output=True, timeout=timeout)

    def close(self) -> None:
        """Stops every daemon (TERM, then KILL after 5 s) and removes the
        directory; restores the environment."""
        procs, self.procs = list(self.procs.values()), {}
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if os.environ.get("TELEM_KEEP") == "1":
            print(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def local_job(n: int = 3, **kw):
    """A generator for a pytest fixture: yields a started LocalJob and
    closes it at teardown."""
    job = LocalJob(n, **kw)
    try:
        yield job
    finally:
        job.close()
