"""A scheduled mix (main phase, a transition, an annealed tail) under torchrun with real gloo
process groups on CPU: a dp=2 x tp=2 reference run, then resumes from its checkpoints in the
main phase, inside the transition and in the tail, each on another dp size, serving exactly
the reference's global batches (bit for bit); on the reference's own layout the resumed run
is bit-exact in losses too, per-source train and validation losses included."""

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

STEPS, G, SEQ = 10, 8, 64


def _torchrun(repo: Path, nproc: int, cfg: Path, metrics: Path, ckpt: Path, *extra: str):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(repo), PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
           "-m", "trainer_bridge.train", "--config", str(cfg),
           "--set", f"metrics_path={metrics}", "--set", f"ckpt_dir={ckpt}", *extra]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def _metrics(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def ref(shared_dir, repo_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("sched-dist")
    manifests = write_text_sources(shared_dir, d / "shards", max_bytes=40_000, shard_tokens=8192)
    mix = d / "mix.yaml"
    mix.write_text(yaml.safe_dump({
        "name": "sched", "seq_len": SEQ, "token_budget": SEQ * G * 200, "seed": 5, "max_epochs": 100,
        "sources": [{"manifest": os.path.relpath(m, d)} for m in manifests.values()],
        "schedule": [{"name": "main", "tokens": 3 * G * SEQ, "weights": {"wiki": 0.5, "books": 0.3, "news": 0.2}},
                     {"name": "anneal", "transition": 4 * G * SEQ, "weights": {"wiki": 0.3, "books": 0.7}}],
        "validation": {"tokens": 300}}))
    cfg = d / "train.yaml"
    cfg.write_text(yaml.safe_dump({
        "mix": str(mix), "model": {"dim": 64, "n_layers": 2, "n_heads": 4, "max_seq_len": SEQ},
        "dp": -1, "tp": 2, "global_batch": G, "micro_batch": 2, "steps": STEPS, "lr": 3e-3, "warmup_steps": 2,
        "position_ids": True, "batch_digest": True, "ckpt_every": 2, "ckpt_async": False, "cpu_threads": 1,
        "log_every": 1, "eval_every": 5,
    }))
    run = _torchrun(repo_dir, 4, cfg, d / "ref.jsonl", d / "ckpt_ref")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    return {"dir": d, "cfg": cfg, "repo": repo_dir, "rows": _metrics(d / "ref.jsonl")}


@pytest.mark.parametrize("step, nproc, layout, where", [
    (2, 4, ["--set", "tp=1", "--set", "micro_batch=1"], "main"),       # dp=4 x tp=1
    (4, 2, ["--set", "tp=2"], "transition"),                            # dp=1 x tp=2 (cursor 32 of [24, 56))
    (8, 4, [], "anneal"),                                               # the reference's dp=2 x tp=2
])
def test_resume_in_each_phase_on_another_dp_size(ref, step, nproc, layout, where):
    d, rows = ref["dir"], ref["rows"]
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    assert set(rows[0]["loss_by_source"]) == {"wiki", "books", "news"} and "news" not in rows[-1]["loss_by_source"]
    assert [r["step"] for r in rows if "val_loss" in r] == [5, 10]
    tag = f"{where}-{step}"
    shutil.copytree(d / "ckpt_ref", d / f"ckpt_{tag}")
    shutil.copy(d / "ref.jsonl", d / f"{tag}.jsonl")
    run = _torchrun(ref["repo"], nproc, ref["cfg"], d / f"{tag}.jsonl", d / f"ckpt_{tag}",
                    "--set", f"resume_from={step}", *layout)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    got = _metrics(d / f"{tag}.jsonl")
    assert [r["step"] for r in got] == list(range(1, STEPS + 1))
    assert [r["batch"] for r in got[step:]] == [r["batch"] for r in rows[step:]]  # the same global batches
    same_layout = not layout
    for g, w in zip(got[step:], rows[step:]):
        if same_layout:  # bit-exact
            keys = ("loss", "grad_norm", "loss_by_source", "val_loss")
            assert {k: g.get(k) for k in keys} == {k: w.get(k) for k in keys}
        else:            # the same data; only floating-point reduction order differs
            assert abs(g["loss"] - w["loss"]) < 1e-3
            assert set(g["loss_by_source"]) == set(w["loss_by_source"])
            assert all(abs(g["loss_by_source"][s] - v) < 2e-3 for s, v in w["loss_by_source"].items())
            for s, v in (w.get("val_loss") or {}).items():
                assert abs(g["val_loss"][s] - v) < 2e-3
