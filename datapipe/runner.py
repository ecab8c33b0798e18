"""Builds the Ray Data plan for a job spec, runs it, checks the accounting and commits
the outputs.

Plan: read (one Ray read task per :class:`~datapipe.readers.ReadSplit`) → segments of
consecutive batch stages, each fused into one ``map_batches`` (an actor pool when a stage
in it has ``setup()``, plain tasks otherwise) → global stages (dedup) between segments on
a materialised dataset → deterministic write: rows are keyed by ``(kind, source,
hash(id) % partitions)``, grouped with a Ray Data ``groupby`` and each group is sorted by
id and written to its own Parquet file, so file names and bytes never depend on Ray's
scheduling.

Outputs go to a staging folder keyed by a run id and are published by
:mod:`datapipe.commit` (rename locally, copy + ``_SUCCESS`` last on object stores) only
after the accounting check passed and ``manifest.json`` lists every file with its hash:
an interrupted or failed run never leaves a complete-looking output.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from datapipe import fs
from datapipe import schema as S
from datapipe.commit import SUCCESS, OutputRun, is_datapipe_output, read_status
from datapipe.errors import CorruptInputError, JobError, SpecError
from datapipe.spec import JobSpec, StageSpec, is_global, job_schema, reader_for_source
from datapipe.stage import BatchStats, StageContext

log = logging.getLogger(__name__)

OUTPUT_KINDS = ("documents", "rejects")
REJECT_RENAMES = {S.REJECT_STAGE: "reject_stage", S.REJECT_REASON: "reject_reason", S.REJECT_DETAIL: "reject_detail"}
NOT_WRITTEN = {S.RAW, "tokens"}


@dataclasses.dataclass
class RunResult:
    output: str
    skipped: bool
    report: dict[str, Any]


# -- Ray ---------------------------------------------------------------------------

def ensure_ray(job: JobSpec) -> None:
    """Join the cluster named by ``RAY_ADDRESS``, or start an embedded local Ray."""
    import ray

    if ray.is_initialized():
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_DATA_USAGE_DISABLED", "1")
    if os.environ.get("RAY_ADDRESS"):
        log.info("joining Ray cluster at %s", os.environ["RAY_ADDRESS"])
        ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=True)
    else:
        log.info("starting an embedded local Ray (num_cpus=%s)", job.execution.num_cpus or "all")
        ray.init(num_cpus=job.execution.num_cpus, include_dashboard=False, log_to_driver=True)


def _cluster_cpus() -> int:
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


# -- read --------------------------------------------------------------------------

def _tally_marks(table: pa.Table, stage: str, *, count_raw: bool) -> dict[str, BatchStats]:
    """Per-source stats of ``stage`` read off the reject marks: its input is every row
    still alive or dropped by it; bytes are text (plus raw markup when ``count_raw``)."""
    stats: dict[str, BatchStats] = {}
    nbytes = pc.fill_null(pc.binary_length(table.column(S.TEXT)), 0)
    if count_raw:
        nbytes = pc.add(nbytes, pc.fill_null(pc.binary_length(table.column(S.RAW)), 0))
    for src, by, reason, nb in zip(table.column(S.SOURCE).to_pylist(), table.column(S.REJECT_STAGE).to_pylist(),
                                   table.column(S.REJECT_REASON).to_pylist(), nbytes.to_pylist()):
        if reason is not None and by != stage:
            continue
        st = stats.setdefault(src, BatchStats())
        st.docs_in += 1
        st.bytes_in += nb
        if reason is None:
            st.docs_out += 1
            st.bytes_out += nb
        else:
            st.dropped[reason] = st.dropped.get(reason, 0) + 1
    return stats


def _read_split(reader, split, collector, schema: pa.Schema):
    from datapipe.stats import record

    t0 = time.perf_counter()
    for table in reader.read(split):
        table = S.conform(table, schema)
        stats = _tally_marks(table, "read", count_raw=True)
        elapsed = time.perf_counter() - t0
        for st in stats.values():
            st.seconds = elapsed * st.docs_in / max(1, table.num_rows)
        record(collector, "read", stats)
        yield table
        t0 = time.perf_counter()


def _datasource(job: JobSpec, collector, schema: pa.Schema):
    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask

    entries = []
    for src in job.sources:
        reader = reader_for_source(job, src)
        for split in reader.plan(list(src.files), split_bytes=job.execution.split_bytes):
            entries.append((reader, split))

    class DocumentsDatasource(Datasource):
        def get_name(self) -> str:
            return "ReadDocuments"

        def estimate_inmemory_data_size(self):
            return sum(f.size for src in job.sources for f in src.files)

        def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
            tasks = []
            for reader, split in entries:
                size = split.num_bytes
                meta = BlockMetadata(num_rows=None, size_bytes=size, exec_stats=None,
                                     input_files=tuple(f.path for f in split.files))
                fn = functools.partial(_read_split, reader, split, collector, schema)
                tasks.append(ReadTask(fn, meta, schema=schema))
            return tasks

    return DocumentsDatasource(), len(entries)


# -- stages ------------------------------------------------------------------------

class SegmentUDF:
    """Runs consecutive batch stages in one process (fused), recording each stage's stats."""

    def __init__(self, stages: list[StageSpec], collector, schemas: list[pa.Schema]) -> None:
        self._stages = [st.make() for st in stages]
        self._names = [st.name for st in stages]
        for st in self._stages:
            st.ensure_setup()
        self._collector = collector
        self._schemas = schemas

    def __call__(self, batch: pa.Table) -> pa.Table:
        from datapipe.stats import record

        for name, stage, schema in zip(self._names, self._stages, self._schemas):
            rows = batch.num_rows
            batch, stats = stage.process(batch)
            if batch.num_rows != rows:
                raise JobError(f"stage {name!r} returned {batch.num_rows} rows for {rows}: stages mark drops, never remove rows")
            batch = S.conform(batch, schema)
            record(self._collector, name, stats)
        return batch


def _run_segment_task(batch: pa.Table, stages, collector, schemas) -> pa.Table:
    return SegmentUDF(stages, collector, schemas)(batch)


def _tally_global(batch: pa.Table, name: str, collector) -> pa.Table:
    """Stats for a global stage, from the marks it left."""
    from datapipe.stats import record

    record(collector, name, _tally_marks(batch, name, count_raw=False))
    return batch


def segments(job: JobSpec) -> list[list[StageSpec]]:
    """Consecutive batch stages grouped together; each global stage alone."""
    out: list[list[StageSpec]] = []
    for st in job.stages:
        if is_global(st) or not out or is_global(out[-1][0]):
            out.append([st])
        else:
            out[-1].append(st)
    return out


def describe_plan(job: JobSpec) -> list[str]:
    """Human-readable plan (what ``datapipe validate`` prints)."""
    lines = [f"job {job.name!r} ({job.path}) -> {job.output}", f"on_error: {job.on_error}", "sources:"]
    for src in job.sources:
        reader = reader_for_source(job, src)
        splits = reader.plan(list(src.files), split_bytes=job.execution.split_bytes)
        mb = sum(f.size for f in src.files) / 1e6
        lines.append(f"  {src.name:<10} {src.format:<8} {len(src.files):>5} files {mb:>9.2f} MB "
                     f"{len(splits):>5} read tasks  root={src.root}")
    lines.append("stages:")
    for i, seg in enumerate(segments(job)):
        if is_global(seg[0]):
            mode = "global (multi-pass)"
        elif any(st.cls.needs_actor() for st in seg):
            mode = "actor pool (fused)"
        else:
            mode = "tasks (fused)"
        for st in seg:
            adds = ", ".join(st.cls.adds) or "-"
            only = f"; only sources: {', '.join(sorted(st.sources))}" if st.sources is not None else ""
            lines.append(f"  [{i}] {st.name:<18} {mode:<20} reads: {', '.join(st.cls.reads) or '-'}; adds: {adds}{only}")
    lines.append("outputs: documents/ and rejects/ (Parquet, partitioned by source), report.json, "
                 "report.md, drops.png, manifest.json")
    return lines


# -- write -------------------------------------------------------------------------

def _add_keys(batch: pa.Table, partitions: int) -> pa.Table:
    ids = batch.column(S.ID).to_pylist()
    buckets = pa.array([xxhash.xxh3_64_intdigest(i.encode("utf-8", "surrogatepass")) % partitions for i in ids], pa.int32())
    kinds = pc.if_else(pc.is_null(batch.column(S.REJECT_REASON)), "documents", "rejects")
    return batch.append_column("_kind", kinds).append_column("_bucket", buckets)


def _write_group(group: pa.Table, staging: str, compression: str, storage: fs.StorageOptions) -> pa.Table:
    kind = group.column("_kind")[0].as_py()
    source = group.column(S.SOURCE)[0].as_py()
    bucket = group.column("_bucket")[0].as_py()
    keep = [c for c in group.column_names if c not in NOT_WRITTEN and c not in ("_kind", "_bucket")]
    table = group.select(keep)
    if kind == "documents":
        table = table.drop_columns([S.REJECT_STAGE, S.REJECT_REASON, S.REJECT_DETAIL])
    else:
        table = table.rename_columns([REJECT_RENAMES.get(c, c) for c in table.column_names])
    order = pc.sort_indices(table, sort_keys=[(S.ID, "ascending"), (S.ORIGIN, "ascending"), (S.TEXT, "ascending")])
    table = table.take(order).combine_chunks()
    rel = f"{kind}/source={source}/part-{bucket:05d}.parquet"
    buf = pa.BufferOutputStream()
    pq.write_table(table, buf, compression=None if compression == "none" else compression)
    data = buf.getvalue().to_pybytes()
    fs.write_bytes(fs.join(staging, rel), data, storage)
    digest = hashlib.sha256(data).hexdigest()
    counts: dict[str, int] = {}
    if kind == "rejects":
        for stage, reason in zip(table.column("reject_stage").to_pylist(), table.column("reject_reason").to_pylist()):
            key = f"{stage}\t{reason}"
            counts[key] = counts.get(key, 0) + 1
    text_bytes = S.text_bytes(table) if S.TEXT in table.column_names else 0
    num_tokens = int(pc.sum(table.column("num_tokens")).as_py() or 0) if "num_tokens" in table.column_names else 0
    return pa.table({
        "kind": [kind], "source": [source], "path": [rel], "rows": [table.num_rows],
        "file_bytes": [len(data)], "text_bytes": [text_bytes], "sha256": [digest],
        "reject_counts": [json.dumps(counts, sort_keys=True)],
        "num_tokens": [num_tokens],
    })


def write_outputs(ds, staging: str, job: JobSpec) -> list[dict[str, Any]]:
    keyed = ds.map_batches(_add_keys, fn_kwargs={"partitions": job.output_options.partitions},
                           batch_format="pyarrow")
    groups = 2 * len(job.sources) * job.output_options.partitions
    written = keyed.groupby(["_kind", S.SOURCE, "_bucket"], num_partitions=min(200, groups)).map_groups(
        _write_group, fn_kwargs={"staging": staging, "compression": job.output_options.compression,
                                 "storage": job.storage},
        batch_format="pyarrow")
    rows = written.take_all()
    return sorted(rows, key=lambda r: r["path"])


def write_token_shards(final, staging: Path, job: JobSpec, echo: Callable[[str], None]) -> dict[str, str]:
    """Megatron shards + a manifest per source from the kept documents' ``tokens``,
    ordered by a seeded hash of the id (never by scheduling)."""
    from datapipe.shards import write_shards
    from datapipe.tokenizer import tokenizer_info

    st = job.tokenize_stage()
    info = tokenizer_info(st.config.tokenizer, eos=getattr(st.config, "eos", None))
    info = dataclasses.replace(info, path=os.path.basename(os.path.normpath(str(info.path))))  # portable manifests
    lineage = {
        "job": job.name,
        "spec_hash": job.spec_hash(),
        "inputs": [{"source": s.name, "path": f.rel, "bytes": f.size} for s in job.sources for f in s.files],
    }
    opts = job.shards
    echo(f"writing token shards ({opts.shard_tokens} tokens per shard) ...")
    alive = final.select_columns([S.ID, S.SOURCE, "tokens", S.REJECT_REASON])
    return write_shards(alive, staging / "shards", tokenizer_info=info, shard_tokens=opts.shard_tokens,
                        seed=opts.seed, batch_rows=opts.batch_rows, lineage=lineage,
                        sources=[s.name for s in job.sources])


# -- accounting --------------------------------------------------------------------

def check_accounting(chain: list[str], stats: dict[str, dict[str, dict[str, Any]]], files: list[dict[str, Any]],
                     sources: list[str], applies: Callable[[str, str], bool] = lambda stage, src: True) -> list[str]:
    """Every problem found; empty when ``in == out + dropped`` holds everywhere and the
    written datasets agree with the stage counters."""
    problems = []
    written_docs: dict[str, int] = {}
    written_rejects: dict[tuple[str, str], int] = {}
    for f in files:
        if f["kind"] == "documents":
            written_docs[f["source"]] = written_docs.get(f["source"], 0) + f["rows"]
        else:
            for key, n in json.loads(f["reject_counts"]).items():
                stage = key.split("\t", 1)[0]
                written_rejects[(stage, f["source"])] = written_rejects.get((stage, f["source"]), 0) + n
    for src in sources:
        prev_out = None
        prev_name = None
        for name in chain:
            if not applies(name, src):
                if stats.get(name, {}).get(src):
                    problems.append(f"stage {name!r} counted documents of source {src!r}, which it does not apply to")
                continue
            st = BatchStats.from_dict(stats.get(name, {}).get(src, BatchStats().to_dict()))
            dropped = sum(st.dropped.values())
            if st.docs_in != st.docs_out + dropped:
                problems.append(f"stage {name!r}, source {src!r}: in ({st.docs_in}) != out ({st.docs_out}) + dropped ({dropped})")
            if prev_out is not None and st.docs_in != prev_out:
                problems.append(f"source {src!r}: stage {prev_name!r} let {prev_out} documents through but "
                                f"stage {name!r} received {st.docs_in}")
            if written_rejects.get((name, src), 0) != dropped:
                problems.append(f"stage {name!r}, source {src!r}: counted {dropped} drops but "
                                f"{written_rejects.get((name, src), 0)} rejects were written")
            prev_out, prev_name = st.docs_out, name
        if written_docs.get(src, 0) != (prev_out or 0):
            problems.append(f"source {src!r}: the last stage let {prev_out} documents through but "
                            f"{written_docs.get(src, 0)} were written")
    extra = {stage for stage, _ in written_rejects} - set(chain)
    if extra:
        problems.append(f"rejects written by unknown stage(s) {sorted(extra)}")
    return problems


# -- the job -----------------------------------------------------------------------

def run_job(job: JobSpec, *, force: bool = False, echo: Callable[[str], None] = print) -> RunResult:
    """Run ``job`` end to end. A completed run with the same job hash is reused unless
    ``force``; a folder holding something else is never overwritten without ``force``."""
    out = job.output
    job_hash = job.job_hash()
    done = read_status(out, job.storage)
    if done is not None and not force:
        if done.get("job_hash") == job_hash:
            echo(f"{out} is already complete for this job (job hash {job_hash}); nothing to do. "
                 "Use --force to run it again.")
            report_uri = fs.join(out, "report.json")
            report = json.loads(fs.read_text(report_uri, job.storage)) if fs.is_file(report_uri, job.storage) else {}
            return RunResult(output=str(out), skipped=True, report=report)
        raise SpecError(f"{out} holds the output of a different run (job hash {done.get('job_hash')} != {job_hash}: "
                        "the spec or its inputs changed); use --force to replace it, or choose another output")
    if done is None and not is_datapipe_output(out, job.storage):
        # never delete a folder datapipe did not write, even with --force
        raise SpecError(f"{out} exists and is not a datapipe output (no {SUCCESS}); move it away or choose another output")

    run = OutputRun.begin(out, storage=job.storage)
    for leftover in run.cleaned:
        echo(f"removed leftovers of an interrupted run: {leftover}")
    # driver-side files (report, shards, dedup work) go to a local folder: the staging
    # folder itself for a local output, else a temporary one uploaded before publishing
    scratch = Path(run.staging) if fs.is_local(out) else Path(tempfile.mkdtemp(prefix="datapipe-scratch-"))
    try:
        result = _run_staged(job, run, scratch, job_hash, echo)
    except BaseException:
        run.release()   # nothing committed; staging stays for inspection, the next run removes it
        raise
    if not fs.is_local(out):
        shutil.rmtree(scratch, ignore_errors=True)
    return result


def _run_staged(job: JobSpec, run: OutputRun, staging: Path, job_hash: str,
                echo: Callable[[str], None]) -> RunResult:
    from datapipe.report import build_report, write_report

    out = job.output
    (staging / "work").mkdir(parents=True)

    import ray

    from datapipe.stats import StatsCollector

    ensure_ray(job)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = bool(os.environ.get("DATAPIPE_PROGRESS", "1") != "0")
    # stages whose result depends on which documents share a batch need batches formed
    # in read order, not in the order Ray tasks happen to finish
    ctx.execution_options.preserve_order = any(st.make().needs_stable_batches() for st in job.stages)
    started = time.time()
    collector = StatsCollector.remote()
    echo("\n".join(describe_plan(job)))

    schema0 = job_schema(job, 0)
    datasource, n_tasks = _datasource(job, collector, schema0)
    ds = ray.data.read_datasource(datasource, override_num_blocks=max(1, n_tasks))
    chain = ["read"]
    stage_reports: dict[str, Any] = {}
    global_seconds: dict[str, float] = {}
    cpus = _cluster_cpus()
    try:
        for seg in segments(job):
            if is_global(seg[0]):
                st = seg[0]
                ds = ds.materialize()
                gctx = StageContext(work_dir=str(staging / "work" / st.name), sources=tuple(s.name for s in job.sources),
                                    stage_index=st.index)
                os.makedirs(gctx.work_dir, exist_ok=True)
                t0 = time.perf_counter()
                stage = st.make()
                ds = stage.run(ds, gctx).materialize()
                global_seconds[st.name] = time.perf_counter() - t0
                ds = ds.map_batches(_tally_global, fn_kwargs={"name": st.name, "collector": collector},
                                    batch_format="pyarrow").materialize()
                stage_reports[st.name] = gctx.report
                chain.append(st.name)
                continue
            stages = list(seg)
            schemas = [job_schema(job, st.index + 1) for st in seg]
            if any(st.cls.needs_actor() for st in seg):
                size = job.execution.actors_per_stage or max(1, cpus - 1)
                ds = ds.map_batches(SegmentUDF, fn_constructor_kwargs={"stages": stages, "collector": collector, "schemas": schemas},
                                    batch_format="pyarrow", batch_size=job.execution.batch_rows, concurrency=size,
                                    num_cpus=1)
            else:
                ds = ds.map_batches(_run_segment_task, fn_kwargs={"stages": stages, "collector": collector, "schemas": schemas},
                                    batch_format="pyarrow", batch_size=job.execution.batch_rows)
            chain.extend(st.name for st in seg)
        final = ds.materialize()
        files = write_outputs(final, run.staging, job)
        shard_manifests = write_token_shards(final, staging, job, echo) if job.shards is not None else {}
    except Exception as e:  # unwrap Ray's task errors to the user-facing cause
        cause = _user_error(e)
        if cause is not None:
            raise cause from None
        raise
    wall = time.time() - started

    stats = ray.get(collector.snapshot.remote())
    by_name = {st.name: st for st in job.stages}
    problems = check_accounting(chain, stats, files, [s.name for s in job.sources],
                                lambda stage, src: stage == "read" or by_name[stage].applies_to(src))
    shard_totals = {}
    if job.shards is not None:
        from datapipe.shards import conservation_problems

        expected: dict[str, tuple[int, int]] = {}
        for f in files:
            if f["kind"] == "documents":
                docs, toks = expected.get(f["source"], (0, 0))
                expected[f["source"]] = (docs + f["rows"], toks + f["num_tokens"])
        problems += conservation_problems(expected, shard_manifests)
        for src, mpath in sorted(shard_manifests.items()):
            m = json.loads(Path(mpath).read_text())
            shard_totals[src] = {**m["totals"], "manifest": os.path.relpath(mpath, staging),
                                 "sha256": hashlib.sha256(Path(mpath).read_bytes()).hexdigest()}
    report = build_report(job, chain, stats, files, problems=problems, wall_seconds=wall, started=started,
                          global_seconds=global_seconds, stage_reports=stage_reports, job_hash=job_hash,
                          shards=shard_totals)
    write_report(report, staging)
    if problems:
        raise JobError("accounting check failed, output not committed (see "
                       f"{staging / 'report.md'}):\n  " + "\n  ".join(problems))
    manifest = {
        "job": job.name,
        "spec_hash": job.spec_hash(),
        "spec": job.canonical(),
        "files": [{k: f[k] for k in ("path", "kind", "source", "rows", "file_bytes", "sha256")} for f in files],
        "totals": report["totals"],
        "shards": shard_totals,
    }
    (staging / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(staging / "work", ignore_errors=True)
    if not fs.is_local(out):
        fs.upload_tree(str(staging), run.staging, job.storage)
    run.publish({"job_hash": job_hash, "spec_hash": job.spec_hash(),
                 "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    echo(report["summary_text"])
    echo(f"output committed: {out}")
    return RunResult(output=str(out), skipped=False, report=report)


def _user_error(exc: BaseException) -> BaseException | None:
    """Find a datapipe error inside Ray's wrapped task errors."""
    seen = set()
    stack = [exc]
    while stack:
        e = stack.pop()
        if id(e) in seen or e is None:
            continue
        seen.add(id(e))
        if isinstance(e, (CorruptInputError, SpecError, JobError)):
            return e
        cause = getattr(e, "cause", None)
        if isinstance(cause, BaseException):
            stack.append(cause)
        stack.extend([e.__cause__, e.__context__])
        for arg in getattr(e, "args", ()):
            if isinstance(arg, BaseException):
                stack.append(arg)
    return None
