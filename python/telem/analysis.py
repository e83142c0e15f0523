"""The analysis client: one query to every node of a job, one deadline.

:class:`AnalysisClient` wraps libtelem's analysis client (ac.h) with the
names Dragon's telemetry users look for (``get_data``).  A call asks every
selected node at once and returns what came before its deadline: series,
plus the nodes that did not answer and why.  One dead node never hangs a
call.

Under telem_launch ``AnalysisClient()`` finds the job by itself, as
``ac_connect(NULL, ...)`` does: ``$TELEM_NODEFILE``, else
``<rundir>/nodes`` (``$TELEM_RUNDIR`` or the default run directory).
"""

from __future__ import annotations

import ctypes
import json
import os
from ctypes import byref, c_char_p, c_int, c_size_t, c_void_p
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence, Union

from . import _lib
from .errors import (EINVAL, ENOTFOUND, EPARTIAL, ETIMEDOUT, EUNSUPPORTED,
                     TelemError)

try:
    import numpy as _np
except ImportError:  # the package works without numpy: arrays are array.array
    _np = None
    import array as _array

_NS = 1_000_000_000


@dataclass
class Missing:
    """A node that did not answer, or answered with an error."""
    code: int
    sentence: str

    def __str__(self) -> str:
        return f"{self.sentence} (telem error {self.code})"


@dataclass
class Series:
    """One series of an answer: its node, metric, tags (``host``
    included) and points.  ``times`` are seconds since the epoch (float64),
    ``times_ns`` the same instants in int64 nanoseconds, ``values``
    float64; numpy arrays when numpy is importable, else array.array."""
    node: str
    metric: str
    tags: dict
    times_ns: Any
    values: Any
    unit: str = ""
    type: str = "gauge"

    @property
    def times(self) -> Any:
        """Seconds since the epoch, float64."""
        if _np is not None:
            return self.times_ns / 1e9
        return _array.array("d", (t / 1e9 for t in self.times_ns))

    def __len__(self) -> int:
        return len(self.values)


@dataclass
class QueryResult:
    """What a call gathered: ``series`` (sorted by metric, tags, node),
    ``missing`` (node name -> :class:`Missing`) and ``truncated`` (the
    number of nodes whose reply was cut to the size limit)."""
    series: list = field(default_factory=list)
    missing: dict = field(default_factory=dict)
    truncated: int = 0

    @property
    def partial(self) -> bool:
        """True when some node is missing."""
        return bool(self.missing)


@dataclass
class MetricInfo:
    """One entry of the metric catalog (a series without points)."""
    node: str
    metric: str
    tags: dict
    type: str
    unit: str
    doc: str


@dataclass
class StatusResult:
    """Each node's status (node -> dict of telem_status_t's fields) and
    the nodes that did not answer (node -> :class:`Missing`)."""
    nodes: dict = field(default_factory=dict)
    missing: dict = field(default_factory=dict)


def _ns_of(t: Optional[float], what: str) -> int:
    """Seconds (absolute since the epoch, or negative = before now) into
    ac_query_t's nanoseconds; None is the default (0)."""
    if t is None:
        return 0
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        raise TypeError(f"{what} must be seconds (a number) or None, not "
                        f"{type(t).__name__}")
    if t != t or t in (float("inf"), float("-inf")):
        raise _lib.error(EINVAL, what, "not a finite number of seconds")
    ns = int(round(t * _NS))
    if ns == 0:
        raise _lib.error(EINVAL, what, "0 is neither a time nor an offset; "
                         "use None for the default")
    return ns


def _names(x: Union[str, Iterable[str], None], what: str) -> list:
    if x is None:
        return []
    if isinstance(x, (str, bytes)):
        x = [x]
    out = []
    for n in x:
        if isinstance(n, bytes):
            n = n.decode("utf-8")
        if not isinstance(n, str):
            raise TypeError(f"{what}: names are str, not {type(n).__name__}")
        if not n or "\0" in n:
            raise _lib.error(EINVAL, what, f"bad name {n!r}")
        out.append(n.encode("utf-8"))
    return out


def _c_strings(names: list):
    arr = (c_char_p * max(1, len(names)))(*names)
    return arr


def _tags_of(s: _lib.SeriesC) -> dict:
    return {_lib.text(s.tags[i].key): _lib.text(s.tags[i].value)
            for i in range(s.ntags)}


def _points(addr: Optional[int], n: int, code: str):
    """A copy of n int64 ('q') or double ('d') points at addr."""
    if _np is not None:
        dt = _np.int64 if code == "q" else _np.float64
        if not n or not addr:
            return _np.empty(0, dtype=dt)
        buf = (ctypes.c_char * (8 * n)).from_address(addr)
        return _np.frombuffer(buf, dtype=dt).copy()
    a = _array.array(code)
    if n and addr:
        a.frombytes(ctypes.string_at(addr, 8 * n))
    return a


def _missing_of(r, fn_n, fn_name, fn_code, fn_msg) -> dict:
    out = {}
    for i in range(fn_n(r)):
        name = fn_name(r, i)
        code = fn_code(r, i)
        if code:
            out[_lib.text(name)] = Missing(code, _lib.text(fn_msg(r, i)))
    return out


class AnalysisClient(_lib.Handle):
    """A connection to every telemd of a job.

    ``nodefile`` None takes the job's (``$TELEM_NODEFILE``, else
    ``<rundir>/nodes``); ``timeout`` is each call's deadline in seconds
    (None: libtelem's 2 s).  Connecting waits for no node.  Use it as a
    context manager or call :meth:`close`; a closed client raises
    TelemError(ESTATE)."""

    _HANDLE, _WHAT = "_ac", "AnalysisClient"

    def __init__(self, nodefile: Optional[str] = None,
                 timeout: Optional[float] = None) -> None:
        """Reads the node file and connects to every node listed."""
        self._ac: Optional[int] = None
        if nodefile is not None and not isinstance(nodefile, (str, bytes,
                                                              os.PathLike)):
            raise TypeError("nodefile must be a path or None")
        self._timeout_ms = _lib.ms(timeout) \
            if timeout is not None else _lib.AC_TIMEOUT_DEFAULT_MS
        L = _lib.lib()
        path = os.fsencode(nodefile) if nodefile is not None else None
        err = c_int(0)
        h = L.ac_connect(path, self._timeout_ms, byref(err))
        if not h:
            why = ctypes.create_string_buffer(512)
            L.ac_nodefile_check(path, None, why, len(why))
            raise _lib.error(err.value or ENOTFOUND, "AnalysisClient",
                             _lib.text(why.value) or None)
        self._ac = h
        self._nodefile = self._nodefile_of(nodefile)

    @staticmethod
    def _nodefile_of(nodefile) -> str:
        """The node file ac_connect read: the one given, else
        ``$TELEM_NODEFILE``, else ``<rundir>/nodes``."""
        if nodefile is not None:
            return os.path.abspath(os.fsdecode(nodefile))
        if os.environ.get("TELEM_NODEFILE"):
            return os.path.abspath(os.environ["TELEM_NODEFILE"])
        rundir = os.environ.get("TELEM_RUNDIR")
        if not rundir:
            buf = ctypes.create_string_buffer(1024)
            _lib.check(_lib.lib().telem_rundir_default(buf, len(buf)),
                       "AnalysisClient: run directory")
            rundir = buf.value.decode()
        return os.path.join(os.path.abspath(rundir), "nodes")

    # ---- life cycle -------------------------------------------------------

    def close(self) -> None:
        """Closes every connection; calling it again does nothing."""
        if getattr(self, "_ac", None):
            h = c_void_p(self._ac)
            self._ac = None
            _lib.lib().ac_close(byref(h))

    @property
    def timeout(self) -> float:
        """Each call's deadline, seconds."""
        return self._timeout_ms / 1000.0

    @property
    def nodes(self) -> list:
        """The job's node names, in node file order."""
        h, L = self._h("nodes"), _lib.lib()
        return [_lib.text(L.ac_node_name(h, i))
                for i in range(L.ac_node_count(h))]

    # ---- queries ----------------------------------------------------------

    def get_data(self, metrics: Union[str, Sequence[str], None],
                 tags: Optional[dict] = None, start: Optional[float] = None,
                 end: Optional[float] = None,
                 nodes: Optional[Sequence[str]] = None,
                 max_points: int = 0, latest: bool = False,
                 timeout: Optional[float] = None) -> QueryResult:
        """The points of ``metrics`` (a name, a list of names, or None for
        every metric) on every node (or only ``nodes``).

        ``tags``: exact filters {key: value}; value "*" means the key is
        present.  ``start``/``end``: seconds since the epoch, or negative
        seconds relative to now (``start=-60``: the last minute), as
        ac_query_t takes them; None is the default (start: the last 300 s,
        end: each node's now).  ``max_points`` keeps the newest points of
        each series (0: all); ``latest`` asks for each series' newest point
        only.  Returns a :class:`QueryResult` that names the nodes that did
        not answer; raises TelemError when no node answered at all
        (TelemTimeout) or every answer was an error."""
        h = self._h("get_data")
        q = _lib.QueryC()
        keep = []
        ms = _names(metrics, "get_data: metrics")
        if len(ms) > _lib.TELEM_QUERY_METRICS_MAX:
            raise _lib.error(-5, "get_data", f"{len(ms)} metrics, at most "
                             f"{_lib.TELEM_QUERY_METRICS_MAX}")
        if ms:
            keep.append(_c_strings(ms))
            q.metrics, q.nmetrics = keep[-1], len(ms)
        if tags is not None:
            if not isinstance(tags, dict):
                raise TypeError("get_data: tags must be a dict")
            kv = [(k.encode("utf-8"), v.encode("utf-8"))
                  for k, v in self._tag_items(tags)]
            arr = (_lib.TagC * max(1, len(kv)))(*kv)
            keep.append(arr)
            q.tags, q.ntags = arr, len(kv)
        q.start_ns = _ns_of(start, "get_data: start")
        q.end_ns = _ns_of(end, "get_data: end")
        if isinstance(max_points, bool) or not isinstance(max_points, int) \
                or not 0 <= max_points < 2 ** 32:
            raise TypeError("get_data: max_points must be an int >= 0")
        q.max_points = max_points
        q.flags = _lib.TELEM_QUERY_LATEST if latest else 0
        self._select(q, nodes, keep, "get_data")
        q.timeout_ms = _lib.ms(timeout) if timeout else 0
        return self._query(h, lambda L, out: L.ac_query(h, byref(q), out),
                           "get_data", points=True)

    @staticmethod
    def _tag_items(tags: dict) -> list:
        out = []
        for k, v in tags.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("get_data: tag keys and values are str")
            if not k or "\0" in k or "\0" in v:
                raise _lib.error(EINVAL, "get_data", f"bad tag {k!r}={v!r}")
            out.append((k, v))
        return out

    def _select(self, q, nodes, keep, what: str) -> None:
        if nodes is None:
            return
        ns = _names(nodes, f"{what}: nodes")
        if not ns:
            raise _lib.error(EINVAL, what, "an empty node list")
        keep.append(_c_strings(ns))
        q.nodes, q.nnodes = keep[-1], len(ns)

    def _query(self, h, call, what: str, points: bool) -> QueryResult:
        L = _lib.lib()
        out = c_void_p()
        rc = call(L, byref(out))
        if not out:
            raise _lib.error(rc, what)
        try:
            res = QueryResult(
                missing=_missing_of(out, L.ac_result_nmissing,
                                    L.ac_result_missing,
                                    L.ac_result_missing_code,
                                    L.ac_result_missing_message),
                truncated=L.ac_result_ntruncated(out))
            if rc not in (0, EPARTIAL):
                detail = "; ".join(f"{n}: {m}"
                                   for n, m in res.missing.items())
                raise _lib.error(rc, what, detail or None)
            for i in range(L.ac_result_nseries(out)):
                s = L.ac_result_series(out, i).contents
                node = _lib.text(L.ac_result_series_node(out, i))
                if points:
                    res.series.append(Series(
                        node=node, metric=_lib.text(s.metric),
                        tags=_tags_of(s),
                        times_ns=_points(s.ts, s.npoints, "q"),
                        values=_points(s.values, s.npoints, "d"),
                        unit=_lib.text(s.unit),
                        type="counter" if s.type == 1 else "gauge"))
                else:
                    res.series.append(MetricInfo(
                        node=node, metric=_lib.text(s.metric),
                        tags=_tags_of(s),
                        type="counter" if s.type == 1 else "gauge",
                        unit=_lib.text(s.unit), doc=_lib.text(s.doc)))
            return res
        finally:
            L.ac_result_destroy(byref(out))

    def get_metrics(self) -> QueryResult:
        """The metric catalog of every node: a :class:`QueryResult` whose
        ``series`` are :class:`MetricInfo` (metric, node, tags, type, unit,
        doc) and whose ``missing`` names the nodes that did not answer."""
        h = self._h("get_metrics")
        return self._query(h, lambda L, out: L.ac_metrics(h, out),
                           "get_metrics", points=False)

    def metric_names(self) -> list:
        """The sorted names of every metric any node holds."""
        return sorted({m.metric for m in self.get_metrics().series})

    # ---- status and snapshots ---------------------------------------------

    def _node_index(self, node: Optional[str], what: str) -> int:
        h = self._h(what)
        if node is None:
            return -1
        if not isinstance(node, str):
            raise TypeError(f"{what}: node must be a name (str) or None")
        i = _lib.lib().ac_node_find(h, node.encode("utf-8"))
        if i < 0:
            raise _lib.error(ENOTFOUND, what, f"no node {node!r} in the "
                             "node file")
        return i

    def status(self, node: Optional[str] = None,
               timeout: Optional[float] = None) -> StatusResult:
        """Each node's telemd status (telem_status_t's fields as a dict),
        for every node or only ``node``; nodes that did not answer are in
        ``missing``.  Raises when none answered."""
        i = self._node_index(node, "status")
        h, L = self._h("status"), _lib.lib()
        out = c_void_p()
        tmo = _lib.ms(timeout) if timeout else 0
        rc = L.ac_control(h, i, _lib.TELEM_CTL_STATUS, 0, tmo, byref(out))
        if not out:
            raise _lib.error(rc, "status")
        try:
            res = StatusResult(missing=_missing_of(
                out, L.ac_status_result_count, L.ac_status_result_node,
                L.ac_status_result_code, L.ac_status_result_message))
            if rc not in (0, EPARTIAL):
                raise _lib.error(rc, "status", "; ".join(
                    f"{n}: {m}" for n, m in res.missing.items()) or None)
            for j in range(L.ac_status_result_count(out)):
                p = L.ac_status_result_status(out, j)
                if not p:
                    continue
                st = p.contents
                d = {name: getattr(st, name) for name, _ in st._fields_}
                d["node"] = _lib.text(st.node)
                res.nodes[_lib.text(L.ac_status_result_node(out, j))] = d
            return res
        finally:
            L.ac_status_result_destroy(byref(out))

    def snapshot(self, node: Optional[str] = None,
                 timeout: Optional[float] = None) -> dict:
        """The system snapshot each telemd took at start (parsed JSON,
        docs/protocol.md "sysinfo"): {node: dict} for ``node`` or for every
        node.  Nodes that did not answer are left out when others did
        (see :meth:`snapshot_result`); raises when none answered."""
        return self.snapshot_result(node, timeout)[0]

    def snapshot_result(self, node: Optional[str] = None,
                        timeout: Optional[float] = None) -> tuple:
        """(snapshots {node: dict}, missing {node: Missing})."""
        i = self._node_index(node, "snapshot")
        h, L = self._h("snapshot"), _lib.lib()
        out = c_void_p()
        tmo = _lib.ms(timeout) if timeout else 0
        rc = L.ac_snapshot(h, i, tmo, byref(out))
        if not out:
            raise _lib.error(rc, "snapshot")
        try:
            missing = _missing_of(out, L.ac_snapshot_result_count,
                                  L.ac_snapshot_result_node,
                                  L.ac_snapshot_result_code,
                                  L.ac_snapshot_result_message)
            if rc not in (0, EPARTIAL):
                raise _lib.error(rc, "snapshot", "; ".join(
                    f"{n}: {m}" for n, m in missing.items()) or None)
            snaps = {}
            for j in range(L.ac_snapshot_result_count(out)):
                n = c_size_t(0)
                p = L.ac_snapshot_result_json(out, j, byref(n))
                if p:
                    raw = ctypes.string_at(p, n.value)
                    snaps[_lib.text(L.ac_snapshot_result_node(out, j))] = \
                        json.loads(raw.decode("utf-8"))
            return snaps, missing
        finally:
            L.ac_snapshot_result_destroy(byref(out))

    # ---- dumps ------------------------------------------------------------

    def dump(self, path, start: Optional[float] = None,
             end: Optional[float] = None,
             metrics: Union[str, Sequence[str], None] = None,
             rundir=None):
        """Writes the job's telemetry into the dump file ``path`` (a new
        file, mode 0600; an existing one is never overwritten), which
        ``telem_view`` serves and exports.  ``start``/``end`` as for
        :meth:`get_data` (None: everything the nodes keep, up to now);
        ``metrics`` a name, a list of names or None for every metric;
        ``rundir`` adds the job's detector events and restarts.

        Runs ``telem_client dump`` beside the libtelem in use (see
        telem._dump) with this client's node file and deadline.  Returns a
        ``DumpResult`` (series, points, blocks, ``missing`` nodes: a dump
        of the nodes that answered); raises TelemError with telem_client's
        message when nothing could be dumped or the file not written."""
        self._h("dump")
        from . import _dump
        return _dump.run_dump(self._nodefile, self._timeout_ms, path,
                              start, end, metrics, rundir)

    # ---- restart ----------------------------------------------------------

    def reboot(self, exclude_hostnames: Sequence[str],
               reason: str = "asked for by AnalysisClient.reboot",
               endpoint: Optional[str] = None,
               timeout: Optional[float] = None,
               detector: Union[str, Sequence[str], None] = None) -> str:
        """Asks the job's launcher to restart the job without the nodes
        ``exclude_hostnames`` (Dragon's name), through the launcher's
        restart socket, as telem_watch and telem_agg's /api/reboot do.

        ``endpoint`` None takes ``$TELEM_LAUNCH_ENDPOINT``, else
        ``ipc://<rundir>/launch/restart.sock``; a ``tcp://`` one (the
        launcher's under Slurm and templates) is CURVE with the job's key
        (``$TELEM_KEYS``, else ``keys/`` beside the node file or in the
        run directory; TelemError EPERM without one).  ``detector`` names who
        asks (a name or a list of names; None: ``python``): the launcher's
        restart line gives them, joined with ``+``, as its trigger.
        Returns the launcher's
        sentence when it accepted; raises TelemError with its code when it
        refused, TelemTimeout when no launcher answered in time."""
        self._h("reboot")
        names = _names(exclude_hostnames, "reboot: exclude_hostnames")
        if not names:
            raise _lib.error(EINVAL, "reboot", "name at least one node")
        if not isinstance(reason, str):
            raise TypeError("reboot: reason must be str")
        ep = endpoint or os.environ.get("TELEM_LAUNCH_ENDPOINT") \
            or self._default_launch_ep()
        if not ep.startswith(("ipc://", "tcp://")):
            raise _lib.error(EUNSUPPORTED, "reboot", f"{ep}: the launcher "
                             "listens on ipc:// and tcp:// endpoints")
        tmo = _lib.ms(timeout) if timeout else self._timeout_ms
        dets = _names(detector, "reboot: detector") or None
        code, msg = _lib.ask_launcher(ep, names, reason, tmo, dets)
        if code:
            raise _lib.error(code, "reboot", msg or None)
        return msg

    @staticmethod
    def _default_launch_ep() -> str:
        rundir = os.environ.get("TELEM_RUNDIR")
        if not rundir:
            buf = ctypes.create_string_buffer(1024)
            _lib.check(_lib.lib().telem_rundir_default(buf, len(buf)),
                       "reboot: run directory")
            rundir = buf.value.decode()
        return f"ipc://{os.path.abspath(rundir)}/launch/restart.sock"


__all__ = ["AnalysisClient", "QueryResult", "Series", "MetricInfo",
           "StatusResult", "Missing"]
