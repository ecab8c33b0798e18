"""Per-rank memory estimate of a training step, printed at start and used to pick the
micro-batch and activation-checkpointing mode when the config says ``auto``.

What is counted (bytes per rank; ``P`` = this rank's share of parameters after tensor
parallel, ``P/dp`` its FSDP shard):

* **params, grads, optimizer**: fp32 master shards ``4 P/dp`` each for params and grads,
  ``8 P/dp`` for AdamW's two moments.
* **FSDP working set**: the unsharded root (embedding, final norm, output head: never resharded
  between forward and backward) and two unsharded blocks (the one computing, the one
  prefetched) in the parameter dtype; the root's unsharded gradients during backward; with
  gradient accumulation (more than one micro-batch) FSDP2 keeps every unsharded gradient
  (fp32) from the first micro-batch to the last.
* **activations** of one micro-batch, what autograd saves per token per block (derived from
  :mod:`trainer_bridge.model`): the block input, two norm outputs and the post-attention
  residual (``4 D``); inside attention ``v``, rotated ``q`` and ``k``, the attention output
  and its reshaped copy (``5 D / tp``); in the MLP ``w1``, ``w3``, ``silu`` and product outputs
  (``4 H / tp``); under bf16 the norms' fp32 copies (``2 x 4 D`` bytes). Checkpointing keeps
  only what :data:`AC_MODES` says. **Block transient**: backward works on one block at a
  time: it recomputes it when checkpointed (its activations again) and holds the gradients
  of its widest tensors (``w1``, ``w3`` and ``silu`` outputs and three ``D``-wide ones).
* **loss**: the output head's logits at their widest, four fp32-sized ``tokens x V`` tensors
  (logits, log-softmax, and their two gradients) for all ``b T`` tokens (``loss: plain``) or
  for one chunk (``loss: chunked``). A transient: backward finishes the loss before it
  recomputes any block, so only the larger of the two transients counts.

The peak is the larger of the backward peak (params, moments, FSDP working set, kept
activations and the larger transient) and the optimizer-step peak (params + grads + moments,
plus one temporary the size of the shard for the foreach AdamW; the fused one needs none).
Flash / memory-efficient attention is assumed
(no ``T x T`` scores); a document mask adds its ``b x T x T`` boolean.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from trainer_bridge.model import ModelConfig
from trainer_bridge.parallelize import AC_MODES

GiB = 1 << 30
#: ``auto`` stops growing the micro-batch once it holds this many tokens (matmuls are
#: efficient by then) and prefers less recomputation instead
TARGET_TOKENS = 16384


@dataclass(kw_only=True, frozen=True)
class MemoryEstimate:
    micro_batch: int
    ac: str
    params: int
    grads: int
    optimizer: int
    fsdp: int
    activations: int
    recompute: int
    loss: int
    step_temp: int

    @property
    def backward_peak(self) -> int:
        return self.params + self.optimizer + self.fsdp + self.activations + max(self.loss, self.recompute)

    @property
    def step_peak(self) -> int:
        return self.params + self.optimizer + self.grads + self.step_temp

    @property
    def peak(self) -> int:
        return max(self.backward_peak, self.step_peak)

    def lines(self, budget: int | None) -> list[str]:
        def g(n: int) -> str:
            return f"{n / GiB:8.3f} GiB"
        room = f" of {budget / GiB:.2f} GiB available" if budget else ""
        fits = "" if budget is None else ("  (fits)" if self.peak <= budget else "  (DOES NOT FIT: expect OOM)")
        return [
            f"memory estimate per rank (micro_batch {self.micro_batch}, ac {self.ac}):",
            f"  params (fp32 shard)       {g(self.params)}",
            f"  grads (fp32 shard)        {g(self.grads)}",
            f"  optimizer (AdamW moments) {g(self.optimizer)}",
            f"  FSDP unsharded working    {g(self.fsdp)}",
            f"  activations / micro-batch {g(self.activations)}",
            f"  block transient (bwd)     {g(self.recompute)}",
            f"  loss (logits at widest)   {g(self.loss)}",
            f"  peak: backward {self.backward_peak / GiB:.3f} GiB, optimizer step {self.step_peak / GiB:.3f} GiB "
            f"-> {self.peak / GiB:.3f} GiB{room}{fits}",
        ]


def estimate(m: ModelConfig, *, seq_len: int, micro_batch: int, n_micro: int, dp: int, tp: int, ac: str,
             bf16: bool, chunk_tokens: int | None, document_mask: bool = False, fused_adam: bool = False
             ) -> MemoryEstimate:
    """The estimate for one rank; see the module docstring for what each term counts."""
    D, H, L, V = m.dim, m.hidden_dim, m.n_layers, m.vocab_size
    cb = 2 if bf16 else 4                     # compute / parameter dtype bytes
    block = (4 * D * D + 3 * D * H) // tp + 2 * D
    root = 2 * V * D + D
    P = L * block + root
    shard = math.ceil(P / dp)
    fsdp = (root + 2 * block) * cb + root * 4
    if n_micro > 1:
        fsdp += (P - root) * 4                # unsharded accumulated grads of the blocks (root's counted)
    attn_inner = 5 * D // tp * cb
    block_in = D * cb
    full = block_in + 3 * D * cb + attn_inner + 4 * H // tp * cb + (2 * D * 4 if bf16 else 0)
    per_token, again = {
        "none": (L * full, 0),
        "attention": (L * (full - attn_inner), attn_inner),
        "every_other": (math.ceil(L / 2) * block_in + (L // 2) * full, full),
        "full": (L * block_in, full),
    }[ac]
    per_token += 2 * D * cb + (4 * D if bf16 else 0)       # final norm: its input and output
    again += (3 * H // tp + 3 * D) * cb                      # gradients of the block's widest tensors
    tokens = micro_batch * seq_len
    acts = tokens * per_token + (micro_batch * seq_len * seq_len if document_mask else 0)
    loss_tokens = tokens if chunk_tokens is None else min(chunk_tokens, tokens)
    loss = 16 * loss_tokens * V + 4 * tokens
    return MemoryEstimate(micro_batch=micro_batch, ac=ac, params=4 * shard, grads=4 * shard, optimizer=8 * shard,
                          fsdp=fsdp, activations=acts, recompute=tokens * again, loss=loss,
                          step_temp=0 if fused_adam else 4 * shard)


def available_bytes(device_type: str, local_ranks: int) -> int | None:
    """Memory one rank may use: the GPU's free memory (minus 5% for the allocator's
    fragmentation), or on CPU the host's available memory split over the local ranks."""
    if device_type == "cuda":
        import torch

        free, _total = torch.cuda.mem_get_info()
        return int(free * 0.95)
    try:
        with open("/proc/meminfo", encoding="ascii") as f:  # host info, not user data
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024 // max(1, local_ranks)
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // max(1, local_ranks)
    except (ValueError, OSError):
        return None


def choose(m: ModelConfig, *, seq_len: int, local_batch: int, micro_batch: int | None, ac: str, budget: int | None,
           **kw) -> tuple[MemoryEstimate, bool]:
    """Pick ``(micro_batch, ac)`` where ``micro_batch is None`` / ``ac == "auto"`` ask for it.

    Candidates: micro-batches that divide the local batch (largest first), AC modes from least
    to most recomputation. The first mode whose largest fitting micro-batch reaches
    :data:`TARGET_TOKENS` tokens (or the whole local batch) wins; failing that, the largest
    fitting micro-batch (less recomputation on a tie). Returns the estimate and whether it fits
    (with nothing fitting: the smallest configuration, so the caller can say why)."""
    mbs = [micro_batch] if micro_batch else [d for d in range(local_batch, 0, -1) if local_batch % d == 0]
    modes = list(AC_MODES) if ac == "auto" else [ac]

    def est(mb: int, mode: str) -> MemoryEstimate:
        return estimate(m, seq_len=seq_len, micro_batch=mb, n_micro=local_batch // mb, ac=mode, **kw)

    if budget is None:  # nothing known: the largest micro-batch, the least recomputation
        return est(mbs[0], modes[0]), True
    best = None
    for mode in modes:
        mb = next((mb for mb in mbs if est(mb, mode).peak <= budget), None)
        if mb is None:
            continue
        if mb == mbs[0] or mb * seq_len >= TARGET_TOKENS:
            return est(mb, mode), True
        if best is None or mb > best.micro_batch:
            best = est(mb, mode)
    if best is not None:
        return best, True
    return est(mbs[-1], modes[-1]), False


def choose_loss(m: ModelConfig, *, loss: str, cuda: bool, chunk_tokens: int, **kw
                ) -> tuple[int | None, MemoryEstimate, bool]:
    """The loss mode with :func:`choose`'s ``(micro_batch, ac)``: ``(chunk tokens or None for
    plain, estimate, fits)``. ``loss: auto`` is plain on CUDA when plain fits at the micro-batch
    and checkpointing the chunked loss gets (it skips recomputing the logits in backward: 47.5%
    -> 51.8% MFU for the 1.1B config compiled in bf16 on an H200), chunked otherwise and on CPU
    (host memory is shared with the loader and the checkpoint writer)."""
    chunk = None if loss == "plain" else chunk_tokens
    est, fits = choose(m, chunk_tokens=chunk, **kw)
    if loss == "auto" and cuda:
        plain, plain_fits = choose(m, chunk_tokens=None, **kw)
        if plain_fits and (plain.micro_batch, plain.ac) == (est.micro_batch, est.ac):
            return None, plain, True
    return chunk, est, fits
