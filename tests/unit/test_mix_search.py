"""`datapipe mix search` (trainer_bridge/search.py): deterministic draws that keep earlier
proxies when K grows, a fit that finds the better mix of a known target, the errors a user
meets first, and a search that resumes after a proxy is SIGKILLed mid-run with the same
final files as an uninterrupted search (real trainer subprocesses, tiny model, CPU)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from shard_helper import write_text_sources

from datapipe.errors import SpecError
from trainer_bridge.mix import resolve_mix
from trainer_bridge.search import SearchConfig, choose, draw_proxy, fit, load_sources

SEQ = 32


@pytest.fixture(scope="module")
def shards(shared_dir, tmp_path_factory) -> dict[str, Path]:
    return write_text_sources(shared_dir, tmp_path_factory.mktemp("ms") / "shards", max_bytes=20_000,
                              shard_tokens=2048)


def _mix(path: Path, shards: dict[str, Path], *, validation: bool = True) -> Path:
    doc = {"name": "tiny", "seq_len": SEQ, "token_budget": SEQ * 8 * 20, "seed": 5, "max_epochs": 200,
           "warn_epochs": 200, "sources": [{"manifest": os.path.relpath(m, path.parent), "weight": w}
                                           for m, w in zip(shards.values(), (0.5, 0.3, 0.2))]}
    if validation:
        doc["validation"] = {"tokens": 100}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_draws_are_deterministic_and_keep_earlier_proxies(shards, tmp_path):
    mix = _mix(tmp_path / "mix.yaml", shards)
    cfg = SearchConfig(mix=str(mix), out=str(tmp_path / "s"), proxies=4, steps=10, global_batch=8, seed=7)
    src = load_sources(cfg)
    a = np.stack([draw_proxy(src, cfg, k) for k in range(4)])
    more = SearchConfig(mix=str(mix), out=str(tmp_path / "s"), proxies=12, steps=10, global_batch=8, seed=7)
    b = np.stack([draw_proxy(src, more, k) for k in range(12)])
    assert np.array_equal(a, b[:4])                       # raising K keeps every earlier proxy
    other = SearchConfig(mix=str(mix), out=str(tmp_path / "s"), proxies=4, steps=10, global_batch=8, seed=8)
    assert not np.array_equal(a, np.stack([draw_proxy(src, other, k) for k in range(4)]))
    assert np.allclose(b.sum(axis=1), 1) and (b >= 0.004).all()
    assert len({tuple(r) for r in b}) == 12               # distinct mixes around the natural one
    assert np.allclose(b.mean(axis=0), src.natural, atol=0.15)


def test_the_fit_finds_the_better_mix_of_a_known_target(shards, tmp_path):
    mix = _mix(tmp_path / "mix.yaml", shards)
    cfg = SearchConfig(mix=str(mix), out=str(tmp_path / "s"), proxies=24, steps=10, global_batch=8, seed=1,
                       candidates=20_000)
    src = load_sources(cfg)
    # a mixing-law-shaped target: each source's loss falls as a power of its share (finite at a
    # zero share), the second source counting three times; smallest at w_s + 0.02 proportional to c_s^(2/3): [0.24, 0.52, 0.24]
    c = np.array([1.0, 3.0, 1.0])
    best = 1.06 * c ** (2 / 3) / (c ** (2 / 3)).sum() - 0.02
    w = np.stack([draw_proxy(src, cfg, k) for k in range(24)])
    loss = lambda m: float((c * (np.atleast_2d(m) + 0.02) ** -0.5).sum(axis=1)[0] / 3)
    y = np.array([loss(m) for m in w])
    model = fit(w, y, cfg.min_weight)
    assert model.loo_rmse < 0.5 * model.target_std        # held-out error well below the target's spread
    chosen = choose(src, cfg, model, w)
    assert (chosen >= w.min(axis=0) - 1e-3).all() and (chosen <= w.max(axis=0) + 1e-3).all()   # no extrapolation
    gap = lambda m: loss(m) - loss(best)
    assert gap(chosen) < gap(src.natural) / 4 and gap(chosen) < gap(np.full(3, 1 / 3)) / 4
    assert gap(chosen) < min(gap(m) for m in w)          # better than every proxy it was fitted on


def test_errors_name_the_fix(shards, tmp_path):
    bare = _mix(tmp_path / "bare.yaml", shards, validation=False)
    with pytest.raises(SpecError, match="no validation split.*--val-tokens"):
        load_sources(SearchConfig(mix=str(bare), out=str(tmp_path / "s")))
    with pytest.raises(SpecError, match="target 'source:code' names no source of the mix; its sources: wiki"):
        load_sources(SearchConfig(mix=str(bare), out=str(tmp_path / "s"), val_tokens=100, target="source:code"))
    with pytest.raises(SpecError, match="target 'loss' must be mean_val or source:NAME"):
        SearchConfig(mix=str(bare), out="x", target="loss")
    with pytest.raises(SpecError, match="proxies 2 must be an integer >= 3"):
        SearchConfig(mix=str(bare), out="x", proxies=2)


def _search(repo: Path, mix: Path, out: Path, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(repo), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "trainer_bridge.search", str(mix), "--proxies", "3", "--steps", "12",
           "--out", str(out), "--seed", "3", "--dim", "32", "--layers", "1", "--heads", "2", "--global-batch", "8",
           "--candidates", "2000", "--top-k", "20", "--final-seeds", "0"]
    return subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, **kw)


def test_a_search_resumes_after_a_killed_proxy(shards, tmp_path, repo_dir):
    mix = _mix(tmp_path / "mix.yaml", shards)
    ref = _search(repo_dir, mix, tmp_path / "ref")
    out_ref = ref.communicate(timeout=600)[0]
    assert ref.returncode == 0, out_ref

    out = tmp_path / "killed"
    proc = _search(repo_dir, mix, out)
    metrics = out / "proxies" / "p01" / "metrics.jsonl"
    deadline = time.monotonic() + 600
    while not (metrics.is_file() and metrics.read_text().count("\n") >= 2):   # proxy p01 is mid-run
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)                  # the search and the proxy's trainer, at once
    proc.wait()
    assert (out / "proxies/p00/result.json").is_file()
    assert not (out / "proxies/p01/result.json").exists()
    assert not (out / "search.json").exists()
    p00 = (out / "proxies/p00/result.json").stat().st_mtime_ns

    again = _search(repo_dir, mix, out)
    log = again.communicate(timeout=600)[0]
    assert again.returncode == 0, log
    assert "p00: done earlier" in log and "p01: done earlier" not in log
    assert (out / "proxies/p00/result.json").stat().st_mtime_ns == p00   # not rerun
    for k in range(3):
        assert (out / f"proxies/p{k:02d}/result.json").read_bytes() == \
            (tmp_path / f"ref/proxies/p{k:02d}/result.json").read_bytes()
    for name in ("search.json", "chosen.yaml", "chosen.md"):
        assert (out / name).read_bytes() == (tmp_path / "ref" / name).read_bytes(), name
    summary = json.loads((out / "search.json").read_text())
    assert len(summary["proxies"]) == 3 and summary["fit"]["loo_rmse"] >= 0
    chosen = resolve_mix(out / "chosen.yaml", warn=False)   # the chosen mix plans
    assert chosen.names == ("wiki", "books", "news")
    assert (out / "search.png").stat().st_size > 1000
