"""Run the bundled trainer in this process and print its peak memory as JSON (a subprocess of
tests/distributed/test_trainer_memory.py and bench/memory.py).

Measured: the process's peak resident set (``VmHWM``) during ``train()`` minus its resident
set just before, with the peak reset right before (``/proc/self/clear_refs`` = 5). torch's
CPU allocator keeps no statistics, so RSS is what there is; two things keep it honest:
``MALLOC_MMAP_THRESHOLD_`` (set by the caller, before this process starts) makes glibc serve
every tensor-sized block by ``mmap`` and return it on free (no heap high-water mark left
behind by freed tensors), and a warm-up forward/backward before the baseline pays torch's
one-off allocations (kernels, thread pools) that are not the run's memory.

    MALLOC_MMAP_THRESHOLD_=65536 python tests/distributed/memory_probe.py CFG.yaml [key=value ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def main() -> None:
    import torch

    from trainer_bridge.model import GPT, ModelConfig
    from trainer_bridge.train import load_config, train

    cfg = load_config(sys.argv[1], sys.argv[2:])
    torch.set_num_threads(cfg.cpu_threads or 1)
    warm = GPT(ModelConfig(vocab_size=64, dim=32, n_layers=1, n_heads=2, max_seq_len=16))
    x = torch.randint(0, 64, (2, 16))
    warm(x, labels=x, loss_chunk_tokens=8).mean().backward()
    torch.optim.AdamW(warm.parameters(), foreach=True).step()
    del warm, x
    base = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")
    rows = train(cfg)
    peak = _status("VmHWM") - base
    print(json.dumps({"peak": peak, "base": base, "steps": len(rows), "estimate": rows[0]["run"]["memory_estimate"]}))


if __name__ == "__main__":
    main()
