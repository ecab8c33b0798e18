"""Shard reader and what the loader and trainer refuse to serve.

Shards here come from ``shard_helper`` (an independent writer of the documented format)
over real text, so the checks are tested against the format, not against the writer
they share code with; one test reads what the pipeline's own writer writes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from shard_helper import write_mix, write_source, write_text_sources

from datapipe.megatron import ShardFormatError, load_manifest
from trainer_bridge.loader import LoaderConfig, MixLoader
from trainer_bridge.mix import resolve_mix
from trainer_bridge.shards import HashCache, TokenStream

EOS = 9
SEQ = 32


def _docs(seed: int = 0, n: int = 40) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, EOS, rng.integers(1, 30)).tolist() for _ in range(n)]


def _stream(docs: list[list[int]]) -> np.ndarray:
    return np.concatenate([np.append(d, EOS) for d in docs])


@pytest.mark.parametrize("dtype", ["uint16", "int32"])
def test_reads_equal_the_documents_across_shard_boundaries(tmp_path, dtype):
    docs = _docs()
    path = write_source(tmp_path, "src", docs, eos_id=EOS, vocab_size=10, shard_tokens=37, dtype=dtype)
    m = load_manifest(path)
    assert len(m.shards) > 5 and any(s.last_doc_split for s in m.shards)
    ts = TokenStream(m)
    want = _stream(docs)
    assert ts.n_tokens == want.size == m.total_tokens
    assert np.array_equal(ts.read(0, ts.n_tokens), want)
    rng = np.random.default_rng(1)
    for _ in range(200):  # random windows, many of them straddling one or more boundaries
        start = int(rng.integers(0, want.size - 1))
        length = int(rng.integers(1, min(120, want.size - start) + 1))
        assert np.array_equal(ts.read(start, length), want[start:start + length])
    with pytest.raises(IndexError):
        ts.read(want.size - 3, 4)


def test_structure_is_checked_on_open(tmp_path):
    m = load_manifest(write_source(tmp_path, "src", _docs(), eos_id=EOS, vocab_size=10, shard_tokens=50))
    victim = m.shards[2].bin_path
    data = victim.read_bytes()
    victim.write_bytes(data[:-2])
    with pytest.raises(ShardFormatError, match=r"src-00002\.bin: shard src-00002 .* \.bin is 98 bytes"):
        TokenStream(m)
    victim.write_bytes(data)
    idx = m.shards[0].idx_path
    idx.write_bytes(idx.read_bytes()[:-8])
    with pytest.raises(ShardFormatError, match=r"src-00000.*\.idx is \d+ bytes, its header"):
        TokenStream(m)
    idx.unlink()
    with pytest.raises(ShardFormatError, match="src-00000.*missing"):
        TokenStream(m)


def test_manifest_errors_say_what_is_wrong(tmp_path):
    path = write_source(tmp_path, "src", _docs(), eos_id=EOS, vocab_size=10, shard_tokens=50)
    raw = json.loads(path.read_text())
    for edit, match in [(lambda r: r["totals"].__setitem__("tokens", 1), "totals.tokens is 1"),
                        (lambda r: r.__setitem__("dtype", "float32"), "dtype 'float32'"),
                        (lambda r: r["shards"][1].__setitem__("bin", "../x.bin"), "must be a relative path"),
                        (lambda r: r.__setitem__("format", "other"), "not a datapipe-shards manifest")]:
        bad = json.loads(json.dumps(raw))
        edit(bad)
        path.write_text(json.dumps(bad))
        with pytest.raises(ShardFormatError, match=match):
            load_manifest(path)
    with pytest.raises(ShardFormatError, match="not found"):
        load_manifest(tmp_path / "nope" / "manifest.json")


def test_reads_what_the_pipeline_shard_writer_writes(tmp_path):
    """Integration with `stages.tokenize.writer.SourceShardWriter`: exact tokens, content verified."""
    from stages.tokenize.identity import FINGERPRINT_ALGO, TokenizerInfo
    from stages.tokenize.writer import SourceShardWriter
    from trainer_bridge.shards import verify_content

    info = TokenizerInfo(path="t", fingerprint=f"{FINGERPRINT_ALGO}:t", vocab_size=1000, eos_id=999, eos_token="<e>")
    writer = SourceShardWriter(tmp_path, "wiki", tokenizer_info=info, shard_tokens=97, seed=0,
                               lineage={"job_hash": "t", "inputs": []})
    rng = np.random.default_rng(0)
    docs = [rng.integers(0, 999, rng.integers(1, 40)) for _ in range(60)]
    writer.add(np.concatenate(docs), np.array([len(d) for d in docs]))
    m = load_manifest(writer.finish())
    ts = TokenStream(m)
    assert verify_content([(m, s) for s in m.shards], cache=None) == len(m.shards) > 5
    want = np.concatenate([np.append(d, 999) for d in docs])
    assert m.eos_id == 999 and not m.span_documents
    assert np.array_equal(ts.read(0, ts.n_tokens), want)


# ------------------------------------------------------------------ tampering


@pytest.fixture
def mix(shared_dir, tmp_path):
    """Real text in shards of 2,048 tokens (wiki: several full ones) and a mix over them."""
    manifests = write_text_sources(shared_dir, tmp_path / "shards", max_bytes=30_000, shard_tokens=2048)
    return write_mix(tmp_path / "mix.yaml", manifests, {"wiki": 0.5, "books": 0.3, "news": 0.2},
                     seq_len=SEQ, token_budget=SEQ * 2000)


def _wiki(mix_path: Path) -> Path:
    return mix_path.parent / "shards" / "wiki"


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def _swap_bins(folder: Path) -> None:
    a, b = folder / "wiki-00000.bin", folder / "wiki-00001.bin"
    assert a.stat().st_size == b.stat().st_size  # same size: only the content check can tell
    os.rename(a, folder / "tmp.bin")
    os.rename(b, a)
    os.rename(folder / "tmp.bin", b)


def _edit_documents(folder: Path) -> None:
    """A shard's document count and the total, edited together (the manifest stays consistent)."""
    raw = json.loads((folder / "manifest.json").read_text())
    raw["shards"][1]["documents"] += 1
    raw["totals"]["documents"] += 1
    (folder / "manifest.json").write_text(json.dumps(raw))


TAMPER = {  # kind: (tamper, shard named, found by the cheap structural check alone)
    "swapped .bin pair": (_swap_bins, "wiki-00000", False),
    "flipped byte in .bin": (lambda f: _flip(f / "wiki-00001.bin", 777), "wiki-00001", False),
    "flipped byte in .idx": (lambda f: _flip(f / "wiki-00001.idx", 46), "wiki-00001", False),  # document index
    "flipped byte in .idx pointers": (lambda f: _flip(f / "wiki-00001.idx", 40), "wiki-00001", True),
    "edited document count": (_edit_documents, "wiki-00001", True),
}


def _loader(mix_path: Path, cache: Path, **kw) -> MixLoader:
    plan = resolve_mix(mix_path)
    return MixLoader(plan, LoaderConfig(global_batch=8, hash_cache=str(cache), **kw))


@pytest.mark.parametrize("kind", list(TAMPER))
def test_loader_refuses_tampered_shards_naming_them(mix, tmp_path, kind):
    tamper, shard, structural = TAMPER[kind]
    cache = tmp_path / "cache.json"
    with _loader(mix, cache) as ld:  # untouched: opens, and its content is now cached
        good = next(ld)["input_ids"]
    tamper(_wiki(mix))
    with pytest.raises(ShardFormatError, match=rf"{shard}\.bin: shard {shard} of source wiki fails"):
        _loader(mix, cache)  # the warm cache does not hide the change
    with pytest.raises(ShardFormatError, match=shard):
        _loader(mix, tmp_path / "cold.json")
    if structural:  # refused even by a user who skips the content check
        with pytest.raises(ShardFormatError, match=f"{shard}.*structure check"):
            _loader(mix, cache, verify=False)
    else:
        with _loader(mix, cache, verify=False) as ld:  # the user accepted the risk
            assert next(ld)["input_ids"].shape == good.shape


def test_untouched_mix_serves_the_same_batches_and_the_cache_is_reused(mix, tmp_path):
    cache = tmp_path / "cache.json"
    plan = resolve_mix(mix)
    n_shards = sum(len(m.shards) for m in plan.manifests)
    assert plan.verify_content(cache=HashCache(cache)) == n_shards  # first start: every shard read
    with MixLoader(plan, LoaderConfig(global_batch=8, verify=False)) as ld:
        unchecked = [next(ld)["input_ids"] for _ in range(5)]
    again = resolve_mix(mix)  # a restart: a new process would build exactly this
    assert again.plan_hash == plan.plan_hash
    assert again.verify_content(cache=HashCache(cache)) == 0  # nothing re-hashed
    with MixLoader(again, LoaderConfig(global_batch=8, hash_cache=str(cache))) as ld:
        checked = [next(ld)["input_ids"] for _ in range(5)]
    assert all(np.array_equal(a, b) for a, b in zip(unchecked, checked))
    # the same bytes in a new file (a copy put in place): checked again, and accepted
    victim = _wiki(mix) / "wiki-00002.bin"
    data = victim.read_bytes()
    victim.unlink()
    victim.write_bytes(data)
    assert resolve_mix(mix).verify_content(cache=HashCache(cache)) == 1
    # data-parallel ranks share the first check: each reads its share, together all
    fresh = tmp_path / "ranks.json"
    shares = [resolve_mix(mix).verify_content(cache=HashCache(fresh), rank=r, world=3) for r in range(3)]
    assert sum(shares) == n_shards and max(shares) - min(shares) <= 1


def test_plan_hash_covers_shard_content_hashes(mix):
    base = resolve_mix(mix).plan_hash
    raw = json.loads((_wiki(mix) / "manifest.json").read_text())
    raw["shards"][0]["idx_hash"] = "xxh3-128:" + "0" * 32
    (_wiki(mix) / "manifest.json").write_text(json.dumps(raw))
    assert resolve_mix(mix).plan_hash != base


# ------------------------------------------------------------------ the trainer


def _train(repo: Path, cfg: Path, metrics: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(repo))
    cmd = [sys.executable, "-m", "trainer_bridge.train", "--config", str(cfg), "--set", f"metrics_path={metrics}",
           *extra]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def test_trainer_trains_an_untouched_mix_and_refuses_a_tampered_one(mix, tmp_path, repo_dir):
    """(That verification leaves what is served unchanged is shown batch for batch above.)"""
    cfg = tmp_path / "train.yaml"
    cfg.write_text(yaml.safe_dump({
        "mix": str(mix), "model": {"dim": 32, "n_layers": 1, "n_heads": 2, "max_seq_len": SEQ}, "tp": 1,
        "global_batch": 4, "steps": 2, "device": "cpu", "cpu_threads": 1, "hash_cache": str(tmp_path / "c.json"),
    }))
    r = _train(repo_dir, cfg, tmp_path / "ok.jsonl")
    assert r.returncode == 0, r.stderr[-3000:]
    assert [json.loads(line)["step"] for line in (tmp_path / "ok.jsonl").open()] == [1, 2]
    for tamper in ("flipped byte in .bin", "edited document count"):  # a content and a structural failure
        folder = _wiki(mix)
        before = {p: p.read_bytes() for p in folder.iterdir()}
        TAMPER[tamper][0](folder)
        r = _train(repo_dir, cfg, tmp_path / "bad.jsonl")
        assert r.returncode == 2 and "wiki-00001.bin: shard wiki-00001 of source wiki fails" in r.stderr, \
            r.stderr[-3000:]
        assert not (tmp_path / "bad.jsonl").exists()
        for p, data in before.items():
            p.write_bytes(data)
