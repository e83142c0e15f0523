"""libtelem.so through ctypes: the loader and the C prototypes.

The analysis client (ac.h) and the dictionary client (ddict.h) are used
from Python through ctypes over the same libtelem.so that the compiled
extension ``telem._native`` is linked against, so both halves of the
package share one library instance.  The library is found, in order:

1. ``$TELEM_LIBTELEM``, when set: that file;
2. ``telem._native.libtelem_path()``, when the extension imports;
3. relative to the package, ``../../lib/libtelem.so.0`` (the build tree's
   ``<builddir>/python/telem`` layout);
4. the dynamic linker's search for the soname ``libtelem.so.0``.

The structures mirror telem_types.h, ac.h and telem_proto_watch.h field
for field; a change of those headers must be made here too (the tests
exercise every one of them against the real daemons).
"""

from __future__ import annotations

import ctypes
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, Union, byref, c_char,
                    c_char_p,
                    c_double, c_int, c_int32, c_int64, c_long, c_size_t,
                    c_uint32, c_uint64, c_void_p)
from typing import Optional

from .errors import EINVAL, ESTATE, TelemError, make_error

# ---- telem_types.h ---------------------------------------------------------

TELEM_NAME_MAX = 255
TELEM_TAGS_MAX = 16
TELEM_QUERY_METRICS_MAX = 256
TELEM_QUERY_LIST = 1 << 0
TELEM_QUERY_LATEST = 1 << 1
TELEM_CTL_STATUS = 1

# ---- ac.h -------------------------------------------------------------------

AC_TIMEOUT_DEFAULT_MS = 2000

# ---- ddict.h ----------------------------------------------------------------

DDICT_VALUE_LIMIT = 256 << 20
DDICT_NS_LIMIT = 200
DDICT_TIMEOUT_DEFAULT_MS = 10000

# ---- telem_proto_watch.h ----------------------------------------------------

TELEM_MSG_RESTART_ACK = 10
# Bytes reserved for one decoded telem_msg_t (192 bytes on x86-64 today):
# the decoder writes the whole struct, so this leaves a wide margin.
_MSG_BYTES = 4096


class TagC(Structure):
    """telem_tag_t."""
    _fields_ = [("key", c_char_p), ("value", c_char_p)]


class SeriesC(Structure):
    """telem_series_t."""
    _fields_ = [("metric", c_char_p), ("tags", POINTER(TagC)),
                ("ntags", c_uint32), ("type", c_int), ("unit", c_char_p),
                ("doc", c_char_p), ("ts", c_void_p), ("values", c_void_p),
                ("npoints", c_uint32)]


class StatusC(Structure):
    """telem_status_t."""
    _fields_ = [("node", c_char_p), ("pid", c_int64), ("level", c_int32),
                ("window_ns", c_int64), ("interval_ns", c_int64),
                ("uptime_ns", c_int64), ("nseries", c_uint64),
                ("npoints", c_uint64), ("mem_bytes", c_uint64),
                ("mem_cap_bytes", c_uint64), ("ingested", c_uint64),
                ("dropped", c_uint64), ("bad_messages", c_uint64),
                ("push_refused", c_uint64), ("log_bytes", c_uint64),
                ("log_segments", c_uint64), ("flushes", c_uint64),
                ("last_flush_ns", c_int64), ("flush_errors", c_uint64),
                ("denied", c_uint64), ("refused_peers", c_uint64)]


class QueryC(Structure):
    """ac_query_t."""
    _fields_ = [("metrics", POINTER(c_char_p)), ("nmetrics", c_size_t),
                ("tags", POINTER(TagC)), ("ntags", c_size_t),
                ("start_ns", c_int64), ("end_ns", c_int64),
                ("max_points", c_uint32), ("flags", c_uint32),
                ("nodes", POINTER(c_char_p)), ("nnodes", c_size_t),
                ("timeout_ms", c_int)]


class RestartC(Structure):
    """telem_restart_t."""
    _fields_ = [("id", c_uint64), ("ts_ns", c_int64), ("reason", c_char_p),
                ("exclude", POINTER(c_char_p)), ("nexclude", c_uint32),
                ("devices", c_void_p), ("ndevices", c_uint32),
                ("detectors", POINTER(c_char_p)), ("ndetectors", c_uint32)]


class RestartAckC(Structure):
    """telem_restart_ack_t."""
    _fields_ = [("id", c_uint64), ("code", c_int32), ("message", c_char_p)]


class _MsgUnion(Union):
    _fields_ = [("restart_ack", RestartAckC),
                ("_room", c_char * (_MSG_BYTES - 8))]


class MsgC(Structure):
    """telem_msg_t: the type and the one member of its union read here."""
    _fields_ = [("type", c_int), ("u", _MsgUnion)]


KEY_FN = CFUNCTYPE(c_int, c_void_p, c_void_p, c_size_t)


def _proto(lib: ctypes.CDLL, name: str, restype, argtypes) -> None:
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = argtypes


_AC = [
    ("ac_connect", c_void_p, [c_char_p, c_int, POINTER(c_int)]),
    ("ac_close", None, [POINTER(c_void_p)]),
    ("ac_nodefile_check", c_int, [c_char_p, POINTER(c_size_t), c_char_p,
                                  c_size_t]),
    ("ac_node_count", c_size_t, [c_void_p]),
    ("ac_node_name", c_char_p, [c_void_p, c_size_t]),
    ("ac_node_find", c_long, [c_void_p, c_char_p]),
    ("ac_query", c_int, [c_void_p, POINTER(QueryC), POINTER(c_void_p)]),
    ("ac_metrics", c_int, [c_void_p, POINTER(c_void_p)]),
    ("ac_result_nseries", c_size_t, [c_void_p]),
    ("ac_result_series", POINTER(SeriesC), [c_void_p, c_size_t]),
    ("ac_result_series_node", c_char_p, [c_void_p, c_size_t]),
    ("ac_result_ntruncated", c_size_t, [c_void_p]),
    ("ac_result_nmissing", c_size_t, [c_void_p]),
    ("ac_result_missing", c_char_p, [c_void_p, c_size_t]),
    ("ac_result_missing_code", c_int, [c_void_p, c_size_t]),
    ("ac_result_missing_message", c_char_p, [c_void_p, c_size_t]),
    ("ac_result_destroy", None, [POINTER(c_void_p)]),
    ("ac_control", c_int, [c_void_p, c_long, c_int, c_int64, c_int,
                           POINTER(c_void_p)]),
    ("ac_status_result_count", c_size_t, [c_void_p]),
    ("ac_status_result_node", c_char_p, [c_void_p, c_size_t]),
    ("ac_status_result_status", POINTER(StatusC), [c_void_p, c_size_t]),
    ("ac_status_result_code", c_int, [c_void_p, c_size_t]),
    ("ac_status_result_message", c_char_p, [c_void_p, c_size_t]),
    ("ac_status_result_destroy", None, [POINTER(c_void_p)]),
    ("ac_snapshot", c_int, [c_void_p, c_long, c_int, POINTER(c_void_p)]),
    ("ac_snapshot_result_count", c_size_t, [c_void_p]),
    ("ac_snapshot_result_node", c_char_p, [c_void_p, c_size_t]),
    ("ac_snapshot_result_json", c_void_p, [c_void_p, c_size_t,
                                           POINTER(c_size_t)]),
    ("ac_snapshot_result_code", c_int, [c_void_p, c_size_t]),
    ("ac_snapshot_result_message", c_char_p, [c_void_p, c_size_t]),
    ("ac_snapshot_result_destroy", None, [POINTER(c_void_p)]),
]

_DDICT = [
    ("ddict_open", c_void_p, [c_char_p, c_char_p, c_int64, POINTER(c_int)]),
    ("ddict_close", None, [POINTER(c_void_p)]),
    ("ddict_set_timeout", None, [c_void_p, c_int64]),
    ("ddict_put", c_int, [c_void_p, c_void_p, c_size_t, c_void_p, c_size_t,
                          POINTER(c_uint64)]),
    ("ddict_cas", c_int, [c_void_p, c_void_p, c_size_t, c_void_p, c_size_t,
                          c_uint64, POINTER(c_uint64)]),
    ("ddict_get", c_int, [c_void_p, c_void_p, c_size_t, POINTER(c_void_p),
                          POINTER(c_size_t), POINTER(c_uint64)]),
    ("ddict_get_into", c_int, [c_void_p, c_void_p, c_size_t, c_void_p,
                               c_size_t, POINTER(c_size_t),
                               POINTER(c_uint64)]),
    ("ddict_del", c_int, [c_void_p, c_void_p, c_size_t]),
    ("ddict_len", c_int, [c_void_p, POINTER(c_uint64)]),
    ("ddict_keys", c_int, [c_void_p, KEY_FN, c_void_p]),
    ("ddict_event_set", c_int, [c_void_p, c_char_p]),
    ("ddict_event_is_set", c_int, [c_void_p, c_char_p]),
    ("ddict_event_wait", c_int, [c_void_p, c_char_p, c_int64]),
    ("ddict_event_clear", c_int, [c_void_p, c_char_p]),
    ("ddict_checkpoint", c_int, [c_void_p, c_uint64]),
    ("ddict_restore", c_int, [c_void_p, POINTER(c_uint64)]),
    ("ddict_batch_new", c_void_p, []),
    ("ddict_batch_destroy", None, [POINTER(c_void_p)]),
    ("ddict_batch_put", c_int, [c_void_p, c_void_p, c_size_t, c_void_p,
                                c_size_t]),
    ("ddict_batch_get", c_int, [c_void_p, c_void_p, c_size_t]),
    ("ddict_batch_get_into", c_int, [c_void_p, c_void_p, c_size_t, c_void_p,
                                     c_size_t]),
    ("ddict_batch_del", c_int, [c_void_p, c_void_p, c_size_t]),
    ("ddict_batch_size", c_size_t, [c_void_p]),
    ("ddict_batch_exec", c_int, [c_void_p, c_void_p]),
    ("ddict_batch_result", c_int, [c_void_p, c_size_t, POINTER(c_void_p),
                                   POINTER(c_size_t), POINTER(c_uint64)]),
]

_MISC = [
    ("telem_strerror", c_char_p, [c_int]),
    ("telem_proto_encoder_new", c_void_p, []),
    ("telem_proto_encoder_destroy", None, [POINTER(c_void_p)]),
    ("telem_proto_decoder_new", c_void_p, []),
    ("telem_proto_decoder_destroy", None, [POINTER(c_void_p)]),
    ("telem_proto_encode_restart", c_int, [c_void_p, POINTER(RestartC),
                                           POINTER(c_void_p),
                                           POINTER(c_size_t)]),
    ("telem_proto_decode", c_int, [c_void_p, c_void_p, c_size_t,
                                   POINTER(MsgC)]),
    ("telem_rundir_default", c_int, [c_char_p, c_size_t]),
    ("telem_keys_find", c_int, [c_char_p, c_char_p, POINTER(c_void_p),
                                c_char_p, c_size_t]),
    ("telem_keys_apply_client", c_int, [c_void_p, c_void_p]),
    ("telem_keys_destroy", None, [POINTER(c_void_p)]),
]


def _candidates() -> list[str]:
    """The library files to try, in the order the module docstring gives."""
    env = os.environ.get("TELEM_LIBTELEM")
    if env:
        return [env]
    out = []
    try:
        from . import _native  # type: ignore[attr-defined]
        out.append(_native.libtelem_path())
    except (ImportError, AttributeError, OSError):
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    out.append(os.path.normpath(os.path.join(here, "..", "..", "lib",
                                             "libtelem.so.0")))
    out.append("libtelem.so.0")
    return out


def _open() -> ctypes.CDLL:
    errors = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            errors.append(f"{path}: no such file")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
            continue
        for name, restype, argtypes in _AC + _DDICT + _MISC:
            _proto(lib, name, restype, argtypes)
        lib.telem_path = path
        return lib
    raise ImportError("libtelem.so.0 could not be loaded ("
                      + "; ".join(errors) + "); set TELEM_LIBTELEM to its "
                      "path")


_LIB: Optional[ctypes.CDLL] = None
_LIBC: Optional[ctypes.CDLL] = None


def lib() -> ctypes.CDLL:
    """libtelem.so with its prototypes set (loaded on first use)."""
    global _LIB
    if _LIB is None:
        _LIB = _open()
    return _LIB


def libc() -> ctypes.CDLL:
    """The C library, for free() of buffers libtelem hands over."""
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None)
        _LIBC.free.restype = None
        _LIBC.free.argtypes = [c_void_p]
    return _LIBC


def library_path() -> str:
    """The path of the libtelem.so this package uses."""
    return lib().telem_path


def strerror(code: int) -> str:
    """libtelem's sentence for an error code (telem_strerror)."""
    s = lib().telem_strerror(int(code))
    return s.decode("utf-8", "replace") if s else f"error {code}"


def error(code: int, what: Optional[str] = None,
          detail: Optional[str] = None) -> TelemError:
    """The exception for ``code``: telem's sentence, with an optional
    detail appended after a colon."""
    sentence = strerror(code)
    if detail:
        sentence = f"{sentence}: {detail}"
    return make_error(code, sentence, what)


def check(rc: int, what: str) -> int:
    """Raises the exception for a negative ``rc``; returns ``rc`` otherwise."""
    if rc < 0:
        raise error(rc, what)
    return rc


def closed(what: str) -> TelemError:
    """The error of a call on a closed handle (TELEM_ESTATE)."""
    return error(ESTATE, what, "the handle is closed")


def ms(t: float, what: str = "timeout") -> int:
    """A deadline given in seconds as whole milliseconds (at least 1):
    TypeError for a non-number, TelemInvalid outside (0, 1 year]."""
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        raise TypeError(f"{what} must be seconds (a number)")
    if not t > 0 or t > 86400 * 365:
        raise error(EINVAL, what, "must be a positive number of seconds")
    return max(1, int(round(t * 1000)))


class Handle:
    """What the Python objects over a C handle share: ``with`` closes them,
    so does garbage collection, and a call on a closed one raises
    TelemError(ESTATE).  A subclass names the attribute that holds its
    main C handle (``_HANDLE``) and says what it is (``_WHAT``), and
    defines ``close()``, which may be called more than once."""

    _HANDLE = "_h_"
    _WHAT = "handle"

    def close(self) -> None:  # pragma: no cover - every subclass has one
        raise NotImplementedError

    def __enter__(self):
        self._h(self._WHAT)
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _h(self, what: str) -> int:
        h = getattr(self, self._HANDLE, None)
        if not h:
            raise closed(what)
        return h

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return not getattr(self, self._HANDLE, None)


def text(b: Optional[bytes]) -> str:
    """A C string from the library as str ("" for NULL)."""
    return b.decode("utf-8", "replace") if b else ""


__all__ = ["lib", "libc", "library_path", "strerror", "error", "check",
           "closed", "text", "TagC", "SeriesC", "StatusC", "QueryC",
           "RestartC", "MsgC", "KEY_FN", "c_double"]


# ---- the launcher's restart socket (telem_proto_watch.h) -------------------
#
# libtelem.so exports the codec (telem_proto_encode_restart and the
# decoder) but no call that sends a restart request, so the request goes
# through libzmq, the library libtelem itself is linked against: a DEALER
# to the launcher's ROUTER, one frame each way, the ack matched by id.

_ZMQ_DEALER = 5
_ZMQ_LINGER = 17
_ZMQ_DONTWAIT = 1
_ZMQ_POLLIN = 1
_EINTR = 4
_ZMQ: Optional[ctypes.CDLL] = None


class _PollItem(Structure):
    _fields_ = [("socket", c_void_p), ("fd", c_int), ("events", ctypes.c_short),
                ("revents", ctypes.c_short)]


def _zmq() -> ctypes.CDLL:
    global _ZMQ
    if _ZMQ is None:
        lib()               # libtelem first: its libzmq is the one found
        z = ctypes.CDLL("libzmq.so.5", use_errno=True)
        for name, res, args in [
                ("zmq_ctx_new", c_void_p, []),
                ("zmq_ctx_term", c_int, [c_void_p]),
                ("zmq_socket", c_void_p, [c_void_p, c_int]),
                ("zmq_close", c_int, [c_void_p]),
                ("zmq_setsockopt", c_int, [c_void_p, c_int, c_void_p,
                                           c_size_t]),
                ("zmq_connect", c_int, [c_void_p, c_char_p]),
                ("zmq_send", c_int, [c_void_p, c_void_p, c_size_t, c_int]),
                ("zmq_recv", c_int, [c_void_p, c_void_p, c_size_t, c_int]),
                ("zmq_poll", c_int, [POINTER(_PollItem), c_int, c_long])]:
            _proto(z, name, res, args)
        _ZMQ = z
    return _ZMQ


def _curve_client(L: ctypes.CDLL, sock: int, keys: c_void_p) -> None:
    """Makes ``sock`` a CURVE client with the job's key (into ``keys``,
    which the caller destroys); raises EPERM when there is none."""
    why = ctypes.create_string_buffer(512)
    nodefile = os.environ.get("TELEM_NODEFILE")
    rundir = os.environ.get("TELEM_RUNDIR")
    rc = L.telem_keys_find(rundir.encode() if rundir else None,
                           nodefile.encode() if nodefile else None,
                           byref(keys), why, len(why))
    if rc:
        raise error(rc, "reboot", text(why.value) or None)
    if not keys:
        raise error(-14, "reboot", "a TCP restart endpoint takes the job's "
                    "key ($TELEM_KEYS, or keys/ beside the node file) and "
                    "none was found")
    if L.telem_keys_apply_client(sock, keys) != 0:
        raise error(-13, "reboot", "this libzmq cannot speak CURVE")


def ask_launcher(endpoint: str, exclude: list, reason: str,
                 timeout_ms: int, detectors: Optional[list] = None) -> tuple:
    """Sends one restart request (TELEM_MSG_RESTART) naming ``exclude``
    (a list of bytes), from ``detectors`` (a list of bytes, the restart's
    trigger; None: [b"python"]), to the launcher's restart socket at
    ``endpoint`` and
    waits up to ``timeout_ms`` for its acknowledgement.  Returns (code,
    sentence) of the ack (code 0: accepted); raises TelemError
    (ETIMEDOUT: no ack in time; ECONN: the endpoint could not be used).
    A tcp:// endpoint is CURVE with the job's key (telem_keys_find():
    $TELEM_KEYS, beside $TELEM_NODEFILE, or RUNDIR/keys): EPERM without
    one."""
    import time
    L, z = lib(), _zmq()
    keys = c_void_p()
    enc, dec = c_void_p(L.telem_proto_encoder_new()), \
        c_void_p(L.telem_proto_decoder_new())
    ctx = z.zmq_ctx_new()
    sock = z.zmq_socket(ctx, _ZMQ_DEALER) if ctx else None
    try:
        if not enc or not dec or not sock:
            raise error(-2, "reboot")
        zero = c_int(0)
        z.zmq_setsockopt(sock, _ZMQ_LINGER, byref(zero), 4)
        if endpoint.startswith("tcp://"):
            _curve_client(L, sock, keys)
        if z.zmq_connect(sock, endpoint.encode()) != 0:
            raise error(-10, "reboot", f"cannot connect to {endpoint}")
        detectors = detectors or [b"python"]
        det = (c_char_p * len(detectors))(*detectors)
        names = (c_char_p * len(exclude))(*exclude)
        now = time.time_ns()
        m = RestartC(id=now, ts_ns=now, reason=reason.encode("utf-8"),
                     exclude=names, nexclude=len(exclude), devices=None,
                     ndevices=0, detectors=det, ndetectors=len(detectors))
        data, size = c_void_p(), c_size_t()
        check(L.telem_proto_encode_restart(enc, byref(m), byref(data),
                                           byref(size)), "reboot")
        if z.zmq_send(sock, data, size.value, _ZMQ_DONTWAIT) < 0:
            raise error(-10, "reboot", f"cannot send to {endpoint}")
        deadline = time.monotonic() + timeout_ms / 1000.0
        buf = ctypes.create_string_buffer(1 << 16)
        msg = MsgC()
        while True:
            left = int((deadline - time.monotonic()) * 1000)
            item = _PollItem(sock, 0, _ZMQ_POLLIN, 0)
            got = z.zmq_poll(byref(item), 1, left) if left > 0 else 0
            if got < 0 and ctypes.get_errno() == _EINTR:
                continue    # a signal (its handler has run): wait on
            if got <= 0:
                raise error(-6, "reboot", f"no launcher answered at "
                            f"{endpoint} within {timeout_ms} ms; the job "
                            "was not restarted")
            n = z.zmq_recv(sock, buf, len(buf), _ZMQ_DONTWAIT)
            if 0 <= n <= len(buf) \
                    and L.telem_proto_decode(dec, buf, n, byref(msg)) == 0 \
                    and msg.type == TELEM_MSG_RESTART_ACK \
                    and msg.u.restart_ack.id == m.id:
                return (msg.u.restart_ack.code,
                        text(msg.u.restart_ack.message))
    finally:
        if sock:
            z.zmq_close(sock)
        if ctx:
            z.zmq_ctx_term(ctx)
        L.telem_proto_encoder_destroy(byref(enc))
        L.telem_proto_decoder_destroy(byref(dec))
        L.telem_keys_destroy(byref(keys))
