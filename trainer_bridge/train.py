"""The bundled trainer: ``torchrun --nproc-per-node N -m trainer_bridge.train --config CFG.yaml``.

FSDP2 + tensor parallel over a ``(dp, tp)`` mesh, fed by the mix loader; ``gloo`` and fp32 on
CPU, ``nccl`` and bf16 on CUDA, the same code. Checkpoints resume the same run exactly. Also
runs without torchrun as a single process (``python -m trainer_bridge.train --config ...``).
Relative paths in the config (mix, ckpt_dir, metrics_path) are relative to the working
directory. SIGTERM / SIGINT stop the run cleanly after the current step with a complete
checkpoint. See ``docs/trainer.md`` (also for the loss-spike recovery playbook).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import os
import shlex
import signal
import socket
import sys
import statistics
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal, Sequence

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor

from datapipe import fs
from datapipe.errors import DatapipeError, SpecError
from trainer_bridge import checkpoint, memory, perf
from trainer_bridge.adaptive import AdaptivePolicy, weights_line
from trainer_bridge.evaluate import SourceLoss, ValidationSet, validate
from trainer_bridge.loss import mean_loss
from trainer_bridge.loader import LoaderConfig, MixLoader, micro_batches
from trainer_bridge.mix import resolve_mix
from trainer_bridge.model import GPT, ModelConfig
from trainer_bridge.order import SkipRanges
from trainer_bridge.parallelize import ParallelDims, fp8_unavailable, parallelize

log = logging.getLogger(__name__)

AUTO_VOCAB = 1  # model.vocab_size left out: take it from the mix
# Dense bf16 peak per GPU (TFLOP/s) for MFU; override with `peak_tflops`.
PEAK_BF16_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0, "L40S": 362.0, "A10": 125.0}


@dataclass(kw_only=True, frozen=True)
class TrainConfig:
    """Everything a run needs; YAML is a thin loader into this (see ``configs/sample.yaml``)."""

    mix: str
    model: ModelConfig
    dp: int = -1                      # -1: world_size // tp
    tp: int = 1
    global_batch: int = 8             # samples per optimizer step, over all dp ranks
    micro_batch: int | Literal["auto"] | None = "auto"  # rows per forward/backward on a rank (None: the whole
                                      # local batch; auto: from the memory estimate, docs/trainer.md)
    steps: int | None = None          # None: as many as the mix's token budget allows
    lr: float = 3e-4
    min_lr_ratio: float = 0.1
    warmup_steps: int = 10
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    seed: int = 0
    device: str = "auto"              # auto | cpu | cuda
    precision: Literal["auto", "fp32", "bf16", "fp8"] = "auto"  # auto: bf16 on CUDA, fp32 on CPU; fp8: torchao
    ac: Literal["auto", "none", "attention", "every_other", "full"] = "auto"  # activation checkpointing
    compile: bool | Literal["auto"] = "auto"  # torch.compile each block; auto: on CUDA only
    loss: Literal["auto", "chunked", "plain"] = "auto"  # chunked: logits + CE per chunk of tokens (trainer_bridge/
                                      # loss.py); auto: plain on CUDA when it fits at the same micro_batch/ac, else chunked
    loss_chunk_tokens: int = 4096
    position_ids: bool = False        # RoPE positions restart at every document
    document_mask: bool = False       # and attention stays inside documents (needs position_ids)
    loader_workers: int = 1
    prefetch: int = 2
    verify_shards: bool = True        # check shard content before training (cached; docs/shards.md)
    hash_cache: str | None = None     # the cache file; None: ~/.cache/datapipe/shard-hashes.json
    log_every: int = 1                # console line and per-source train loss every N steps
    eval_every: int = 0               # validation loss per source every N steps (the mix's validation:); 0: off
    ckpt_dir: str | None = None
    ckpt_every: int = 0               # 0: only at the end (when ckpt_dir is set)
    ckpt_async: bool = True           # write checkpoints in the background (DCP async_save); false: the step waits
    resume_from: int | str | None = None  # a step in ckpt_dir or a checkpoint path; None: the newest complete one
    skip: tuple[tuple[int, int], ...] = ()  # global-sample ranges [start, end) to jump over from now on
    spike_factor: float | None = 3.0  # report a loss / grad norm above this x its recent median (None: off)
    spike_window: int = 20            # steps in that median
    metrics_path: str | None = None   # JSONL, one line per step (rank 0)
    batch_digest: bool = False        # log a hash of every global batch (gathers it over dp; for tests)
    peak_tflops: float | None = None  # per device, for MFU; default from the GPU name
    straggler_factor: float | None = 1.5  # flag a rank whose step time exceeds this x the median (null: off)
    cpu_threads: int | None = None

    def __post_init__(self) -> None:
        if self.tp < 1 or (self.dp < 1 and self.dp != -1):
            raise SpecError(f"train: dp {self.dp} / tp {self.tp} must be >= 1 (dp may be -1: inferred)")
        if self.global_batch < 1:
            raise SpecError(f"train: global_batch {self.global_batch} must be >= 1")
        if self.micro_batch not in (None, "auto") and self.micro_batch < 1:
            raise SpecError(f"train: micro_batch {self.micro_batch} must be >= 1, auto, or null "
                            "(the whole local batch)")
        if self.loss not in {"auto", "chunked", "plain"}:
            raise SpecError(f"train: loss {self.loss!r} must be auto, chunked or plain")
        if self.loss_chunk_tokens < 1 or self.straggler_factor is not None and not self.straggler_factor > 1:
            raise SpecError(f"train: loss_chunk_tokens {self.loss_chunk_tokens} must be >= 1 and straggler_factor "
                            f"{self.straggler_factor} > 1 (or null: off)")
        if self.precision == "fp8" and self.device == "cpu":
            raise SpecError("train: precision: fp8 needs a CUDA GPU with float8 tensor cores (Hopper) and torchao; "
                            "device is cpu. Use precision: fp32 on CPU")
        if self.steps is not None and self.steps < 1:
            raise SpecError(f"train: steps {self.steps} must be >= 1 or left out")
        if self.device not in {"auto", "cpu", "cuda"}:
            raise SpecError(f"train: device {self.device!r} must be auto, cpu or cuda")
        if self.document_mask and not self.position_ids:
            raise SpecError("train: document_mask needs position_ids: true")
        if not self.lr > 0 or not 0 <= self.min_lr_ratio <= 1 or self.warmup_steps < 0 or self.grad_clip <= 0:
            raise SpecError("train: need lr > 0, 0 <= min_lr_ratio <= 1, warmup_steps >= 0, grad_clip > 0")
        if self.ckpt_every < 0 or self.log_every < 1 or self.eval_every < 0:
            raise SpecError("train: ckpt_every and eval_every must be >= 0 and log_every >= 1")
        if self.spike_factor is not None and not self.spike_factor > 1 or self.spike_window < 2:
            raise SpecError(f"train: spike_factor {self.spike_factor} must be > 1 (or null: off) and "
                            f"spike_window {self.spike_window} >= 2")
        if isinstance(self.resume_from, int) and self.resume_from < 0:
            raise SpecError(f"train: resume_from {self.resume_from} must be a step >= 0 or a checkpoint path")
        try:
            SkipRanges(self.skip)
        except ValueError as e:
            raise SpecError(f"train: {e}; e.g. --set skip='[[1200, 1264]]'") from None


_CONFIG_KEYS = {f.name for f in dataclasses.fields(TrainConfig)}


def _set_dotted(d: dict, key: str, value: Any) -> None:
    *parents, last = key.split(".")
    for p in parents:
        d = d.setdefault(p, {})
    d[last] = value


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> TrainConfig:
    """YAML + ``key=value`` overrides (dotted for the model: ``model.dim=128``) -> TrainConfig.

    Read and checked by :mod:`datapipe.config` like a job spec or a mix: a missing file, a
    misspelled key or a wrong type is a :class:`SpecError` naming the file and the key."""
    from datapipe.config import build, load_yaml_mapping, load_yaml_text

    raw = load_yaml_mapping(path, what="trainer config", keys=_CONFIG_KEYS,
                            missing="start from trainer_bridge/configs/sample.yaml")
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise SpecError(f"override {item!r} must be key=value")
        parsed = load_yaml_text(value, where=f"--set {key.strip()}")
        if isinstance(parsed, str):  # YAML 1.1 reads "3e-3" as a string
            try:
                parsed = float(parsed)
            except ValueError:
                pass
        _set_dotted(raw, key.strip(), parsed)
    model = raw.get("model")
    if model is None or isinstance(model, dict):   # vocab_size is resolved against the mix in `train`
        raw["model"] = {"vocab_size": AUTO_VOCAB, **(model or {})}
    return build(TrainConfig, raw, where=str(path))


def lr_factor(step: int, *, warmup: int, total: int, min_ratio: float) -> float:
    """Linear warmup over ``warmup`` steps, then cosine down to ``min_ratio`` at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def clip_grad_norm_(params: Iterable[torch.nn.Parameter], max_norm: float) -> torch.Tensor:
    """Global L2 norm over gradients living on different meshes (FSDP-only and FSDP x TP
    parameters), then in-place clipping; returns the pre-clip norm as a plain tensor.

    Per (mesh, placements) group: sum of squares of the local shards, all-reduced over the
    mesh dimensions the group is sharded on (never over replicated ones, which would count
    a replica twice)."""
    groups: dict[Any, list[torch.nn.Parameter]] = defaultdict(list)
    for p in params:
        if p.grad is not None:
            g = p.grad
            groups[(g.device_mesh, tuple(g.placements)) if isinstance(g, DTensor) else None].append(p)
    total_sq = None
    for key, group in groups.items():
        local = [p.grad.to_local() if key is not None else p.grad for p in group]
        sq = torch.stack(torch._foreach_norm(local)).float().pow(2).sum()
        if key is not None:
            mesh, placements = key
            for dim, placement in enumerate(placements):
                if placement.is_shard():
                    dist.all_reduce(sq, group=mesh.get_group(dim))
        total_sq = sq if total_sq is None else total_sq + sq
    total = total_sq.sqrt()
    for group in groups.values():  # foreach kernels cannot mix meshes: scale group by group
        torch.nn.utils.clip_grads_with_norm_(group, max_norm, total)
    return total


@dataclass(kw_only=True)
class Dist:
    """This process's place in the run."""

    rank: int
    world_size: int
    device: torch.device
    dims: ParallelDims
    mesh: Any
    dp_rank: int = 0


def init_distributed(cfg: TrainConfig) -> Dist:
    """Process group (nccl on CUDA, gloo on CPU), device and the (dp, tp) mesh."""
    cuda = torch.cuda.is_available() if cfg.device == "auto" else cfg.device == "cuda"
    if "RANK" not in os.environ:  # plain `python -m`: a world of one
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if cfg.cpu_threads:
        torch.set_num_threads(cfg.cpu_threads)
    if cuda:
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if cuda else "gloo")
    world = dist.get_world_size()
    dims = ParallelDims.infer(dp=cfg.dp, tp=cfg.tp, world_size=world)
    mesh = dims.build_mesh(device.type)
    return Dist(rank=dist.get_rank(), world_size=world, device=device, dims=dims, mesh=mesh,
                dp_rank=mesh["dp"].get_local_rank())


def _peak_flops(cfg: TrainConfig, device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    if cfg.peak_tflops:
        return cfg.peak_tflops * 1e12
    name = torch.cuda.get_device_name(device)
    return next((v * 1e12 for k, v in PEAK_BF16_TFLOPS.items() if k in name), None)


def _batch_digest(batch: dict[str, torch.Tensor], dp_group: Any) -> str | None:
    """blake2b of the *global* batch's windows (ranks' slices gathered in dp order)."""
    mine = torch.cat([batch["input_ids"], batch["labels"][:, -1:]], dim=1).numpy().tobytes()
    parts: list[Any] = [None] * dist.get_world_size(dp_group)
    dist.all_gather_object(parts, mine, group=dp_group)
    return hashlib.blake2b(b"".join(parts), digest_size=16).hexdigest()


@dataclass(kw_only=True)
class Run:
    """Everything a training loop touches, built once by :func:`build`."""

    plan: Any
    model: GPT
    model_cfg: ModelConfig
    opt: torch.optim.Optimizer
    sched: Any
    loader: MixLoader
    micro_batch: int
    total_steps: int
    precision: str                    # resolved: fp32 | bf16 | fp8
    compiled: bool
    chunk_tokens: int | None
    memory: memory.MemoryEstimate
    memory_budget: int | None
    src_loss: SourceLoss
    valset: ValidationSet | None = None
    policy: AdaptivePolicy | None = None  # the mix's adaptive: (loss-driven weights), or None


def build(cfg: TrainConfig, d: Dist) -> Run:
    """Resolve the mix, build and parallelise the model, optimizer, schedule and loader."""
    plan = resolve_mix(cfg.mix)
    mcfg = cfg.model
    if mcfg.vocab_size == AUTO_VOCAB:  # from the mix's tokenizer, padded for efficient matmuls
        mcfg = dataclasses.replace(mcfg, vocab_size=64 * math.ceil(plan.vocab_size / 64))
    elif mcfg.vocab_size < plan.vocab_size:
        raise SpecError(f"model.vocab_size {mcfg.vocab_size} < the mix's tokenizer vocabulary {plan.vocab_size}; "
                        "raise it or leave it out")
    if mcfg.max_seq_len < plan.seq_len:
        raise SpecError(f"model.max_seq_len {mcfg.max_seq_len} < the mix's seq_len {plan.seq_len}; raise it")
    local = cfg.global_batch // d.dims.dp
    mb = local if cfg.micro_batch is None else cfg.micro_batch
    if cfg.global_batch % d.dims.dp or mb != "auto" and local % mb:
        raise SpecError(f"train: global_batch {cfg.global_batch} must split into dp={d.dims.dp} ranks x "
                        f"micro_batch {mb} rows")
    cuda = d.device.type == "cuda"
    precision = cfg.precision if cfg.precision != "auto" else "bf16" if cuda else "fp32"
    if precision == "fp8" and (why := fp8_unavailable(d.device)):  # never a silent fallback to bf16
        raise SpecError(why)
    if precision == "bf16" and not cuda:
        raise SpecError(f"train: precision: {precision} needs CUDA (this run is on {d.device.type}); use fp32 or auto")
    bf16, compiled = precision != "fp32", cuda if cfg.compile == "auto" else cfg.compile
    budget = memory.available_bytes(d.device.type, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    chunk, est, fits = memory.choose_loss(mcfg, loss=cfg.loss, cuda=cuda, chunk_tokens=cfg.loss_chunk_tokens,
                                          seq_len=plan.seq_len, local_batch=local,
                                          micro_batch=None if mb == "auto" else mb, ac=cfg.ac, budget=budget,
                                          dp=d.dims.dp, tp=d.dims.tp, bf16=bf16, document_mask=cfg.document_mask,
                                          fused_adam=cuda)
    if not fits and (mb == "auto" or cfg.ac == "auto"):
        raise SpecError("train: no micro_batch / ac choice fits the memory available; the smallest:\n"
                        + "\n".join(est.lines(budget)) + "\nuse more ranks (dp / tp), a smaller model or seq_len")
    torch.manual_seed(cfg.seed)  # the same initial weights on every rank, before sharding
    with torch.device(d.device):
        model = GPT(mcfg)
    parallelize(model, d.dims, d.mesh, bf16=bf16, ac=est.ac, compile=compiled, fp8=precision == "fp8")
    opt = _adamw(model, cfg, fused=cuda)
    total = cfg.steps or plan.total_samples // cfg.global_batch
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(
        s, warmup=cfg.warmup_steps, total=total, min_ratio=cfg.min_lr_ratio))
    loader = MixLoader(plan, LoaderConfig(global_batch=cfg.global_batch, rank=d.dp_rank, world_size=d.dims.dp,
                                          num_workers=cfg.loader_workers, prefetch=cfg.prefetch,
                                          with_position_ids=cfg.position_ids, pin_memory=d.device.type == "cuda",
                                          verify=cfg.verify_shards, hash_cache=cfg.hash_cache))
    if cfg.eval_every and plan.spec.validation is None:
        raise SpecError(f"train: eval_every {cfg.eval_every} needs a validation split in the mix {cfg.mix}: add "
                        "`validation: {tokens: N}` to it (docs/mixes.md), or set eval_every: 0")
    policy = AdaptivePolicy(plan, d.device) if plan.spec.adaptive is not None else None
    needs_val = cfg.eval_every or policy is not None and policy.spec.signal == "validation"
    return Run(plan=plan, model=model, model_cfg=mcfg, opt=opt, sched=sched, loader=loader,
               micro_batch=est.micro_batch, total_steps=total, precision=precision, compiled=compiled,
               chunk_tokens=chunk, memory=est, memory_budget=budget, src_loss=SourceLoss(plan.names, d.device),
               valset=ValidationSet(plan) if needs_val else None, policy=policy)


def _adamw(model: torch.nn.Module, cfg: TrainConfig, *, fused: bool) -> torch.optim.Optimizer:
    """AdamW, fused (one kernel for all parameters) on CUDA, foreach elsewhere. One parameter
    group whatever the layout, so optimizer state (and the LR schedule's per-group state)
    reshards across dp x tp layouts and loads checkpoints written before this option existed;
    the multi-tensor kernels take FSDP-only and FSDP x TP DTensors in one call (tested on CPU
    with gloo at dp=2 x tp=2, foreach and fused alike)."""
    kernel = {"fused": True} if fused else {"foreach": True}
    return torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2),
                             weight_decay=cfg.weight_decay, **kernel)


def train(cfg: TrainConfig, *, resume_hint: str | None = None, kill_in_save: int | None = None
          ) -> list[dict[str, Any]]:
    """Run (or resume) training; returns rank 0's per-step metrics (empty on other ranks).

    ``resume_hint`` is the command line the stop message tells the user to run again;
    ``kill_in_save`` is fault injection for tests (SIGKILL right after step ``kill_in_save``'s
    save has started, so an async save is interrupted in flight)."""
    d = init_distributed(cfg)
    _check_metrics_path(cfg)
    r = build(cfg, d)
    loader, T = r.loader, r.plan.seq_len
    step, resume, ckpt = _resume(cfg, r)
    total = min(r.total_steps, step + loader.steps_left)
    dp_group = d.mesh["dp"].get_group()
    flops_tok, peak = r.model_cfg.flops_per_token(T), _peak_flops(cfg, d.device)
    bf16 = r.precision != "fp32"
    amp = torch.autocast("cuda", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    log_ = _StepLog(cfg, enabled=d.rank == 0, total=total, start_step=step)
    log_.echo(f"run: {r.model_cfg.num_params():,} params, dp={d.dims.dp} tp={d.dims.tp} on {d.device.type}"
              f"{' bf16' if bf16 else ''}, {r.plan.plan_hash}, steps {step}->{total}, "
              f"global batch {cfg.global_batch} x {T}" + (f", resumed from {resume}" if resume else ""))
    if total == step:  # a finished run launched again: say so, not just exit 0
        log_.echo(_nothing_left(cfg, r, step, resume))
    log_.echo(_budget_line(loader, T, ahead=True))
    log_.echo(f"perf: precision {r.precision}, "
              f"compile {'on' if r.compiled else 'off'}, loss {'chunked' if r.chunk_tokens else 'plain'}"
              f"{' (auto)' if cfg.loss == 'auto' else ''}, micro_batch {r.micro_batch}, "
              f"ac {r.memory.ac}")
    for line in r.memory.lines(r.memory_budget):
        log_.echo(line)
    spikes = _SpikeWatch(cfg.spike_factor, cfg.spike_window)
    stop = _StopSignal()
    first = {"run": {"resumed_from": str(resume) if resume else None, "skip": loader.skip.as_list(),
                     **({"adaptive_history": list(r.plan.history)} if r.policy is not None else {}),
                     "memory_estimate": dataclasses.asdict(r.memory) | {"peak": r.memory.peak},
                     "mix_changes": loader.mix_changes}}
    for c in loader.mix_changes:
        log_.echo(f"mix: changed at global sample {c['at']:,} (plan {c['from']} -> {c['to']})")
    try:
        while step < total:
            t0 = time.perf_counter()
            lo, hi = loader.step_range(loader.samples_committed)
            batch = next(loader)
            loss_sum, gnorm = _optimizer_step(cfg, r, batch, d.device, amp)
            step += 1
            dist.all_reduce(loss_sum, group=dp_group)  # sum over dp; tp peers hold the same value
            loss_val = loss_sum.item() / d.dims.dp     # waits for the device: the step time below is real
            dt = time.perf_counter() - t0
            tps = cfg.global_batch * T / dt
            row = {"step": step, "loss": loss_val, "grad_norm": gnorm.item(),
                   "lr": r.sched.get_last_lr()[0], "tokens_per_s": tps,
                   "mfu": flops_tok * tps / (peak * d.world_size) if peak else None,
                   "batch": _batch_digest(batch, dp_group) if cfg.batch_digest else None,
                   "samples": [lo, hi], **first}
            first = {}
            if step % cfg.log_every == 0 or step == total:  # per-rank time / MFU: one small all_gather
                slow = perf.add_rank_metrics(row, step_time=dt, device=d.device, factor=cfg.straggler_factor,
                                             mfu=flops_tok * tps / (peak * d.world_size) if peak else None)
                if slow:
                    log_.echo(slow)
            if r.compiled:
                row["compiled_graphs"] = perf.compiled_graphs()
            if step % cfg.log_every == 0 or step == total:  # every rank: one all-reduce of [2, sources]
                row["loss_by_source"] = r.src_loss.collect(dp_group)
            val = lambda: validate(r.model, r.valset, rank=d.dp_rank, world=d.dims.dp, rows=r.micro_batch,
                                   device=d.device, amp=amp, chunk_tokens=r.chunk_tokens,
                                   with_position_ids=cfg.position_ids, document_mask=cfg.document_mask,
                                   group=dp_group)
            if cfg.eval_every and (step % cfg.eval_every == 0 or step == total):
                row["val_loss"] = val()
            if r.policy is not None:  # loss-driven weights: from the cursor after this step on
                r.policy.end_step(loader, dp_group)
                if r.policy.due(step, loader) and step < total:
                    if r.policy.spec.signal == "validation" and "val_loss" not in row:
                        row["val_loss"] = val()
                    row["mix_update"] = r.policy.update(step, loader, row.get("val_loss"))
                    log_.echo(f"step {step:>6}  mix weights from sample {loader.samples_committed:,}: "
                              + weights_line(row["mix_update"]))
            jumped = spikes.check(row)
            if jumped:
                row["spike"] = [j.split()[0] for j in jumped]
                log_.echo(spikes.message(row, jumped, cfg.ckpt_dir))
            log_.step(row)
            stopping = stop.agreed(d.device)
            if ckpt:
                _checkpoint(ckpt, cfg, r, step, save=step == total or stopping or bool(
                    cfg.ckpt_every and step % cfg.ckpt_every == 0), kill_in_save=kill_in_save)
            if stopping:
                break
        if ckpt:
            ckpt.wait()
        if stop.signum is not None and step < total:
            log_.echo(_stop_message(stop.signum, step, cfg, resume_hint))
        log_.echo(_budget_line(loader, T, ahead=False))
    finally:
        stop.restore()
        loader.close()
        log_.close()
    dist.barrier()
    dist.destroy_process_group()
    return log_.rows


def _resume(cfg: TrainConfig, r: Run) -> tuple[int, Path | None, checkpoint.Checkpointer | None]:
    """(the step to start at, the checkpoint it was loaded from, the checkpointer): the
    newest complete checkpoint that loads (or ``resume_from``) is loaded into model,
    optimizer, schedule and loader; later ones (damaged ones skipped included) are rolled
    back; ``skip`` ranges are added."""
    step, resume = checkpoint.restore(cfg.ckpt_dir, cfg.resume_from, model=r.model, optimizer=r.opt,
                                      scheduler=r.sched, loader=r.loader)
    _check_left(cfg, r, step, resume)
    r.loader.add_skip(SkipRanges(cfg.skip))
    ckpt = None
    if cfg.ckpt_dir:
        checkpoint.rollback(cfg.ckpt_dir, step)
        ckpt = checkpoint.Checkpointer(cfg.ckpt_dir, async_save=cfg.ckpt_async)
    return step, resume, ckpt


def _check_left(cfg: TrainConfig, r: Run, step: int, resume: Path | None) -> None:
    """A budget (token_budget or ``steps``) below what the checkpoint already trained, or a
    fresh run whose budget is less than one global batch, is a :class:`SpecError` raised before
    rollback moves anything: such a run would train nothing and exit 0."""
    n, plan, T = r.loader.samples_committed, r.plan, r.plan.seq_len
    fix_budget = f"raise token_budget in {cfg.mix}"
    if resume is None and plan.total_samples < cfg.global_batch:
        raise SpecError(f"mix {cfg.mix}: token_budget {plan.spec.token_budget:,} tokens ({plan.total_samples:,} "
                        f"samples of {T}) is less than one global batch ({cfg.global_batch} samples), so no step "
                        f"can run; {fix_budget} to at least {cfg.global_batch * T:,} tokens")
    if n > plan.total_samples:
        raise SpecError(
            f"mix {cfg.mix}: token_budget {plan.spec.token_budget:,} tokens ({plan.total_samples:,} samples of {T}) "
            f"is below the cursor of checkpoint {resume}: {n:,} samples ({n * T:,} tokens) already trained, so "
            f"nothing is left to train. To train further, {fix_budget} above {n * T:,} tokens; to end the run "
            f"within this budget, resume from an earlier checkpoint (--set resume_from=<step>) whose cursor is "
            f"within it")
    if cfg.steps is not None and cfg.steps < step:
        raise SpecError(f"train: steps {cfg.steps} is below the step of checkpoint {resume} ({step}): those steps "
                        f"are already trained, so nothing is left to train. Raise steps above {step} to train "
                        f"further, or resume from an earlier checkpoint (--set resume_from=<step <= {cfg.steps}>)")


def _nothing_left(cfg: TrainConfig, r: Run, step: int, resume: Path | None) -> str:
    """The line for a run that has no step left to train (it exits 0: a finished run launched again)."""
    n, end, G = r.loader.samples_committed, r.plan.total_samples, cfg.global_batch
    if cfg.steps is not None and step >= cfg.steps:
        why = f"steps: {cfg.steps} reached"
    else:
        why = (f"{r.loader.skip.kept_between(n, end):,} samples of the token budget's {end:,} are left after the "
               f"cursor {n:,} (skip ranges excluded), less than one global batch of {G}")
    where = f"the run is complete at step {step} (checkpoint {resume})" if resume else "this run has no step to train"
    return f"nothing to train: {where}: {why}; raise steps or the mix's token_budget to train further"


def _check_metrics_path(cfg: TrainConfig) -> None:
    """An unwritable ``metrics_path`` is one :class:`SpecError` before any work (the mix,
    the model, a checkpoint), on every rank alike: rank 0, which writes it, tries it."""
    if not cfg.metrics_path:
        return
    why: list[str | None] = [None]
    if dist.get_rank() == 0:
        why[0] = _unwritable(Path(cfg.metrics_path))
    dist.broadcast_object_list(why, src=0)
    if why[0]:
        raise SpecError(f"train: metrics_path {cfg.metrics_path} cannot be written: {why[0]}; give a file path "
                        "in a writable folder, or leave metrics_path out")


def _unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be appended to, with a sibling created next to it (the rollback's
    temp file), or None. Leaves no file behind that was not there."""
    if path.is_dir():
        return "it is a folder"
    above = next((a for a in path.parents if a.exists()), None)
    if above is not None and not above.is_dir():
        return f"{above} is a file, not a folder"
    tmp = path.with_name(path.name + ".tmp")
    made = [p for p in (path, tmp) if not p.exists()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for p in (path, tmp):
            fs.open_stream(str(p)).close()
    except OSError as e:
        return e.strerror or str(e)
    finally:
        for p in made:
            with contextlib.suppress(OSError):
                p.unlink()
    return None


def _optimizer_step(cfg: TrainConfig, r: Run, batch: dict[str, torch.Tensor], device: torch.device,
                    amp: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward/backward over ``batch`` in micro-batches, clip, step; returns (this rank's
    loss, summed over micro-batches, and the pre-clip gradient norm)."""
    model = r.model
    loss_sum = torch.zeros((), device=device)
    parts = micro_batches(batch, r.micro_batch)
    for i, mbatch in enumerate(parts):
        x, y = mbatch["input_ids"].to(device), mbatch["labels"].to(device)
        pos = mbatch["position_ids"].to(device) if cfg.position_ids else None
        model.set_requires_gradient_sync(i == len(parts) - 1)  # reduce-scatter once per step
        with amp:
            tok = model(x, pos, document_mask=cfg.document_mask, labels=y, loss_chunk_tokens=r.chunk_tokens)
        r.src_loss.add(tok.detach(), mbatch["source"])  # [B, T] fp32 per-token losses
        if r.policy is not None:
            r.policy.add(tok.detach(), mbatch["source"])
        loss = mean_loss(tok) / len(parts)
        loss.backward()
        loss_sum += loss.detach()
    gnorm = clip_grad_norm_(model.parameters(), cfg.grad_clip)
    r.opt.step()
    r.sched.step()
    r.opt.zero_grad(set_to_none=True)
    return loss_sum, gnorm


def _checkpoint(ckpt: checkpoint.Checkpointer, cfg: TrainConfig, r: Run, step: int, *, save: bool,
                kill_in_save: int | None) -> None:
    """Save after ``step`` when ``save`` (else let a background save make progress)."""
    if not save:
        ckpt.poll()
        return
    blocked = ckpt.save(step, model=r.model, optimizer=r.opt, scheduler=r.sched, loader=r.loader)
    log.info("checkpoint step %d %s: the step waited %.3f s", step,
             "started (async)" if cfg.ckpt_async else "written", blocked)
    if kill_in_save == step:
        os.kill(os.getpid(), signal.SIGKILL)


def _budget_line(loader: MixLoader, T: int, *, ahead: bool) -> str:
    """Token-budget accounting: served, skipped and (at the start) remaining samples."""
    plan, skip = loader.plan, loader.skip
    done, skipped = loader.samples_committed, loader.samples_skipped
    line = (f"data: cursor {done:,} of {plan.total_samples:,} global samples; trained on {done - skipped:,} "
            f"({(done - skipped) * T:,} tokens), skipped {skipped:,} ({skipped * T:,} tokens)")
    if ahead and skip:
        later = skip.skipped_before(plan.total_samples) - skipped
        line += f"; skip ranges {skip.as_list()} drop {later:,} more samples of the budget ahead"
    return line


def _stop_message(signum: int, step: int, cfg: TrainConfig, resume_hint: str | None) -> str:
    name = signal.Signals(signum).name
    if not cfg.ckpt_dir:
        return f"stopped by {name} after step {step}; no ckpt_dir is set, so nothing was saved to resume from"
    hint = resume_hint or "the same command without resume_from / skip"
    return (f"stopped by {name} after step {step}: checkpoint {checkpoint.step_dir(cfg.ckpt_dir, step)} is "
            f"complete. To resume, run: {hint}")


class _StopSignal:
    """SIGTERM / SIGINT set a flag instead of killing the process; the loop finishes its step,
    and every rank learns at the same step whether any rank was signalled (one tiny all-reduce
    per step), so all of them checkpoint and stop together."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._old = {s: signal.signal(s, self._handle) for s in self.SIGNALS}

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signum is None:
            log.warning("received %s: finishing this step, then checkpointing and stopping",
                        signal.Signals(signum).name)
            self.signum = signum

    def agreed(self, device: torch.device) -> bool:
        flag = torch.tensor([self.signum or 0], dtype=torch.int64, device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() and self.signum is None:
            self.signum = int(flag.item())
        return bool(flag.item())

    def restore(self) -> None:
        for s, old in self._old.items():
            signal.signal(s, old)


class _SpikeWatch:
    """Flags a step whose loss or grad norm exceeds ``factor`` x the median of the previous
    ``window`` steps (the median ignores earlier spikes, so one bad step does not hide the next)."""

    KEYS = ("loss", "grad_norm")

    def __init__(self, factor: float | None, window: int) -> None:
        self.factor = factor
        self.window = window
        self.hist = {k: deque(maxlen=window) for k in self.KEYS}

    def check(self, row: dict[str, Any]) -> list[str]:
        """The metrics of ``row`` that jumped, as readable phrases (empty: none)."""
        jumped = []
        for k in self.KEYS:
            h, v = self.hist[k], row[k]
            if self.factor and len(h) >= min(self.window, 5):
                med = statistics.median(h)
                if v > self.factor * med:
                    jumped.append(f"{k} {v:.4g} = {v / med:.1f}x its median {med:.4g} over the last {len(h)} steps")
            h.append(v)
        return jumped

    @staticmethod
    def message(row: dict[str, Any], jumped: list[str], ckpt_dir: str | None) -> str:
        lo, hi = row["samples"]
        before = [s for s in checkpoint.complete_steps(ckpt_dir) if s < row["step"]]
        where = f"--set resume_from={before[-1]}" if before else "--set resume_from=<a checkpoint before this step>"
        return (f"SPIKE at step {row['step']}: {'; '.join(jumped)}. The step read global samples [{lo}, {hi}); "
                f"to skip them, resume with {where} --set skip='[[{lo}, {hi}]]' (docs/trainer.md: recovery)")


class _StepLog:
    """Rank 0's console lines (every ``log_every`` steps) and JSONL metrics (every step).

    The metrics file always matches the checkpoint the run continues from: rows after
    ``start_step`` (left by a run that died, or by the branch a rollback abandons) are moved to
    ``<metrics_path>.after-step-<N>`` before the first new row, so every step appears once."""

    def __init__(self, cfg: TrainConfig, *, enabled: bool, total: int, start_step: int) -> None:
        self.enabled, self.every, self.total = enabled, cfg.log_every, total
        self.rows: list[dict[str, Any]] = []
        self.sink = None
        if enabled and cfg.metrics_path:
            path = Path(cfg.metrics_path)
            path.parent.mkdir(parents=True, exist_ok=True)
            truncate_metrics(path, start_step)
            self.sink = fs.open_stream(str(path))

    def echo(self, line: str) -> None:
        if self.enabled:
            print(line, flush=True)

    def step(self, row: dict[str, Any]) -> None:
        if not self.enabled:
            return
        self.rows.append(row)
        if self.sink:
            self.sink.write(json.dumps(row) + "\n")
            self.sink.flush()
        if row["step"] % self.every == 0 or row["step"] == self.total:
            mfu = f"  mfu {row['mfu']:.1%}" if row["mfu"] is not None else ""
            self.echo(f"step {row['step']:>6}  loss {row['loss']:.4f}  grad_norm {row['grad_norm']:.3f}  "
                      f"lr {row['lr']:.2e}  tok/s {row['tokens_per_s']:,.0f}{mfu}")
            if row.get("loss_by_source"):
                self.echo(f"{'':>11}train loss by source: " + _by_source(row["loss_by_source"]))
        if row.get("val_loss"):
            self.echo(f"step {row['step']:>6}  val loss by source: " + _by_source(row["val_loss"]))

    def close(self) -> None:
        if self.sink:
            self.sink.close()


def _by_source(losses: dict[str, float]) -> str:
    return "  ".join(f"{name} {v:.4f}" for name, v in losses.items())


def truncate_metrics(path: Path, step: int) -> int:
    """Keep the rows of steps ``<= step`` in ``path`` (atomically); move the others (and any
    torn last line) to ``<path>.after-step-<step>``. Returns how many rows moved."""
    if not path.exists():
        return 0
    keep, drop = [], []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        try:
            ok = line.endswith("\n") and json.loads(line)["step"] <= step
        except (ValueError, KeyError, TypeError):
            ok = False
        (keep if ok else drop).append(line)
    if drop:
        with fs.open_stream(f"{path}.after-step-{step}") as f:
            f.writelines(line if line.endswith("\n") else line + "\n" for line in drop)
        fs.write_text(str(path), "".join(keep))
        log.warning("%s: moved %d rows after step %d to %s.after-step-%d", path, len(drop), step, path, step)
    return len(drop)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="torchrun ... -m trainer_bridge.train", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="trainer YAML (e.g. trainer_bridge/configs/sample.yaml)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key (dotted for the model: model.dim=128); repeatable")
    p.add_argument("--kill-in-save", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO if os.environ.get("RANK", "0") == "0" else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        again = [f"--set {shlex.quote(o)}" for o in args.set if o.partition("=")[0].strip() not in ("resume_from", "skip")]
        hint = " ".join(["<the same launcher> -m trainer_bridge.train --config", shlex.quote(args.config), *again])
        train(load_config(args.config, args.set), resume_hint=hint, kill_in_save=args.kill_in_save)
    except DatapipeError as e:  # a user mistake: say what to change, no traceback
        print(f"error: {e}", file=sys.stderr)
        if dist.is_initialized():
            dist.destroy_process_group()
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
