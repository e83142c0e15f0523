"""Jobs under the real telem_launch for the tests of examples/python.

:class:`Job` runs ``telem_launch --rundir <private dir> --no-agg ...``
with the build's binaries (``$TELEM_BIN``), its standard output and error
in files, in a session of its own.  :meth:`Job.wait_for` polls the output
for a pattern until a deadline (behaviour, not a guessed time);
:meth:`Job.close` stops whatever still runs (SIGTERM to the launcher,
which stops every process it started; SIGKILL to its session after a
grace) and removes the directory, however the test ends.

:func:`need` imports a Python module the example needs (numpy, scipy,
torch, matplotlib), installs its Debian package where that is possible
(root, apt-get, ``TELEM_TEST_INSTALL`` not 0) and skips the test with the
reason where it is not.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

import pytest

PYTHON = "/usr/bin/python3"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"
_PACKAGES = {"numpy": "python3-numpy", "scipy": "python3-scipy",
             "torch": "python3-torch", "matplotlib": "python3-matplotlib"}


def need(module: str):
    """The module, or skip (after trying its Debian package)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        first = e
    pkg = _PACKAGES.get(module)
    why = f"{module} is not importable ({first})"
    if pkg and os.geteuid() == 0 and shutil.which("apt-get") \
            and os.environ.get("TELEM_TEST_INSTALL", "1") != "0":
        r = subprocess.run(["apt-get", "install", "-y", "-q", pkg],
                           capture_output=True, text=True, timeout=600,
                           env=dict(os.environ,
                                    DEBIAN_FRONTEND="noninteractive"))
        if r.returncode == 0:
            importlib.invalidate_caches()
            try:
                return importlib.import_module(module)
            except ImportError as e:
                why = f"{pkg} installed but {module} not importable ({e})"
        else:
            why += f"; apt-get install {pkg} failed: {r.stderr[-300:]}"
    else:
        why += f"; install {pkg} (needs root and apt-get)"
    pytest.skip(why)


def bindir() -> Path:
    b = os.environ.get("TELEM_BIN")
    if not b or not (Path(b) / "telem_launch").exists():
        pytest.skip(f"TELEM_BIN does not name a telem build's bin directory "
                    f"with telem_launch (TELEM_BIN={b!r})")
    return Path(b)


def example(name: str) -> str:
    return str(EXAMPLES / name)


def run_example(name: str, *args: str, timeout: float = 60,
                env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """Runs an example outside any job (for --help and bad options)."""
    return subprocess.run([PYTHON, example(name), *args], capture_output=True,
                          text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


class Job:
    """One telem_launch job (see the module doc)."""

    GRACE_S = 30.0

    def __init__(self, launch_opts: list, program: list,
                 env: Optional[dict] = None, name: str = "job") -> None:
        self.bin = bindir()
        self.dir = Path(tempfile.mkdtemp(prefix="telem-ex."))
        os.chmod(self.dir, 0o700)
        self.rundir = self.dir / "run"
        self.out_path = self.dir / f"{name}.out"
        self.err_path = self.dir / f"{name}.err"
        e = dict(os.environ, **(env or {}))
        for k in ("TELEM_LEVEL", "TELEM_DICT_NODEFILE", "TELEM_NODEFILE",
                  "TELEM_RUNDIR", "SLURM_JOB_NODELIST", "TELEM_NODE",
                  "TELEM_RANK"):
            if not env or k not in env:
                e.pop(k, None)
        argv = [str(self.bin / "telem_launch"), "--rundir", str(self.rundir),
                "--no-agg", "--grace", "2", *launch_opts, "--", *program]
        with open(self.out_path, "wb") as fo, open(self.err_path, "wb") as fe:
            self.proc = subprocess.Popen(argv, stdout=fo, stderr=fe, env=e,
                                         stdin=subprocess.DEVNULL,
                                         start_new_session=True)

    def out(self) -> str:
        return self.out_path.read_text(errors="replace")

    def err(self) -> str:
        return self.err_path.read_text(errors="replace")

    def wait_for(self, pattern: str, deadline_s: float,
                 stream: str = "out") -> re.Match:
        """Polls the output for ``pattern`` (a regex) until the deadline;
        fails with the output's tail when the job ends or time runs out."""
        end = time.monotonic() + deadline_s
        rx = re.compile(pattern, re.M)
        while True:
            text = self.out() if stream == "out" else self.err()
            m = rx.search(text)
            if m:
                return m
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"the job ended ({self.proc.returncode}) before "
                    f"/{pattern}/: {self.tail()}")
            if time.monotonic() > end:
                raise AssertionError(f"no /{pattern}/ within {deadline_s} "
                                     f"s: {self.tail()}")
            time.sleep(0.05)

    def wait(self, deadline_s: float) -> int:
        """The launcher's exit status; fails if it runs past the deadline."""
        try:
            return self.proc.wait(timeout=deadline_s)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the job did not end within {deadline_s} "
                                 f"s: {self.tail()}") from None

    def node_pid(self, node: str) -> int:
        """The pid of ``node``'s telemd (its endpoints file)."""
        text = (self.rundir / node / "endpoints").read_text()
        return int(re.search(r"^pid\t(\d+)", text, re.M).group(1))

    def tail(self, n: int = 3000) -> str:
        return (f"\n--- stdout ---\n{self.out()[-n:]}\n--- stderr ---\n"
                f"{self.err()[-n:]}")

    def close(self) -> None:
        """Stops the job if it runs and removes its directory."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=self.GRACE_S)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        if os.environ.get("TELEM_KEEP") == "1":
            print(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def jobs():
    """A list to append started Jobs to; every one is closed at teardown."""
    started: list = []
    try:
        yield started
    finally:
        for j in started:
            j.close()
