"""What loader-time FIM costs: the loader's hot path (``MixLoader.batch_at``) on real code
shards without ``fim:`` (the baseline, measured in the same run) and with ``fim:`` at rates
0.5 and 1.0, in tokens per CPU second of this process (``time.process_time``).

    python bench/fim_loader.py [--seq-len 2048] [--batch 16] [--steps 200]

The shards hold the interpreter's standard library (``*.py``, cut at blank lines into code
blocks of a few hundred tokens, so a window holds several documents: the transform's work
grows with the documents per window) tokenised with GPT-2 (``{shared}/tokenizers/gpt2``), plus
three sentinel ids above its vocabulary: the ids matter for the cost, not their names.
"""

from __future__ import annotations

import argparse
import os
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stages.tokenize.identity import TokenizerInfo, load_tokenizer  # noqa: E402
from stages.tokenize.writer import SourceShardWriter  # noqa: E402
from trainer_bridge.loader import LoaderConfig, MixLoader  # noqa: E402
from trainer_bridge.mix import resolve_mix  # noqa: E402


def code_shards(out: Path, max_bytes: int) -> Path:
    shared = Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared"))
    tok = load_tokenizer(shared / "tokenizers/gpt2")
    blocks, size = [], 0
    for f in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        for b in f.read_text(encoding="utf-8", errors="replace").split("\n\n"):
            if b.strip() and size < max_bytes:
                blocks.append(b)
                size += len(b)
    docs = [e.ids for e in tok.encode_batch(blocks)]
    eos = tok.token_to_id("<|endoftext|>")
    v = tok.get_vocab_size()
    info = TokenizerInfo(path="gpt2+sentinels", fingerprint="blake2b-256:bench", vocab_size=v + 4, eos_id=eos,
                         eos_token="<|endoftext|>",
                         special={"<fim_prefix>": v, "<fim_middle>": v + 1, "<fim_suffix>": v + 2, "<fim_pad>": v + 3})
    w = SourceShardWriter(out / "code", "code", tokenizer_info=info, shard_tokens=1 << 20, seed=0, lineage={})
    w.add(np.concatenate([np.asarray(d, dtype=np.int64) for d in docs]), np.array([len(d) for d in docs]))
    return w.finish()


def hot_path(mix: Path, batch: int, steps: int) -> tuple[float, float]:
    plan = resolve_mix(mix)
    ld = MixLoader(plan, LoaderConfig(global_batch=batch, verify=False))
    ld.batch_at(0)
    c0 = time.process_time()
    for t in range(steps):
        ld.batch_at(t * batch)
    tokens = steps * batch * plan.seq_len
    docs = 0
    for t in range(min(steps, 20)):   # documents per window, on a sample of the batches
        docs += int((plan.read(t * batch, batch) == plan.eos_id).sum())
    return tokens / (time.process_time() - c0), docs / (min(steps, 20) * batch)


if __name__ == "__main__":
    import _smoke  # bench/ is sys.path[0] when this file runs as a script

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--max-bytes", type=int, default=8_000_000, help="stdlib code to tokenise")
    args = _smoke.parse(ap, {"seq_len": 128, "batch": 4, "steps": 5, "max_bytes": 200_000})
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        code_shards(d / "shards", args.max_bytes)
        rows = []
        for label, fim in (("no fim (baseline)", None), ("fim rate 0.5", {"rate": 0.5}), ("fim rate 1.0", {"rate": 1.0})):
            mix = {"name": "bench", "seq_len": args.seq_len, "token_budget": args.seq_len * args.batch * (args.steps + 1),
                   "seed": 1, "max_epochs": 1000, "warn_epochs": 1000,
                   "sources": [{"manifest": "shards/code/manifest.json", "weight": 1.0}],
                   **({"fim": fim} if fim else {})}
            (d / "mix.yaml").write_text(yaml.safe_dump(mix))
            tps, dpw = hot_path(d / "mix.yaml", args.batch, args.steps)
            rows.append((label, tps))
        base = rows[0][1]
        print(f"seq_len {args.seq_len}, batch {args.batch}, {args.steps} steps; {dpw:.1f} document ends per window")
        print(f"{'loader hot path':<20} {'tokens / CPU s':>15} {'vs baseline':>12}")
        for label, tps in rows:
            print(f"{label:<20} {tps:>15,.0f} {tps / base:>11.2f}x")
