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

Everything is written under ``<output>.staging`` (keyed by the job hash); each split
writes a done-record last. A restart of the same job reuses every split whose
done-record and files verify; ``--force`` starts clean. After the accounting check
(``in == out + dropped`` per stage and source, written files agreeing) the staging
folder is committed to ``<output>``.
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
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pyarrow as pa

from datapipe import stats as ST
from datapipe.errors import CorruptInputError, JobError, SpecError
from datapipe.spec import JobSpec, reader_for_source
from datapipe.splitwork import (Phase, PhaseEnv, SplitRef, SplitRunner, phases, sha256_of,
                                verify_done)
from datapipe.stage import BatchStats, StageContext

log = logging.getLogger(__name__)

SUCCESS = "_SUCCESS"
JOB_MARK = "_JOB"


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
            rec = verify_done(env.done_path(ref), env.staging)
            if rec is not None and rec.get("input") == env.input_digest:
                done[ref.key] = rec
    reused = len(done)
    todo = [ref for ref in refs if ref.key not in done]
    if todo:
        ex = env.job.execution
        items = [{"ref": pickle.dumps(ref)} for ref in todo]
        ds = ray.data.from_items(items, override_num_blocks=len(items))
        common = dict(batch_size=1, batch_format="pyarrow", num_cpus=1)
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
    os.makedirs(ctx.work_dir, exist_ok=True)
    if not side:
        return None, ctx.report
    return st.make().decide(side, ctx), ctx.report


def _digest(uri: str | None) -> str:
    """Identifies a global stage's decisions, so a restarted job reuses the next phase's
    splits only when the decisions are the same bytes."""
    if uri is None:
        return "none"
    files = [uri] if os.path.isfile(uri) else sorted(str(p) for p in Path(uri).rglob("*.parquet"))
    h = hashlib.sha256()
    for f in files:
        h.update(sha256_of(f).encode())
    return h.hexdigest()


# -- shards ------------------------------------------------------------------------

def _shard_env(job: JobSpec, staging: Path):
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


def merge_shard_manifests(job: JobSpec, staging: Path, shard_env, records: list[dict]) -> dict[str, str]:
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
            m = json.loads(Path(rec["shards"]["manifest"]).read_text())
            part = rec["key"].split("/")[1]
            shards.extend({**r, "split": part} for r in m["shards"])
            docs += m["totals"]["documents"]
        folder = staging / "shards" / src.name
        folder.mkdir(parents=True, exist_ok=True)
        if info.path == "tokenizer.json":
            shutil.copyfile(tokenizer_src, folder / "tokenizer.json")
        manifest = {
            "format": FORMAT, "version": VERSION, "source": src.name, "dtype": shard_dtype(info.vocab_size),
            "shard_tokens": opts.shard_tokens, "span_documents": opts.span_documents, "tokenizer": info.to_manifest(),
            "order": {"key": "read splits in plan order; within a split xxh3_64(id utf-8, seed), then id",
                      "seed": opts.seed},
            "shards": shards,
            "totals": {"tokens": sum(r["tokens"] for r in shards), "documents": docs, "shards": len(shards)},
            "lineage": lineage,
        }
        path = folder / MANIFEST
        path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        out[src.name] = str(path)
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

def _status(output: Path) -> dict[str, Any] | None:
    marker = output / SUCCESS
    if marker.is_file():
        try:
            return json.loads(marker.read_text())
        except ValueError:
            return {}
    return None


def _open_staging(staging: Path, job_hash: str, force: bool, echo: Callable[[str], None]) -> bool:
    """Prepare ``staging``; True when it holds an interrupted run of this same job to resume."""
    mark = staging / JOB_MARK
    if staging.exists():
        same = mark.is_file() and mark.read_text().strip() == job_hash
        if same and not force:
            echo(f"resuming the interrupted run in {staging} (same job hash {job_hash})")
            return True
        echo(f"removing leftovers of an interrupted run: {staging}")
        shutil.rmtree(staging)
    (staging / "work").mkdir(parents=True)
    mark.write_text(job_hash + "\n")
    return False


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
    try:
        from datapipe.progress import Progress
    except ImportError:
        return _SplitCounter(echo)
    return Progress(chain, echo)


class _SplitCounter:
    """Fallback progress: one line at most every 10 s with splits done."""

    def __init__(self, echo: Callable[[str], None]) -> None:
        self.echo, self.n, self.last = echo, 0, time.time()

    def split_done(self, stats: dict) -> None:
        self.n += 1
        if time.time() - self.last >= 10:
            self.echo(f"{self.n} split(s) done")
            self.last = time.time()

    def close(self) -> None:
        pass


def run_job(job: JobSpec, *, force: bool = False, echo: Callable[[str], None] = print) -> RunResult:
    """Run ``job`` end to end. A completed run with the same job hash is reused unless
    ``force``; a folder holding something else is never overwritten without ``force``;
    an interrupted run of the same job resumes from its finished splits."""
    out = Path(job.output)
    job_hash = job.job_hash()
    done = _status(out)
    if done is not None and not force:
        if done.get("job_hash") == job_hash:
            echo(f"{out} is already complete for this job (job hash {job_hash}); nothing to do. "
                 "Use --force to run it again.")
            report = json.loads((out / "report.json").read_text()) if (out / "report.json").is_file() else {}
            return RunResult(output=str(out), skipped=True, report=report)
        raise SpecError(f"{out} holds the output of a different run (job hash {done.get('job_hash')} != {job_hash}: "
                        "the spec or its inputs changed); use --force to replace it, or choose another output")
    if done is None and out.exists() and any(out.iterdir()):
        # never delete a folder datapipe did not write, even with --force
        raise SpecError(f"{out} exists and is not a datapipe output (no {SUCCESS}); move it away or choose another output")

    staging = out.with_name(out.name + ".staging")
    resume = _open_staging(staging, job_hash, force, echo)
    from datapipe.progress import quiet_ray, restore_ray_logging

    verbose = logging.getLogger().isEnabledFor(logging.DEBUG)
    started_ray = ensure_ray(job, verbose=verbose)
    ray_log = quiet_ray(staging / "logs", verbose=verbose)   # Ray's chatter to logs/ray.log
    import ray

    ctx = ray.data.DataContext.get_current()
    ctx.max_errored_blocks = 0  # a split that keeps failing fails the job: no data is ever skipped
    echo("\n".join(describe_plan(job, _cluster_cpus())))
    try:
        with _interruptible():
            return _execute(job, staging, job_hash, resume=resume, echo=echo)
    except KeyboardInterrupt:
        echo(f"interrupted: finished splits are kept in {staging}. Run the same command again to resume "
             "from them (same spec and inputs), or add --force to start clean.")
        if started_ray:
            ray.shutdown()
        raise
    except Exception as e:  # unwrap Ray's task errors to the user-facing cause
        cause = _user_error(e)
        if cause is not None:
            raise cause from None
        raise
    finally:
        restore_ray_logging(ray_log)


def _execute(job: JobSpec, staging: Path, job_hash: str, *, resume: bool, echo: Callable[[str], None]) -> RunResult:
    from datapipe.report import build_report, write_report

    started = time.time()
    refs = split_refs(job)
    shard_env = _shard_env(job, staging) if job.shards is not None else None
    chain = ["read"] + [st.name for st in job.stages]
    progress = _progress(chain, echo)
    records: list[dict] = []
    reused: list[int] = []
    global_seconds: dict[str, float] = {}
    stage_reports: dict[str, Any] = {}
    decisions, digest = None, ""
    for ph in phases(job):
        env = PhaseEnv(job=job, phase=ph, staging=str(staging), decisions=decisions, input_digest=digest,
                       shards=shard_env if ph.after is None else None)
        recs, n_reused = _run_phase(env, refs, resume=resume, on_done=lambda r: progress.split_done(r["stats"]))
        records.extend(recs)
        reused.append(n_reused)
        if ph.after is not None:
            t0 = time.perf_counter()
            decisions, stage_reports[ph.after.name] = _decide(ph, sorted(r["side"] for r in recs if r["side"]), env, job)
            global_seconds[ph.after.name] = time.perf_counter() - t0
            digest = _digest(decisions)
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

    report["drop_examples"] = drop_examples(staging)        # report.json/report.md only, not the console
    write_report(report, staging)
    with open(staging / "report.md", "a", encoding="utf-8") as fh:
        fh.write(examples_markdown(report["drop_examples"]))
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
    (staging / JOB_MARK).unlink()
    (staging / SUCCESS).write_text(json.dumps({"job_hash": job_hash, "spec_hash": job.spec_hash(),
                                               "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}) + "\n")
    out = Path(job.output)
    _commit(staging, out)
    echo(report["summary_text"])
    echo(f"output committed: {out}")
    return RunResult(output=str(out), skipped=False, report=report)


def _shard_totals(job: JobSpec, staging: Path, shard_env, records: list[dict], files: list[dict],
                  problems: list[str]) -> dict[str, Any]:
    from datapipe.shards import conservation_problems

    manifests = merge_shard_manifests(job, staging, shard_env, records)
    expected: dict[str, tuple[int, int]] = {}
    for f in files:
        if f["kind"] == "documents":
            docs, toks = expected.get(f["source"], (0, 0))
            expected[f["source"]] = (docs + f["rows"], toks + f["num_tokens"])
    problems += conservation_problems(expected, manifests)
    totals = {}
    for src, mpath in sorted(manifests.items()):
        m = json.loads(Path(mpath).read_text())
        totals[src] = {**m["totals"], "manifest": os.path.relpath(mpath, staging), "sha256": sha256_of(mpath)}
    return totals


def _sweep_tmp(staging: Path) -> None:
    """Remove temporary files left by killed attempts (their split was redone)."""
    for kind in ("documents", "rejects", "shards"):
        for p in (staging / kind).rglob("*.tmp") if (staging / kind).exists() else ():
            p.unlink(missing_ok=True)


def _commit(staging: Path, out: Path) -> None:
    """Atomically put ``staging`` at ``out`` (replacing an old output only now)."""
    trash = None
    if out.exists():
        trash = out.with_name(out.name + f".old-{os.getpid()}")
        os.rename(out, trash)
    os.rename(staging, out)
    if trash is not None:
        shutil.rmtree(trash, ignore_errors=True)


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
