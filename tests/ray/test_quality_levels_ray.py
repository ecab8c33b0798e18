"""Quality levels end to end on a local Ray: ``langid``'s ``language_score`` (the real
lid.176 model) cut into quartiles per source by ``quality_levels``, ``tokenize`` writing
one shard set per (source, level), and a mix over the levels that plans exactly."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

pytestmark = pytest.mark.ray

LEVELS = 4


def _data(shared: Path, folder: Path) -> None:
    """Two real sources: news paragraphs (Lee corpus) and short mixed-language texts."""
    folder.mkdir(parents=True)
    lee = [line.strip() for line in (shared / "corpora/misc/lee_background.cor").read_text().splitlines() if line.strip()]
    (folder / "news.jsonl").write_text("".join(json.dumps({"id": f"n{i}", "text": t}) + "\n"
                                               for i, t in enumerate(lee[:42])))
    demo = [json.loads(line)["text"] for line in
            (shared / "corpora/misc/demo-dataset-deduplication.jsonl").read_text().splitlines() if line.strip()]
    (folder / "web.jsonl").write_text("".join(json.dumps({"id": f"w{i}", "text": t}) + "\n"
                                              for i, t in enumerate(demo) if t.strip()))


def _run(tmp_path: Path, shared: Path, out: str, split_bytes: int):
    from datapipe.runner import run_job
    from datapipe.spec import load_job

    spec = tmp_path / f"{out}.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: levels
        output: {out}
        execution: {{split_bytes: {split_bytes}, batch_rows: 16}}
        sources:
          - {{name: news, format: jsonl, paths: ["data/news.jsonl"], options: {{id_key: id}}}}
          - {{name: web, format: jsonl, paths: ["data/web.jsonl"], options: {{id_key: id}}}}
        stages:
          - langid: {{}}
          - quality_levels: {{scores: {{language_score: higher}}, levels: {LEVELS}, per: source, local_rows: 0}}
          - tokenize: {{tokenizer: "{shared}/tokenizers/tiny-2k.tokenizer.json", by_level: true}}
        shards: {{shard_tokens: 2048, seed: 7}}
    """))
    return run_job(load_job(spec), echo=lambda line: None)


def _levels(out: Path) -> dict[str, tuple[int, float]]:
    t = pq.read_table(out / "documents", columns=["id", "quality_level", "language_score"]).to_pylist()
    return {r["id"]: (r["quality_level"], r["language_score"]) for r in t}


def test_levels_are_quantiles_shards_per_level_and_a_mix_over_them_plans_exactly(ray_session, shared_dir, tmp_path):
    from datapipe.shards import iter_documents, verify_shards
    from trainer_bridge.mix import plan_mix

    _data(shared_dir, tmp_path / "data")
    res = _run(tmp_path, shared_dir, "out", split_bytes=1024)   # several read splits per source
    out = tmp_path / "out"
    levels = _levels(out)
    report = res.report["stage_reports"]["quality_levels"]["levels"]
    for src in ("news", "web"):
        mine = {i: v for i, v in levels.items() if i.startswith(src + "/")}
        n = len(mine)
        counts = [sum(1 for lv, _ in mine.values() if lv == k) for k in range(LEVELS)]
        assert sum(counts) == n and all(abs(c - n / LEVELS) < 1 for c in counts), counts   # balanced by quantile
        for k in range(LEVELS - 1):   # every level's scores at or below the next level's
            assert max(s for lv, s in mine.values() if lv == k) <= min(s for lv, s in mine.values() if lv == k + 1)
        assert [r["documents"] for r in report["groups"][src]["levels"]] == counts
        row = next(ln for ln in (out / "report.md").read_text().splitlines() if ln.startswith(f"| {src} | {counts[0]} ("))
        assert row.count("(") == LEVELS   # report.md: each level's documents and boundaries
        # one shard set per level, each with its own manifest; together they hold the source's documents
        sets = {k: json.loads((out / "shards" / f"{src}@q{k}" / "manifest.json").read_text()) for k in range(LEVELS)}
        assert [m["source"] for m in sets.values()] == [f"{src}@q{k}" for k in range(LEVELS)]
        assert [m["totals"]["documents"] for m in sets.values()] == counts
        assert not (out / "shards" / src).exists()
        assert res.report["shards"][f"{src}@q0"]["source"] == src
    assert verify_shards(str(out / "shards")) == []
    # `shards cat` names a level set's documents by id (from the source's documents and their level)
    got = [d.id for d in iter_documents(out / "shards" / "web@q3" / "manifest.json", documents=out / "documents" / "web")]
    assert sorted(got) == sorted(i for i, (lv, _) in levels.items() if i.startswith("web/") and lv == 3)

    # the same job over other read splits: the same level for every document
    _run(tmp_path, shared_dir, "one_split", split_bytes=1 << 20)
    assert _levels(tmp_path / "one_split") == levels
    # a re-run writes byte-identical shards and documents (their quality_level included)
    _run(tmp_path, shared_dir, "again", split_bytes=1024)
    files = sorted(p.relative_to(out) for d in ("shards", "documents") for p in (out / d).rglob("*") if p.is_file())
    assert files and all((out / p).read_bytes() == (tmp_path / "again" / p).read_bytes() for p in files)

    # a mix weighting the best level against the worst, then annealing onto the top two
    seq = 32
    mix = tmp_path / "levels.yaml"
    mix.write_text(yaml.safe_dump({
        "name": "levels", "seq_len": seq, "token_budget": seq * 200, "seed": 3, "max_epochs": 1000,
        "warn_epochs": 1000,
        "sources": [{"manifest": f"out/shards/web@q{k}/manifest.json"} for k in (3, 2, 0)],
        "schedule": [{"name": "main", "tokens": seq * 120, "weights": {"web@q3": 0.6, "web@q0": 0.4}},
                     {"name": "anneal", "weights": {"web@q3": 0.75, "web@q2": 0.25}}]}, sort_keys=False))
    rep = plan_mix(mix)
    by = {r.name: r.samples for r in rep.rows}
    assert rep.samples == 200 and by == {"web@q3": 72 + 60, "web@q2": 20, "web@q0": 48}
