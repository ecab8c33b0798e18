"""semantic_dedup end to end (docs/dedup.md "Semantic dedup"): real Wikipedia paragraphs,
paraphrases of some of them planted in a lower-priority source (synonyms swapped,
clauses rewritten, sentences reordered: Jaccard far below MinHash dedup's reach), run
through ``embed`` (all-MiniLM-L6-v2) and ``semantic_dedup``: the paraphrases go, naming
the paragraph they copy; the adjacent paragraphs of each article (same topic, other
content) stay; the stats count every drop; the Ray Data path decides as the
one-process path does, and a re-run writes the same bytes."""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bench.semdedup_quality import variant, wiki_pairs
from stages.dedup.minhash import shingles

pytestmark = pytest.mark.ray

ARTICLES = 4


@pytest.fixture(scope="module")
def corpus(shared_dir) -> dict[str, list[dict]]:
    """``wiki``: two adjacent paragraphs of each of four articles; ``web``: a paraphrase
    (heavy, reorder, copy) of the first paragraph of three of them and a paragraph of
    another article (not a copy)."""
    pairs = wiki_pairs(shared_dir)[:ARTICLES + 1]
    wiki = [{"id": f"{k}{ab}", "text": t} for k, (_, a, b) in enumerate(pairs[:ARTICLES]) for ab, t in (("a", a), ("b", b))]
    rng = random.Random(5)
    web = [{"id": f"para-{kind}-{k}", "text": variant(pairs[k][1], kind, rng)}
           for k, kind in enumerate(("heavy", "reorder", "copy"))]
    web.append({"id": "other", "text": pairs[ARTICLES][1]})
    return {"wiki": wiki, "web": web}


def _job(tmp_path: Path, corpus, minilm_dir, name: str, **opts) -> Path:
    data = tmp_path / "data"
    if not data.exists():
        data.mkdir()
        for src, docs in corpus.items():   # two files a source: more than one read split
            for f, part in enumerate((docs[: len(docs) // 2], docs[len(docs) // 2:])):
                (data / f"{src}-{f}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in part))
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: {name}
        output: {name}
        sources:
          - {{name: wiki, format: jsonl, paths: [data/wiki-*.jsonl], options: {{id_key: id}}}}
          - {{name: web, format: jsonl, paths: [data/web-*.jsonl], options: {{id_key: id}}}}
        stages:
          - embed: {{model: "{minilm_dir}"}}
          - semantic_dedup: {json.dumps({"source_priority": ["wiki", "web"], **opts})}
    """))
    return spec


def test_paraphrases_are_dropped_for_the_rule_document_and_reruns_match(ray_session, tmp_path, corpus, minilm_dir):
    from datapipe.runner import run_job
    from datapipe.spec import load_job

    # the planted paraphrases are out of MinHash dedup's reach (word 5-gram Jaccard < 0.8)
    orig = {d["id"]: set(shingles(d["text"])) for d in corpus["wiki"]}
    heavy = set(shingles(corpus["web"][0]["text"]))
    assert len(heavy & orig["0a"]) / len(heavy | orig["0a"]) < 0.8

    local = run_job(load_job(_job(tmp_path, corpus, minilm_dir, "a")), echo=lambda s: None)
    docs = pq.read_table(tmp_path / "a" / "documents")
    ids = dict(zip(docs.column("source_id").to_pylist(), docs.column("id").to_pylist()))
    rejects = pq.read_table(tmp_path / "a" / "rejects")
    got = sorted(zip(rejects.column("source_id").to_pylist(), rejects.column("reject_reason").to_pylist(),
                     rejects.column("reject_detail").to_pylist()))
    assert [s for s, _, _ in got] == sorted(d["id"] for d in corpus["web"][:3])
    assert {r for _, r, _ in got} == {"semantic_dedup:duplicate"}
    for sid, _, detail in got:
        kept, cos = detail.rsplit(", cosine ", 1)
        assert kept == f"kept {ids[sid[-1] + 'a']}" and 0.9 <= float(cos) <= 1.0
    # every original, both paragraphs of each article (hard negatives) and the other one stay
    assert sorted(ids) == sorted([d["id"] for d in corpus["wiki"]] + ["other"])
    st = {s["stage"]: s for s in local.report["stages"]}["semantic_dedup"]
    assert st["dropped"] == {"semantic_dedup:duplicate": 3} and st["docs_in"] == 12 and st["docs_out"] == 9
    rep = local.report["stage_reports"]["semantic_dedup"]
    assert rep["removed"] == 3 and [p["pass"] for p in rep["passes"]] == ["sample", "centroids", "decisions"]

    # Ray Data passes (local_rows 0) with two partitions decide the same: the same bytes
    dist = run_job(load_job(_job(tmp_path, corpus, minilm_dir, "b", local_rows=0, parts=2)), echo=lambda s: None)
    assert dist.report["stage_reports"]["semantic_dedup"]["removed"] == 3
    for kind in ("documents", "rejects"):
        fa = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a" / kind).rglob("*.parquet"))
        assert fa and fa == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b" / kind).rglob("*.parquet"))
        assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in fa)
