"""Runs a phase's splits on Ray core: one task per split, or a pool of actors.

Every split's work is one call that returns a small record (files written, stats), so
the phase needs a scheduler of calls, not a dataset: Ray Data's streaming executor
would add its own processes (a stats actor, an autoscaling coordinator, an actor
location tracker), an executor thread in the driver and ``import ray.data`` in every
worker, seconds of fixed cost per phase that buy nothing here (measured:
docs/engine.md, "Fixed cost").

* Tasks (a phase whose stages need no ``setup()``): ``@ray.remote(max_retries=...)``,
  at most two per CPU in flight so the driver's queue, not Ray's, holds the rest.
* Actors (a phase with a ``setup()`` stage): a pool of ``size`` actors, each built
  once (models loaded once), with ``max_restarts`` and ``max_task_retries``; each actor
  gets its next split as soon as it returns one, so the pool stays busy and balanced.

A task or actor call that keeps failing raises on the driver (no split is ever
skipped). A user error (:class:`~datapipe.errors.DatapipeError`, e.g. a corrupt file
under ``on_error: fail``) is returned as data and re-raised on the driver with its type,
never retried. Records reach ``on_record`` in completion order; callers key them by
split.
"""

from __future__ import annotations

import json
import pickle
from typing import Any, Callable

from datapipe.errors import DatapipeError
from datapipe.plan import SplitRef
from datapipe.spec import ExecutionSpec
from datapipe.splitwork import PhaseEnv, SplitRunner

Result = tuple[str | None, bytes | None]   # (record as JSON, pickled user error)


def _call(runner: SplitRunner, blob: bytes) -> Result:
    try:
        return json.dumps(runner.run(pickle.loads(blob)), sort_keys=True), None
    except DatapipeError as e:  # the user's error, not a fault: no retry, type kept
        return None, pickle.dumps(e)


def _split_task(env: PhaseEnv, blob: bytes) -> Result:
    return _call(SplitRunner(env), blob)


class SplitActor:
    """One actor of a phase's pool: the phase's stages built (and set up) once."""

    def __init__(self, env: PhaseEnv) -> None:
        self.runner = SplitRunner(env)

    def run(self, blob: bytes) -> Result:
        return _call(self.runner, blob)


def pool_size(env: PhaseEnv, ex: ExecutionSpec, cpus: int) -> int:
    """Actors for an actor phase: ``execution.actors_per_stage``, else the stages'
    declared ``concurrency``, else as many as the cluster's CPUs allow."""
    c = env.phase.compute
    return ex.actors_per_stage or c.concurrency or max(1, int(cpus // c.num_cpus))


def run_splits(env: PhaseEnv, todo: list[SplitRef], ex: ExecutionSpec, cpus: int,
               on_record: Callable[[dict[str, Any]], None]) -> None:
    """Run ``env.phase`` over ``todo``; ``on_record`` gets each split's record."""
    import ray

    c = env.phase.compute
    resources: dict[str, Any] = {"num_cpus": c.num_cpus, **({"num_gpus": c.num_gpus} if c.num_gpus else {})}
    queue = [pickle.dumps(ref) for ref in reversed(todo)]
    pending: dict[Any, Any] = {}         # call -> its actor (None: a task)
    if c.kind == "actor":
        cls = ray.remote(SplitActor).options(max_restarts=ex.max_restarts, max_task_retries=ex.max_retries,
                                             **resources)
        # by value: a restarted actor must not depend on an object-store copy
        owners = [cls.remote(env) for _ in range(min(pool_size(env, ex, cpus), len(todo)))]
    else:
        env_ref = ray.put(env)           # shipped once, not once per split
        task = ray.remote(_split_task).options(max_retries=ex.max_retries, **resources)
        owners = [None] * min(len(todo), 2 * max(1, int(cpus // c.num_cpus)))

    def submit(owner: Any) -> None:
        blob = queue.pop()
        pending[owner.run.remote(blob) if owner is not None else task.remote(env_ref, blob)] = owner

    for owner in owners:
        submit(owner)
    while pending:
        calls = list(pending)
        ray.wait(calls, num_returns=1)                       # at least one is done:
        ready, _ = ray.wait(calls, num_returns=len(calls), timeout=0)   # take every done one
        for call in ready:
            owner = pending.pop(call)
            record, error = ray.get(call)
            if error is not None:
                raise pickle.loads(error)
            if queue:
                submit(owner)
            on_record(json.loads(record))
