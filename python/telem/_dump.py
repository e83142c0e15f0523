"""AnalysisClient.dump: a job's telemetry into a dump file.

``ac_dump()`` (analysis/ac/ac_dump.h) needs the store's file writer, which
is not part of libtelem.so, so the dump is written by the ``telem_client
dump`` command of the same installation: the one beside the libtelem this
package loaded (``<prefix>/bin`` or ``<build>/bin``), else the one in
``$TELEM_BIN``, else the first on PATH.  It gets the client's node file
and deadline; the job's key is found as every telem program finds it
(``$TELEM_KEYS``, else ``keys/`` beside the node file).

A dump is what ``telem_view`` serves and exports (docs/telem_view.md).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

from . import _lib
from .errors import EINVAL, EIO, ENOTFOUND, ETIMEDOUT

_NS = 1_000_000_000
# "wrote FILE: 100 series, 360000 points, 400 blocks, ..." (telem_client)
_WROTE = re.compile(r"wrote .*: (\d+) series, (\d+) points?, (\d+) blocks?")
# "... missing from the dump: n2 (why (more)), n3 (why)" (exit 3)
_MISSING = "missing from the dump: "


@dataclass
class DumpResult:
    """What one dump wrote: the file, its series, points and blocks (from
    telem_client's summary line), the summary itself and the nodes that
    did not answer (node -> sentence; the dump holds the others)."""
    path: str
    series: int = 0
    points: int = 0
    blocks: int = 0
    summary: str = ""
    missing: dict = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        """True when some node did not answer."""
        return bool(self.missing)


def find_telem_client() -> str:
    """The telem_client of the libtelem in use (see the module doc)."""
    tried = []
    try:
        libdir = os.path.dirname(os.path.realpath(_lib.library_path()))
    except ImportError:
        libdir = None
    if libdir:
        # <prefix>/lib/libtelem.so.0, or a multiarch <prefix>/lib/<triplet>/
        for up in ("..", os.path.join("..", "..")):
            tried.append(os.path.normpath(os.path.join(libdir, up, "bin")))
    if os.environ.get("TELEM_BIN"):
        tried.append(os.environ["TELEM_BIN"])
    for d in tried:
        p = os.path.join(d, "telem_client")
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    p = shutil.which("telem_client")
    if p:
        return p
    raise _lib.error(ENOTFOUND, "dump", "no telem_client beside libtelem ("
                     + ", ".join(tried) + "), in $TELEM_BIN or on PATH")


def _time_arg(t: Optional[float], what: str) -> Optional[str]:
    """Seconds (since the epoch, or negative: before now) as telem_client's
    time with a unit: positive is absolute, negative relative."""
    if t is None:
        return None
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        raise TypeError(f"dump: {what} must be seconds (a number) or None, "
                        f"not {type(t).__name__}")
    if t != t or t in (float("inf"), float("-inf")):
        raise _lib.error(EINVAL, f"dump: {what}", "not a finite number of "
                         "seconds")
    ns = int(round(t * _NS))
    if ns == 0:
        raise _lib.error(EINVAL, f"dump: {what}", "0 is neither a time nor "
                         "an offset; use None for the default")
    return f"{ns}ns"


def _metric_arg(metrics: Union[str, Sequence[str], None]) -> Optional[str]:
    if metrics is None:
        return None
    if isinstance(metrics, str):
        metrics = [metrics]
    names = []
    for m in metrics:
        if not isinstance(m, str):
            raise TypeError(f"dump: metric names are str, not "
                            f"{type(m).__name__}")
        if not m or any(c in m for c in ",\0\n"):
            raise _lib.error(EINVAL, "dump", f"bad metric name {m!r}")
        names.append(m)
    if not names:
        raise _lib.error(EINVAL, "dump", "an empty metric list (None dumps "
                         "every metric)")
    return ",".join(names)


def _path_arg(path) -> str:
    if isinstance(path, bool) or not isinstance(path, (str, bytes,
                                                        os.PathLike)):
        raise TypeError("dump: path must be a file path")
    p = os.fsdecode(os.fspath(path))
    if not p or "\0" in p:
        raise _lib.error(EINVAL, "dump", f"bad path {p!r}")
    if os.path.lexists(p):
        raise _lib.error(EINVAL, "dump", f"{p} exists: a dump never "
                         "overwrites a file")
    parent = os.path.dirname(os.path.abspath(p))
    if not os.path.isdir(parent):
        raise _lib.error(ENOTFOUND, "dump", f"{parent}: no such directory")
    return os.path.abspath(p)


def run_dump(nodefile: str, timeout_ms: int, path, start=None, end=None,
             metrics=None, rundir=None) -> DumpResult:
    """Runs ``telem_client dump`` (see the module doc); returns its
    :class:`DumpResult` or raises TelemError with its message."""
    out = _path_arg(path)
    argv = [find_telem_client(), "--nodefile", nodefile, "--timeout",
            str(timeout_ms), "dump", "-o", out]
    m = _metric_arg(metrics)
    if m is not None:
        argv.append(m)
    for opt, t in (("--start", _time_arg(start, "start")),
                   ("--end", _time_arg(end, "end"))):
        if t is not None:
            argv += [opt, t]
    if rundir is not None:
        if not isinstance(rundir, (str, bytes, os.PathLike)):
            raise TypeError("dump: rundir must be a directory path or None")
        argv += ["--rundir", os.fsdecode(os.fspath(rundir))]
    # The whole dump is many queries, each with the client's deadline; the
    # bound here only guards against a telem_client that never ends.
    bound = max(60.0, 30 * timeout_ms / 1000.0)
    try:
        r = subprocess.run(argv, capture_output=True, text=True,
                           timeout=bound, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise _lib.error(ETIMEDOUT, "dump", f"telem_client dump did not end "
                         f"within {bound:.0f} s") from None
    err = r.stderr.strip()
    if r.returncode == 2:
        raise _lib.error(EINVAL, "dump", err or "telem_client refused the "
                         "command line")
    if r.returncode not in (0, 3):
        code = ETIMEDOUT if "no node answered" in err else EIO
        raise _lib.error(code, "dump", err or f"telem_client dump exited "
                         f"{r.returncode}")
    res = DumpResult(path=out, summary=r.stdout.strip())
    w = _WROTE.search(r.stdout)
    if w:
        res.series, res.points, res.blocks = (int(x) for x in w.groups())
    if r.returncode == 3:
        for line in err.splitlines():
            if _MISSING in line:
                res.missing.update(_named(line.split(_MISSING, 1)[1]))
        if not res.missing:
            res.missing["?"] = err or "some node did not answer"
    return res


def _named(text: str) -> dict:
    """"n2 (why (detail)), n3 (why)" -> {node: why}; parentheses nest."""
    out, i = {}, 0
    while i < len(text):
        j = text.find(" (", i)
        if j < 0:
            break
        node, depth, k = text[i:j].strip(", "), 0, j + 1
        while k < len(text):
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            if depth == 0:
                break
            k += 1
        out[node] = text[j + 2:k]
        i = k + 1
    return out


__all__ = ["DumpResult", "find_telem_client", "run_dump"]
