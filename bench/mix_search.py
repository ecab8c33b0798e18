"""`datapipe mix search` on the sample corpus, on CPU: K proxies, the fit's held-out error,
and the chosen mix trained fresh beside the natural, uniform and given mixes (two seeds each).

    make sample                      # runs/sample/shards (datapipe run jobs/sample.yaml)
    python bench/mix_search.py       # K=16 proxies of 96 steps, dim 64 x 2 layers, one CPU thread each
    python bench/mix_search.py --proxies 12 --steps 64 --parallel 2 --out runs/mix-search

Resumable: rerun the same command and finished runs are skipped. Prints the proxy table, the
fit and the comparison (the same as <out>/chosen.md), then the verdict: whether the chosen mix
beats both the natural and the uniform mix by more than the seed-to-seed spread. Time is the
trainers' CPU seconds (children's user + system, from getrusage) and the wall clock; on a
shared machine the wall clock moves with the load, the CPU time much less.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainer_bridge.search import SearchConfig, justification, search  # noqa: E402


def synthetic_mix(folder: Path) -> str:
    """A two-source mix over random-token shards (``--smoke``: checks the bench, measures nothing)."""
    import yaml

    from bench.loader import synth_source

    ms = [synth_source(folder / n, n, 40_000, 1 << 16, i) for i, n in enumerate(("a", "b"))]
    mix = folder / "mix.yaml"
    mix.write_text(yaml.safe_dump({"name": "smoke", "seq_len": 64, "token_budget": 64 * 16 * 10, "seed": 0,
                                   "sources": [{"manifest": str(m), "weight": 0.5} for m in ms],
                                   "validation": {"tokens": 256}}))
    return str(mix)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mix", default=str(ROOT / "mixes/sample.yaml"))
    ap.add_argument("--out", default=str(ROOT / "runs/mix-search"))
    ap.add_argument("--proxies", type=int, default=16)
    ap.add_argument("--steps", type=int, default=96)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--val-tokens", type=int, default=1024)
    ap.add_argument("--target", default="mean_val")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--final-seeds", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=1)
    from bench import _smoke

    args = _smoke.parse(ap, {"mix": "<synthetic>", "out": "<tmp>", "proxies": 3, "steps": 3, "dim": 16,
                             "layers": 1, "val_tokens": 256, "final_seeds": 1})
    if args.mix == "<synthetic>":   # --smoke: two small synthetic sources through the real shard writer
        args.mix = synthetic_mix(Path(args.out) / "data")
    if not (ROOT / "runs/sample/shards/wiki/manifest.json").is_file() and args.mix.endswith("mixes/sample.yaml"):
        print("runs/sample/shards is missing: run `make sample` first", file=sys.stderr)
        return 2
    cfg = SearchConfig(mix=args.mix, out=args.out, proxies=args.proxies, steps=args.steps, target=args.target,
                       seed=args.seed, val_tokens=args.val_tokens, dim=args.dim, n_layers=args.layers, n_heads=4,
                       lr=args.lr, final_seeds=args.final_seeds, parallel=args.parallel)
    t0, c0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = search(cfg, echo=lambda s: print(s, flush=True))
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime
    names = list(summary["natural"])
    print()
    print(justification(summary, names))
    print(f"time: {cpu:.0f} CPU-s in the trainers this invocation (runs done earlier are skipped), "
          f"{time.monotonic() - t0:.0f} s wall")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
