"""The trainer on a scheduled mix (one CPU process, real gloo): per-source train loss that
adds up to the logged loss, per-source validation loss on the held-out tails, and a
mid-run reweight resumed from a checkpoint (the trained prefix kept, the new weights after,
recorded in the metrics) next to an edit that is refused."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from shard_helper import write_text_sources

from trainer_bridge.mix import resolve_mix

SEQ, G, STEPS = 32, 8, 10
W0 = {"wiki": 0.5, "books": 0.3, "news": 0.2}
W1 = {"wiki": 0.4, "books": 0.6}


def _mix(path: Path, shards: dict[str, Path], phases: list[dict]) -> Path:
    path.write_text(yaml.safe_dump({
        "name": path.stem, "seq_len": SEQ, "token_budget": SEQ * G * 40, "seed": 3, "max_epochs": 1000,
        "warn_epochs": 1000, "sources": [{"manifest": os.path.relpath(m, path.parent)} for m in shards.values()],
        "schedule": phases, "validation": {"tokens": 200}}, sort_keys=False))
    return path


def _phases(main_samples: int = 3 * G, extra: list[dict] = ()) -> list[dict]:
    """main for 3 steps, then a 4-step transition to W1 (steps 4-7), then W1."""
    return [{"name": "main", "tokens": main_samples * SEQ, "weights": W0}, *extra,
            {"name": "anneal", "transition": 4 * G * SEQ, "weights": W1}]


def _train(repo: Path, cfg: Path, metrics: Path, ckpt: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(repo))
    cmd = [sys.executable, "-m", "trainer_bridge.train", "--config", str(cfg), "--set", f"metrics_path={metrics}",
           "--set", f"ckpt_dir={ckpt}", *extra]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _digests(plan, start: int, steps: int) -> list[str]:
    rows = plan.read(start, steps * G).astype(np.int64)
    return [hashlib.blake2b(rows[t * G:(t + 1) * G].tobytes(), digest_size=16).hexdigest() for t in range(steps)]


@pytest.fixture(scope="module")
def shards(shared_dir, tmp_path_factory) -> dict[str, Path]:
    return write_text_sources(shared_dir, tmp_path_factory.mktemp("mt") / "shards", max_bytes=30_000,
                              shard_tokens=2048)


def test_per_source_losses_and_a_mid_run_reweight(shards, tmp_path, repo_dir):
    mix = _mix(tmp_path / "mix.yaml", shards, _phases())
    cfg = tmp_path / "train.yaml"
    cfg.write_text(yaml.safe_dump({
        "mix": str(mix), "model": {"dim": 32, "n_layers": 1, "n_heads": 2, "max_seq_len": SEQ}, "tp": 1,
        "global_batch": G, "micro_batch": 4, "steps": STEPS, "lr": 3e-3, "warmup_steps": 2, "device": "cpu",
        "cpu_threads": 1, "log_every": 1, "eval_every": 2, "ckpt_every": 2, "ckpt_async": False,
        "batch_digest": True, "hash_cache": str(tmp_path / "c.json")}))
    a = _train(repo_dir, cfg, tmp_path / "a.jsonl", tmp_path / "ckpt_a")
    assert a.returncode == 0, a.stderr[-3000:]
    rows, plan = _rows(tmp_path / "a.jsonl"), resolve_mix(mix)
    names = list(plan.names)
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    for r in rows:  # the per-source losses are the step's loss split by source: they add back up
        lo, hi = r["samples"]
        n = [c1 - c0 for c0, c1 in zip(plan.counts_at(lo), plan.counts_at(hi))]
        assert set(r["loss_by_source"]) == {s for s, c in zip(names, n) if c}
        mean = sum(c * r["loss_by_source"].get(s, 0) for s, c in zip(names, n)) / sum(n)
        assert mean == pytest.approx(r["loss"], rel=1e-5)
    assert all("news" not in r["loss_by_source"] for r in rows[7:])  # annealed out after step 7
    val = [r for r in rows if "val_loss" in r]
    assert [r["step"] for r in val] == [2, 4, 6, 8, 10] and all(set(r["val_loss"]) == set(names) for r in val)
    assert np.mean(list(val[-1]["val_loss"].values())) < np.mean(list(val[0]["val_loss"].values()))
    assert "train loss by source: wiki" in a.stdout and "val loss by source: wiki" in a.stdout

    # at step 2 (cursor 16, inside main) the user moves weight to news until the anneal
    shutil.copytree(tmp_path / "ckpt_a", tmp_path / "ckpt_b")
    shutil.copy(tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    more_news = {"name": "more-news", "tokens": G * SEQ, "weights": {"news": 0.75, "wiki": 0.25}}
    _mix(mix, shards, _phases(2 * G, [more_news]))
    b = _train(repo_dir, cfg, tmp_path / "b.jsonl", tmp_path / "ckpt_b", "--set", "resume_from=2")
    assert b.returncode == 0, b.stderr[-3000:]
    new = resolve_mix(mix)
    assert f"mix: changed at global sample 16 (plan {plan.plan_hash} -> {new.plan_hash})" in b.stdout
    got = _rows(tmp_path / "b.jsonl")
    assert got[:2] == rows[:2]
    assert got[2]["run"]["mix_changes"] == [{"at": 16, "from": plan.plan_hash, "to": new.plan_hash}]
    assert [r["batch"] for r in got[2:]] == _digests(new, 16, STEPS - 2)
    assert got[2]["batch"] != rows[2]["batch"] and set(got[2]["loss_by_source"]) == {"news", "wiki"}
    assert [r["batch"] for r in got[3:]] != [r["batch"] for r in rows[3:]]

    # the same edit one checkpoint later (cursor 32: main's last step and more-news would be rewritten)
    late = _train(repo_dir, cfg, tmp_path / "c.jsonl", tmp_path / "ckpt_a", "--set", "resume_from=4")
    assert late.returncode == 2
    assert "changes samples this checkpoint already trained on (global samples before its cursor 32)" in late.stderr
    assert "phase 'main' ended at sample 24 (token 768), before the checkpoint's cursor 32" in late.stderr
