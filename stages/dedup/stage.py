"""The dedup stage on the global-stage contract: ``side()`` computes each document's
compact side row in the task that read it; ``passes()`` turns all side rows into drop
decisions, once, without ever seeing text. See ``docs/dedup.md``.

``passes()`` is a generator of declared passes (:class:`datapipe.passes.Pass`): it yields
them a few at a time and is sent each one's artifact, because how many partitions a pass
gets and which passes run depend on the row counts before it. The engine's executor
(:func:`datapipe.passes.run_global`) chooses where they run and runs them two ways with
identical decisions (same kernels, same keys):

* **local** (side rows + index documents <= ``local_rows``, ``ctx.local``): every pass
  in one process on Arrow/NumPy tables, one partition each, no Ray Data execution, so
  no per-pass start-up cost; that process is the driver up to
  :data:`datapipe.passes.DRIVER_ROWS` rows, above it one Ray task (so the driver's
  memory does not grow with the corpus);
* **distributed**: Ray Data passes over the side files, joined by durable Parquet
  artifacts (below), every partition bounded by ``partition_rows`` /
  ``verify_partition_rows`` rows, so no task's memory grows with the corpus.

=============  ==========================================================  =============
pass           what                                                        partitioned by
=============  ==========================================================  =============
exact          group identical normalised texts; the smallest key           exact hash
               represents the group further on
candidates     one row per (representative, band); star edges per bucket   band bucket
needed         endpoints of candidate pairs, sharded by split              (map)
               (distributed only)
verified       attach both endpoints' shingle sets (or signatures), keep   endpoint key
               pairs with similarity >= threshold (``verify_a`` first
               when the join needs more than one partition)
components     union-find + decisions in one task (<= ``local_max_edges``  (one) / node
               edges), or alternating large-star / small-star rounds
               (``cc_*``) and then
decisions      removed document -> reason, survivor, cluster size          root key
decisions_out  the decisions as the runner takes them, sorted              (gathered)
index_segment  with ``index_out``: this run's surviving side rows          (map)
=============  ==========================================================  =============

Every pass reads the side files (or an earlier artifact) directly: node rows (side rows
with their survival-order key) are derived by the maps of the pass reading them, not
written by a pass.

The executor owns every artifact (``<work_dir>/<pass>-<key>/``), its resume key, commit
and timing: a rerun on the same side data and config reuses every committed pass. With
``index_out`` the stage declares the new index (a :class:`datapipe.passes.Publish` of
the ``index_in`` segments, ``index_segment`` and a ``meta.json``); the executor
publishes it whole. The stage writes no file: it reads its artifacts' footers (and the
decisions) for the report.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from typing import Any, ClassVar, Generator, Iterator, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from datapipe import fs, passes
from datapipe.passes import (SIDE, STORAGE, Blocks, Discard, Input, InputFiles, Output, Pass, Publish, Ref, Routed,
                             Step)
from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.stage import GlobalStage, StageContext
from stages.dedup import graph as G
from stages.dedup import batch_kernels as P
from stages.dedup.config import DedupConfig
from stages.dedup.minhash import BUCKET_HASH_VERSION, s_curve

log = logging.getLogger(__name__)

INDEX_FORMAT = "datapipe-dedup-index"
INDEX_VERSION = 2   # 2: keys carry the side row (split, row)
INDEX = "index"   # the executor's name for the index segments read (index_in)


class Dedup(GlobalStage):
    """Cross-source exact and near-duplicate removal (MinHash-LSH). Drops are marked
    ``dedup:exact`` / ``dedup:near`` with the surviving document's id as detail."""

    name = "dedup"
    Config = DedupConfig
    reads: ClassVar[tuple[str, ...]] = (S.TEXT,)
    adds: ClassVar[dict[str, pa.DataType]] = {}
    salt: ClassVar[str] = f"dedup/{BUCKET_HASH_VERSION}/{INDEX_VERSION}"

    def side(self, batch: pa.Table) -> pa.Table:
        """One compact row per document (see :func:`stages.dedup.batch_kernels.side_batch`):
        ``id, source, exact, sig, buckets, sh``."""
        return P.side_batch(batch, params=_side_params(self.config))

    @property
    def local_rows(self) -> int:
        return self.config.local_rows

    def inputs(self, ctx: StageContext) -> dict[str, InputFiles]:
        """The segments of ``index_in`` (immutable: its ``meta.json`` stands for them)."""
        cfg = self.config
        if not cfg.index_in:
            return {}
        index = _open_index(cfg.index_in, cfg, ctx.storage)
        if not index["segments"]:
            return {}
        key = hashlib.sha256(fs.read_bytes(fs.join(cfg.index_in, "meta.json"), ctx.storage)
                             + cfg.index_in.encode()).hexdigest()
        return {INDEX: InputFiles(files=index["segments"], rows=index["documents"], key=key)}

    def passes(self, ctx: StageContext) -> Generator[list[Step], Mapping[str, passes.Artifact], str | None]:
        return _Plan(self.config, ctx).run()


def _side_params(cfg: DedupConfig) -> dict[str, Any]:
    b, r = cfg.bands_rows() if cfg.near else (0, 0)
    n = cfg.normalisation
    return {"num_perm": cfg.num_perm, "seed": cfg.seed, "scheme": cfg.scheme, "near": cfg.near,
            "verify": cfg.verify, "bands": b, "rows": r,
            "norm": {"lowercase": n.lowercase, "punctuation": n.punctuation, "digits": n.digits,
                     "whitespace": n.whitespace, "nfkc": n.nfkc},
            "shingling": {"kind": cfg.shingle, "n": cfg.ngram}}


# -- what the plan reads of its artifacts: the Parquet footers -----------------------------

def _row_group_stats(path: str, column: str, st: fs.StorageOptions | None) -> Iterator[tuple[str, Any, Any]]:
    """``(file, row group, the column's statistics)`` for every row group of a written
    artifact: what the footers say, without reading the data."""
    for f in passes.parquet_files(path, st):
        md = pq.ParquetFile(fs.arrow_input(f, st)).metadata
        names = [md.schema.column(i).name for i in range(md.num_columns)]
        j = names.index(column)
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            yield f, rg, rg.column(j).statistics


def _count_valid(path: str, column: str, st: fs.StorageOptions | None) -> int:
    """Non-null values of a column of a written artifact, from the footers' statistics."""
    total = 0
    for f, rg, stats in _row_group_stats(path, column, st):
        if stats is None or not stats.has_null_count:
            raise AssertionError(f"{f}: no null count statistics for {column}")
        total += rg.num_rows - stats.null_count
    return total


def _any_true(path: str, column: str, st: fs.StorageOptions | None) -> bool:
    """Whether a boolean column of a written artifact holds a true value, from the
    footers' min/max statistics."""
    for _, rg, stats in _row_group_stats(path, column, st):
        if rg.num_rows and (stats is None or not stats.has_min_max or stats.max):
            return True
    return False


def _read_tables(files: list[str], st: fs.StorageOptions | None, empty: pa.Schema) -> pa.Table:
    """The rows of ``files`` as one table (``empty``'s empty table when there are none)."""
    tables = [pq.read_table(fs.arrow_input(f, st)) for f in files]
    return pa.concat_tables(tables).combine_chunks() if tables else empty.empty_table()


DECISION_EMPTY = P.DECISION_SCHEMA.empty_table()


# -- the plan --------------------------------------------------------------------------

class _Plan:
    """One dedup run's passes, declared a batch at a time (:meth:`run` is the stage's
    :meth:`~Dedup.passes` generator): how many partitions a pass gets, and whether
    verification and the star rounds run, depend on the row counts of the passes before
    it. ``ctx.local`` (the executor's choice) gives every pass one partition and the
    components one task; the functions are the same either way. Ends with the report."""

    def __init__(self, cfg: DedupConfig, ctx: StageContext) -> None:
        self.cfg, self.ctx, self.st, self.local = cfg, ctx, ctx.storage, ctx.local
        self.bands, self.rows = cfg.bands_rows() if cfg.near else (0, 0)
        self.ranks = {"ranks": {s: cfg.rank(s) for s in cfg.source_priority},
                      "default_rank": len(cfg.source_priority)}
        self.done: dict[str, passes.Artifact] = {}   # every artifact the plan may still read
        self.has_index = False
        self.index_written: dict[str, Any] | None = None

    def _parts(self, rows: int, per_partition: int | None = None) -> int:
        return self.ctx.partitions(rows, per_partition or self.cfg.partition_rows, self.cfg.min_partition_rows)

    def _one(self, *steps: Step) -> Generator[list[Step], Mapping[str, passes.Artifact], passes.Artifact | None]:
        """Hand ``steps`` to the executor; the last pass's artifact."""
        done = yield list(steps)
        self.done.update(done)
        for s in steps:
            if isinstance(s, Discard):
                self.done.pop(s.name)
        names = [s.name for s in steps if isinstance(s, Pass)]
        return done[names[-1]] if names else None

    def side_in(self, *steps) -> Input:
        """The side files as node rows (derived as they are read), then ``steps``."""
        return Input(name=SIDE, maps=((P.node_rows, self.ranks), *steps))

    def index_in(self, *steps) -> tuple[Input, ...]:
        return (Input(name=INDEX, maps=((P.index_rows, self.ranks), *steps)),) if self.has_index else ()

    def run(self) -> Generator[list[Step], Mapping[str, passes.Artifact], str | None]:
        cfg, st = self.cfg, self.st
        t_start = time.perf_counter()
        files = list(self.ctx.side)
        index = _open_index(cfg.index_in, cfg, st) if cfg.index_in else None
        n_side = sum(pq.ParquetFile(fs.arrow_input(f, st)).metadata.num_rows for f in files)
        n_elig = sum(_count_valid(f, "exact", st) for f in files)
        self.has_index = index is not None and bool(index["segments"])
        n_index = index["documents"] if index is not None else 0
        edges: list[tuple[Input, int]] = []   # what the components read, with its rows
        counts: dict[str, int] = {"eligible": n_elig, "index_documents": n_index}

        # exact: identical normalised text
        if cfg.exact and n_elig:
            parts = self._parts(n_elig + n_index)
            route = (P.exact_input, {"parts": parts})
            ex = yield from self._one(Pass(name="exact", inputs=(self.side_in(route), *self.index_in(route)),
                                           fn=G.exact_groups, partitioning=Routed(parts=parts), output=Output()))
            counts["exact_duplicate_edges"] = _count_valid(ex.uri, "rep", st)
            edges.append((Input(name="exact", columns=("key", "rep"), maps=((P.exact_edges, {}),)),
                          counts["exact_duplicate_edges"]))

        # buckets -> candidate pairs -> verified pairs
        if cfg.near and n_elig:
            n_reps = (n_elig + n_index) - counts.get("exact_duplicate_edges", 0)
            parts = self._parts(max(1, n_reps) * self.bands)
            route = (P.bucket_rows, {"parts": parts})
            if "exact_duplicate_edges" in counts:   # the exact groups' representatives
                ins: tuple[Input, ...] = (Input(name="exact", columns=("key", "rep", "buckets"), maps=(route,)),)
            else:
                ins = (self.side_in(route), *self.index_in((_rename_index_for_buckets, {}), route))
            cand = yield from self._one(Pass(name="candidates", inputs=ins, fn=G.bucket_edges,
                                             partitioning=Routed(parts=parts), output=Output()))
            counts["candidate_edges"] = cand.rows
            near = "candidates"
            if cfg.verify != "none" and cand.rows:
                near = yield from self._verify(cand.rows)
                counts["verified_edges"] = self.done[near].rows
            edges.append((Input(name=near, columns=("a", "b")), self.done[near].rows))

        comp, n_comp, how = yield from self._components(edges)
        counts["removed_nodes"] = n_comp
        dec, decisions = DECISION_EMPTY, None
        if n_comp:
            if how != "local":   # the star rounds end in (a=root, b=node) edges
                parts = self._parts(n_comp)
                yield from self._one(Pass(name="decisions", inputs=(Input(name=comp, maps=(
                    (P.by_root_rows, {"parts": parts}),)),), fn=P.decide_kernel, partitioning=Routed(parts=parts),
                    output=Output(schema=P.DECISION_SCHEMA)))
                comp = "decisions"
            # (bounded by the number of duplicates)
            dec = _read_tables(passes.parquet_files(self.done[comp].uri, st), st, P.DECISION_SCHEMA)
            decisions = "decisions_out"
            yield from self._one(Pass(name=decisions, inputs=(comp,), fn=P.decisions_out, partitioning=Blocks(),
                                      output=Output(schema=S.DECISIONS, sort_by=(S.SPLIT, S.ROW))))
        if cfg.index_out:
            yield from self._index(index, n_elig, comp if n_comp else None)
        counts = {"documents": n_side, **counts, "removed": dec.num_rows}
        self.ctx.report.update(self._report(P.report_partials(dec).to_pylist(), counts, how,
                                            time.perf_counter() - t_start))
        return decisions

    def _index(self, index: dict | None, n_elig: int, decisions: str | None
               ) -> Generator[list[Step], Mapping[str, passes.Artifact], None]:
        """A new index, which the executor publishes whole at ``index_out``: the
        segments of ``index_in`` (copied) plus one segment of this run's survivors (the
        side rows not in the decisions), with its ``meta.json``."""
        cfg = self.cfg
        folders = {f"seg-{i:04d}": seg for i, seg in enumerate(index["segments"])} if index is not None else {}
        n_old = index["documents"] if index is not None else 0
        n_new = 0
        if n_elig:
            seg = yield from self._one(Pass(
                name="index_segment", inputs=(self.side_in(),), fn=P.index_survivors, partitioning=Blocks(),
                output=Output(), params={"decisions": Ref(name=decisions) if decisions else None, "storage": STORAGE}))
            n_new = seg.rows
        if n_new:
            folders[f"seg-{len(folders):04d}"] = "index_segment"
        meta = {"format": INDEX_FORMAT, "version": INDEX_VERSION, "bucket_hash": BUCKET_HASH_VERSION,
                "params": cfg.signature_params(), "segments": list(folders), "documents": n_old + n_new,
                "segment_documents": (index["segment_documents"] if index else []) + ([n_new] if n_new else [])}
        yield from self._one(Publish(name="index", dest=cfg.index_out, folders=folders,
                                     texts={"meta.json": json.dumps(meta, indent=2, sort_keys=True) + "\n"}))
        self.index_written = {"path": cfg.index_out.rstrip("/"), "documents": n_old + n_new, "added": n_new}

    def _verify(self, n_cand: int) -> Generator[list[Step], Mapping[str, passes.Artifact], str]:
        """Candidate pairs -> the similar ones; returns the name of the pass that has them."""
        cfg = self.cfg
        npm = cfg.num_perm
        parts = self._parts(3 * n_cand, cfg.verify_partition_rows)   # pairs + at most 2 documents each
        needed: Any = None
        shards = 1
        if not self.local:   # only documents that are in a candidate pair need to travel
            shards = max(1, math.ceil(2 * n_cand / cfg.shard_rows))
            yield from self._one(Pass(name="needed", inputs=("candidates",), fn=P.needed_keys, partitioning=Blocks(),
                                      output=Output(partition_cols=(P.SHARD,)), params={"shards": shards}))
            needed = Ref(name="needed")

        def payload(carry: bool) -> tuple[Input, ...]:
            step = (P.payload_side, {"parts": parts, "num_perm": npm, "carry": carry, "needed_dir": needed,
                                     "shards": shards, "storage": STORAGE})
            return (self.side_in(step), *self.index_in(step))

        def pairs(src: str, on: str, carry: bool) -> Input:
            return Input(name=src, maps=((P.edge_side, {"on": on, "parts": parts, "num_perm": npm, "carry": carry}),))

        if parts == 1:   # one partition: both endpoints in one go
            yield from self._one(Pass(name="verified", inputs=(pairs("candidates", "a", False), *payload(False)),
                                      fn=P.join_both_kernel, partitioning=Routed(parts=1), output=Output(),
                                      params={"threshold": cfg.threshold}))
            return "verified"
        yield from self._one(Pass(name="verify_a", inputs=(pairs("candidates", "a", False), *payload(False)),
                                  fn=P.join_a_kernel, partitioning=Routed(parts=parts), output=Output()))
        yield from self._one(Pass(name="verified", inputs=(pairs("verify_a", "b", True), *payload(True)),
                                  fn=P.join_b_kernel, partitioning=Routed(parts=parts), output=Output(),
                                  params={"threshold": cfg.threshold}))
        return "verified"

    def _components(self, edges: list[tuple[Input, int]]
                    ) -> Generator[list[Step], Mapping[str, passes.Artifact], tuple[str, int, str]]:
        """The connected components of every edge; returns the pass that holds them (in
        one process: the decisions themselves), its rows and how they were found."""
        cfg = self.cfg
        n_edges = sum(n for _, n in edges)
        ins = tuple(i for i, n in edges if n)
        if n_edges == 0:
            return "", 0, "none"
        if self.local or cfg.components == "local" or (cfg.components == "auto" and n_edges <= cfg.local_max_edges):
            art = yield from self._one(Pass(name="components+decisions", inputs=ins, fn=P.local_decide,
                                            partitioning=Routed(parts=1), output=Output(schema=P.DECISION_SCHEMA)))
            return "components+decisions", art.rows, "local"
        # alternating large-star / small-star over Ray Data
        cur = yield from self._one(Pass(name="cc_edges_0", inputs=ins, fn=P.edges_only, partitioning=Blocks(),
                                        output=Output()))
        src, rows = "cc_edges_0", cur.rows
        for rnd in range(1, cfg.max_rounds + 1):
            parts = self._parts(2 * rows)
            ls = yield from self._one(Pass(name=f"cc_ls_{rnd}", inputs=(Input(name=src, columns=("a", "b"), maps=(
                (P.directed_rows, {"parts": parts}),)),), fn=G.large_star, partitioning=Routed(parts=parts),
                output=Output()))
            parts = self._parts(ls.rows)
            ss = yield from self._one(Pass(name=f"cc_ss_{rnd}", inputs=(Input(name=f"cc_ls_{rnd}", columns=("a", "b"),
                                           maps=((P.by_b_rows, {"parts": parts}),)),), fn=G.small_star,
                                           partitioning=Routed(parts=parts), output=Output()))
            changed = _any_true(ls.uri, "changed", self.st) or _any_true(ss.uri, "changed", self.st)
            yield from self._one(Discard(name=src), Discard(name=f"cc_ls_{rnd}"))
            src, rows = f"cc_ss_{rnd}", ss.rows
            log.info("dedup components round %d: %d edges, changed: %s", rnd, rows, changed)
            if not changed:  # every component is a star around its smallest key: (a=root, b=node)
                return src, rows, f"distributed ({rnd} rounds)"
        raise SpecError(f"dedup: connected components did not converge in max_rounds={cfg.max_rounds} rounds; "
                        "raise max_rounds")

    def _report(self, partials: list[dict], counts: dict[str, int], how: str, seconds: float) -> dict[str, Any]:
        cfg = self.cfg
        per_source: dict[str, dict[str, int]] = {}
        matrix: dict[str, dict[str, int]] = {}
        hist: dict[str, int] = {}
        largest = 0
        for r in partials:  # a few rows per block
            if r["kind"] == "pair":
                src, kept, reason, n = r["source"], r["kept_source"], r["reason"], int(r["n"])
                per_source.setdefault(src, {"exact": 0, "near": 0})[reason] += n
                matrix.setdefault(src, {})
                matrix[src][kept] = matrix[src].get(kept, 0) + n
            else:
                size = int(r["size"])
                largest = max(largest, size)
                b = _size_bin(size)
                hist[b] = hist.get(b, 0) + int(r["n"])
        sources = list(dict.fromkeys(list(self.ctx.sources) + sorted(per_source)))
        report: dict[str, Any] = {
            "params": {**cfg.signature_params(), "threshold": cfg.threshold, "weights": list(cfg.lsh_weights),
                       "verify": cfg.verify, "exact": cfg.exact, "near": cfg.near,
                       "source_priority": list(cfg.source_priority)},
            "bands": self.bands, "rows": self.rows,
            "s_curve": s_curve(self.bands, self.rows) if cfg.near else {},
            "counts": counts,
            "path": "local" if self.local else "distributed",
            "components": how,
            "removed_per_source": {s: {"exact": per_source.get(s, {}).get("exact", 0),
                                       "near": per_source.get(s, {}).get("near", 0)} for s in sources},
            "matrix": {s: matrix.get(s, {}) for s in sources if s in matrix},
            "cluster_sizes": dict(sorted(hist.items(), key=lambda kv: _bin_order(kv[0]))),
            "largest_cluster": largest,
            "seconds": round(seconds, 3),
        }
        if self.index_written:
            report["index_out"] = self.index_written
        if cfg.index_in:
            report["index_in"] = {"path": cfg.index_in, "documents": counts.get("index_documents", 0)}
        return report


def _size_bin(size: int) -> str:
    if size <= 4:
        return str(size)
    lo = 2 ** math.ceil(math.log2(size)) // 2 + 1
    return f"{lo}-{2 * (lo - 1)}"


def _bin_order(b: str) -> int:
    return int(b.split("-")[0])


def _rename_index_for_buckets(batch: pa.Table) -> pa.Table:
    return pa.table({P.KEY: batch.column("key"), P.BUCKETS: batch.column("buckets")})


def _open_index(path: str, cfg: DedupConfig, st: fs.StorageOptions | None = None) -> dict[str, Any]:
    """Read and check an index's ``meta.json``; returns its segment paths and counts."""
    try:
        meta = json.loads(fs.read_text(fs.join(path, "meta.json"), st))
    except OSError as e:
        raise SpecError(f"dedup: index_in {path!r} is not a dedup index (no meta.json): {e}; "
                        "point it at the index_out folder of an earlier run") from None
    if meta.get("format") != INDEX_FORMAT or meta.get("version") != INDEX_VERSION:
        raise SpecError(f"dedup: index_in {path!r} has format {meta.get('format')!r} v{meta.get('version')}, "
                        f"expected {INDEX_FORMAT!r} v{INDEX_VERSION}")
    if meta.get("bucket_hash") != BUCKET_HASH_VERSION:
        raise SpecError(f"dedup: index_in {path!r} was built with bucket hash {meta.get('bucket_hash')!r}, "
                        f"this version uses {BUCKET_HASH_VERSION!r}; rebuild the index")
    want = cfg.signature_params()
    have = meta.get("params", {})
    diff = {k: (have.get(k), v) for k, v in want.items() if have.get(k) != v}
    if diff:
        desc = ", ".join(f"{k}: index {a!r} vs job {b!r}" for k, (a, b) in sorted(diff.items()))
        raise SpecError(f"dedup: index_in {path!r} was built with different parameters ({desc}); "
                        "use the same normalisation, shingles, num_perm, seed, scheme and bands x rows")
    root = path.rstrip("/")
    return {"segments": [fs.join(root, s) for s in meta["segments"]], "documents": int(meta["documents"]),
            "segment_documents": list(meta.get("segment_documents", []))}
