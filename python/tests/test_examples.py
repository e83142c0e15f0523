"""examples/python under the real telem_launch (local virtual nodes):

- scipy_scale_work.py at level 2 on two nodes: per-iteration lines, the
  average and standard deviation, the level-3 metric skipped at the call,
  level 1-2 metrics from both nodes in telemd;
- merge_sort.py: sorted output, no cut-off undisturbed; the stop event
  set before the sort cuts the recursion at depth 0; the AnalysisClient
  watch on num_running_processes sets it when the forks push a node over
  a limit (--until-stop ends on that behaviour, not on time); at level 1
  the watch is refused with the reason;
- scipy_scale_work_db_dump.py: the dump rank 0 writes holds both nodes'
  metrics and telemd's node metrics, read back by telem_view; an
  existing file is refused before any work.
"""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from launchfix import PYTHON, Job, example, jobs, need, run_example  # noqa


def telem_view_json(bin_dir, path) -> dict:
    r = subprocess.run([str(bin_dir / "telem_view"), "--export", "json",
                        str(path)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("prog", ["scipy_scale_work.py", "merge_sort.py",
                                  "scipy_scale_work_db_dump.py"])
def test_help_and_bad_options(prog):
    need("numpy")
    if "scipy" in prog:
        need("scipy")
    r = run_example(prog, "--help")
    assert r.returncode == 0 and "Exit status" in r.stdout, r.stderr
    for bad in (["--no-such-option"], ["--seed", "x"]):
        r = run_example(prog, *bad)
        assert r.returncode == 2 and "error:" in r.stderr, (bad, r.stderr)
    more = {"scipy_scale_work.py": [["--size", "4"], ["--workers", "0"]],
            "scipy_scale_work_db_dump.py": [["--ns", "a/b"],
                                            ["--burns", "-1"]],
            "merge_sort.py": [["--sizes", "10,x"], ["--max-depth", "13"],
                              ["--sizes", ""]]}[prog]
    for bad in more:
        r = run_example(prog, *bad)
        assert r.returncode == 2 and "error:" in r.stderr, (bad, r.stderr)


def test_scale_work_level_2(jobs):
    need("numpy")
    need("scipy")
    j = Job(["--local", "2", "--telemetry-level", "2"],
            [PYTHON, example("scipy_scale_work.py"), "--iterations", "4",
             "--burns", "1", "--images", "8", "--size", "64"])
    jobs.append(j)
    assert j.wait(120) == 0, j.tail()
    out = j.out()
    for rank in (0, 1):
        its = re.findall(rf"^rank {rank}: Time for iteration (\d+) is "
                         r"[0-9.]+ seconds$", out, re.M)
        assert its == [str(i) for i in range(5)], j.tail()
        assert re.search(rf"^rank {rank}: Average time: [0-9.]+ second\(s\)$",
                         out, re.M), j.tail()
        assert re.search(rf"^rank {rank}: Standard deviation: [0-9.]+ "
                         r"second\(s\)$", out, re.M), j.tail()
        # 5 iterations x (3 level-1/2 samples, the section's 2 and 1 batch
        # per worker) kept, the 5 level-3 samples skipped at the call.
        m = re.search(rf"^rank {rank}: level 2: queued (\d+), skipped by "
                      r"level 5, dropped 0; finalize: ok$", out, re.M)
        assert m and int(m.group(1)) >= 5 * (3 + 2) + 8 * 5, j.tail()
    # The same images on every rank give the same checksum whatever the
    # workers did; the ranks draw different images.
    sums = re.findall(r"^rank \d: checksum (\S+) over 40 images$", out, re.M)
    assert len(sums) == 2 and sums[0] != sums[1], j.tail()


def test_merge_sort(jobs):
    need("numpy")
    prog = [PYTHON, example("merge_sort.py")]
    j = Job(["--local", "2"], prog + ["--sizes", "1000,50000",
                                      "--min-chunk", "1000",
                                      "--max-depth", "3"], name="plain")
    jobs.append(j)
    assert j.wait(120) == 0, j.tail()
    assert j.out().count("sorted: yes") == 2, j.tail()
    assert re.search(r"size 50000: .* on 2 node\(s\); peak [2-8] processes "
                     r"per node; cut-off none; sorted: yes", j.out()), \
        j.tail()

    # The stop event set before the sort starts: no fork at all.
    stop = Job(["--local", "2"], [
        "/bin/sh", "-c",
        f'if [ "$TELEM_RANK" = 0 ]; then "{j.bin}/telem_dict" event-set '
        f'presort/stop || exit 1; else "{j.bin}/telem_dict" event-wait '
        f'presort/stop 20000 || exit 1; fi; exec {PYTHON} '
        f'{example("merge_sort.py")} --ns presort --sizes 50000 '
        f'--min-chunk 1000'], name="stop")
    jobs.append(stop)
    assert stop.wait(120) == 0, stop.tail()
    assert re.search(r"size 50000: .*peak 1 processes per node; cut-off "
                     r"depth 0; sorted: yes", stop.out()), stop.tail()


def my_processes() -> int:
    """How many processes this user runs, from /proc (no ps: under the
    sanitizer pass the tests' environment preloads the sanitizers'
    runtimes, with which procps's ps can hang)."""
    n = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                n += os.stat(f"/proc/{d}").st_uid == os.getuid()
            except OSError:
                pass            # it ended meanwhile
    return n


def test_merge_sort_watch(jobs):
    need("numpy")
    base = my_processes()
    limit = base + 40
    # Up to 32 processes per node on 2 nodes; the sort repeats until the
    # watch stopped it (at most 100 rounds: a bound for a broken watch).
    j = Job(["--local", "2"], [PYTHON, example("merge_sort.py"), "--ns",
                               "watched", "--sizes", "2000000",
                               "--min-chunk", "20000", "--max-depth", "5",
                               "--until-stop", "100", "--limit", str(limit)])
    jobs.append(j)
    assert j.wait(280) == 0, j.tail()
    out = j.out()
    assert re.search(rf"^merge_sort: watch: node n[12] runs \d+ processes "
                     rf"\(> {limit}\): stop event watched/stop set$", out,
                     re.M), j.tail()
    assert re.search(r"cut-off depth [0-9]; sorted: yes", out), j.tail()
    assert "sorted: NO" not in out


def test_merge_sort_watch_needs_level_2(jobs):
    need("numpy")
    j = Job(["--local", "1", "--telemetry-level", "1"],
            [PYTHON, example("merge_sort.py"), "--limit", "100"])
    jobs.append(j)
    assert j.wait(60) == 1, j.tail()     # the program exited 2
    assert "the process watch (--limit) needs telemetry level 2" in j.err()
    assert "this job runs at level 1" in j.err()
    assert "sorted" not in j.out()


def test_db_dump(jobs, tmp_path):
    need("numpy")
    need("scipy")
    prog = [PYTHON, example("scipy_scale_work_db_dump.py"), "--iterations",
            "3", "--burns", "0", "--images", "4", "--size", "64"]
    path = tmp_path / "job.tdump"
    j2 = Job(["--local", "2", "--telemetry-level", "2"],
             prog + ["--dump", str(path)], name="dump")
    jobs.append(j2)
    assert j2.wait(120) == 0, j2.tail()
    assert re.search(r"^scipy_scale_work_db_dump: wrote .*: \d+ series",
                     j2.out(), re.M), j2.tail()
    assert f"open it with: telem_view {path}" in j2.out()
    doc = telem_view_json(j2.bin, path)
    it = [s for s in doc["series"]
          if s["metric"] == "scipy_scale_work_iteration_seconds"]
    assert sorted(s["node"] for s in it) == ["n1", "n2"], doc["series"][:3]
    assert all(len(s["points"]) == 3 for s in it)
    names = {s["metric"] for s in doc["series"]}
    assert "num_running_processes" in names        # telemd, level 2
    assert "scipy_scale_work_task_seconds" in names
    assert "scipy_scale_work_edge_mean" not in names   # level 3

    # An existing file is refused before any work.
    j3 = Job(["--local", "1"], prog + ["--dump", str(path)], name="again")
    jobs.append(j3)
    assert j3.wait(60) == 1, j3.tail()
    assert "exists: a dump never overwrites a file" in j3.err()
    assert "Time for iteration" not in j3.out()
