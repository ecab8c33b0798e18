"""Semantic dedup (SemDeDup-style): documents whose embeddings are nearly parallel are
one document said twice; of each such group the MinHash dedup keep rule's document stays
(``source_priority``, then the smallest id) and the others are dropped as
``semantic_dedup:duplicate``, the detail naming the kept document and the cosine to it.

A global stage on the declared-passes contract (docs/engine.md "Adding a global stage").
``side()`` keeps, per document, its id, source and embedding (the column an ``embed``
stage wrote; never text). Passes (docs/dedup.md "Semantic dedup"):

1. ``sample``: each block of side rows keeps its ``sample_rows`` rows of smallest
   xxh3-64 of ``source, id`` (a bottom-k sample: the union's bottom-k is the corpus's,
   whatever the blocks) and counts its rows.
2. ``centroids``: in one task, the corpus's bottom-k sample, sorted by that hash, is
   clustered by spherical k-means (k-means++ from ``seed``, at most ``iterations``
   rounds; ``clusters``, or the corpus's rows / ``cluster_rows``).
3. ``decisions``: each side row, as it is read, goes to its nearest centroid and is
   routed by cluster (``cluster % parts``); per cluster, in keep-rule order, every pair
   at cosine >= ``threshold`` (tiles of ``block_rows``) joins a component, whose first
   document stays. A cluster above ``max_cluster_rows`` is first cut by k-means into
   pieces under it (pairs across two pieces are not compared).

Every decision is a function of the side rows' values (id, source, embedding) and the
config, never of how the corpus was split, the blocks Ray Data made or the partitions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from datapipe import fs
from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.passes import SIDE, STORAGE, Blocks, Hash, Input, Output, Pass, Ref, Routed
from datapipe.stage import GlobalStage, StageConfig
from stages.dedup import graph as G
from stages.dedup.semantic.kmeans import assign, components, cosines, embedding_matrix, kmeans

EMB = "_emb"   # the embedding's column in the passes, whatever its name in the documents
SAMPLE = pa.schema([("h", pa.uint64()), ("source", pa.string()), ("id", pa.string()),
                    ("emb", pa.list_(pa.float32())), ("rows", pa.int64())])
CENTROIDS = pa.schema([("cluster", pa.int32()), ("centroid", pa.list_(pa.float64())), ("rows", pa.int64()),
                       ("sample", pa.int64())])
#: how deep a cluster above ``max_cluster_rows`` is cut by k-means before it is cut
#: into runs of keep-rule order
_MAX_DEPTH = 3


@dataclass(kw_only=True, frozen=True)
class SemanticDedupConfig(StageConfig):
    """See docs/dedup.md "Semantic dedup" for what each field costs and buys."""

    #: cosine at or above which two documents are duplicates (measured: bench/semdedup_quality.py)
    threshold: float = 0.9
    #: the embedding column (an ``embed`` stage writes ``embedding``)
    column: str = "embedding"
    #: k-means clusters; None: the corpus's documents / ``cluster_rows`` (at most ``sample_rows`` / 10)
    clusters: int | None = None
    #: documents per cluster on average when ``clusters`` is None
    cluster_rows: int = 1000
    #: rows of the deterministic sample k-means is fitted on
    sample_rows: int = 100_000
    seed: int = 0
    iterations: int = 20
    #: a cluster with more documents is first cut by k-means into pieces under this size
    max_cluster_rows: int = 20_000
    #: rows per side of a tile of the pairwise compare (memory: block_rows^2 float32)
    block_rows: int = 2048
    #: which copy stays: sources listed first, then the smallest id (MinHash dedup's rule)
    source_priority: tuple[str, ...] = ()
    #: partitions of the decisions pass (clusters routed by ``cluster % parts``)
    parts: int = 1
    #: up to this many documents the passes run in one process (no Ray Data start-up)
    local_rows: int = 100_000

    def __post_init__(self) -> None:
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0.0 < t <= 1.0:
            raise SpecError(f"semantic_dedup: threshold={t!r}; use a cosine in (0, 1], e.g. 0.9")
        if not isinstance(self.column, str) or not self.column or self.column in (S.TEXT, S.RAW, S.ID, S.SOURCE):
            raise SpecError(f"semantic_dedup: column={self.column!r}; name the embedding column an embed stage "
                            "writes ('embedding')")
        if self.clusters is not None and (isinstance(self.clusters, bool) or not isinstance(self.clusters, int)
                                          or self.clusters < 1):
            raise SpecError(f"semantic_dedup: clusters={self.clusters!r}; use a whole number >= 1, or leave it "
                            "out to have the corpus's size decide (cluster_rows)")
        for name, low in (("cluster_rows", 2), ("sample_rows", 1), ("iterations", 1), ("max_cluster_rows", 2),
                          ("block_rows", 1), ("parts", 1), ("local_rows", 0), ("seed", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise SpecError(f"semantic_dedup: {name}={v!r}; use a whole number >= {low}")
        if len(set(self.source_priority)) != len(self.source_priority):
            raise SpecError(f"semantic_dedup: source_priority lists a source twice: {list(self.source_priority)}")

    @property
    def reads(self) -> tuple[str, ...]:
        """The embedding column (checked against each source's chain by the spec)."""
        return (self.column,)


class SemanticDedup(GlobalStage):
    """Drops every document whose embedding is within ``threshold`` cosine of a document
    the keep rule prefers (through a chain of such pairs in one cluster) as
    ``semantic_dedup:duplicate``; see the module docstring."""

    name = "semantic_dedup"
    Config = SemanticDedupConfig
    reads: ClassVar[tuple[str, ...]] = ()   # config.reads: the embedding column

    def side(self, batch: pa.Table) -> pa.Table:
        col = batch.column(self.config.column)
        return pa.table({"id": batch.column(S.ID).cast(pa.string()), "source": batch.column(S.SOURCE).cast(pa.string()),
                         EMB: col})

    @property
    def local_rows(self) -> int:
        return self.config.local_rows

    def passes(self, ctx) -> list[Pass]:
        c: SemanticDedupConfig = self.config
        ranks = {s: i for i, s in enumerate(c.source_priority)}
        return [
            Pass(name="sample", inputs=(Input(name=SIDE, columns=("id", "source", EMB)),), fn=bottom_k,
                 partitioning=Blocks(), output=Output(schema=SAMPLE), params={"k": c.sample_rows}),
            Pass(name="centroids", inputs=("sample",), fn=fit_centroids, partitioning=Hash(column="h", parts=1),
                 output=Output(schema=CENTROIDS, sort_by=("cluster",)),
                 params={"k": c.sample_rows, "clusters": c.clusters, "cluster_rows": c.cluster_rows,
                         "seed": c.seed, "iterations": c.iterations}),
            Pass(name="decisions",
                 inputs=(Input(name=SIDE, columns=("id", "source", EMB, "_split", "_row"),
                               maps=((route_to_clusters, {"centroids": Ref(name="centroids"), "storage": STORAGE,
                                                          "parts": c.parts}),)),),
                 fn=cluster_duplicates, partitioning=Routed(parts=c.parts),
                 output=Output(schema=S.DECISIONS, sort_by=(S.SPLIT, S.ROW)),
                 params={"threshold": float(c.threshold), "ranks": ranks, "default_rank": len(ranks),
                         "max_cluster_rows": c.max_cluster_rows, "block_rows": c.block_rows, "seed": c.seed,
                         "iterations": c.iterations}),
        ]


# -- pass functions (module level: Ray ships them) -------------------------------------------

def _col(t: pa.Table, name: str) -> pa.Array:
    c = t.column(name)
    return c.combine_chunks() if c.num_chunks != 1 else c.chunk(0)


def _doc_hash(sources: pa.Array, ids: pa.Array) -> np.ndarray:
    import xxhash

    h = xxhash.xxh3_64_intdigest
    return np.fromiter((h(f"{s}\x1f{i}".encode()) for s, i in zip(sources.to_pylist(), ids.to_pylist())),
                       dtype=np.uint64, count=len(ids))


def bottom_k(t: pa.Table, *, k: int) -> pa.Table:
    """Pass ``sample`` on one block: its ``k`` documents with an embedding of smallest hash
    (their embeddings as unit float32 rows) and, on the first row, how many documents
    with an embedding the block has (``rows``; 0 on the others)."""
    x, ok = embedding_matrix(_col(t, EMB))
    idx = np.flatnonzero(ok)
    if not len(idx):
        return SAMPLE.empty_table()
    h = _doc_hash(_col(t, "source").take(pa.array(idx)), _col(t, "id").take(pa.array(idx)))
    if len(idx) > k:   # every row at or below the k-th smallest hash (ties: all of them), then sorted
        low = h <= np.partition(h, k - 1)[k - 1]
        idx, h = idx[low], h[low]
    keys = pa.table({"h": pa.array(h), "source": _col(t, "source").take(pa.array(idx)),
                     "id": _col(t, "id").take(pa.array(idx))})
    order = pc.sort_indices(keys, sort_keys=[("h", "ascending"), ("source", "ascending"), ("id", "ascending")])
    order = order.slice(0, k)
    xs = x[idx[order.to_numpy()]]
    m, dim = xs.shape
    rows = np.zeros(m, np.int64)
    rows[0] = int(ok.sum())
    return pa.table({"h": keys.column("h").take(order), "source": keys.column("source").take(order),
                     "id": keys.column("id").take(order),
                     "emb": pa.ListArray.from_arrays(pa.array(np.arange(m + 1, dtype=np.int32) * dim),
                                                     pa.array(xs.ravel())),
                     "rows": pa.array(rows)}, schema=SAMPLE)


def n_clusters(rows: int, sample: int, clusters: int | None, cluster_rows: int) -> int:
    """The clusters k-means is asked for: ``clusters`` (at most the sample's rows), or
    ``ceil(rows / cluster_rows)`` and at most a tenth of the sample's rows (fewer than
    ten sample rows a centroid place it by chance)."""
    if clusters is not None:
        return max(1, min(clusters, sample))
    return max(1, min(math.ceil(rows / cluster_rows), sample // 10))


def fit_centroids(t: pa.Table, *, k: int, clusters: int | None, cluster_rows: int, seed: int,
                  iterations: int) -> pa.Table:
    """Pass ``centroids``, in one task: the bottom-``k`` sample of the whole corpus (the
    union of the blocks' bottom-k), in hash order, clustered by spherical k-means.
    Each row: a centroid, and the corpus's documents and sample size (for the report)."""
    total = int(pc.sum(t.column("rows")).as_py() or 0) if t.num_rows else 0
    if not t.num_rows:
        return CENTROIDS.empty_table()
    order = pc.sort_indices(t, sort_keys=[("h", "ascending"), ("source", "ascending"), ("id", "ascending")])
    order = order.slice(0, k).to_numpy()
    emb = _col(t, "emb")
    flat = emb.flatten()
    dim = len(flat) // len(emb)
    x = flat.to_numpy(zero_copy_only=False).reshape(len(emb), dim)[order]   # unit float32 rows (bottom_k)
    c = kmeans(x, n_clusters(total, len(x), clusters, cluster_rows), seed=seed, iterations=iterations)
    m = len(c)
    return pa.table({"cluster": pa.array(np.arange(m, dtype=np.int32)),
                     "centroid": pa.ListArray.from_arrays(pa.array(np.arange(m + 1, dtype=np.int32) * dim),
                                                          pa.array(c.ravel())),
                     "rows": pa.array(np.full(m, total, np.int64)), "sample": pa.array(np.full(m, len(x), np.int64))},
                    schema=CENTROIDS)


def _load_centroids(uri: str, storage: Any) -> np.ndarray:
    files = [f for f in fs.list_files(uri, storage) if f.endswith(".parquet")] if not fs.is_file(uri, storage) else [uri]
    tables = [pq.read_table(fs.arrow_input(f, storage), columns=["cluster", "centroid"]) for f in files]
    t = pa.concat_tables(tables).sort_by("cluster") if tables else CENTROIDS.empty_table()
    if not t.num_rows:
        return np.zeros((0, 0))
    cen = _col(t, "centroid")
    return cen.flatten().to_numpy(zero_copy_only=False).reshape(len(cen), -1)


def route_to_clusters(t: pa.Table, *, centroids: str, storage: Any, parts: int) -> pa.Table:
    """Map of pass ``decisions`` on each block of side rows: every document with an
    embedding gets its nearest centroid (``cluster``) and its partition
    (``cluster % parts``); documents without one (null, not finite, zero) take no part."""
    c = _load_centroids(centroids, storage)
    x, ok = embedding_matrix(_col(t, EMB))
    idx = np.flatnonzero(ok) if len(c) else np.zeros(0, np.int64)
    if len(idx) and x.shape[1] != c.shape[1]:
        raise ValueError(f"semantic_dedup: embeddings of {x.shape[1]} dimensions against centroids of "
                         f"{c.shape[1]}; every document needs an embedding from the same model")
    label = assign(x if len(idx) == len(x) else x[idx], c)
    take = pa.array(idx)
    return pa.table({"_part": pa.array((label % parts).astype(np.int64)), "cluster": pa.array(label),
                     "id": _col(t, "id").take(take), "source": _col(t, "source").take(take),
                     EMB: _col(t, EMB).take(take), "_split": _col(t, "_split").take(take),
                     "_row": _col(t, "_row").take(take)})


def _pieces(x: np.ndarray, max_rows: int, seed: int, iterations: int, depth: int = 0) -> list[np.ndarray]:
    """A cluster's row indices (into ``x``, in keep-rule order) cut into pieces of at most
    ``max_rows``: by k-means (``ceil(2 n / max_rows)`` centroids) up to :data:`_MAX_DEPTH`
    levels deep, then into runs of consecutive rows."""
    n = len(x)
    if n <= max_rows:
        return [np.arange(n)]
    if depth < _MAX_DEPTH:
        c = kmeans(x, math.ceil(2 * n / max_rows), seed=seed + depth + 1, iterations=iterations)
        label = assign(x, c)
        groups = [np.flatnonzero(label == g) for g in np.unique(label).tolist()]
        if len(groups) > 1:
            return [g[p] for g in groups for p in _pieces(x[g], max_rows, seed, iterations, depth + 1)]
    return [np.arange(s, min(s + max_rows, n)) for s in range(0, n, max_rows)]


def duplicates_in(x: np.ndarray, threshold: float, *, block_rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``x`` (float32 unit rows in keep-rule order): ``(dropped, kept, cosine)``,
    every row whose component of pairs at cosine >= ``threshold`` has an earlier row,
    with that component's first row and the cosine between the two (float64; below the
    threshold when they are linked through others)."""
    root = components(x, threshold, block_rows=block_rows)
    dropped = np.flatnonzero(root != np.arange(len(x)))
    kept = root[dropped]
    return dropped, kept, cosines(x, dropped, kept)


def cluster_duplicates(t: pa.Table, *, threshold: float, ranks: dict[str, int], default_rank: int,
                       max_cluster_rows: int, block_rows: int, seed: int, iterations: int) -> pa.Table:
    """Pass ``decisions`` on one partition (whole clusters): per cluster, its documents in
    the keep rule's order (MinHash dedup's node keys: source rank, source, id), the
    duplicates of each component dropped in favour of its first document."""
    if not t.num_rows:
        return S.DECISIONS.empty_table()
    src, ids = _col(t, "source"), _col(t, "id")
    rank = np.array([ranks.get(s, default_rank) for s in src.to_pylist()], np.int64)
    keys = G.make_keys(1, rank, src, ids, 0, np.zeros(t.num_rows, np.uint64),
                       _col(t, "_row").to_numpy(zero_copy_only=False), _col(t, "_split"))
    t = t.append_column("_key", keys).sort_by([("cluster", "ascending"), ("_key", "ascending")])
    x_all, _ = embedding_matrix(_col(t, EMB))
    cl = _col(t, "cluster").to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.r_[True, cl[1:] != cl[:-1]])
    drop, keep, cos = [], [], []
    for a, b in zip(starts.tolist(), np.r_[starts[1:], len(cl)].tolist()):
        x = x_all[a:b]
        for piece in _pieces(x, max_cluster_rows, seed, iterations):
            d, k, c = duplicates_in(x[piece], threshold, block_rows=block_rows)
            drop.append(a + piece[d])
            keep.append(a + piece[k])
            cos.append(c)
    drop_i, keep_i = np.concatenate(drop), np.concatenate(keep)
    cos_v = np.concatenate(cos)
    kept_ids = _col(t, "id").take(pa.array(keep_i)).to_pylist()
    detail = [f"kept {k}, cosine {c:.4f}" for k, c in zip(kept_ids, cos_v.tolist())]
    out = pa.table({"_split": _col(t, "_split").take(pa.array(drop_i)), "_row": _col(t, "_row").take(pa.array(drop_i)),
                    "reason": pa.array(["duplicate"] * len(drop_i), pa.string()),
                    "detail": pa.array(detail, pa.string())}, schema=S.DECISIONS)
    return out.sort_by([("_split", "ascending"), ("_row", "ascending")])

