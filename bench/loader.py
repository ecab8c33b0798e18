"""Loader throughput: tokens/s one rank receives from ``MixLoader`` beside a plain
``np.memmap`` slice loop over the same shards (the baseline, measured in the same run), and
what a tiny training step consumes.

    python bench/loader.py                      # synthetic shards (3 sources) in a temp dir
    python bench/loader.py --mix mixes/sample.yaml --seq-len 128

The baseline reads windows in file order (sequential, no mixing, no shuffling); the loader
pays for the mix plan, the per-epoch window permutation and random access. Target: the
loader at >= 50% of the baseline, and far above what the trainer consumes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import struct
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trainer_bridge.loader import LoaderConfig, MixLoader  # noqa: E402
from trainer_bridge.mix import MixSpec, MixSource, resolve_mix  # noqa: E402


def synth_source(folder: Path, name: str, tokens: int, shard_tokens: int, seed: int) -> Path:
    """Random uint16 tokens with an EOS (id 0) ending every ~300-token document, in docs/formats.md layout."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    data = rng.integers(1, 50_000, tokens, dtype=np.uint16)
    data[rng.random(tokens) < 1 / 300] = 0
    data[-1] = 0
    shards = []
    for i, lo in enumerate(range(0, tokens, shard_tokens)):
        part = data[lo:lo + shard_tokens]
        stem = f"{name}-{i:05d}"
        (folder / f"{stem}.bin").write_bytes(part.tobytes())
        ends = np.flatnonzero(part == 0) + 1
        if ends.size == 0 or ends[-1] != part.size:
            ends = np.append(ends, part.size)
        lengths = np.diff(np.concatenate([[0], ends])).astype(np.int32)
        pointers = (np.concatenate([[0], ends[:-1]]) * 2).astype(np.int64)
        doc_idx = np.arange(lengths.size + 1, dtype=np.int64)
        with open(folder / f"{stem}.idx", "wb") as f:
            f.write(struct.pack("<9sQBQQ", b"MMIDIDX\x00\x00", 1, 8, lengths.size, doc_idx.size))
            f.write(lengths.tobytes() + pointers.tobytes() + doc_idx.tobytes())
        shards.append({"name": stem, "bin": f"{stem}.bin", "idx": f"{stem}.idx", "tokens": int(part.size),
                       "documents": int(lengths.size), "bin_bytes": int(part.nbytes), "bin_hash": "", "idx_hash": ""})
    manifest = {"format": "datapipe-shards", "version": 1, "source": name, "dtype": "uint16",
                "shard_tokens": shard_tokens, "tokenizer": {"fingerprint": "bench", "vocab_size": 50_001, "eos_id": 0},
                "shards": shards, "totals": {"tokens": tokens, "documents": 0, "shards": len(shards)}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder / "manifest.json"


def baseline(plan, batch: int, steps: int) -> float:
    """Plain loop: np.memmap every shard, slice consecutive windows, stack, to int64 tensors."""
    seq = plan.seq_len
    maps = [np.memmap(s.bin_path, dtype=plan.dtype, mode="r") for m in plan.manifests for s in m.shards]
    maps = [m for m in maps if m.shape[0] > seq]
    cursors = [0] * len(maps)
    t0, c0 = time.perf_counter(), time.process_time()
    j = 0
    for _ in range(steps):
        rows = []
        for _ in range(batch):
            j = (j + 1) % len(maps)
            m, c = maps[j], cursors[j]
            if c + seq + 1 > m.shape[0]:
                c = 0
            rows.append(m[c:c + seq + 1])
            cursors[j] = c + seq
        full = torch.from_numpy(np.stack(rows).astype(np.int64))
        x, y = full[:, :-1], full[:, 1:]
        assert x.shape == y.shape
    tokens = steps * batch * seq
    return tokens / (time.perf_counter() - t0), tokens / (time.process_time() - c0)


def ours(plan, batch: int, steps: int, *, world: int, workers: int, positions: bool, start: int) -> float:
    """Tokens/s rank 0 of `world` receives (its local batch: `batch` rows per step)."""
    cfg = LoaderConfig(global_batch=batch * world, rank=0, world_size=world, num_workers=workers, prefetch=4,
                       with_position_ids=positions)
    with MixLoader(plan, cfg) as ld:
        ld.load_state_dict({"plan_hash": plan.plan_hash, "samples_committed": start * batch * world})
        next(ld)  # threads up
        t0, c0 = time.perf_counter(), time.process_time()  # process time counts the prefetch threads too
        for _ in range(steps):
            b = next(ld)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
    assert b["input_ids"].shape == (batch, plan.seq_len)
    tokens = steps * batch * plan.seq_len
    return tokens / dt, tokens / dc


def trainer_step(seq: int, vocab: int, batch: int, steps: int = 4) -> float:
    """Tokens/s of fwd + bwd + AdamW of the sample config's tiny GPT, one process on CPU."""
    from trainer_bridge.model import GPT, ModelConfig

    torch.manual_seed(0)
    model = GPT(ModelConfig(vocab_size=vocab, dim=128, n_layers=4, n_heads=4, max_seq_len=seq))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, vocab, (batch, seq + 1))
    times = []
    for _ in range(steps + 1):
        t0 = time.perf_counter()
        logits = model(x[:, :-1])
        torch.nn.functional.cross_entropy(logits.flatten(0, 1), x[:, 1:].flatten()).backward()
        opt.step()
        opt.zero_grad()
        times.append(time.perf_counter() - t0)
    return batch * seq / (sum(times[1:]) / steps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mix", help="an existing mix manifest (default: synthetic shards)")
    ap.add_argument("--tokens", type=int, default=8_000_000, help="synthetic tokens per source")
    ap.add_argument("--seq-len", type=int, nargs="+", default=[128, 2048])
    ap.add_argument("--batch", type=int, default=32, help="rows per rank per step")
    ap.add_argument("--seconds", type=float, default=1.5, help="rough time per measurement")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds; the best of each is reported")
    args = ap.parse_args()
    torch.set_num_threads(1)
    tmp = tempfile.TemporaryDirectory(prefix="bench-loader-")
    if args.mix:
        from trainer_bridge.mix import load_mix

        base = load_mix(args.mix)
    else:
        d = Path(tmp.name)
        ms = [synth_source(d / n, n, args.tokens, 1 << 22, i) for i, n in enumerate(["a", "b", "c"])]
        base = MixSpec(name="bench", seq_len=128, token_budget=10**15, seed=1, max_epochs=1e9, warn_epochs=1e9,
                       sources=tuple(MixSource(manifest=str(m), weight=w) for m, w in zip(ms, [0.5, 0.3, 0.2])))
    print(f"loader bench: {len(base.sources)} sources, batch {args.batch} rows/rank, torch threads 1")
    print(f"{'seq_len':>7}  {'reader (best of ' + str(args.rounds) + ' rounds)':<38} {'wall tok/s':>13} {'vs base':>6}"
          f"  {'tok per CPU-s':>15} {'vs base':>6}")
    for seq in args.seq_len:
        # throughput only: an endless budget (sources repeat as often as needed)
        spec = dataclasses.replace(base, seq_len=seq, max_epochs=1e18, warn_epochs=1e18, token_budget=10**15)
        plan = resolve_mix(spec)
        for st in plan.streams:  # warm the page cache for both readers
            st.read(0, st.n_tokens).sum()
        per = max(4, int(args.seconds * 2e6 / (args.batch * seq) / args.rounds))
        configs = [(1, 1, False), (1, 2, False), (4, 1, False), (1, 1, True)]
        best = {"base": (0.0, 0.0), **{c: (0.0, 0.0) for c in configs}}
        pick = lambda a, b: (max(a[0], b[0]), max(a[1], b[1]))
        for r in range(args.rounds):  # alternate, keep each one's best round: the machine is shared
            best["base"] = pick(best["base"], baseline(plan, args.batch, per))
            for c in configs:
                got = ours(plan, args.batch, per, world=c[0], workers=c[1], positions=c[2], start=1000 + r * per * 2)
                best[c] = pick(best[c], got)
        rows = [("np.memmap slice loop (baseline)", best["base"])]
        rows += [(f"MixLoader W={w} workers={k}{' +position_ids' if p else ''}", best[(w, k, p)])
                 for w, k, p in configs]
        bw, bc = best["base"]
        for name, (w, c) in rows:
            print(f"{seq:>7}  {name:<38} {w:>13,.0f} {w / bw:>6.0%}  {c:>15,.0f} {c / bc:>6.0%}")
    vocab = 50_304
    tps = max(trainer_step(128, vocab, 16) for _ in range(3))
    print(f"\ntrainer consumption (CPU, 1 thread): sample-config GPT (dim 128, 4 layers, vocab {vocab}), "
          f"seq 128, batch 16: {tps:,.0f} tokens/s")
    print("for scale (estimate, not measured here): a 125M model at 40% MFU on one H100 consumes about "
          f"{0.4 * 989e12 / (6 * 125e6 + 12 * 12 * 768 * 2048):,.0f} tokens/s")
    tmp.cleanup()


if __name__ == "__main__":
    main()
