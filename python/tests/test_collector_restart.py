"""A Python collector group drives a real restart under telem_launch.

The job: ``telem_launch --local 3 --nodes 2 --resilient
--exhaust-resources --telemetry-level 3 --detector
slowgpu:metric=cg_eigr_seconds --collect "--collector /usr/bin/python3
--collector-arg SCRIPT --collector-arg --telem-collector --kernel eigr
..."``, where SCRIPT (written here) is both the program and its
collectors: as a collector it times numpy's eigvalsh on its device (one
cpu core; every node's device takes its turn on core 0, at its own
phase), as the program it waits until the test releases it and prints
where it finished.

Loaded run: once both active devices have recorded the rounds slowgpu
needs to judge them (10 of start-up, 21 learning), telem_load contends
for the core inside n2's turns only (SCHED_FIFO 30 against the
collectors' 20, as test_collector.py and it_watch do).  Checked: one
restart, ``trigger slowgpu; nodes n2; promoted n3``, on slowgpu's word
about n2's device, and the program finishing on n1 and n3 (restart 1),
the launcher exiting 0.  The rounds from the load to the restart are
counted from n2's own series (its telemd stays for the job's history).

Clean run: the same job without the load must not restart within as many
rounds as the loaded run needed to be restarted; released, it finishes
on n1 and n2 with no restart.

A machine too busy to decide is skipped with the figures, never passed:
when no restart came (or the wrong node was taken out),
examples/slow_gpu_noise.py judges the collectors' own figures (exit 3:
too noisy, skip; else fail); when the clean run restarted, the busiest
core's share of other work (examples/cpu_busy.py) over 70 % makes it
undecidable (skip), else it fails.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Any, Optional

import pytest

from jobfix import telem_bin, wait_until

PY = sys.executable
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
NAME = "eigr"
METRIC = f"cg_{NAME}_seconds"
PERIOD, REPS = 0.25, 5              # rounds of 0.25 s, 5 reps spread
SETTLE_ROUNDS = 10                  # slowgpu's settle: start-up, ignored
JUDGED_ROUNDS = 32                  # settle 10 + learn 21 + 1: judged
EFFECT, Z = 0.06, 3.0               # slowgpu's defaults (the judge's bar)
MAP_S = 30.0                        # for telem_collect's map of the devices
START_S = 40.0                      # then for the devices' JUDGED_ROUNDS
DETECT_S = 30.0                     # for the restart, after the load starts
FINISH_S = 30.0                     # for the job to end once released
BUSY_PCT = 70                       # cpu_busy.py: a core busy with others

SCRIPT = textwrap.dedent('''\
    import os, sys, time
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import numpy as np
    import telem

    A = np.random.default_rng(11).standard_normal((96, 96))
    A = A + A.T

    def {name}(device):
        np.linalg.eigvalsh(A)           # None: the group times the call

    cg = telem.CollectorGroup("{name}", {name}, period={period}, reps={reps},
                              spread=True)
    if cg.is_collector():
        # Ahead of the machine's other work, behind the load (as the
        # collectors of test_collector.py, started under chrt -f 20).
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
        except PermissionError:
            pass
        sys.exit(cg.main())

    # The program: holds until RELEASE exists (at most HOLD_S), then one
    # eigenvalue computation and the line that says where it finished.
    release, hold_s = sys.argv[1], float(sys.argv[2])
    node = os.environ["TELEM_NODE"]
    restarts = os.environ.get("TELEM_RESTART_COUNT", "?")
    end = time.monotonic() + hold_s
    while not os.path.exists(release):
        if time.monotonic() > end:
            print(f"program on {{node}}: not released within {{hold_s}} s",
                  file=sys.stderr, flush=True)
            sys.exit(1)
        time.sleep(0.05)
    w = np.linalg.eigvalsh(A)
    # One write: the ranks share the launcher's output and finish at once;
    # with PYTHONUNBUFFERED print() writes the text and its end apart, and
    # another rank's line can land between them.
    sys.stdout.write(f"program on {{node}} rank {{os.environ['TELEM_RANK']}} "
                     f"of {{os.environ['TELEM_NNODES']}} restart {{restarts}}: "
                     f"finished, largest eigenvalue {{w[-1]:.6f}}\\n")
    sys.stdout.flush()
''')

RESTART_RE = re.compile(r"restart (\d+) \(of at most \d+\): trigger (\S+); "
                        r"nodes ([^;]*); promoted ([^;]*);")
FINISHED_RE = re.compile(r"^program on (n\d) rank (\d) of (\d) restart (\d+): "
                         r"finished", re.M)


def rt_permitted() -> bool:
    return subprocess.run(["chrt", "-f", "30", "true"],
                          capture_output=True).returncode == 0


def stop_proc(p: subprocess.Popen, timeout: float = 30) -> Optional[int]:
    """SIGTERM, then SIGKILL after `timeout` s; the exit status."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return p.returncode


class Job:
    """One telem_launch job of the scenario in its own run directory."""

    def __init__(self, d: str, tag: str, script: str) -> None:
        self.bin = telem_bin()
        self.dir = os.path.join(d, tag)
        os.mkdir(self.dir, 0o700)
        self.rundir = os.path.join(self.dir, "run")
        os.mkdir(self.rundir, 0o700)
        self.release = os.path.join(self.dir, "release")
        self.out = os.path.join(self.dir, "job.out")
        self.log = os.path.join(self.dir, "job.log")
        self.env = dict(os.environ, OPENBLAS_NUM_THREADS="1",
                        OMP_NUM_THREADS="1")
        for k in ("TELEM_NODEFILE", "TELEM_DICT_NODEFILE", "TELEM_NODE",
                  "TELEM_RUNDIR", "TELEM_LAUNCH_ENDPOINT", "TELEM_RELAYS"):
            self.env.pop(k, None)
        collect = (f"--collector {PY} --collector-arg {script} "
                   f"--collector-arg --telem-collector --kernel {NAME} "
                   f"--devices 0 --local-devices 0 --period {PERIOD} "
                   f"--reps {REPS} --spread")
        hold_s = MAP_S + START_S + DETECT_S + FINISH_S + 30
        with open(self.out, "w") as fo, open(self.log, "w") as fl:
            self.proc = subprocess.Popen(
                [os.path.join(self.bin, "telem_launch"), "--rundir",
                 self.rundir, "--local", "3", "--nodes", "2", "--resilient",
                 "--exhaust-resources", "--telemetry-level", "3", "--no-agg",
                 "--detector", f"slowgpu:metric={METRIC}", "--collect",
                 collect, "--", PY, script, self.release, str(hold_s)],
                stdout=fo, stderr=fl, stdin=subprocess.DEVNULL, env=self.env)

    def text(self) -> str:
        with open(self.out) as fo, open(self.log) as fl:
            return fo.read() + fl.read()

    def restarts(self) -> list:
        return RESTART_RE.findall(open(self.log).read())

    def map_line(self, node: str) -> Optional[list]:
        for line in open(self.out):
            if line.startswith(f"node {node} device 0 -> "):
                return line.split()
        return None

    def epoch(self) -> Optional[int]:
        for line in open(self.out):
            w = line.split()
            if w[:1] == ["group"] and "epoch" in w:
                return int(w[w.index("epoch") + 1])
        return None

    def query(self, every_telemd: bool = False) -> dict:
        """telem_client's JSON of METRIC: the active nodes, or every node
        whose telemd runs (a node taken out keeps its history)."""
        nodes = os.path.join(self.rundir, "launch", "telemd_nodes") \
            if every_telemd else os.path.join(self.rundir, "nodes")
        env = dict(self.env, TELEM_RUNDIR=self.rundir, TELEM_NODEFILE=nodes)
        r = subprocess.run([os.path.join(self.bin, "telem_client"),
                            "--timeout", "5000", "-f", "json", "query",
                            METRIC, "--start", "-600s"], env=env,
                           capture_output=True, text=True, timeout=60)
        try:
            return json.loads(r.stdout or '{"series": []}')
        except ValueError:
            return {"series": []}

    def rounds(self, doc: Optional[dict] = None) -> dict:
        """{node: sorted round timestamps} of device 0."""
        doc = self.query() if doc is None else doc
        out: dict = {}
        for s in doc.get("series", []):
            if s.get("metric") == METRIC and s["tags"].get("gpu") == "0":
                node = s.get("node") or s["tags"].get("host")
                out.setdefault(node, set()).update(
                    int(ts) for ts, _ in s.get("points", []))
        return {n: sorted(v) for n, v in out.items()}

    def events(self) -> list:
        """The watcher's events (RUNDIR/telem_watch/events.jsonl)."""
        path = os.path.join(self.rundir, "telem_watch", "events.jsonl")
        if not os.path.exists(path):
            return []
        return [json.loads(l) for l in open(path)
                if '"type":"event"' in l]

    def finish(self) -> int:
        """Releases the program and waits for the launcher's end."""
        open(self.release, "w").close()
        try:
            return self.proc.wait(timeout=FINISH_S)
        except subprocess.TimeoutExpired:
            rc = stop_proc(self.proc)
            pytest.fail(f"the job did not end within {FINISH_S} s of its "
                        f"release (stopped: {rc}): {self.text()[-3000:]}")

    def close(self) -> None:
        stop_proc(self.proc)


def judge(doc: dict, node: str, load_ns: int) -> tuple:
    """examples/slow_gpu_noise.py on the collectors' figures (telem_client's
    JSON): (exit, line).  The judge reads dgemm's name."""
    for s in doc.get("series", []):
        s["metric"] = "cg_dgemm_seconds"
    j = subprocess.run([PY, os.path.join(SRC, "examples",
                                         "slow_gpu_noise.py"), node,
                        str(load_ns), str(EFFECT), str(Z)],
                       input=json.dumps(doc), capture_output=True, text=True,
                       timeout=60)
    return j.returncode, j.stdout.strip()


def busiest(path: str, monitor: Optional[subprocess.Popen]) -> int:
    """cpu_busy.py's figure: the busiest core's share of other work over
    any second it watched, in %; -1 when it did not run."""
    if monitor is None:
        return -1
    wait_until(lambda: os.path.exists(path) or monitor.poll() is not None,
               5.0)        # its first figure comes after a second
    try:
        return int(open(path).read().strip())
    except (OSError, ValueError):
        return -1


@pytest.fixture
def tmp() -> Any:
    d = tempfile.mkdtemp(prefix="telem-pycgr.")
    os.chmod(d, 0o700)
    yield d
    if os.environ.get("TELEM_KEEP") == "1":
        print(f"kept {d}")
    else:
        subprocess.run(["rm", "-rf", d], check=False)


def wait_judged(job: Job) -> dict:
    """Waits until n1's and n2's devices have JUDGED_ROUNDS rounds."""
    got: dict = {}

    def enough() -> bool:
        if job.proc.poll() is not None:
            return True
        got.clear()
        got.update(job.rounds())
        return all(len(got.get(n, [])) >= JUDGED_ROUNDS for n in ("n1", "n2"))
    ok = wait_until(enough, START_S, step_s=0.5)
    assert job.proc.poll() is None, \
        f"telem_launch exited {job.proc.returncode}: {job.text()[-3000:]}"
    assert ok, (f"the collectors did not record {JUDGED_ROUNDS} rounds on n1 "
                f"and n2 within {START_S} s: "
                f"{ {n: len(v) for n, v in got.items()} } "
                f"{job.text()[-3000:]}")
    return got


def test_slowgpu_restarts_without_loaded_node(tmp: str) -> None:
    if not rt_permitted():
        pytest.skip("real-time scheduling (chrt -f) is not permitted here, "
                    "and without it the load cannot slow one device")
    b = telem_bin()
    script = os.path.join(tmp, f"cg_{NAME}.py")
    with open(script, "w") as f:
        f.write(SCRIPT.format(name=NAME, period=PERIOD, reps=REPS))
    busy_file = os.path.join(tmp, "busy")
    busy: Optional[subprocess.Popen] = None
    jobs: list = []
    load: Optional[subprocess.Popen] = None
    try:
        # ---- loaded run --------------------------------------------------
        job = Job(tmp, "loaded", script)
        jobs.append(job)
        assert wait_until(lambda: job.map_line("n2") is not None
                          or job.proc.poll() is not None, MAP_S), \
            f"no collector map within {MAP_S} s: {job.text()[-3000:]}"
        n2 = job.map_line("n2")
        assert n2 is not None, job.text()[-3000:]
        core, phase = n2[7], float(n2[11]) / 1000
        ncoll = sum(1 for l in open(job.out) if l.startswith("node "))
        assert ncoll == 2, job.text()[-3000:]    # the active nodes only
        step = PERIOD / REPS
        before = wait_judged(job)
        load_ns = time.time_ns()
        with open(os.path.join(tmp, "load.log"), "w") as fl:
            load = subprocess.Popen(
                ["chrt", "-f", "30", os.path.join(b, "telem_load"),
                 "--device", core, "--cycle-ms", "2", "--duty", "0.75",
                 "--period", f"{step:.6f}", "--window",
                 f"{step / ncoll:.6f}", "--phase", f"{phase:.6f}",
                 "--epoch", str(job.epoch() or 0), "--duration",
                 str(int(DETECT_S + 30))],
                stdout=subprocess.DEVNULL, stderr=fl,
                stdin=subprocess.DEVNULL)
        restarted = wait_until(lambda: job.restarts() != []
                               or job.proc.poll() is not None, DETECT_S,
                               step_s=0.1)
        stop_proc(load)     # n3's device would take n2's turn on the core
        seen_ns = time.time_ns()
        rs = job.restarts()
        if not rs or rs[0][2] != "n2":
            code, figures = judge(job.query(every_telemd=True), "n2",
                                  load_ns)
            what = (f"the launcher took out {rs[0][2]} first" if rs else
                    f"no restart within {DETECT_S:.0f} s of the load"
                    if job.proc.poll() is None else
                    f"telem_launch exited {job.proc.returncode} unrestarted")
            if code == 3:
                pytest.skip(f"{what}, and the machine was too noisy to "
                            f"decide: {figures}")
            pytest.fail(f"{what}: {figures}; {job.text()[-3000:]}")
        assert restarted and rs[0][:2] == ("1", "slowgpu"), rs
        assert rs[0][3] == "n3", rs
        assert "device 0 on node 'n2' is" in open(job.log).read(), \
            "the restart does not say why"
        acts = [e for e in job.events() if e["severity"] == "act"]
        assert len(acts) == 1 and acts[0]["detector"] == "slowgpu" and \
            acts[0]["devices"] == [{"node": "n2", "device": "0"}], acts
        ev_ns = acts[0]["ts_ns"]        # the round that decided
        assert ev_ns >= load_ns, (acts, load_ns)
        # n2's telemd answers for its history until the job ends.
        hist = job.rounds(job.query(every_telemd=True))
        detect = [t for t in hist.get("n2", []) if load_ns <= t <= ev_ns]
        loaded = [t for t in hist.get("n2", []) if t >= load_ns]
        total = len(hist.get("n2", []))
        rc = job.finish()
        text = job.text()
        assert rc == 0, f"telem_launch exited {rc}: {text[-3000:]}"
        assert len(job.restarts()) == 1, job.restarts()
        fin = sorted((n, r, nn, k) for n, r, nn, k in FINISHED_RE.findall(
            open(job.out).read()))
        assert fin == [("n1", "0", "2", "1"), ("n3", "1", "2", "1")], \
            (fin, text[-3000:])
        print(f"loaded run: slowgpu named n2/0 after {len(detect)} round(s) "
              f"under the load ({acts[0]['evidence']['ratio']:.2f}x n1's "
              f"time, noise {100 * acts[0]['evidence']['noise']:.1f} %); "
              f"restart seen {(seen_ns - load_ns) / 1e9:.2f} s after the "
              f"load started, after {len(loaded)} rounds under it; {total} "
              f"rounds of n2 in all ({len(before['n2'])} before the load)")
        if len(detect) > 8:     # k of n is 4 of 5: say what held it back
            print("".join(l for l in open(job.log) if " warn: " in l
                          or "started again" in l)[-4000:])

        # ---- clean run: no restart within as many rounds ----------------
        clean = Job(tmp, "clean", script)
        jobs.append(clean)
        clean_end = time.monotonic() + MAP_S + START_S
        got: dict = {}

        def settled() -> bool:
            if clean.proc.poll() is not None or clean.restarts():
                return True
            got.clear()
            got.update(clean.rounds())
            return all(len(got.get(n, [])) >= SETTLE_ROUNDS
                       for n in ("n1", "n2"))
        # Other work on the machine, measured over the rounds slowgpu
        # judges (not the job's own start-up: its interpreters importing
        # numpy).
        if wait_until(settled, clean_end - time.monotonic(), step_s=0.5):
            busy = subprocess.Popen(
                [PY, os.path.join(SRC, "examples", "cpu_busy.py"),
                 busy_file], stdin=subprocess.DEVNULL)

        def as_many() -> bool:
            if clean.proc.poll() is not None or clean.restarts():
                return True
            got.clear()
            got.update(clean.rounds())
            return all(len(got.get(n, [])) >= total for n in ("n1", "n2"))
        wait_until(as_many, clean_end - time.monotonic(), step_s=0.5)
        # The figures, while every telemd still answers: the judge's, if
        # a restart shows up before the job ends.
        doc = clean.query(every_telemd=True)
        if not clean.restarts():
            assert clean.proc.poll() is None, \
                f"telem_launch exited {clean.proc.returncode}: " \
                f"{clean.text()[-3000:]}"
            assert all(len(got.get(n, [])) >= total for n in ("n1", "n2")), \
                (f"the clean run did not reach {total} rounds within "
                 f"{MAP_S + START_S} s: "
                 f"{ {n: len(v) for n, v in got.items()} }")
            rc = clean.finish()
        if clean.restarts():
            r = clean.restarts()[0]
            pct = busiest(busy_file, busy)
            code, figures = judge(doc, r[2].split(",")[0], 0)
            figures = f"its collectors' figures over the whole run: {figures}"
            if pct > BUSY_PCT:
                pytest.skip(f"the clean run was restarted ({r}) while a core "
                            f"was {pct} % busy with work this test did not "
                            f"start: {figures}")
            pytest.fail(f"the clean run was restarted: {r}: {figures}; "
                        f"{clean.text()[-3000:]}")
        assert rc == 0, f"telem_launch exited {rc}: {clean.text()[-3000:]}"
        assert not [e for e in clean.events() if e["severity"] == "act"], \
            clean.events()
        fin = sorted(FINISHED_RE.findall(open(clean.out).read()))
        assert fin == [("n1", "0", "2", "0"), ("n2", "1", "2", "0")], \
            (fin, clean.text()[-3000:])
        print(f"clean run: no restart in {min(len(got['n1']), len(got['n2']))}"
              f" rounds ({len(clean.events())} warning event(s)); busiest "
              f"core with other work {busiest(busy_file, busy)} %")
    finally:
        if load is not None:
            stop_proc(load)
        for j in jobs:
            j.close()
        if busy is not None:
            stop_proc(busy)
