"""Ids unique across read splits: an id first read in an earlier split is a counted
``read:duplicate_id`` reject where it enters, with the first copy's origin, before a
global stage sees it, and token shards never fail on it."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from datapipe.plan import split_refs
from datapipe.runner import run_job
from datapipe.shards import verify_shards
from datapipe.spec import load_job

sys.path.insert(0, str(Path(__file__).parent))
import engine_stages  # noqa: E402

pytestmark = pytest.mark.ray
PAD = " It goes on about the river, the mill and the bridge for a while." * 4


@pytest.fixture(scope="module", autouse=True)
def _stages():
    engine_stages.register()


def _write(path: Path, records: list[tuple[str, str]]) -> None:
    path.write_text("".join(json.dumps({"id": i, "text": t + PAD}) + "\n" for i, t in records))


def test_ids_repeated_across_splits_are_read_rejects_before_the_global_stage(ray_session, tmp_path, shared_dir):
    data = tmp_path / "data"
    data.mkdir()
    _write(data / "a.jsonl", [("x", "Alpha text."), ("y", "Bravo text.")])
    _write(data / "b.jsonl", [("y", "A different text under a reused id."), ("z", "Charlie text.")])
    _write(data / "c.jsonl", [("x", "Alpha text."), ("w", "Delta text."), ("x", "Alpha again, in the same file.")])
    tok = shared_dir / "tokenizers" / "tiny-2k.tokenizer.json"
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: unique-ids
        output: out
        execution: {{batch_rows: 2, split_bytes: 1024}}
        sources:
          - {{name: docs, format: jsonl, paths: [data/*.jsonl], options: {{id_key: id}}}}
        stages:
          - exact_dup: {{}}
          - tokenize: {{tokenizer: {tok}}}
        shards: {{shard_tokens: 256, seed: 7}}
    """))
    job = load_job(spec)
    assert len({ref.key for ref in split_refs(job)}) == 3      # one split per file
    result = run_job(job, echo=lambda s: None)
    out = Path(result.output)
    assert result.report["accounting_ok"], result.report["problems"]
    docs = pq.read_table(out / "documents").to_pylist()
    rejects = pq.read_table(out / "rejects").to_pylist()
    assert sorted(d["text"].split(".")[0] for d in docs) == ["Alpha text", "Bravo text", "Charlie text", "Delta text"]
    assert len({d["id"] for d in docs}) == len(docs) == 4
    dup = {(r["origin"], r["reject_reason"], r["reject_detail"]) for r in rejects}
    # c's first x and b's y were first read in a.jsonl: rejected at read, not by exact_dup
    # (which never sees them); c's second x is a repeat within its own split
    assert dup == {("b.jsonl@0", "read:duplicate_id", "first copy at a.jsonl@" + str(len(_line("x", "Alpha text.")))),
                   ("c.jsonl@0", "read:duplicate_id", "first copy at a.jsonl@0"),
                   (f"c.jsonl@{len(_line('x', 'Alpha text.')) + len(_line('w', 'Delta text.'))}",
                    "read:duplicate_id", "first copy at c.jsonl@0")}
    read = result.report["stages"][0]
    assert read["stage"] == "read" and read["docs_out"] == 4 and read["dropped"] == {"read:duplicate_id": 3}
    assert verify_shards(out / "shards") == []
    assert json.loads((out / "shards" / "docs" / "manifest.json").read_text())["totals"]["documents"] == 4


def _line(doc_id: str, text: str) -> bytes:
    return (json.dumps({"id": doc_id, "text": text + PAD}) + "\n").encode()


def test_check_in_parts_finds_what_one_part_finds(ray_session, tmp_path):
    """A big job's check runs as one Ray Data task per part; cutting the ids into parts
    must find exactly the extra copies (and first origins) one part finds."""
    import pyarrow as pa

    from datapipe import schema as S
    from datapipe.unique_ids import find_duplicates, id_rows, write_ids

    splits = {"s/00000": ["a", "b", "c", "d"], "s/00001": ["c", "e", "a", "f"], "s/00002": ["f", "g", "a", "h"]}
    found = {}
    for parts in (1, 3):
        files = []
        for order, (key, ids) in enumerate(splits.items()):
            batch = pa.table({S.ID: ids, S.ORIGIN: [f"{key}@{i}" for i in range(len(ids))],
                              S.REJECT_REASON: pa.nulls(len(ids), pa.string())})
            path = str(tmp_path / f"p{parts}" / f"{order}.parquet")
            write_ids(path, [id_rows(batch, 0, parts)], None)
            files.append((key, path))
        timings: list = []
        for _ in range(2):   # the second time the committed check is reused
            uri, keys = find_duplicates(files, parts, str(tmp_path / f"p{parts}" / "check"), max_retries=1,
                                        storage=None, timings=timings)
        assert [(t["pass"], t["rows"], t["reused"]) for t in timings] == [("duplicates", 4, False),
                                                                          ("duplicates", 4, True)]
        found[parts] = (pq.read_table(uri).to_pylist(), keys)
    rows, keys = found[1]
    assert found[3] == found[1] and keys == ["s/00001", "s/00002"]
    assert [(r["_split"], r["_row"], r["detail"]) for r in rows] == [
        ("s/00001", 0, "first copy at s/00000@2"), ("s/00001", 2, "first copy at s/00000@0"),
        ("s/00002", 0, "first copy at s/00001@3"), ("s/00002", 2, "first copy at s/00000@0")]
