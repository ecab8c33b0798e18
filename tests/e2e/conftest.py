"""Fixtures of the CLI end-to-end tests: the sample models and one run of the sample job."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_helper import _datapipe, _env


@pytest.fixture(scope="session")
def sample_models(repo_dir):
    """The models jobs/sample.yaml uses, trained from the bundled corpus (`make models`)."""
    proc = subprocess.run(["make", "-s", "models", f"BIN={Path(sys.executable).parent}", "STAMP="],
                          cwd=repo_dir, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return repo_dir / "models"


@pytest.fixture(scope="session")
def sample_output(ray_cluster, repo_dir, tmp_path_factory, sample_models, shared_dir):
    """jobs/sample.yaml run once through the CLI (on the session cluster)."""
    out = tmp_path_factory.mktemp("sample") / "out"
    proc = _datapipe(["run", str(repo_dir / "jobs" / "sample.yaml"), "--output", str(out)], _env(ray_cluster),
                     cwd=repo_dir, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    (out.parent / "console.txt").write_text(proc.stdout + proc.stderr)   # what the user saw
    return out, proc.stdout


