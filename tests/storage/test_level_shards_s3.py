"""Shard sets per quality level (``web@q4``) on a real S3 API server (moto, on loopback):
the ``@`` in the folder, file and manifest names survives the object store, and the
shards copied back verify."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from datapipe import fs
from datapipe.sink import SinkSplit


def test_level_shard_sets_round_trip_through_s3(bucket, shared_dir, tmp_path):
    from datapipe.shards import verify_shards
    from stages.tokenize.shard_sink import ShardSink
    from stages.tokenize.writer import ShardOptions

    sink = ShardSink(tokenizer=str(shared_dir / "tokenizers" / "tiny-2k.tokenizer.json"), eos=None,
                     options=ShardOptions(shard_tokens=64, seed=1), lineage={"job": "t"}, by_level=True)
    sink.prepare()
    staging = f"{bucket}/out"
    split = SinkSplit(source="web", index=0, folder=f"{staging}/shards/web", work_dir=f"{staging}/work/shards/web")
    docs = pa.table({"id": [f"web/{i:016x}" for i in range(9)],
                     "tokens": pa.array([[i + 5] * (10 + i) for i in range(9)], pa.list_(pa.int32())),
                     "quality_level": pa.array([0, 4, 4, None, 0, 4, 0, 4, 0], pa.int32())})
    w = sink.open(split)
    w.add(docs)
    rec = w.close()
    assert sorted(rec["sets"]) == ["web", "web@q0", "web@q4"]
    documents = [{"source": "web", "rows": 9, "num_tokens": sum(10 + i for i in range(9))}]
    res = sink.finish(staging=staging, storage=None, sources=["web"], splits=[(split, rec)], documents=documents)
    assert res.problems == []
    assert {k: v["documents"] for k, v in res.totals.items()} == {"web": 1, "web@q0": 4, "web@q4": 4}
    keys = [fs.relative(u, staging) for u in fs.list_files(f"{staging}/shards")]
    assert "shards/web@q4/manifest.json" in keys and "shards/web@q4/web@q4-00000-00000.bin" in keys
    # copied back byte for byte, each level's shards verify against its manifest
    for k in keys:
        dst = tmp_path / k
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(fs.read_bytes(f"{staging}/{k}"))
    assert json.loads((tmp_path / "shards/web@q4/manifest.json").read_text())["source"] == "web@q4"
    assert verify_shards(str(Path(tmp_path / "shards"))) == []
