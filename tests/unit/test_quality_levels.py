"""``quality_levels``' pass on its own: levels are exact quantiles (balanced whatever the
ties), a function of the scores and ids only (not of how the rows were split or ordered),
directions and the ensemble by rank, missing scores as counted drops, config errors."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from datapipe.errors import SpecError
from stages.models.quality_levels import LEVEL, QualityLevels, QualityLevelsConfig, assign_levels, level_summary


def _side(stage: QualityLevels, docs: pa.Table, split_of) -> pa.Table:
    """Side rows as the runner writes them: per split, ``side()`` plus ``_split``/``_row``."""
    parts = []
    splits = np.array([split_of(i) for i in range(docs.num_rows)])
    for key in sorted(set(splits.tolist())):
        rows = docs.filter(pa.array(splits == key))
        side = stage.side(rows)
        parts.append(side.append_column("_split", pa.array([key] * rows.num_rows))
                     .append_column("_row", pa.array(np.arange(rows.num_rows), pa.int64())))
    return pa.concat_tables(parts)


def _levels(cfg: QualityLevelsConfig, docs: pa.Table, split_of=lambda i: "00000", shuffle: int | None = None
            ) -> dict[str, int | None]:
    """Each document's level (None: dropped) through the stage's declared pass."""
    stage = QualityLevels(cfg)
    side = _side(stage, docs, split_of)
    if shuffle is not None:   # rows reach the pass in another order (other blocks, other partitions)
        side = side.take(pa.array(np.random.default_rng(shuffle).permutation(side.num_rows)))
    p = stage.passes(None)[0]
    d = assign_levels(side.select(list(p.inputs[0].columns)), **p.params)
    # back from (split, row) to the document id
    splits = [split_of(i) for i in range(docs.num_rows)]
    pos, seen = {}, {}
    for i, s in enumerate(splits):
        pos[(s, seen.setdefault(s, 0))] = docs.column("id")[i].as_py()
        seen[s] += 1
    return {pos[(r["_split"], r["_row"])]: r[LEVEL] for r in d.to_pylist()}


def _docs(n: int, seed: int = 0, **scores) -> pa.Table:
    cols = {"id": [f"web/{i:016x}" for i in range(n)], "source": ["web"] * n}
    cols.update({k: pa.array(v, pa.float32()) for k, v in scores.items()})
    return pa.table(cols)


def test_levels_are_balanced_quantiles_independent_of_splits_and_order():
    n, levels = 103, 5
    rng = np.random.default_rng(1)
    score = np.round(rng.random(n), 1)   # 11 distinct values: many ties, broken by id
    docs = _docs(n, quality_score=score)
    cfg = QualityLevelsConfig(scores={"quality_score": "higher"}, levels=levels)
    one = _levels(cfg, docs)
    counts = np.bincount(list(one.values()), minlength=levels)
    assert counts.sum() == n and all(abs(c - n / levels) < 1 for c in counts)   # within 1 of N/L
    by_id = dict(zip(docs.column("id").to_pylist(), score.tolist()))
    for k in range(levels - 1):
        assert max(by_id[i] for i, lv in one.items() if lv == k) <= min(by_id[i] for i, lv in one.items() if lv == k + 1)
    # other read splits, rows in another order: the same level for every document
    assert _levels(cfg, docs, split_of=lambda i: f"{i % 7:05d}", shuffle=3) == one
    assert _levels(cfg, docs, split_of=lambda i: f"{i // 10:05d}", shuffle=4) == one


def test_lower_is_better_and_the_ensemble_by_rank():
    n = 40
    ppl = np.arange(n, dtype=np.float64) * 10 + 5            # doc i: perplexity rises with i
    docs = _docs(n, perplexity=ppl, quality_score=np.linspace(1, 0, n))   # and quality falls with i
    lv = _levels(QualityLevelsConfig(scores={"perplexity": "lower"}, levels=4), docs)
    ids = docs.column("id").to_pylist()
    assert [lv[i] for i in ids] == [3] * 10 + [2] * 10 + [1] * 10 + [0] * 10   # the lowest perplexity is the best
    # two scores that agree: the ensemble orders as each does
    both = QualityLevelsConfig(scores={"perplexity": "lower", "quality_score": "higher"}, levels=4)
    assert _levels(both, docs) == lv
    # a weighted ensemble follows the heavier score where they disagree
    docs2 = _docs(n, perplexity=ppl, quality_score=np.linspace(0, 1, n))
    heavy = QualityLevelsConfig(scores={"perplexity": "lower", "quality_score": "higher"}, levels=4,
                                weights={"quality_score": 3.0})
    assert [_levels(heavy, docs2)[i] for i in ids] == [0] * 10 + [1] * 10 + [2] * 10 + [3] * 10


def test_missing_scores_are_counted_drops_or_the_lowest_level():
    score = [0.9, None, 0.1, float("nan"), 0.5, 0.7, 0.3, float("inf")]
    docs = _docs(len(score), quality_score=score)
    ids = docs.column("id").to_pylist()
    drop = _levels(QualityLevelsConfig(scores={"quality_score": "higher"}, levels=2), docs)
    assert [drop[i] for i in ids] == [1, None, 0, None, 0, 1, 0, None]   # 5 scored: 3 + 2
    low = _levels(QualityLevelsConfig(scores={"quality_score": "higher"}, levels=2, missing="lowest"), docs)
    assert [low[i] for i in ids] == [1, 0, 0, 0, 1, 1, 1, 0]
    stage = QualityLevels(QualityLevelsConfig(scores={"quality_score": "higher"}, levels=2))
    p = stage.passes(None)[0]
    d = assign_levels(_side(stage, docs, lambda i: "00000").select(list(p.inputs[0].columns)), **p.params)
    rejects = [r for r in d.to_pylist() if r["reason"] is not None]
    assert [(r["reason"], r["detail"]) for r in rejects] == [("missing_score", "no finite quality_score")] * 3
    rep = level_summary(d, levels=2, per="source", scores={"quality_score": "higher"}, missing="drop")
    assert rep["groups"]["web"]["missing_score"] == 3
    assert [(r["documents"], r["min"], r["max"]) for r in rep["groups"]["web"]["levels"]] == [
        (3, pytest.approx(0.1), pytest.approx(0.5)), (2, pytest.approx(0.7), pytest.approx(0.9))]


def test_per_source_or_pooled():
    a = pa.table({"id": [f"a/{i}" for i in range(6)], "source": ["a"] * 6,
                  "quality_score": pa.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], pa.float32())})
    b = pa.table({"id": [f"b/{i}" for i in range(6)], "source": ["b"] * 6,
                  "quality_score": pa.array([0.7, 0.8, 0.9, 1.0, 1.1, 1.2], pa.float32())})
    docs = pa.concat_tables([a, b])
    per = _levels(QualityLevelsConfig(scores={"quality_score": "higher"}, levels=2), docs)
    assert [per[f"a/{i}"] for i in range(6)] == [0, 0, 0, 1, 1, 1] == [per[f"b/{i}"] for i in range(6)]
    pooled = _levels(QualityLevelsConfig(scores={"quality_score": "higher"}, levels=2, per="pooled"), docs)
    assert {pooled[f"a/{i}"] for i in range(6)} == {0} and {pooled[f"b/{i}"] for i in range(6)} == {1}


@pytest.mark.parametrize("kw, message", [
    ({"scores": {}}, "map each score column"),
    ({"scores": {"perplexity": "low"}}, "use 'higher'"),
    ({"scores": {"text": "higher"}}, "numeric column"),
    ({"scores": {"quality_score": "higher"}, "levels": 1}, "from 2 to 1000"),
    ({"scores": {"quality_score": "higher"}, "per": "split"}, "'pooled'"),
    ({"scores": {"quality_score": "higher"}, "weights": {"perplexity": 2}}, "not among scores"),
    ({"scores": {"quality_score": "higher"}, "missing": "zero"}, "'lowest'"),
])
def test_config_errors_name_the_value_and_the_fix(kw, message):
    with pytest.raises(SpecError, match=message):
        QualityLevelsConfig(**kw)
    assert QualityLevelsConfig(scores={"quality_score": "higher", "perplexity": "lower"}).reads == (
        "quality_score", "perplexity")
    stage = QualityLevels(QualityLevelsConfig(scores={"language": "higher"}))
    with pytest.raises(SpecError, match="'language' holds string, not numbers"):
        stage.side(pa.table({"id": ["a/1"], "source": ["a"], "language": ["en"]}))


def test_sample_levels_mix_file(repo_dir):
    """mixes/sample-levels.yaml names level shard sets of jobs/sample_levels.yaml's output
    and anneals onto the top levels only."""
    from trainer_bridge.mix import load_mix

    spec = load_mix(repo_dir / "mixes" / "sample-levels.yaml")
    names = [s.manifest.split("/")[-2] for s in spec.sources]
    assert "web@q4" in names and "web@q0" in names
    assert all(s.manifest == f"../runs/sample-levels/shards/{n}/manifest.json" for s, n in zip(spec.sources, names))
    main, anneal = spec.schedule
    assert main.weights["web@q4"] > main.weights["web@q0"]
    assert {n for n, w in anneal.weights.items() if w and "@q" in n} == {"web@q4", "news@q4"}
    job = (repo_dir / "jobs" / "sample_levels.yaml").read_text()
    assert "by_level: true" in job and "output: ../runs/sample-levels" in job


def test_id_hash_collisions_at_a_tie_are_parted_by_read_position():
    n = 10
    side = pa.table({"idh": pa.array([7] * n, pa.int64()), "group": ["web"] * n,
                     "_split": [f"{i % 3:05d}" for i in range(n)], "_row": pa.array([i // 3 for i in range(n)], pa.int64()),
                     "s0": pa.array([0.5] * n, pa.float64())})
    kw = dict(levels=2, scores=["s0"], columns=["quality_score"], weights=[1.0], lower=[False], missing="drop")

    def levels(t):
        return {(r["_split"], r["_row"]): r[LEVEL] for r in assign_levels(t, **kw).to_pylist()}

    one = levels(side)
    assert sorted(one.values()) == [0] * 5 + [1] * 5
    assert levels(side.take(pa.array(np.random.default_rng(0).permutation(n)))) == one
    assert [one[(f"{i % 3:05d}", i // 3)] for i in sorted(range(n), key=lambda i: (i % 3, i // 3))] == [0] * 5 + [1] * 5
