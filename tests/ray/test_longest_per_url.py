"""The global stage of docs/engine.md "Adding a global stage" (docs/examples/longest_per_url.py),
run by the engine; and the page shows that very file."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "docs" / "examples"))
import longest_per_url  # noqa: E402

pytestmark = pytest.mark.ray


def test_the_page_shows_the_file_the_test_runs():
    page = (REPO / "docs" / "engine.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert (REPO / "docs" / "examples" / "longest_per_url.py").read_text(encoding="utf-8") in blocks


def test_longest_document_per_url_is_kept_across_splits(ray_session, tmp_path):
    from ray import cloudpickle

    import stages
    from datapipe.runner import run_job
    from datapipe.spec import load_job

    cloudpickle.register_pickle_by_value(longest_per_url)
    stages.REGISTRY["longest_per_url"] = longest_per_url.LongestPerUrl
    pad = " about the river and the mill" * 40     # each file is its own read split
    docs = {"a.jsonl": [("a1", "https://x.org/a", "short" + pad), ("b1", "https://x.org/b", "only one" + pad)],
            "b.jsonl": [("a2", "https://x.org/a", "the longest of the three" + pad), ("n1", None, "no url" + pad)],
            "c.jsonl": [("a3", "https://x.org/a", "middle length" + pad)]}
    (tmp_path / "data").mkdir()
    for name, rows in docs.items():
        (tmp_path / "data" / name).write_text("".join(json.dumps({"id": i, "url": u, "text": t}) + "\n"
                                                      for i, u, t in rows))
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent("""
        name: longest
        output: out
        execution: {split_bytes: 1024}
        sources:
          - {name: web, format: jsonl, paths: [data/*.jsonl], options: {id_key: id, url_key: url}}
        stages:
          - longest_per_url: {parts: 2, local_rows: 0}
    """))
    result = run_job(load_job(spec), echo=lambda line: None)
    kept = pq.read_table(tmp_path / "out" / "documents")
    assert sorted(kept.column("source_id").to_pylist()) == ["a2", "b1", "n1"]
    rejects = pq.read_table(tmp_path / "out" / "rejects").sort_by("source_id")
    assert rejects.column("source_id").to_pylist() == ["a1", "a3"]
    assert set(rejects.column("reject_reason").to_pylist()) == {"longest_per_url:shorter"}
    kept_id = kept.filter(pc.equal(kept.column("source_id"), "a2")).column("id")[0].as_py()
    assert rejects.column("reject_detail").to_pylist() == [kept_id, kept_id]
    report = result.report["stage_reports"]["longest_per_url"]
    assert report["removed"] == 2
    assert report["decided_in"] == "Ray Data passes"
    assert [(p["pass"], p["rows"], p["reused"]) for p in report["passes"]] == [("shared", 3, False),
                                                                               ("decisions", 2, False)]
