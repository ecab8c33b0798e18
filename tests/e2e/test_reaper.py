"""An embedded Ray stops with its driver: a SIGKILLed `datapipe run` leaves none of the
processes it started (Ray leaves its dashboard and runtime-env agents running forever),
a finished run leaves nothing either (not even the reaper), and the reaper stops only what
the driver told it to watch."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper reads /proc (Linux only)")]

REPO = Path(__file__).resolve().parents[2]


# -- a view of /proc written apart from the reaper's, as the test's own oracle ---------

def _procs() -> dict[int, tuple[int, int, str, str]]:
    """pid -> (ppid, start time, state, command line) of every process."""
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_bytes().decode(errors="replace")
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            out[int(d.name)] = (int(fields[1]), int(fields[19]), fields[0], cmd)
    return out


def _descendants(root: int, procs: dict[int, tuple[int, int, str, str]]) -> dict[int, tuple[int, str]]:
    """pid -> (start time, command line) of every live process under ``root``."""
    found, todo = {}, [root]
    while todo:
        parent = todo.pop()
        for pid, (ppid, start, state, cmd) in procs.items():
            if ppid == parent and pid not in found and state not in "ZX":
                found[pid] = (start, cmd)
                todo.append(pid)
    return found


def _alive(seen: dict[int, tuple[int, str]]) -> dict[int, str]:
    """Those of ``seen`` that are still the same live process (a zombie is dead)."""
    procs = _procs()
    return {pid: cmd for pid, (start, cmd) in seen.items()
            if pid in procs and procs[pid][1] == start and procs[pid][2] not in "ZX"}


def _wait_gone(seen: dict[int, tuple[int, str]], timeout: float) -> dict[int, str]:
    deadline = time.time() + timeout
    while (left := _alive(seen)) and time.time() < deadline:
        time.sleep(0.1)
    return left


def _kill(seen: dict[int, tuple[int, str]]) -> None:
    """Cleanup after a failed assertion: only the processes this test saw."""
    for pid in _alive(seen):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# -- a real embedded Ray -----------------------------------------------------------

def _tiny_job(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.jsonl").write_text("".join(
        json.dumps({"id": f"d{i}", "text": f"Document number {i}, a few words of text."}) + "\n" for i in range(200)))
    spec = tmp_path / "job.yaml"
    spec.write_text("name: reaper\noutput: out\nsources:\n  - {name: docs, format: jsonl, paths: [data/*.jsonl], "
                    "options: {id_key: id}}\nstages:\n  - normalize: {}\nexecution: {num_cpus: 1}\n")
    return spec


def _embedded_env() -> dict[str, str]:
    """No RAY_ADDRESS (the session cluster's), so `datapipe run` starts its own Ray, under
    a temp root of its own (short: Ray's socket paths have a length limit)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    temp = Path("/tmp") / f"dpreap{uuid.uuid4().hex[:8]}"
    env.update(RAY_TMPDIR=str(temp), DATAPIPE_PROGRESS="0", RAY_AUTH_MODE="disabled",
               RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=str(REPO))
    return env


def test_sigkilled_run_leaves_no_process_it_started(tmp_path):
    """`datapipe run` killed once the job's Ray workers run: every process it started
    (Ray's GCS, raylet, agents, workers, and the reaper itself) is gone within seconds."""
    log, env = tmp_path / "console.txt", _embedded_env()
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "datapipe", "run", str(_tiny_job(tmp_path))], cwd=tmp_path,
                                env=env, stdout=out, stderr=subprocess.STDOUT)
    seen: dict[int, tuple[int, str]] = {}
    try:
        deadline = time.time() + 120
        while proc.poll() is None and time.time() < deadline:
            seen.update(_descendants(proc.pid, _procs()))
            cmds = [cmd for _, cmd in seen.values()]
            workers = [c for c in cmds if c.startswith("ray::") and "Agent" not in c]
            if workers and sum("Agent" in c or "agent.py" in c for c in cmds) >= 2:
                break
            time.sleep(0.1)
        assert proc.poll() is None, "the run ended before its workers were seen:\n" + log.read_text()[-3000:]
        assert any("reaper.py" in cmd for _, cmd in seen.values()), seen
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        left = _wait_gone(seen, timeout=20)
        assert not left, f"still running after the driver was SIGKILLed: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
        _kill(seen)
        shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)


RUN_THEN_WAIT = """
import json, sys
from datapipe.runner import run_job
from datapipe.spec import load_job

result = run_job(load_job(sys.argv[1]), echo=lambda line: None)
print(json.dumps(result.report["totals"]), flush=True)
sys.stdin.readline()   # the process lives on, as a notebook or a service would
"""


def test_finished_run_leaves_no_process(tmp_path):
    """A normal run, in a process that lives on after it (a notebook, a service): once
    run_job returns, nothing it started is running, the reaper included."""
    spec, env = _tiny_job(tmp_path), _embedded_env()
    proc = subprocess.Popen([sys.executable, "-c", RUN_THEN_WAIT, str(spec)], cwd=tmp_path,
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    seen: dict[int, tuple[int, str]] = {}
    try:
        deadline = time.time() + 120
        while proc.poll() is None and time.time() < deadline:
            seen.update(_descendants(proc.pid, _procs()))
            if select.select([proc.stdout], [], [], 0.1)[0]:
                break
        totals = json.loads(proc.stdout.readline())
        assert totals["documents"] == 200, totals
        left = {pid: cmd for pid, (_, cmd) in _descendants(proc.pid, _procs()).items()}
        assert not left, f"running after run_job returned: {left}"
        assert any("reaper.py" in cmd for _, cmd in seen.values()) and any("raylet" in cmd for _, cmd in seen.values())
    finally:
        proc.kill()
        proc.wait(timeout=30)
        _kill(seen)
        shutil.rmtree(env["RAY_TMPDIR"], ignore_errors=True)


# -- the reaper alone: only what it was told to watch ------------------------------------

# Like Ray's raylet: dies with the driver (PR_SET_PDEATHSIG), while its child (an agent)
# is reparented and lives on.
RAYLET = ("import ctypes, subprocess, sys, time\n"
          "ctypes.CDLL(None).prctl(1, 9)\n"
          "agent = subprocess.Popen(['sleep', '300'])\n"
          "print(agent.pid, flush=True)\n"
          "time.sleep(300)\n")

DRIVER = """
import json, subprocess, sys, time
from datapipe import reaper

w = reaper.start()
raylet = subprocess.Popen([sys.executable, "-c", RAYLET], stdout=subprocess.PIPE, text=True)
agent = int(raylet.stdout.readline())
own = subprocess.Popen(["sleep", "300"])   # the driver's own child, started while 'Ray starts'
time.sleep(0.5)                            # the reaper has seen it (before `track`, it watches such children)
w.track([raylet.pid])
print(json.dumps({"reaper": w.pid, "raylet": raylet.pid, "agent": agent, "own": own.pid}), flush=True)
if sys.argv[1] == "done":                  # Ray stopped normally, but left its agent behind
    sys.stdin.readline()
    raylet.kill()
    raylet.wait()
    w.done()
    print("stopped", flush=True)
time.sleep(300)
"""


def _fake_driver(how: str) -> tuple[subprocess.Popen, dict[str, int], dict[int, tuple[int, str]]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", f"RAYLET = {RAYLET!r}\n{DRIVER}", how], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pids = json.loads(proc.stdout.readline())
    procs = _procs()
    seen = {pid: (procs[pid][1], procs[pid][3]) for pid in pids.values() if pid in procs}
    if len(seen) != 4:
        proc.kill()
        _kill(seen)
        pytest.fail(f"the fake driver's processes are not all running: {pids}, {seen}")
    return proc, pids, seen


def test_killed_driver_reaper_stops_the_tracked_tree_only():
    """The driver SIGKILLed: the tracked 'raylet' dies with it, its orphaned 'agent' is
    stopped by the reaper, which then exits; the driver's own child is untouched."""
    proc, pids, seen = _fake_driver("kill")
    try:
        time.sleep(0.5)   # the reaper reads `track` and records the agent under the 'raylet'
        proc.kill()
        proc.wait(timeout=10)
        gone = {pid: s for pid, s in seen.items() if pid != pids["own"]}
        assert not _wait_gone(gone, timeout=10), _alive(gone)
        assert pids["own"] in _alive(seen), "the reaper stopped a process Ray did not start"
    finally:
        _kill(seen)


def test_done_reaper_stops_leftovers_and_exits():
    """`done` (Ray stopped by the driver): what Ray left (a reparented agent) is stopped,
    the reaper has exited when done() returns, and the driver's own child is untouched."""
    proc, pids, seen = _fake_driver("done")
    try:
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "stopped\n"
        left = _alive(seen)   # done() returns once the reaper has exited
        assert pids["agent"] not in left and pids["reaper"] not in left, left
        assert pids["own"] in left, "the reaper stopped a process Ray did not start"
    finally:
        proc.kill()
        proc.wait(timeout=10)
        _kill(seen)
