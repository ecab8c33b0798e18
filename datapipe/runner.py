"""Runs a job: text moves once, stats travel as data, splits resume.

The runner executes a compiled :class:`~datapipe.plan.Plan` and knows no concrete
stage. The plan's chain is cut at its global stages into phases. A phase is one Ray Data
execution over the read splits' descriptors (``ray.data.from_items``): one task (or one
call of a pooled actor, when a stage of the phase declares ``Compute(kind="actor")``) per split
reads or reloads its split, runs the fused batch stages and writes that split's files
itself (:mod:`datapipe.splitwork`), including a stage's document sink (token shards).
Nothing shuffles, sorts or materialises text; only small records come back to the
driver: files written (rows, bytes, sha256) and per-stage, per-source stats, which the
driver adds up.

Before a phase, each of its stages that declares :meth:`~datapipe.stage.Stage.prepare`
passes (an index built from files its config names) has them run once by the passes'
executor; the workers get the artifacts' URIs before ``setup()``.

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
from datapipe.errors import FULL_DISK, ConflictError, JobError, user_error
from datapipe.passes import run_declared, run_prepared
from datapipe.plan import Phase, Plan, SplitRef, compile_plan, describe_plan, plan_line
from datapipe.spec import ExecutionSpec, JobSpec
from datapipe.splitwork import PhaseEnv, SplitRunner, remove_stale, sink_split, verify_done
from datapipe.stage import BatchStats, StageContext
from datapipe.unique_ids import find_duplicates, parts_for

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

    from datapipe import reaper
    from datapipe.progress import ray_init_kwargs

    if ray.is_initialized():
        return False
    if verbose is None:
        verbose = logging.getLogger().isEnabledFor(logging.DEBUG)
    if not verbose:  # the driver's C++ core worker logs to stderr too; its log file keeps everything
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_DATA_USAGE_DISABLED", "1")
    # Ray starts its workers at nice 15 (below the raylet's and the driver's 0): on a busy
    # machine every process at nice 0 beside them (another job, a test run, a spinning
    # loop in the same session) then gets ~28x their share of a core, and our workers do
    # all the work. An embedded Ray is this job's alone: its workers run at the driver's
    # priority (a cluster keeps its own setting; docs/engine.md "Under contention").
    if not os.environ.get("RAY_ADDRESS"):
        os.environ.setdefault("RAY_worker_niceness", "0")
    if os.environ.get("RAY_ADDRESS"):
        log.info("joining Ray cluster at %s", os.environ["RAY_ADDRESS"])
        ray.init(address=os.environ["RAY_ADDRESS"], **ray_init_kwargs(verbose))
    else:
        log.info("starting an embedded local Ray (num_cpus=%s)", job.execution.num_cpus or "all")
        # what Ray starts is stopped even if this process is SIGKILLed (Ray leaves its agents)
        watchdog = reaper.start()
        try:
            ray.init(num_cpus=job.execution.num_cpus, include_dashboard=False, **ray_init_kwargs(verbose))
        except BaseException:
            if watchdog is not None:
                watchdog.done()   # stops whatever of Ray had started
            raise
        if watchdog is not None:
            node = ray._private.worker._global_node
            watchdog.track(info.process.pid for infos in node.all_processes.values() for info in infos
                           if info.process is not None)
            node.datapipe_reaper = watchdog   # lives as long as this Ray; stop_ray() releases it
    return True


def stop_ray() -> None:
    """``ray.shutdown()`` of the Ray this process started, without its one slow step:
    Ray stops its processes one by one, SIGTERM then up to a second's wait each, and
    its autoscaler monitor (useless on an embedded Ray) always takes the whole second.
    It is killed first (Ray would SIGKILL it next); the rest stops as Ray does it. Then
    the embedded Ray's reaper (:mod:`datapipe.reaper`) checks that nothing it saw is left
    and exits."""
    import ray

    node = getattr(ray._private.worker, "_global_node", None)
    watchdog = getattr(node, "datapipe_reaper", None)
    try:
        for info in (node.all_processes.get("monitor", []) if node is not None else []):
            if info.process.poll() is None:
                info.process.kill()
                info.process.wait()
        ray.shutdown()
    finally:
        if watchdog is not None:
            watchdog.done()


def _cluster_cpus() -> int:
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


# -- one phase ---------------------------------------------------------------------

def _run_split_task(batch: pa.Table, env: PhaseEnv) -> pa.Table:
    return SplitRunner(env)(batch)


def _map_splits(env: PhaseEnv, todo: list[SplitRef], ex: ExecutionSpec):
    """The Ray Data execution of one phase over ``todo`` (one block, so one task or one
    actor call, per split), with the compute the phase's stages declare: tasks, or a pool
    of actors (``execution.actors_per_stage``, else the stages' ``concurrency``, else as
    many as the cluster's CPUs allow). Ray Data retries a failed task or actor call and
    fails the job when one keeps failing (``max_errored_blocks = 0``: no split is ever
    skipped)."""
    import ray

    c = env.phase.compute
    items = [{"ref": pickle.dumps(ref)} for ref in todo]
    ds = ray.data.from_items(items, override_num_blocks=len(items))
    common = dict(batch_size=1, batch_format="pyarrow", num_cpus=c.num_cpus,
                  **({"num_gpus": c.num_gpus} if c.num_gpus else {}))
    # Ray 2.60 takes retry counts only through the deprecated ``ray_remote_args``
    # (there is no named parameter for them yet); the retries are deliberate
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
        if c.kind == "actor":
            size = ex.actors_per_stage or c.concurrency or max(1, int(_cluster_cpus() // c.num_cpus))
            return ds.map_batches(SplitRunner, fn_constructor_kwargs={"env": env},
                                  compute=ray.data.ActorPoolStrategy(size=min(size, len(todo))),
                                  max_restarts=ex.max_restarts, max_task_retries=ex.max_retries, **common)
        return ds.map_batches(_run_split_task, fn_kwargs={"env": env}, max_retries=ex.max_retries, **common)


def _run_phase(env: PhaseEnv, refs: list[SplitRef], ex: ExecutionSpec, *, resume: bool,
               on_done: Callable[[dict], None], local: bool = False) -> tuple[list[dict], int]:
    """Records of every split for ``env.phase`` (reused or computed), in ``refs`` order,
    and how many were reused. ``local``: the remaining splits run in this process, one
    after the other, with the same :class:`SplitRunner` (see :func:`_local_restart`)."""
    done: dict[str, dict] = {}
    if resume:
        for ref in refs:
            rec = verify_done(env.done_path(ref), env.staging, env.storage)
            if rec is not None and rec.get("input") == env.input_digest:
                done[ref.key] = rec
    reused = len(done)
    todo = [ref for ref in refs if ref.key not in done]
    if todo and local:
        runner = SplitRunner(env)
        for ref in todo:   # the record as the Ray path returns it (a JSON round trip)
            rec = json.loads(json.dumps(runner.run(ref), sort_keys=True))
            done[rec["key"]] = rec
            on_done(rec)
    elif todo:
        for row in _map_splits(env, todo, ex).iter_rows():
            if row["error"] is not None:   # the user's error (e.g. a corrupt file under on_error: fail)
                raise pickle.loads(row["error"])
            rec = json.loads(row["record"])
            done[rec["key"]] = rec
            on_done(rec)
    return [done[ref.key] for ref in refs], reused


# Starting an embedded Ray and a Ray Data execution (``ray.init``, the executor's helper
# actors, the pool's workers) costs ~5 s on the 2-core machine before a split is read
# (docs/engine.md "Fixed cost of a run"); a restart with less work left than that runs it
# in the driver instead (:func:`_local_restart`).
RAY_START_SECONDS = 5.0


def _local_restart(plan: Plan, staging: str) -> bool:
    """True when a restart's remaining splits should run in the driver, without Ray:
    an embedded Ray (no ``RAY_ADDRESS``), one phase (no global stage), no stage with
    prepare passes, no GPUs, the id
    check in one part (it then runs on the driver too), and the remaining work estimated
    from the reused splits' own measured seconds per input byte (same job, same machine)
    shorter in one process than ``RAY_START_SECONDS`` plus that work spread over the
    CPUs (counted as at least 2, so never more than twice the start-up: the driver has
    no task retries). A restart with every split reused starts no Ray at all. The outputs are the
    same bytes either way: the same :class:`SplitRunner` writes them."""
    job = plan.job
    if os.environ.get("RAY_ADDRESS") or len(plan.phases) != 1:
        return False
    ph = plan.phases[0]
    if ph.compute.num_gpus or _id_parts(job) != 1:
        return False
    if any(st.make().prepares() for st in ph.stages):
        return False    # a stage's prepare passes (an index) may need Ray Data: the Ray path
    env = PhaseEnv(phase=ph, staging=staging, readers=plan.readers, batch_rows=job.execution.batch_rows,
                   output=job.output_options, decisions=None, input_digest="", sink=plan.sink, storage=job.storage)
    done_bytes, done_seconds, left = 0, 0.0, 0
    for ref in plan.splits:
        rec = verify_done(env.done_path(ref), staging, job.storage)
        if rec is not None and rec.get("input") == "":
            done_bytes += ref.split.num_bytes
            done_seconds += float(rec.get("seconds", 0.0))
        else:
            left += ref.split.num_bytes
    if not left:
        return True
    if not done_bytes:
        return False
    local_s = left * done_seconds / done_bytes
    cpus = max(2, job.execution.num_cpus or os.cpu_count() or 1)   # one CPU: still at most 2x the start-up
    log.info("restart: %d input bytes left, ~%.1f s in one process (measured by the reused splits)", left, local_s)
    return local_s < RAY_START_SECONDS + local_s / cpus


def _id_parts(job: JobSpec) -> int:
    """The duplicate-id check's partitions for the job's whole input."""
    return parts_for(sum(f.size for s in job.sources for f in s.files))


# -- global stages -----------------------------------------------------------------

def _decide(phase: Phase, side: list[str], env: PhaseEnv, job: JobSpec) -> tuple[str | None, dict[str, Any]]:
    st = phase.after
    assert st is not None
    # the sources it applies to, in spec order (its side rows hold no others)
    ctx = StageContext(work_dir=env.work(st.name, "decide"), sources=tuple(s.name for s in job.sources
                                                                           if st.applies_to(s.name)),
                       storage=env.storage)
    fs.makedirs(ctx.work_dir, env.storage)
    if not side:
        return None, ctx.report
    stage = st.make()
    if stage.declares_passes():   # the engine's executor runs the declared passes
        return run_declared(stage, side, ctx, max_retries=job.execution.max_retries), ctx.report
    return stage.decide(side, ctx), ctx.report


def _digest(uri: str | None, storage: fs.StorageOptions | None) -> str:
    """Identifies a global stage's decisions, so a restarted job reuses the next phase's
    splits only when the decisions are the same bytes."""
    if uri is None:
        return "none"
    files = [uri] if fs.is_file(uri, storage) else [f for f in fs.list_files(uri, storage) if f.endswith(".parquet")]
    h = hashlib.sha256()
    for f in files:
        h.update(fs.sha256(f, storage).encode())
    return h.hexdigest()


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
    job_hash = job.job_hash()
    previous = _previous_run(job, job_hash, force, echo)
    if previous is not None:
        return previous
    plan = compile_plan(job)
    run, resume = _open_staging(job, job_hash, force, echo)
    staging = run.staging
    records = Path(staging) if fs.is_local(staging) else Path(tempfile.mkdtemp(prefix="datapipe-run-"))
    from datapipe.progress import quiet_ray, restore_ray_logging

    verbose = logging.getLogger().isEnabledFor(logging.DEBUG)
    ray_log, started_ray = None, False
    try:
        local = resume and _local_restart(plan, staging)
        if local:
            cpus = job.execution.num_cpus or os.cpu_count() or 1
            echo("restart: the remaining splits run in this process (less work left than starting Ray costs)")
        else:
            started_ray = ensure_ray(job, verbose=verbose)
            # Ray's chatter to logs/ray.log; Ray Data only for a global stage's decide()
            ray_log = quiet_ray(records / "logs", verbose=verbose)
            cpus = _cluster_cpus()
        echo("\n".join(describe_plan(plan, cpus)) if verbose else plan_line(plan, cpus))
        with _interruptible():
            return _execute(plan, run, records, job_hash, resume=resume, echo=echo, local=local)
    except KeyboardInterrupt:
        echo(f"interrupted: finished splits are kept in {staging}. Run the same command again to resume "
             "from them (same spec and inputs), or add --force to start clean.")
        raise
    except Exception as e:  # unwrap Ray's task errors to the user-facing cause
        cause = user_error(e)
        if isinstance(cause, OSError) and cause.errno in FULL_DISK:
            run.abort()   # a full device: free what this run wrote; nothing is worth resuming
        if cause is not None:
            raise cause from None
        raise
    finally:
        run.release()     # no-op after a publish; the staging folder stays for a resume
        restore_ray_logging(ray_log)
        if started_ray:   # now, not at interpreter exit (which first sleeps 0.5 s)
            stop_ray()
        if records != Path(staging):
            shutil.rmtree(records, ignore_errors=True)


def _previous_run(job: JobSpec, job_hash: str, force: bool, echo: Callable[[str], None]) -> RunResult | None:
    """The finished run of this same job at ``job.output`` (nothing to do), or None when
    the job must run. Refuses to replace another job's output without ``force``, and a
    folder datapipe did not write at all."""
    out, storage = job.output, job.storage
    done = commit.read_status(out, storage)
    if done is not None and not force:
        if done.get("job_hash") == job_hash:
            echo(f"{out} is already complete for this job (job hash {job_hash}); nothing to do. "
                 "Use --force to run it again.")
            report_uri = fs.join(out, "report.json")
            report = json.loads(fs.read_text(report_uri, storage)) if fs.is_file(report_uri, storage) else {}
            return RunResult(output=out, skipped=True, report=report)
        raise ConflictError(f"{out} holds the output of a different run (job hash {done.get('job_hash')} != {job_hash}: "
                        "the spec or its inputs changed); use --force to replace it, or choose another output")
    if done is None and not commit.is_datapipe_output(out, storage):
        # never delete a folder datapipe did not write, even with --force
        raise ConflictError(f"{out} exists and is not a datapipe output (no {SUCCESS}); move it away or choose another output")
    return None


@dataclasses.dataclass
class _PhaseResults:
    """What the phases returned: every split's record (all phases), splits reused per
    phase, and per global stage its decide() seconds and report."""

    records: list[dict]
    reused: list[int]
    global_seconds: dict[str, float]
    stage_reports: dict[str, Any]

    def final(self) -> list[dict]:
        """The final phase's records, in plan order."""
        return [r for r in self.records if r["phase"] == len(self.reused) - 1]


def _run_phases(plan: Plan, staging: str, *, resume: bool, on_done: Callable[[dict], None],
                local: bool = False) -> _PhaseResults:
    """Every phase over every split; between phases, the global stage decides once."""
    job, storage = plan.job, plan.job.storage
    res = _PhaseResults(records=[], reused=[], global_seconds={}, stage_reports={})
    decisions, digest = None, ""
    for ph in plan.phases:
        env = PhaseEnv(phase=ph, staging=staging, readers=plan.readers if ph.before is None else {},
                       batch_rows=job.execution.batch_rows, output=job.output_options, decisions=decisions,
                       input_digest=digest, sink=plan.sink if ph.last else None, storage=storage,
                       id_parts=_id_parts(job) if ph.index == 0 else 0)
        env = _prepare(env, job, res)
        recs, n_reused = _run_phase(env, list(plan.splits), job.execution, resume=resume, on_done=on_done,
                                    local=local)
        if ph.index == 0:
            recs = _unique_ids(plan, env, recs, local=local)
        res.records.extend(recs)
        res.reused.append(n_reused)
        if ph.after is not None:
            t0 = time.perf_counter()
            decisions, res.stage_reports[ph.after.name] = _decide(ph, sorted(r["side"] for r in recs if r["side"]), env, job)
            res.global_seconds[ph.after.name] = time.perf_counter() - t0
            digest = _digest(decisions, storage)
    return res


def _prepare(env: PhaseEnv, job: JobSpec, res: _PhaseResults) -> PhaseEnv:
    """``env`` with the artifacts of its stages' :meth:`~datapipe.stage.Stage.prepare`
    passes (run once here, under ``work/<stage>/prepare``), their keys folded into the
    phase's input digest (a restart reuses splits only when the artifacts are the same)."""
    prepared, keys = {}, []
    for st in env.phase.stages:
        stage = st.make()
        if not stage.prepares():
            continue
        ctx = StageContext(work_dir=env.work(st.name, "prepare"), sources=tuple(s.name for s in job.sources),
                           storage=env.storage)
        arts = run_prepared(stage, ctx, max_retries=job.execution.max_retries)
        if arts:
            prepared[st.name] = arts
            keys.append([st.name, sorted(ctx.report.get("artifact_keys", {}).items())])
            res.stage_reports[st.name] = ctx.report
    if not prepared:
        return env
    digest = hashlib.sha256(json.dumps([env.input_digest, keys]).encode()).hexdigest()
    return dataclasses.replace(env, prepared=prepared, input_digest=digest)


def _unique_ids(plan: Plan, env: PhaseEnv, recs: list[dict], *, local: bool = False) -> list[dict]:
    """Phase 0's records once every id is unique across splits: the splits holding
    extra copies of an id first read in an earlier split are run again with those
    copies marked ``read:duplicate_id`` where they enter (:mod:`datapipe.unique_ids`)."""
    files = [(r["key"], r["ids"]) for r in recs if r.get("ids")]
    uri, keys = find_duplicates(files, env.id_parts, env.work("ids", "check"),
                                max_retries=plan.job.execution.max_retries, storage=env.storage)
    if uri is None:
        return recs
    digest = _digest(uri, env.storage)
    log.info("ids seen in more than one read split: %d split(s) run again with the extra copies rejected", len(keys))
    wanted = set(keys)
    redo = [ref for ref in plan.splits if ref.key in wanted]
    again, _ = _run_phase(dataclasses.replace(env, id_drops=uri, input_digest=digest), redo, plan.job.execution,
                          resume=False, on_done=lambda r: None, local=local)
    by_key = {r["key"]: r for r in again}
    for r in recs:
        if r["key"] in by_key:
            remove_stale(r, by_key[r["key"]], env.staging, env.storage)
    return [by_key.get(r["key"], r) for r in recs]


def _merged_stats(res: _PhaseResults) -> dict[str, dict[str, dict[str, Any]]]:
    """Every split's stats added up, with each global stage's decide() time on the driver
    shared among its sources by documents in."""
    stats = ST.merge_dicts(r["stats"] for r in res.records)
    for name, seconds in res.global_seconds.items():
        for st in stats.get(name, {}).values():
            st["seconds"] += seconds * st["docs_in"] / max(1, sum(s["docs_in"] for s in stats[name].values()))
    return stats


def _execute(plan: Plan, run: commit.OutputRun, records_dir: Path, job_hash: str, *, resume: bool,
             echo: Callable[[str], None], local: bool = False) -> RunResult:
    """The phases, the checks, the report; then publishes ``run``. ``records_dir``: the
    local folder of the report and Ray's log (the staging folder itself when local;
    uploaded into it when remote)."""
    from datapipe.report import build_report

    job, staging = plan.job, run.staging
    started = time.time()
    if plan.sink is not None:
        plan.sink.prepare()
    progress = _progress(plan.chain, echo)
    res = _run_phases(plan, staging, resume=resume, on_done=lambda r: progress.split_done(r["stats"]), local=local)
    last = res.final()
    files = sorted((f for r in last for f in r["files"]), key=lambda f: f["path"])
    stats = _merged_stats(res)
    progress.close(stats, splits=len(plan.splits))   # the "done:" line counts what the report counts
    _sweep_tmp(staging, ["documents", "rejects"] + ([plan.sink.folder] if plan.sink is not None else []))
    wall = time.time() - started

    problems = check_accounting(plan.chain, stats, files, [s.name for s in job.sources], plan.applies)
    sink_totals = _finish_sink(plan, staging, last, files, problems) if plan.sink is not None else {}
    splits = {"total": len(plan.splits), "phases": len(res.reused), "reused": res.reused[0] if res.reused else 0,
              "reused_per_phase": res.reused, "in_driver": local}
    report = build_report(job, plan.chain, stats, files, problems=problems, wall_seconds=wall, started=started,
                          global_seconds=res.global_seconds, stage_reports=res.stage_reports, job_hash=job_hash,
                          shards=sink_totals, splits=splits)
    _write_run_records(report, records_dir, staging, job.storage)
    if problems:
        raise JobError("accounting check failed, output not committed (see "
                       f"{fs.join(staging, 'report.md')}):\n  " + "\n  ".join(problems))
    _commit(job, run, job_hash, files, report, sink_totals)
    echo(report["console_text"])
    echo(f"output committed: {job.output}")
    return RunResult(output=job.output, skipped=False, report=report)


def _finish_sink(plan: Plan, staging: str, last: list[dict], files: list[dict], problems: list[str]) -> dict[str, Any]:
    """The document sink's merge and check (its problems join ``problems``); its totals."""
    assert plan.sink is not None
    by_key = {r["key"]: r.get("sink") for r in last}
    storage = plan.job.storage
    result = plan.sink.finish(staging=staging, storage=storage, sources=[s.name for s in plan.job.sources],
                              splits=[(sink_split(plan.sink, staging, ref, storage), by_key.get(ref.key))
                                      for ref in plan.splits],
                              documents=[f for f in files if f["kind"] == "documents"])
    problems += result.problems
    return result.totals


def _write_run_records(report: dict[str, Any], records_dir: Path, staging: str, storage: fs.StorageOptions) -> None:
    """report.json, report.md (with drop examples), drops.png into ``records_dir``, and
    from there into the staging folder when that is remote."""
    from datapipe.inspect_rejects import drop_examples, examples_markdown
    from datapipe.report import write_report

    # report.json/report.md only, not the console (examples are read from a local staging folder only)
    report["drop_examples"] = drop_examples(staging) if fs.is_local(staging) else {}
    write_report(report, records_dir)
    md = str(records_dir / "report.md")
    fs.write_text(md, fs.read_text(md) + examples_markdown(report["drop_examples"]))
    if records_dir != Path(staging):
        fs.upload_tree(str(records_dir), staging, storage)


def _commit(job: JobSpec, run: commit.OutputRun, job_hash: str, files: list[dict], report: dict[str, Any],
            sink_totals: dict[str, Any]) -> None:
    """``manifest.json`` (every output file with rows and sha256), the work area and the
    job mark gone, then the staging folder published with ``_SUCCESS`` last."""
    staging, storage = run.staging, job.storage
    manifest = {
        "job": job.name,
        "spec_hash": job.spec_hash(),
        "spec": job.canonical(),
        "files": [{k: f[k] for k in ("path", "kind", "source", "rows", "file_bytes", "sha256")} for f in files],
        "totals": report["totals"],
        "shards": sink_totals,
    }
    fs.write_text(fs.join(staging, commit.MANIFEST), json.dumps(manifest, indent=2, sort_keys=True) + "\n", storage)
    fs.delete_tree(fs.join(staging, "work"), storage)
    fs.delete_file(fs.join(staging, JOB_MARK), storage)
    run.publish({"job_hash": job_hash, "spec_hash": job.spec_hash(),
                 "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})


def _sweep_tmp(staging: str, folders: list[str]) -> None:
    """Remove temporary files left by killed attempts (their split was redone). Only
    local files have temporary names; an unfinished upload never becomes an object."""
    if not fs.is_local(staging):
        return
    for kind in folders:
        for f in fs.list_files(fs.join(staging, kind)):
            if f.endswith(".tmp"):
                fs.delete_file(f)