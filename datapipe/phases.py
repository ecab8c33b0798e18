"""The plan's phases in order, and what the driver runs around them.

A phase is one pass over every read split (:func:`datapipe.splitmap.run_phase`). Around
it, on the driver:

* before a phase, the prepare passes of its stages (an index built from files their
  config names, :func:`_prepare`); the workers get the artifacts' URIs;
* after phase 0, the duplicate-id check (:func:`_unique_ids`): the splits holding extra
  copies of an id run again with those copies rejected;
* after a phase that ends at a global stage, the stage decides once over the splits'
  side files (:func:`_decide`); the next phase applies the decisions where the text is.

The global-stage dispatch (:func:`_prepare`, :func:`_decide`, the calls into
:mod:`datapipe.passes`) lives in this module only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time
from typing import Any, Callable

from datapipe import fs
from datapipe.passes import run_global, run_prepared
from datapipe.plan import Phase, Plan
from datapipe.spec import JobSpec
from datapipe.splitmap import run_phase
from datapipe.splitwork import PhaseEnv, remove_stale, verify_done
from datapipe.stage import StageContext
from datapipe.unique_ids import find_duplicates, parts_for

log = logging.getLogger(__name__)

# Starting an embedded Ray and a Ray Data execution (``ray.init``, the executor's helper
# actors, the pool's workers) costs ~5 s on the 2-core machine before a split is read
# (docs/engine.md "Fixed cost of a run"); a restart with less work left than that runs it
# in the driver instead (:func:`runs_in_driver`).
RAY_START_SECONDS = 5.0


def runs_in_driver(plan: Plan, staging: str) -> bool:
    """True when a restart's remaining splits should run in the driver, without Ray:
    an embedded Ray (no ``RAY_ADDRESS``), one phase (no global stage), no stage with
    prepare passes, no GPUs, the id
    check in one part (it then runs on the driver too), and the remaining work estimated
    from the reused splits' own measured seconds per input byte (same job, same machine)
    shorter in one process than ``RAY_START_SECONDS`` plus that work spread over the
    CPUs (counted as at least 2, so never more than twice the start-up: the driver has
    no task retries). A restart with every split reused starts no Ray at all. The outputs are the
    same bytes either way: the same :class:`~datapipe.splitwork.SplitRunner` writes them."""
    job = plan.job
    if os.environ.get("RAY_ADDRESS") or len(plan.phases) != 1:
        return False
    ph = plan.phases[0]
    if ph.compute.num_gpus or _id_parts(job) != 1:
        return False
    if any(st.make().prepares() for st in ph.stages):
        return False    # a stage's prepare passes (an index) may need Ray Data: the Ray path
    env = _phase_env(plan, ph, staging)
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


@dataclasses.dataclass
class PhaseResults:
    """What the phases returned: every split's record (all phases), splits reused per
    phase, and per global stage its passes' seconds and report."""

    records: list[dict]
    reused: list[int]
    global_seconds: dict[str, float]
    stage_reports: dict[str, Any]

    def final(self) -> list[dict]:
        """The final phase's records, in plan order."""
        return [r for r in self.records if r["phase"] == len(self.reused) - 1]


def run_phases(plan: Plan, staging: str, *, resume: bool, on_done: Callable[[dict], None],
               local: bool = False) -> PhaseResults:
    """Every phase over every split; between phases, the global stage decides once."""
    job, storage = plan.job, plan.job.storage
    res = PhaseResults(records=[], reused=[], global_seconds={}, stage_reports={})
    decisions, digest = None, ""
    for ph in plan.phases:
        env = _phase_env(plan, ph, staging, decisions=decisions, digest=digest)
        env = _prepare(env, job, res)
        recs, n_reused = run_phase(env, list(plan.splits), job.execution, resume=resume, on_done=on_done,
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


def _phase_env(plan: Plan, ph: Phase, staging: str, *, decisions: str | None = None, digest: str = "") -> PhaseEnv:
    """What every split's task of ``ph`` gets: phase 0 reads with the plan's readers and
    runs the id check; the last phase feeds the document sink."""
    job = plan.job
    return PhaseEnv(phase=ph, staging=staging, readers=plan.readers if ph.before is None else {},
                    batch_rows=job.execution.batch_rows, output=job.output_options, decisions=decisions,
                    input_digest=digest, sink=plan.sink if ph.last else None, storage=job.storage,
                    id_parts=_id_parts(job) if ph.index == 0 else 0)


def _id_parts(job: JobSpec) -> int:
    """The duplicate-id check's partitions for the job's whole input."""
    return parts_for(sum(f.size for s in job.sources for f in s.files))


# -- global-stage dispatch ---------------------------------------------------------

def _prepare(env: PhaseEnv, job: JobSpec, res: PhaseResults) -> PhaseEnv:
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


def _decide(phase: Phase, side: list[str], env: PhaseEnv, job: JobSpec) -> tuple[str | None, dict[str, Any]]:
    """The decisions (a URI; None when no split wrote side rows) of the global stage
    ending ``phase``, and its report."""
    st = phase.after
    assert st is not None
    # the sources it applies to, in spec order (its side rows hold no others)
    ctx = StageContext(work_dir=env.work(st.name, "decide"), sources=tuple(s.name for s in job.sources
                                                                           if st.applies_to(s.name)),
                       storage=env.storage)
    fs.makedirs(ctx.work_dir, env.storage)
    if not side:
        return None, ctx.report
    # the engine's executor runs the stage's passes, where it chooses
    return run_global(st.make(), side, ctx, max_retries=job.execution.max_retries), ctx.report


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


# -- the id check ------------------------------------------------------------------

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
    again, _ = run_phase(dataclasses.replace(env, id_drops=uri, input_digest=digest), redo, plan.job.execution,
                         resume=False, on_done=lambda r: None, local=local)
    by_key = {r["key"]: r for r in again}
    for r in recs:
        if r["key"] in by_key:
            remove_stale(r, by_key[r["key"]], env.staging, env.storage)
    return [by_key.get(r["key"], r) for r in recs]
