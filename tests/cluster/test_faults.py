"""Faults on a real two-node Ray cluster on loopback: a head (with its dashboard and job
server) and a second node, started once for the module (own ports, own temp dir, own
resources) and stopped by their own pids. A small job (read -> normalize -> an actor stage
-> exact-dup global stage -> a slow filter -> length) runs while the test kills (1) a split
task's worker, (2) a stage actor, (3) the second node's raylet, through the CLI, and a stage
actor in a `ray job submit` run; each run must complete with outputs byte-identical to an
undisturbed run's. Only processes of this cluster are ever killed (their parent chain
leads to one of its raylets)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.cluster
HELPER = Path(__file__).parents[1] / "ray" / "engine_stages.py"
REPO = Path(__file__).parents[2]
TASK = "ray::MapBatches(_run_split_task)"
ACTOR = "ray::MapWorker(MapBatches(SplitRunner))"


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
    """The second node (again, after a test killed its raylet): 1 CPU, resource
    ``second``, its own ports."""
    ports = [f"--node-manager-port={c['node_port']}", f"--dashboard-agent-listen-port={_port()}",
             f"--dashboard-agent-grpc-port={_port()}", f"--runtime-env-agent-port={_port()}",
             f"--metrics-export-port={_port()}"]
    subprocess.run([c["ray"], "start", f"--address={c['address']}", "--num-cpus=1", '--resources={"second": 1}',
                    f"--temp-dir={c['temp']}w", *ports, *c["common"]],
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


def _kill_mid_job(proc: subprocess.Popen, kill) -> bool:
    """Poll until ``kill()`` names processes, let them work a moment, SIGKILL them."""
    deadline = time.time() + 240
    while proc.poll() is None and time.time() < deadline:
        pids = kill()
        if pids:
            time.sleep(0.3)  # mid-split
            _kill_all(pids)
            return True
        time.sleep(0.05)
    return False


def _run(spec: Path, cluster, kill=None) -> Path:
    env = dict(cluster["env"], RAY_ADDRESS=cluster["address"], DATAPIPE_PROGRESS="0", PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, str(HELPER), "run", str(spec)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    killed = kill is not None and _kill_mid_job(proc, kill)
    said, _ = proc.communicate(timeout=600)
    assert kill is None or killed, "nothing to kill was ever found: " + said[-2000:]
    assert proc.returncode == 0, said[-4000:]
    return spec.parent / "out"


def _outputs(out: Path) -> dict[str, bytes]:
    skip = {"report.json", "report.md", "drops.png", "_SUCCESS", "ray.log"}  # run records, not data
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and p.name not in skip}


def _assert_same(out: Path, want: dict[str, bytes], name: str) -> None:
    report = json.loads((out / "report.json").read_text())
    assert report["accounting_ok"], (name, report["problems"])
    assert _outputs(out) == want, name


def test_job_submit_with_a_killed_actor_gives_identical_outputs(cluster, undisturbed, tmp_path):
    """`ray job submit` to the head's job server: the driver runs as the job's entrypoint
    on the cluster (this tree on its PYTHONPATH, shipped to workers by Ray); a stage actor
    is killed mid-job; the job succeeds with the undisturbed run's bytes."""
    if not _second_node_alive(cluster):
        _start_second_node(cluster)
    spec = _job(tmp_path)
    runtime_env = {"env_vars": {"PYTHONPATH": str(REPO), "DATAPIPE_PROGRESS": "0"}}
    cmd = [cluster["ray"], "job", "submit", "--address", cluster["dashboard"],
           "--runtime-env-json", json.dumps(runtime_env), "--", sys.executable, str(HELPER), "run", str(spec)]
    said, deadline = "", time.time() + 120
    while True:  # a fresh head's job agent can take a moment to register
        proc = subprocess.Popen(cmd, env=cluster["env"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        killed = _kill_mid_job(proc, lambda: _pids(ACTOR, under=cluster["temp"])[:1])
        said, _ = proc.communicate(timeout=600)
        if killed or "No available agent" not in said or time.time() > deadline:
            break
        time.sleep(2)
    assert killed, "no stage actor was ever found: " + said[-3000:]
    assert proc.returncode == 0 and "succeeded" in said.lower(), said[-4000:]
    _assert_same(spec.parent / "out", undisturbed, "job submit, actor killed")


def test_killed_task_actor_and_node_give_identical_outputs(cluster, undisturbed, tmp_path):
    temp = cluster["temp"]
    faults = {
        "task": lambda: _pids(TASK, under=temp)[:1],
        "actor": lambda: _pids(ACTOR, under=temp)[:1],
        # in the task phase, so the lost node's splits can be rescheduled on the head
        "raylet": lambda: _pids(f"{temp}w", "raylet", f"node_manager_port={cluster['node_port']}")
        if _pids(TASK, under=temp) else [],
    }
    for name, kill in faults.items():
        _assert_same(_run(_job(tmp_path / name), cluster, kill), undisturbed, name)
