"""The dedup stage on the global-stage contract: ``side()`` computes each document's
compact side row in the task that read it; ``decide()`` turns all side rows into drop
decisions, once, without ever seeing text. See ``docs/dedup.md``.

``decide()`` has two paths that give identical decisions (same kernels, same keys):

* **local** (side rows + index documents <= ``local_rows``): every step in this process
  on Arrow/NumPy tables, no Ray Data execution, so no per-pass start-up cost;
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
verified       attach both endpoints' shingle sets (or signatures), keep   endpoint key
               pairs with similarity >= threshold (``verify_a`` first
               when the join needs more than one partition)
components     union-find + decisions in one task (<= ``local_max_edges``  (one) / node
               edges), or alternating large-star / small-star rounds
               (``cc_*``) and then
decisions      removed document -> reason, survivor, cluster size          root key
=============  ==========================================================  =============

Every pass reads the side files (or the previous artifact) directly: node rows (side rows
with their survival-order key) are derived as they are read, not written by a pass.

Both paths end in ``decisions.parquet`` (``_split, _row, reason, detail``, sorted), the
report and, with ``index_out``, a new index; all committed under
``<work_dir>/decide-<input hash>/`` and reused when the same side data and config come
again (resume).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import time
from typing import Any, ClassVar, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from datapipe import fs, passes
from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.stage import GlobalStage, StageContext
from stages.dedup import graph as G
from stages.dedup import passes as P
from stages.dedup.config import DedupConfig
from stages.dedup.graph import COMPONENT_SCHEMA, EDGE_SCHEMA
from stages.dedup.minhash import BUCKET_HASH_VERSION, s_curve

log = logging.getLogger(__name__)

INDEX_FORMAT = "datapipe-dedup-index"
INDEX_VERSION = 2   # 2: keys carry the side row (split, row)
DONE = "_SUCCESS"


class Dedup(GlobalStage):
    """Cross-source exact and near-duplicate removal (MinHash-LSH). Drops are marked
    ``dedup:exact`` / ``dedup:near`` with the surviving document's id as detail."""

    name = "dedup"
    Config = DedupConfig
    reads: ClassVar[tuple[str, ...]] = (S.TEXT,)
    adds: ClassVar[dict[str, pa.DataType]] = {}

    def side(self, batch: pa.Table) -> pa.Table:
        """One compact row per document (see :func:`stages.dedup.passes.side_batch`):
        ``id, source, exact, sig, buckets, sh``."""
        return P.side_batch(batch, params=_side_params(self.config))

    def decide(self, side: list[str], ctx: StageContext) -> str | None:
        return _Decide(self.config, ctx).run(side)


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

def input_hash(files: list[str], cfg: DedupConfig, st: fs.StorageOptions | None = None) -> str:
    """What ``decide()``'s artifacts are keyed by: the side files' contents (as a set:
    file names and order do not matter), the config and the index read."""
    h = hashlib.sha256()
    h.update(json.dumps(dataclasses.asdict(cfg), sort_keys=True, default=str).encode())
    h.update(f"{BUCKET_HASH_VERSION}/{INDEX_VERSION}".encode())
    for digest in sorted(fs.sha256(f, st) for f in files):
        h.update(digest.encode())
    if cfg.index_in:
        try:
            h.update(fs.read_bytes(_join(cfg.index_in, "meta.json"), st))
        except OSError:
            pass   # _open_index reports it
    return h.hexdigest()


class _Decide:
    """One ``decide()``: reuse committed artifacts, or run the local or distributed path,
    then commit decisions, report and index."""

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
        self.root = _join(work, f"decide-{input_hash(files, cfg, st)[:24]}")
        dec_path = _join(self.root, "decisions.parquet")
        if fs.is_file(_join(self.root, DONE), st):
            saved = json.loads(fs.read_text(_join(self.root, "report.json"), st))
            self.ctx.report.update(saved["report"])
            log.info("dedup: reusing the committed decisions of %s", self.root)
            return dec_path if saved["removed"] else None
        _remove(self.root, st)
        fs.makedirs(self.root, st)
        index = _open_index(cfg.index_in, cfg, st) if cfg.index_in else None
        n_side = sum(pq.ParquetFile(fs.arrow_input(f, st)).metadata.num_rows for f in files)
        n_index = index["documents"] if index is not None else 0
        local = n_side + n_index <= cfg.local_rows or not files
        if local:
            dec, partials, counts, how = self._local(files, index)
        else:
            dec, partials, counts, how = _Distributed(self).run(files, index)
        counts = {"documents": n_side, **counts}
        counts["removed"] = dec.num_rows
        _write_table(dec, dec_path, st)
        report = self._report(partials, counts, how, "local" if local else "distributed",
                              time.perf_counter() - t_start)
        fs.write_text(_join(self.root, "report.json"), json.dumps({"report": report, "removed": dec.num_rows},
                                                                  sort_keys=True), st)
        fs.write_bytes(_join(self.root, DONE), b"", st)
        self.ctx.report.update(report)
        return dec_path if dec.num_rows else None

    def _timed(self, name: str, t0: float, rows: int) -> None:
        self.passes.append(passes.timing(name, t0, rows))

    # -- the local path -------------------------------------------------------------
    def _local(self, files: list[str], index: dict | None) -> tuple[pa.Table, list[dict], dict[str, int], str]:
        """Every step in this process, on the same kernels as the distributed passes."""
        cfg = self.cfg
        t0 = time.perf_counter()
        side = _read_tables(files, self.st, P.side_schema(cfg.num_perm).append(pa.field(P.SPLIT, pa.string())).append(
            pa.field(P.ROW, pa.int64())))
        nodes = P.node_rows(side, ranks=self.ranks, default_rank=self.default_rank)
        t = pa.table({"key": nodes[P.KEY], "exact": nodes[P.EXACT], "buckets": nodes[P.BUCKETS],
                      "sig": nodes[P.SIG], "sh": nodes[P.SH]})
        n_elig = t.num_rows
        if index is not None and index["segments"]:
            idx = P.index_rows(_read_tables([f for seg in index["segments"] for f in _parquet_files(seg, self.st)], self.st),
                               ranks=self.ranks, default_rank=self.default_rank)
            t = pa.concat_tables([t, S.conform(idx, t.schema)])
        self._timed("nodes", t0, t.num_rows)
        counts = {"eligible": n_elig, "index_documents": index["documents"] if index else 0}
        edges: list[pa.Table] = []
        reps = t.select(["key", "buckets"])
        if cfg.exact and n_elig:
            t0 = time.perf_counter()
            ex = G.exact_groups(t.select(["key", "exact", "buckets"]))
            e = P.exact_edges(ex)
            counts["exact_duplicate_edges"] = e.num_rows
            edges.append(e)
            reps = ex.filter(pc.is_null(ex["rep"])).select(["key", "buckets"])
            self._timed("exact", t0, e.num_rows)
        if cfg.near and n_elig:
            t0 = time.perf_counter()
            cand = G.bucket_edges(P.bucket_rows(reps, parts=1).drop_columns(["_part"]))
            counts["candidate_edges"] = cand.num_rows
            self._timed("candidates", t0, cand.num_rows)
            if cfg.verify != "none" and cand.num_rows:
                t0 = time.perf_counter()
                cand = P.verify_pairs(cand, t.select(["key", "sig", "sh"]), cfg.threshold)
                counts["verified_edges"] = cand.num_rows
                self._timed("verified", t0, cand.num_rows)
            edges.append(cand.select(["a", "b"]))
        t0 = time.perf_counter()
        all_edges = pa.concat_tables([S.conform(e, EDGE_SCHEMA) for e in edges]) if edges else EDGE_SCHEMA.empty_table()
        comp = G.local_components(all_edges)
        counts["removed_nodes"] = comp.num_rows
        dec = P.decide_kernel(comp)
        self._timed("components+decisions", t0, dec.num_rows)
        if cfg.index_out:
            survivors = P.index_survivors(nodes, removed=dec["node"].combine_chunks())
            self._write_index(index, lambda path: _write_table(survivors, _join(path, "part-0.parquet"), self.st))
        partials = P.report_partials(dec).to_pylist()
        return P.decisions_out(dec), partials, counts, "local" if all_edges.num_rows else "none"

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


class _Distributed:
    """The distributed path: Ray Data passes over the side files, each writing a durable
    Parquet artifact under ``<decide root>/passes/``."""

    def __init__(self, d: _Decide) -> None:
        self.d = d
        self.cfg = d.cfg
        self.st = d.st
        self.root = _join(d.root, "passes")
        self.runner = passes.PassRunner(self.root, self.st, d.passes)   # the engine owns the passes' files
        self._write, self._read, self._group = self.runner.write, self.runner.read, self.runner.group
        self.bands = d.bands
        self.cpus = 1   # known once Ray runs (after the first pass)

    def _parts(self, rows: int, per_partition: int | None = None) -> int:
        return passes.PassRunner.parts(rows, per_partition or self.cfg.partition_rows, self.cpus,
                                       self.cfg.min_partition_rows)

    def run(self, files: list[str], index: dict | None) -> tuple[pa.Table, list[dict], dict[str, int], str]:
        cfg, d, fmt = self.cfg, self.d, "pyarrow"
        # node rows are cheap to derive, so every pass derives them from the side files as it
        # reads them instead of a pass of their own
        n_elig = sum(_count_valid(f, "exact", self.st) for f in files)
        ranks = {"ranks": d.ranks, "default_rank": d.default_rank}

        def nodes(columns: list[str]):
            return self._read(files).map_batches(P.node_rows, fn_kwargs=ranks, batch_format=fmt).select_columns(columns)

        self.nodes = nodes
        import ray

        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        index_nodes = None
        if index is not None and index["segments"]:
            index_nodes = self._read(index["segments"]).map_batches(
                P.index_rows, fn_kwargs={"ranks": d.ranks, "default_rank": d.default_rank}, batch_format=fmt)
        n_index = index["documents"] if index is not None else 0
        edge_sets: list[tuple[str, str, int]] = []
        counts: dict[str, int] = {"eligible": n_elig, "index_documents": n_index}

        # exact: identical normalised text
        reps_source = None
        if cfg.exact and n_elig:
            parts = self._parts(n_elig + n_index)

            def exact_ds():
                inp = nodes([P.KEY, P.EXACT, P.BUCKETS]).map_batches(
                    P.exact_input, fn_kwargs={"parts": parts}, batch_format=fmt)
                if index_nodes is not None:
                    inp = inp.union(index_nodes.map_batches(P.exact_input, fn_kwargs={"parts": parts}, batch_format=fmt))
                return self._group(inp, parts, P.exact_kernel)

            exact_path, _ = self._write("exact", exact_ds)
            n_exact = _count_valid(exact_path, "rep", self.st)
            counts["exact_duplicate_edges"] = n_exact
            edge_sets.append(("exact", exact_path, n_exact))
            reps_source = exact_path

        # buckets -> candidate pairs -> verified pairs
        if cfg.near and n_elig:
            n_reps = (n_elig + n_index) - counts.get("exact_duplicate_edges", 0)
            parts = self._parts(max(1, n_reps) * self.bands)

            def bucket_ds():
                if reps_source is not None:
                    inp = self._read(reps_source, ["key", "rep", "buckets"])
                else:
                    inp = nodes([P.KEY, P.BUCKETS])
                    if index_nodes is not None:
                        inp = inp.union(index_nodes.map_batches(_rename_index_for_buckets, batch_format=fmt))
                inp = inp.map_batches(P.bucket_rows, fn_kwargs={"parts": parts}, batch_format=fmt)
                return self._group(inp, parts, P.bucket_kernel)

            cand, n_cand = self._write("candidates", bucket_ds)
            counts["candidate_edges"] = n_cand
            near_edges = cand
            if cfg.verify != "none" and n_cand:
                near_edges, n_ver = self._verify(cand, n_cand, index_nodes)
                counts["verified_edges"] = n_ver
            edge_sets.append(("edges", near_edges, _count_rows(near_edges, self.st)))

        comp, n_comp, how = self._components(edge_sets)
        counts["removed_nodes"] = n_comp
        dec_path = comp if how == "local" else None   # local components write decisions at once
        if n_comp and dec_path is None:
            parts = self._parts(n_comp)
            dec_path, _ = self._write("decisions", lambda: self._group(
                self._read(comp).map_batches(P.by_root_rows, fn_kwargs={"parts": parts}, batch_format=fmt),
                parts, P.decide_kernel))
        dec = _read_tables(_parquet_files(dec_path, self.st), self.st, P.DECISION_SCHEMA) if n_comp else DECISION_EMPTY
        # (bounded by the number of duplicates)
        if cfg.index_out:
            removed = dec["node"].combine_chunks()
            d._write_index(index, lambda path: self._index_segment(n_elig, removed, path))
        return P.decisions_out(dec), P.report_partials(dec).to_pylist(), counts, how

    def _index_segment(self, n_elig: int, removed: pa.Array, path: str) -> int:
        if not n_elig:
            return 0
        fsys, p = fs.resolve(path, self.st)
        self.nodes([P.KEY, P.EXACT, P.BUCKETS, P.SIG]).map_batches(
            P.index_survivors, fn_kwargs={"removed": removed}, batch_format="pyarrow").write_parquet(p, filesystem=fsys)
        return _count_rows(path, self.st)

    def _verify(self, cand: str, n_cand: int, index_nodes) -> tuple[str, int]:
        cfg, fmt = self.cfg, "pyarrow"
        npm = cfg.num_perm
        parts = self._parts(3 * n_cand, cfg.verify_partition_rows)   # pairs + at most 2 documents each

        # only documents that are in a candidate pair need to travel
        shards = max(1, math.ceil(2 * n_cand / cfg.shard_rows))
        needed, _ = self._write("needed", lambda: self._read(cand).map_batches(
            P.needed_keys, fn_kwargs={"shards": shards}, batch_format=fmt), partition_cols=[P.SHARD])

        def payload(carry: bool):
            kw = {"parts": parts, "num_perm": npm, "carry": carry, "needed_dir": needed, "shards": shards,
                  "storage": self.st}
            pay = self.nodes([P.KEY, P.SIG, P.SH, P.BATCH]).map_batches(
                P.payload_side, fn_kwargs=kw, batch_format=fmt)
            if index_nodes is not None:
                pay = pay.union(index_nodes.map_batches(P.payload_side, fn_kwargs=kw, batch_format=fmt))
            return pay

        def join_a():
            e = self._read(cand).map_batches(P.edge_side, fn_kwargs={"on": "a", "parts": parts, "num_perm": npm,
                                                                       "carry": False}, batch_format=fmt)
            return self._group(e.union(payload(False)), parts, P.join_a_kernel)

        if parts == 1:  # one partition: both endpoints in one go
            def join_both():
                e = self._read(cand).map_batches(P.edge_side, fn_kwargs={"on": "a", "parts": 1, "num_perm": npm,
                                                                           "carry": False}, batch_format=fmt)
                return self._group(e.union(payload(False)), 1, P.join_both_kernel, threshold=cfg.threshold)

            out, n = self._write("verified", join_both)
            self.d.passes[-1]["rows_in"] = n_cand
            return out, n
        half, n_half = self._write("verify_a", join_a)

        def join_b():
            e = self._read(half).map_batches(P.edge_side, fn_kwargs={"on": "b", "parts": parts, "num_perm": npm,
                                                                       "carry": True}, batch_format=fmt)
            return self._group(e.union(payload(True)), parts, P.join_b_kernel, threshold=cfg.threshold)

        out, n = self._write("verified", join_b)
        self.d.passes[-2]["rows_in"] = n_cand
        return out, n

    def _components(self, edge_sets: list[tuple[str, str, int]]) -> tuple[str, int, str]:
        cfg, fmt = self.cfg, "pyarrow"
        n_edges = sum(n for _, _, n in edge_sets)

        def all_edges():
            dss = []
            for kind, p, n in edge_sets:
                if n == 0:
                    continue
                if kind == "exact":
                    dss.append(self._read(p, ["key", "rep"]).map_batches(P.exact_edges, batch_format=fmt))
                else:
                    dss.append(self._read(p, ["a", "b"], EDGE_SCHEMA))
            out = dss[0] if dss else _empty(EDGE_SCHEMA)
            for d in dss[1:]:
                out = out.union(d)
            return out.map_batches(P.edges_only, batch_format=fmt)

        if n_edges == 0:
            path, _ = self._write("components", lambda: _empty(COMPONENT_SCHEMA))
            return path, 0, "none"
        local = cfg.components == "local" or (cfg.components == "auto" and n_edges <= cfg.local_max_edges)
        if local:
            path, n = self._write("components+decisions", lambda: self._group(
                all_edges().map_batches(P.single_part, batch_format=fmt), 1, P.local_decide_kernel))
            return path, n, "local"
        # alternating large-star / small-star over Ray Data
        cur, rows = self._write("cc_edges_0", all_edges)
        for rnd in range(1, cfg.max_rounds + 1):
            parts = self._parts(2 * rows)
            src = cur
            ls, rows_ls = self._write(f"cc_ls_{rnd}", lambda: self._group(self._read(src, ["a", "b"]).map_batches(
                P.directed_rows, fn_kwargs={"parts": parts}, batch_format=fmt), parts, P.large_star_kernel))
            parts = self._parts(rows_ls)
            ss, rows = self._write(f"cc_ss_{rnd}", lambda: self._group(self._read(ls, ["a", "b"]).map_batches(
                P.by_b_rows, fn_kwargs={"parts": parts}, batch_format=fmt), parts, P.small_star_kernel))
            changed = _any_true(ls, "changed", self.st) or _any_true(ss, "changed", self.st)
            for old in (src, ls):
                _remove(old, self.st)
            cur = ss
            log.info("dedup components round %d: %d edges, changed: %s", rnd, rows, changed)
            if not changed:  # every component is a star around its smallest key: (a=root, b=node)
                return ss, rows, f"distributed ({rnd} rounds)"
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


def _empty(schema: pa.Schema):
    import ray

    return ray.data.from_arrow(schema.empty_table())


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
