"""``repo_dedup``: forks and other near-identical repositories, one kept per cluster.

A global stage over repository documents (the ``code`` reader's ``group: repository``).
Each split's task writes one compact side row per repository: its name, stars and a
MinHash signature (datasketch-compatible, :mod:`stages.dedup.minhash`) of the document's
code shingles: 5 consecutive code tokens (``x+=1`` is ``x + = 1``), case, punctuation
and digits kept, as ``dedup`` shingles code. The shingles cover the repository's file
set and contents together (paths, files and the separators between them), so a fork
that renamed or added a few files, or edited a few lines, shares most of them.

One pass, over all the side rows at once (a repository is ~0.6 KB of side row, so a
million repositories are ~0.6 GB in one task; ``local_rows`` decides whether that task
is the driver itself): repositories that share an LSH band (bands x rows chosen for
``threshold``, false negatives weighted 0.95) are candidates; a candidate joins the
cluster of its band's first repository (in keep order, below) when their signatures
agree on at least ``threshold`` of the permutations (the estimated Jaccard similarity of
their shingle sets); clusters are the connected components of those links.

Which repository of a cluster is kept: the most ``stars`` (a repository without a
count ranks below any count), then the smallest repository name, then the smallest
document id. The others are ``repo_dedup:fork`` rejects whose detail names the kept
repository. Documents that are files (``path`` set: ``group: file``) or have no
repository, and repositories with fewer shingles than one shingle's tokens, take no part.

Why a stage of its own rather than ``dedup`` on repository documents: ``dedup`` keeps
the copy of the first source in ``source_priority`` and then the smallest id, which
is the right rule for files and prose; for forks the rule is stars, then name, which
needs the repository's metadata in the decision. The signature code is ``dedup``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.passes import SIDE, Hash, Input, Output, Pass
from datapipe.stage import GlobalStage, StageConfig
from stages.dedup.minhash import (
    Normalisation,
    Shingling,
    band_buckets,
    batch_signatures,
    optimal_bands_rows,
    permutations,
)

_NORM = Normalisation(lowercase=False, punctuation=False, digits=False, whitespace=True)
_GROUP = "repositories"


@dataclass(kw_only=True, frozen=True)
class RepoDedupConfig(StageConfig):
    #: estimated Jaccard similarity of two repositories' shingle sets at which they are one cluster
    threshold: float = 0.7
    #: tokens per shingle
    ngram: int = 5
    num_perm: int = 128
    seed: int = 1
    #: side rows up to which the pass runs in one process (no Ray Data start-up)
    local_rows: int = 200_000

    def __post_init__(self) -> None:
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)) \
                or not 0.0 < self.threshold < 1.0:
            raise SpecError(f"repo_dedup: threshold={self.threshold!r}; use a number in (0, 1) (0.7: forks that "
                            "changed up to about a fifth of their code)")
        for name, lo, hi in (("ngram", 1, 64), ("num_perm", 2, 1024), ("seed", 0, 2**32 - 1),
                             ("local_rows", 0, 2**62)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise SpecError(f"repo_dedup: {name}={v!r}; use a whole number in [{lo}, {hi}]")

    def bands_rows(self) -> tuple[int, int]:
        return optimal_bands_rows(self.threshold, self.num_perm, (0.05, 0.95))


class RepoDedup(GlobalStage):
    """Near-identical repositories (forks): one per cluster, by stars then name; the
    others ``repo_dedup:fork`` naming the kept repository (see the module docstring)."""

    name = "repo_dedup"
    Config = RepoDedupConfig
    reads: ClassVar[tuple[str, ...]] = (S.TEXT, "repo", "path", "stars")
    adds: ClassVar[dict[str, pa.DataType]] = {}

    def side(self, batch: pa.Table) -> pa.Table:
        cfg: RepoDedupConfig = self.config
        n = batch.num_rows
        repo = batch.column("repo").cast(pa.string())
        takes = pc.and_(pc.is_valid(repo), pc.is_null(batch.column("path"))).to_numpy(zero_copy_only=False)
        takes &= pc.is_valid(batch.column(S.TEXT)).to_numpy(zero_copy_only=False)
        sigs: list[list[int] | None] = [None] * n
        idx = np.flatnonzero(takes)
        if len(idx):
            a, b = permutations(cfg.num_perm, cfg.seed)
            texts = batch.column(S.TEXT).take(pa.array(idx)).cast(pa.large_string())
            bs = batch_signatures(texts, norm=_NORM, shingling=Shingling(kind="token", n=cfg.ngram), a=a, b=b)
            for k, i in enumerate(idx.tolist()):
                if bs.n_shingles[k] > 0:
                    sigs[i] = bs.sig[k].tolist()
        stars = batch.column("stars").cast(pa.int64())
        return pa.table({"id": batch.column(S.ID), "repo": repo, "stars": stars,
                         "sig": pa.array(sigs, pa.list_(pa.uint32())),
                         "group": pa.array([_GROUP] * n, pa.string())})

    @property
    def local_rows(self) -> int:
        return self.config.local_rows

    def passes(self, ctx) -> list[Pass]:
        cfg: RepoDedupConfig = self.config
        bands, rows = cfg.bands_rows()
        return [Pass(name="decisions", inputs=(Input(name=SIDE, columns=("id", "repo", "stars", "sig", "group",
                                                                          "_split", "_row")),),
                     fn=fork_clusters, partitioning=Hash(column="group", parts=1),
                     output=Output(schema=S.DECISIONS, sort_by=(S.SPLIT, S.ROW)),
                     params={"threshold": float(cfg.threshold), "bands": bands, "rows": rows})]


def fork_clusters(t: pa.Table, *, threshold: float, bands: int, rows: int) -> pa.Table:
    """The decisions over every repository's side row (see the module docstring)."""
    t = t.filter(pc.is_valid(t.column("sig")))
    n = t.num_rows
    if n < 2:
        return S.DECISIONS.empty_table()
    stars = t.column("stars").to_pylist()
    names = t.column("repo").to_pylist()
    ids = t.column("id").to_pylist()
    # keep order: most stars (none below any count), then name, then id
    order = sorted(range(n), key=lambda i: (-(stars[i] if stars[i] is not None else -1), names[i], ids[i]))
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n)
    sig = np.asarray(t.column("sig").to_pylist(), dtype=np.uint32)
    buckets = band_buckets(sig, bands, rows)                    # (n, bands)
    parent = np.arange(n)

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return int(x)

    need = int(np.ceil(threshold * sig.shape[1] - 1e-9))
    for band in range(bands):
        col = buckets[:, band]
        by = np.lexsort((rank, col))                            # by bucket, then keep order
        c = col[by]
        starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
        ends = np.r_[starts[1:], n]
        shared = ends - starts >= 2                             # buckets of one: no candidates
        for s, e in zip(starts[shared].tolist(), ends[shared].tolist()):
            head = int(by[s])
            for j in by[s + 1:e].tolist():
                if int(np.count_nonzero(sig[head] == sig[j])) >= need:
                    ra, rb = find(head), find(j)
                    if ra != rb:   # the root is the better-ranked repository
                        if rank[ra] < rank[rb]:
                            parent[rb] = ra
                        else:
                            parent[ra] = rb
    roots = np.array([find(i) for i in range(n)])
    drop = np.flatnonzero(roots != np.arange(n))
    if not len(drop):
        return S.DECISIONS.empty_table()
    detail = [f"{names[r]} ({ids[r]})" for r in roots[drop].tolist()]
    out = pa.table({"_split": t.column("_split").take(pa.array(drop)), "_row": t.column("_row").take(pa.array(drop)),
                    "reason": pa.array(["fork"] * len(drop), pa.string()), "detail": pa.array(detail, pa.string())},
                   schema=S.DECISIONS)
    return out.sort_by([("_split", "ascending"), ("_row", "ascending")])
