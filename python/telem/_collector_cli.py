"""The command line of a Python collector (telem.collector): the options,
checks and messages of telem_collector, the device lists of its backends
and its log lines, kept apart from the rounds and the group.

The cpu device list is computed as the C backend computes it
($TELEM_CPU_DEVICES, else the affinity mask, ascending; the model name from
/proc/cpuinfo), so ``--list-devices`` prints the same devices; cuda devices
come from the driver library loaded at run time (``libcuda.so.1`` or
$TELEM_CUDA_LIBRARY), as in the C backend.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import re
import sys
import time
from typing import Any, Callable, Sequence

COLLECTOR_FLAG = "--telem-collector"
# Failed rounds in a row after which a collector gives up (exit 1).
FAILED_ROUNDS_MAX = 10
CPU_SETSIZE = 1024
NS = 1_000_000_000
BACKENDS = ("cpu", "cuda")


# ---- logging (the format of telem's C programs) --------------------------

LEVELS = ("error", "warn", "info", "debug")


class Log:
    def __init__(self, prog: str, level: str = "info") -> None:
        self.prog = os.path.basename(prog)
        self.level = LEVELS.index(level)

    def __call__(self, level: str, msg: str) -> None:
        if LEVELS.index(level) > self.level:
            return
        now = time.time_ns()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now // NS))
        line = (f"{stamp}.{(now % NS) // 1_000_000:03d}Z {self.prog}"
                f"[{os.getpid()}] {level}: {msg}\n")
        os.write(2, line.encode("utf-8", "replace"))


# ---- devices ------------------------------------------------------------

class NoBackend(Exception):
    """A backend that is not present here (exit 3), or a bad device list
    (``usage``: exit 2)."""

    def __init__(self, why: str, usage: bool = False) -> None:
        super().__init__(why)
        self.usage = usage


def parse_list(s: str, top: int) -> list[int]:
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
            cores = parse_list(env, CPU_SETSIZE - 1)
        except ValueError:
            raise NoBackend(f"TELEM_CPU_DEVICES='{env}' is not a list of "
                             "distinct core numbers such as 2,3 or 0-3",
                             usage=True) from None
        for c in cores:
            if c not in allowed:
                raise NoBackend(f"TELEM_CPU_DEVICES names core {c}, which "
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
        raise NoBackend(f"cannot load {path}: {e}") from None
    rc = cu.cuInit(0)
    if rc != 0:
        raise NoBackend(f"cuInit failed (CUDA error {rc}): no usable GPU "
                         "or driver")
    n = ctypes.c_int(0)
    if cu.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value <= 0:
        raise NoBackend("the CUDA driver reports no device")
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


def devices_of(backend: str) -> list[dict[str, Any]]:
    return _cpu_devices() if backend == "cpu" else _cuda_devices()


# ---- the collector's command line ----------------------------------------

class Usage(Exception):
    """A bad command line: exit 2 after the message."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own errors
        raise Usage(message)


def _checker(flag: str, why: str, conv: Callable[[str], Any]) -> Callable:
    def check(v: str) -> Any:
        try:
            return conv(v)
        except (ValueError, OverflowError):
            raise Usage(f"invalid {flag} '{v}': {why}") from None
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
    return round(x * NS)


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


USAGE = """\
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


def parser(prog: str) -> _Parser:
    p = _Parser(prog=prog, add_help=False, allow_abbrev=True)
    add = p.add_argument
    add("-n", "--node", type=_checker("--node", "1-255 bytes, no '/', tab "
                                      "or newline", _node))
    add("-r", "--rundir", type=_checker("--rundir", "unusable", _node_dir))
    add("-b", "--backend", type=_checker("--backend", "cpu or cuda",
                                         _choice(BACKENDS)))
    add("-k", "--kernel")
    add("-d", "--device", type=_checker("--device", "an integer from 0 to "
                                        "65535", _int_in(0, 65535)),
        default=0)
    add("--per-node", action="store_true")
    add("--pin", type=_checker("--pin", "an integer from 0 to 65535",
                               _int_in(0, 65535)), default=-1)
    add("-p", "--period", type=_checker("--period", "seconds, from 0.001 to "
                                        "86400", _seconds), default=NS)
    add("-R", "--reps", type=_checker("--reps", "an integer from 1 to 1000",
                                      _int_in(1, 1000)), default=5)
    add("-e", "--epoch", type=_checker("--epoch", "realtime nanoseconds, "
                                       ">= 0", _int_in(0, 2**63 - 1)),
        default=0)
    add("--phase", type=_checker("--phase", "nanoseconds, >= 0",
                                 _int_in(0, 86400 * NS)), default=0)
    add("--spread", action="store_true")
    add("-g", "--group", type=_checker("--group", "1-255 bytes", _group),
        default="cg")
    add("--rounds", type=_checker("--rounds", "a positive integer",
                                  _int_in(1, 10**15)), default=0)
    add("-L", "--list-devices", action="store_true")
    add("-j", "--json", action="store_true")
    add("-l", "--log-level", type=_checker("--log-level", "one of error, "
                                           "warn, info, debug",
                                           _choice(LEVELS)), default="info")
    add("-h", "--help", action="store_true")
    return p


def _node_dir(v: str) -> str:
    if not v:
        raise ValueError(v)
    return os.path.abspath(v)



def list_devices(a: argparse.Namespace, log: Log) -> int:
    """--list-devices, as telem_collector prints it."""
    out: dict[str, list] = {"backends": [], "unavailable": []}
    found = 0
    if not a.json:
        sys.stdout.write("BACKEND\tDEVICE\tID\tNAME\tBUS\n")
    for b in BACKENDS:
        if a.backend and a.backend != b:
            continue
        try:
            devs = devices_of(b)
        except NoBackend as e:
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
