"""Faults on a real two-node Ray cluster on loopback: a head (with its dashboard and job
server) and a second node, started once for the module (own ports, own temp dir, own
resources) and stopped by their own pids. A small job (read -> normalize -> an actor stage
-> exact-dup global stage -> a slow filter -> length) runs while the test kills, each run
showing two faults where it can: through the CLI, a split task's worker and then the
second node's raylet; under `ray job submit` (the repo shipped as the working
directory), a stage actor and then the whole second node; and the node the submitted
job's driver runs on, after which the same submission resumes from the finished splits.
Each job must commit outputs byte-identical to an undisturbed run's. Only processes of
this cluster are ever killed (their parent chain leads to one of its raylets)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from cli_helper import _submit

pytestmark = pytest.mark.cluster
HELPER = Path(__file__).parents[1] / "ray" / "engine_stages.py"
REPO = Path(__file__).parents[2]
TASK = "ray::MapBatches(_run_split_task)"
ACTOR = "ray::MapWorker(MapBatches(SplitRunner))"
DRIVER = {"driver_node": 1}   # only the second node has it: `--entrypoint-resources` puts a driver there


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _parent(pid: int) -> int:
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def _pids(*needles: str, under: str = "") -> list[int]:
    """Processes whose command line holds every needle; with ``under``, only those with an
    ancestor whose command line holds it (a Ray worker's title hides its cluster, its
    raylet's command line names the cluster's temp dir; other Rays on this machine are
    never touched)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and all(n in _cmdline(int(d.name)) for n in needles):
            pid = int(d.name)
            while under and pid > 1 and under not in _cmdline(pid):
                pid = _parent(pid)
            if not under or pid > 1:
                out.append(int(d.name))
    return out


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _start_second_node(c: dict) -> None:
    """The second node (again, after a test killed it): 1 CPU, resources ``second`` and
    ``driver_node`` (no stage asks for either), its own ports."""
    ports = [f"--node-manager-port={c['node_port']}", f"--dashboard-agent-listen-port={_port()}",
             f"--dashboard-agent-grpc-port={_port()}", f"--runtime-env-agent-port={_port()}",
             f"--metrics-export-port={_port()}"]
    subprocess.run([c["ray"], "start", f"--address={c['address']}", "--num-cpus=1",
                    '--resources={"second": 1, "driver_node": 1}', f"--temp-dir={c['temp']}w", *ports, *c["common"]],
                   check=True, env=c["env"], capture_output=True, timeout=300)


def _second_node_alive(c: dict) -> bool:
    return bool(_pids(f"{c['temp']}w", "raylet", f"node_manager_port={c['node_port']}"))


@pytest.fixture(scope="module")
def cluster():
    temp = f"/tmp/dpflt{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", RAY_DATA_USAGE_DISABLED="1")
    port, dash = _port(), _port()
    c = {"address": f"127.0.0.1:{port}", "dashboard": f"http://127.0.0.1:{dash}", "env": env, "temp": temp,
         "node_port": _port(), "ray": str(Path(sys.executable).with_name("ray")),
         "common": ["--disable-usage-stats", "--node-ip-address=127.0.0.1"]}
    try:
        # the dashboard hosts the job server `ray job submit` talks to; every agent port is
        # our own, so two nodes on one host (and other clusters here) never collide
        subprocess.run([c["ray"], "start", "--head", f"--port={port}", "--num-cpus=1", '--resources={"head": 1}',
                        f"--temp-dir={temp}h", "--include-dashboard=true", "--dashboard-host=127.0.0.1",
                        f"--dashboard-port={dash}", f"--dashboard-agent-listen-port={_port()}",
                        f"--dashboard-agent-grpc-port={_port()}", f"--runtime-env-agent-port={_port()}",
                        f"--metrics-export-port={_port()}", f"--ray-client-server-port={_port()}", *c["common"]],
                       check=True, env=env, capture_output=True, timeout=300)
        _start_second_node(c)
        yield c
    finally:
        for _ in range(3):  # this fixture's processes only: both temp dirs start with `temp`
            _kill_all(_pids(temp))
            time.sleep(1)


@pytest.fixture(scope="module")
def undisturbed(cluster, tmp_path_factory) -> dict[str, bytes]:
    """The reference: the job through the CLI with nothing killed."""
    want = _outputs(_run(_job(tmp_path_factory.mktemp("ref")), cluster))
    assert any(k.startswith("documents/main/") for k in want)
    return want


def _job(tmp: Path) -> Path:
    data = tmp / "data"
    data.mkdir(parents=True, exist_ok=True)
    for f in range(6):
        with open(data / f"part{f}.jsonl", "w") as fh:
            for i in range(10):
                fh.write(json.dumps({"id": f"{f}-{i}", "text": f"Text {(i + 3 * f) % 40} about the harbour and "
                                    "the ships that sail in the morning light."}) + "\n")
    spec = tmp / "job.yaml"
    spec.write_text(textwrap.dedent("""
        name: faults
        output: out
        execution: {batch_rows: 4, split_bytes: 1024, max_retries: 5, max_restarts: 5}
        sources:
          - {name: main, format: jsonl, paths: [data/*.jsonl], options: {id_key: id}}
        stages:
          - normalize: {}
          - tagger: {}
          - exact_dup: {}
          - slow: {seconds: 0.3}
          - length: {min_chars: 10}
    """))
    return spec


def _kill_in_turn(kills: list, stop: threading.Event, killed: list[str]) -> None:
    """For each ``(name, kill)`` in order: poll until ``kill()`` names processes, let them
    work a moment, SIGKILL them and note ``name`` in ``killed``; give up when ``stop``."""
    for name, kill in kills:
        while not stop.is_set():
            pids = kill()
            if pids:
                time.sleep(0.3)  # mid-split
                _kill_all(pids)
                killed.append(name)
                break
            time.sleep(0.05)


def _run(spec: Path, cluster, kills: list = ()) -> Path:
    """The job through the CLI (a driver beside the cluster, joining it by RAY_ADDRESS)
    while ``kills`` run in turn mid-job (:func:`_kill_in_turn`); all must happen."""
    env = dict(cluster["env"], RAY_ADDRESS=cluster["address"], DATAPIPE_PROGRESS="0", PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, str(HELPER), "run", str(spec)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_in_turn, args=(kills, stop, killed), daemon=True)
    killer.start()
    try:
        said, _ = proc.communicate(timeout=600)
    finally:
        stop.set()
        killer.join()
    assert killed == [name for name, _ in kills], f"killed only {killed}: " + said[-2000:]
    assert proc.returncode == 0, said[-4000:]
    return spec.parent / "out"


def _outputs(out: Path) -> dict[str, bytes]:
    skip = {"report.json", "report.md", "drops.png", "_SUCCESS", "ray.log"}  # run records, not data
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and p.name not in skip}


def _assert_same(out: Path, want: dict[str, bytes], name: str) -> None:
    report = json.loads((out / "report.json").read_text())
    assert report["accounting_ok"], (name, report["problems"])
    assert _outputs(out) == want, name


def _node_pids(c: dict) -> list[int]:
    """Every process of the second node: its raylet, agents and workers (and a job driver
    there), i.e. what a lost machine takes with it."""
    return _pids(under=f"{c['temp']}w")


def _submit_job(c: dict, spec: Path, kills: list, *, entrypoint_resources: dict | None = None
                ) -> tuple[subprocess.CompletedProcess, list[str]]:
    """``ray job submit`` of the job to the head's job server with this repo as the
    working directory (Ray zips and ships it; the entrypoint runs in Ray's copy), the
    way docs/cluster.md says, while ``kills`` run in turn mid-job. Returns the finished
    command and the names of the kills done."""
    cmd = [c["ray"], "job", "submit", "--address", c["dashboard"], "--working-dir", str(REPO),
           "--runtime-env-json", json.dumps({"env_vars": {"DATAPIPE_PROGRESS": "0"}})]
    if entrypoint_resources:
        cmd += ["--entrypoint-resources", json.dumps(entrypoint_resources)]
    cmd += ["--", sys.executable, str(HELPER.relative_to(REPO)), "run", str(spec)]
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_in_turn, args=(kills, stop, killed), daemon=True)
    killer.start()
    try:
        proc = _submit(cmd, c["env"], REPO, timeout=600)
    finally:
        stop.set()
        killer.join()
    return proc, killed


def _final_status(c: dict, submission: str) -> str:
    """The job server's status of ``submission`` once it is no longer PENDING or RUNNING."""
    deadline = time.time() + 120
    while True:
        said = subprocess.run([c["ray"], "job", "status", "--address", c["dashboard"], submission], env=c["env"],
                              capture_output=True, text=True, timeout=60)
        text = said.stdout + said.stderr   # "Job 'x' failed" / "... succeeded", else "Status for job 'x': RUNNING"
        status = re.search(r"Job '\S+' (failed|succeeded|was stopped)|Status for job '\S+': (\w+)", text)
        status = (status.group(1) or status.group(2)).split()[-1].upper() if status else text
        if status not in ("PENDING", "RUNNING") or time.time() > deadline:
            return status
        time.sleep(1)


def _said(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout[-4000:] + proc.stderr[-2000:]


def test_job_submit_survives_a_killed_actor_and_a_lost_node(cluster, undisturbed, tmp_path):
    """`ray job submit` (the driver on the head, as Ray places it by default) of one job
    that loses a stage actor in its first phase and then the whole second node (raylet,
    agents, workers) while a split task runs there in its second; the job succeeds with
    the undisturbed run's bytes."""
    if not _second_node_alive(cluster):
        _start_second_node(cluster)
    temp = cluster["temp"]
    kills = [("actor", lambda: _pids(ACTOR, under=temp)[:1]),
             ("node", lambda: _node_pids(cluster) if _pids(TASK, under=f"{temp}w") else [])]
    spec = _job(tmp_path)
    proc, killed = _submit_job(cluster, spec, kills)
    assert killed == ["actor", "node"], f"killed only {killed}: " + _said(proc)
    assert proc.returncode == 0 and "succeeded" in _said(proc).lower(), _said(proc)
    _assert_same(spec.parent / "out", undisturbed, "job submit, actor and node killed")


def test_job_submit_whose_driver_node_is_lost_resumes_when_resubmitted(cluster, undisturbed, tmp_path):
    """The driver (the job's entrypoint) runs on the second node (``--entrypoint-resources``
    asks for the resource only that node has); the node is lost once a split of the second
    phase has finished, so the job fails, leaving its staging folder and the dead driver's
    lock. With the node back, the same `ray job submit` resumes from the finished splits
    (all of the first phase, some of the second) and commits the undisturbed run's bytes."""
    if not _second_node_alive(cluster):
        _start_second_node(cluster)
    spec = _job(tmp_path)
    out = spec.parent / "out"

    def driver_mid_job() -> list[int]:
        driver_there = _pids(str(spec), under=f"{cluster['temp']}w")
        # a split of the second phase done: the resubmission reuses all of the first
        # (no actor pool to start again) and that split
        finished = list(spec.parent.glob("out.staging-*/work/done/p1/*/*.json"))
        return _node_pids(cluster) if driver_there and finished else []

    proc, killed = _submit_job(cluster, spec, [("driver node", driver_mid_job)], entrypoint_resources=DRIVER)
    assert killed == ["driver node"], "the driver never ran on the second node with a split done: " + _said(proc)
    # Ray's client loses the job's log stream and exits 0 with the job still RUNNING;
    # the head marks it FAILED once it notices the supervisor actor is gone
    assert "succeeded" not in _said(proc).lower(), _said(proc)
    assert not (out / "_SUCCESS").exists() and (spec.parent / "out.lock").exists()
    _start_second_node(cluster)
    first = re.search(r"Job '(\S+)' submitted successfully", proc.stdout + proc.stderr)
    assert first, _said(proc)
    assert _final_status(cluster, first.group(1)) == "FAILED"

    again, _ = _submit_job(cluster, spec, [], entrypoint_resources=DRIVER)
    assert again.returncode == 0 and "succeeded" in _said(again).lower(), _said(again)
    report = json.loads((out / "report.json").read_text())
    splits = report["splits"]
    assert splits["reused"] == splits["total"] and splits["reused_per_phase"][1] > 0, splits
    _assert_same(out, undisturbed, "driver's node lost, job resubmitted")


def test_cli_run_with_a_killed_task_then_a_killed_raylet_gives_identical_outputs(cluster, undisturbed, tmp_path):
    """Through the CLI, in the task phase: a split task's worker on the head is killed,
    then the second node's raylet (its workers die with it) while a split runs there, so
    the lost node's splits are rescheduled on the head."""
    if not _second_node_alive(cluster):
        _start_second_node(cluster)
    temp = cluster["temp"]
    kills = [("task", lambda: _pids(TASK, under=f"{temp}h")[:1]),
             ("raylet", lambda: _pids(f"{temp}w", "raylet", f"node_manager_port={cluster['node_port']}")
              if _pids(TASK, under=f"{temp}w") else [])]
    _assert_same(_run(_job(tmp_path), cluster, kills), undisturbed, "cli, task and raylet killed")
