"""Custom detectors in Python: a class with ``analyze(data)``, run in rounds.

    import telem

    class BadFlag(telem.Detector):
        name = "badflag"            # the restart line's trigger
        metrics = ["bad"]           # what each round fetches
        window = 10                 # seconds of history

        def analyze(self, data):
            bad = [n for n, v in data.latest("bad").items() if v >= 1]
            if bad:
                return telem.Restart(exclude=bad, why=f"{bad} set bad=1")
            return None

    if __name__ == "__main__":
        BadFlag().run()

:meth:`Detector.run` loops on an absolute schedule (a late round does not
shift the next ones; rounds missed meanwhile are skipped, not queued):
every ``period`` seconds it fetches the last ``window`` seconds of
``metrics`` from every node of the job through :class:`AnalysisClient`
(one deadline; nodes that did not answer are in ``data.missing``), calls
``analyze`` and acts on what it returns:

- ``None``: nothing;
- :class:`Warn`: one event line (severity warn);
- :class:`Restart`: one event line (severity act) and, where restarts are
  on (``TELEM_WATCH_RESTART=1``, which telem_launch sets with
  ``--resilient``), one restart request to the launcher naming the nodes,
  with the detector's ``name`` as its trigger and ``why`` as its reason;
  nodes already excluded by an accepted request are not named again.

An exception in ``analyze``, or a value of another type, is logged (with
its traceback) on stderr and the detector goes on: a round's failure is
not the job's.  SIGTERM and SIGINT stop it after the current round; it
then exits 0.

Under telem_launch (``--detector-cmd '/usr/bin/python3 mydet.py'``) the
command runs beside telem_watch, with its environment (TELEM_NODEFILE,
TELEM_RUNDIR, TELEM_LAUNCH_ENDPOINT, TELEM_KEYS) plus TELEM_WATCH_PERIOD
(the watcher's round, the default ``period``) and TELEM_WATCH_RESTART.

Live control: each detector keeps ``<rundir>/detectors/<name>/`` (0700):
``state`` (JSON, rewritten every round: rounds, events, errors, paused,
pid, period, window, the last error), ``paused`` (present: rounds are
skipped, the data not asked for, the state kept) and ``lock`` (one
detector per name and run directory).  ``python3 -m telem.detector ctl
NAME status|pause|resume`` reads and changes them.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import fcntl
import json
import math
import os
import re
import signal
import sys
import threading
import time
import traceback
from abc import ABC, abstractmethod
from typing import Any, Iterable, Optional, Sequence, Union

from . import _lib
from .errors import (EINVAL, ENOTFOUND, ESTATE, ETIMEDOUT, TelemError,
                     make_error)

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
_PLAIN_RE = re.compile(r"^[A-Za-z0-9._\-:@+]+$")
_NS = 1_000_000_000
_STATE_DIR = "detectors"


# ---- what analyze returns ---------------------------------------------------

def _check_nodes(exclude: Any, what: str) -> tuple:
    if isinstance(exclude, (str, bytes)) or not isinstance(exclude, Iterable):
        raise TypeError(f"{what}: exclude must be a list of node names (str), "
                        f"not {type(exclude).__name__}")
    names = list(exclude)
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"{what}: node names are str, not "
                            f"{type(n).__name__}")
        if not n or "\0" in n or len(n.encode("utf-8")) > _lib.TELEM_NAME_MAX:
            raise make_error(EINVAL, f"bad node name {n!r}", what)
    return tuple(dict.fromkeys(names))


def _check_why(why: Any, what: str) -> str:
    if not isinstance(why, str):
        raise TypeError(f"{what}: why must be str, not {type(why).__name__}")
    if not why.strip():
        raise make_error(EINVAL, "why is empty: say what the detector saw",
                         what)
    return why


class Restart:
    """``analyze``'s verdict: restart the job without the nodes ``exclude``
    (a non-empty list of node names, each named once) because of ``why``
    (a sentence, the restart line's reason).  Raises TypeError for a
    non-list or non-str names, TelemInvalid for an empty list, an empty
    name or an empty ``why``."""

    __slots__ = ("exclude", "why")
    severity = "act"

    def __init__(self, exclude: Sequence[str], why: str) -> None:
        names = _check_nodes(exclude, "Restart")
        if not names:
            raise make_error(EINVAL, "exclude names no node", "Restart")
        self.exclude = names
        self.why = _check_why(why, "Restart")

    @property
    def nodes(self) -> tuple:
        """The nodes the event names (``exclude``)."""
        return self.exclude

    def __repr__(self) -> str:
        return f"Restart(exclude={list(self.exclude)!r}, why={self.why!r})"


class Warn:
    """``analyze``'s verdict: worth a look, no action.  ``why`` as for
    :class:`Restart`; ``nodes`` may be empty."""

    __slots__ = ("nodes", "why")
    severity = "warn"

    def __init__(self, why: str, nodes: Sequence[str] = ()) -> None:
        self.nodes = _check_nodes(nodes, "Warn")
        self.why = _check_why(why, "Warn")

    def __repr__(self) -> str:
        return f"Warn(why={self.why!r}, nodes={list(self.nodes)!r})"


# ---- what analyze gets -------------------------------------------------------

class RoundData:
    """One round's data: ``series`` (the :class:`telem.analysis.Series`
    of :meth:`AnalysisClient.get_data`: node, metric, tags, numpy arrays
    ``times``/``times_ns``/``values``), ``missing`` (node -> Missing: the
    nodes that did not answer), ``nodes`` (the job's nodes), ``round``
    (1, 2, ...), ``ts_ns``/``ts`` (the round's scheduled time, realtime
    nanoseconds / seconds) and ``result`` (the QueryResult itself)."""

    def __init__(self, result: Any, nodes: list, round_no: int,
                 ts_ns: int) -> None:
        self.result = result
        self.series = list(result.series)
        self.missing = dict(result.missing)
        self.nodes = list(nodes)
        self.round = round_no
        self.ts_ns = ts_ns

    @property
    def ts(self) -> float:
        """The round's time, seconds since the epoch."""
        return self.ts_ns / _NS

    def get(self, metric: Optional[str] = None,
            node: Optional[str] = None) -> list:
        """The series of ``metric`` (None: any) on ``node`` (None: any)."""
        return [s for s in self.series
                if (metric is None or s.metric == metric)
                and (node is None or s.node == node)]

    def by_node(self, metric: Optional[str] = None) -> dict:
        """{node: [series of ``metric``]} for every node with some."""
        out: dict = {}
        for s in self.get(metric):
            out.setdefault(s.node, []).append(s)
        return out

    def latest(self, metric: str) -> dict:
        """{node: the newest value of ``metric`` over its series} for every
        node that has a point of it in the window."""
        out: dict = {}
        for node, ss in self.by_node(metric).items():
            best = None
            for s in ss:
                if len(s) and (best is None or s.times_ns[-1] > best[0]):
                    best = (int(s.times_ns[-1]), float(s.values[-1]))
            if best is not None:
                out[node] = best[1]
        return out


# ---- the detector --------------------------------------------------------------

def _period_default() -> float:
    v = os.environ.get("TELEM_WATCH_PERIOD")
    if v:
        try:
            p = float(v)
            if 0.05 <= p <= 3600:
                return p
        except ValueError:
            pass
        _log(f"TELEM_WATCH_PERIOD={v!r} is not seconds from 0.05 to 3600; "
             "using 1 s")
    return 1.0


def _seconds(v: Any, what: str, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{what} must be seconds (a number), not "
                        f"{type(v).__name__}")
    if not (math.isfinite(v) and lo <= v <= hi):
        raise make_error(EINVAL, f"{v!r} is not seconds from {lo:g} to "
                         f"{hi:g}", what)
    return float(v)


def _iso(ts_ns: int) -> str:
    t = datetime.datetime.fromtimestamp(ts_ns / _NS, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _escaped(s: str, quote: bool = False) -> str:
    """A name as telem_watch prints it: as it is when plain, else quoted;
    control bytes as \\xNN anywhere."""
    if quote and _PLAIN_RE.match(s):
        quote = False
    out = []
    for ch in s:
        o = ord(ch)
        if o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02x}")
        elif quote and ch in "\"\\":
            out.append("\\" + ch)
        else:
            out.append(ch)
    body = "".join(out)
    return f'"{body}"' if quote else body


def _log(msg: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} telem.detector[{os.getpid()}]"
          f" {msg}", file=sys.stderr, flush=True)


def rundir() -> str:
    """The run directory: $TELEM_RUNDIR, else telem's default."""
    r = os.environ.get("TELEM_RUNDIR")
    if r:
        return os.path.abspath(r)
    buf = ctypes.create_string_buffer(1024)
    _lib.check(_lib.lib().telem_rundir_default(buf, len(buf)), "run directory")
    return buf.value.decode()


def state_dir(name: str, run_dir: Optional[str] = None) -> str:
    """``<rundir>/detectors/<name>``: the detector's state and control."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise make_error(EINVAL, f"{name!r}: a detector name is 1-63 "
                         "letters, digits, '.', '_' or '-'", "detector name")
    return os.path.join(run_dir or rundir(), _STATE_DIR, name)


class Detector(ABC):
    """Base class of a detector written in Python (see the module doc).

    Class attributes a subclass sets: ``name`` (default: the class name in
    lower case; 1-63 letters, digits, ``._-``), ``metrics`` (a name or a
    list of names, required), ``window`` (seconds of history per round,
    default 30), ``period`` (seconds between rounds; None: the watcher's,
    ``$TELEM_WATCH_PERIOD``, else 1), ``timeout`` (each query's deadline,
    default 1 s), ``restart_timeout`` (how long a restart request waits for
    the launcher's answer, default 5 s; the rounds wait meanwhile).  The
    constructor takes the same names as keywords, plus
    ``act`` (send restart requests; None: ``$TELEM_WATCH_RESTART == "1"``).
    """

    name: Optional[str] = None
    metrics: Union[str, Sequence[str], None] = None
    window: float = 30.0
    period: Optional[float] = None
    timeout: float = 1.0
    restart_timeout: float = 5.0

    def __init__(self, *, name: Optional[str] = None,
                 metrics: Union[str, Sequence[str], None] = None,
                 window: Optional[float] = None,
                 period: Optional[float] = None,
                 timeout: Optional[float] = None,
                 act: Optional[bool] = None) -> None:
        cls = type(self)
        self.name = name if name is not None else (cls.name
                                                   or cls.__name__.lower())
        state_dir(self.name, "/")           # checks the name
        m = metrics if metrics is not None else cls.metrics
        if isinstance(m, str):
            m = [m]
        if m is None or isinstance(m, bytes) or not isinstance(m, Iterable):
            raise TypeError(f"{cls.__name__}.metrics must name the metrics "
                            "to fetch (a str or a list of str)")
        self.metrics = list(m)
        if not self.metrics or not all(isinstance(x, str) and x
                                       for x in self.metrics):
            raise make_error(EINVAL, "metrics must be non-empty names",
                             f"{cls.__name__}.metrics")
        self.window = _seconds(window if window is not None else cls.window,
                               f"{cls.__name__}.window", 0.001, 86400 * 365)
        p = period if period is not None else cls.period
        self.period = _seconds(p, f"{cls.__name__}.period", 0.05, 3600) \
            if p is not None else _period_default()
        self.timeout = _seconds(timeout if timeout is not None
                                else cls.timeout, f"{cls.__name__}.timeout",
                                0.001, 3600)
        self.act = (os.environ.get("TELEM_WATCH_RESTART") == "1") \
            if act is None else bool(act)
        self.rounds = 0
        self.events = 0
        self.errors = 0
        self.paused = False
        self.excluded: set = set()
        self.last_error = ""
        self._stop = threading.Event()
        self._client: Any = None
        self._dir: Optional[str] = None
        self._lock_fd = -1
        self._missing: list = []

    @abstractmethod
    def analyze(self, data: RoundData) -> Union[None, Restart, Warn]:
        """Looks at one round's data; returns None, :class:`Warn` or
        :class:`Restart`."""

    # ---- the loop ----------------------------------------------------------

    def stop(self) -> None:
        """Ends :meth:`run` after the current round (what SIGTERM does)."""
        self._stop.set()

    def run(self, rounds: Optional[int] = None,
            duration: Optional[float] = None) -> int:
        """Runs rounds until a signal (SIGTERM, SIGINT), :meth:`stop`,
        ``rounds`` rounds or ``duration`` seconds.  Returns 0; raises
        TelemError when its state directory is taken by another detector of
        the same name or cannot be made."""
        self._open_state()
        old = self._signals()
        try:
            _log(f"{self.name}: start: metrics {','.join(self.metrics)}, "
                 f"window {self.window:g} s, period {self.period:g} s, "
                 f"restarts {'on' if self.act else 'off'}, state "
                 f"{self._dir}")
            self._loop(rounds, duration)
            _log(f"{self.name}: stopped after {self.rounds} rounds, "
                 f"{self.events} events, {self.errors} failed rounds")
            return 0
        finally:
            for sig, h in old.items():
                signal.signal(sig, h)
            self._close()

    def _signals(self) -> dict:
        if threading.current_thread() is not threading.main_thread():
            return {}
        old = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            old[sig] = signal.signal(sig, lambda s, f: self._stop.set())
        return old

    def _loop(self, rounds: Optional[int], duration: Optional[float]) -> None:
        t0, wall0 = time.monotonic(), time.time_ns()
        end = t0 + duration if duration is not None else math.inf
        k = 0
        while not self._stop.is_set():
            due = t0 + k * self.period
            if due >= end:
                break
            if self._stop.wait(max(0.0, due - time.monotonic())):
                break
            self._round(wall0 + round(k * self.period * _NS))
            if rounds is not None and self.rounds >= rounds:
                break
            # Absolute schedule: the next round after now, late ones skipped.
            k = max(k + 1, math.floor((time.monotonic() - t0)
                                      / self.period) + 1)

    def _round(self, ts_ns: int) -> None:
        self.paused = os.path.exists(os.path.join(self._dir, "paused"))
        if self.paused:
            self._write_state()
            return
        self.rounds += 1
        data = self._fetch(ts_ns)
        try:
            verdict = self.analyze(data) if data is not None else None
        except Exception as e:      # a round's failure is not the job's
            self._failed(f"round {self.rounds}: analyze raised "
                         f"{type(e).__name__}: {e}", traceback.format_exc())
        else:
            if verdict is not None and not isinstance(verdict,
                                                      (Restart, Warn)):
                self._failed(f"round {self.rounds}: analyze returned "
                             f"{type(verdict).__name__}, not None, "
                             "telem.Restart or telem.Warn", "")
            elif verdict is not None:
                self._event(verdict, ts_ns)
        self._write_state()

    def _failed(self, msg: str, tb: str) -> None:
        self.errors += 1
        self.last_error = msg
        _log(f"{self.name}: {msg}; the detector goes on"
             + (f"\n{tb.rstrip()}" if tb else ""))

    # ---- data -----------------------------------------------------------------

    def _connect(self) -> Any:
        if self._client is None:
            from .analysis import AnalysisClient
            self._client = AnalysisClient(timeout=self.timeout)
        return self._client

    def _fetch(self, ts_ns: int) -> Optional[RoundData]:
        """The round's data; None (logged) when no node could be asked."""
        from .analysis import Missing, QueryResult
        try:
            ac = self._connect()
            nodes = ac.nodes
        except TelemError as e:
            self._failed(f"round {self.rounds}: cannot read the job's nodes: "
                         f"{e}", "")
            return None
        try:
            res = ac.get_data(self.metrics, start=-self.window)
        except TelemError as e:
            # No node answered: analyze still runs, every node missing.
            res = QueryResult(missing={n: Missing(e.code, e.sentence)
                                       for n in nodes})
        missing = sorted(res.missing)
        if missing != self._missing:    # logged when the set changes
            self._missing = missing
            _log(f"{self.name}: round {self.rounds}: "
                 + ("no answer from " + ", ".join(
                     f"{n} ({res.missing[n]})" for n in missing)
                    if missing else "every node answers again"))
        return RoundData(res, nodes, self.rounds, ts_ns)

    # ---- events and restarts -----------------------------------------------------

    def _event(self, v: Union[Restart, Warn], ts_ns: int) -> None:
        self.events += 1
        nodes = ",".join(_escaped(n, True) for n in v.nodes)
        sev = "ACT " if v.severity == "act" else "WARN"
        print(f"{_iso(ts_ns)} #{self.events} {sev} {_escaped(self.name)} "
              f"nodes={nodes}: {_escaped(v.why)}", flush=True)
        if isinstance(v, Restart) and self.act:
            self._restart(v)

    def _restart(self, v: Restart) -> None:
        todo = [n for n in v.exclude if n not in self.excluded]
        if not todo:
            return
        rid = f"{time.time_ns():x}"
        try:
            msg = self._connect().reboot(todo, v.why, detector=self.name,
                                         timeout=self.restart_timeout)
        except TelemError as e:
            status = "timeout" if e.code == ETIMEDOUT else "refused" \
                if e.code in (ESTATE, ENOTFOUND, EINVAL) else "failed"
            print(f"restart {rid} {status}: {e}", flush=True)
            _log(f"{self.name}: restart request {status}: {e}")
            return
        self.excluded.update(todo)
        print(f"restart {rid} accepted: {msg}", flush=True)

    # ---- state and control ------------------------------------------------------

    def _open_state(self) -> None:
        d = state_dir(self.name)
        os.makedirs(d, mode=0o700, exist_ok=True)
        fd = os.open(os.path.join(d, "lock"), os.O_RDWR | os.O_CREAT
                     | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise make_error(ESTATE, f"another detector named {self.name!r} "
                             f"runs in this run directory ({d}/lock is "
                             "held)", "Detector.run") from None
        self._dir, self._lock_fd = d, fd
        self._write_state()

    def state(self) -> dict:
        """What ``ctl status`` shows."""
        return {"name": self.name, "pid": os.getpid(),
                "state": "paused" if self.paused else "running",
                "rounds": self.rounds, "events": self.events,
                "errors": self.errors, "period": self.period,
                "window": self.window, "metrics": self.metrics,
                "restarts": self.act, "excluded": sorted(self.excluded),
                "last_error": self.last_error, "time_ns": time.time_ns()}

    def _write_state(self) -> None:
        path = os.path.join(self._dir, "state")
        tmp = f"{path}.{os.getpid()}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(self.state(), f)
                f.write("\n")
            os.replace(tmp, path)
        except OSError as e:
            _log(f"{self.name}: cannot write {path}: {e}")

    def _close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._dir:
            try:
                os.unlink(os.path.join(self._dir, "state"))
            except OSError:
                pass
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    # ---- entry points --------------------------------------------------------------

    @classmethod
    def main(cls, argv: Optional[Sequence[str]] = None) -> None:
        """``cls()`` run as a program (:func:`run_detector`)."""
        run_detector(cls, argv)


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Runs a telem detector: every period, fetch "
        "the window of its metrics from every node of the job, analyze, "
        "report, and ask the launcher for restarts (TELEM_WATCH_RESTART=1).")
    p.add_argument("--period", type=float, help="seconds between rounds "
                   "(default: $TELEM_WATCH_PERIOD, else 1)")
    p.add_argument("--window", type=float, help="seconds of history")
    p.add_argument("--rounds", type=int, help="stop after N rounds")
    p.add_argument("--duration", type=float, help="stop after S seconds")
    p.add_argument("--no-restart", action="store_true",
                   help="report only, never ask for restarts")
    return p


def run_detector(obj: Union[Detector, type], argv: Optional[Sequence[str]]
                 = None) -> None:
    """Runs a detector (an instance, or a class to make one) as a program:
    reads ``argv`` (default sys.argv[1:]; ``--help`` lists the options),
    runs it and exits 0; a bad command line exits 2 with a message."""
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] \
        else "detector"
    a = _parser(prog).parse_args(argv)
    if a.rounds is not None and a.rounds < 1:
        _parser(prog).error("--rounds must be 1 or more")
    kw = {}
    if a.period is not None:
        kw["period"] = a.period
    if a.window is not None:
        kw["window"] = a.window
    if a.no_restart:
        kw["act"] = False
    try:
        if isinstance(obj, type):
            obj = obj(**kw)
        else:
            for k, v in kw.items():
                if k == "act":
                    obj.act = v
                else:
                    setattr(obj, k, _seconds(v, f"--{k}", 0.05 if k ==
                                             "period" else 0.001, 86400 * 365))
        if a.duration is not None:
            _seconds(a.duration, "--duration", 0.001, 86400 * 365)
    except (TelemError, TypeError) as e:
        _parser(prog).error(str(e))
    try:
        rc = obj.run(rounds=a.rounds, duration=a.duration)
    except TelemError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        rc = 1
    sys.exit(rc)


# ---- ctl -----------------------------------------------------------------------------

def control(name: str, command: str, run_dir: Optional[str] = None) -> dict:
    """Reads or changes a running detector: ``command`` is ``status``,
    ``pause`` or ``resume``.  Returns its state (as the detector last wrote
    it, with ``paused`` as now asked).  Raises TelemNotFound when no
    detector of that name runs, TelemInvalid for another command."""
    if command not in ("status", "pause", "resume"):
        raise make_error(EINVAL, f"{command!r}: status, pause or resume",
                         "detector ctl")
    d = state_dir(name, run_dir)
    try:
        with open(os.path.join(d, "state")) as f:
            st = json.load(f)
    except (OSError, ValueError):
        raise make_error(ENOTFOUND, f"no detector {name!r} runs in "
                         f"{os.path.dirname(os.path.dirname(d))} (no state "
                         f"in {d})", "detector ctl") from None
    flag = os.path.join(d, "paused")
    if command == "pause":
        open(flag, "a").close()
    elif command == "resume" and os.path.exists(flag):
        os.unlink(flag)
    if command != "status":
        st["state"] = "paused" if command == "pause" else "running"
    return st


def _ctl_main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python3 -m telem.detector ctl",
        description="Shows, pauses or resumes a running Python detector "
        "(its state in RUNDIR/detectors/NAME).")
    p.add_argument("--rundir", help="run directory (default: $TELEM_RUNDIR, "
                   "else telem's default)")
    p.add_argument("--json", action="store_true", help="print the raw state")
    p.add_argument("name")
    p.add_argument("command", choices=["status", "pause", "resume"])
    a = p.parse_args(argv)
    try:
        st = control(a.name, a.command, a.rundir)
    except TelemError as e:
        if e.code == EINVAL:
            p.error(str(e))
        print(f"telem.detector ctl: {e}", file=sys.stderr)
        return 1
    if a.json:
        print(json.dumps(st))
    elif a.command == "status":
        print(f"{st['name']}: {st['state']}, pid {st['pid']}, "
              f"{st['rounds']} rounds, {st['events']} events, "
              f"{st['errors']} failed rounds, period {st['period']:g} s, "
              f"window {st['window']:g} s"
              + (f"; last error: {st['last_error']}" if st['last_error']
                 else ""))
    else:
        print(f"{st['name']}: {st['state']}")
    return 0


def _main(argv: Sequence[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python3 -m telem.detector ctl [--rundir DIR] [--json] "
              "NAME status|pause|resume\n\nShows, pauses or resumes a "
              "running Python detector (telem.Detector).")
        return 0 if argv else 2
    if argv[0] != "ctl":
        print(f"python3 -m telem.detector: unknown command {argv[0]!r} "
              "(ctl)\nTry 'python3 -m telem.detector --help'.",
              file=sys.stderr)
        return 2
    return _ctl_main(argv[1:])


__all__ = ["Detector", "Restart", "Warn", "RoundData", "run_detector",
           "control", "state_dir"]

if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
