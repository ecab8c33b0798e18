"""Hugging Face datasets on disk as a source (``format: hf``): ``save_to_disk`` folders
and the Hub's Parquet layout, written with the ``datasets`` library from real text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datapipe.errors import SpecError
from datapipe.readers import InputFile, reader_for

datasets = pytest.importorskip("datasets", reason="the dev extra installs datasets")


def _records(shared_dir: Path) -> list[dict]:
    rows = []
    for name in ("redpajama-c4-refined.jsonl", "redpajama-cc-2023-06-refined.jsonl"):
        for i, line in enumerate((shared_dir / "corpora" / "redpajama" / name).read_text().splitlines()):
            rows.append({"text": json.loads(line)["text"], "doc_id": f"{name}:{i}", "n": i})
    return rows


def _files(root: Path) -> list[InputFile]:
    return [InputFile(path=str(p), rel=str(p.relative_to(root)), size=p.stat().st_size)
            for p in sorted(root.rglob("*")) if p.is_file()]


def _read(root: Path, **options) -> list[dict]:
    reader = reader_for("hf")(source="hf", options=options, batch_rows=4)
    rows = []
    for split in reader.plan(_files(root), split_bytes=1 << 20):
        for t in reader.read(split):
            rows.extend(t.to_pylist())
    return rows


def test_save_to_disk_folders_and_splits(tmp_path, shared_dir):
    recs = _records(shared_dir)
    ds = datasets.Dataset.from_list(recs)
    ds.save_to_disk(str(tmp_path / "one"), max_shard_size="20KB")   # several .arrow shards
    assert len(list((tmp_path / "one").glob("*.arrow"))) > 1
    rows = _read(tmp_path / "one", id_key="doc_id", metadata=["n"])
    assert [r["text"] for r in rows] == [r["text"] for r in recs]
    assert [r["source_id"] for r in rows] == [r["doc_id"] for r in recs]
    assert [json.loads(r["metadata"]) for r in rows] == [{"n": r["n"]} for r in recs]
    assert all(r["_reject_reason"] is None for r in rows)

    dd = datasets.DatasetDict(train=ds.select(range(12)), test=ds.select(range(12, len(recs))))
    dd.save_to_disk(str(tmp_path / "dict"))
    assert [r["text"] for r in _read(tmp_path / "dict", split="test")] == [r["text"] for r in recs[12:]]
    assert len(_read(tmp_path / "dict")) == len(recs)       # split: null reads every split
    with pytest.raises(SpecError, match="no file of split 'validation'"):
        _read(tmp_path / "dict", split="validation")


def test_hub_parquet_layout_from_a_local_snapshot(tmp_path, shared_dir):
    recs = _records(shared_dir)
    snap = tmp_path / "datasets--org--name" / "snapshots" / "0123abc"
    (snap / "data").mkdir(parents=True)
    ds = datasets.Dataset.from_list(recs)
    ds.select(range(15)).to_parquet(str(snap / "data" / "train-00000-of-00001.parquet"))
    ds.select(range(15, len(recs))).to_parquet(str(snap / "data" / "validation-00000-of-00001.parquet"))
    (snap / "README.md").write_text("---\nlicense: odc-by\n---\n")
    (snap / ".gitattributes").write_text("*.parquet filter=lfs\n")
    train = _read(snap, split="train")
    assert [r["text"] for r in train] == [r["text"] for r in recs[:15]]
    assert _read(snap, split="validation")[0]["text"] == recs[15]["text"]
    # the hub layout loads the same rows in `datasets` itself
    ref = datasets.load_dataset(str(snap), split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert [r["text"] for r in train] == ref["text"]
