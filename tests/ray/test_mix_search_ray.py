"""`datapipe mix search --ray`: proxies as Ray tasks on the session's local Ray write the same
results as the same proxies run one at a time (deterministic units; a rerun skips them)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from shard_helper import write_text_sources

from trainer_bridge.search import SearchConfig, search

pytestmark = pytest.mark.ray


def test_proxies_as_ray_tasks_match_a_sequential_run(ray_session, shared_dir, tmp_path):
    shards = write_text_sources(shared_dir, tmp_path / "shards", max_bytes=20_000, shard_tokens=2048)
    mix = tmp_path / "mix.yaml"
    mix.write_text(yaml.safe_dump({
        "name": "tiny", "seq_len": 32, "token_budget": 32 * 8 * 20, "seed": 5, "max_epochs": 200,
        "warn_epochs": 200, "validation": {"tokens": 100},
        "sources": [{"manifest": os.path.relpath(m, tmp_path), "weight": 1.0} for m in shards.values()]}))
    kw = dict(mix=str(mix), out=str(tmp_path / "out"), proxies=3, steps=6, seed=2, dim=32, n_layers=1, n_heads=2,
              global_batch=8, candidates=1000, top_k=10, final_seeds=0)
    lines: list[str] = []
    first = search(SearchConfig(**kw, ray=True), echo=lines.append)
    assert not any("done earlier" in s for s in lines)
    p01 = tmp_path / "out/proxies/p01/result.json"
    by_ray = p01.read_bytes()
    p01.unlink()                                            # rerun that one proxy without Ray
    lines.clear()
    again = search(SearchConfig(**kw), echo=lines.append)
    assert sum("done earlier" in s for s in lines) == 2     # p00 and p02 skipped
    assert p01.read_bytes() == by_ray
    assert again == first
    assert json.loads((tmp_path / "out/search.json").read_text())["proxies"][1]["target"] > 0
