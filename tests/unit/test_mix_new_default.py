"""`mix new` as a new user runs it (#29): without --token-budget no source is read more
than once, and an epochs warning is shown once, not three times."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from shard_helper import write_text_sources

from trainer_bridge.mix import plan_mix

SEQ = 64
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shards(shared_dir, tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("mixnew")
    return write_text_sources(shared_dir, d / "shards", max_bytes=20_000, shard_tokens=4096)


def _mix(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "datapipe", "mix", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)


def test_default_budget_reads_every_source_at_most_once(shards, tmp_path):
    # weights far from the sources' sizes: the old default (all tokens) read one source many epochs
    weights = {"wiki": 0.1, "books": 0.2, "news": 0.7}
    out = tmp_path / "m.yaml"
    proc = _mix("new", "-o", str(out), "--seq-len", str(SEQ), *[f"{shards[n]}={w}" for n, w in weights.items()])
    assert proc.returncode == 0, proc.stderr
    rows = plan_mix(out).rows
    assert max(r.epochs for r in rows) <= 1.0
    assert max(r.epochs for r in rows) > 0.98            # the largest such budget: the scarce source once


def test_epochs_warning_is_shown_once(shards, tmp_path):
    out = tmp_path / "m.yaml"
    windows = sum((int(__import__("json").loads(p.read_text())["totals"]["tokens"]) - 1) // SEQ for p in shards.values())
    proc = _mix("new", "-o", str(out), "--seq-len", str(SEQ), "--token-budget", str(SEQ * windows * 2),
                "--warn-epochs", "1.5", *[f"{p}=1" for p in shards.values()])
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout + proc.stderr
    assert said.count("above warn_epochs") == sum(r.epochs > 1.5 for r in plan_mix(out).rows) >= 1
    plan = _mix("plan", str(out))
    assert (plan.stdout + plan.stderr).count("above warn_epochs") == said.count("above warn_epochs")
