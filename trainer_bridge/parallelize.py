"""Parallelism applied to :class:`~trainer_bridge.model.GPT` from outside, in a fixed order:
tensor parallel, then (optionally) activation checkpointing, then FSDP2 ``fully_shard``.

Layout on a 2-D ``DeviceMesh`` ``(dp, tp)``, ranks laid out ``rank = dp_rank * tp + tp_rank``
(tensor-parallel peers adjacent, i.e. inside one node):

* ``tp``: in every block, ``wq/wk/wv`` and ``w1/w3`` are column-parallel (each rank computes
  a slice of heads / hidden units), ``wo`` and ``w2`` row-parallel (partial sums all-reduced
  back to a replicated activation). Embedding, norms and output head stay replicated over tp.
* ``dp``: FSDP2 shards every parameter (TP-sharded ones become 2-D DTensors) over dp, one
  ``fully_shard`` group per block plus the root, gradients averaged over dp.

Data-parallel rank = ``dp_rank``: all tp peers of one dp rank read the same batch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch
from torch import nn
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

from datapipe.errors import SpecError

log = logging.getLogger(__name__)


@dataclass(kw_only=True, frozen=True)
class ParallelDims:
    """Data- and tensor-parallel degrees; ``dp * tp`` must equal the world size."""

    dp: int
    tp: int
    world_size: int

    def __post_init__(self) -> None:
        if self.dp < 1 or self.tp < 1:
            raise SpecError(f"parallel: dp ({self.dp}) and tp ({self.tp}) must be >= 1")
        if self.dp * self.tp != self.world_size:
            raise SpecError(f"parallel: dp {self.dp} x tp {self.tp} = {self.dp * self.tp} but the world size is "
                            f"{self.world_size}; set dp to world_size / tp (or dp: -1 to infer it)")

    @classmethod
    def infer(cls, *, dp: int, tp: int, world_size: int) -> "ParallelDims":
        """``dp = -1`` means 'whatever is left': ``world_size // tp``."""
        if dp == -1:
            if tp < 1 or world_size % tp:
                raise SpecError(f"parallel: tp {tp} does not divide the world size {world_size}")
            dp = world_size // tp
        return cls(dp=dp, tp=tp, world_size=world_size)

    def build_mesh(self, device_type: str) -> DeviceMesh:
        return init_device_mesh(device_type, (self.dp, self.tp), mesh_dim_names=("dp", "tp"))


def apply_tp(model: nn.Module, tp_mesh: DeviceMesh) -> None:
    """Column/row-parallel plans over every block's attention and MLP."""
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    tp = tp_mesh.size()
    cfg = model.cfg
    if cfg.n_heads % tp or cfg.hidden_dim % tp:
        raise SpecError(f"parallel: tp {tp} must divide model.n_heads ({cfg.n_heads}) and the MLP width "
                        f"({cfg.hidden_dim})")
    plan = {
        "attention.wq": ColwiseParallel(), "attention.wk": ColwiseParallel(), "attention.wv": ColwiseParallel(),
        "attention.wo": RowwiseParallel(),
        "feed_forward.w1": ColwiseParallel(), "feed_forward.w3": ColwiseParallel(),
        "feed_forward.w2": RowwiseParallel(),
    }
    for block in model.layers:
        parallelize_module(block, tp_mesh, plan)


def apply_activation_checkpointing(model: nn.Module) -> None:
    """Recompute each block in backward (memory for compute)."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    for i, block in enumerate(model.layers):
        model.layers[i] = checkpoint_wrapper(block, preserve_rng_state=False)


def apply_fsdp(model: nn.Module, dp_mesh: DeviceMesh, *, param_dtype: torch.dtype | None,
               reduce_dtype: torch.dtype | None) -> None:
    """FSDP2 per block, then the root (embedding, final norm, output)."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mp = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=reduce_dtype)
    n = len(model.layers)
    for i, block in enumerate(model.layers):
        # The last block's parameters are needed again right away by backward: keep them.
        fully_shard(block, mesh=dp_mesh, mp_policy=mp, reshard_after_forward=i < n - 1)
    fully_shard(model, mesh=dp_mesh, mp_policy=mp)


def parallelize(model: nn.Module, dims: ParallelDims, mesh: DeviceMesh, *, bf16: bool = False,
                activation_checkpointing: bool = False) -> nn.Module:
    """Apply TP, activation checkpointing and FSDP2 to ``model`` in place (in that order)."""
    if dims.tp > 1:
        apply_tp(model, mesh["tp"])
    if activation_checkpointing:
        apply_activation_checkpointing(model)
    apply_fsdp(model, mesh["dp"], param_dtype=torch.bfloat16 if bf16 else None,
               reduce_dtype=torch.float32 if bf16 else None)
    log.debug("parallelized: dp=%d tp=%d", dims.dp, dims.tp)
    return model
