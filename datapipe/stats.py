"""Per-stage, per-source counters collected from Ray workers.

Every batch a stage processes reports a :class:`~datapipe.stage.BatchStats` per source to
one small actor per job; the runner reads the totals at the end and checks the
accounting (``in == out + dropped`` for every stage, ``out`` of one stage equal to ``in``
of the next, and the written datasets equal to what the last stage let through).
"""

from __future__ import annotations

from typing import Any

import ray

from datapipe.stage import BatchStats


@ray.remote(num_cpus=0)
class StatsCollector:
    def __init__(self) -> None:
        self._stats: dict[str, dict[str, dict[str, Any]]] = {}

    def record(self, stage: str, per_source: dict[str, dict[str, Any]]) -> None:
        by_source = self._stats.setdefault(stage, {})
        for src, d in per_source.items():
            cur = BatchStats.from_dict(by_source[src]) if src in by_source else BatchStats()
            cur.merge(BatchStats.from_dict(d))
            by_source[src] = cur.to_dict()

    def snapshot(self) -> dict[str, dict[str, dict[str, Any]]]:
        return self._stats


def record(collector, stage: str, stats: dict[str, BatchStats]) -> None:
    """Send one batch's stats and wait for the ack, so nothing is in flight when the
    job's last task returns."""
    if stats:
        ray.get(collector.record.remote(stage, {s: st.to_dict() for s, st in stats.items()}))
