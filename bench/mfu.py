"""Trainer throughput and MFU: the bundled trainer (``trainer_bridge.train.train``, one
process) on synthetic shards, per config eager and compiled (``compile: false / true``), in
bf16 and, where the GPU and torchao allow it, fp8; the loader's tokens/s on the same machine
beside it. The eager bf16 row is the baseline each other row is compared with.

    python bench/mfu.py                          # CUDA if present: "small" and "1b"; else CPU, "cpu-small"
    python bench/mfu.py --configs small 1b --steps 20 --peak-tflops 989
    python bench/mfu.py --variants compiled-bf16 compiled-fp8   # a subset of the rows
    python bench/mfu.py --device cpu --cpu-peak-tflops 1.2   # MFU on CPU against a peak you state

MFU = achieved model FLOP/s / peak FLOP/s, with model FLOPs per token = 6 N + 12 L d T
(``ModelConfig.flops_per_token``: forward + backward, attention included, no
recomputation counted). The GPU peak is the dense bf16 tensor-core peak from
:data:`PEAK_BF16_TFLOPS` (matched on the device name), or ``--peak-tflops``. On CPU the
run is fp32 and MFU is printed only against a peak you give (``--cpu-peak-tflops``);
otherwise tokens/s and achieved model FLOP/s are the result. The first ``--warmup``
steps (allocation, autotuning, compilation) are left out of the averages. Micro-batch and
activation checkpointing are ``auto`` (chosen from the trainer's memory estimate, printed by
the run); fp8 rows are skipped with the reason when unavailable (CPU, a pre-Ada GPU, no
torchao), never silently run in bf16.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.loader import synth_source  # noqa: E402
from trainer_bridge.loader import LoaderConfig, MixLoader  # noqa: E402
from trainer_bridge.mix import resolve_mix  # noqa: E402
from trainer_bridge.model import ModelConfig  # noqa: E402
from trainer_bridge.parallelize import fp8_unavailable  # noqa: E402
from trainer_bridge.train import TrainConfig, train  # noqa: E402

#: dense bf16 peak per GPU, TFLOP/s (vendor datasheets, without sparsity); matched on the name
PEAK_BF16_TFLOPS = {
    "H200": 989.0, "H100 PCIe": 756.0, "H100": 989.0, "GH200": 989.0, "A100": 312.0, "A800": 312.0,
    "L40S": 362.0, "L40": 181.0, "L4": 121.0, "A10G": 70.0, "A10": 125.0, "RTX 4090": 165.0,
    "RTX 3090": 71.0, "V100": 125.0, "MI300X": 1307.0, "MI250X": 383.0, "B200": 2250.0,
}

#: name: (model shape, seq_len, global batch); micro-batch and AC are auto (the memory estimate)
CONFIGS = {
    "1b": (dict(dim=2048, n_layers=18, n_heads=16), 2048, 8),
    "small": (dict(dim=768, n_layers=12, n_heads=12), 2048, 16),
    "cpu-small": (dict(dim=128, n_layers=4, n_heads=4), 128, 16),
}
#: row name: (compile, precision on CUDA); on CPU precision is fp32 and fp8 rows are skipped
VARIANTS = {"eager-bf16": (False, "bf16"), "compiled-bf16": (True, "bf16"),
            "eager-fp8": (False, "fp8"), "compiled-fp8": (True, "fp8")}
VOCAB = 50_001  # the synthetic shards' vocabulary; the trainer pads it to 50,048


def gpu_peak(name: str, override: float | None) -> float | None:
    if override:
        return override * 1e12
    return next((v * 1e12 for k, v in PEAK_BF16_TFLOPS.items() if k in name), None)


def make_mix(folder: Path, seq: int, tokens: int) -> Path:
    """Three synthetic sources through the real writer, and a mix with an endless budget."""
    ms = [synth_source(folder / n, n, tokens, 1 << 24, i) for i, n in enumerate("abc")]
    mix = folder / f"mix-{seq}.yaml"
    mix.write_text(yaml.safe_dump({
        "name": "mfu", "seq_len": seq, "token_budget": 10**12, "seed": 0, "max_epochs": 1e9, "warn_epochs": 1e9,
        "sources": [{"manifest": str(m), "weight": w} for m, w in zip(ms, [0.5, 0.3, 0.2])]}))
    return mix


def run_trainer(name: str, mix: Path, *, device: str, steps: int, threads: int | None, compile: bool,
                precision: str, loss: str = "auto") -> tuple[list[dict], ModelConfig]:
    import torch._dynamo

    torch._dynamo.reset()  # each row compiles its own model from scratch
    shape, seq, gb = CONFIGS[name]
    model = ModelConfig(vocab_size=64 * -(-VOCAB // 64), max_seq_len=seq, **shape)
    cfg = TrainConfig(mix=str(mix), model=model, tp=1, global_batch=gb, steps=steps, device=device,
                      precision=precision, compile=compile, warmup_steps=2, log_every=max(1, steps // 4),
                      cpu_threads=threads, verify_shards=False, loss=loss)  # the bench verified them once already
    return train(cfg), model


def loader_tps(mix: Path, *, global_batch: int, steps: int) -> float:
    """Tokens/s the loader hands one rank (all of the global batch), prefetch threads on."""
    plan = resolve_mix(mix)
    with MixLoader(plan, LoaderConfig(global_batch=global_batch, num_workers=2, prefetch=4, verify=False)) as ld:
        next(ld)
        t0 = time.perf_counter()
        for _ in range(steps):
            next(ld)
        dt = time.perf_counter() - t0
    return steps * global_batch * plan.seq_len / dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    ap.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=None,
                    help="default: small 1b on CUDA, cpu-small on CPU")
    ap.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
                    help="rows per config (default: all; eager-bf16 is the baseline)")
    ap.add_argument("--steps", type=int, default=None, help="default: 20 on CUDA, 6 on CPU")
    ap.add_argument("--warmup", type=int, default=None, help="steps left out (default: 5 on CUDA, 2 on CPU)")
    ap.add_argument("--tokens", type=int, default=6_000_000, help="synthetic tokens per source")
    ap.add_argument("--peak-tflops", type=float, default=None, help="GPU peak per device (default: from the table)")
    ap.add_argument("--cpu-peak-tflops", type=float, default=None, help="CPU peak for an MFU on CPU")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (CPU runs)")
    ap.add_argument("--loss", choices=["auto", "chunked", "plain"], default="auto",
                    help="the trainer's loss (auto: plain on CUDA when it fits, docs/trainer.md); chunked recomputes "
                         "the logits in backward, which MFU does not count")
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"device": "cpu", "configs": ["cpu-small"], "steps": 2, "warmup": 1, "tokens": 100_000, "threads": 1})
    cuda = torch.cuda.is_available() if args.device == "auto" else args.device == "cuda"
    device = "cuda" if cuda else "cpu"
    names = args.configs or (["small", "1b"] if cuda else ["cpu-small"])
    steps = args.steps or (20 if cuda else 6)
    warm = args.warmup if args.warmup is not None else (5 if cuda else 2)
    if steps <= warm:
        raise SystemExit(f"--steps {steps} must exceed --warmup {warm}")
    if cuda:
        dev_name = torch.cuda.get_device_name(0)
        peak = gpu_peak(dev_name, args.peak_tflops)
    else:
        dev_name = f"CPU ({os.cpu_count()} cores visible, torch threads {args.threads or torch.get_num_threads()})"
        peak = args.cpu_peak_tflops * 1e12 if args.cpu_peak_tflops else None
    print(f"device: {dev_name}; peak {peak / 1e12:,.1f} TFLOP/s (dense bf16; fp8 MFU is against it too)" if peak else
          f"device: {dev_name}; no peak known (MFU omitted; pass --peak-tflops / --cpu-peak-tflops)")
    no_fp8 = fp8_unavailable(torch.device("cuda", 0) if cuda else torch.device("cpu"))
    variants = []
    for v in args.variants:
        compile, precision = VARIANTS[v]
        if precision == "fp8" and no_fp8:
            print(f"{v}: skipped: {no_fp8}")
            continue
        variants.append((v if cuda else v.replace("bf16", "fp32"), compile, precision if cuda else "fp32"))
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-mfu-") as tmp:
        mixes: dict[int, Path] = {}
        for name in names:
            seq = CONFIGS[name][1]
            if seq not in mixes:
                mixes[seq] = make_mix(Path(tmp) / f"s{seq}", seq, args.tokens)
                resolve_mix(mixes[seq], verify_hashes=True)
            gb = CONFIGS[name][2]
            ltps = loader_tps(mixes[seq], global_batch=gb, steps=50)
            base = None
            for v, compile, precision in variants:
                rows, model = run_trainer(name, mixes[seq], device=device, steps=steps, threads=args.threads,
                                          compile=compile, precision=precision, loss=args.loss)
                est = rows[0]["run"]["memory_estimate"]
                tps = float(np.mean([r["tokens_per_s"] for r in rows[warm:]]))
                base = base or tps
                flops = model.flops_per_token(seq) * tps
                results.append((name, v, model, seq, gb, f"{est['micro_batch']}/{est['ac']}", tps, tps / base, flops,
                                ltps))
    print(f"\n{'config':<10} {'variant':<14} {'params':>8} {'seq':>5} {'batch':>5} {'mb/ac':>9} {'trainer tok/s':>14} "
          f"{'vs first':>8} {'model TFLOP/s':>14} {'MFU':>7} {'loader tok/s':>14} {'loader/trainer':>15}")
    for name, v, model, seq, gb, mbac, tps, rel, flops, ltps in results:
        mfu = f"{flops / peak:.1%}" if peak else "n/a"
        print(f"{name:<10} {v:<14} {model.num_params() / 1e6:>7,.0f}M {seq:>5} {gb:>5} {mbac:>9} {tps:>14,.0f} "
              f"{rel:>7.2f}x {flops / 1e12:>14.4f} {mfu:>7} {ltps:>14,.0f} {ltps / tps:>14,.0f}x")
    print(f"\n(steps {warm + 1}..{steps} averaged; model FLOPs/token = 6N + 12 L d T; "
          "loader: 2 prefetch threads, the whole global batch on one rank)")


if __name__ == "__main__":
    main()
