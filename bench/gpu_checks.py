"""The trainer's GPU checks on real text: the fp8 loss curve beside bf16 over the first steps,
and a resume on the GPU compared step by step with the uninterrupted run.

    python bench/gpu_checks.py build --out .gpu/shards     # here: real text -> token shards (GPT-2 BPE)
    python bench/gpu_checks.py curve --shards .gpu/shards --steps 60
    python bench/gpu_checks.py resume --shards .gpu/shards --steps 12 --at 6

``build`` runs where the shared corpora are (WikiText-2 and Gutenberg books from
``../shared/corpora``, tokenized with GPT-2's BPE from ``../shared/tokenizers/gpt2``, through
the real shard writer); the other two run where the GPU is, on the built shards.

``curve``: the ``small`` model shape (162M, seq 1024) trained from the same seed on the same
samples, compiled, in bf16 and in fp8 (torchao, tensorwise), loss per step side by side. fp8
is a rounding change, so the curves should agree to a few hundredths and keep agreeing: a
growing gap would be a divergence. ``resume``: an uninterrupted run that checkpoints at
``--at``, then a run resumed from that checkpoint; per step after ``--at`` the batch digest
(the samples read) must be identical, and the loss and grad norm are compared. GPU kernels are
not all deterministic (the attention backward accumulates with atomics), so when the resumed
losses differ, a second uninterrupted run gives the run-to-run spread to compare them with.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHAPE = dict(dim=768, n_layers=12, n_heads=12)   # bench/mfu.py's "small"
SEQ = 1024


def build(out: Path, shared: Path, tokens_per_source: int) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders

    from stages.tokenize.identity import TokenizerInfo
    from stages.tokenize.writer import SourceShardWriter

    gpt2 = shared / "tokenizers" / "gpt2"
    tok = Tokenizer(models.BPE.from_file(str(gpt2 / "vocab.json"), str(gpt2 / "merges.txt")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    eos = tok.token_to_id("<|endoftext|>")
    info = TokenizerInfo(path="gpt2", fingerprint="blake2b-256:gpt2-vocab-merges", vocab_size=50257, eos_id=eos,
                         eos_token="<|endoftext|>")
    texts = {
        "wiki": [p for p in (shared / "corpora/wiki/wikitext-2-raw.test.txt").read_text().split("\n = ") if p.strip()],
        "books": _books(shared / "corpora/books/gutenberg", chars=5 * tokens_per_source),
    }
    manifests = []
    for i, (name, docs) in enumerate(texts.items()):
        w = SourceShardWriter(out / name, name, tokenizer_info=info, shard_tokens=1 << 22, seed=i, lineage={})
        total = 0
        for enc in tok.encode_batch(docs):
            ids = np.asarray(enc.ids[: tokens_per_source - total], dtype=np.uint16)
            if ids.size:
                w.add(ids, np.array([ids.size]))
                total += ids.size
            if total >= tokens_per_source:
                break
        manifests.append(w.finish())
        print(f"{name}: {total:,} tokens")
    (out / "mix.yaml").write_text(yaml.safe_dump({
        "name": "gpu-checks", "seq_len": SEQ, "token_budget": 10**12, "seed": 0, "max_epochs": 1e9, "warn_epochs": 1e9,
        "sources": [{"manifest": str(m.relative_to(out)), "weight": 0.5} for m in manifests]}))


def _books(folder: Path, chars: int) -> list[str]:
    """Gutenberg books in name order until about ``chars`` characters."""
    import gzip

    out, n = [], 0
    for p in sorted(folder.glob("*.txt.gz")):
        if n >= chars:
            break
        out.append(gzip.decompress(p.read_bytes()).decode("utf-8", "replace"))
        n += len(out[-1])
    return out


def _train(shards: Path, *, steps: int, precision: str, compile: bool, batch: int, device: str = "cuda",
           tiny: bool = False, **kw):
    import torch._dynamo

    from trainer_bridge.model import ModelConfig
    from trainer_bridge.train import TrainConfig, train

    torch._dynamo.reset()
    shape = dict(dim=64, n_layers=2, n_heads=4) if tiny else SHAPE  # tiny: a CPU smoke run of this script
    model = ModelConfig(vocab_size=50304, max_seq_len=SEQ, **shape)
    cfg = TrainConfig(mix=str(shards / "mix.yaml"), model=model, tp=1, global_batch=batch, steps=steps,
                      device=device, precision=precision if device == "cuda" else "fp32", compile=compile, warmup_steps=10, lr=6e-4,
                      log_every=10, batch_digest=True, verify_shards=False, **kw)
    return train(cfg)


def curve(args) -> dict:
    out = {}
    for precision in ("bf16", "fp8"):
        rows = _train(args.shards, steps=args.steps, precision=precision, compile=True, batch=args.batch,
                      device=args.device, tiny=args.tiny)
        out[precision] = [r["loss"] for r in rows]
    b, f = np.array(out["bf16"]), np.array(out["fp8"])
    print(f"\n{'step':>5} {'bf16 loss':>10} {'fp8 loss':>10} {'fp8-bf16':>9}")
    for s in sorted(set(range(0, len(b), max(1, len(b) // 12))) | {len(b) - 1}):
        print(f"{s + 1:>5} {b[s]:>10.4f} {f[s]:>10.4f} {f[s] - b[s]:>+9.4f}")
    last = slice(-10, None)
    print(f"mean |fp8-bf16| all steps {np.abs(f - b).mean():.4f}, last 10 steps {np.abs(f - b)[last].mean():.4f}; "
          f"loss step 1 -> {len(b)}: bf16 {b[0]:.3f} -> {b[last].mean():.3f}, fp8 {f[0]:.3f} -> {f[last].mean():.3f}")
    return out


def resume(args) -> dict:
    with tempfile.TemporaryDirectory(prefix="gpu-resume-") as tmp:
        ck = Path(tmp) / "ckpt"
        common = dict(steps=args.steps, precision="bf16", compile=True, batch=args.batch, device=args.device,
                      tiny=args.tiny)
        full = _train(args.shards, ckpt_dir=str(ck), ckpt_every=args.at, **common)
        resumed = _train(args.shards, ckpt_dir=str(ck), resume_from=args.at, ckpt_every=0, **common)
        again = None
    keys = ("loss", "grad_norm", "batch")
    same_batch = [a["batch"] == b["batch"] for a, b in zip(full[args.at:], resumed)]
    exact = [all(a[k] == b[k] for k in keys) for a, b in zip(full[args.at:], resumed)]
    if not all(exact):
        again = _train(args.shards, **common)
    print(f"\nresume at step {args.at} of {args.steps}: resumed steps {[r['step'] for r in resumed]}")
    print(f"{'step':>5} {'loss (full)':>12} {'loss (resumed)':>15} {'batch same':>10}" +
          (f" {'loss (rerun)':>13}" if again else ""))
    for i, (a, b) in enumerate(zip(full[args.at:], resumed)):
        print(f"{a['step']:>5} {a['loss']:>12.6f} {b['loss']:>15.6f} {str(same_batch[i]):>10}" +
              (f" {again[args.at + i]['loss']:>13.6f}" if again else ""))
    verdict = ("bit-exact (loss, grad norm and batch digest at every step)" if all(exact) else
               f"batches identical: {all(same_batch)}; losses differ by up to "
               f"{max(abs(a['loss'] - b['loss']) for a, b in zip(full[args.at:], resumed)):.2e}, run-to-run "
               f"{max(abs(a['loss'] - c['loss']) for a, c in zip(full, again)):.2e}")
    print("resume:", verdict)
    return {"full": full, "resumed": resumed, "again": again, "verdict": verdict}


def smoke() -> None:
    """``--smoke`` (bench/_smoke.py): build a small shard set and run the resume check with a
    2-layer model on the CPU (fp8 and the GPU are what the real run is for; this checks the script)."""
    with tempfile.TemporaryDirectory(prefix="bench-smoke-gpu-") as tmp:
        shards = Path(tmp) / "shards"
        build(shards, Path(os.environ.get("DATAPIPE_SHARED", Path(__file__).resolve().parents[2] / "shared")), 20_000)
        resume(argparse.Namespace(shards=shards, steps=4, at=2, batch=2, device="cpu", tiny=True))


def main() -> None:
    if "--smoke" in sys.argv[1:]:
        return smoke()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared")
    b.add_argument("--tokens", type=int, default=3_000_000, help="per source")
    for name in ("curve", "resume"):
        p = sub.add_parser(name)
        p.add_argument("--shards", type=Path, required=True)
        p.add_argument("--steps", type=int, default=60 if name == "curve" else 12)
        p.add_argument("--batch", type=int, default=16)
        p.add_argument("--json", type=Path)
        p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
        p.add_argument("--tiny", action="store_true", help="a 2-layer model (a CPU smoke run of the script)")
        if name == "resume":
            p.add_argument("--at", type=int, default=6)
    args = ap.parse_args()
    if args.cmd == "build":
        return build(args.out, args.shared, args.tokens)
    res = curve(args) if args.cmd == "curve" else resume(args)
    if args.json:
        args.json.write_text(json.dumps(res, default=str))


if __name__ == "__main__":
    main()
