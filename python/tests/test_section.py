"""telem.section from Python, against a real telemd.

The context manager and the decorator record telem_section_seconds and
telem_section_step with the same timestamp, tags section and rank; steps
count per name (and can be set); the rank comes from the launchers'
variables; bad input raises and never records.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

import telem
from telem import errors
from conftest import RANK_VARS, series_of


def flushed() -> None:
    assert telem.flush(10.0) is True


def pairs(node, name: str) -> tuple[list, list]:
    """(seconds points, step points) of section `name`."""
    got = node.query("telem_section_seconds,telem_section_step",
                     f"section={name}")
    sec = series_of(got, "telem_section_seconds", section=name)
    stp = series_of(got, "telem_section_step", section=name)
    assert len(sec) == 1 and len(stp) == 1, got
    assert sec[0]["tags"]["rank"] == stp[0]["tags"]["rank"]
    assert sec[0]["tags"]["pid"] == str(os.getpid())
    assert sec[0]["tags"]["host"] == "n1"
    return sec[0]["points"], stp[0]["points"]


def busy(n: int) -> None:
    x = 0.0
    for i in range(n):
        x += i


def test_with_records_duration_and_step(telemd_node):
    bounds = []
    for i in range(5):
        t0 = time.monotonic_ns()
        with telem.section("py_step") as s:
            t1 = time.monotonic_ns()
            busy(2000 * (i + 1))
            t2 = time.monotonic_ns()
        t3 = time.monotonic_ns()
        bounds.append(((t2 - t1) / 1e9, (t3 - t0) / 1e9))
    assert s.name == "py_step"
    assert s.step == 5
    flushed()
    sec, stp = pairs(telemd_node, "py_step")
    assert [p[1] for p in stp] == [0, 1, 2, 3, 4]
    assert [p[0] for p in sec] == [p[0] for p in stp]     # paired by time
    for (lo, hi), p in zip(bounds, sec):
        assert lo <= p[1] <= hi


def test_step_set_and_read(telemd_node):
    s = telem.section("py_resumed")
    assert s.step == 0
    s.step = 1000
    assert telem.section("py_resumed").step == 1000      # per name
    with telem.section("py_resumed"):
        pass
    with s:
        pass
    assert s.step == 1002
    with pytest.raises(telem.TelemInvalid):
        s.step = -1
    with pytest.raises(TypeError):
        s.step = "5"
    with pytest.raises(TypeError):
        s.step = 1.0
    with pytest.raises(AttributeError):
        del s.step
    flushed()
    _, stp = pairs(telemd_node, "py_resumed")
    assert [p[1] for p in stp] == [1000, 1001]


def test_decorator(telemd_node):
    @telem.section("py_fn")
    def add(a: int, b: int = 2) -> int:
        """Adds."""
        return a + b

    class Model:
        @telem.section("py_method")
        def forward(self, x: int) -> int:
            return 2 * x

    @telem.section("py_raises")
    def boom() -> None:
        raise KeyError("k")

    @telem.section("py_recurse")
    def fact(n: int) -> int:
        return 1 if n <= 1 else n * fact(n - 1)

    assert add(1) == 3 and add(1, b=5) == 6
    assert add.__name__ == "add" and add.__doc__ == "Adds."
    assert add.__wrapped__ is not None
    assert Model().forward(4) == 8
    with pytest.raises(KeyError):
        boom()
    assert fact(5) == 120
    flushed()
    assert len(pairs(telemd_node, "py_fn")[1]) == 2
    assert len(pairs(telemd_node, "py_method")[1]) == 1
    assert len(pairs(telemd_node, "py_raises")[1]) == 1   # time was spent
    assert sorted(p[1] for p in pairs(telemd_node, "py_recurse")[1]) == [
        0, 1, 2, 3, 4]
    with pytest.raises(TypeError):
        telem.section("py_fn")(5)


def test_threads_get_distinct_steps(telemd_node):
    @telem.section("py_mt")
    def work() -> None:
        pass

    def run() -> None:
        for _ in range(500):
            work()
    ts = [threading.Thread(target=run) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    flushed()
    _, stp = pairs(telemd_node, "py_mt")
    steps = [p[1] for p in stp]
    assert sorted(steps) == list(range(2000))


def test_exception_in_with_is_not_masked(telemd_node):
    with pytest.raises(ZeroDivisionError):
        with telem.section("py_with_raises"):
            1 / 0
    flushed()
    assert len(pairs(telemd_node, "py_with_raises")[1]) == 1


def test_bad_input(telemd_node):
    for name in ("", "x" * 256, "a\0b"):
        with pytest.raises(telem.TelemInvalid) as e:
            telem.section(name)
        assert e.value.code == errors.EINVAL
    for name in (None, b"step", 1):
        with pytest.raises(TypeError):
            telem.section(name)
    with pytest.raises(TypeError):
        telem.section()
    s = telem.section("py_twice")
    with s:
        with pytest.raises(RuntimeError):
            with s:
                pass
    with pytest.raises(RuntimeError):
        s.__exit__(None, None, None)                    # not open
    flushed()
    assert len(pairs(telemd_node, "py_twice")[1]) == 1
    assert telem.section("x" * 255).name == "x" * 255   # longest name


def test_level_zero_records_nothing_but_counts_steps(telemd_node):
    telem.set_level(0)
    try:
        with telem.section("py_level0"):
            pass
    finally:
        telem.set_level(1)
    assert telem.section("py_level0").step == 1
    with telem.section("py_level0"):
        pass
    flushed()
    _, stp = pairs(telemd_node, "py_level0")
    assert [p[1] for p in stp] == [1]


@pytest.mark.parametrize("env,rank", [
    ({}, "0"),
    ({"RANK": "7"}, "7"),
    ({"RANK": "7", "PMI_RANK": "6"}, "6"),
    ({"PMI_RANK": "6", "OMPI_COMM_WORLD_RANK": "5"}, "5"),
    ({"OMPI_COMM_WORLD_RANK": "5", "SLURM_PROCID": "4"}, "4"),
    ({"SLURM_PROCID": "4", "TELEM_RANK": "3"}, "3"),
    ({"TELEM_RANK": "x", "RANK": "2"}, "2"),
])
def test_rank_from_launchers(telemd_node, env, rank):
    """A fresh process per environment (the rank is read once), recording
    into the same telemd."""
    name = "py_rank_" + "_".join(sorted(env)) if env else "py_rank_none"
    child_env = {k: v for k, v in os.environ.items() if k not in RANK_VARS}
    child_env.update(telemd_node.env(), **env)
    code = ("import telem\n"
            f"with telem.section({name!r}): pass\n"
            "assert telem.flush(10.0)\n"
            "print(telem.section_rank())\n")
    r = subprocess.run([sys.executable, "-c", code], env=child_env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == rank
    got = series_of(telemd_node.query("telem_section_step", f"section={name}"),
                    "telem_section_step", section=name)
    assert len(got) == 1 and got[0]["tags"]["rank"] == rank


def test_stream_records_device_time(telemd_node):
    """With a stream, a section also records the device time between its
    begin and end (telem_section_gpu_seconds), here from the test-only CUDA
    driver, whose clock moves 5 ms at each event record; in a fresh
    process, as the driver is looked up once."""
    lib = os.environ.get("TELEM_CUDA_TEST_LIB", "")
    if not os.path.exists(lib):
        pytest.skip(f"no test-only CUDA driver at '{lib}' "
                    "(TELEM_CUDA_TEST_LIB)")
    child_env = dict(os.environ, **telemd_node.env(), TELEM_CUDA_LIBRARY=lib)
    code = ("import telem\n"
            "class Stream:\n"
            "    cuda_stream = 0x1234\n"
            "with telem.section('py_gpu', stream=0): pass\n"
            "with telem.section('py_gpu', stream=Stream()): pass\n"
            "@telem.section('py_gpu', stream=0)\n"
            "def f(): return 3\n"
            "assert f() == 3\n"
            "with telem.section('py_gpu_plain'): pass\n"
            "for bad in ('x', -1, True, object()):\n"
            "    try:\n"
            "        telem.section('py_gpu', stream=bad)\n"
            "    except (TypeError, OverflowError):\n"
            "        pass\n"
            "    else:\n"
            "        raise SystemExit(f'stream={bad!r} was accepted')\n"
            "assert telem.flush(10.0)\n")
    r = subprocess.run([sys.executable, "-c", code], env=child_env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    got = telemd_node.query("telem_section_gpu_seconds,telem_section_seconds",
                            "section=py_gpu")
    gpu = series_of(got, "telem_section_gpu_seconds", section="py_gpu")
    cpu = series_of(got, "telem_section_seconds", section="py_gpu")
    assert len(gpu) == 1 and len(cpu) == 1, got
    assert [round(p[1], 6) for p in gpu[0]["points"]] == [0.005] * 3
    assert [p[0] for p in gpu[0]["points"]] == \
        [p[0] for p in cpu[0]["points"]]
    plain = telemd_node.query("telem_section_gpu_seconds",
                              "section=py_gpu_plain")
    assert series_of(plain, "telem_section_gpu_seconds",
                     section="py_gpu_plain") == []
