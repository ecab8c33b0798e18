"""One phase over the read splits: those a restart can reuse, the rest as Ray Data tasks
or pooled actors, or one after the other in the driver.

What a split's task does is :mod:`datapipe.splitwork`'s; this module decides where the
tasks run and collects their records (files written, stats) in the splits' order.
"""

from __future__ import annotations

import json
import pickle
import warnings
from typing import Callable

import pyarrow as pa

from datapipe.plan import SplitRef
from datapipe.ray_session import cluster_cpus
from datapipe.spec import ExecutionSpec
from datapipe.splitwork import PhaseEnv, SplitRunner, verify_done


def run_phase(env: PhaseEnv, refs: list[SplitRef], ex: ExecutionSpec, *, resume: bool,
              on_done: Callable[[dict], None], local: bool = False) -> tuple[list[dict], int]:
    """Records of every split for ``env.phase`` (reused or computed), in ``refs`` order,
    and how many were reused. ``local``: the remaining splits run in this process, one
    after the other, with the same :class:`SplitRunner` (see
    :func:`datapipe.phases.runs_in_driver`)."""
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
            size = ex.actors_per_stage or c.concurrency or max(1, int(cluster_cpus() // c.num_cpus))
            return ds.map_batches(SplitRunner, fn_constructor_kwargs={"env": env},
                                  compute=ray.data.ActorPoolStrategy(size=min(size, len(todo))),
                                  max_restarts=ex.max_restarts, max_task_retries=ex.max_retries, **common)
        return ds.map_batches(_run_split_task, fn_kwargs={"env": env}, max_retries=ex.max_retries, **common)


def _run_split_task(batch: pa.Table, env: PhaseEnv) -> pa.Table:
    return SplitRunner(env)(batch)
