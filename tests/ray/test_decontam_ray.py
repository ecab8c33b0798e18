"""decontaminate run by the engine on the session's Ray: the index passes run once on the
cluster (Ray Data, not the driver's process) before the stage's phase, are reused when run
again with the same files, and the stage's actors decide with the shipped artifact."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "jobs" / "curate_data"))
from build_eval import build as build_eval  # noqa: E402

pytestmark = pytest.mark.ray


def test_index_passes_run_on_ray_once_and_actors_use_them(ray_session, shared_dir, tmp_path):
    from datapipe.passes import run_prepared
    from datapipe.runner import run_job
    from datapipe.spec import load_job
    from datapipe.stage import StageContext
    from stages.decontam import Decontaminate, DecontamConfig

    ev = tmp_path / "eval.jsonl"
    assert build_eval(shared_dir, ev) > 200
    items = [json.loads(line)["question"] for line in ev.read_text(encoding="utf-8").splitlines()]
    cfg = DecontamConfig(eval_sets={"cloze": [str(ev)]}, text_fields=("question",), index_kind="bloom",
                         local_build_bytes=0)
    runs = []
    for _ in range(2):   # the executor on Ray Data; the second call reuses every committed pass
        ctx = StageContext(work_dir=str(tmp_path / "work"), sources=("web",))
        run_prepared(Decontaminate(cfg), ctx)
        runs.append([(t["pass"], t["reused"]) for t in ctx.report["passes"]])
    assert runs[0] == [("items", False), ("summary", False), ("index", False), ("bloom", False)]
    assert runs[1] == [(p, True) for p, _ in runs[0]]

    books = sorted((shared_dir / "corpora" / "books" / "gutenberg").glob("*.txt.gz"))
    import gzip

    clean = gzip.decompress(books[0].read_bytes()).decode("utf-8", "replace").split()
    (tmp_path / "data").mkdir()
    for k in range(3):   # each file is its own read split
        rows = [{"id": f"c{k}", "text": " ".join(clean[k * 900:(k + 1) * 900])},
                {"id": f"q{k}", "text": " ".join(clean[5000:5300]) + " " + items[k * 7].upper() + " the end"}]
        (tmp_path / "data" / f"{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: decontam
        output: out
        execution: {{split_bytes: 1024}}
        sources:
          - {{name: web, format: jsonl, paths: [data/*.jsonl], options: {{id_key: id}}}}
        stages:
          - decontaminate:
              eval_sets: {{cloze: ["{ev}"]}}
              text_fields: [question]
              index_kind: bloom
              local_build_bytes: 0
    """))
    result = run_job(load_job(spec), echo=lambda line: None)
    kept = pq.read_table(tmp_path / "out" / "documents")
    assert sorted(kept.column("source_id").to_pylist()) == ["c0", "c1", "c2"]
    rejects = pq.read_table(tmp_path / "out" / "rejects")
    assert sorted(rejects.column("source_id").to_pylist()) == ["q0", "q1", "q2"]
    assert all(d.startswith("cloze: ") for d in rejects.column("reject_detail").to_pylist())
    rep = result.report["stage_reports"]["decontaminate"]
    assert [(t["pass"], t["reused"]) for t in rep["passes"]] == runs[0]   # once per run, not per actor
    assert rep["index_kind"] == "bloom" and rep["ngrams"] > 3000 and 0 < rep["index_bytes"] < 10 * rep["ngrams"]
