"""The memory estimate the trainer prints at start against the peak it really reaches, on CPU.

One single-process run (gloo, FSDP over one rank) of a small GPT on real text shards, in a
subprocess (``memory_probe.py``: peak resident set during ``train()`` minus the resident set
before it, glibc told to ``mmap`` every tensor-sized block so freed tensors leave no heap
high-water mark). The config exercises the estimate's moving parts: two micro-batches (FSDP
keeps unsharded gradients between them), the chunked loss (chunks of 256 of 1,024 tokens)
and no activation checkpointing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from shard_helper import write_mix, write_text_sources

pytestmark = pytest.mark.dist


def test_memory_estimate_is_within_20_percent_of_the_measured_peak(shared_dir, repo_dir, tmp_path):
    manifests = write_text_sources(shared_dir, tmp_path / "shards", max_bytes=40_000, shard_tokens=8192)
    mix = write_mix(tmp_path / "mix.yaml", manifests, {"wiki": 0.5, "books": 0.3, "news": 0.2}, seq_len=256,
                    token_budget=256 * 8 * 50, max_epochs=1000, warn_epochs=1000)
    cfg = tmp_path / "train.yaml"
    cfg.write_text(yaml.safe_dump({
        "mix": str(mix), "model": {"dim": 256, "n_layers": 4, "n_heads": 4, "max_seq_len": 256},
        "tp": 1, "global_batch": 8, "micro_batch": 4, "steps": 2, "warmup_steps": 1, "cpu_threads": 1,
        "compile": False, "ac": "none", "loss": "chunked", "loss_chunk_tokens": 256, "prefetch": 1,
    }))
    env = dict(os.environ, PYTHONPATH=str(repo_dir), MALLOC_MMAP_THRESHOLD_="65536", OMP_NUM_THREADS="1")
    run = subprocess.run([sys.executable, str(repo_dir / "tests/distributed/memory_probe.py"), str(cfg)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    assert "memory estimate per rank (micro_batch 4, ac none):" in run.stdout
    got = json.loads(run.stdout.strip().splitlines()[-1])
    est, peak = got["estimate"]["peak"], got["peak"]
    assert got["steps"] == 2 and peak > 50e6  # the run's own memory, far above measurement noise
    assert abs(est - peak) <= 0.2 * peak, f"estimate {est / 1e6:.1f} MB vs measured peak {peak / 1e6:.1f} MB"
