"""The dedup stage: exact + MinHash-LSH near-duplicate removal across sources, as a
chain of Ray Data passes joined by durable Parquet artifacts under ``ctx.work_dir``.

=============  ==========================================================  =============
pass           what                                                        partitioned by
=============  ==========================================================  =============
signatures     normalise, shingle, MinHash, band buckets, exact hash; the   (map)
               documents are written once, with these ``_dd_*`` columns
exact          group identical normalised texts; the smallest key           exact hash
               represents the group further on
candidates     one row per (representative, band); star edges per bucket   band bucket
needed         endpoints of candidate pairs, sharded by document batch     (map)
verified       attach both endpoints' shingle sets (or signatures), keep   endpoint key
               pairs with similarity >= threshold (``verify_a`` first
               when the join needs more than one partition)
components     union-find in one task (<= ``local_max_edges`` edges) or    (one) / node
               alternating large-star / small-star rounds (``cc_*``)
decisions      removed id -> reason, survivor, cluster size; sharded by    survivor key
               the batch the document was written in
index          survivors' exact hash, buckets and signature (index_out)    (map)
mark           the documents re-read with drops marked (lazy, returned)    (map)
=============  ==========================================================  =============

Every grouping pass hands each partition whole to a vectorised kernel of
:mod:`stages.dedup.graph`; a partition holds at most ``partition_rows`` rows
(``verify_partition_rows`` for the verification joins), so no task's memory grows
with the corpus. No pass gathers documents, signatures or edges in the driver: it only sees row
counts (from Parquet footers), the S-curve and the report's small aggregates. The only step that may hold
a whole set in one process is the local components step, bounded by
``local_max_edges`` duplicate edges (never by the number of documents).
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from typing import Any, ClassVar

import pyarrow as pa

from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.stage import GlobalStage, StageContext
from stages.dedup import passes as P
from stages.dedup.config import DedupConfig
from stages.dedup.graph import COMPONENT_SCHEMA, EDGE_SCHEMA
from stages.dedup.minhash import BUCKET_HASH_VERSION, s_curve

log = logging.getLogger(__name__)

INDEX_FORMAT = "datapipe-dedup-index"
INDEX_VERSION = 1


class Dedup(GlobalStage):
    """Cross-source exact and near-duplicate removal (MinHash-LSH). Drops are marked
    ``dedup:exact`` / ``dedup:near`` with the surviving document's id as detail."""

    name = "dedup"
    Config = DedupConfig
    reads: ClassVar[tuple[str, ...]] = (S.TEXT,)
    adds: ClassVar[dict[str, pa.DataType]] = {}

    def run(self, ds: Any, ctx: StageContext) -> Any:
        applies = sorted(self.sources) if self.sources is not None else None
        return _Run(self.config, ctx, applies=applies, stage=self.name).execute(ds)


# -- artifacts -----------------------------------------------------------------------

def _parquet_files(path: str) -> list[str]:
    fs, p = P._fs(path)
    from pyarrow import fs as pafs

    info = fs.get_file_info(p)
    if info.type == pafs.FileType.NotFound:
        return []
    sel = fs.get_file_info(pafs.FileSelector(p, recursive=True))
    return sorted(f.path for f in sel if f.type == pafs.FileType.File and f.path.endswith(".parquet"))


def _count_valid(path: str, column: str) -> int:
    """Non-null values of a column of a written artifact, from the footers' statistics."""
    import pyarrow.parquet as pq

    fs, _ = P._fs(path)
    total = 0
    for f in _parquet_files(path):
        md = pq.ParquetFile(fs.open_input_file(f)).metadata
        names = [md.schema.column(i).name for i in range(md.num_columns)]
        j = names.index(column)
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            st = rg.column(j).statistics
            if st is None or not st.has_null_count:
                raise AssertionError(f"{f}: no null count statistics for {column}")
            total += rg.num_rows - st.null_count
    return total


def _any_true(path: str, column: str) -> bool:
    """Whether a boolean column of a written artifact holds a true value, from the
    footers' min/max statistics."""
    import pyarrow.parquet as pq

    fs, _ = P._fs(path)
    for f in _parquet_files(path):
        md = pq.ParquetFile(fs.open_input_file(f)).metadata
        names = [md.schema.column(i).name for i in range(md.num_columns)]
        j = names.index(column)
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            if rg.num_rows == 0:
                continue
            st = rg.column(j).statistics
            if st is None or not st.has_min_max or st.max:
                return True
    return False


def _count_rows(path: str) -> int:
    """Rows of a written artifact, from the Parquet footers only."""
    import pyarrow.parquet as pq

    fs, _ = P._fs(path)
    return sum(pq.ParquetFile(fs.open_input_file(f)).metadata.num_rows for f in _parquet_files(path))


def _remove(path: str) -> None:
    fs, p = P._fs(path)
    from pyarrow import fs as pafs

    if fs.get_file_info(p).type != pafs.FileType.NotFound:
        if fs.get_file_info(p).type == pafs.FileType.Directory:
            fs.delete_dir(p)
        else:
            fs.delete_file(p)


def _join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts])


class _Run:
    """One execution of the stage: the passes in order, their artifacts and timings."""

    def __init__(self, cfg: DedupConfig, ctx: StageContext, *, applies: list[str] | None, stage: str) -> None:
        self.cfg = cfg
        self.ctx = ctx
        self.applies = applies
        self.stage = stage
        self.root = ctx.work_dir if "://" in ctx.work_dir else os.path.abspath(ctx.work_dir)
        self.passes: list[dict[str, Any]] = []
        self.bands, self.rows = cfg.bands_rows() if cfg.near else (0, 0)
        self.ranks = {s: cfg.rank(s) for s in cfg.source_priority}
        self.default_rank = len(cfg.source_priority)
        self.cpus = 1   # known once Ray runs (after the first pass)
        self.index_written: dict[str, Any] | None = None

    # -- helpers ---------------------------------------------------------------------
    def _parts(self, rows: int, per_partition: int | None = None) -> int:
        """Partitions for a shuffle of ``rows`` rows: at most ``per_partition`` rows each
        (memory), and spread over the cluster's CPUs while partitions keep at least
        ``min_partition_rows`` rows (parallelism without tiny tasks)."""
        cap = per_partition or self.cfg.partition_rows
        spread = min(self.cpus, rows // self.cfg.min_partition_rows)
        return max(1, math.ceil(rows / cap), spread)

    def _write(self, name: str, make_ds, *, partition_cols: list[str] | None = None) -> tuple[str, int]:
        """Run one pass: write its dataset under ``work_dir/<name>`` (via a staging
        name, renamed when complete) and return the path and its row count."""
        out = _join(self.root, name)
        tmp = out + ".staging"
        _remove(out)
        _remove(tmp)
        t0, wall0 = time.perf_counter(), time.time()
        ds = make_ds()
        if partition_cols:
            ds.write_parquet(tmp, partition_cols=partition_cols)
        else:
            ds.write_parquet(tmp)
        fs, p = P._fs(tmp)
        from pyarrow import fs as pafs

        if fs.get_file_info(p).type == pafs.FileType.NotFound:
            fs.create_dir(p)
        fs.move(p, P._fs(out)[1])
        rows = _count_rows(out)
        self.passes.append({"pass": name, "seconds": round(time.perf_counter() - t0, 3), "rows": rows,
                            "t_start": round(wall0, 3), "t_end": round(time.time(), 3)})
        log.info("dedup pass %s: %d rows in %.1f s", name, rows, time.perf_counter() - t0)
        return out, rows

    def _read(self, path: str | list[str], columns: list[str] | None = None, schema: pa.Schema | None = None):
        import ray

        paths = [path] if isinstance(path, str) else list(path)
        if not any(_parquet_files(p) for p in paths):
            if schema is None:
                raise AssertionError(f"no data at {path} and no schema to stand in")
            return ray.data.from_arrow(schema.empty_table())
        ds = ray.data.read_parquet(path)
        return ds.select_columns(columns) if columns else ds

    def _group(self, ds: Any, parts: int, kernel, **fn_kwargs: Any) -> Any:
        """Hand every ``_part`` partition of ``ds`` whole to ``kernel``. One partition
        runs as a single task (no shuffle service to start); more use Ray Data's hash
        shuffle into ``parts`` partitions."""
        kw = {"fn_kwargs": fn_kwargs} if fn_kwargs else {}
        if parts == 1:
            return ds.groupby(None).map_groups(kernel, batch_format="pyarrow", **kw)
        return ds.groupby("_part", num_partitions=parts).map_groups(kernel, batch_format="pyarrow", **kw)

    def _sig_params(self) -> dict[str, Any]:
        cfg = self.cfg
        n = cfg.normalisation
        sh = cfg.shingling
        return {
            "num_perm": cfg.num_perm, "seed": cfg.seed, "scheme": cfg.scheme, "near": cfg.near,
            "verify": cfg.verify, "bands": self.bands, "rows": self.rows,
            "norm": {"lowercase": n.lowercase, "punctuation": n.punctuation, "digits": n.digits,
                     "whitespace": n.whitespace, "nfkc": n.nfkc},
            "shingling": {"kind": sh.kind, "n": sh.n},
            "ranks": self.ranks, "default_rank": self.default_rank, "applies": self.applies,
        }

    # -- the passes ------------------------------------------------------------------
    def execute(self, ds: Any) -> Any:
        cfg = self.cfg
        t_start = time.perf_counter()
        index = _open_index(cfg.index_in, cfg) if cfg.index_in else None
        fmt = "pyarrow"

        # 1. signatures: the documents with the _dd_* columns, written once
        docs, n_docs = self._write("signatures", lambda: ds.map_batches(
            P.signature_batch, fn_kwargs={"params": self._sig_params()}, batch_format=fmt,
            batch_size=cfg.batch_size))
        import ray

        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        if n_docs == 0:   # nothing came in: nothing to do but keep the index going
            if cfg.index_out:
                self._write_index(docs, None, 1, index)
            self._report(None, {"documents": 0, "eligible": 0}, "none", time.perf_counter() - t_start)
            return ds
        columns = [c for c in _schema_of(docs).names if c not in P.DD_COLUMNS]
        n_elig = _count_valid(docs, P.KEY)
        index_nodes = None
        if index is not None and index["segments"]:
            index_nodes = self._read(index["segments"]).map_batches(
                P.index_rows, fn_kwargs={"ranks": self.ranks, "default_rank": self.default_rank}, batch_format=fmt)
        n_index = index["documents"] if index is not None else 0

        edge_sets: list[tuple[str, str, int]] = []
        counts: dict[str, int] = {"documents": n_docs, "eligible": n_elig, "index_documents": n_index}

        # 2. exact: identical normalised text
        reps_source = None
        if cfg.exact and n_elig:
            parts = self._parts(n_elig + n_index)

            def exact_ds():
                inp = self._read(docs, [P.KEY, P.EXACT, P.BUCKETS]).map_batches(
                    P.exact_input, fn_kwargs={"parts": parts}, batch_format=fmt)
                if index_nodes is not None:
                    inp = inp.union(index_nodes.map_batches(P.exact_input, fn_kwargs={"parts": parts}, batch_format=fmt))
                return self._group(inp, parts, P.exact_kernel)

            exact_path, _ = self._write("exact", exact_ds)
            n_exact = _count_valid(exact_path, "rep")
            counts["exact_duplicate_edges"] = n_exact
            edge_sets.append(("exact", exact_path, n_exact))
            reps_source = exact_path

        # 3. buckets -> candidate pairs
        if cfg.near and n_elig:
            n_reps = (n_elig + n_index) - (counts.get("exact_duplicate_edges", 0))
            parts = self._parts(max(1, n_reps) * self.bands)

            def bucket_ds():
                if reps_source is not None:
                    inp = self._read(reps_source, ["key", "rep", "buckets"])
                else:
                    inp = self._read(docs, [P.KEY, P.BUCKETS])
                    if index_nodes is not None:
                        inp = inp.union(index_nodes.map_batches(_rename_index_for_buckets, batch_format=fmt))
                inp = inp.map_batches(P.bucket_rows, fn_kwargs={"parts": parts}, batch_format=fmt)
                return self._group(inp, parts, P.bucket_kernel)

            cand, n_cand = self._write("candidates", bucket_ds)
            counts["candidate_edges"] = n_cand
            near_edges = cand
            # 4. verification
            if cfg.verify != "none" and n_cand:
                near_edges, n_ver = self._verify(docs, cand, n_cand, n_elig, index_nodes)
                counts["verified_edges"] = n_ver
            edge_sets.append(("edges", near_edges, _count_rows(near_edges)))

        # 5. connected components
        comp, n_comp, how = self._components(edge_sets)
        counts["removed_nodes"] = n_comp
        # 6. decisions, sharded by the batch the documents were written in
        shards = max(1, math.ceil(n_comp / self.cfg.shard_rows))
        dec_path = None
        if n_comp:
            parts = self._parts(n_comp)
            dec_path, n_dec = self._write("decisions", lambda: self._group(
                self._read(comp).map_batches(P.by_root_rows, fn_kwargs={"parts": parts}, batch_format=fmt),
                parts, P.decide_kernel, shards=shards), partition_cols=[P.SHARD])
        else:
            n_dec = 0
        counts["removed"] = n_dec
        # 7. index for later runs
        if cfg.index_out:
            self._write_index(docs, dec_path, shards, index)
        # report
        self._report(dec_path, counts, how, time.perf_counter() - t_start)
        # 8. the documents, marked (lazy: the runner streams it on)
        import ray

        return ray.data.read_parquet(docs).select_columns(columns + [P.BATCH]).map_batches(
            P.mark, fn_kwargs={"decisions_dir": dec_path, "shards": shards, "stage": self.stage, "columns": columns},
            batch_format=fmt)

    def _verify(self, docs: str, cand: str, n_cand: int, n_elig: int, index_nodes) -> tuple[str, int]:
        cfg, fmt = self.cfg, "pyarrow"
        npm = cfg.num_perm
        parts = self._parts(3 * n_cand, cfg.verify_partition_rows)   # pairs + at most 2 documents each

        # only documents that are in a candidate pair need to travel
        shards = max(1, math.ceil(2 * n_cand / cfg.shard_rows))
        needed, _ = self._write("needed", lambda: self._read(cand).map_batches(
            P.needed_keys, fn_kwargs={"shards": shards}, batch_format=fmt), partition_cols=[P.SHARD])

        def payload(carry: bool):
            kw = {"parts": parts, "num_perm": npm, "carry": carry, "needed_dir": needed, "shards": shards}
            pay = self._read(docs, [P.KEY, P.SIG, P.SH, P.BATCH]).map_batches(
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
            self.passes[-1]["rows_in"] = n_cand
            return out, n
        half, n_half = self._write("verify_a", join_a)

        def join_b():
            e = self._read(half).map_batches(P.edge_side, fn_kwargs={"on": "b", "parts": parts, "num_perm": npm,
                                                                       "carry": True}, batch_format=fmt)
            return self._group(e.union(payload(True)), parts, P.join_b_kernel, threshold=cfg.threshold)

        out, n = self._write("verified", join_b)
        self.passes[-2]["rows_in"] = n_cand
        return out, n

    def _components(self, edge_sets: list[tuple[str, str, int]]) -> tuple[str, int, str]:
        cfg, fmt = self.cfg, "pyarrow"
        n_edges = sum(n for _, _, n in edge_sets)
        self.n_edges = n_edges

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
            path, n = self._write("components", lambda: self._group(
                all_edges().map_batches(P.single_part, batch_format=fmt), 1, P.local_kernel))
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
            changed = _any_true(ls, "changed") or _any_true(ss, "changed")
            for old in (src, ls):
                _remove(old)
            cur = ss
            log.info("dedup components round %d: %d edges, changed: %s", rnd, rows, changed)
            if not changed:  # every component is a star around its smallest key: (a=root, b=node)
                return ss, rows, f"distributed ({rnd} rounds)"
        raise SpecError(f"dedup: connected components did not converge in max_rounds={cfg.max_rounds} rounds; "
                        "raise max_rounds")

    def _write_index(self, docs: str, dec_path: str | None, shards: int, index: dict | None) -> None:
        cfg = self.cfg
        out = cfg.index_out.rstrip("/")
        if cfg.index_in and os.path.abspath(cfg.index_in) == os.path.abspath(out):
            raise SpecError(f"dedup: index_out must differ from index_in ({out}): indexes are immutable, "
                            "so that re-running a job never deduplicates data against itself")
        staging = out + ".staging"
        _remove(staging)
        fs, sp = P._fs(staging)
        fs.create_dir(sp)
        segments: list[str] = []
        n_old = 0
        if index is not None:
            for i, seg in enumerate(index["segments"]):
                name = f"seg-{i:04d}"
                _copy_dir(seg, _join(staging, name))
                segments.append(name)
            n_old = index["documents"]
        name = f"seg-{len(segments):04d}"
        t0, wall0 = time.perf_counter(), time.time()
        n_new = 0
        if _count_valid(docs, P.KEY) if _parquet_files(docs) else 0:
            self._read(docs, [S.ID, S.SOURCE, P.KEY, P.EXACT, P.BUCKETS, P.SIG, P.BATCH]).map_batches(
                P.index_survivors, fn_kwargs={"decisions_dir": dec_path, "shards": shards}, batch_format="pyarrow"
            ).write_parquet(_join(staging, name))
            n_new = _count_rows(_join(staging, name))
            segments.append(name)
        meta = {"format": INDEX_FORMAT, "version": INDEX_VERSION, "bucket_hash": BUCKET_HASH_VERSION,
                "params": cfg.signature_params(), "segments": segments, "documents": n_old + n_new,
                "segment_documents": (index["segment_documents"] if index else []) + ([n_new] if n_new else [])}
        with fs.open_output_stream(_join(sp, "meta.json")) as f:
            f.write((json.dumps(meta, indent=2, sort_keys=True) + "\n").encode())
        _remove(out)
        fs.move(sp, P._fs(out)[1])
        self.passes.append({"pass": "index", "seconds": round(time.perf_counter() - t0, 3), "rows": n_new,
                            "t_start": round(wall0, 3), "t_end": round(time.time(), 3)})
        self.index_written = {"path": out, "documents": n_old + n_new, "added": n_new}

    def _report(self, dec_path: str | None, counts: dict[str, int], how: str, seconds: float) -> None:
        cfg = self.cfg
        per_source: dict[str, dict[str, int]] = {}
        matrix: dict[str, dict[str, int]] = {}
        hist: dict[str, int] = {}
        largest = 0
        if dec_path is not None:
            rows = self._read(dec_path, ["source", "kept_source", "reason", "size", "first"]).map_batches(
                P.report_partials, batch_format="pyarrow").take_all()
            for r in rows:  # a few rows per block
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
        removed_per_source = {s: {"exact": per_source.get(s, {}).get("exact", 0),
                                  "near": per_source.get(s, {}).get("near", 0)} for s in sources}
        report: dict[str, Any] = {
            "params": {**cfg.signature_params(), "threshold": cfg.threshold, "weights": list(cfg.lsh_weights),
                       "verify": cfg.verify, "exact": cfg.exact, "near": cfg.near,
                       "source_priority": list(cfg.source_priority)},
            "bands": self.bands, "rows": self.rows,
            "s_curve": s_curve(self.bands, self.rows) if cfg.near else {},
            "counts": counts,
            "components": how,
            "removed_per_source": removed_per_source,
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
        self.ctx.report.update(report)


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


def _schema_of(path: str) -> pa.Schema:
    import pyarrow.parquet as pq

    files = _parquet_files(path)
    fs, _ = P._fs(path)
    return pq.ParquetFile(fs.open_input_file(files[0])).schema_arrow


def _copy_dir(src: str, dst: str) -> None:
    from pyarrow import fs as pafs

    sfs, sp = P._fs(src)
    dfs, dp = P._fs(dst)
    dfs.create_dir(dp, recursive=True)
    pafs.copy_files(sp, dp, source_filesystem=sfs, destination_filesystem=dfs)


def _open_index(path: str, cfg: DedupConfig) -> dict[str, Any]:
    """Read and check an index's ``meta.json``; returns its segment paths and counts."""
    fs, p = P._fs(path)
    try:
        with fs.open_input_stream(_join(p, "meta.json")) as f:
            meta = json.loads(f.read().decode())
    except (FileNotFoundError, OSError) as e:
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
