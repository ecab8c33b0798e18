"""Shards do not depend on Ray's scheduling: the same documents tokenized and written
with different parallelism and block sizes give byte-identical shards and manifests
(and the same bytes as the in-memory path)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from datapipe.schema import make_batch
from bench.shard_writers import write_shards
from datapipe.shards import verify_shards
from stages.tokenize.identity import tokenizer_info
from stages.tokenize import Tokenize

pytestmark = pytest.mark.ray


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _documents(shared_dir: Path) -> pa.Table:
    text = (shared_dir / "corpora" / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    docs = [d for d in text.split("\n = ") if d.strip()][:90]
    a = make_batch(source="wiki", ids=[f"wiki/{i:03d}" for i in range(60)], texts=docs[:60])
    reasons = [None] * 30
    reasons[7] = "length:too_short"  # a dropped document never reaches the shards
    b = make_batch(source="web", ids=[f"web/{i:03d}" for i in range(30)], texts=docs[60:], reject_reasons=reasons)
    return pa.concat_tables([a, b]).drop_columns(["raw"])


def _tokenized(ray, table: pa.Table, tokenizer: str, *, blocks: int, batch_size: int, actors: int):
    class TokenizeActor:  # defined here so Ray pickles it by value
        def __init__(self, path: str) -> None:
            self.stage = Tokenize(Tokenize.Config(tokenizer=path))

        def __call__(self, batch: pa.Table) -> pa.Table:
            return self.stage.process(batch)[0]

    ds = ray.data.from_arrow(table).repartition(blocks)
    # half a CPU per actor: two actors on the 2-CPU test cluster still leave room for Ray's own tasks
    return ds.map_batches(TokenizeActor, fn_constructor_kwargs={"path": tokenizer}, batch_size=batch_size,
                          batch_format="pyarrow", compute=ray.data.ActorPoolStrategy(size=actors), num_cpus=0.5)


def test_two_parallelisms_write_identical_shards(ray_session, shared_dir, tmp_path):
    ray = ray_session
    tokenizer = str(shared_dir / "tokenizers" / "gpt2")
    info = tokenizer_info(tokenizer)
    table = _documents(shared_dir)
    kw = dict(tokenizer_info=info, shard_tokens=5000, seed=42, lineage={"job_hash": "t", "inputs": []})

    one = _tokenized(ray, table, tokenizer, blocks=1, batch_size=90, actors=1)
    write_shards(one, tmp_path / "one", batch_rows=1000, **kw)
    many = _tokenized(ray, table.take(pa.array(list(range(89, -1, -1)))), tokenizer, blocks=9, batch_size=4, actors=2)
    write_shards(many, tmp_path / "many", batch_rows=7, **kw)

    a, b = _files(tmp_path / "one"), _files(tmp_path / "many")
    assert sorted(a) == sorted(b) and len([k for k in a if k.endswith(".bin")]) >= 4
    assert a == b
    assert verify_shards(tmp_path / "one") == []

    # the in-memory path (no Ray sort) lays the documents out the same way
    local = Tokenize(Tokenize.Config(tokenizer=tokenizer)).process(table)[0]
    write_shards([local], tmp_path / "local", **kw)
    assert _files(tmp_path / "local") == a
