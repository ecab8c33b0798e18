"""Running the ``datapipe`` CLI from tests against the session's Ray cluster."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def _env(ray_cluster, **extra):
    env = dict(ray_cluster["env"])
    env["RAY_ADDRESS"] = ray_cluster["address"]
    env["DATAPIPE_PROGRESS"] = "0"
    env.update(extra)
    return env


def _datapipe(args, env, **kw):
    return subprocess.run([sys.executable, "-m", "datapipe", *args], env=env, capture_output=True, text=True, **kw)


def _data_files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*.parquet"))}


def _submit(cmd: list[str], env: dict, cwd: Path, timeout: int) -> subprocess.CompletedProcess:
    """``ray job submit`` as ``cmd``, asked again while the head answers "No available
    agent": a fresh (or, on a loaded machine, a busy) head's job agent can take a while."""
    deadline = time.time() + 300
    while True:
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode == 0 or "No available agent" not in proc.stderr + proc.stdout or time.time() > deadline:
            return proc
        time.sleep(5)
