"""Distributed checkpoints (``torch.distributed.checkpoint``) of a whole training run.

One checkpoint is a DCP directory ``<ckpt_dir>/step-<NNNNNNNN>/`` holding

* ``model`` / ``optim``: sharded state dicts from ``get_state_dict`` (every rank writes its
  shards; DCP reshards on load, so a checkpoint also loads on another dp x tp layout),
* ``train``: step, LR-scheduler state and the loader state (plan hash, cursor, skip ranges,
  the plan's prefix key, the mix changes so far and an adaptive mix's weight history; a
  checkpoint written before those existed still loads, as a state that only resumes under
  its own plan hash),
* ``rng``: torch CPU (and CUDA) generator states. The trainer seeds every rank alike and
  draws no per-rank randomness, so rank 0's states are the ones saved and restored.

**Complete means marked.** A checkpoint counts only once its marker file ``_COMPLETE`` exists.
Rank 0 writes it (atomically: temp file + rename) after DCP's save has returned there, which
happens only after every rank's shards and the metadata are written. A run killed mid-save,
sync or async, leaves a directory without the marker: :func:`latest` ignores it and
:func:`rollback` deletes it.

**Async saves** (:class:`Checkpointer` with ``async_save=True``): ``dcp.async_save`` copies the
state to CPU memory (the step waits for that copy only), then a background thread writes it
over a dedicated gloo process group, so the training loop's collectives never interleave with
the writer's. At most one save is in flight: the next save, the end of the run and a stop
signal wait for it; the marker is written when it has finished.

**Damaged means skipped.** A checkpoint can be marked complete and still not load: a data
file truncated or lost afterwards (a full disk, an interrupted copy), its metadata unreadable.
:func:`restore` checks every checkpoint before loading anything from it (the metadata must
read, and every file it indexes must be there and hold the bytes it indexes: a cheap check,
no data read); a damaged newest checkpoint is skipped with one warning naming it and why,
and the previous complete one is tried (none left: the run starts fresh, saying so). A
checkpoint named by ``resume_from`` is never swapped for another: damaged, it is an error.
A load that fails past that check (content corrupted in place, or a model or mix that no
longer matches) is a one-line error naming the checkpoint and the way out.

**Rollback.** Resuming from an older checkpoint than the newest (``resume_from``, typically
to skip a bad data range) abandons the checkpoints after it: :func:`rollback` moves them
into ``<ckpt_dir>/abandoned-after-step-<N>[-k]/`` so a later resume cannot pick a checkpoint of the
abandoned branch.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from datapipe import fs
from datapipe.errors import SpecError
from trainer_bridge.loader import MixLoader

log = logging.getLogger(__name__)

MARKER = "_COMPLETE"
_STEP_DIR = re.compile(r"^step-(\d{8})$")


def step_dir(ckpt_dir: str | Path, step: int) -> Path:
    return Path(ckpt_dir) / f"step-{step:08d}"


def is_complete(path: str | Path) -> bool:
    return (Path(path) / MARKER).is_file()


def _step_dirs(ckpt_dir: str | Path | None) -> list[tuple[int, Path]]:
    if ckpt_dir is None or not Path(ckpt_dir).is_dir():
        return []
    return sorted((int(m.group(1)), p) for p in Path(ckpt_dir).iterdir() if (m := _STEP_DIR.match(p.name))
                  and p.is_dir())


def complete_steps(ckpt_dir: str | Path | None) -> list[int]:
    """Steps of the complete checkpoints in ``ckpt_dir``, ascending."""
    return [s for s, p in _step_dirs(ckpt_dir) if is_complete(p)]


def latest(ckpt_dir: str | Path | None) -> Path | None:
    """The complete checkpoint with the highest step, or None."""
    steps = complete_steps(ckpt_dir)
    return step_dir(ckpt_dir, steps[-1]) if steps else None  # type: ignore[arg-type]


def find(ckpt_dir: str | Path | None, resume_from: int | str | None) -> Path | None:
    """The checkpoint a run starts from: ``resume_from`` (a step in ``ckpt_dir`` or a
    checkpoint path) when given, else the newest complete one in ``ckpt_dir`` (None: a fresh run)."""
    if resume_from is None:
        return latest(ckpt_dir)
    if isinstance(resume_from, int):
        if ckpt_dir is None:
            raise SpecError(f"resume_from: {resume_from} is a step number, which needs ckpt_dir; "
                            "give a checkpoint path instead")
        path = step_dir(ckpt_dir, resume_from)
    else:
        path = Path(resume_from)
    if not is_complete(path):
        raise SpecError(f"resume_from: {path} is not a complete checkpoint (no {MARKER} marker); complete "
                        f"checkpoints in {ckpt_dir}: steps {complete_steps(ckpt_dir) or 'none'}")
    return path


def problem(path: str | Path) -> str | None:
    """Why the checkpoint at ``path`` cannot be loaded, or None: its metadata is missing or does
    not read, or a data file it indexes is missing or shorter than the bytes it indexes (a
    truncated copy). Reads the metadata and file sizes only, so it costs the same for any
    checkpoint size; corruption that keeps the sizes is found by :func:`load`."""
    path = Path(path)
    try:
        meta = dcp.FileSystemReader(str(path)).read_metadata()
    except FileNotFoundError:
        return "its metadata file .metadata is missing"
    except Exception as e:  # a torn pickle raises any of a dozen types
        return f"its metadata file .metadata does not read ({_one_line(e)})"
    need: dict[str, int] = {}
    for info in (meta.storage_data or {}).values():
        need[info.relative_path] = max(need.get(info.relative_path, 0), info.offset + info.length)
    for rel, n in sorted(need.items()):
        f = path / rel
        if not f.is_file():
            return f"data file {rel} is missing"
        if (size := f.stat().st_size) < n:
            return f"data file {rel} is truncated ({size:,} bytes; the metadata indexes {n:,})"
    return None


def _one_line(e: BaseException) -> str:
    """``Type: first line`` of an error; for DCP's per-rank wrapper, of the lowest rank's error."""
    if isinstance(e, CheckpointException) and e.failures:
        e = e.failures[min(e.failures)][0]
    first = next((line for line in str(e).splitlines() if line.strip()), "")
    return f"{type(e).__name__}: {first.strip()}" if first else type(e).__name__


def _agreed_problem(path: Path) -> str | None:
    """:func:`problem` as rank 0 sees it, on every rank (one verdict, so all ranks load alike)."""
    verdict = [problem(path) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(verdict, src=0)
    return verdict[0]


def restore(ckpt_dir: str | Path | None, resume_from: int | str | None, *, model: torch.nn.Module,
            optimizer: torch.optim.Optimizer, scheduler: Any, loader: MixLoader) -> tuple[int, Path | None]:
    """Load the checkpoint a run starts from (collective); returns (the step to continue after,
    the checkpoint), ``(0, None)`` for a fresh run.

    ``resume_from`` names the checkpoint (see :func:`find`); a damaged one is a
    :class:`SpecError`. Without it, the newest complete checkpoint that passes :func:`problem`
    is loaded; each damaged one newer than it is skipped with one warning line (name and
    reason). They stay where they are until :func:`rollback` moves them aside with the rest
    of the abandoned branch. None left: a fresh run, with a warning saying so."""
    live = {"model": model, "optimizer": optimizer, "scheduler": scheduler, "loader": loader}
    rank0 = dist.get_rank() == 0
    if resume_from is not None:
        path = find(ckpt_dir, resume_from)
        assert path is not None
        if why := _agreed_problem(path):
            others = [s for s in complete_steps(ckpt_dir) if step_dir(ckpt_dir, s) != path] if ckpt_dir else []
            raise SpecError(f"resume_from: checkpoint {path} cannot be loaded: {why}. Resume from another one "
                            f"(complete checkpoints in {ckpt_dir}: steps {others or 'none'}), or restore its files")
        return load(path, **live), path
    steps = complete_steps(ckpt_dir)
    for s in reversed(steps):
        path = step_dir(ckpt_dir, s)  # type: ignore[arg-type]
        why = _agreed_problem(path)
        if why is None:
            return load(path, **live), path
        if rank0:
            log.warning("checkpoint %s is marked complete but cannot be loaded: %s; skipping it (trying the "
                        "previous complete checkpoint)", path, why)
    if steps and rank0:
        log.warning("none of the %d complete checkpoints in %s can be loaded: starting fresh at step 0 (they are "
                    "moved aside, not deleted)", len(steps), ckpt_dir)
    return 0, None


def rollback(ckpt_dir: str | Path, step: int) -> None:
    """Make ``ckpt_dir`` consistent with a run continuing after ``step`` (collective).

    Incomplete checkpoints are deleted; complete ones after ``step`` belong to an abandoned
    branch and are moved into ``abandoned-after-step-<step>[-k]/`` (kept for inspection, never
    resumed from)."""
    if dist.get_rank() == 0:
        moved = None
        for s, path in _step_dirs(ckpt_dir):
            if not is_complete(path):
                shutil.rmtree(path)
                log.info("removed incomplete checkpoint %s", path)
            elif s > step:
                if moved is None:
                    moved = _fresh_dir(Path(ckpt_dir) / f"abandoned-after-step-{step:08d}")
                path.rename(moved / path.name)
        if moved is not None:
            log.warning("resumed at step %d: later checkpoints moved to %s", step, moved)
    dist.barrier()


def _fresh_dir(base: Path) -> Path:
    path, k = base, 1
    while path.exists():
        k += 1
        path = base.with_name(f"{base.name}-{k}")
    path.mkdir(parents=True)
    return path


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


class Checkpointer:
    """Saves checkpoints of one run into ``ckpt_dir``; every rank holds one and calls each
    method at the same point of the loop (they are collective)."""

    def __init__(self, ckpt_dir: str | Path, *, async_save: bool) -> None:
        self.dir = Path(ckpt_dir)
        self.async_save = async_save
        # The writer thread's collectives get their own group, apart from the training loop's.
        self._group = dist.new_group(backend="gloo") if async_save else None
        self._inflight: tuple[int, Path, dict, Future] | None = None

    def save(self, step: int, *, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any,
             loader: MixLoader) -> float:
        """Start (async) or write (sync) checkpoint ``step``; returns the seconds the caller was
        blocked (waiting for the previous save, staging, or the whole write when sync)."""
        t0 = time.perf_counter()
        self.wait()
        path = step_dir(self.dir, step)
        if dist.get_rank() == 0:
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True)
        dist.barrier()
        state = _state(model, optimizer, scheduler, step, loader)
        info = {"step": step, "loader": state["train"]["loader"]}
        if self.async_save:
            fut = dcp.async_save(state, checkpoint_id=str(path), process_group=self._group)
            self._inflight = (step, path, info, fut)
        else:
            dcp.save(state, checkpoint_id=str(path))
            self._commit(path, info)
        return time.perf_counter() - t0

    @property
    def in_flight(self) -> int | None:
        """The step of the save being written in the background, if any."""
        return self._inflight[0] if self._inflight else None

    def poll(self) -> None:
        """Commit the in-flight save if it has finished on this rank (never blocks)."""
        if self._inflight and self._inflight[3].done():
            self.wait()

    def wait(self) -> float:
        """Block until the in-flight save (if any) is written, then commit it; returns seconds waited."""
        if self._inflight is None:
            return 0.0
        t0 = time.perf_counter()
        _, path, info, fut = self._inflight
        self._inflight = None
        fut.result()  # re-raises a failed write
        self._commit(path, info)
        return time.perf_counter() - t0

    def _commit(self, path: Path, info: dict) -> None:
        """Rank 0 writes the marker: its save has returned, so every rank's shards and the
        metadata are on disk (DCP's coordinator finishes after gathering all ranks' writes)."""
        if dist.get_rank() == 0:
            fs.write_text(str(path / MARKER), json.dumps({**info, "time": time.time()}) + "\n")
            log.info("checkpoint %s complete", path)


def load(path: str | Path, *, model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any,
         loader: MixLoader) -> int:
    """Restore everything a :class:`Checkpointer` wrote into live objects; returns the step to
    continue after.

    A loader state from another mix plan raises (see ``MixLoader.load_state_dict``) before any
    training happens. A failed read (corrupt content, a model that does not match) is a
    one-line :class:`SpecError`; the live objects may then be partly overwritten, so the
    caller must not train on them.
    """
    state = _state(model, optimizer, scheduler, 0, loader)
    saved = dcp.FileSystemReader(str(path)).read_metadata().state_dict_metadata
    for key in ("plan_key", "mix_changes", "adaptive"):  # absent from checkpoints written before them
        if f"train.loader.{key}" not in saved:
            state["train"]["loader"].pop(key, None)
    try:
        dcp.load(state, checkpoint_id=str(path))
    except (Exception, CheckpointException) as e:  # CheckpointException is a BaseException
        raise SpecError(
            f"checkpoint {path} failed to load ({_one_line(e)}). If its files are damaged, resume from an earlier "
            f"checkpoint (--set resume_from=<step>; complete: steps {complete_steps(Path(path).parent)}) or move "
            "it aside; if the model config changed since it was written, resume with the config it was written "
            "with") from e
    loader.load_state_dict(state["train"]["loader"])
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    scheduler.load_state_dict(state["train"]["scheduler"])
    torch.set_rng_state(state["rng"]["torch"])
    if "cuda" in state["rng"] and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["rng"]["cuda"])
    step = int(state["train"]["step"])
    log.info("resumed from %s at step %d", path, step)
    return step
