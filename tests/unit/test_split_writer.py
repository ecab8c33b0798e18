"""The per-split file writer: bytes independent of how rows arrive; Dolma-style JSONL."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from datapipe import splitwork


def _table(n: int) -> pa.Table:
    return pa.table({"id": [f"s/{i}" for i in range(n)], "source": ["s"] * n,
                     "text": [f"document {i}" for i in range(n)], "num_tokens": pa.array(range(n), pa.int64())})


def _write(path, fmt, compression, batches):
    w = splitwork._TableWriter(str(path), fmt, compression, sums=("num_tokens",))
    for b in batches:
        w.add(b)
    return w.close()


def test_parquet_bytes_do_not_depend_on_batching(tmp_path, monkeypatch):
    monkeypatch.setattr(splitwork, "ROW_GROUP_ROWS", 10)
    t = _table(37)
    a = _write(tmp_path / "a.parquet", "parquet", "zstd", [t])
    b = _write(tmp_path / "b.parquet", "parquet", "zstd", [t.slice(i, 3) for i in range(0, 37, 3)])
    assert a["sha256"] == b["sha256"] and a["rows"] == 37 and a["num_tokens"] == sum(range(37))
    assert pq.ParquetFile(tmp_path / "a.parquet").metadata.num_row_groups == 4
    assert _write(tmp_path / "none.parquet", "parquet", "zstd", []) is None
    assert not (tmp_path / "none.parquet").exists()


def test_jsonl_zstd_is_dolma_style(tmp_path):
    info = _write(tmp_path / "a.jsonl.zst", "jsonl", "zstd", [_table(3)])
    lines = zstandard.ZstdDecompressor().stream_reader(open(tmp_path / "a.jsonl.zst", "rb")).read().decode().splitlines()
    assert info["rows"] == 3 and len(lines) == 3
    assert json.loads(lines[1]) == {"id": "s/1", "source": "s", "text": "document 1", "metadata": {"num_tokens": 1}}


def test_work_file_keeps_raw_only_where_a_later_stage_could_read_it():
    """Before a global stage, a row's markup is carried on only while the row is alive
    with no text yet; rejected rows and rows with text lose theirs."""
    from datapipe import schema as S

    b = S.make_batch(source="web", ids=["a", "b", "c", "d"], texts=["page a", None, None, "page d"],
                     raws=[b"<p>a</p>", b"<p>b</p>", b"<p>c</p>", None],
                     reject_reasons=[None, None, "read:too_large", None])
    out = splitwork._without_spent_raw(b, S.alive_mask(b))
    assert out.column(S.RAW).to_pylist() == [None, b"<p>b</p>", None, None]
    assert out.drop_columns([S.RAW]).equals(b.drop_columns([S.RAW]))
    unchanged = b.set_column(b.column_names.index(S.RAW), S.RAW, pa.array([None, b"<p>b</p>", None, None], pa.binary()))
    assert splitwork._without_spent_raw(unchanged, S.alive_mask(unchanged)) is unchanged
