"""The Ray a job runs on: joined (``RAY_ADDRESS``) or started embedded, quieted, stopped.

An embedded Ray is the job's own: its workers run at the driver's priority, a watchdog
(:mod:`datapipe.reaper`) stops what it started even if the driver is SIGKILLed, and
:func:`stop_ray` stops it without Ray's slow shutdown steps. Ray has no public API for
a node's processes; :func:`_embedded_node` is the one place that reaches into
``ray._private`` for them.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from datapipe.progress import quiet_ray, ray_init_kwargs, restore_ray_logging
from datapipe.spec import JobSpec

log = logging.getLogger(__name__)


class RaySession:
    """The Ray of one run: :meth:`start` joins or starts it and sends its chatter to a
    log file; :meth:`close` undoes both, stopping only a Ray this session started."""

    def __init__(self) -> None:
        self.started = False
        self._log: logging.Handler | None = None

    def start(self, job: JobSpec, log_dir: Path, *, verbose: bool) -> int:
        """Ray up, its loggers to ``log_dir/ray.log`` (unless ``verbose``); the cluster's CPUs."""
        self.started = ensure_ray(job, verbose=verbose)
        self._log = quiet_ray(log_dir, verbose=verbose)
        return cluster_cpus()

    def close(self) -> None:
        restore_ray_logging(self._log)
        if self.started:   # now, not at interpreter exit (which first sleeps 0.5 s)
            stop_ray()


def ensure_ray(job: JobSpec, *, verbose: bool | None = None) -> bool:
    """Join the cluster named by ``RAY_ADDRESS``, or start an embedded local Ray.
    True when this call started (or joined) Ray, so the caller may shut it down. Workers'
    output reaches the console only when ``verbose`` (default: debug logging is on, i.e.
    ``datapipe -v``)."""
    import ray

    from datapipe import reaper

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
            node = _embedded_node()
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

    node = _embedded_node()
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


def cluster_cpus() -> int:
    """The CPUs of the Ray this process is connected to (at least 1)."""
    import ray

    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _embedded_node() -> Any:
    """The node this process started with ``ray.init`` (None when it started none): its
    ``all_processes`` are what the reaper tracks and :func:`stop_ray` stops."""
    import ray

    return getattr(ray._private.worker, "_global_node", None)
