"""The resumable, deterministic loader over a :class:`~trainer_bridge.mix.MixPlan`.

Contract:

* Step ``t`` of a run starting at cursor ``c`` covers global samples
  ``[c + t*G, c + (t+1)*G)`` (``G = global_batch``), minus the run's skip ranges: a global
  batch is the next ``G`` samples that lie in no skip range (:class:`~trainer_bridge.order.SkipRanges`).
  Rank ``r`` of ``W`` data-parallel ranks gets rows ``[r*G/W, (r+1)*G/W)`` of each global batch,
  so the global batch (ranks' slices concatenated in rank order) does not depend on ``W``, nor
  on how many prefetch threads read it, nor on how the trainer splits it into micro-batches.
* State is ``{"plan_hash", "samples_committed", "skip", "plan_key", "mix_changes", "adaptive"}``: the
  cursor (plan position after the last batch handed out, skipped samples included), the skip
  ranges, and what decides the samples (:meth:`~trainer_bridge.mix.MixPlan.prefix_key`).
  Loading a state of another plan is accepted only when this plan serves every sample before
  the cursor exactly as the saved one did (an edited mix that changes only what follows: a
  mid-run reweight); the change is appended to ``mix_changes`` (cursor, old and new plan
  hash) and travels in the state from then on. Any other change is refused naming what
  moved. :meth:`MixLoader.add_skip` adds ranges at or after the cursor (a resume that skips a
  bad data range); they travel in the state from then on. ``adaptive``: the weight history of
  the mix's ``adaptive:`` policy (:meth:`MixLoader.apply_update` appends to it at the cursor;
  the plan serves it, :meth:`~trainer_bridge.mix.MixPlan.set_history`) and the policy's
  running train-loss sums, so a resume between two updates continues them exactly.
* Each batch is a dict of CPU tensors: ``input_ids`` and ``labels`` (``[G/W, seq_len]``, int64;
  labels are inputs shifted by one), ``source`` (``[G/W]``, int64: each row's source index
  into ``plan.names``; a sample never mixes sources), and ``position_ids`` when asked for
  (restarting at 0 after every EOS; see :func:`trainer_bridge.mix.position_ids`).
* With the mix's ``fim:``, each sample's documents are rewritten fill-in-the-middle before
  the tensors are made, a pure function of the seed and the global sample number
  (:mod:`trainer_bridge.fim`): the resume contract above holds unchanged.
* The run ends at the plan's token budget (the last partial global batch is not served).
* What it serves is verified: the plan's shards passed their structural checks when the mix
  was resolved, and with ``verify`` (the default) the loader checks their content before
  the first batch, each data-parallel rank a share of the shards, remembering successes in
  the hash cache (``hash_cache``; default :func:`trainer_bridge.shards.default_cache_path`).
"""

from __future__ import annotations

import collections
import json
import logging
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import torch

from datapipe.errors import SpecError
from trainer_bridge.mix import MixPlan, position_ids
from trainer_bridge.order import SkipRanges
from trainer_bridge.shards import HashCache, default_cache_path

log = logging.getLogger(__name__)


@dataclass(kw_only=True, frozen=True)
class LoaderConfig:
    """How one rank reads: its place among ``world_size`` data-parallel ranks, prefetching,
    and verification (``verify: false`` skips the content check, for users who accept
    training on shards that may have changed since they were written)."""

    global_batch: int
    rank: int = 0
    world_size: int = 1
    num_workers: int = 1
    prefetch: int = 2
    with_position_ids: bool = False
    pin_memory: bool = False
    verify: bool = True
    hash_cache: str | None = None     # None: default_cache_path()

    def __post_init__(self) -> None:
        if self.global_batch < 1:
            raise SpecError(f"loader: global_batch {self.global_batch} must be >= 1")
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            raise SpecError(f"loader: rank {self.rank} must be in [0, world_size={self.world_size})")
        if self.global_batch % self.world_size:
            raise SpecError(f"loader: global_batch {self.global_batch} is not divisible by the data-parallel "
                            f"size {self.world_size}; pick a multiple of {self.world_size}")
        if self.num_workers < 1 or self.prefetch < 1:
            raise SpecError(f"loader: num_workers ({self.num_workers}) and prefetch ({self.prefetch}) must be >= 1")

    @property
    def local_batch(self) -> int:
        return self.global_batch // self.world_size


class MixLoader:
    """Iterator of this rank's batches; ``state_dict``/``load_state_dict`` resume it exactly."""

    def __init__(self, plan: MixPlan, config: LoaderConfig) -> None:
        self.plan = plan
        self.config = config
        self.samples_committed = 0
        self.skip = SkipRanges()
        self.mix_changes: list[dict[str, Any]] = []
        self.adaptive_acc: dict[str, Any] | None = None   # the adaptive policy's sums since its last update
        self._pending: collections.deque[tuple[int, Future]] = collections.deque()
        self._pool: ThreadPoolExecutor | None = None
        if config.verify:
            cache = HashCache(config.hash_cache or default_cache_path())
            plan.verify_content(cache=cache, rank=config.rank, world=config.world_size)

    # -- state ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        state = {"plan_hash": self.plan.plan_hash, "samples_committed": int(self.samples_committed),
                 "skip": self.skip.as_list(), "plan_key": json.dumps(self.plan.prefix_key(), sort_keys=True),
                 "mix_changes": json.dumps(self.mix_changes)}
        if self.plan.spec.adaptive is not None or self.plan.history:   # a static mix's state is as it was
            state["adaptive"] = json.dumps({"history": list(self.plan.history), "acc": self.adaptive_acc})
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        n = int(state["samples_committed"])
        if n < 0:
            raise SpecError(f"loader state: samples_committed {n} must be >= 0")
        changes = json.loads(state.get("mix_changes") or "[]")
        old_hash = state.get("plan_hash")
        if old_hash != self.plan.plan_hash:
            if not state.get("plan_key"):
                raise SpecError(
                    f"loader state was saved for mix plan {old_hash!r}, but this run resolves to "
                    f"{self.plan.plan_hash!r}: the mix's sources (shard contents), weights, seq_len or seed changed, "
                    "so the saved cursor would address different samples. Resume with the original mix, or start a "
                    "new run (a different token_budget alone does not change the plan)")
            problem = self.plan.prefix_problem(json.loads(state["plan_key"]), n)
            if problem:
                raise SpecError(
                    f"loader state was saved for mix plan {old_hash!r}, but this run resolves to "
                    f"{self.plan.plan_hash!r}, and the mix {self.plan.spec.path or self.plan.spec.name} was edited "
                    f"in a way that changes samples this checkpoint already trained on (global samples before its "
                    f"cursor {n:,}): {problem}. "
                    "Edit only what comes after the cursor, or resume from an earlier checkpoint")
            changes = changes + [{"at": n, "from": old_hash, "to": self.plan.plan_hash}]
            log.warning("mix changed at global sample %d (plan %s -> %s): samples before it are as trained, the "
                        "new mix applies after it", n, old_hash, self.plan.plan_hash)
        try:
            skip = SkipRanges(state.get("skip") or ())
        except ValueError as e:
            raise SpecError(f"loader state: {e}") from None
        adaptive = json.loads(state.get("adaptive") or "{}")
        history = adaptive.get("history") or []
        if any(int(e["at"]) > n for e in history):
            raise SpecError(f"loader state: a weight update takes effect after the cursor {n:,}: the state is damaged")
        self._drop_pending()
        self.plan.set_history(history)
        self.adaptive_acc = adaptive.get("acc")
        self.samples_committed = n
        self.skip = skip
        self.mix_changes = changes

    def apply_update(self, entry: dict[str, Any]) -> None:
        """Serve new weights from the cursor on (one update of the mix's ``adaptive:`` policy,
        :func:`trainer_bridge.adaptive.history_entry`); batches prefetched with the old ones are
        dropped. ``entry["at"]`` must be the cursor."""
        if int(entry["at"]) != self.samples_committed:
            raise ValueError(f"a weight update takes effect at the cursor {self.samples_committed}, not {entry['at']}")
        self._drop_pending()
        self.plan.set_history(self.plan.history + (entry,))

    def add_skip(self, ranges: SkipRanges) -> None:
        """Jump over ``ranges`` from now on. A range that starts before the cursor would
        un-train samples already served: that is an error saying which checkpoint to resume
        from instead."""
        n = self.samples_committed
        for r in ranges.ranges:
            if self.skip.union(SkipRanges([r])).skipped_before(n) != self.skip.skipped_before(n):
                raise SpecError(
                    f"skip range {list(r)} starts before this checkpoint's cursor {n} (global samples "
                    f"already trained on): resume from an earlier checkpoint (one whose cursor is <= {r[0]}), "
                    f"or skip [{n}, {r[1]}) instead")
        self._drop_pending()
        self.skip = self.skip.union(ranges)

    @property
    def samples_skipped(self) -> int:
        """Skipped samples the cursor has passed."""
        return self.skip.skipped_before(self.samples_committed)

    # -- reading -------------------------------------------------------------------------
    @property
    def steps_left(self) -> int:
        kept = self.skip.kept_between(self.samples_committed, self.plan.total_samples)
        return kept // self.config.global_batch

    def step_range(self, cursor: int) -> tuple[int, int]:
        """``[first, end)`` global samples spanned by the global batch starting at ``cursor``
        (skipped samples inside it included): the range to skip to drop this batch."""
        runs = self.skip.runs(cursor, self.config.global_batch)
        return runs[0][0], runs[-1][0] + runs[-1][1]

    def batch_at(self, cursor: int) -> dict[str, torch.Tensor]:
        """This rank's slice of the global batch starting at global sample ``cursor``."""
        cfg = self.config
        runs = self.skip.runs(self.skip.advance(cursor, cfg.rank * cfg.local_batch), cfg.local_batch)
        tokens = np.empty((cfg.local_batch, self.plan.seq_len + 1), dtype=np.int64)  # the copy widens
        sources = np.empty(cfg.local_batch, dtype=np.int64)
        row = 0
        for start, n in runs:  # row slices of a C-contiguous array stay contiguous
            self.plan.read(start, n, out=tokens[row:row + n], sources=sources[row:row + n])
            if self.plan.fim is not None:  # the mix's fim: (trainer_bridge/fim.py), by global sample number
                self.plan.fim.apply(tokens[row:row + n], start, sources[row:row + n])
            row += n
        return self._to_tensors(tokens, sources)

    def _to_tensors(self, tokens: np.ndarray, sources: np.ndarray) -> dict[str, torch.Tensor]:
        full = torch.from_numpy(tokens)
        batch = {"input_ids": full[:, :-1], "labels": full[:, 1:], "source": torch.from_numpy(sources)}
        if self.config.with_position_ids:
            batch["position_ids"] = torch.from_numpy(position_ids(tokens[:, :-1], self.plan.eos_id))
        if self.config.pin_memory:
            batch = {k: v.contiguous().pin_memory() for k, v in batch.items()}
        return batch

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        return self

    def __next__(self) -> dict[str, torch.Tensor]:
        cfg = self.config
        if self.steps_left == 0:
            self._drop_pending()
            raise StopIteration
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=cfg.num_workers, thread_name_prefix="mixloader")
        # Keep `prefetch` steps in flight, in order, starting at the cursor.
        want = self.samples_committed
        if self._pending and self._pending[0][0] != want:
            self._drop_pending()
        left = self.steps_left - len(self._pending)
        nxt = self.skip.advance(self._pending[-1][0], cfg.global_batch) if self._pending else want
        while len(self._pending) < cfg.prefetch and left > 0:
            self._pending.append((nxt, self._pool.submit(self.batch_at, nxt)))
            nxt = self.skip.advance(nxt, cfg.global_batch)
            left -= 1
        _, fut = self._pending.popleft()
        batch = fut.result()
        self.samples_committed = self.skip.advance(want, cfg.global_batch)
        return batch

    def _drop_pending(self) -> None:
        for _, fut in self._pending:
            fut.cancel()
        for _, fut in self._pending:
            if not fut.cancelled():
                fut.exception()  # wait; a read error of a dropped batch does not matter
        self._pending.clear()

    def close(self) -> None:
        """Stop the prefetch threads (also done on garbage collection of the pool)."""
        self._drop_pending()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> "MixLoader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def micro_batches(batch: dict[str, torch.Tensor], size: int) -> list[dict[str, torch.Tensor]]:
    """Split a rank's batch into micro-batches of ``size`` rows (gradient accumulation)."""
    n = batch["input_ids"].shape[0]
    if size < 1 or n % size:
        raise SpecError(f"micro_batch {size} must divide the per-rank batch {n}")
    return [{k: v[i:i + size] for k, v in batch.items()} for i in range(0, n, size)]
