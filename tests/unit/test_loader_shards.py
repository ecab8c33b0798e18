"""Shard reader: exact token streams across shard boundaries, and what it refuses to open."""

from __future__ import annotations

import json

import numpy as np
import pytest
from shard_helper import write_source

from datapipe.errors import CorruptInputError, SpecError
from trainer_bridge.shards import TokenStream, load_manifest

EOS = 9


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
    ts = TokenStream(m, verify_hashes=True)
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


def test_truncated_bin_is_refused_by_name(tmp_path):
    m = load_manifest(write_source(tmp_path, "src", _docs(), eos_id=EOS, vocab_size=10, shard_tokens=50))
    victim = m.shards[2].bin_path
    victim.write_bytes(victim.read_bytes()[:-2])
    with pytest.raises(CorruptInputError, match="src-00002.bin.*size disagrees"):
        TokenStream(m)


def test_missing_shard_is_refused(tmp_path):
    m = load_manifest(write_source(tmp_path, "src", _docs(), eos_id=EOS, vocab_size=10, shard_tokens=50))
    m.shards[1].bin_path.unlink()
    with pytest.raises(CorruptInputError, match="missing"):
        TokenStream(m)


def test_flipped_byte_found_only_when_hashes_are_verified(tmp_path):
    m = load_manifest(write_source(tmp_path, "src", _docs(), eos_id=EOS, vocab_size=10, shard_tokens=50))
    victim = m.shards[0].bin_path
    data = bytearray(victim.read_bytes())
    data[11] ^= 0x01
    victim.write_bytes(bytes(data))
    TokenStream(m)  # sizes still match: opens (sizes always, hashes on request)
    with pytest.raises(CorruptInputError, match="src-00000.bin.*hash mismatch"):
        TokenStream(m, verify_hashes=True)


def test_bad_index_is_refused(tmp_path):
    m = load_manifest(write_source(tmp_path, "src", _docs(), eos_id=EOS, vocab_size=10, shard_tokens=50))
    idx = m.shards[0].idx_path
    idx.write_bytes(idx.read_bytes()[:-8])
    with pytest.raises(CorruptInputError, match="index size"):
        TokenStream(m)


def test_manifest_errors_say_what_is_wrong(tmp_path):
    path = write_source(tmp_path, "src", _docs(), eos_id=EOS, vocab_size=10, shard_tokens=50)
    raw = json.loads(path.read_text())
    raw["totals"]["tokens"] += 1
    path.write_text(json.dumps(raw))
    with pytest.raises(CorruptInputError, match="totals.tokens"):
        load_manifest(path)
    raw["totals"]["tokens"] -= 1
    raw["dtype"] = "float32"
    path.write_text(json.dumps(raw))
    with pytest.raises(SpecError, match="dtype 'float32'"):
        load_manifest(path)
    with pytest.raises(SpecError, match="not found"):
        load_manifest(tmp_path / "nope" / "manifest.json")


def test_reads_what_the_pipeline_shard_writer_writes(tmp_path):
    """Integration with `datapipe.shards.SourceShardWriter`: exact tokens, hashes verified."""
    from datapipe.shards import SourceShardWriter
    from datapipe.tokenizer import FINGERPRINT_ALGO, TokenizerInfo

    info = TokenizerInfo(path="t", fingerprint=f"{FINGERPRINT_ALGO}:t", vocab_size=1000, eos_id=999, eos_token="<e>")
    writer = SourceShardWriter(tmp_path, "wiki", tokenizer_info=info, shard_tokens=97, seed=0,
                               lineage={"job_hash": "t", "inputs": []})
    rng = np.random.default_rng(0)
    docs = [rng.integers(0, 999, rng.integers(1, 40)) for _ in range(60)]
    writer.add(np.concatenate(docs), np.array([len(d) for d in docs]))
    m = load_manifest(writer.finish())
    ts = TokenStream(m, verify_hashes=True)
    want = np.concatenate([np.append(d, 999) for d in docs])
    assert len(m.shards) > 5 and m.eos_id == 999
    assert np.array_equal(ts.read(0, ts.n_tokens), want)
