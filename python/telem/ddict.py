"""The distributed dictionary as a Python mapping.

:class:`DDict` wraps libtelem's dictionary client (ddict.h): a sharded,
replicated key-value store served by one telem_dictd per node, whose data
survives the loss of any one node.  Under telem_launch ``DDict()`` finds
the job's servers by itself, as ``ddict_open(NULL, ...)`` does
(``$TELEM_DICT_NODEFILE``, else ``<rundir>/dict_nodes``).

Keys are str (stored as their UTF-8 bytes) or bytes; ``d["a"]`` and
``d[b"a"]`` are the same key.  Iteration yields str for keys that are
valid UTF-8, bytes otherwise.

Values and their kinds (the on-wire layout, docs/python.md):

* bytes, bytearray, memoryview and any other buffer are stored as their
  raw bytes, untagged: a C program's ``ddict_get`` sees exactly them, and
  a value a C program wrote reads back as bytes.
* a numpy array (not of object dtype) is stored as its raw data, C or
  Fortran order, straight from the array's memory (no copy); its dtype,
  shape and order go to a kind record.
* str is stored as its UTF-8 bytes with a kind record ``str``.
* anything else is pickled (protocol 5) with a kind record ``pickle``.

Kind records live in a companion namespace, the handle's namespace
followed by ``"\\x7fpy"`` (so a user namespace is at most 197 bytes), under
the same key: a JSON object such as ``{"v":1,"kind":"ndarray",
"dtype":"<f8","shape":[3,4],"order":"C"}``.  A key without one is raw
bytes.  The main namespace thus holds exactly the payloads C programs
expect, and its ``len`` and keys are the user's alone.  A put writes the
kind record before the payload and a raw put removes a stale record
after; a reader that finds a record disagreeing with the payload's length
reads again.  checkpoint() and restore() cover both namespaces.
"""

from __future__ import annotations

import ctypes
import json
import pickle
from collections.abc import MutableMapping
from ctypes import byref, c_char_p, c_int, c_size_t, c_uint64, c_void_p
from typing import Any, Iterator, Optional, Union

from . import _lib
from .errors import (ECONFLICT, EINVAL, ENOTFOUND, EPROTO, ETIMEDOUT,
                     ETOOBIG, TelemError)

try:
    import numpy as _np
except ImportError:
    _np = None

KIND_NS_SUFFIX = "\x7fpy"
_KIND_V = 1
_KEY_MAX = 65535

Key = Union[str, bytes, bytearray, memoryview]


def _key(k: Key) -> bytes:
    if isinstance(k, str):
        b = k.encode("utf-8")
    elif isinstance(k, bytes):
        b = k
    elif isinstance(k, (bytearray, memoryview)):
        b = bytes(k)
    else:
        raise TypeError(f"DDict keys are str or bytes, not "
                        f"{type(k).__name__}")
    # Checked here, not left to libtelem: ddict_put() and ddict_cas() of
    # this version write *version from a batch that refused the key and
    # may never have been allocated.
    if len(b) > _KEY_MAX:
        raise _lib.error(ETOOBIG, "DDict", f"a key of {len(b)} bytes, at "
                         f"most {_KEY_MAX}")
    return b


def _key_out(b: bytes) -> Union[str, bytes]:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


def _event(name: str) -> bytes:
    if not isinstance(name, str):
        raise TypeError("event names are str")
    if not name or "\0" in name:
        raise _lib.error(EINVAL, "event", f"bad event name {name!r}")
    return name.encode("utf-8")


def _is_ndarray(v: Any) -> bool:
    return _np is not None and isinstance(v, _np.ndarray) \
        and not v.dtype.hasobject


class _Payload:
    """A value ready for the C calls: its address (or a bytes object
    ctypes passes by pointer), its length, its kind record (None for raw
    bytes) and whatever must stay alive while C reads it."""

    def __init__(self, v: Any):
        self.keep = v
        self.kind: Optional[bytes] = None
        self._init(v)
        if self.n > _lib.DDICT_VALUE_LIMIT:
            raise _lib.error(ETOOBIG, "DDict", f"a value of {self.n} bytes, "
                             f"at most {_lib.DDICT_VALUE_LIMIT}")

    def _init(self, v: Any) -> None:
        if isinstance(v, bytes):
            self.ptr, self.n = v, len(v)
            return
        if _is_ndarray(v):
            order = "C"
            if not v.flags.c_contiguous:
                if v.flags.f_contiguous and v.ndim > 1:
                    order = "F"
                else:
                    v = _np.ascontiguousarray(v)
            self.keep = v
            self.kind = json.dumps({
                "v": _KIND_V, "kind": "ndarray",
                "dtype": _np.lib.format.dtype_to_descr(v.dtype),
                "shape": list(v.shape), "order": order},
                separators=(",", ":")).encode()
            self.ptr, self.n = (v.ctypes.data or None), v.nbytes
            return
        if isinstance(v, str):
            self._set_bytes(v.encode("utf-8"), b"str")
            return
        try:
            m = memoryview(v)
        except TypeError:
            m = None
        if m is not None:
            self._from_buffer(m)
            return
        self._set_bytes(pickle.dumps(v, protocol=5), b"pickle")

    def _set_bytes(self, b: bytes, kind: bytes) -> None:
        self.keep, self.ptr, self.n = b, b, len(b)
        self.kind = b'{"v":%d,"kind":"%s"}' % (_KIND_V, kind)

    def _from_buffer(self, m: memoryview) -> None:
        if not m.c_contiguous:
            b = m.tobytes()
            self.keep, self.ptr, self.n = b, b, len(b)
            return
        m = m.cast("B") if m.ndim != 1 or m.format != "B" else m
        self.n = m.nbytes
        if self.n == 0:
            self.keep, self.ptr = m, None
        elif not m.readonly:
            c = (ctypes.c_char * self.n).from_buffer(m)
            self.keep, self.ptr = (m, c), ctypes.addressof(c)
        elif _np is not None:
            a = _np.frombuffer(m, dtype=_np.uint8)
            self.keep, self.ptr = (m, a), a.ctypes.data
        else:
            b = m.tobytes()
            self.keep, self.ptr = b, b


def _decode_kind(raw: bytes) -> dict:
    try:
        k = json.loads(raw.decode("utf-8"))
        if not isinstance(k, dict) or k.get("v") != _KIND_V \
                or k.get("kind") not in ("ndarray", "str", "pickle"):
            raise ValueError("unknown kind record")
        return k
    except (ValueError, UnicodeDecodeError) as e:
        raise _lib.error(EPROTO, "DDict", f"bad kind record {raw[:80]!r}: "
                         f"{e}") from None


def _empty_array(k: dict):
    if _np is None:
        raise _lib.error(EPROTO, "DDict", "the value is a numpy array and "
                         "numpy is not importable")
    try:
        dt = _np.lib.format.descr_to_dtype(
            k["dtype"] if isinstance(k["dtype"], str)
            else [tuple(x) for x in k["dtype"]])
        shape = tuple(int(x) for x in k["shape"])
        order = k.get("order", "C")
        if order not in ("C", "F") or any(x < 0 for x in shape):
            raise ValueError("bad order or shape")
        return _np.empty(shape, dtype=dt, order=order)
    except (KeyError, TypeError, ValueError) as e:
        raise _lib.error(EPROTO, "DDict", f"bad ndarray record: {e}") \
            from None


def _from_raw(k: Optional[dict], b: bytes) -> Any:
    if k is None:
        return b
    if k["kind"] == "str":
        return b.decode("utf-8")
    if k["kind"] == "pickle":
        return pickle.loads(b)
    a = _empty_array(k)
    if a.nbytes != len(b):
        raise _lib.error(EPROTO, "DDict", f"ndarray record wants "
                         f"{a.nbytes} bytes, the value has {len(b)}")
    flat = a.reshape(-1, order="A") if a.size else a
    _np.copyto(flat.view(_np.uint8).reshape(-1), _np.frombuffer(b, _np.uint8))
    return a


class DDict(_lib.Handle, MutableMapping):
    """A handle on one namespace of the job's distributed dictionary.

    ``nodefile`` None takes the job's; ``namespace`` is str (UTF-8, at
    most 197 bytes, no control characters); ``timeout`` is each call's
    deadline in seconds (None: libtelem's 10 s).  A dead server costs a
    call at most its deadline (TelemTimeout), never a hang.  A handle
    belongs to one thread; open one per thread."""

    _HANDLE, _WHAT = "_d", "DDict"

    def __init__(self, nodefile: Optional[str] = None, namespace: str = "",
                 timeout: Optional[float] = None) -> None:
        """Opens the namespace and its kind records' companion."""
        self._d = self._k = None
        if not isinstance(namespace, str):
            raise TypeError("namespace must be str")
        ns = namespace.encode("utf-8")
        if len(ns) > _lib.DDICT_NS_LIMIT - len(KIND_NS_SUFFIX) \
                or any(c < 0x20 for c in ns):
            raise _lib.error(EINVAL, "DDict", f"bad namespace {namespace!r}: "
                             "at most 197 bytes, no control characters")
        self._tmo = _lib.ms(timeout) if timeout is not None \
            else _lib.DDICT_TIMEOUT_DEFAULT_MS
        if nodefile is not None and not isinstance(nodefile, (str, bytes)):
            raise TypeError("nodefile must be a path or None")
        path = nodefile.encode() if isinstance(nodefile, str) else nodefile
        self.namespace = namespace
        L = _lib.lib()
        for attr, n in (("_d", ns), ("_k", ns + KIND_NS_SUFFIX.encode())):
            err = c_int(0)
            h = L.ddict_open(path, n, self._tmo, byref(err))
            if not h:
                self.close()
                raise _lib.error(err.value or ENOTFOUND, "DDict")
            setattr(self, attr, h)

    # ---- life cycle -------------------------------------------------------

    def close(self) -> None:
        """Closes the handle; calling it again does nothing."""
        L = _lib.lib()
        for attr in ("_d", "_k"):
            h = getattr(self, attr, None)
            if h:
                setattr(self, attr, None)
                L.ddict_close(byref(c_void_p(h)))

    @property
    def timeout(self) -> float:
        """Each call's deadline, seconds (settable)."""
        return self._tmo / 1000.0

    @timeout.setter
    def timeout(self, t: float) -> None:
        self._h("timeout")
        self._tmo = _lib.ms(t)
        for h in (self._d, self._k):
            _lib.lib().ddict_set_timeout(h, self._tmo)

    # ---- kinds --------------------------------------------------------------

    def _kind(self, kb: bytes) -> Optional[dict]:
        L, p, n = _lib.lib(), c_void_p(), c_size_t()
        rc = L.ddict_get(self._k, kb, len(kb), byref(p), byref(n), None)
        if rc == ENOTFOUND:
            return None
        _lib.check(rc, "DDict: kind record")
        try:
            return _decode_kind(ctypes.string_at(p, n.value))
        finally:
            _lib.libc().free(p)

    def _set_kind(self, kb: bytes, kind: Optional[bytes]) -> None:
        L = _lib.lib()
        if kind is None:
            rc = L.ddict_del(self._k, kb, len(kb))
            if rc != ENOTFOUND:
                _lib.check(rc, "DDict: kind record")
        else:
            _lib.check(L.ddict_put(self._k, kb, len(kb), kind, len(kind),
                                   None), "DDict: kind record")

    # ---- the mapping --------------------------------------------------------

    def put(self, key: Key, value: Any) -> int:
        """Stores ``value`` under ``key`` (every replica holds it when this
        returns); returns the key's new version (1 for a new key)."""
        h, kb = self._h("put"), _key(key)
        pl = _Payload(value)
        if pl.kind is not None:
            self._set_kind(kb, pl.kind)
        ver = c_uint64(0)
        _lib.check(_lib.lib().ddict_put(h, kb, len(kb), pl.ptr, pl.n,
                                        byref(ver)), "put")
        if pl.kind is None:
            self._set_kind(kb, None)
        return ver.value

    def __setitem__(self, key: Key, value: Any) -> None:
        self.put(key, value)

    def get_versioned(self, key: Key) -> tuple:
        """(value, version) of ``key``; KeyError (TelemNotFound) when
        absent."""
        h, kb = self._h("get"), _key(key)
        for _ in range(3):
            k = self._kind(kb)
            try:
                return self._read(h, kb, k)
            except TelemError as e:
                if e.code != EPROTO or k is None:
                    raise
                last = e     # a put between our two reads: read again
        raise last

    def _read(self, h: int, kb: bytes, k: Optional[dict]) -> tuple:
        L, ver = _lib.lib(), c_uint64(0)
        if k is not None and k["kind"] == "ndarray":
            a = _empty_array(k)
            n = c_size_t(0)
            rc = L.ddict_get_into(h, kb, len(kb), a.ctypes.data or None,
                                  a.nbytes, byref(n), byref(ver))
            if rc == ETOOBIG or (rc == 0 and n.value != a.nbytes):
                raise _lib.error(EPROTO, "get", f"ndarray record wants "
                                 f"{a.nbytes} bytes, the value has {n.value}")
            _lib.check(rc, "get")
            return a, ver.value
        p, n = c_void_p(), c_size_t()
        _lib.check(L.ddict_get(h, kb, len(kb), byref(p), byref(n),
                               byref(ver)), "get")
        try:
            b = ctypes.string_at(p, n.value)
        finally:
            _lib.libc().free(p)
        return _from_raw(k, b), ver.value

    def __getitem__(self, key: Key) -> Any:
        return self.get_versioned(key)[0]

    def get_into(self, key: Key, out: Any) -> int:
        """Reads the stored bytes of ``key`` into ``out``, a writable
        C-contiguous buffer (a numpy array, bytearray, writable memoryview),
        with no copy on the Python side; returns the value's length in
        bytes.  The bytes are the value as C programs see it (an array's
        raw data, a str's UTF-8, a pickled object's pickle).  KeyError
        (TelemNotFound) when absent; TelemError(ETOOBIG) when ``out`` is
        smaller than the value (its length is the exception's ``needed``);
        TypeError for a read-only or non-contiguous buffer."""
        h, kb = self._h("get_into"), _key(key)
        try:
            view = memoryview(out)
        except TypeError:
            raise TypeError(f"get_into: out must be a writable buffer, not "
                            f"{type(out).__name__}") from None
        with view:
            if view.readonly or not view.c_contiguous:
                raise TypeError("get_into: out must be a writable, "
                                "C-contiguous buffer")
            size = view.nbytes
        addr = (ctypes.addressof((ctypes.c_char * size).from_buffer(out))
                if size else None)
        n = c_size_t(0)
        rc = _lib.lib().ddict_get_into(h, kb, len(kb), addr, size, byref(n),
                                       None)
        if rc == ETOOBIG:
            e = _lib.error(ETOOBIG, "get_into", f"the value has {n.value} "
                           f"bytes, the buffer {size}")
            e.needed = n.value  # type: ignore[attr-defined]
            raise e
        _lib.check(rc, "get_into")
        return n.value

    def get(self, key: Key, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when it is absent."""
        try:
            return self[key]
        except KeyError:
            return default

    def __delitem__(self, key: Key) -> None:
        h, kb = self._h("del"), _key(key)
        _lib.check(_lib.lib().ddict_del(h, kb, len(kb)), "del")
        self._set_kind(kb, None)

    def __contains__(self, key: object) -> bool:
        h = self._h("contains")
        try:
            kb = _key(key)  # type: ignore[arg-type]
        except TypeError:
            return False
        n = c_size_t(0)
        rc = _lib.lib().ddict_get_into(h, kb, len(kb), None, 0, byref(n),
                                       None)
        if rc in (0, ETOOBIG):
            return True
        if rc == ENOTFOUND:
            return False
        raise _lib.error(rc, "contains")

    def __len__(self) -> int:
        n = c_uint64(0)
        _lib.check(_lib.lib().ddict_len(self._h("len"), byref(n)), "len")
        return n.value

    def _keys(self, h: int, what: str) -> list:
        out = []

        def fn(arg, key, klen):
            out.append(ctypes.string_at(key, klen))
            return 0
        cb = _lib.KEY_FN(fn)
        _lib.check(_lib.lib().ddict_keys(h, cb, None), what)
        return out

    def __iter__(self) -> Iterator[Union[str, bytes]]:
        return iter([_key_out(k) for k in self._keys(self._h("keys"),
                                                     "keys")])

    def cas(self, key: Key, value: Any, expected: int) -> int:
        """Stores ``value`` only if ``key``'s version is ``expected`` (0:
        the key must not exist).  Returns the new version; raises
        TelemError(ECONFLICT) otherwise, its ``version`` attribute the
        key's current version."""
        h, kb = self._h("cas"), _key(key)
        if isinstance(expected, bool) or not isinstance(expected, int) \
                or not 0 <= expected < 2 ** 64:
            raise TypeError("cas: expected is a version (int >= 0)")
        pl, ver = _Payload(value), c_uint64(0)
        rc = _lib.lib().ddict_cas(h, kb, len(kb), pl.ptr, pl.n, expected,
                                  byref(ver))
        if rc == ECONFLICT:
            e = _lib.error(rc, "cas", f"version {ver.value}, not {expected}")
            e.version = ver.value
            raise e
        _lib.check(rc, "cas")
        self._set_kind(kb, pl.kind)
        return ver.value

    # ---- events -------------------------------------------------------------

    def set_event(self, name: str) -> None:
        """Sets the cluster-wide event ``name`` (replicated like a put);
        events are shared by every namespace."""
        _lib.check(_lib.lib().ddict_event_set(self._h("set_event"),
                                              _event(name)), "set_event")

    def is_set(self, name: str) -> bool:
        """True when the event ``name`` is set."""
        rc = _lib.lib().ddict_event_is_set(self._h("is_set"), _event(name))
        if rc == ENOTFOUND:
            return False
        return bool(_lib.check(rc, "is_set"))

    def wait(self, name: str, timeout: Optional[float] = None) -> bool:
        """Waits until the event ``name`` is set (the server notifies; no
        polling).  True when it is, False when ``timeout`` seconds (None:
        the handle's deadline) passed first."""
        ms = _lib.ms(timeout) if timeout is not None else self._tmo
        rc = _lib.lib().ddict_event_wait(self._h("wait"), _event(name), ms)
        if rc == ETIMEDOUT:
            return False
        _lib.check(rc, "wait")
        return True

    def clear(self, name: Optional[str] = None) -> None:  # type: ignore[override]
        """Clears the event ``name``.  Without a name, removes every key
        of the namespace (MutableMapping's clear)."""
        if name is None:
            for k in list(self):
                try:
                    del self[k]
                except KeyError:
                    pass
            return
        rc = _lib.lib().ddict_event_clear(self._h("clear"), _event(name))
        if rc != ENOTFOUND:
            _lib.check(rc, "clear")

    # ---- checkpoints --------------------------------------------------------

    def checkpoint(self, id: int) -> None:
        """Marks checkpoint ``id`` of the namespace (call it after a round
        of writes was acknowledged, before the next begins)."""
        h = self._h("checkpoint")
        if isinstance(id, bool) or not isinstance(id, int) \
                or not 0 <= id < 2 ** 64:
            raise TypeError("checkpoint: id is an int >= 0")
        L = _lib.lib()
        _lib.check(L.ddict_checkpoint(self._k, id), "checkpoint")
        _lib.check(L.ddict_checkpoint(h, id), "checkpoint")

    def restore(self) -> int:
        """Replaces the namespace with its latest complete checkpoint and
        returns its id; KeyError (TelemNotFound) when there is none."""
        h, L, cid = self._h("restore"), _lib.lib(), c_uint64(0)
        _lib.check(L.ddict_restore(h, byref(cid)), "restore")
        kid = c_uint64(0)
        rc = L.ddict_restore(self._k, byref(kid))
        if rc == ENOTFOUND or (rc == 0 and kid.value != cid.value):
            # a checkpoint made without kind records: every value is raw
            for kb in self._keys(self._k, "restore"):
                self._set_kind(kb, None)
        else:
            _lib.check(rc, "restore")
        return cid.value

    # ---- batches ------------------------------------------------------------

    def batch(self) -> "Batch":
        """A batch of puts, gets and deletes sent together (pipelined, one
        message per server) when the ``with`` block ends::

            with d.batch() as b:
                b.put("a", 1); r = b.get("x"); b.delete("y")
            r.value
        """
        self._h("batch")
        return Batch(self)


class BatchItem:
    """One operation of a batch: after the batch ran, ``value`` (gets)
    or the operation's TelemError (raised by ``value``/``result()``)."""

    def __init__(self, op: str, key: bytes):
        self.op, self.key = op, key
        self.code: Optional[int] = None
        self._value: Any = None
        self._error: Optional[TelemError] = None

    def result(self) -> Any:
        """The value (gets; None for puts and deletes), or raises the
        operation's error; TelemError(ESTATE) before the batch ran."""
        if self.code is None:
            raise _lib.error(-12, "batch", "the batch has not run")
        if self._error is not None:
            raise self._error
        return self._value

    @property
    def value(self) -> Any:
        """:meth:`result`."""
        return self.result()


class Batch:
    """Operations gathered by :meth:`DDict.batch` and run together."""

    def __init__(self, d: DDict):
        self._d = d
        self._ops: list = []

    def put(self, key: Key, value: Any) -> BatchItem:
        """Adds a put."""
        it = BatchItem("put", _key(key))
        it.payload = _Payload(value)
        self._ops.append(it)
        return it

    def get(self, key: Key) -> BatchItem:
        """Adds a get; its value is in the returned item after the run."""
        it = BatchItem("get", _key(key))
        self._ops.append(it)
        return it

    def delete(self, key: Key) -> BatchItem:
        """Adds a delete."""
        it = BatchItem("del", _key(key))
        self._ops.append(it)
        return it

    def __len__(self) -> int:
        return len(self._ops)

    def __enter__(self) -> "Batch":
        return self

    def __exit__(self, et, ev, tb) -> None:
        if et is None:
            self.execute()

    def execute(self) -> None:
        """Runs the batch: first the kind records (one pipelined batch on
        the companion namespace), then the payloads (one on the handle's
        namespace).  Each item gets its own result; raises only when the
        batch as a whole failed."""
        h = self._d._h("batch")
        L = _lib.lib()
        kinds = self._run(self._d._k, self._kind_ops, "batch: kind records")
        self._run(h, lambda b, keep: self._main_ops(b, keep, kinds),
                  "batch", finish=True)

    def _kind_ops(self, b, keep) -> None:
        L = _lib.lib()
        for it in self._ops:
            if it.op == "put" and it.payload.kind is not None:
                L.ddict_batch_put(b, it.key, len(it.key), it.payload.kind,
                                  len(it.payload.kind))
            elif it.op == "get":
                L.ddict_batch_get(b, it.key, len(it.key))
            else:
                L.ddict_batch_del(b, it.key, len(it.key))

    def _main_ops(self, b, keep, kinds) -> None:
        L = _lib.lib()
        for i, it in enumerate(self._ops):
            if it.op == "put":
                _lib.check(L.ddict_batch_put(b, it.key, len(it.key),
                                             it.payload.ptr, it.payload.n),
                           "batch: put")
            elif it.op == "del":
                L.ddict_batch_del(b, it.key, len(it.key))
            else:
                it.kind = None
                code, raw = kinds[i]
                try:
                    if code == 0:
                        it.kind = _decode_kind(raw)
                    if it.kind and it.kind["kind"] == "ndarray":
                        it.array = _empty_array(it.kind)
                        L.ddict_batch_get_into(b, it.key, len(it.key),
                                               it.array.ctypes.data or None,
                                               it.array.nbytes)
                        continue
                except TelemError as e:
                    it.kind_error = e
                L.ddict_batch_get(b, it.key, len(it.key))

    def _run(self, h, add, what: str, finish: bool = False) -> list:
        L = _lib.lib()
        b = c_void_p(L.ddict_batch_new())
        if not b:
            raise _lib.error(-2, what)
        keep: list = []
        try:
            add(b, keep)
            rc = L.ddict_batch_exec(h, b)
            if rc not in (0, ETIMEDOUT):
                raise _lib.error(rc, what)
            out = []
            for i, it in enumerate(self._ops):
                p, n, v = c_void_p(), c_size_t(), c_uint64()
                code = L.ddict_batch_result(b, i, byref(p), byref(n),
                                            byref(v))
                if not finish:
                    raw = ctypes.string_at(p, n.value) \
                        if code == 0 and it.op == "get" and p else b""
                    out.append((code, raw))
                else:
                    self._finish(it, code, p, n.value)
            return out
        finally:
            L.ddict_batch_destroy(byref(b))

    @staticmethod
    def _finish(it: BatchItem, code: int, p, n: int) -> None:
        it.code = code
        if code != 0:
            it._error = _lib.error(code, f"batch: {it.op} {it.key!r}")
            return
        if it.op != "get":
            return
        err = getattr(it, "kind_error", None)
        if err is not None:
            it._error = err
        elif getattr(it, "array", None) is not None:
            if n != it.array.nbytes:
                it._error = _lib.error(EPROTO, "batch: get", "ndarray "
                                       "record and value lengths differ")
            else:
                it._value = it.array
        else:
            try:
                it._value = _from_raw(it.kind, ctypes.string_at(p, n)
                                      if p else b"")
            except TelemError as e:
                it._error = e


__all__ = ["DDict", "Batch", "BatchItem", "KIND_NS_SUFFIX"]
