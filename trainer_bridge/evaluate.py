"""Loss per source: the training loss split by each sample's source, and validation loss on
each source's held-out tail.

**The seam with the loss computation.** The model returns per-token losses (``[B, T]``, fp32)
when given labels (:func:`trainer_bridge.loss.token_losses`, chunked so the whole micro-batch's
fp32 logits never exist at once); the optimised scalar is their mean, and
:meth:`SourceLoss.add` sums them per source (``index_add`` by the batch's ``source`` ids).
Samples never mix sources, so a sample's tokens all count for its source.

**Synchronisation.** :class:`SourceLoss` accumulates on the device with no host sync; at a
log step :meth:`SourceLoss.collect` all-reduces one ``[2, S]`` tensor over the data-parallel
group (sums and token counts) and resets. Tensor-parallel peers hold the same values and are
not reduced over.

**Validation** (:class:`ValidationSet`, :func:`validate`). A mix with ``validation:`` holds
out the last documents of every source (``MixPlan.train_tokens`` is where training stops);
the set is every non-overlapping ``seq_len + 1`` window of each tail, in source order, fixed
by the plan hash. Data-parallel rank ``r`` of ``W`` evaluates windows ``[r*V/W, ...)``
(padded so that every rank runs the same number of forward passes, which FSDP needs), and
one all-reduce gives each source's loss over all of its windows.
"""

from __future__ import annotations

import contextlib
import logging
import math
from typing import Any, Sequence

import numpy as np
import torch
import torch.distributed as dist

from trainer_bridge.mix import MixPlan, position_ids

log = logging.getLogger(__name__)


class SourceLoss:
    """Per-source sums of token losses and token counts since the last :meth:`collect`."""

    def __init__(self, names: Sequence[str], device: torch.device) -> None:
        self.names = tuple(names)
        self._acc = torch.zeros(2, len(self.names) + 1, dtype=torch.float64, device=device)  # last: padding

    def add(self, tok_loss: torch.Tensor, source: torch.Tensor, weight: torch.Tensor | None = None) -> None:
        """Add ``[B, T]`` token losses of rows from ``source`` (``[B]`` ids; rows with
        ``weight`` 0 are padding and go to a bucket that is never reported)."""
        src = source.to(tok_loss.device, non_blocking=True)
        if weight is not None:
            src = torch.where(weight.to(src.device) > 0, src, len(self.names))
        row = tok_loss.detach().double().sum(dim=1)
        self._acc[0].index_add_(0, src, row)
        self._acc[1].index_add_(0, src, torch.full_like(row, tok_loss.shape[1]))

    def collect(self, group: Any = None) -> dict[str, float]:
        """Mean token loss per source over everything added since the last call, summed over
        ``group`` (one all-reduce); sources with no tokens are left out. Resets."""
        acc = self._acc[:, :-1].clone()
        self._acc.zero_()
        if group is not None and dist.is_initialized() and dist.get_world_size(group) > 1:
            dist.all_reduce(acc, group=group)
        sums, counts = acc.tolist()
        return {n: s / c for n, s, c in zip(self.names, sums, counts) if c > 0}


class ValidationSet:
    """Every non-overlapping window of every source's held-out tail (see the module doc)."""

    def __init__(self, plan: MixPlan) -> None:
        if plan.spec.validation is None:
            raise ValueError("the mix has no validation split")
        self.plan = plan
        T = plan.seq_len
        src, starts = [], []
        for s, st in enumerate(plan.streams):
            cut = plan.train_tokens[s]
            n = (st.n_tokens - cut - 1) // T
            src += [s] * n
            starts += [cut + j * T for j in range(n)]
        self.source = np.array(src, dtype=np.int64)
        self.starts = np.array(starts, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.starts)

    def rows(self, idx: Sequence[int]) -> np.ndarray:
        """Tokens of windows ``idx`` as ``[len(idx), seq_len + 1]`` int64."""
        T = self.plan.seq_len
        out = np.empty((len(idx), T + 1), dtype=np.int64)
        for r, i in enumerate(idx):
            out[r] = self.plan.streams[int(self.source[i])].read(int(self.starts[i]), T + 1)
        return out


@torch.no_grad()
def validate(model: torch.nn.Module, vset: ValidationSet, *, rank: int, world: int, rows: int,
             device: torch.device, amp: Any = None, with_position_ids: bool = False, document_mask: bool = False,
             chunk_tokens: int | None = None, group: Any = None) -> dict[str, float]:
    """Validation loss per source (mean over the tokens of all its held-out windows)."""
    V = len(vset)
    per = math.ceil(V / world)
    mine = list(range(rank * per, min(V, (rank + 1) * per)))
    calls = math.ceil(per / rows)
    meter = SourceLoss(vset.plan.names, device)
    was_training = model.training
    model.eval()
    try:
        for c in range(calls):
            idx = mine[c * rows:(c + 1) * rows]
            weight = torch.zeros(rows)
            weight[:len(idx)] = 1
            idx = idx + [0] * (rows - len(idx))   # padding rows: same shape on every rank, never counted
            tokens = torch.from_numpy(vset.rows(idx))
            x, y = tokens[:, :-1], tokens[:, 1:]
            pos = torch.from_numpy(position_ids(tokens[:, :-1].numpy(), vset.plan.eos_id)).to(device) \
                if with_position_ids else None
            with amp or contextlib.nullcontext():
                tok = model(x.to(device), pos, document_mask=document_mask, labels=y.to(device),
                            loss_chunk_tokens=chunk_tokens)
            meter.add(tok, torch.from_numpy(vset.source[idx]), weight)
    finally:
        model.train(was_training)
    return meter.collect(group)
