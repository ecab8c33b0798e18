"""A datapipe stage inside a user's own Ray Data pipeline (``map_batches``)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import datapipe

pytestmark = pytest.mark.ray


def test_stage_in_ray_data_map_batches(ray_session, shared_dir):
    ray = ray_session
    path = shared_dir / "corpora" / "redpajama" / "redpajama-c4-refined.jsonl"
    texts = [json.loads(x)["text"] for x in path.read_text().splitlines() if x.strip()]
    texts += ["click here now", "buy buy buy"]
    table = pa.table({"text": texts, "n": list(range(len(texts)))})
    expected = datapipe.stage("gopher_quality")(table)

    ds = ray.data.from_arrow(table).repartition(3)
    kept = ds.map_batches(datapipe.stage("gopher_quality").udf(), batch_format="pyarrow", batch_size=4)
    assert sorted(kept.to_pandas()["n"]) == sorted(expected.kept.column("n").to_pylist())

    # the class form on an actor pool (the model loads once per actor), rejects marked
    marked = ds.map_batches(datapipe.StageUDF, fn_constructor_kwargs={"stage": "langid", "config": {"languages": ["en"]},
                                                                      "rejects": "mark"},
                            compute=ray.data.ActorPoolStrategy(min_size=1, max_size=4),  # as docs/python.md
                            batch_format="pandas", batch_size=4).to_pandas()
    assert len(marked) == len(texts)
    english = marked[marked["reject_reason"].isna()]
    assert (english["language"] == "en").all() and len(english) >= len(texts) - 2
