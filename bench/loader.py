"""Loader throughput: tokens/s one rank receives from ``MixLoader`` beside a raw
``np.memmap`` read of the same windows (the baseline, measured in the same run), and what
a tiny training step consumes.

    python bench/loader.py                      # synthetic shards (3 sources) in a temp dir
    python bench/loader.py --mix mixes/sample.yaml --seq-len 128
    python bench/loader.py --schedule           # the same, every measured sample inside a transition

Rows: the baseline; ``MixLoader.batch_at`` (the loader's hot path in the calling thread:
the same work as the baseline plus the plan); the iterator with W ranks (rank 0 measured),
prefetch threads and position ids. The baseline gets every sample's window handed to it (sources, windows and shard offsets
computed before the clock starts) and only slices the memory maps, stacks the rows and
makes int64 tensors; the loader also pays for resolving the mix plan (interleave, window
permutation, shard lookup) and its prefetch threads. Target: the hot path at >= 90% of the
baseline, and the loader far above what the trainer consumes. The iterator rows add thread
hand-offs, which on a loaded machine cost scheduler latency rather than CPU. Shards are written by the real writer and verified (content, once) before timing.
``--schedule`` replaces the weights with a two-phase schedule whose linear transition covers
every measured sample: the most expensive part of a schedule to locate (two interleaves and a
per-source rank per block), so the worst case for the plan math.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stages.tokenize.identity import TokenizerInfo  # noqa: E402
from stages.tokenize.writer import SourceShardWriter  # noqa: E402
from trainer_bridge.loader import LoaderConfig, MixLoader  # noqa: E402
from trainer_bridge.mix import MixSource, MixSpec, PhaseSpec, resolve_mix  # noqa: E402

VOCAB, EOS = 50_001, 0


def synth_source(folder: Path, name: str, tokens: int, shard_tokens: int, seed: int) -> Path:
    """Random uint16 tokens in ~300-token documents, through the real shard writer."""
    rng = np.random.default_rng(seed)
    lengths = rng.geometric(1 / 300, size=tokens // 300 + 1)
    lengths = lengths[np.cumsum(lengths) <= tokens]
    flat = rng.integers(1, VOCAB, int(lengths.sum()), dtype=np.uint16)
    info = TokenizerInfo(path="bench", fingerprint="blake2b-256:synthetic", vocab_size=VOCAB, eos_id=EOS, eos_token="<e>")
    w = SourceShardWriter(folder, name, tokenizer_info=info, shard_tokens=shard_tokens, seed=seed, lineage={})
    w.add(flat, lengths)
    return w.finish()


def _windows(plan, n0: int, count: int) -> list:
    """Per sample, the memory-map slices holding its window (one, or two across a shard end)."""
    src, win = plan.locate(n0, count)
    width = plan.seq_len + 1
    out = []
    for s, w in zip(src.tolist(), win.tolist()):
        st = plan.streams[s]
        start = w * plan.seq_len
        i = int(np.searchsorted(st._offsets, start, side="right")) - 1
        a = start - int(st._offsets[i])
        pieces, need = [], width
        while need:
            m = st.shard_arrays[i]
            take = min(need, m.shape[0] - a)
            pieces.append((m, a, a + take))
            i, a, need = i + 1, 0, need - take
        out.append(pieces)
    return out


def baseline(plan, batch: int, steps: int, start: int) -> tuple[float, float]:
    """Raw reads of the loader's windows: slice the memory maps, stack, int64 tensors."""
    wins = _windows(plan, start, steps * batch)
    t0, c0 = time.perf_counter(), time.process_time()
    for t in range(steps):
        rows = []
        for p in wins[t * batch:(t + 1) * batch]:
            if len(p) == 1:
                m, a, b = p[0]
                rows.append(m[a:b])
            else:
                rows.append(np.concatenate([m[a:b] for m, a, b in p]))
        full = torch.from_numpy(np.stack(rows).astype(np.int64))
        x, y = full[:, :-1], full[:, 1:]
        assert x.shape == y.shape
    tokens = steps * batch * plan.seq_len
    return tokens / (time.perf_counter() - t0), tokens / (time.process_time() - c0)


def hot_path(plan, batch: int, steps: int, start: int) -> tuple[float, float]:
    """The loader's hot path in this thread (``MixLoader.batch_at``: plan lookup, reads,
    tensors): the same work as the baseline, no prefetch threads."""
    ld = MixLoader(plan, LoaderConfig(global_batch=batch, verify=False))
    ld.batch_at(start)
    t0, c0 = time.perf_counter(), time.process_time()
    for t in range(steps):
        b = ld.batch_at(start + t * batch)
    assert b["input_ids"].shape == (batch, plan.seq_len)
    tokens = steps * batch * plan.seq_len
    return tokens / (time.perf_counter() - t0), tokens / (time.process_time() - c0)


def ours(plan, batch: int, steps: int, *, world: int, workers: int, positions: bool, start: int) -> tuple[float, float]:
    """Tokens/s rank 0 of `world` receives (its local batch: `batch` rows per step)."""
    cfg = LoaderConfig(global_batch=batch * world, rank=0, world_size=world, num_workers=workers, prefetch=4,
                       with_position_ids=positions, verify=False)  # content was verified once, before timing
    with MixLoader(plan, cfg) as ld:
        ld.load_state_dict({"plan_hash": plan.plan_hash, "samples_committed": start})
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


def with_transition(spec: MixSpec) -> MixSpec:
    """``spec`` with a schedule: its weights for 64,000 tokens, then a linear
    transition to the weights reversed over 2^30 x 128 tokens (every measured sample is inside it)."""
    from trainer_bridge.mix import load_manifest

    names = [load_manifest(str(spec.base_dir / s.manifest) if not Path(s.manifest).is_absolute() else s.manifest).source
             for s in spec.sources]
    w = [s.weight for s in spec.sources]
    return dataclasses.replace(
        spec, sources=tuple(MixSource(manifest=s.manifest) for s in spec.sources),
        schedule=(PhaseSpec(name="main", tokens=500 * 128, weights=dict(zip(names, w))),
                  PhaseSpec(name="anneal", transition=2**30 * 128, weights=dict(zip(names, w[::-1])))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mix", help="an existing mix manifest (default: synthetic shards)")
    ap.add_argument("--tokens", type=int, default=8_000_000, help="synthetic tokens per source")
    ap.add_argument("--seq-len", type=int, nargs="+", default=[128, 2048])
    ap.add_argument("--batch", type=int, default=32, help="rows per rank per step")
    ap.add_argument("--seconds", type=float, default=1.5, help="rough time per measurement")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds; the best of each is reported")
    ap.add_argument("--schedule", action="store_true", help="measure inside a linear transition between two phases")
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"tokens": 200_000, "seq_len": [128], "seconds": 0.05, "rounds": 1})
    torch.set_num_threads(1)
    tmp = tempfile.TemporaryDirectory(prefix="bench-loader-")
    if args.mix:
        from trainer_bridge.mix import load_mix

        base = load_mix(args.mix)
    else:
        d = Path(tmp.name)
        ms = [synth_source(d / n, n, args.tokens, 1 << 22, i) for i, n in enumerate(["a", "b", "c"])]
        resolve_mix(MixSpec(name="check", seq_len=128, token_budget=128, sources=tuple(
            MixSource(manifest=str(m), weight=1.0) for m in ms)), verify_hashes=True)
        base = MixSpec(name="bench", seq_len=128, token_budget=10**15, seed=1, max_epochs=1e9, warn_epochs=1e9,
                       sources=tuple(MixSource(manifest=str(m), weight=w) for m, w in zip(ms, [0.5, 0.3, 0.2])))
    if args.schedule:
        base = with_transition(base)
    print(f"loader bench: {len(base.sources)} sources, batch {args.batch} rows/rank, torch threads 1"
          + (", inside a schedule's transition" if args.schedule else ""))
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
        best = {"base": (0.0, 0.0), "hot": (0.0, 0.0), **{c: (0.0, 0.0) for c in configs}}
        pick = lambda a, b: (max(a[0], b[0]), max(a[1], b[1]))
        for r in range(args.rounds):  # alternate, keep each one's best round: the machine is shared
            start = 1000 + r * per * args.batch * 8  # same samples for the baseline and rank 0 of W=1
            best["base"] = pick(best["base"], baseline(plan, args.batch, per, start))
            best["hot"] = pick(best["hot"], hot_path(plan, args.batch, per, start))
            for c in configs:
                got = ours(plan, args.batch, per, world=c[0], workers=c[1], positions=c[2], start=start)
                best[c] = pick(best[c], got)
        rows = [("np.memmap slice loop (baseline)", best["base"]), ("MixLoader.batch_at (hot path)", best["hot"])]
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
