"""Per-rank step time and MFU, gathered at log steps only, and the straggler check.

Every ``log_every`` steps each rank contributes two floats (its step time and its MFU) to one
``all_gather`` over the whole world: tens of bytes, at log steps only, so the cost stays out
of the other steps. A rank whose step time exceeds ``straggler_factor`` x the median of all
ranks' is named in a console line and in the metrics row (the seeds' "cross-reference
per-rank MFU": a slow GPU, a throttled node or a noisy neighbour shows up as one rank).
"""

from __future__ import annotations

import statistics
from typing import Any

import torch
import torch.distributed as dist


def gather_rank_times(step_time: float, mfu: float | None, device: torch.device
                      ) -> tuple[list[float], list[float | None]]:
    """(step time per rank, MFU per rank), in rank order; a collective over the default group."""
    mine = torch.tensor([step_time, -1.0 if mfu is None else mfu], dtype=torch.float64, device=device)
    parts = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, mine)
    rows = torch.stack(parts).cpu().tolist()
    return [r[0] for r in rows], [None if r[1] < 0 else r[1] for r in rows]


def stragglers(times: list[float], factor: float | None) -> list[int]:
    """Ranks whose step time exceeds ``factor`` x the median (none with one rank or factor None)."""
    if factor is None or len(times) < 2:
        return []
    med = statistics.median(times)
    return [r for r, t in enumerate(times) if t > factor * med]


def straggler_line(step: int, times: list[float], slow: list[int], mfus: list[float | None]) -> str:
    med = statistics.median(times)
    who = "; ".join(f"rank {r} step {times[r]:.3f} s = {times[r] / med:.2f}x the median {med:.3f} s"
                    + (f", mfu {mfus[r]:.1%}" if mfus[r] is not None else "") for r in slow)
    return f"STRAGGLER at step {step}: {who} (metrics rows hold rank_step_s / rank_mfu per rank)"


def add_rank_metrics(row: dict[str, Any], *, step_time: float, mfu: float | None, device: torch.device,
                     factor: float | None) -> str | None:
    """Put ``rank_step_s`` / ``rank_mfu`` (lists in rank order) and, when one is slow,
    ``straggler`` (its ranks) into ``row``; returns the console line for a straggler."""
    times, mfus = gather_rank_times(step_time, mfu, device)
    row["rank_step_s"], row["rank_mfu"] = times, mfus
    slow = stragglers(times, factor)
    if not slow:
        return None
    row["straggler"] = slow
    return straggler_line(row["step"], times, slow, mfus)


def compiled_graphs() -> int:
    """Graphs torch.compile has produced in this process so far (constant after the first step
    when nothing recompiles)."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])
