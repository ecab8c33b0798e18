"""How long a training step waits for a checkpoint: synchronous DCP save vs the trainer's
async save (``dcp.async_save``: the step waits for the copy to CPU memory, a background
thread writes), beside a run that does not checkpoint (the baseline, in the same run).

    python bench/checkpoint.py                              # ~14 M params, CPU, one process
    python bench/checkpoint.py --dim 768 --layers 12 --every 5 --steps 40

One process, gloo, CPU (on a CUDA machine: ``--device cuda``). Each mode trains the same
model for ``--steps`` steps on random tokens and checkpoints every ``--every`` steps through
``trainer_bridge.checkpoint.Checkpointer``. "blocked" is the time the training loop spent
inside checkpoint calls (the save call, plus waiting for the previous async save, plus the
final wait); "step" is the mean wall time per step including that (on a 2-core machine the
background writer also competes with the step for CPU). Numbers on a shared
machine move between runs; compare the columns within one run.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trainer_bridge.checkpoint import Checkpointer  # noqa: E402
from trainer_bridge.model import GPT, ModelConfig  # noqa: E402


class _LoaderState:
    """The loader state a checkpoint carries (this bench feeds random tokens, not a mix)."""

    def state_dict(self) -> dict:
        return {"plan_hash": "bench", "samples_committed": 0, "skip": []}


def run(mode: str, args: argparse.Namespace, root: Path) -> dict:
    torch.manual_seed(0)
    device = torch.device(args.device)
    cfg = ModelConfig(vocab_size=args.vocab, dim=args.dim, n_layers=args.layers, n_heads=args.dim // 64,
                      max_seq_len=args.seq)
    model = GPT(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    ck = Checkpointer(root / mode, async_save=mode == "async") if mode != "none" else None
    x = torch.randint(0, args.vocab, (args.batch, args.seq + 1), device=device)
    blocked, saves, steps = [], 0, []
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if ck and step % args.every == 0:
            blocked.append(ck.save(step, model=model, optimizer=opt, scheduler=sched, loader=_LoaderState()))
            saves += 1
        elif ck:
            ck.poll()
        steps.append(time.perf_counter() - t0)
    tail = ck.wait() if ck else 0.0
    size = sum(f.stat().st_size for f in (root / mode).rglob("*") if f.is_file()) / max(saves, 1)
    return {"mode": mode, "params": cfg.num_params(), "saves": saves, "ckpt_mib": size / 2**20,
            "blocked_per_save": statistics.mean(blocked) if blocked else 0.0,
            "blocked_max": max(blocked, default=0.0), "final_wait": tail, "step_s": statistics.mean(steps),
            "total_s": sum(steps) + tail}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"dim": 64, "layers": 2, "vocab": 512, "seq": 32, "steps": 4, "every": 2})
    torch.set_num_threads(args.threads)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-ckpt-") as tmp:
            rows = [run(mode, args, Path(tmp)) for mode in ("none", "sync", "async")]
    finally:
        dist.destroy_process_group()
    base = rows[0]["step_s"]
    print(f"model {rows[0]['params'] / 1e6:.1f} M params, checkpoint {rows[1]['ckpt_mib']:.0f} MiB "
          f"(model + AdamW state), {args.steps} steps, a save every {args.every}, device {args.device}")
    print("| mode | step waits per save (s) | max (s) | final wait (s) | mean step (s) | vs no checkpoint | total (s) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['mode']} | {r['blocked_per_save']:.3f} | {r['blocked_max']:.3f} | {r['final_wait']:.3f} | "
              f"{r['step_s']:.3f} | {r['step_s'] / base:.2f}x | {r['total_s']:.2f} |")


if __name__ == "__main__":
    main()
