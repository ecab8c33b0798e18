"""Runs a job: text moves once, stats travel as data, splits resume.

The job's chain is cut at its global stages into phases (:mod:`datapipe.splitwork`). A
phase is one Ray Data execution over the read splits' descriptors
(``ray.data.from_items``): one task (or one call of a pooled actor, when a stage of the
phase has ``setup()``) reads or reloads its split, runs the fused batch stages and writes
that split's files itself. Nothing shuffles, sorts or materialises text; only small
records come back to the driver: files written (rows, bytes, sha256) and per-stage,
per-source stats, which the driver adds up.

Between phases, a global stage's :meth:`~datapipe.stage.GlobalStage.decide` runs once on
the driver over the splits' compact side files; the next phase applies its decisions
where the text is.

``output`` is a local folder or a URI (``s3://...``): every file goes through
:mod:`datapipe.fs`, and the tasks write their split's files straight to the store.
The run holds the output's lock (:class:`datapipe.commit.OutputRun`) and writes
everything under ``<output>.staging-<job hash[:16]>``; each split writes a done-record
last. A restart of the same job finds that staging folder and reuses every split whose
done-record and files verify; staging folders of other jobs are deleted; ``--force``
starts clean. After the accounting check (``in == out + dropped`` per stage and source,
written files agreeing) the staging folder is published to ``<output>`` with
``_SUCCESS`` written last.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import pickle
import shutil
import signal
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator

import pyarrow as pa

from datapipe import commit, fs
from datapipe import stats as ST
from datapipe.errors import CorruptInputError, JobError, SpecError
from datapipe.spec import JobSpec, reader_for_source
from datapipe.splitwork import (Phase, PhaseEnv, SplitRef, SplitRunner, phases, sha256_of,
                                verify_done)
from datapipe.stage import BatchStats, StageContext

log = logging.getLogger(__name__)

SUCCESS = commit.SUCCESS
JOB_MARK = "_JOB"
STAGING_KEY_CHARS = 16   # of the job hash: names the staging folder a restart resumes


@dataclasses.dataclass
class RunResult:
    output: str
    skipped: bool
    report: dict[str, Any]


# -- Ray ---------------------------------------------------------------------------

def ensure_ray(job: JobSpec, *, verbose: bool | None = None) -> bool:
    """Join the cluster named by ``RAY_ADDRESS``, or start an embedded local Ray.
    True when this call started (or joined) Ray, so the caller may shut it down. Workers'
    output reaches the console only when ``verbose`` (default: debug logging is on, i.e.
    ``datapipe -v``)."""
    import ray

    from datapipe.progress import ray_init_kwargs

    if ray.is_initialized():
        return False
    if verbose is None:
        verbose = logging.getLogger().isEnabledFor(logging.DEBUG)
    if not verbose:  # the driver's C++ core worker logs to stderr too; its log file keeps everything
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_DATA_USAGE_DISABLED", "1")
    if os.environ.get("RAY_ADDRESS"):
        log.info("joining Ray cluster at %s", os.environ["RAY_ADDRESS"])
        ray.init(address=os.environ["RAY_ADDRESS"], **ray_init_kwargs(verbose))
    else:
        log.info("starting an embedded local Ray (num_cpus=%s)", job.execution.num_cpus or "all")
        ray.init(num_cpus=job.execution.num_cpus, include_dashboard=False, **ray_init_kwargs(verbose))
    return True


def _cluster_cpus() -> int:
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


# -- plan --------------------------------------------------------------------------

def split_refs(job: JobSpec) -> list[SplitRef]:
    """Every source's read splits, numbered in plan order (names depend on this only)."""
    refs = []
    for src in job.sources:
        reader = reader_for_source(job, src)
        for i, split in enumerate(reader.plan(list(src.files), split_bytes=job.execution.split_bytes)):
            refs.append(SplitRef(source=src.name, index=i, split=split))
    return refs


def _compute(job: JobSpec, phase: Phase, cpus: int | None) -> str:
    if phase.needs_actor():
        n = job.execution.actors_per_stage or cpus
        return (f"{n} actor(s)" if n else "one actor per CPU") + ", 1 CPU each, read fused in"
    return "tasks, 1 CPU each, one per split"


def _plan_text(job: JobSpec, cpus: int, verbose: bool) -> str:
    """What a run prints before it starts: the whole plan with ``-v`` (as ``validate``
    prints it), otherwise one line with the split count and each phase's compute."""
    if verbose:
        return "\n".join(describe_plan(job, cpus))
    compute = "; ".join(f"[{ph.index}] {_compute(job, ph, cpus).split(',')[0]}" for ph in phases(job))
    return (f"job {job.name!r} ({job.path}) -> {job.output}: {len(job.sources)} sources, "
            f"{len(split_refs(job))} read splits; phases {compute} (`datapipe validate` shows the plan)")


def describe_plan(job: JobSpec, cpus: int | None = None) -> list[str]:
    """Human-readable plan (what ``datapipe validate`` prints): sources and splits, and
    for every phase its stages and the compute it gets (``cpus``: the cluster's, when
    known)."""
    lines = [f"job {job.name!r} ({job.path}) -> {job.output}", f"on_error: {job.on_error}", "sources:"]
    for src in job.sources:
        reader = reader_for_source(job, src)
        splits = reader.plan(list(src.files), split_bytes=job.execution.split_bytes)
        mb = sum(f.size for f in src.files) / 1e6
        lines.append(f"  {src.name:<10} {src.format:<8} {len(src.files):>5} files {mb:>9.2f} MB "
                     f"{len(splits):>5} splits  root={src.root}")
    lines.append("phases (each one pass over the splits; text never leaves its split's task):")
    for ph in phases(job):
        head = f"  [{ph.index}] {_compute(job, ph, cpus)}"
        if ph.before is not None:
            head += f"; applies {ph.before.name}'s decisions"
        lines.append(head)
        for st in ph.stages:
            adds = ", ".join(st.cls.adds) or "-"
            only = f"; only sources: {', '.join(sorted(st.sources))}" if st.sources is not None else ""
            lines.append(f"      {st.name:<18} {st.cls.kind:<14} reads: {', '.join(st.cls.reads) or '-'}; adds: {adds}{only}")
        if ph.after is not None:
            lines.append(f"      -> {ph.after.name}: side data per split, decide() once on the driver")
    fmt = job.output_options.format
    lines.append(f"outputs: documents/<source>/part-<split> and rejects/<source>/part-<split> ({fmt}), "
                 + ("shards/<source>/ (per split) + manifest, " if job.shards is not None else "")
                 + "report.json, report.md, drops.png, manifest.json")
    lines.append(f"retries: task {job.execution.max_retries}, actor restarts {job.execution.max_restarts}; "
                 "no block is ever skipped (max_errored_blocks = 0)")
    return lines


# -- one phase ---------------------------------------------------------------------

def _run_split_task(batch: pa.Table, env: PhaseEnv) -> pa.Table:
    return SplitRunner(env)(batch)


def _run_phase(env: PhaseEnv, refs: list[SplitRef], *, resume: bool, on_done: Callable[[dict], None]) -> tuple[list[dict], int]:
    """Records of every split for ``env.phase`` (reused or computed), in ``refs`` order,
    and how many were reused."""
    import ray

    done: dict[str, dict] = {}
    if resume:
        for ref in refs:
            rec = verify_done(env.done_path(ref), env.staging, env.storage)
            if rec is not None and rec.get("input") == env.input_digest:
                done[ref.key] = rec
    reused = len(done)
    todo = [ref for ref in refs if ref.key not in done]
    if todo:
        ex = env.job.execution
        items = [{"ref": pickle.dumps(ref)} for ref in todo]
        ds = ray.data.from_items(items, override_num_blocks=len(items))
        common = dict(batch_size=1, batch_format="pyarrow", num_cpus=1)
        # Ray 2.60 takes retry counts only through the deprecated ``ray_remote_args``
        # (there is no named parameter for them yet); the retries are deliberate
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
            if env.phase.needs_actor():
                size = min(ex.actors_per_stage or _cluster_cpus(), len(todo))
                ds = ds.map_batches(SplitRunner, fn_constructor_kwargs={"env": env},
                                    compute=ray.data.ActorPoolStrategy(size=size),
                                    max_restarts=ex.max_restarts, max_task_retries=ex.max_retries, **common)
            else:
                ds = ds.map_batches(_run_split_task, fn_kwargs={"env": env}, max_retries=ex.max_retries, **common)
        for row in ds.iter_rows():
            if row["error"] is not None:
                raise pickle.loads(row["error"])
            rec = json.loads(row["record"])
            done[rec["key"]] = rec
            on_done(rec)
    return [done[ref.key] for ref in refs], reused


# -- global stages -----------------------------------------------------------------

def _decide(phase: Phase, side: list[str], env: PhaseEnv, job: JobSpec) -> tuple[str | None, dict[str, Any]]:
    st = phase.after
    assert st is not None
    ctx = StageContext(work_dir=env.work(st.name, "decide"), sources=tuple(s.name for s in job.sources),
                       stage_index=st.index)
    fs.makedirs(ctx.work_dir, env.storage)
    if not side:
        return None, ctx.report
    return st.make().decide(side, ctx), ctx.report


def _digest(uri: str | None, storage: fs.StorageOptions | None) -> str:
    """Identifies a global stage's decisions, so a restarted job reuses the next phase's
    splits only when the decisions are the same bytes."""
    if uri is None:
        return "none"
    files = [uri] if fs.is_file(uri, storage) else [f for f in fs.list_files(uri, storage) if f.endswith(".parquet")]
    h = hashlib.sha256()
    for f in files:
        h.update(sha256_of(f, storage).encode())
    return h.hexdigest()


# -- shards ------------------------------------------------------------------------

def _shard_env(job: JobSpec):
    """(TokenizerInfo, ShardOptions, lineage) for the tasks, with the tokenizer file
    copied beside the shards so ``shards inspect`` decodes without being told."""
    from datapipe.tokenizer import tokenizer_info

    st = job.tokenize_stage()
    info = tokenizer_info(st.config.tokenizer, eos=getattr(st.config, "eos", None))
    if os.path.isfile(str(info.path)):
        info = dataclasses.replace(info, path="tokenizer.json")
    else:
        info = dataclasses.replace(info, path=os.path.basename(os.path.normpath(str(info.path))))
    lineage = {
        "job": job.name,
        "spec_hash": job.spec_hash(),
        "inputs": [{"source": s.name, "path": f.rel, "bytes": f.size} for s in job.sources for f in s.files],
    }
    return info, job.shards, lineage


def merge_shard_manifests(job: JobSpec, staging: str, shard_env, records: list[dict]) -> dict[str, str]:
    """One manifest per source from the splits' manifests, splits in plan order
    (O(shards) work on the driver). Every source gets one, empty when nothing is kept."""
    from datapipe.megatron import MANIFEST_FORMAT as FORMAT, MANIFEST_NAME as MANIFEST, MANIFEST_VERSION as VERSION, shard_dtype

    info, opts, lineage = shard_env
    tokenizer_src = job.tokenize_stage().config.tokenizer
    out: dict[str, str] = {}
    for src in job.sources:
        shards = []
        docs = 0
        for rec in records:
            if rec["key"].split("/")[0] != src.name or not rec.get("shards"):
                continue
            m = json.loads(fs.read_text(rec["shards"]["manifest"], job.storage))
            part = rec["key"].split("/")[1]
            shards.extend({**r, "split": part} for r in m["shards"])
            docs += m["totals"]["documents"]
        folder = fs.join(staging, "shards", src.name)
        fs.makedirs(folder, job.storage)
        if info.path == "tokenizer.json":
            fs.copy_file(tokenizer_src, fs.join(folder, "tokenizer.json"), job.storage)
        manifest = {
            "format": FORMAT, "version": VERSION, "source": src.name, "dtype": shard_dtype(info.vocab_size),
            "shard_tokens": opts.shard_tokens, "span_documents": opts.span_documents, "tokenizer": info.to_manifest(),
            "order": {"key": "read splits in plan order; within a split xxh3_64(id utf-8, seed), then id",
                      "seed": opts.seed},
            "shards": shards,
            "totals": {"tokens": sum(r["tokens"] for r in shards), "documents": docs, "shards": len(shards)},
            "lineage": lineage,
        }
        path = fs.join(folder, MANIFEST)
        fs.write_text(path, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", job.storage)
        out[src.name] = path
    return out


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

def _open_staging(job: JobSpec, job_hash: str, force: bool, echo: Callable[[str], None]) -> tuple[commit.OutputRun, bool]:
    """Take the output's lock and prepare the staging folder, named by the job hash so
    that a restart finds it. True when it holds an interrupted run of this same job to
    resume; other jobs' staging folders (and, with ``force``, this one) are deleted."""
    storage = job.storage
    run = commit.OutputRun.begin(job.output, storage=storage, staging_key=job_hash[:STAGING_KEY_CHARS],
                                 keep_staging=not force)
    try:
        for gone in run.cleaned:
            echo(f"removing leftovers of an interrupted run: {gone}")
        mark = fs.join(run.staging, JOB_MARK)
        if run.resumable:
            if fs.is_file(mark, storage) and fs.read_text(mark, storage).strip() == job_hash:
                echo(f"resuming the interrupted run in {run.staging} (same job hash {job_hash})")
                return run, True
            echo(f"removing leftovers of an interrupted run: {run.staging}")
            fs.delete_tree(run.staging, storage)
        fs.makedirs(fs.join(run.staging, "work"), storage)
        fs.write_text(mark, job_hash + "\n", storage)
    except BaseException:
        run.release()
        raise
    return run, False


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """SIGTERM behaves like Ctrl-C (KeyboardInterrupt) while the job runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum, frame):
        raise KeyboardInterrupt("SIGTERM")

    old = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _progress(chain: list[str], echo: Callable[[str], None]):
    from datapipe.progress import Progress

    return Progress(chain, echo)


def run_job(job: JobSpec, *, force: bool = False, echo: Callable[[str], None] = print) -> RunResult:
    """Run ``job`` end to end. A completed run with the same job hash is reused unless
    ``force``; a folder holding something else is never overwritten without ``force``;
    an interrupted run of the same job resumes from its finished splits."""
    out, storage = job.output, job.storage
    job_hash = job.job_hash()
    done = commit.read_status(out, storage)
    if done is not None and not force:
        if done.get("job_hash") == job_hash:
            echo(f"{out} is already complete for this job (job hash {job_hash}); nothing to do. "
                 "Use --force to run it again.")
            report_uri = fs.join(out, "report.json")
            report = json.loads(fs.read_text(report_uri, storage)) if fs.is_file(report_uri, storage) else {}
            return RunResult(output=out, skipped=True, report=report)
        raise SpecError(f"{out} holds the output of a different run (job hash {done.get('job_hash')} != {job_hash}: "
                        "the spec or its inputs changed); use --force to replace it, or choose another output")
    if done is None and not commit.is_datapipe_output(out, storage):
        # never delete a folder datapipe did not write, even with --force
        raise SpecError(f"{out} exists and is not a datapipe output (no {SUCCESS}); move it away or choose another output")

    run, resume = _open_staging(job, job_hash, force, echo)
    staging = run.staging
    records = Path(staging) if fs.is_local(staging) else Path(tempfile.mkdtemp(prefix="datapipe-run-"))
    from datapipe.progress import quiet_ray, restore_ray_logging

    verbose = logging.getLogger().isEnabledFor(logging.DEBUG)
    ray_log, started_ray = None, False
    try:
        started_ray = ensure_ray(job, verbose=verbose)
        ray_log = quiet_ray(records / "logs", verbose=verbose)   # Ray's chatter to logs/ray.log
        import ray

        ctx = ray.data.DataContext.get_current()
        ctx.max_errored_blocks = 0  # a split that keeps failing fails the job: no data is ever skipped
        echo(_plan_text(job, _cluster_cpus(), verbose))
        with _interruptible():
            return _execute(job, run, records, job_hash, resume=resume, echo=echo)
    except KeyboardInterrupt:
        echo(f"interrupted: finished splits are kept in {staging}. Run the same command again to resume "
             "from them (same spec and inputs), or add --force to start clean.")
        if started_ray:
            import ray

            ray.shutdown()
        raise
    except Exception as e:  # unwrap Ray's task errors to the user-facing cause
        cause = _user_error(e)
        if cause is not None:
            raise cause from None
        raise
    finally:
        run.release()     # no-op after a publish; the staging folder stays for a resume
        restore_ray_logging(ray_log)
        if records != Path(staging):
            shutil.rmtree(records, ignore_errors=True)


def _execute(job: JobSpec, run: commit.OutputRun, records_dir: Path, job_hash: str, *, resume: bool,
             echo: Callable[[str], None]) -> RunResult:
    """The phases, the checks, the report; then publishes ``run``. ``records_dir``: the
    local folder of the report and Ray's log (the staging folder itself when local;
    uploaded into it when remote)."""
    from datapipe.report import build_report, write_report

    staging, storage = run.staging, job.storage
    started = time.time()
    refs = split_refs(job)
    shard_env = _shard_env(job) if job.shards is not None else None
    chain = ["read"] + [st.name for st in job.stages]
    progress = _progress(chain, echo)
    records: list[dict] = []
    reused: list[int] = []
    global_seconds: dict[str, float] = {}
    stage_reports: dict[str, Any] = {}
    decisions, digest = None, ""
    for ph in phases(job):
        env = PhaseEnv(job=job, phase=ph, staging=staging, decisions=decisions, input_digest=digest,
                       shards=shard_env if ph.after is None else None, storage=storage)
        recs, n_reused = _run_phase(env, refs, resume=resume, on_done=lambda r: progress.split_done(r["stats"]))
        records.extend(recs)
        reused.append(n_reused)
        if ph.after is not None:
            t0 = time.perf_counter()
            decisions, stage_reports[ph.after.name] = _decide(ph, sorted(r["side"] for r in recs if r["side"]), env, job)
            global_seconds[ph.after.name] = time.perf_counter() - t0
            digest = _digest(decisions, storage)
    progress.close()
    last = [r for r in records if r["phase"] == len(reused) - 1]
    files = sorted((f for r in last for f in r["files"]), key=lambda f: f["path"])
    stats = ST.merge_dicts(r["stats"] for r in records)
    for name, seconds in global_seconds.items():  # decide() time on the driver
        for st in stats.get(name, {}).values():
            st["seconds"] += seconds * st["docs_in"] / max(1, sum(s["docs_in"] for s in stats[name].values()))
    _sweep_tmp(staging)
    wall = time.time() - started

    by_name = {st.name: st for st in job.stages}
    problems = check_accounting(chain, stats, files, [s.name for s in job.sources],
                                lambda stage, src: stage == "read" or by_name[stage].applies_to(src))
    shard_totals = _shard_totals(job, staging, shard_env, last, files, problems) if shard_env is not None else {}
    splits = {"total": len(refs), "phases": len(reused), "reused": reused[0] if reused else 0,
              "reused_per_phase": reused}
    report = build_report(job, chain, stats, files, problems=problems, wall_seconds=wall, started=started,
                          global_seconds=global_seconds, stage_reports=stage_reports, job_hash=job_hash,
                          shards=shard_totals, splits=splits)
    from datapipe.inspect_rejects import drop_examples, examples_markdown

    # report.json/report.md only, not the console (examples are read from a local staging folder only)
    report["drop_examples"] = drop_examples(staging) if fs.is_local(staging) else {}
    write_report(report, records_dir)
    with open(records_dir / "report.md", "a", encoding="utf-8") as fh:
        fh.write(examples_markdown(report["drop_examples"]))
    if records_dir != Path(staging):
        fs.upload_tree(str(records_dir), staging, storage)
    if problems:
        raise JobError("accounting check failed, output not committed (see "
                       f"{fs.join(staging, 'report.md')}):\n  " + "\n  ".join(problems))
    manifest = {
        "job": job.name,
        "spec_hash": job.spec_hash(),
        "spec": job.canonical(),
        "files": [{k: f[k] for k in ("path", "kind", "source", "rows", "file_bytes", "sha256")} for f in files],
        "totals": report["totals"],
        "shards": shard_totals,
    }
    fs.write_text(fs.join(staging, commit.MANIFEST), json.dumps(manifest, indent=2, sort_keys=True) + "\n", storage)
    fs.delete_tree(fs.join(staging, "work"), storage)
    fs.delete_file(fs.join(staging, JOB_MARK), storage)
    run.publish({"job_hash": job_hash, "spec_hash": job.spec_hash(),
                 "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    echo(report["console_text"])
    echo(f"output committed: {job.output}")
    return RunResult(output=job.output, skipped=False, report=report)


def _shard_totals(job: JobSpec, staging: str, shard_env, records: list[dict], files: list[dict],
                  problems: list[str]) -> dict[str, Any]:
    from datapipe.shards import conservation_problems

    manifests = merge_shard_manifests(job, staging, shard_env, records)
    expected: dict[str, tuple[int, int]] = {}
    for f in files:
        if f["kind"] == "documents":
            docs, toks = expected.get(f["source"], (0, 0))
            expected[f["source"]] = (docs + f["rows"], toks + f["num_tokens"])
    problems += conservation_problems(expected, {src: fs.local_copy(m, job.storage) for src, m in manifests.items()})
    totals = {}
    for src, mpath in sorted(manifests.items()):
        m = json.loads(fs.read_text(mpath, job.storage))
        totals[src] = {**m["totals"], "manifest": fs.relative(mpath, staging), "sha256": sha256_of(mpath, job.storage)}
    return totals


def _sweep_tmp(staging: str) -> None:
    """Remove temporary files left by killed attempts (their split was redone). Only
    local files have temporary names; an unfinished upload never becomes an object."""
    if not fs.is_local(staging):
        return
    for kind in ("documents", "rejects", "shards"):
        folder = Path(fs.local_path(staging)) / kind
        for p in folder.rglob("*.tmp") if folder.exists() else ():
            p.unlink(missing_ok=True)


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
