"""The embedded Ray a local run starts: its workers run at the driver's priority.

Ray starts workers at nice 15; beside any nice-0 process on a busy machine they then get a
small fraction of a core (docs/engine.md "Under contention"). ``ensure_ray`` starts an
embedded Ray whose tasks and actors run at nice 0 unless the user set
``RAY_worker_niceness``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

NICENESS = """
import json, os, sys
from datapipe.ray_session import ensure_ray, stop_ray
from datapipe.spec import load_job
import ray

assert ensure_ray(load_job(sys.argv[1]), verbose=False)
try:
    @ray.remote
    def task():
        return os.nice(0)

    @ray.remote
    class Actor:
        def nice(self):
            return os.nice(0)

    print(json.dumps({"driver": os.nice(0), "task": ray.get(task.remote()),
                      "actor": ray.get(Actor.remote().nice.remote())}), flush=True)
finally:
    stop_ray()
"""


def test_embedded_ray_workers_run_at_the_drivers_priority(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.jsonl").write_text('{"id": "d0", "text": "A document."}\n')
    spec = tmp_path / "job.yaml"
    spec.write_text("name: nice\noutput: out\nsources:\n  - {name: docs, format: jsonl, paths: [data/a.jsonl]}\n"
                    "stages:\n  - normalize: {}\nexecution: {num_cpus: 1}\n")
    temp = Path("/tmp") / f"dpnice{uuid.uuid4().hex[:8]}"   # short: Ray's socket paths have a length limit
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_worker_niceness")}
    env.update(RAY_TMPDIR=str(temp), RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=str(REPO))
    try:
        proc = subprocess.run([sys.executable, "-c", NICENESS, str(spec)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    nice = json.loads(proc.stdout.strip().splitlines()[-1])
    assert nice == {"driver": nice["driver"], "task": nice["driver"], "actor": nice["driver"]}, nice
