"""Collector groups with a test written in Python: ``telem.CollectorGroup``.

A group runs one test function on every device of every node, in rounds on
one schedule, and publishes its time as ``cg_<name>_seconds`` (the median of
a round's repetitions) and ``cg_<name>_seconds_spread`` (their unscaled
MAD), the series the ``slowgpu`` detector reads
(``--detector slowgpu:metric=cg_<name>_seconds``)::

    import sys, numpy as np, telem

    A = np.random.default_rng(0).standard_normal((96, 96)); A = A + A.T

    def eig(device):            # one repetition on `device`
        np.linalg.eigvalsh(A)   # None: the group times the call

    cg = telem.CollectorGroup("eig", eig)
    if cg.is_collector():       # started by telem_collect as a collector
        sys.exit(cg.main())
    with cg.start():            # or: telem_launch --collect '...'
        train()

The script is both the program and its collector.  ``telem_collect`` (or
``telem_launch --collect``) starts it once per device, as
``python3 SCRIPT --telem-collector --node N --device I --pin J ...``, the
command line of ``telem_collector``; :meth:`CollectorGroup.main` then runs
that collector: it pins itself to its device (cpu backend), runs the rounds
at ``epoch + k * period (+ phase)``, records each round stamped exactly
``epoch + k * period`` with the tags ``gpu``, ``backend`` and ``group``, and
on SIGTERM, SIGINT or SIGHUP flushes with telemd's acknowledgement and
exits 0.  So scheduling, the device map, phases, restarts and the
launcher's supervision are telem_collect's, unchanged.

A test that raises fails its round: the round records nothing, one line is
logged, the collector goes on; after ``FAILED_ROUNDS_MAX`` failed rounds in
a row it exits 1 (telem_collect starts it again after its back-off).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from . import _native
from ._collector_cli import (BACKENDS, COLLECTOR_FLAG, FAILED_ROUNDS_MAX, NS,
                             USAGE, Log, NoBackend, Usage, devices_of,
                             list_devices, parse_list, parser)
from .errors import (EINVAL, EIO, ENOTFOUND, ESTATE, ETIMEDOUT, EUNSUPPORTED,
                     make_error)

__all__ = ["CollectorGroup", "Device", "COLLECTOR_FLAG", "FAILED_ROUNDS_MAX"]

_NAME_RE = re.compile(r"[a-z][a-z0-9_]*\Z")
_NAME_MAX = 64
_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


@dataclass(frozen=True)
class Device:
    """The device a repetition runs on.

    ``index``: the device's index on its node (the ``gpu`` tag), -1 for a
    per-node test.  ``pin``: this machine's device it is pinned to (its
    index in ``--list-devices``), -1 when not pinned.  ``id``: the
    backend's id of that device (cpu: the core number), "" when unknown.
    ``backend``: "cpu" or "cuda".  ``node``: the node the samples go to.
    """

    index: int
    pin: int
    id: str
    backend: str
    node: str


# ---- one collector's rounds ----------------------------------------------

class _Stop(Exception):
    """A stop signal arrived while waiting."""


def _wait_until(target_ns: int) -> None:
    """Waits until realtime target_ns; raises _Stop on a stop signal (they
    are blocked, so they wait here: sigtimedwait)."""
    while True:
        left = target_ns - time.time_ns()
        if left <= 0:
            if signal.sigtimedwait(_STOP_SIGNALS, 0) is not None:
                raise _Stop()
            return
        if signal.sigtimedwait(_STOP_SIGNALS, left / NS) is not None:
            raise _Stop()


class _Collector:
    """One collector: the parsed options, the test and its counters."""

    def __init__(self, group: "CollectorGroup", a: argparse.Namespace,
                 log: Log, device: Device) -> None:
        self.g, self.a, self.log, self.dev = group, a, log, device
        self.rounds = self.skipped = self.failed = self.refused = 0
        self.in_a_row = 0
        self.tags = {"backend": device.backend, "group": a.group}
        if not a.per_node:
            self.tags["gpu"] = str(a.device)

    def one(self) -> Optional[float]:
        """One repetition's figure in seconds, None when it gave none
        (negative, not finite); exceptions of the test go up."""
        t0 = time.perf_counter_ns()
        r = self.g.test(self.dev)
        t1 = time.perf_counter_ns()
        if r is None:
            return (t1 - t0) / NS
        if isinstance(r, bool) or not isinstance(r, (int, float)):
            raise TypeError(f"the test returned {type(r).__name__}, not a "
                            "float (seconds) or None")
        x = float(r)
        return x if math.isfinite(x) and x >= 0 else None

    def round(self, start: int) -> Optional[list[float]]:
        """The figures of one round (None when the test raised)."""
        a, figs = self.a, []
        for i in range(a.reps):
            if a.spread and i > 0:
                _wait_until(start + i * (a.period // a.reps))
            try:
                x = self.one()
            except Exception as e:  # the user's test: any error fails it
                self.log("warn", f"round at {start - a.phase} failed: "
                         f"{type(e).__name__}: {e}")
                return None
            if x is not None:
                figs.append(x)
        if not figs:
            self.log("warn", f"round at {start - a.phase}: no repetition "
                     "gave a figure")
            return None
        return figs

    def push(self, figs: list[float], ts: int) -> None:
        med = statistics.median(figs)
        mad = statistics.median([abs(x - med) for x in figs])
        for m, v in ((self.g.metric, med), (self.g.metric + "_spread", mad)):
            if not _native.add_data(m, v, ts=ts, level=1, tags=self.tags):
                self.refused += 1

    def next_round(self, epoch: int) -> int:
        since = time.time_ns() - epoch - self.a.phase
        return 0 if since <= 0 else -(-since // self.a.period)

    def loop(self, epoch: int) -> int:
        """Runs the rounds; 0 after a stop or --rounds, 1 after too many
        failed rounds in a row."""
        a = self.a
        k = self.next_round(epoch)
        try:
            while a.rounds == 0 or self.rounds + self.failed < a.rounds:
                ts = epoch + k * a.period
                _wait_until(ts + a.phase)
                figs = self.round(ts + a.phase)
                if figs is None:
                    self.failed += 1
                    self.in_a_row += 1
                    if self.in_a_row >= FAILED_ROUNDS_MAX:
                        self.log("error", f"{self.in_a_row} rounds in a row "
                                 "failed: giving up")
                        return 1
                else:
                    self.push(figs, ts)
                    self.rounds += 1
                    self.in_a_row = 0
                nxt = self.next_round(epoch)
                if nxt > k + 1:
                    self.skipped += nxt - k - 1
                k = max(nxt, k + 1)
        except _Stop:
            pass
        return 0


# ---- the group ----------------------------------------------------------

class CollectorGroup:
    """A Python test run on every device of every node (see the module).

    ``name``: the test's name, ``[a-z][a-z0-9_]*``, at most 64 bytes; the
    metric is ``cg_<name>_seconds``.  ``test(device) -> float | None``
    runs one repetition on a :class:`Device`: None means "time me" (the
    call is timed with ``time.perf_counter_ns``), a number is the figure in
    seconds (higher = slower).  ``backend`` "cpu" (the collector pins itself
    to its core) or "cuda" (the test selects ``device.pin`` itself);
    ``reps`` repetitions per round (1-1000); ``period`` seconds per round
    (0.001-86400); ``per_node`` one collector per node instead of per
    device; ``devices`` the device indices per node ("0,2-3", a list of
    ints, None: every device); ``spread`` repetitions spread over the round;
    ``group`` the group tag.
    """

    def __init__(self, name: str, test: Callable[[Device], Optional[float]],
                 *, backend: str = "cpu", reps: int = 5, period: float = 1.0,
                 per_node: bool = False, devices: Any = None,
                 spread: bool = False, group: str = "cg") -> None:
        if not isinstance(name, str) or not _NAME_RE.match(name) \
                or len(name) > _NAME_MAX:
            raise make_error(EINVAL, f"the name {name!r} is not "
                             "[a-z][a-z0-9_]* of at most 64 bytes",
                             "CollectorGroup")
        if not callable(test):
            raise TypeError("test must be callable: test(device) -> float "
                            "or None")
        if backend not in BACKENDS:
            raise make_error(EINVAL, f"backend {backend!r}: cpu or cuda",
                             "CollectorGroup")
        if isinstance(reps, bool) or not isinstance(reps, int) \
                or not 1 <= reps <= 1000:
            raise make_error(EINVAL, f"reps {reps!r}: an integer from 1 to "
                             "1000", "CollectorGroup")
        if isinstance(period, bool) or not isinstance(period, (int, float)) \
                or not 0.001 <= period <= 86400:
            raise make_error(EINVAL, f"period {period!r}: seconds, from "
                             "0.001 to 86400", "CollectorGroup")
        if not isinstance(group, str) or not 1 <= len(group.encode()) <= 255:
            raise make_error(EINVAL, f"group {group!r}: 1-255 bytes",
                             "CollectorGroup")
        self.name, self.test, self.backend = name, test, backend
        self.reps, self.period, self.per_node = reps, float(period), per_node
        self.devices = _device_list(devices, "devices")
        self.spread, self.group = bool(spread), group
        self._proc: Optional[subprocess.Popen] = None
        self._threads: list[threading.Thread] = []
        self._err_tail: list[str] = []
        self.map: list[dict[str, Any]] = []
        self.epoch = 0

    @property
    def metric(self) -> str:
        """The series the group records: ``cg_<name>_seconds``."""
        return f"cg_{self.name}_seconds"

    # ---- the collector side ----

    @staticmethod
    def is_collector(argv: Optional[Sequence[str]] = None) -> bool:
        """Whether this process was started as a collector: the first
        argument (``argv``: the arguments after the program, default
        ``sys.argv[1:]``) is ``--telem-collector``."""
        args = sys.argv[1:] if argv is None else list(argv)
        return bool(args) and args[0] == COLLECTOR_FLAG

    def main(self, argv: Optional[Sequence[str]] = None) -> int:
        """Runs this process as one collector of the group with
        telem_collector's command line (``argv``: the arguments after the
        program, default ``sys.argv[1:]``; a leading ``--telem-collector``
        is skipped).  Returns the exit status: 0 after a clean stop (a
        signal, or ``--rounds``), 1 on a run-time error (too many failed
        rounds), 2 on bad usage, 3 when the backend is not present here.
        Call it before starting threads of your own: it blocks the stop
        signals and restarts libtelem's sender so that it inherits that."""
        args = list(sys.argv[1:] if argv is None else argv)
        if args and args[0] == COLLECTOR_FLAG:
            args = args[1:]
        prog = os.path.basename(sys.argv[0] or "python3")
        try:
            a = parser(prog).parse_args(args)
            if a.help:
                sys.stdout.write(USAGE.format(
                    prog=prog, flag=COLLECTOR_FLAG, name=self.name,
                    exe=sys.executable, metric=self.metric,
                    fails=FAILED_ROUNDS_MAX))
                sys.stdout.flush()
                return 0
            self._check(a)
        except Usage as e:
            sys.stderr.write(f"{prog}: {e}\nTry '{prog} {COLLECTOR_FLAG} "
                             "--help'.\n")
            return 2
        log = Log(prog, a.log_level)
        if a.list_devices:
            return list_devices(a, log)
        return self._run(a, log)

    def _check(self, a: argparse.Namespace) -> None:
        if a.kernel is not None and a.kernel != self.name:
            raise Usage(f"invalid --kernel '{a.kernel}': this collector runs "
                         f"the test '{self.name}' only")
        if a.phase >= a.period:
            raise Usage("--phase must be below the period")
        if a.spread and a.phase >= a.period // a.reps:
            raise Usage("with --spread, --phase must be below period/reps")
        if a.per_node:
            a.device = -1
        if a.rundir:
            os.environ["TELEM_RUNDIR"] = a.rundir

    def _run(self, a: argparse.Namespace, log: Log) -> int:
        backend = a.backend or "cpu"
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            devs = devices_of(backend)
        except NoBackend as e:
            log("error" if e.usage else "warn",
                f"{'' if e.usage else 'backend skipped: '}{e}")
            return 2 if e.usage else 3
        pin = a.pin if a.pin >= 0 else a.device
        if pin >= len(devs):
            log("error", f"device {pin}: this machine has {len(devs)} "
                f"{backend} devices")
            return 2
        if a.node:
            os.environ["TELEM_NODE"] = a.node
            os.environ.pop("TELEM_INGEST", None)
            os.environ.pop("TELEM_CTL", None)
        # The sender thread starts again after the block: it inherits it,
        # so a stop signal always waits for the measuring thread.
        _native.finalize()
        _native.init()
        node = os.environ.get("TELEM_NODE") or \
            os.environ.get("SLURMD_NODENAME") or os.uname().nodename
        device = Device(a.device, pin, devs[pin]["id"] if pin >= 0 else "",
                        backend, node)
        if backend == "cpu" and pin >= 0:
            os.sched_setaffinity(0, {int(devs[pin]["id"])})
        epoch = a.epoch or (time.time_ns() // a.period + 1) * a.period
        log("info", f"node {node} device {a.device} pin {pin} backend "
            f"{backend} test {self.name} group {a.group} period "
            f"{a.period / NS:.3f} s reps {a.reps}"
            f"{' (spread)' if a.spread else ''} epoch {epoch} phase "
            f"{a.phase / 1e6:.1f} ms")
        c = _Collector(self, a, log, device)
        self._describe()
        try:
            c.one()                     # once untimed: imports, caches
        except Exception as e:
            log("warn", f"first (untimed) run failed: {type(e).__name__}: "
                f"{e}")
        rc = c.loop(epoch)
        frc = _native.finalize()
        log("info" if rc == 0 else "error",
            f"stopped after {c.rounds} rounds ({c.skipped} skipped, "
            f"{c.failed} failed, {c.refused} samples refused); flush: "
            f"{'confirmed' if frc else 'not confirmed'}")
        return rc

    def _describe(self) -> None:
        m = self.metric
        _native.describe(m, "gauge", "s", "Median over a round's repetitions "
                         f"of the Python collector test {self.name} (higher "
                         "= slower); tags gpu, backend, group.")
        _native.describe(m + "_spread", "gauge", "s", "Median absolute "
                         f"deviation of the repetitions of {m} in one round "
                         "(unscaled).")

    # ---- the group side: start / stop ----

    def start(self, nodefile: Optional[str] = None, devices: Any = None,
              local_devices: Any = None, *, script: Optional[str] = None,
              telem_collect: Optional[str] = None,
              timeout: float = 30.0) -> "CollectorGroup":
        """Starts the group on every node of the job: runs telem_collect
        with this interpreter and ``script`` (default: the ``__main__``
        module's file) as the collector program, ``--kernel <name>`` and
        the group's settings, waits (at most ``timeout`` seconds) for its
        "ready" line and returns self (so ``with cg.start():`` works).
        ``nodefile`` None is the job's; ``devices`` overrides the group's
        device list; ``local_devices`` maps virtual nodes onto these
        machine devices (telem_collect --local-devices).  telem_collect is
        ``telem_collect`` (a path), else ``$TELEM_BIN/telem_collect``, else
        the one beside libtelem (``../bin``), else on PATH.  The device map
        it printed is in :attr:`map`, its epoch in :attr:`epoch`.  Raises
        TelemError with telem_collect's message when it fails, TelemTimeout
        when it is not ready in time (it is killed)."""
        if self._proc is not None:
            raise make_error(ESTATE, "the group is already started", "start")
        argv = self._collect_argv(nodefile, devices, local_devices, script,
                                  telem_collect)
        self._err_tail = []
        self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE,
                                      stdin=subprocess.DEVNULL)
        lines: list[str] = []
        ready = threading.Event()
        self._threads = [
            threading.Thread(target=self._read_out, args=(lines, ready),
                             daemon=True),
            threading.Thread(target=self._read_err, daemon=True)]
        for t in self._threads:
            t.start()
        end = time.monotonic() + timeout
        while not ready.wait(0.05):
            if self._proc.poll() is not None:
                self._threads[1].join(5)
                rc, self._proc = self._proc.returncode, None
                code = {2: EINVAL, 3: EUNSUPPORTED}.get(rc, EIO)
                mine = "telem_collect: "
                said = [l[len(mine):] for l in self._err_tail
                        if l.startswith(mine)]
                msg = " ".join(said or self._err_tail[-1:]) or \
                    f"exit status {rc}"
                raise make_error(code, msg, "telem_collect")
            if time.monotonic() > end:
                self._kill()
                raise make_error(ETIMEDOUT, "telem_collect was not ready "
                                 f"within {timeout} s", "start")
        self._parse_map(lines)
        return self

    def _collect_argv(self, nodefile: Optional[str], devices: Any,
                      local_devices: Any, script: Optional[str],
                      telem_collect: Optional[str]) -> list[str]:
        if script is None:
            script = getattr(sys.modules.get("__main__"), "__file__", None)
        if not script:
            raise make_error(EINVAL, "no script to run as the collector: "
                             "pass script=", "start")
        script = os.path.abspath(script)
        devs = _device_list(devices, "devices") or self.devices
        local = _device_list(local_devices, "local_devices")
        argv = [_find_collect(telem_collect), "--collector", sys.executable,
                "--collector-arg", script, "--collector-arg", COLLECTOR_FLAG,
                "--kernel", self.name, "--backend", self.backend,
                "--period", repr(self.period), "--reps", str(self.reps),
                "--name", self.group]
        if self.per_node:
            argv.append("--per-node")
        if self.spread:
            argv.append("--spread")
        if devs:
            argv += ["--devices", devs]
        if local:
            argv += ["--local-devices", local]
        if nodefile:
            argv += ["--nodefile", os.path.abspath(nodefile)]
        return argv

    def _read_out(self, lines: list[str], ready: threading.Event) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for raw in self._proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if ready.is_set():
                continue
            if line == "ready":
                ready.set()
            else:
                lines.append(line)

    def _read_err(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for raw in self._proc.stderr:
            sys.stderr.write(raw.decode("utf-8", "replace"))
            self._err_tail = (self._err_tail
                              + [raw.decode("utf-8", "replace").strip()])[-20:]

    def _parse_map(self, lines: list[str]) -> None:
        self.map = []
        for line in lines:
            w = line.split()
            if w[:1] == ["group"] and "epoch" in w:
                self.epoch = int(w[w.index("epoch") + 1])
            elif w[:1] == ["node"] and len(w) >= 4:
                e: dict[str, Any] = {"node": w[1], "device": w[3]}
                if "->" in w and "phase" in w:
                    e["pin"] = int(w[w.index("->") + 3])
                    e["id"] = w[w.index("(id") + 1].rstrip(")")
                    e["phase_ms"] = float(w[w.index("phase") + 1])
                if "pid" in w:
                    e["pid"] = int(w[w.index("pid") + 1])
                self.map.append(e)

    def stop(self, timeout: float = 15.0) -> int:
        """Stops the group: SIGINT to telem_collect (every collector then
        flushes and exits), waits at most ``timeout`` seconds, then
        SIGKILL.  Returns telem_collect's exit status (0: every collector
        ended cleanly), or -9 when it had to be killed; None-safe: a group
        not started returns 0."""
        p = self._proc
        if p is None:
            return 0
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                self._kill()
                return -9
        self._proc = None
        for t in self._threads:
            t.join(5)
        return p.returncode

    def _kill(self) -> None:
        p, self._proc = self._proc, None
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()

    @property
    def running(self) -> bool:
        """Whether the group's telem_collect runs."""
        return self._proc is not None and self._proc.poll() is None

    def __enter__(self) -> "CollectorGroup":
        if self._proc is None:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _device_list(v: Any, what: str) -> Optional[str]:
    """A device list argument as telem's text ("0,2-3"), or None."""
    if v is None:
        return None
    if isinstance(v, str):
        text = v
    elif isinstance(v, int) and not isinstance(v, bool):
        text = str(v)
    else:
        try:
            text = ",".join(str(int(x)) for x in v)
        except (TypeError, ValueError):
            raise make_error(EINVAL, f"{what} {v!r}: indices such as '0,2-3' "
                             "or a list of ints", "CollectorGroup") from None
    try:
        parse_list(text, 65535)
    except ValueError:
        raise make_error(EINVAL, f"{what} {v!r}: indices such as '0,2-3' or "
                         "a list of ints", "CollectorGroup") from None
    return text


def _find_collect(given: Optional[str]) -> str:
    """telem_collect: given, $TELEM_BIN's, beside libtelem, on PATH."""
    if given:
        return given
    cands = []
    if os.environ.get("TELEM_BIN"):
        cands.append(os.path.join(os.environ["TELEM_BIN"], "telem_collect"))
    lib = os.path.dirname(os.path.realpath(_native.libtelem_path()))
    cands.append(os.path.join(lib, os.pardir, "bin", "telem_collect"))
    for c in cands:
        if os.access(c, os.X_OK):
            return os.path.normpath(c)
    found = shutil.which("telem_collect")
    if not found:
        raise make_error(ENOTFOUND, "telem_collect not found ($TELEM_BIN, "
                         "beside libtelem, PATH): pass telem_collect=",
                         "start")
    return found
