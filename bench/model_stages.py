"""Throughput of the ``classify`` and ``embed`` model kit: length-bucketed batching (rows
sorted by token count, sub-batches bounded by padded tokens) against the naive loop a user
would write (fixed batches of ``--naive-rows`` in input order, each padded to its longest
row), same model, same tokens, same run.

    .venv/bin/python bench/model_stages.py [--docs 128] [--max-length 512] [--model DIR]
    python bench/model_stages.py --device cuda --dtype bf16 --max-length 512 --model DIR
    python bench/model_stages.py --model DIR --random-weights [--set hidden_size=768 ...]
    .venv/bin/python bench/model_stages.py --export-config models/minilm-config

Documents: real texts of very different lengths, cycled to ``--docs``: Wikipedia articles
(WikiText-2), RedPajama web/StackExchange/patent/NIH documents and CCNet pages from
``$DATAPIPE_SHARED`` (default ../shared). Columns: documents/s (wall clock; best of
``--repeat`` interleaved runs), documents/s per CPU core (torch's threads) or per GPU,
and the share of computed tokens that are real (not padding): the last is exact and does
not depend on the machine's load.

Model: ``--model`` (a local Hugging Face folder), default the all-MiniLM-L6-v2 that the
dev dependency ships (tests/minilm.py). ``classify`` loads it with
``AutoModelForSequenceClassification`` (a fresh head when it has none: its values are
meaningless, its cost is the model's). ``--random-weights``: only config.json and the
tokenizer are read from ``--model``, the weights are drawn from a seed (the speed of an
architecture without its checkpoint), and ``--set key=value`` changes the config first
(``--set hidden_size=768 --set num_hidden_layers=12 --set num_attention_heads=12 --set
intermediate_size=3072``: BERT-base, the size of FineWeb-Edu's classifier).
``--export-config DIR`` writes the packaged MiniLM's config and tokenizer (no weights,
~0.5 MB) to DIR, to carry to a machine without the package.

Imports: numpy, torch, transformers and the kit modules of ``stages/models`` only (no Ray,
no engine): the package ``stages`` is entered without running its ``__init__`` (which
registers every stage and needs the whole engine's dependencies).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
if "stages" not in sys.modules:   # the kit without stages/__init__ (the whole registry)
    _pkg = types.ModuleType("stages")
    _pkg.__path__ = [str(REPO / "stages")]
    sys.modules["stages"] = _pkg

import numpy as np  # noqa: E402

from bench import _smoke  # noqa: E402
from stages.models.classify import Classifier  # noqa: E402
from stages.models.embed import Encoder  # noqa: E402
from stages.models.kit import import_torch, length_batches, naive_batches  # noqa: E402

NOT_WEIGHTS = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
               "modules.json", "sentence_bert_config.json", "1_Pooling/config.json")


def shared_dir() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared"))


def real_documents(n: int) -> list[str]:
    """``n`` real documents of mixed lengths, in a fixed order (cycled when short)."""
    root = shared_dir() / "corpora"
    docs: list[str] = []
    article: list[str] = []
    for line in (root / "wiki/wikitext-2-raw.test.txt").read_text(encoding="utf-8").splitlines():
        s = line.strip()
        if s.startswith("= ") and not s.startswith("= = ") and article:
            docs.append("\n".join(article))
            article = []
        if s:
            article.append(s)
    docs.append("\n".join(article))
    for path in sorted((root / "redpajama").glob("*.jsonl")) + sorted((root / "ccnet").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                docs.append(str(rec.get("text") or rec.get("raw_content") or ""))
    with gzip.open(root / "ccnet/000.json.gz", "rt", encoding="utf-8") as fh:
        docs += [str(json.loads(line).get("text", "")) for line in fh if line.strip()]
    docs = [d for d in docs if d.strip()]
    # interleave long and short sources, so input order is what a crawl gives (no sorting)
    order = np.random.default_rng(0).permutation(len(docs))
    mixed = [docs[i] for i in order]
    return [mixed[i % len(mixed)] for i in range(n)]


def packaged_minilm() -> Path:
    sys.path.insert(0, str(REPO / "tests"))
    from minilm import minilm_dir

    return minilm_dir()


def export_config(src: Path, out: Path) -> None:
    for name in NOT_WEIGHTS:
        if (src / name).is_file():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src / name, out / name)


def random_model(src: Path, sets: list[str], work: Path) -> Path:
    """A model folder with ``src``'s config (changed by ``sets``) and tokenizer and weights
    drawn from seed 0."""
    torch, transformers = import_torch()
    out = work / "random-model"
    out.mkdir(parents=True, exist_ok=True)
    export_config(src, out)
    cfg = json.loads((src / "config.json").read_text())
    for kv in sets:
        k, v = kv.split("=", 1)
        cfg[k] = json.loads(v)
    (out / "config.json").write_text(json.dumps(cfg))
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(transformers.AutoConfig.from_pretrained(str(out)))
    model.save_pretrained(str(out))
    return out


def padded_tokens(lengths: np.ndarray, batches: list[np.ndarray]) -> int:
    return int(sum(len(b) * int(lengths[b].max()) for b in batches))


def measure(runner, tok, batches, device: str) -> float:
    torch, _ = import_torch()
    t0 = time.perf_counter()
    runner.run_batches(tok, batches)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=None, help="a local Hugging Face model folder (default: MiniLM)")
    ap.add_argument("--docs", type=int, default=128, help="documents (on a GPU give thousands)")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    ap.add_argument("--dtype", default="auto", choices=["auto", "fp32", "bf16", "fp16"])
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--batch-tokens", type=int, default=None, help="padded tokens per sub-batch (default: by device)")
    ap.add_argument("--naive-rows", type=int, default=32, help="rows per batch of the naive baseline")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--stages", default="embed,classify")
    ap.add_argument("--random-weights", action="store_true")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config change (--random-weights)")
    ap.add_argument("--export-config", type=Path, default=None, metavar="DIR")
    ap.add_argument("--json", type=Path, default=None, metavar="PATH")
    args = _smoke.parse(ap, {"docs": 24, "repeat": 1, "max_length": 128})
    if args.export_config is not None:
        export_config(args.model or packaged_minilm(), args.export_config)
        print(f"wrote the config and tokenizer (no weights) to {args.export_config}")
        return
    torch, transformers = import_torch()
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    model = args.model or packaged_minilm()
    work = Path(tempfile.mkdtemp(prefix="bench-model-stages-"))
    if args.random_weights:
        model = random_model(model, args.set, work)
    docs = real_documents(args.docs)
    kw = dict(device=args.device, dtype=args.dtype, max_length=args.max_length, batch_tokens=args.batch_tokens,
              threads=args.threads)
    runners = {"embed": lambda: Encoder(model, **kw), "classify": lambda: Classifier(model, **kw)}
    rows = []
    for name in [s for s in args.stages.split(",") if s]:
        runner = runners[name]()
        tok = runner.tokenize(docs)
        lengths = tok.lengths
        plans = {"length-bucketed": length_batches(lengths, batch_tokens=runner.batch_tokens, max_rows=runner.max_rows),
                 f"naive ({args.naive_rows} rows)": naive_batches(len(docs), args.naive_rows)}
        measure(runner, tok, plans["length-bucketed"][-1:], runner.device)   # warm-up (kernels, allocator)
        best = {k: float("inf") for k in plans}
        for _ in range(args.repeat):
            for k, batches in plans.items():   # interleaved: a noisy machine penalises both alike
                best[k] = min(best[k], measure(runner, tok, batches, runner.device))
        units = 1 if runner.device.startswith("cuda") else torch.get_num_threads()
        for k, batches in plans.items():
            padded = padded_tokens(lengths, batches)
            rows.append({"stage": name, "batching": k, "docs": len(docs), "device": runner.device,
                         "dtype": runner.dtype, "max_length": runner.max_length, "batch_tokens": runner.batch_tokens,
                         "seconds": round(best[k], 4), "docs_per_s": round(len(docs) / best[k], 1),
                         "docs_per_s_per_unit": round(len(docs) / best[k] / units, 1),
                         "unit": "GPU" if runner.device.startswith("cuda") else f"core ({units} threads)",
                         "real_tokens": int(lengths.sum()), "padded_tokens": padded,
                         "real_share": round(float(lengths.sum()) / padded, 3), "batches": len(batches)})
        del runner
    width = max(len(r["batching"]) for r in rows)
    print(f"model {model} ({'random weights' if args.random_weights else 'checkpoint'}); {args.docs} real documents, "
          f"mean {np.mean([r['real_tokens'] for r in rows]) / args.docs:.0f} tokens after truncation at {args.max_length}")
    print(f"{'stage':<9} {'batching':<{width}} {'device':<6} {'dtype':<5} {'docs/s':>9} {'docs/s/unit':>12} "
          f"{'real/padded':>12} {'batches':>8}")
    for r in rows:
        print(f"{r['stage']:<9} {r['batching']:<{width}} {r['device']:<6} {r['dtype']:<5} {r['docs_per_s']:>9.1f} "
              f"{r['docs_per_s_per_unit']:>12.1f} {r['real_share']:>12.3f} {r['batches']:>8}")
    print(f"(units: {rows[0]['unit']}; best of {args.repeat} interleaved runs)")
    if args.json is not None:
        args.json.write_text(json.dumps({"model": str(model), "random_weights": args.random_weights, "rows": rows},
                                        indent=2))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
