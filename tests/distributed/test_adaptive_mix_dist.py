"""Loss-driven upsampling (the mix's ``adaptive:``) under torchrun with real gloo process groups
on CPU: a dp=2 reference run whose weights move every 3 steps from the per-source validation
loss, then resumes from its checkpoints between two updates: on the reference's own layout
every step is bit-exact (batches, losses, the updates' weights), and on dp=1 the global
batches are the reference's, bit for bit, updates after the resume included. The same with
the train-loss signal from dp=1 to dp=2 (its running sums since the last update are in the
checkpoint). The weight history is in the checkpoint and in the metrics."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from shard_helper import write_text_sources

pytestmark = pytest.mark.dist

STEPS, G, SEQ, EVERY = 10, 8, 64, 3


def _torchrun(repo: Path, nproc: int, cfg: Path, metrics: Path, ckpt: Path, *extra: str):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(repo), PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
           "-m", "trainer_bridge.train", "--config", str(cfg),
           "--set", f"metrics_path={metrics}", "--set", f"ckpt_dir={ckpt}", *extra]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600, check=False)


def _metrics(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _reference(shared_dir, repo_dir, d: Path, signal: str, nproc: int) -> dict:
    manifests = write_text_sources(shared_dir, d / "shards", max_bytes=40_000, shard_tokens=8192)
    mix = d / "mix.yaml"
    mix.write_text(yaml.safe_dump({
        "name": "adaptive", "seq_len": SEQ, "token_budget": SEQ * G * 200, "seed": 5, "max_epochs": 100,
        "sources": [{"manifest": os.path.relpath(m, d), "weight": w} for m, w in zip(manifests.values(), (.5, .3, .2))],
        "adaptive": {"every": EVERY, "signal": signal, "rule": "exp_gradient", "eta": 4.0, "smoothing": 0.1,
                     "floors": {"news": 0.1}, "ceilings": {"wiki": 0.6}, "grid": 100},
        "validation": {"tokens": 300}}))
    cfg = d / "train.yaml"
    cfg.write_text(yaml.safe_dump({
        "mix": str(mix), "model": {"dim": 64, "n_layers": 2, "n_heads": 4, "max_seq_len": SEQ},
        "dp": -1, "tp": 1, "global_batch": G, "micro_batch": 2, "steps": STEPS, "lr": 3e-3, "warmup_steps": 2,
        "batch_digest": True, "ckpt_every": 4, "ckpt_async": False, "cpu_threads": 1, "log_every": 1,
    }))
    run = _torchrun(repo_dir, nproc, cfg, d / "ref.jsonl", d / "ckpt_ref")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    return {"dir": d, "cfg": cfg, "repo": repo_dir, "rows": _metrics(d / "ref.jsonl")}


@pytest.fixture(scope="module")
def ref(shared_dir, repo_dir, tmp_path_factory):
    return _reference(shared_dir, repo_dir, tmp_path_factory.mktemp("adaptive-dist"), "validation", 2)


def _resume(ref: dict, step: int, nproc: int) -> list[dict]:
    d = ref["dir"]
    tag = f"dp{nproc}-{step}"
    shutil.copytree(d / "ckpt_ref", d / f"ckpt_{tag}")
    shutil.copy(d / "ref.jsonl", d / f"{tag}.jsonl")
    run = _torchrun(ref["repo"], nproc, ref["cfg"], d / f"{tag}.jsonl", d / f"ckpt_{tag}",
                    "--set", f"resume_from={step}")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    got = _metrics(d / f"{tag}.jsonl")
    assert [r["step"] for r in got] == list(range(1, STEPS + 1))
    return got


def _history(ckpt: Path) -> dict:
    return json.loads(json.loads((ckpt / "_COMPLETE").read_text())["loader"]["adaptive"])


@pytest.mark.parametrize("step, nproc", [(4, 2), (4, 1)])   # between the updates after steps 3 and 6
def test_resume_between_two_updates_reads_what_the_uninterrupted_run_read(ref, step, nproc):
    d, rows = ref["dir"], ref["rows"]
    updates = {r["step"]: r["mix_update"] for r in rows if "mix_update" in r}
    assert sorted(updates) == [3, 6, 9]
    assert [u["at"] for u in updates.values()] == [3 * G, 6 * G, 9 * G]
    moved = [u["units"] for u in updates.values()]
    assert moved[0] != {"wiki": 50, "books": 30, "news": 20} and len({json.dumps(m) for m in moved}) > 1
    assert all(sum(m.values()) == 100 and m["news"] >= 10 and m["wiki"] <= 60 for m in moved)
    # the checkpoint between the updates holds the history so far
    assert [h["step"] for h in _history(d / "ckpt_ref" / f"step-{step:08d}")["history"]] == [3]
    got = _resume(ref, step, nproc)
    assert [r["batch"] for r in got] == [r["batch"] for r in rows]   # every step, after both later updates too
    assert [r.get("mix_update", {}).get("units") for r in got] == [r.get("mix_update", {}).get("units") for r in rows]
    if nproc == 2:   # the reference's layout: bit-exact in losses too
        keys = ("loss", "grad_norm", "loss_by_source", "val_loss", "mix_update")
        assert [{k: g.get(k) for k in keys} for g in got] == [{k: w.get(k) for k in keys} for w in rows]


def test_train_signal_resumes_between_updates_on_another_dp_size(shared_dir, repo_dir, tmp_path_factory):
    ref = _reference(shared_dir, repo_dir, tmp_path_factory.mktemp("adaptive-train"), "train", 1)
    rows = ref["rows"]
    assert [r["step"] for r in rows if "mix_update" in r] == [3, 6, 9] and "val_loss" not in rows[2]
    saved = _history(ref["dir"] / "ckpt_ref" / "step-00000004")
    assert [h["step"] for h in saved["history"]] == [3] and saved["acc"]["count"] == [
        float(c) for c in saved["acc"]["count"]] and sum(saved["acc"]["count"]) == G * SEQ   # step 4's tokens
    got = _resume(ref, 4, 2)
    assert [r["batch"] for r in got] == [r["batch"] for r in rows]
    assert [r.get("mix_update", {}).get("units") for r in got] == [r.get("mix_update", {}).get("units") for r in rows]
