"""Running the ``datapipe`` CLI from tests against the session's Ray cluster."""

from __future__ import annotations

import subprocess
import sys
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
