"""Runs a job: text moves once, stats travel as data, splits resume.

The runner executes a compiled :class:`~datapipe.plan.Plan` and knows no concrete
stage. The plan's chain is cut at its global stages into phases. A phase is one Ray Data
execution over the read splits' descriptors (:mod:`datapipe.splitmap`): one task (or one
call of a pooled actor, when a stage of the phase declares ``Compute(kind="actor")``) per split
reads or reloads its split, runs the fused batch stages and writes that split's files
itself (:mod:`datapipe.splitwork`), including a stage's document sink (token shards).
Nothing shuffles, sorts or materialises text; only small records come back to the
driver: files written (rows, bytes, sha256) and per-stage, per-source stats, which the
driver adds up. Around the phases the driver runs the stages' prepare passes, the
duplicate-id check and each global stage's decisions (:mod:`datapipe.phases`).

``output`` is a local folder or a URI (``s3://...``): every file goes through
:mod:`datapipe.fs`, and the tasks write their split's files straight to the store.
The run holds the output's lock (:class:`datapipe.commit.OutputRun`) and writes
everything under ``<output>.staging-<job hash[:16]>``; each split writes a done-record
last. A restart of the same job finds that staging folder and reuses every split whose
done-record and files verify; staging folders of other jobs are deleted; ``--force``
starts clean (:mod:`datapipe.staging`). After the accounting check (``in == out +
dropped`` per stage and source, written files agreeing; :mod:`datapipe.accounting`) the
staging folder is published to ``<output>`` with ``_SUCCESS`` written last.

The job's story, in the order it happens, is :func:`run_job` then :func:`_execute`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from datapipe import commit, fs
from datapipe.accounting import check_accounting, merged_stats
from datapipe.errors import FULL_DISK, JobError, user_error
from datapipe.phases import run_phases, runs_in_driver
from datapipe.plan import Plan, compile_plan, describe_plan, plan_line
from datapipe.ray_session import RaySession
from datapipe.spec import JobSpec
from datapipe.splitwork import sink_split
from datapipe.staging import finished_report, open_staging, publish, sweep_tmp, write_run_records


@dataclasses.dataclass
class RunResult:
    output: str
    skipped: bool
    report: dict[str, Any]


def run_job(job: JobSpec, *, force: bool = False, echo: Callable[[str], None] = print) -> RunResult:
    """Run ``job`` end to end. A completed run with the same job hash is reused unless
    ``force``; a folder holding something else is never overwritten without ``force``;
    an interrupted run of the same job resumes from its finished splits."""
    job_hash = job.job_hash()
    report = finished_report(job, job_hash, force, echo)
    if report is not None:
        return RunResult(output=job.output, skipped=True, report=report)
    plan = compile_plan(job)
    run, resume = open_staging(job, job_hash, force, echo)
    staging = run.staging
    records = Path(staging) if fs.is_local(staging) else Path(tempfile.mkdtemp(prefix="datapipe-run-"))
    verbose = logging.getLogger().isEnabledFor(logging.DEBUG)
    ray = RaySession()
    try:
        local = resume and runs_in_driver(plan, staging)
        if local:
            cpus = job.execution.num_cpus or os.cpu_count() or 1
            echo("restart: the remaining splits run in this process (less work left than starting Ray costs)")
        else:
            cpus = ray.start(job, records / "logs", verbose=verbose)   # Ray's chatter to logs/ray.log
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
        ray.close()
        if records != Path(staging):
            shutil.rmtree(records, ignore_errors=True)


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


def _execute(plan: Plan, run: commit.OutputRun, records_dir: Path, job_hash: str, *, resume: bool,
             echo: Callable[[str], None], local: bool = False) -> RunResult:
    """The phases, the checks, the report; then publishes ``run``. ``records_dir``: the
    local folder of the report and Ray's log (the staging folder itself when local;
    uploaded into it when remote)."""
    from datapipe.progress import Progress
    from datapipe.report import build_report

    job, staging = plan.job, run.staging
    started = time.time()
    if plan.sink is not None:
        plan.sink.prepare()
    progress = Progress(plan.chain, echo)
    res = run_phases(plan, staging, resume=resume, on_done=lambda r: progress.split_done(r["stats"]), local=local)
    last = res.final()
    files = sorted((f for r in last for f in r["files"]), key=lambda f: f["path"])
    stats = merged_stats(res.records, res.global_seconds)
    progress.close(stats, splits=len(plan.splits))   # the "done:" line counts what the report counts
    sweep_tmp(staging, ["documents", "rejects"] + ([plan.sink.folder] if plan.sink is not None else []))
    wall = time.time() - started

    problems = check_accounting(plan.chain, stats, files, [s.name for s in job.sources], plan.applies)
    sink_totals = _finish_sink(plan, staging, last, files, problems) if plan.sink is not None else {}
    splits = {"total": len(plan.splits), "phases": len(res.reused), "reused": res.reused[0] if res.reused else 0,
              "reused_per_phase": res.reused, "in_driver": local}
    report = build_report(job, plan.chain, stats, files, problems=problems, wall_seconds=wall, started=started,
                          global_seconds=res.global_seconds, stage_reports=res.stage_reports, job_hash=job_hash,
                          shards=sink_totals, splits=splits)
    write_run_records(report, records_dir, staging, job.storage)
    if problems:
        raise JobError("accounting check failed, output not committed (see "
                       f"{fs.join(staging, 'report.md')}):\n  " + "\n  ".join(problems))
    publish(job, run, job_hash, files, report, sink_totals)
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
