"""examples/python/slow_gpu.py under the real telem_launch: an
undisturbed run (one node, two workers) gives the reference histogram and
eigvals.png; a resilient job of two active nodes and a reserve, holding
every task half-way, loses n2 (its telemd killed, --daemon-failure
exclude): the launcher promotes n3, which resumes n2's task at the
checkpointed iteration from the dictionary, and the final histogram has
the reference's checksum (no iteration lost or counted twice) and passes
the semicircle check.  With telem.CollectorGroup in the package, the
script's own collector group records cg_eig_seconds."""

from __future__ import annotations

import os
import re
import signal

import pytest

import telem
from launchfix import PYTHON, Job, example, jobs, need, run_example  # noqa

ARGS = ["--tasks", "4", "--iterations", "20", "--size", "100", "--bins",
        "40"]


def checksum(job) -> str:
    m = re.search(r"^slow_gpu: histogram checksum ([0-9a-f]{16})$",
                  job.out(), re.M)
    assert m, job.tail()
    return m.group(1)


def test_help_and_bad_options():
    need("numpy")
    r = run_example("slow_gpu.py", "--help")
    assert r.returncode == 0 and "telem_launch" in r.stdout \
        and "--plot" in r.stdout, r.stderr
    for bad in (["--size", "1"], ["--hold-at", "1.5"], ["--tasks", "x"],
                ["--ns", ""], ["--backend", "opencl"], ["--nope"]):
        r = run_example("slow_gpu.py", *bad)
        assert r.returncode == 2 and "error:" in r.stderr, (bad, r.stderr)


def test_resume_after_node_loss_gives_reference_histogram(jobs, tmp_path):
    need("numpy")
    need("matplotlib")
    png = tmp_path / "eigvals.png"
    ref = Job(["--local", "1"], [PYTHON, example("slow_gpu.py"), "--ns",
                                 "ref", "--devices", "2", *ARGS, "--plot",
                                 str(png)], name="ref")
    jobs.append(ref)
    assert ref.wait(120) == 0, ref.tail()
    assert "semicircle law: PASS (every eigenvalue counted once" in ref.out()
    want = checksum(ref)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000

    job = Job(["--local", "3", "--nodes", "2", "--resilient",
               "--exhaust-resources", "--daemon-failure", "exclude",
               "--telemetry-level", "3"],
              [PYTHON, example("slow_gpu.py"), *ARGS, "--hold-at", "0.5"],
              name="lost")
    jobs.append(job)
    job.wait_for(r"^slow_gpu: n2: task 1 holds at iteration 10 ", 90)
    os.kill(job.node_pid("n2"), signal.SIGKILL)
    assert job.wait(120) == 0, job.tail()
    assert re.search(r"restart 1 \(of at most \d+\): trigger daemon; nodes "
                     r"n2; promoted n3;", job.err()), job.tail()
    assert re.search(r"^slow_gpu: n3: task [13] resumed at iteration 10 of "
                     r"20$", job.out(), re.M), job.tail()
    assert "semicircle law: PASS (every eigenvalue counted once" \
        in job.out(), job.tail()
    assert checksum(job) == want, job.tail()


def test_collector_group_records_cg_eig_seconds(jobs):
    need("numpy")
    try:
        getattr(telem, "CollectorGroup")
    except (AttributeError, ImportError):
        pytest.skip("telem.CollectorGroup not present")
    # The program starts its own group (rank 0); a second step reads what
    # the collectors recorded while the job's daemons still run.
    script = (f'{PYTHON} {example("slow_gpu.py")} --collectors '
              f'--tasks 2 --iterations 40 --size 120 || exit 1; '
              f'[ "$TELEM_RANK" = 0 ] || exit 0; '
              f'exec "$TELEM_BIN/telem_client" -g cg_eig_seconds -f txt')
    job = Job(["--local", "2", "--telemetry-level", "3"],
              ["/bin/sh", "-c", script])
    jobs.append(job)
    assert job.wait(180) == 0, job.tail()
    assert "cg_eig_seconds" in job.out(), job.tail()
