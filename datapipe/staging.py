"""A job's output folder, from the run it may already hold to the publish of a new one.

On top of :mod:`datapipe.commit` (the lock, the staging folder, the atomic publish), the
job's side: a finished run of the same job hash is reused (:func:`finished_report`); a
run claims ``<output>.staging-<job hash[:16]>`` with a ``_JOB`` mark naming the job, so
a restart of the same job resumes it (:func:`open_staging`); temporary files of killed
attempts are swept (:func:`sweep_tmp`); the report goes in (:func:`write_run_records`);
``manifest.json`` lists every file and the staging folder is published with ``_SUCCESS``
last (:func:`publish`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

from datapipe import commit, fs
from datapipe.errors import ConflictError
from datapipe.spec import JobSpec

JOB_MARK = "_JOB"
STAGING_KEY_CHARS = 16   # of the job hash: names the staging folder a restart resumes


def finished_report(job: JobSpec, job_hash: str, force: bool, echo: Callable[[str], None]) -> dict[str, Any] | None:
    """The report of the finished run of this same job at ``job.output`` (nothing to do;
    ``{}`` when it has none), or None when the job must run. Refuses to replace another
    job's output without ``force``, and a folder datapipe did not write at all."""
    out, storage = job.output, job.storage
    done = commit.read_status(out, storage)
    if done is not None and not force:
        if done.get("job_hash") == job_hash:
            echo(f"{out} is already complete for this job (job hash {job_hash}); nothing to do. "
                 "Use --force to run it again.")
            report_uri = fs.join(out, "report.json")
            return json.loads(fs.read_text(report_uri, storage)) if fs.is_file(report_uri, storage) else {}
        raise ConflictError(f"{out} holds the output of a different run (job hash {done.get('job_hash')} != {job_hash}: "
                            "the spec or its inputs changed); use --force to replace it, or choose another output")
    if done is None and not commit.is_datapipe_output(out, storage):
        # never delete a folder datapipe did not write, even with --force
        raise ConflictError(f"{out} exists and is not a datapipe output (no {commit.SUCCESS}); "
                            "move it away or choose another output")
    return None


def open_staging(job: JobSpec, job_hash: str, force: bool, echo: Callable[[str], None]) -> tuple[commit.OutputRun, bool]:
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


def sweep_tmp(staging: str, folders: list[str]) -> None:
    """Remove temporary files left by killed attempts (their split was redone). Only
    local files have temporary names; an unfinished upload never becomes an object."""
    if not fs.is_local(staging):
        return
    for kind in folders:
        for f in fs.list_files(fs.join(staging, kind)):
            if f.endswith(".tmp"):
                fs.delete_file(f)


def write_run_records(report: dict[str, Any], records_dir: Path, staging: str, storage: fs.StorageOptions) -> None:
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


def publish(job: JobSpec, run: commit.OutputRun, job_hash: str, files: list[dict], report: dict[str, Any],
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
