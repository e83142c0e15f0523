"""telem: record an application's metrics and sections into telem.

    import telem
    telem.add_data("loss", loss)                       # now, level 1
    telem.add_data("step_time", dt, tags={"phase": "fwd"})
    telem.add_data_batch("latency", np.array([...]))  # float64, one call
    with telem.section("step"):                        # duration + step
        train_step()

    @telem.section("forward")
    def forward(x): ...

Every call is a non-blocking enqueue into libtelem (the same library C
programs link): it never waits for or fails on a missing telemd; samples it
cannot deliver are dropped and counted in :func:`stats`.  Configuration
comes from the environment telem_launch sets (TELEM_LEVEL, TELEM_NODE,
TELEM_RUNDIR, TELEM_INGEST, TELEM_RANK).

Errors: wrong Python types raise TypeError; bad values (an empty or
over-long name, a non-finite value, a reserved tag, a level outside 1-4)
raise :class:`TelemInvalid`, which is both a ValueError and a
:class:`TelemError` with code ``EINVAL``; calls after :func:`finalize`
raise :class:`TelemError` with code ``ESTATE``.

The analysis client (:class:`AnalysisClient`) and the distributed
dictionary (:class:`DDict`), custom collectors (:class:`CollectorGroup`)
and detectors (:class:`Detector`, :class:`Restart`, :class:`Warn`) are
imported on first use.
"""

from __future__ import annotations

from typing import Any

from . import errors
from ._native import (Stats, add_data, add_data_batch, counter_add, describe,
                      finalize, flush, gauge_set, init, level, libtelem_path,
                      section, section_rank, set_level, stats)
from .errors import (TelemError, TelemInvalid, TelemNotFound, TelemTimeout,
                     make_error)

__all__ = [
    "add_data", "add_data_batch", "counter_add", "gauge_set", "describe",
    "flush", "finalize", "init", "level", "set_level", "stats", "Stats",
    "section", "section_rank", "libtelem_path", "TelemError", "TelemInvalid",
    "TelemNotFound", "TelemTimeout", "make_error", "errors",
    "AnalysisClient", "DDict", "CollectorGroup", "Detector", "Restart",
    "Warn",
]

__version__ = "0.1.0"

# name -> module that defines it, imported when first asked for.
_LAZY = {"AnalysisClient": "analysis", "DDict": "ddict",
         "CollectorGroup": "collector", "Detector": "detector",
         "Restart": "detector", "Warn": "detector"}


def __getattr__(name: str) -> Any:
    """Imports the analysis client and the dictionary on first use."""
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'telem' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, the lazily imported ones included."""
    return sorted(set(globals()) | set(_LAZY))
