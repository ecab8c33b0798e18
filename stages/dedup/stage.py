"""The dedup stage on the global-stage contract: ``side()`` computes each document's
compact side row in the task that read it; ``decide()`` turns all side rows into drop
decisions, once, without ever seeing text. See ``docs/dedup.md``.

``decide()`` declares its passes (:class:`datapipe.passes.Pass`) and hands them to the
engine's :class:`datapipe.passes.PassExecutor`, which runs them two ways with identical
decisions (same kernels, same keys):

* **local** (side rows + index documents <= ``local_rows``): every pass in one process
  on Arrow/NumPy tables, no Ray Data execution, so no per-pass start-up cost; that
  process is the driver up to :data:`DRIVER_ROWS` rows, above it one Ray task (so the
  driver's memory does not grow with the corpus);
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
=============  ==========================================================  =============

Every pass reads the side files (or an earlier artifact) directly: node rows (side rows
with their survival-order key) are derived by the maps of the pass reading them, not
written by a pass. How many partitions a pass gets and which passes run depend on the
row counts before it, so the passes go to the executor a few at a time.

The executor owns every artifact (``<work_dir>/passes/<pass>-<key>/``), its resume key,
commit and timing: a rerun on the same side data and config reuses every committed pass.
The stage writes only the report and, with ``index_out``, a new index.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from typing import Any, ClassVar, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from datapipe import fs, passes
from datapipe.passes import SIDE, STORAGE, Blocks, Input, Output, Pass, Ref, Routed
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

    def side(self, batch: pa.Table) -> pa.Table:
        """One compact row per document (see :func:`stages.dedup.batch_kernels.side_batch`):
        ``id, source, exact, sig, buckets, sh``."""
        return P.side_batch(batch, params=_side_params(self.config))

    def decide(self, side: list[str], ctx: StageContext) -> str | None:
        if not _off_driver(self.config, side, ctx.storage):
            uri = _Decide(self.config, ctx).run(side)
            ctx.report["decided_in"] = "driver" if ctx.report.get("path") == "local" else "Ray Data passes"
            return uri
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        # the local path's tables (~1-5 KB per document) in one Ray task on the driver's
        # node (the files it reads are where the driver sees them), so the driver's
        # memory stays flat; the decisions and report come back (small)
        node = ray.get_runtime_context().get_node_id()
        task = ray.remote(num_cpus=1, max_retries=2)(_decide_in_task).options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=True))
        uri, report = ray.get(task.remote(self.config, side, ctx.work_dir, ctx.sources, ctx.storage))
        ctx.report.update(report, decided_in="one Ray task")
        return uri


#: side rows (plus index documents) up to which the local ``decide()`` runs in the
#: driver itself (~1-5 KB each, so <= ~100 MB); above it, and up to ``local_rows``, it
#: runs in one Ray task, so the driver's memory does not grow with the corpus
DRIVER_ROWS = 20_000


def _off_driver(cfg: DedupConfig, side: list[str], st: fs.StorageOptions | None) -> bool:
    """Whether ``decide()`` takes its local path in a Ray task (not the driver): the
    side rows (from the files' footers) are above :data:`DRIVER_ROWS` and within
    ``local_rows``, and Ray is running."""
    import ray

    if not ray.is_initialized() or not side:
        return False
    n = sum(pq.ParquetFile(fs.arrow_input(f, st)).metadata.num_rows for f in _side_files(side, st))
    if cfg.index_in:
        n += _open_index(cfg.index_in, cfg, st)["documents"]
    return DRIVER_ROWS < n <= cfg.local_rows


def _decide_in_task(cfg: DedupConfig, side: list[str], work_dir: str, sources: tuple[str, ...],
                    storage: fs.StorageOptions | None) -> tuple[str | None, dict[str, Any]]:
    ctx = StageContext(work_dir=work_dir, sources=sources, storage=storage)
    uri = _Decide(cfg, ctx).run(side)
    return uri, ctx.report


def _side_params(cfg: DedupConfig) -> dict[str, Any]:
    b, r = cfg.bands_rows() if cfg.near else (0, 0)
    n = cfg.normalisation
    return {"num_perm": cfg.num_perm, "seed": cfg.seed, "scheme": cfg.scheme, "near": cfg.near,
            "verify": cfg.verify, "bands": b, "rows": r,
            "norm": {"lowercase": n.lowercase, "punctuation": n.punctuation, "digits": n.digits,
                     "whitespace": n.whitespace, "nfkc": n.nfkc},
            "shingling": {"kind": cfg.shingle, "n": cfg.ngram}}


# -- artifacts (every access through datapipe.fs, with the job's storage options) ----------

_parquet_files = passes.parquet_files
_count_rows = passes.count_rows


def _row_group_stats(path: str, column: str, st: fs.StorageOptions | None) -> Iterator[tuple[str, Any, Any]]:
    """``(file, row group, the column's statistics)`` for every row group of a written
    artifact: what the footers say, without reading the data."""
    for f in _parquet_files(path, st):
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


def _remove(path: str, st: fs.StorageOptions | None) -> None:
    fs.Location(path, st).delete()


def _join(root: str, *parts: str) -> str:
    return fs.join(root, *parts)


def _side_files(side: list[str], st: fs.StorageOptions | None) -> list[str]:
    """The Parquet files of ``side`` (files, or folders of them)."""
    return [f for s in side for f in _parquet_files(s, st)]


def _read_tables(files: list[str], st: fs.StorageOptions | None, empty: pa.Schema | None = None) -> pa.Table:
    """The rows of ``files`` as one table (``empty``'s empty table when there are none)."""
    tables = [pq.read_table(fs.arrow_input(f, st)) for f in files]
    if not tables:
        if empty is None:
            raise AssertionError("no files to read and no schema to stand in")
        return empty.empty_table()
    return pa.concat_tables(tables).combine_chunks()


def _write_table(t: pa.Table, path: str, st: fs.StorageOptions | None) -> int:
    with fs.AtomicFile(path, st) as out:
        pq.write_table(t, out)
    return t.num_rows


DECISION_EMPTY = P.DECISION_SCHEMA.empty_table()
# -- decide ---------------------------------------------------------------------------

class _Decide:
    """One ``decide()``: the dedup passes, declared and run by the engine's executor
    (which reuses the committed ones), then the index and the report."""

    def __init__(self, cfg: DedupConfig, ctx: StageContext) -> None:
        self.cfg = cfg
        self.ctx = ctx
        self.st = ctx.storage
        self.bands, self.rows = cfg.bands_rows() if cfg.near else (0, 0)
        self.ranks = {s: cfg.rank(s) for s in cfg.source_priority}
        self.default_rank = len(cfg.source_priority)
        self.passes: list[dict[str, Any]] = []
        self.index_written: dict[str, Any] | None = None

    def run(self, side: list[str]) -> str | None:
        cfg, st = self.cfg, self.st
        t_start = time.perf_counter()
        files = _side_files(side, st)
        work = self.ctx.work_dir if not fs.is_local(self.ctx.work_dir) else os.path.abspath(self.ctx.work_dir)
        index = _open_index(cfg.index_in, cfg, st) if cfg.index_in else None
        n_side = sum(pq.ParquetFile(fs.arrow_input(f, st)).metadata.num_rows for f in files)
        n_index = index["documents"] if index is not None else 0
        local = n_side + n_index <= cfg.local_rows or not files
        inputs: dict[str, list[str]] = {passes.SIDE: files}
        keys: dict[str, str] = {}
        if index is not None and index["segments"]:   # an index is immutable: its meta.json stands for it
            inputs[INDEX] = index["segments"]
            keys[INDEX] = hashlib.sha256(fs.read_bytes(_join(cfg.index_in, "meta.json"), st)
                                         + cfg.index_in.encode()).hexdigest()
        self.ex = passes.PassExecutor(_join(work, "passes"), st, inputs=inputs, timings=self.passes, local=local,
                                      salt=f"dedup/{BUCKET_HASH_VERSION}/{INDEX_VERSION}", input_keys=keys)
        dec_uri, dec, counts, how = _Chain(self, local).run(files, index)
        counts = {"documents": n_side, **counts}
        counts["removed"] = dec.num_rows
        report = self._report(P.report_partials(dec).to_pylist(), counts, how, "local" if local else "distributed",
                              time.perf_counter() - t_start)
        self.ctx.report.update(report)
        return dec_uri if dec.num_rows else None

    def _timed(self, name: str, t0: float, rows: int) -> None:
        self.passes.append(passes.timing(name, t0, rows))

    # -- index and report -------------------------------------------------------------
    def _write_index(self, index: dict | None, write_segment) -> None:
        """A new index: the segments of ``index_in`` (copied) plus one segment of this
        run's survivors, which ``write_segment(folder)`` writes and returns the rows of."""
        cfg, st = self.cfg, self.st
        out = cfg.index_out.rstrip("/")
        t0 = time.perf_counter()
        staging = out + ".staging"
        _remove(staging, st)
        fs.makedirs(staging, st)
        segments: list[str] = []
        n_old = 0
        if index is not None:
            for i, seg in enumerate(index["segments"]):
                name = f"seg-{i:04d}"
                _copy_dir(seg, _join(staging, name), st)
                segments.append(name)
            n_old = index["documents"]
        name = f"seg-{len(segments):04d}"
        n_new = write_segment(_join(staging, name))
        if n_new:
            segments.append(name)
        else:
            _remove(_join(staging, name), st)
        meta = {"format": INDEX_FORMAT, "version": INDEX_VERSION, "bucket_hash": BUCKET_HASH_VERSION,
                "params": cfg.signature_params(), "segments": segments, "documents": n_old + n_new,
                "segment_documents": (index["segment_documents"] if index else []) + ([n_new] if n_new else [])}
        fs.write_text(_join(staging, "meta.json"), json.dumps(meta, indent=2, sort_keys=True) + "\n", st)
        _remove(out, st)
        _publish_dir(staging, out, st)
        self._timed("index", t0, n_new)
        self.index_written = {"path": out, "documents": n_old + n_new, "added": n_new}

    def _report(self, partials: list[dict], counts: dict[str, int], how: str, path: str,
                seconds: float) -> dict[str, Any]:
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
            "path": path,
            "components": how,
            "removed_per_source": {s: {"exact": per_source.get(s, {}).get("exact", 0),
                                       "near": per_source.get(s, {}).get("near", 0)} for s in sources},
            "matrix": {s: matrix.get(s, {}) for s in sources if s in matrix},
            "cluster_sizes": dict(sorted(hist.items(), key=lambda kv: _bin_order(kv[0]))),
            "largest_cluster": largest,
            "passes": self.passes,
            "seconds": round(seconds, 3),
        }
        if self.index_written:
            report["index_out"] = self.index_written
        if cfg.index_in:
            report["index_in"] = {"path": cfg.index_in, "documents": counts.get("index_documents", 0)}
        return report


class _Chain:
    """The dedup passes as declarations (:class:`datapipe.passes.Pass`), handed to the
    executor a few at a time: how many partitions a pass gets, and whether verification
    and the star rounds run, depend on the row counts of the passes before it. With
    ``local`` the executor runs them in this process, with the same functions."""

    def __init__(self, d: _Decide, local: bool) -> None:
        self.d, self.cfg, self.st, self.ex, self.local = d, d.cfg, d.st, d.ex, local
        self.bands = d.bands
        self.cpus = 1   # known once Ray runs
        self.has_index = False

    def _parts(self, rows: int, per_partition: int | None = None) -> int:
        if self.local:
            return 1
        return passes.partitions(rows, per_partition or self.cfg.partition_rows, self.cpus,
                                 self.cfg.min_partition_rows)

    def _one(self, p: Pass) -> passes.Artifact:
        return self.ex.run([p])[p.name]

    def side_in(self, *steps) -> Input:
        """The side files as node rows (derived as they are read), then ``steps``."""
        return Input(name=SIDE, maps=((P.node_rows, self.ranks), *steps))

    def index_in(self, *steps) -> tuple[Input, ...]:
        return (Input(name=INDEX, maps=((P.index_rows, self.ranks), *steps)),) if self.has_index else ()

    def run(self, files: list[str], index: dict | None
            ) -> tuple[str | None, pa.Table, dict[str, int], str]:
        cfg, d = self.cfg, self.d
        n_elig = sum(_count_valid(f, "exact", self.st) for f in files)
        self.ranks = {"ranks": d.ranks, "default_rank": d.default_rank}
        if not self.local:
            import ray

            self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.has_index = index is not None and bool(index["segments"])
        n_index = index["documents"] if index is not None else 0
        edges: list[tuple[Input, int]] = []   # what the components read, with its rows
        counts: dict[str, int] = {"eligible": n_elig, "index_documents": n_index}

        # exact: identical normalised text
        if cfg.exact and n_elig:
            parts = self._parts(n_elig + n_index)
            route = (P.exact_input, {"parts": parts})
            ex = self._one(Pass(name="exact", inputs=(self.side_in(route), *self.index_in(route)), fn=G.exact_groups,
                                partitioning=Routed(parts=parts), output=Output()))
            counts["exact_duplicate_edges"] = _count_valid(ex.uri, "rep", self.st)
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
            cand = self._one(Pass(name="candidates", inputs=ins, fn=G.bucket_edges, partitioning=Routed(parts=parts),
                                  output=Output()))
            counts["candidate_edges"] = cand.rows
            near = "candidates"
            if cfg.verify != "none" and cand.rows:
                near = self._verify(cand.rows)
                counts["verified_edges"] = self.ex.done[near].rows
            edges.append((Input(name=near, columns=("a", "b")), self.ex.done[near].rows))

        comp, n_comp, how = self._components(edges)
        counts["removed_nodes"] = n_comp
        if not n_comp:
            return None, DECISION_EMPTY, counts, how
        if how != "local":   # the star rounds end in (a=root, b=node) edges
            parts = self._parts(n_comp)
            self._one(Pass(name="decisions", inputs=(Input(name=comp, maps=((P.by_root_rows, {"parts": parts}),)),),
                           fn=P.decide_kernel, partitioning=Routed(parts=parts), output=Output(schema=P.DECISION_SCHEMA)))
            comp = "decisions"
        dec = _read_tables(_parquet_files(self.ex.done[comp].uri, self.st), self.st, P.DECISION_SCHEMA)
        # (bounded by the number of duplicates)
        out = self._one(Pass(name="decisions_out", inputs=(comp,), fn=P.decisions_out, partitioning=Blocks(),
                             output=Output(schema=P.DECISIONS_SCHEMA, sort_by=(P.SPLIT, P.ROW))))
        if cfg.index_out:
            removed = dec["node"].combine_chunks()
            d._write_index(index, lambda path: self._index_segment(files, n_elig, removed, path))
        return out.uri, dec, counts, how

    def _index_segment(self, files: list[str], n_elig: int, removed: pa.Array, path: str) -> int:
        """This run's surviving documents as a segment of the new index (the index is an
        output the job names, published whole by :meth:`_Decide._write_index`)."""
        if not n_elig:
            return 0
        if self.local:
            nodes = P.node_rows(_read_tables(files, self.st), **self.ranks)
            return _write_table(P.index_survivors(nodes, removed=removed), _join(path, "part-0.parquet"), self.st)
        fsys, p = fs.resolve(path, self.st)
        passes.read_dataset(files, self.st).map_batches(P.node_rows, fn_kwargs=self.ranks,
                                                        batch_format="pyarrow").map_batches(
            P.index_survivors, fn_kwargs={"removed": removed}, batch_format="pyarrow").write_parquet(p, filesystem=fsys)
        return _count_rows(path, self.st)

    def _verify(self, n_cand: int) -> str:
        """Candidate pairs -> the similar ones; returns the name of the pass that has them."""
        cfg = self.cfg
        npm = cfg.num_perm
        parts = self._parts(3 * n_cand, cfg.verify_partition_rows)   # pairs + at most 2 documents each
        needed: Any = None
        shards = 1
        if not self.local:   # only documents that are in a candidate pair need to travel
            shards = max(1, math.ceil(2 * n_cand / cfg.shard_rows))
            self._one(Pass(name="needed", inputs=("candidates",), fn=P.needed_keys, partitioning=Blocks(),
                           output=Output(partition_cols=(P.SHARD,)), params={"shards": shards}))
            needed = Ref(name="needed")

        def payload(carry: bool) -> tuple[Input, ...]:
            step = (P.payload_side, {"parts": parts, "num_perm": npm, "carry": carry, "needed_dir": needed,
                                     "shards": shards, "storage": STORAGE})
            return (self.side_in(step), *self.index_in(step))

        def pairs(src: str, on: str, carry: bool) -> Input:
            return Input(name=src, maps=((P.edge_side, {"on": on, "parts": parts, "num_perm": npm, "carry": carry}),))

        if parts == 1:   # one partition: both endpoints in one go
            self._one(Pass(name="verified", inputs=(pairs("candidates", "a", False), *payload(False)),
                           fn=P.join_both_kernel, partitioning=Routed(parts=1), output=Output(),
                           params={"threshold": cfg.threshold}))
            self.d.passes[-1]["rows_in"] = n_cand
            return "verified"
        self._one(Pass(name="verify_a", inputs=(pairs("candidates", "a", False), *payload(False)),
                       fn=P.join_a_kernel, partitioning=Routed(parts=parts), output=Output()))
        self._one(Pass(name="verified", inputs=(pairs("verify_a", "b", True), *payload(True)),
                       fn=P.join_b_kernel, partitioning=Routed(parts=parts), output=Output(),
                       params={"threshold": cfg.threshold}))
        self.d.passes[-2]["rows_in"] = n_cand
        return "verified"

    def _components(self, edges: list[tuple[Input, int]]) -> tuple[str, int, str]:
        """The connected components of every edge; returns the pass that holds them (with
        ``local``: the decisions themselves), its rows and how they were found."""
        cfg = self.cfg
        n_edges = sum(n for _, n in edges)
        ins = tuple(i for i, n in edges if n)
        if n_edges == 0:
            return "", 0, "none"
        if self.local or cfg.components == "local" or (cfg.components == "auto" and n_edges <= cfg.local_max_edges):
            art = self._one(Pass(name="components+decisions", inputs=ins, fn=P.local_decide,
                                 partitioning=Routed(parts=1), output=Output(schema=P.DECISION_SCHEMA)))
            return "components+decisions", art.rows, "local"
        # alternating large-star / small-star over Ray Data
        cur = self._one(Pass(name="cc_edges_0", inputs=ins, fn=P.edges_only, partitioning=Blocks(), output=Output()))
        src, rows = "cc_edges_0", cur.rows
        for rnd in range(1, cfg.max_rounds + 1):
            parts = self._parts(2 * rows)
            ls = self._one(Pass(name=f"cc_ls_{rnd}", inputs=(Input(name=src, columns=("a", "b"), maps=(
                (P.directed_rows, {"parts": parts}),)),), fn=G.large_star, partitioning=Routed(parts=parts),
                output=Output()))
            parts = self._parts(ls.rows)
            ss = self._one(Pass(name=f"cc_ss_{rnd}", inputs=(Input(name=f"cc_ls_{rnd}", columns=("a", "b"), maps=(
                (P.by_b_rows, {"parts": parts}),)),), fn=G.small_star, partitioning=Routed(parts=parts),
                output=Output()))
            changed = _any_true(ls.uri, "changed", self.st) or _any_true(ss.uri, "changed", self.st)
            for old in (src, f"cc_ls_{rnd}"):
                self.ex.discard(old)
            src, rows = f"cc_ss_{rnd}", ss.rows
            log.info("dedup components round %d: %d edges, changed: %s", rnd, rows, changed)
            if not changed:  # every component is a star around its smallest key: (a=root, b=node)
                return src, rows, f"distributed ({rnd} rounds)"
        raise SpecError(f"dedup: connected components did not converge in max_rounds={cfg.max_rounds} rounds; "
                        "raise max_rounds")


def _size_bin(size: int) -> str:
    if size <= 4:
        return str(size)
    lo = 2 ** math.ceil(math.log2(size)) // 2 + 1
    return f"{lo}-{2 * (lo - 1)}"


def _bin_order(b: str) -> int:
    return int(b.split("-")[0])


def _rename_index_for_buckets(batch: pa.Table) -> pa.Table:
    return pa.table({P.KEY: batch.column("key"), P.BUCKETS: batch.column("buckets")})


def _copy_dir(src: str, dst: str, st: fs.StorageOptions | None) -> None:
    for f in fs.list_files(src, st):
        fs.copy_file(f, _join(dst, fs.relative(f, src)), st)


_publish_dir = passes.publish_dir


def _open_index(path: str, cfg: DedupConfig, st: fs.StorageOptions | None = None) -> dict[str, Any]:
    """Read and check an index's ``meta.json``; returns its segment paths and counts."""
    try:
        meta = json.loads(fs.read_text(_join(path, "meta.json"), st))
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
    return {"segments": [_join(root, s) for s in meta["segments"]], "documents": int(meta["documents"]),
            "segment_documents": list(meta.get("segment_documents", []))}
