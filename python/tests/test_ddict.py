"""telem.ddict.DDict against three real telem_dictd (jobfix)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jobfix  # noqa: E402

np = pytest.importorskip("numpy")
from telem.ddict import DDict, KIND_NS_SUFFIX  # noqa: E402
from telem import errors  # noqa: E402
from telem.errors import TelemError, TelemNotFound  # noqa: E402


@pytest.fixture(scope="module")
def job():
    yield from jobfix.local_job(3)


@pytest.fixture
def d(job, request):
    ns = "t_" + request.node.name[:80]
    with DDict(namespace=ns, timeout=10) as h:
        yield h


def cli(job, *args):
    r = job.run(["telem_dict"] + list(args))
    return r.returncode, r.stdout


def test_values_come_back_as_put(d):
    d["raw"] = b"\x00\x01bytes"
    d["ba"] = bytearray(b"bytearray")
    d["mv"] = memoryview(b"readonly view")
    d["str"] = "h\u00e9llo"
    d["obj"] = {"a": [1, 2.5, None], "b": ("t",)}
    d["int"] = 42
    d["empty"] = b""
    assert d["raw"] == b"\x00\x01bytes"
    assert d["ba"] == b"bytearray" and d["mv"] == b"readonly view"
    assert d["str"] == "h\u00e9llo"
    assert d["obj"] == {"a": [1, 2.5, None], "b": ("t",)}
    assert d["int"] == 42 and d["empty"] == b""
    d["raw"] = "now a str"                     # the kind follows the value
    assert d["raw"] == "now a str"
    d["raw"] = b"raw again"
    assert d["raw"] == b"raw again"


@pytest.mark.parametrize("arr", [
    np.arange(12, dtype=np.float64).reshape(3, 4),
    np.arange(24, dtype=np.int16).reshape(2, 3, 4),
    np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
    np.arange(20, dtype=np.int64)[::3],          # not contiguous
    np.array(3.5),                               # 0-d
    np.zeros((0, 5), dtype=np.uint8),            # empty
    np.array([(1, 2.0), (3, 4.0)], dtype=[("i", "<i4"), ("f", "<f8")]),
    np.arange(8, dtype=">u4"),                   # big-endian
])
def test_numpy_arrays(d, arr):
    d["a"] = arr
    back = d["a"]
    assert isinstance(back, np.ndarray)
    assert back.dtype == arr.dtype and back.shape == arr.shape
    assert np.array_equal(back, arr)
    if arr.flags.f_contiguous and not arr.flags.c_contiguous:
        assert back.flags.f_contiguous


def test_get_into(d):
    arr = np.arange(1000, dtype=np.float64)
    d["g"] = arr
    out = np.empty_like(arr)
    assert d.get_into("g", out) == arr.nbytes
    assert np.array_equal(out, arr)
    big = bytearray(arr.nbytes + 10)
    assert d.get_into("g", big) == arr.nbytes
    assert bytes(big[:arr.nbytes]) == arr.tobytes()
    d["s"] = b"abc"
    buf = bytearray(3)
    assert d.get_into("s", memoryview(buf)) == 3 and buf == b"abc"
    with pytest.raises(TelemError) as e:
        d.get_into("g", bytearray(8))
    assert e.value.code == errors.ETOOBIG and e.value.needed == arr.nbytes
    with pytest.raises(KeyError):
        d.get_into("absent", bytearray(8))
    with pytest.raises(TypeError):
        d.get_into("s", b"abc")                  # read-only
    with pytest.raises(TypeError):
        d.get_into("s", np.empty(10)[::2])       # not contiguous
    with pytest.raises(TypeError):
        d.get_into("s", 42)
    d["e"] = b""
    assert d.get_into("e", bytearray(0)) == 0


def test_c_programs_see_raw_bytes(job, d):
    d["k"] = b"plain-bytes"
    assert cli(job, "-s", d.namespace, "get", "k") == (0, b"plain-bytes\n")
    d["arr"] = np.frombuffer(b"ABCDEFGH", dtype=np.uint8).reshape(2, 4)
    assert cli(job, "-s", d.namespace, "get", "arr") == (0, b"ABCDEFGH\n")
    assert cli(job, "-s", d.namespace, "put", "fromc", "written-in-C")[0] \
        == 0
    assert d["fromc"] == b"written-in-C"
    d["s"] = "text"
    assert cli(job, "-s", d.namespace, "get", "s") == (0, b"text\n")
    # kind records are not the user's keys
    assert sorted(d) == ["arr", "fromc", "k", "s"] and len(d) == 4
    rc, out = cli(job, "-s", d.namespace, "len")
    assert (rc, out) == (0, b"4\n")


def test_mapping_protocol(d):
    assert len(d) == 0 and list(d) == []
    d["a"] = b"1"
    d[b"b"] = b"2"
    d[b"\xff\xfe"] = b"3"                       # not UTF-8: iterates as bytes
    assert d[b"a"] == b"1" and d["b"] == b"2"
    assert sorted(d, key=repr) == sorted(["a", "b", b"\xff\xfe"], key=repr)
    assert len(d) == 3 and "a" in d and b"b" in d and "zz" not in d
    assert 5 not in d
    assert d.get("zz") is None and d.get("zz", 7) == 7
    with pytest.raises(KeyError):
        d["zz"]
    with pytest.raises(TelemNotFound) as e:
        del d["zz"]
    assert e.value.code == errors.ENOTFOUND
    del d["a"]
    assert "a" not in d and len(d) == 2
    d.update({"x": 1, "y": [2]})
    assert d["y"] == [2]
    assert d.setdefault("x", 9) == 1 and d.pop("x") == 1
    v, ver = d.get_versioned("y")
    assert v == [2] and ver == 1
    d["y"] = 3
    assert d.get_versioned("y") == (3, 2)
    d.clear()
    assert len(d) == 0


def test_bad_input(job, d):
    for bad in (1, 2.5, None, ("t",)):
        with pytest.raises(TypeError):
            d[bad] = b"v"
        with pytest.raises(TypeError):
            d[bad]
    with pytest.raises(TypeError):
        DDict(namespace=5)
    with pytest.raises(TelemError) as e:
        DDict(namespace="x" * 198)
    assert e.value.code == errors.EINVAL
    with pytest.raises(TelemError) as e:
        DDict(namespace="tab\there")
    assert e.value.code == errors.EINVAL
    with pytest.raises(TypeError):
        d.cas("k", b"v", "1")
    with pytest.raises(TypeError):
        d.checkpoint(-1)
    with pytest.raises(TypeError):
        d.set_event(3)
    with pytest.raises(TelemError) as e:
        d.set_event("")
    assert e.value.code == errors.EINVAL
    with pytest.raises(TelemError) as e:
        d.timeout = 0
    assert e.value.code == errors.EINVAL
    with pytest.raises(TelemError) as e:
        d["k" * 70000] = b"v"                    # keys: at most 65,535 bytes
    assert e.value.code == errors.ETOOBIG
    with pytest.raises(TelemError) as e:
        with d.batch() as b:
            b.get(b"k" * 65536)
    assert e.value.code == errors.ETOOBIG


def test_oversized_value(d):
    big = np.zeros((256 << 20) + 1, dtype=np.uint8)  # untouched pages
    with pytest.raises(TelemError) as e:
        d["big"] = big
    assert e.value.code == errors.ETOOBIG
    assert "big" not in d


def test_malformed_kind_record(job, d):
    d["k"] = np.arange(4.0)
    with DDict(namespace=d.namespace + KIND_NS_SUFFIX) as kinds:
        kinds["k"] = b"{not json"
        with pytest.raises(TelemError) as e:
            d["k"]
        assert e.value.code == errors.EPROTO and "kind record" in str(e.value)
        kinds["k"] = b'{"v":1,"kind":"ndarray","dtype":"<f8","shape":[3]}'
        with pytest.raises(TelemError) as e:                # 24 != 32 bytes
            d["k"]
        assert e.value.code == errors.EPROTO
        kinds["k"] = b'{"v":1,"kind":"ndarray","dtype":"??","shape":[4]}'
        with pytest.raises(TelemError) as e:
            d["k"]
        assert e.value.code == errors.EPROTO
        kinds["k"] = b'{"v":9,"kind":"ndarray"}'
        with pytest.raises(TelemError):
            d["k"]


def test_cas(d):
    assert d.cas("c", b"one", 0) == 1
    with pytest.raises(TelemError) as e:
        d.cas("c", b"two", 0)
    assert e.value.code == errors.ECONFLICT and e.value.version == 1
    assert d.cas("c", np.arange(3), 1) == 2
    assert np.array_equal(d["c"], np.arange(3))
    assert d.cas("c", b"three", 2) == 3 and d["c"] == b"three"


def test_events(job, d):
    name = f"ev-{os.getpid()}-{time.monotonic_ns()}"
    assert not d.is_set(name)
    assert d.wait(name, 0.1) is False
    got = []
    other = DDict(namespace="other")

    def waiter():
        got.append(other.wait(name, 20))
    t = threading.Thread(target=waiter)
    t.start()
    d.set_event(name)
    t.join(30)
    other.close()
    assert got == [True]
    assert d.is_set(name) and d.wait(name, 0.1)
    assert cli(job, "event-is-set", name)[0] == 0     # seen from C
    d.clear(name)
    assert not d.is_set(name)
    d.clear(name)                                     # clearing twice is fine


def test_checkpoint_restore(job, d):
    d["a"] = b"1"
    d["arr"] = np.arange(5)
    d.checkpoint(7)
    d["a"] = "changed"
    d["arr"] = b"raw now"
    d["new"] = 1
    assert d.restore() == 7
    assert d["a"] == b"1" and np.array_equal(d["arr"], np.arange(5))
    assert "new" not in d
    with DDict(namespace=d.namespace + "-none") as fresh:
        with pytest.raises(TelemNotFound):
            fresh.restore()


def test_batch(d):
    d["old"] = b"o"
    d["arr"] = np.arange(6.0).reshape(2, 3)
    with d.batch() as b:
        p = b.put("n1", b"v1")
        p2 = b.put("n2", {"x": 1})
        g = b.get("arr")
        g2 = b.get("old")
        miss = b.get("absent")
        dl = b.delete("old")
        assert len(b) == 6
        with pytest.raises(TelemError) as e:
            g.value                                   # not run yet
        assert e.value.code == errors.ESTATE
    assert p.value is None and p2.value is None and dl.value is None
    assert np.array_equal(g.value, np.arange(6.0).reshape(2, 3))
    assert g2.value == b"o"
    with pytest.raises(KeyError):
        miss.value
    assert d["n1"] == b"v1" and d["n2"] == {"x": 1} and "old" not in d
    with pytest.raises(RuntimeError):
        with d.batch() as b:
            b.put("never", b"x")
            raise RuntimeError("the block failed: nothing is sent")
    assert "never" not in d


def test_timeout_property(d):
    assert d.timeout == 10.0
    d.timeout = 2.5
    assert d.timeout == 2.5


def test_closed_handle(job):
    h = DDict(namespace="closed")
    h.close()
    h.close()
    assert h.closed
    for call in (lambda: h["k"], lambda: h.__setitem__("k", b"v"),
                 lambda: len(h), lambda: list(h), lambda: "k" in h,
                 lambda: h.set_event("e"), lambda: h.checkpoint(1),
                 h.restore, h.batch, lambda: h.cas("k", b"v", 0)):
        with pytest.raises(TelemError) as e:
            call()
        assert e.value.code == errors.ESTATE


def test_no_job(tmp_path, monkeypatch):
    monkeypatch.setenv("TELEM_DICT_NODEFILE", str(tmp_path / "absent"))
    with pytest.raises(TelemNotFound):
        DDict()
    ghost = tmp_path / "ghost"
    ghost.write_text(f"g1\tipc://{tmp_path}/g1.sock\n")
    t0 = time.monotonic()
    with pytest.raises(TelemError) as e:
        DDict(str(ghost), timeout=0.5)
    assert e.value.code == errors.ETIMEDOUT
    assert time.monotonic() - t0 < 3.0


def test_dead_servers_time_out():
    for j in jobfix.local_job(3):
        with DDict(namespace="dead", timeout=0.5) as h:
            h["before"] = b"1"
            for n in ("n1", "n2", "n3"):
                j.kill(f"dictd:{n}", signal.SIGKILL)
            t0 = time.monotonic()
            with pytest.raises(TelemError) as e:
                h["after"] = b"2"
            took = time.monotonic() - t0
            assert e.value.code == errors.ETIMEDOUT
            assert took < 0.5 * 2 + 2.0, f"{took:.2f} s for a 0.5 s deadline"
            with pytest.raises(TelemError):
                h["before"]
