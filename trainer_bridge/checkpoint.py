"""Distributed checkpoints (``torch.distributed.checkpoint``) of a whole training run.

One checkpoint is a DCP directory ``<ckpt_dir>/step-<NNNNNNNN>/`` holding

* ``model`` / ``optim``: sharded state dicts from ``get_state_dict`` (every rank writes its
  shards; DCP reshards on load, so a checkpoint also loads on another dp x tp layout),
* ``train``: step, LR-scheduler state and the loader state (plan hash + samples committed),
* ``rng``: torch CPU (and CUDA) generator states. The trainer seeds every rank alike and
  draws no per-rank randomness, so rank 0's states are the ones saved and restored.

Commit last: DCP writes into ``step-N.tmp``; after every rank has finished, rank 0 renames
it to ``step-N``. A run killed mid-save leaves only a ``.tmp`` that :func:`latest` ignores.
"""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from trainer_bridge.loader import MixLoader

log = logging.getLogger(__name__)

_STEP_DIR = re.compile(r"^step-(\d{8})$")


def step_dir(ckpt_dir: str | Path, step: int) -> Path:
    return Path(ckpt_dir) / f"step-{step:08d}"


def latest(ckpt_dir: str | Path | None) -> Path | None:
    """The committed checkpoint with the highest step, or None."""
    if ckpt_dir is None or not Path(ckpt_dir).is_dir():
        return None
    found = [(int(m.group(1)), p) for p in Path(ckpt_dir).iterdir() if (m := _STEP_DIR.match(p.name)) and p.is_dir()]
    return max(found)[1] if found else None


def _rng_state() -> dict[str, torch.Tensor]:
    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def _state(model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, step: int,
           loader: MixLoader) -> dict[str, Any]:
    msd, osd = get_state_dict(model, optimizer)
    return {"model": msd, "optim": osd, "rng": _rng_state(),
            "train": {"step": step, "scheduler": scheduler.state_dict(), "loader": loader.state_dict()}}


def save(ckpt_dir: str | Path, *, step: int, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
         scheduler: Any, loader: MixLoader) -> Path:
    """Write checkpoint ``step`` (collective: every rank calls it)."""
    final = step_dir(ckpt_dir, step)
    tmp = final.with_name(final.name + ".tmp")
    rank = dist.get_rank()
    if rank == 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    dist.barrier()
    dcp.save(_state(model, optimizer, scheduler, step, loader), checkpoint_id=str(tmp))
    dist.barrier()
    if rank == 0:
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    dist.barrier()
    log.info("saved checkpoint %s", final)
    return final


def load(path: str | Path, *, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any,
         loader: MixLoader) -> int:
    """Restore everything :func:`save` wrote into live objects; returns the step to continue after.

    A loader state from another mix plan raises (see ``MixLoader.load_state_dict``) before any
    training happens.
    """
    state = _state(model, optimizer, scheduler, 0, loader)
    dcp.load(state, checkpoint_id=str(path))
    loader.load_state_dict(state["train"]["loader"])
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    scheduler.load_state_dict(state["train"]["scheduler"])
    torch.set_rng_state(state["rng"]["torch"])
    if "cuda" in state["rng"] and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["rng"]["cuda"])
    step = int(state["train"]["step"])
    log.info("resumed from %s at step %d", path, step)
    return step
