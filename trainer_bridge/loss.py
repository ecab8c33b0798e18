"""Cross-entropy over the output head without the whole micro-batch's fp32 logits at once.

The output head is the model's widest activation: ``B x T x V`` logits (V ~ 50k) plus their
fp32 copy, log-softmax and gradient are several times the size of a whole transformer
block's activations. :func:`token_losses` computes ``logits -> cross-entropy`` one chunk of
``chunk_tokens`` tokens at a time under non-reentrant activation checkpointing: forward
keeps only each chunk's per-token losses, and backward recomputes one chunk's logits at a
time (one extra ``chunk x D x V`` matmul per chunk, about a third of the head's training
FLOPs). Peak memory for the loss becomes ``chunk_tokens x V`` instead of ``B T x V``.

Losses come back per token (``[B, T]``, fp32, no reduction), so callers choose the
reduction: :func:`mean_loss` for the training objective and :func:`loss_per_sample` for
per-sample (per-source) logging.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


def _head_ce(output: nn.Module, h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    logits = output(h)
    return F.cross_entropy(logits.float(), y, reduction="none")


def token_losses(hidden: torch.Tensor, output: nn.Module, labels: torch.Tensor, *,
                 chunk_tokens: int | None) -> torch.Tensor:
    """Per-token cross-entropy ``[B, T]`` (fp32) of ``output(hidden)`` against ``labels``.

    ``hidden`` is the final-norm output ``[B, T, D]``; ``chunk_tokens=None`` is the plain path
    (all logits at once, no recomputation), otherwise chunks of that many tokens (flattened
    over ``B x T``) are checkpointed one by one. Both give the same values; the gradients
    differ only by summation order (see tests/unit/test_trainer_perf.py for the tolerance)."""
    B, T, D = hidden.shape
    h, y = hidden.reshape(B * T, D), labels.reshape(B * T)
    if chunk_tokens is None or chunk_tokens >= B * T:
        tok = _head_ce(output, h, y)
    else:
        tok = torch.cat([checkpoint(_head_ce, output, hc, yc, use_reentrant=False)
                         for hc, yc in zip(h.split(chunk_tokens), y.split(chunk_tokens))])
    # a fresh tensor, not a view: FSDP's root hooks its output for backward (B T floats: cheap)
    return tok.view(B, T).clone()


def mean_loss(tok: torch.Tensor) -> torch.Tensor:
    """The training objective: mean token loss over the micro-batch."""
    return tok.mean()


def loss_per_sample(tok: torch.Tensor) -> torch.Tensor:
    """``[B]``: each sample's mean token loss (for per-source loss; detach it for logging).

    Every row has ``seq_len`` labelled tokens, so the mean over rows of this equals
    :func:`mean_loss`."""
    return tok.mean(dim=1)
