"""Parallelism applied to :class:`~trainer_bridge.model.GPT` from outside, in a fixed order
(torchtitan's): float8 linears (optional), tensor parallel, activation checkpointing (per
:data:`AC_MODES`), ``torch.compile`` of each block, then FSDP2 ``fully_shard`` per block.
Compiling block by block keeps FSDP's per-block all-gathers and hooks outside the compiled
graphs and lets every block reuse one compiled graph (the blocks share their code and shapes).

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


#: activation checkpointing modes, least recomputation first: what each keeps for backward
AC_MODES = {
    "none": "every block's activations",
    "attention": "each block's activations except its attention internals (v, rotated q and k, the "
                 "attention output), which backward recomputes",
    "every_other": "all activations of odd blocks; even blocks (0, 2, ...) keep only their input and are "
                   "recomputed",
    "full": "only each block's input; every block is recomputed in backward",
}


def apply_activation_checkpointing(model: nn.Module, mode: str) -> None:
    """Wrap blocks (or their attention) so backward recomputes them (memory for compute)."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    if mode not in AC_MODES:
        raise SpecError(f"ac: {mode!r} is not one of {', '.join(AC_MODES)}")
    for i, block in enumerate(model.layers):
        if mode == "full" or (mode == "every_other" and i % 2 == 0):
            model.layers[i] = checkpoint_wrapper(block, preserve_rng_state=False)
        elif mode == "attention":
            block.attention = checkpoint_wrapper(block.attention, preserve_rng_state=False)


def apply_compile(model: nn.Module) -> None:
    """``torch.compile`` each block in place of itself (fullgraph: a graph break is a bug).

    Shapes are fixed by the mix's ``seq_len`` and the micro-batch, so each block compiles
    once; the blocks share the compiled code. ``dynamic=False``: another shape (an evaluation
    batch of another size) gets its own static graph instead of turning the training graph
    into a slower dynamic-shape one. State-dict keys gain ``_orig_mod.``, which
    ``torch.distributed.checkpoint.state_dict`` strips, so checkpoints load either way."""
    for i, block in enumerate(model.layers):
        model.layers[i] = torch.compile(block, fullgraph=True, dynamic=False)


def fp8_unavailable(device: torch.device) -> str | None:
    """Why float8 training cannot run here (None: it can). Never a silent fallback."""
    if device.type != "cuda":
        return (f"precision: fp8 needs a CUDA GPU with float8 tensor cores (Hopper sm_90, or Ada sm_89); "
                f"this run is on {device.type}. Use precision: bf16 (CUDA) or fp32 (CPU)")
    cc = torch.cuda.get_device_capability(device)
    if cc < (8, 9):
        return (f"precision: fp8 needs float8 tensor cores (compute capability >= 8.9: Ada / Hopper); "
                f"{torch.cuda.get_device_name(device)} is sm_{cc[0]}{cc[1]}. Use precision: bf16")
    try:
        import torchao.float8  # noqa: F401
    except ImportError as e:
        return (f"precision: fp8 needs torchao (pip install torchao==0.17.0, matching your torch); "
                f"importing torchao.float8 failed: {e}")
    return None


def apply_fp8(model: nn.Module, device: torch.device) -> None:
    """torchao float8 training (tensorwise dynamic scaling) on every block's linears; the
    output head stays in bf16 (its fp8 rounding hurts the loss most, torchtitan does the same)."""
    why = fp8_unavailable(device)
    if why:
        raise SpecError(why)
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    def wanted(mod: nn.Module, fqn: str) -> bool:  # float8 matmuls need dims divisible by 16
        return (fqn.startswith("layers.") and isinstance(mod, nn.Linear)
                and mod.in_features % 16 == 0 and mod.out_features % 16 == 0)

    convert_to_float8_training(model, config=Float8LinearConfig.from_recipe_name("tensorwise"),
                               module_filter_fn=wanted)


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
                ac: str = "none", compile: bool = False, fp8: bool = False) -> nn.Module:
    """Apply float8, TP, activation checkpointing, compile and FSDP2 to ``model`` in place
    (in that order)."""
    if fp8:
        if dims.tp > 1:
            raise SpecError("precision: fp8 with tp > 1 is not supported (float8 tensor-parallel plans are "
                            "not wired up); use tp: 1 with fp8, or precision: bf16")
        cuda = mesh.device_type == "cuda"
        apply_fp8(model, torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device(mesh.device_type))
    if dims.tp > 1:
        apply_tp(model, mesh["tp"])
    if ac != "none":
        apply_activation_checkpointing(model, ac)
    if compile:
        apply_compile(model)
    apply_fsdp(model, mesh["dp"], param_dtype=torch.bfloat16 if bf16 else None,
               reduce_dtype=torch.float32 if bf16 else None)
    log.debug("parallelized: dp=%d tp=%d ac=%s compile=%s fp8=%s", dims.dp, dims.tp, ac, compile, fp8)
    return model
