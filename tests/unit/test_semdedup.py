"""semantic_dedup (docs/dedup.md "Semantic dedup"): its k-means is a function of the
documents, not of how they were blocked; planted near-copies are found and the keep
rule's document stays; the tiled compare finds exactly the pairs the whole compare does;
a document without a usable embedding takes no part. Synthetic embeddings here; the
end-to-end job with real text and the embed stage is tests/ray/test_semdedup_ray.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.passes import run_global
from datapipe.stage import StageContext
from stages.dedup.semantic import SemanticDedup, SemanticDedupConfig
from stages.dedup.semantic.kmeans import components, embedding_matrix, similar_pairs
from stages.dedup.semantic.stage import bottom_k, fit_centroids

DIM = 32


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _emb_array(x: np.ndarray | list) -> pa.Array:
    """float16 fixed-size lists, as the embed stage writes them (None: a null row)."""
    rows = [None if r is None else np.asarray(r, np.float16) for r in x]
    flat = np.concatenate([r if r is not None else np.zeros(DIM, np.float16) for r in rows])
    mask = pa.array([r is None for r in rows])
    return pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.float16()), DIM, mask=mask)


def _side(stage: SemanticDedup, source: str, ids: list[str], emb, split: str) -> pa.Table:
    batch = S.make_batch(source=source, ids=ids, texts=["t"] * len(ids)).append_column("embedding", _emb_array(emb))
    side = stage.side(batch)
    return side.append_column("_split", pa.array([split] * len(ids))).append_column(
        "_row", pa.array(range(len(ids)), pa.int64()))


def _decide(tmp_path, stage: SemanticDedup, sides: list[pa.Table]) -> pa.Table:
    """The stage as the runner drives it: side files, then its declared passes."""
    files = []
    (tmp_path / "side").mkdir(parents=True, exist_ok=True)
    for k, t in enumerate(sides):
        files.append(str(tmp_path / "side" / f"{k}.parquet"))
        pq.write_table(t, files[-1])
    ctx = StageContext(work_dir=str(tmp_path / "work"), sources=("a", "b"))
    uri = run_global(stage, files, ctx)
    return pq.read_table(uri) if uri else pa.table({"_split": [], "_row": []})


def _corpus(seed: int = 0, n: int = 300, groups: int = 12):
    """``n`` random directions; the first ``groups`` get near-copies (cosine ~0.97-0.99)."""
    rng = np.random.default_rng(seed)
    base = _unit(rng.standard_normal((n, DIM)))
    copies = _unit(base[:groups] + 0.12 * rng.standard_normal((groups, DIM)) / np.sqrt(DIM))
    return base, copies


def test_planted_copies_are_dropped_and_the_rule_keeps_its_document(tmp_path):
    base, copies = _corpus()
    n, g = len(base), len(copies)
    # source a holds the originals; source b the copies. With b first in source_priority
    # the copies stay and the originals go; in each pair the id names the kept one.
    stage = SemanticDedup(SemanticDedupConfig(threshold=0.9, clusters=4, source_priority=("b",)))
    ids_a = [f"a/{i:016x}" for i in range(n)]
    ids_b = [f"b/{i:016x}" for i in range(g)]
    # a null embedding, a zero vector and a NaN take no part and are never dropped
    junk = [None, np.zeros(DIM), np.full(DIM, np.nan)]
    emb_a = list(base) + junk
    ids_a += ["a/junk0", "a/junk1", "a/junk2"]
    dec = _decide(tmp_path, stage, [_side(stage, "a", ids_a[:150], emb_a[:150], "a/00000"),
                                    _side(stage, "a", ids_a[150:], emb_a[150:], "a/00001"),
                                    _side(stage, "b", ids_b, copies, "b/00000")])
    dropped = sorted((s, r) for s, r in zip(dec["_split"].to_pylist(), dec["_row"].to_pylist()))
    assert dropped == sorted(("a/00000", i) for i in range(g))       # the originals, nothing else
    assert set(dec["reason"].to_pylist()) == {"duplicate"}
    for r, detail in zip(dec["_row"].to_pylist(), dec["detail"].to_pylist()):
        kept, cos = detail.split(", cosine ")
        assert kept == f"kept {ids_b[r]}"
        assert abs(float(cos) - float(base[r] @ copies[r])) < 2e-3 and float(cos) >= 0.9

    # without a priority the smaller id stays: every copy ('b/...') goes for its 'a/...'
    stage = SemanticDedup(SemanticDedupConfig(threshold=0.9, clusters=4))
    dec = _decide(tmp_path / "nopri", stage, [_side(stage, "a", ids_a, emb_a, "a/00000"),
                                              _side(stage, "b", ids_b, copies, "b/00000")])
    assert dec["_split"].to_pylist() == ["b/00000"] * g and dec["_row"].to_pylist() == list(range(g))
    assert [d.split(",")[0] for d in dec["detail"].to_pylist()] == [f"kept {ids_a[i]}" for i in range(g)]


def test_a_chain_of_copies_is_one_component_kept_by_its_first_document(tmp_path):
    rng = np.random.default_rng(3)
    far = _unit(rng.standard_normal((40, DIM)))
    v = far[0]
    w = _unit((v + 0.35 * _unit(rng.standard_normal((1, DIM)))[0])[None])[0]   # cos(v, w) ~0.94
    mid = _unit(((v + w) / 2)[None])[0]
    # a ~ m, m ~ b, a !~ b at 0.985: one component {a, m, b}, its smallest id ('x/0') stays
    stage = SemanticDedup(SemanticDedupConfig(threshold=0.985, clusters=1))
    ids = ["x/0", "x/1", "x/2"] + [f"y/{i:03d}" for i in range(1, 40)]
    dec = _decide(tmp_path, stage, [_side(stage, "a", ids, [v, mid, w] + list(far[1:]), "a/0")])
    assert float(v @ w) < 0.985 <= min(float(v @ mid), float(mid @ w))
    assert dec["_row"].to_pylist() == [1, 2]
    assert all(d.startswith("kept x/0, cosine ") for d in dec["detail"].to_pylist())


def test_kmeans_does_not_depend_on_blocks_or_row_order():
    rng = np.random.default_rng(1)
    x = _unit(rng.standard_normal((500, DIM)))
    ids = pa.array([f"a/{i:05d}" for i in range(500)])
    table = pa.table({"id": ids, "source": pa.array(["a"] * 500), "_emb": _emb_array(x)})

    def fit(blocks: list[pa.Table], k: int) -> pa.Table:
        sample = pa.concat_tables([bottom_k(b, k=k) for b in blocks])
        return fit_centroids(sample, k=k, clusters=8, cluster_rows=100, seed=5, iterations=10)

    whole = fit([table], 200)
    perm = rng.permutation(500)
    shuffled = table.take(pa.array(perm))
    blocked = fit([shuffled.slice(0, 77), shuffled.slice(77, 200), shuffled.slice(277)], 200)
    assert whole.equals(blocked) and whole.num_rows == 8
    assert whole["rows"][0].as_py() == 500 and whole["sample"][0].as_py() == 200
    c = np.array(whole["centroid"].to_pylist())
    assert np.allclose(np.linalg.norm(c, axis=1), 1.0)
    # another seed gives other centroids; the same seed the same bytes, run after run
    assert not fit([table], 200).column("centroid").equals(
        fit_centroids(bottom_k(table, k=200), k=200, clusters=8, cluster_rows=100, seed=6, iterations=10)
        .column("centroid"))
    # auto: ceil(rows / cluster_rows) clusters
    auto = fit_centroids(bottom_k(table, k=500), k=500, clusters=None, cluster_rows=64, seed=5, iterations=3)
    assert auto.num_rows == 8


def test_tiled_compare_finds_exactly_the_pairs_of_the_whole_compare():
    rng = np.random.default_rng(2)
    base = _unit(rng.standard_normal((60, DIM)))
    # many pairs straddle the threshold: copies at noise levels that put cosines around 0.9
    noisy = [_unit(base + s * rng.standard_normal(base.shape) / np.sqrt(DIM)) for s in (0.3, 0.45, 0.6)]
    x16 = np.concatenate([base, *noisy]).astype(np.float16)
    x, ok = embedding_matrix(_emb_array(x16))
    assert ok.all()
    full = similar_pairs(x, 0.9, block_rows=len(x))
    assert 40 < len(full[0]) < 400      # the threshold cuts through the pairs
    for block in (1, 7, 64):
        tiled = similar_pairs(x, 0.9, block_rows=block)
        assert all(np.array_equal(a, b) for a, b in zip(full, tiled))
    # every pair at or above the threshold, and only those (brute force in float64)
    x64 = x.astype(np.float64)
    sims = x64 @ x64.T
    want = {(i, j) for i in range(len(x)) for j in range(i + 1, len(x)) if sims[i, j] >= 0.9}
    assert set(zip(full[0].tolist(), full[1].tolist())) == want
    # the components merged tile by tile (no pair kept) are those of all the pairs at once
    parent = list(range(len(x)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i
    for i, j in sorted(want):
        a, b = find(i), find(j)
        parent[max(a, b)] = min(a, b)
    roots = [find(i) for i in range(len(x))]
    assert len(set(roots)) < len(x) - 20
    for block in (1, 7, 64, len(x)):
        assert components(x, 0.9, block_rows=block).tolist() == roots


def test_an_oversized_cluster_is_cut_into_pieces_and_copies_still_meet(tmp_path):
    base, copies = _corpus(seed=4, n=200, groups=10)
    stage = SemanticDedup(SemanticDedupConfig(threshold=0.9, clusters=1, max_cluster_rows=60, block_rows=16))
    ids = [f"a/{i:05d}" for i in range(200)] + [f"c/{i:05d}" for i in range(10)]
    dec = _decide(tmp_path, stage, [_side(stage, "a", ids, list(base) + list(copies), "a/0")])
    # near-copies land in the same piece (k-means cuts by direction)
    assert dec["_row"].to_pylist() == list(range(200, 210))


@pytest.mark.parametrize("bad, match", [
    ({"threshold": 0}, "threshold=0; use a cosine in"),
    ({"threshold": 1.5}, "threshold=1.5"),
    ({"column": "text"}, "column='text'; name the embedding column"),
    ({"clusters": 0}, "clusters=0"),
    ({"max_cluster_rows": 1}, "max_cluster_rows=1; use a whole number >= 2"),
    ({"source_priority": ("a", "a")}, "lists a source twice"),
])
def test_config_errors_name_the_value_and_the_fix(bad, match):
    with pytest.raises(SpecError, match=match):
        SemanticDedupConfig(**bad)
    assert SemanticDedupConfig(column="emb").reads == ("emb",)


def test_a_restart_reuses_committed_passes_and_a_new_threshold_reuses_the_clusters(tmp_path):
    base, copies = _corpus(seed=6, n=120, groups=6)
    ids = [f"a/{i:05d}" for i in range(126)]

    def run(threshold: float) -> tuple[bytes, list[tuple[str, bool]]]:
        stage = SemanticDedup(SemanticDedupConfig(threshold=threshold, clusters=3))
        side = _side(stage, "a", ids, list(base) + list(copies), "a/0")
        (tmp_path / "side").mkdir(exist_ok=True)
        pq.write_table(side, tmp_path / "side" / "0.parquet")
        ctx = StageContext(work_dir=str(tmp_path / "work"), sources=("a",))
        uri = run_global(stage, [str(tmp_path / "side" / "0.parquet")], ctx)
        data = b"".join(p.read_bytes() for p in sorted(Path(uri).rglob("*.parquet")))
        return data, [(p["pass"], p["reused"]) for p in ctx.report["passes"]]

    first, passes = run(0.9)
    assert passes == [("sample", False), ("centroids", False), ("decisions", False)]
    again, passes = run(0.9)
    assert again == first and passes == [("sample", True), ("centroids", True), ("decisions", True)]
    # the threshold keys only the last pass: the clusters are reused
    _, passes = run(0.95)
    assert passes == [("sample", True), ("centroids", True), ("decisions", False)]
