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
import ctypes
import json
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
from .errors import (EINVAL, EIO, ENOTFOUND, ESTATE, ETIMEDOUT, EUNSUPPORTED,
                     make_error)

__all__ = ["CollectorGroup", "Device", "COLLECTOR_FLAG", "FAILED_ROUNDS_MAX"]

COLLECTOR_FLAG = "--telem-collector"
# Failed rounds in a row after which a collector gives up (exit 1).
FAILED_ROUNDS_MAX = 10
_NAME_RE = re.compile(r"[a-z][a-z0-9_]*\Z")
_NAME_MAX = 64
_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
_CPU_SETSIZE = 1024
_NS = 1_000_000_000
_BACKENDS = ("cpu", "cuda")


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


# ---- logging (the format of telem's C programs) --------------------------

_LEVELS = ("error", "warn", "info", "debug")


class _Log:
    def __init__(self, prog: str, level: str = "info") -> None:
        self.prog = os.path.basename(prog)
        self.level = _LEVELS.index(level)

    def __call__(self, level: str, msg: str) -> None:
        if _LEVELS.index(level) > self.level:
            return
        now = time.time_ns()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now // _NS))
        line = (f"{stamp}.{(now % _NS) // 1_000_000:03d}Z {self.prog}"
                f"[{os.getpid()}] {level}: {msg}\n")
        os.write(2, line.encode("utf-8", "replace"))


# ---- devices ------------------------------------------------------------

class _NoBackend(Exception):
    """A backend that is not present here (exit 3), or a bad device list
    (``usage``: exit 2)."""

    def __init__(self, why: str, usage: bool = False) -> None:
        super().__init__(why)
        self.usage = usage


def _parse_list(s: str, top: int) -> list[int]:
    """telem's device list grammar ("0,2-3": distinct numbers <= top);
    ValueError when it is not one."""
    out: list[int] = []
    for part in s.split(","):
        m = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", part)
        if not m:
            raise ValueError(s)
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo or hi > top:
            raise ValueError(s)
        for v in range(lo, hi + 1):
            if v in out:
                raise ValueError(s)
            out.append(v)
    return out


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name") and ":" in line:
                    name = line.split(":", 1)[1].strip()
                    if name:
                        return name
                    break
    except OSError:
        pass
    return "cpu core"


def _cpu_devices() -> list[dict[str, Any]]:
    """The cpu backend's devices, as telem_collector lists them."""
    allowed = os.sched_getaffinity(0)
    env = os.environ.get("TELEM_CPU_DEVICES", "")
    if env:
        try:
            cores = _parse_list(env, _CPU_SETSIZE - 1)
        except ValueError:
            raise _NoBackend(f"TELEM_CPU_DEVICES='{env}' is not a list of "
                             "distinct core numbers such as 2,3 or 0-3",
                             usage=True) from None
        for c in cores:
            if c not in allowed:
                raise _NoBackend(f"TELEM_CPU_DEVICES names core {c}, which "
                                 "this process may not run on", usage=True)
    else:
        cores = sorted(allowed)
    model = _cpu_model()
    return [{"index": i, "id": str(c), "name": model, "bus": ""}
            for i, c in enumerate(cores)]


def _cuda_devices() -> list[dict[str, Any]]:
    """CUDA devices through the driver library (dlopen, as the C backend)."""
    path = os.environ.get("TELEM_CUDA_LIBRARY") or "libcuda.so.1"
    try:
        cu = ctypes.CDLL(path)
    except OSError as e:
        raise _NoBackend(f"cannot load {path}: {e}") from None
    rc = cu.cuInit(0)
    if rc != 0:
        raise _NoBackend(f"cuInit failed (CUDA error {rc}): no usable GPU "
                         "or driver")
    n = ctypes.c_int(0)
    if cu.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value <= 0:
        raise _NoBackend("the CUDA driver reports no device")
    out = []
    for i in range(n.value):
        dev = ctypes.c_int(0)
        name = ctypes.create_string_buffer(256)
        bus = ctypes.create_string_buffer(64)
        cu.cuDeviceGet(ctypes.byref(dev), i)
        cu.cuDeviceGetName(name, 256, dev)
        if cu.cuDeviceGetPCIBusId(bus, 64, dev) != 0:
            bus.value = b""
        out.append({"index": i, "id": str(i),
                    "name": name.value.decode("utf-8", "replace"),
                    "bus": bus.value.decode("utf-8", "replace")})
    return out


def _devices(backend: str) -> list[dict[str, Any]]:
    return _cpu_devices() if backend == "cpu" else _cuda_devices()


# ---- the collector's command line ----------------------------------------

class _Usage(Exception):
    """A bad command line: exit 2 after the message."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own errors
        raise _Usage(message)


def _checker(flag: str, why: str, conv: Callable[[str], Any]) -> Callable:
    def check(v: str) -> Any:
        try:
            return conv(v)
        except (ValueError, OverflowError):
            raise _Usage(f"invalid {flag} '{v}': {why}") from None
    return check


def _int_in(lo: int, hi: int) -> Callable[[str], int]:
    def conv(v: str) -> int:
        if not re.fullmatch(r"\s*[+-]?[0-9]+", v):
            raise ValueError(v)
        n = int(v)
        if n < lo or n > hi:
            raise ValueError(v)
        return n
    return conv


def _seconds(v: str) -> int:
    x = float(v)
    if not math.isfinite(x) or x < 0.001 or x > 86400:
        raise ValueError(v)
    return round(x * _NS)


def _node(v: str) -> str:
    if not v or len(v.encode()) > 255 or any(c in v for c in "/\t\n"):
        raise ValueError(v)
    return v


def _group(v: str) -> str:
    if not v or len(v.encode()) > 255:
        raise ValueError(v)
    return v


def _choice(values: Sequence[str]) -> Callable[[str], str]:
    def conv(v: str) -> str:
        if v not in values:
            raise ValueError(v)
        return v
    return conv


_USAGE = """\
Usage: {prog} {flag} [OPTIONS]
       {prog} {flag} --list-devices [--backend B] [--json]
One collector of the Python test '{name}': times it on one device in rounds
and pushes one sample per round into the node's telemd.  Started by
telem_collect --collector {exe} --collector-arg {prog}
--collector-arg {flag} --kernel {name}; the options are telem_collector's.

Options:
  -n, --node NAME       node whose telemd receives the samples (default:
                        $TELEM_NODE, $SLURMD_NODENAME or the host name)
  -r, --rundir DIR      run directory (default: $TELEM_RUNDIR, ...)
  -b, --backend B       cpu (default) or cuda
  -k, --kernel K        the test: '{name}' (the only one this program runs)
  -d, --device I        device index on the node, the tag gpu (default 0)
      --per-node        a per-node test: no device, no gpu tag
      --pin J           this machine's device to run on (default: I)
  -p, --period S        round period in seconds (default 1)
  -R, --reps N          repetitions per round, 1-1000 (default 5)
      --spread          spread the repetitions evenly over the round
  -e, --epoch NS        realtime ns of round 0 (default: now rounded up)
      --phase NS        run rounds NS after their time (0 <= NS < period)
  -g, --group NAME      group tag (default: cg)
      --rounds N        stop after N rounds (default: until a signal)
  -L, --list-devices    list this machine's devices and exit
  -j, --json            with --list-devices: JSON
  -l, --log-level LVL   error, warn, info (default) or debug
  -h, --help            show this help

Each round k pushes {metric} (median of the repetitions, seconds) and
{metric}_spread (their MAD), stamped epoch + k*period, tagged gpu,
backend and group.  A round whose test raises records nothing and is
logged; after {fails} such rounds in a row the collector exits 1.
Stops on SIGTERM, SIGINT or SIGHUP after an acknowledged flush.
Exit status: 0 after a clean stop, 1 on a run-time error, 2 on bad usage,
3 when the backend is not present on this machine.
"""


def _parser(prog: str) -> _Parser:
    p = _Parser(prog=prog, add_help=False, allow_abbrev=True)
    add = p.add_argument
    add("-n", "--node", type=_checker("--node", "1-255 bytes, no '/', tab "
                                      "or newline", _node))
    add("-r", "--rundir", type=_checker("--rundir", "unusable", _node_dir))
    add("-b", "--backend", type=_checker("--backend", "cpu or cuda",
                                         _choice(_BACKENDS)))
    add("-k", "--kernel")
    add("-d", "--device", type=_checker("--device", "an integer from 0 to "
                                        "65535", _int_in(0, 65535)),
        default=0)
    add("--per-node", action="store_true")
    add("--pin", type=_checker("--pin", "an integer from 0 to 65535",
                               _int_in(0, 65535)), default=-1)
    add("-p", "--period", type=_checker("--period", "seconds, from 0.001 to "
                                        "86400", _seconds), default=_NS)
    add("-R", "--reps", type=_checker("--reps", "an integer from 1 to 1000",
                                      _int_in(1, 1000)), default=5)
    add("-e", "--epoch", type=_checker("--epoch", "realtime nanoseconds, "
                                       ">= 0", _int_in(0, 2**63 - 1)),
        default=0)
    add("--phase", type=_checker("--phase", "nanoseconds, >= 0",
                                 _int_in(0, 86400 * _NS)), default=0)
    add("--spread", action="store_true")
    add("-g", "--group", type=_checker("--group", "1-255 bytes", _group),
        default="cg")
    add("--rounds", type=_checker("--rounds", "a positive integer",
                                  _int_in(1, 10**15)), default=0)
    add("-L", "--list-devices", action="store_true")
    add("-j", "--json", action="store_true")
    add("-l", "--log-level", type=_checker("--log-level", "one of error, "
                                           "warn, info, debug",
                                           _choice(_LEVELS)), default="info")
    add("-h", "--help", action="store_true")
    return p


def _node_dir(v: str) -> str:
    if not v:
        raise ValueError(v)
    return os.path.abspath(v)


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
        if signal.sigtimedwait(_STOP_SIGNALS, left / _NS) is not None:
            raise _Stop()


class _Collector:
    """One collector: the parsed options, the test and its counters."""

    def __init__(self, group: "CollectorGroup", a: argparse.Namespace,
                 log: _Log, device: Device) -> None:
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
            return (t1 - t0) / _NS
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
        if backend not in _BACKENDS:
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
            a = _parser(prog).parse_args(args)
            if a.help:
                sys.stdout.write(_USAGE.format(
                    prog=prog, flag=COLLECTOR_FLAG, name=self.name,
                    exe=sys.executable, metric=self.metric,
                    fails=FAILED_ROUNDS_MAX))
                sys.stdout.flush()
                return 0
            self._check(a)
        except _Usage as e:
            sys.stderr.write(f"{prog}: {e}\nTry '{prog} {COLLECTOR_FLAG} "
                             "--help'.\n")
            return 2
        log = _Log(prog, a.log_level)
        if a.list_devices:
            return _list(a, log)
        return self._run(a, log)

    def _check(self, a: argparse.Namespace) -> None:
        if a.kernel is not None and a.kernel != self.name:
            raise _Usage(f"invalid --kernel '{a.kernel}': this collector runs "
                         f"the test '{self.name}' only")
        if a.phase >= a.period:
            raise _Usage("--phase must be below the period")
        if a.spread and a.phase >= a.period // a.reps:
            raise _Usage("with --spread, --phase must be below period/reps")
        if a.per_node:
            a.device = -1
        if a.rundir:
            os.environ["TELEM_RUNDIR"] = a.rundir

    def _run(self, a: argparse.Namespace, log: _Log) -> int:
        backend = a.backend or "cpu"
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            devs = _devices(backend)
        except _NoBackend as e:
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
            f"{a.period / _NS:.3f} s reps {a.reps}"
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
                msg = " ".join(l for l in self._err_tail if l) or \
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
        _parse_list(text, 65535)
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
        raise make_error(ENOTFOUND, "telem_collect not found ($TELEM_BIN, beside "
                         "libtelem, PATH): pass telem_collect=", "start")
    return found


def _list(a: argparse.Namespace, log: _Log) -> int:
    """--list-devices, as telem_collector prints it."""
    out: dict[str, list] = {"backends": [], "unavailable": []}
    found = 0
    if not a.json:
        sys.stdout.write("BACKEND\tDEVICE\tID\tNAME\tBUS\n")
    for b in _BACKENDS:
        if a.backend and a.backend != b:
            continue
        try:
            devs = _devices(b)
        except _NoBackend as e:
            log("info", f"backend {b} skipped: {e}")
            out["unavailable"].append({"backend": b, "why": str(e)})
            continue
        found += 1
        if a.json:
            out["backends"].append({"backend": b, "devices": devs})
        for d in [] if a.json else devs:
            bus = f"\t{d['bus']}" if d["bus"] else ""
            sys.stdout.write(f"{b}\t{d['index']}\t{d['id']}\t{d['name']}"
                             f"{bus}\n")
    if a.json:
        sys.stdout.write(json.dumps(out, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    return 0 if found else 3
