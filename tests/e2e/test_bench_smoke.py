"""Every benchmark runs from a fresh `make setup`: each `bench/*.py` script at its smallest
size (`--smoke`, the convention in bench/_smoke.py). A new benchmark joins by accepting
`--smoke`; one that cannot run here says why with a `# bench-smoke: skip (<reason>)` line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SKIP = re.compile(r"^# bench-smoke: skip \((.+)\)\s*$", re.M)


def _scripts() -> list[Path]:
    return [p for p in sorted((REPO / "bench").glob("*.py"))
            if not p.name.startswith("_") and 'if __name__ == "__main__"' in p.read_text(encoding="utf-8")]


@pytest.mark.parametrize("script", _scripts(), ids=lambda p: p.name)
def test_bench_runs_at_its_smallest_size(script, shared_dir, tmp_path):
    skip = SKIP.search(script.read_text(encoding="utf-8"))
    if skip:
        pytest.skip(f"{script.name}: {skip.group(1)}")
    # scratch files in a short folder of our own (Ray's socket paths must stay under 108 bytes)
    scratch = tempfile.mkdtemp(prefix="bsm", dir="/tmp")
    env = {**os.environ, "DATAPIPE_SHARED": str(shared_dir), "PYTHONPATH": str(REPO), "TMPDIR": scratch,
           "OMP_NUM_THREADS": "1"}
    env.pop("RAY_ADDRESS", None)     # benches start their own Ray, never the session's
    try:
        proc = subprocess.run([sys.executable, str(script), "--smoke"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if "unrecognized arguments: --smoke" in proc.stderr:
        pytest.fail(f"{script.name} does not accept --smoke: build its parser and call "
                    "_smoke.parse(ap, {option: smallest value}) (bench/_smoke.py)", pytrace=False)
    assert proc.returncode == 0, f"{script.name} --smoke failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert proc.stdout.strip(), f"{script.name} --smoke printed nothing"
