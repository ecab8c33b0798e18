"""Faults on a real two-node Ray cluster on loopback: a head and a second node started
by the fixture (own ports, own temp dir, own resources) and stopped by their own pids.
A small job (read -> normalize -> an actor stage -> exact-dup global stage -> a slow
filter -> length) runs through the CLI while the test kills (1) a split task's worker,
(2) a stage actor, (3) the second node's raylet; each run must complete with outputs
byte-identical to an undisturbed run's."""

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


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pids(*needles: str) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if all(n in cmd for n in needles):
                out.append(int(d.name))
    return out


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.fixture
def cluster(tmp_path_factory):
    ray_bin = Path(sys.executable).with_name("ray")
    temp = f"/tmp/dpflt{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", RAY_DATA_USAGE_DISABLED="1")
    port, node_port = _port(), _port()
    common = ["--disable-usage-stats", "--node-ip-address=127.0.0.1"]
    try:
        subprocess.run([str(ray_bin), "start", "--head", f"--port={port}", "--num-cpus=1", '--resources={"head": 1}',
                        f"--temp-dir={temp}h", "--include-dashboard=false", *common],
                       check=True, env=env, capture_output=True, timeout=300)
        subprocess.run([str(ray_bin), "start", f"--address=127.0.0.1:{port}", "--num-cpus=1",
                        '--resources={"second": 1}', f"--temp-dir={temp}w", f"--node-manager-port={node_port}", *common],
                       check=True, env=env, capture_output=True, timeout=300)
        yield {"address": f"127.0.0.1:{port}", "env": env, "temp": temp, "node_port": node_port}
    finally:
        for _ in range(3):  # this fixture's processes only: both temp dirs start with `temp`
            _kill_all(_pids(temp))
            time.sleep(1)


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


def _run(spec: Path, cluster, kill=None) -> Path:
    env = dict(cluster["env"], RAY_ADDRESS=cluster["address"], DATAPIPE_PROGRESS="0", PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, str(HELPER), "run", str(spec)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    killed = False
    deadline = time.time() + 240
    while kill is not None and not killed and proc.poll() is None and time.time() < deadline:
        pids = kill()
        if pids:
            time.sleep(0.3)  # mid-split
            _kill_all(pids)
            killed = True
        time.sleep(0.05)
    said, _ = proc.communicate(timeout=600)
    assert kill is None or killed, "nothing to kill was ever found: " + said[-2000:]
    assert proc.returncode == 0, said[-4000:]
    return spec.parent / "out"


def _outputs(out: Path) -> dict[str, bytes]:
    skip = {"report.json", "report.md", "drops.png", "_SUCCESS", "ray.log"}  # run records, not data
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and p.name not in skip}


def test_killed_task_actor_and_node_give_identical_outputs(cluster, tmp_path):
    want = _outputs(_run(_job(tmp_path / "ref"), cluster))
    assert any(k.startswith("documents/main/") for k in want)
    temp = cluster["temp"]
    faults = {
        "task": lambda: _pids("ray::MapBatches(_run_split_task)")[:1],
        "actor": lambda: _pids("ray::MapWorker(MapBatches(SplitRunner))")[:1],
        # in the task phase, so the lost node's splits can be rescheduled on the head
        "raylet": lambda: _pids(f"{temp}w", "raylet", f"node_manager_port={cluster['node_port']}")
        if _pids("ray::MapBatches(_run_split_task)") else [],
    }
    for name, kill in faults.items():
        out = _run(_job(tmp_path / name), cluster, kill)
        report = json.loads((out / "report.json").read_text())
        assert report["accounting_ok"], (name, report["problems"])
        assert _outputs(out) == want, name
