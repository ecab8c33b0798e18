"""Tokens/s per core: the ``tokenize`` stage plus shard writing, beside the bare
``Tokenizer.encode_batch`` on the same text in the same process (the baseline).

    .venv/bin/python bench/tokenize_shards.py [--mb 8] [--tokenizer PATH] [--repeat 3] [--ray 2]

Everything runs on one thread (``TOKENIZERS_PARALLELISM=false``), so tokens per CPU
second is tokens/s per core. Rows:

* ``encode_batch``       – ``tok.encode_batch(texts, add_special_tokens=False)``, ids read
  out (the baseline: nothing is usable without the ids)
* ``encode_batch_fast``  – the same call without offsets (what the stage uses)
* ``stage``              – ``Tokenize.process`` on base-schema Arrow batches (the real hot
  path: alive mask, Arrow columns, per-source stats)
* ``stage + shards``     – the above, then ``write_shards`` (ordering, EOS, ``.bin``/
  ``.idx``, fsync, re-read and verify, manifest) into a temp folder

``--ray N`` adds ``ray pipeline``: a local Ray with N CPUs, the stage on N actors and
``write_shards`` of the Ray Dataset (distributed sort, streamed to this process); its
rate is wall tokens/s divided by N (start-up excluded, so it shows Ray's per-row cost).

Input text: WikiText-2 (articles) and Project Gutenberg books cut into ~8 KB documents,
from ``$DATAPIPE_SHARED`` (default ``<repo>/../shared``).
"""

from __future__ import annotations

import os
import sys

# This file is named like the stdlib's ``tokenize``: drop bench/ from the import path
# before anything imports it.
if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
    sys.path.pop(0)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import gzip  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402

from datapipe.schema import make_batch  # noqa: E402
from bench.shard_writers import write_shards  # noqa: E402
from stages.tokenize.identity import load_tokenizer, tokenizer_info  # noqa: E402
from stages.tokenize import Tokenize  # noqa: E402

BATCH = 256


def shared_dir() -> Path:
    d = Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared"))
    if not (d / "corpora").is_dir():
        sys.exit(f"shared data not found at {d}; set DATAPIPE_SHARED")
    return d


def load_texts(shared: Path, mb: float) -> list[str]:
    """Documents: WikiText-2 articles, then Gutenberg books in ~8 KB paragraph chunks."""
    budget = int(mb * 1e6)
    docs: list[str] = []
    wiki = (shared / "corpora/wiki/wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    docs.extend(d for d in wiki.split("\n = ") if d.strip())
    size = sum(len(d.encode()) for d in docs)
    for book in sorted((shared / "corpora/books/gutenberg").glob("*.txt.gz")):
        if size >= budget:
            break
        text = gzip.decompress(book.read_bytes()).decode("utf-8", "replace").replace("\r\n", "\n")
        buf: list[str] = []
        n = 0
        for para in text.split("\n\n"):
            buf.append(para)
            n += len(para)
            if n >= 8000:
                docs.append("\n\n".join(buf))
                size += n
                buf, n = [], 0
        if buf:
            docs.append("\n\n".join(buf))
            size += n
    return docs


def timed(fn) -> tuple[float, float, object]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=8.0, help="MB of text (default 8)")
    ap.add_argument("--tokenizer", default=None, help="default: $DATAPIPE_SHARED/tokenizers/gpt2")
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs per row")
    ap.add_argument("--shard-tokens", type=int, default=1 << 20)
    ap.add_argument("--ray", type=int, default=0, metavar="N", help="also run the Ray pipeline on N CPUs")
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"mb": 0.2, "repeat": 1})

    shared = shared_dir()
    tok_path = args.tokenizer or str(shared / "tokenizers" / "gpt2")
    texts = load_texts(shared, args.mb)
    nbytes = sum(len(t.encode()) for t in texts)
    tok = load_tokenizer(tok_path)
    info = tokenizer_info(tok_path)
    chunks = [texts[i:i + BATCH] for i in range(0, len(texts), BATCH)]
    tables = [make_batch(source="bench", ids=[f"bench/{i + j:08d}" for j in range(len(c))], texts=c)
              for i, c in zip(range(0, len(texts), BATCH), chunks)]
    stage = Tokenize(Tokenize.Config(tokenizer=tok_path))
    stage.ensure_setup()

    def baseline():
        return sum(len(e.ids) for c in chunks for e in tok.encode_batch(c, add_special_tokens=False))

    def baseline_fast():
        return sum(len(e.ids) for c in chunks for e in tok.encode_batch_fast(c, add_special_tokens=False))

    def run_stage():
        return [stage.process(t)[0] for t in tables]

    def stage_and_shards():
        out = tempfile.mkdtemp(prefix="dp-bench-")
        try:
            done = run_stage()
            write_shards(done, out, tokenizer_info=info, shard_tokens=args.shard_tokens, seed=0,
                         lineage={"bench": True})
            return done
        finally:
            shutil.rmtree(out, ignore_errors=True)

    rows = [("encode_batch (baseline)", baseline), ("encode_batch_fast", baseline_fast),
            ("stage", run_stage), ("stage + shards", stage_and_shards)]
    best: dict[str, tuple[float, float]] = {}
    n_tokens = 0
    for _ in range(args.repeat):  # interleaved, so drift in machine load hits every row alike
        for name, fn in rows:
            wall, cpu, out = timed(fn)
            if name.startswith("encode_batch (baseline)"):
                n_tokens = int(out)  # type: ignore[arg-type]
            w, c = best.get(name, (float("inf"), float("inf")))
            best[name] = (min(w, wall), min(c, cpu))

    extra: list[tuple[str, float, float]] = []
    if args.ray:
        extra.append(ray_row(args.ray, tables, tok_path, info, args.shard_tokens, n_tokens))

    base_cpu = n_tokens / best["encode_batch (baseline)"][1]
    print(f"\n{len(texts)} documents, {nbytes / 1e6:.1f} MB, {n_tokens} tokens; tokenizer {tok_path} "
          f"(vocab {info.vocab_size}); best of {args.repeat}; 1 thread\n")
    print(f"{'path':<26} {'wall s':>8} {'cpu s':>8} {'tok/s/core (cpu)':>17} {'vs baseline':>12}")
    for name, _ in rows:
        w, c = best[name]
        rate = n_tokens / c
        print(f"{name:<26} {w:8.2f} {c:8.2f} {rate:17,.0f} {rate / base_cpu:11.0%}")
    for name, w, rate in extra:
        print(f"{name:<26} {w:8.2f} {'':>8} {rate:17,.0f} {rate / base_cpu:11.0%}  (wall / cores)")


def ray_row(n: int, tables: list[pa.Table], tok_path: str, info, shard_tokens: int, n_tokens: int):
    import ray

    ray.init(num_cpus=n, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False

    class Tok:
        def __init__(self, path: str) -> None:
            self.stage = Tokenize(Tokenize.Config(tokenizer=path))

        def __call__(self, t: pa.Table) -> pa.Table:
            return self.stage.process(t)[0]

    out = tempfile.mkdtemp(prefix="dp-bench-ray-")
    try:
        ds = ray.data.from_arrow([t.drop_columns(["raw"]) for t in tables]).materialize()
        ray.data.range(n).map_batches(lambda b: b).materialize()  # warm the workers
        w0 = time.perf_counter()
        toks = ds.map_batches(Tok, fn_constructor_kwargs={"path": tok_path}, batch_size=BATCH, batch_format="pyarrow",
                              compute=ray.data.ActorPoolStrategy(size=n), num_cpus=0.9)
        write_shards(toks, out, tokenizer_info=info, shard_tokens=shard_tokens, seed=0, lineage={})
        wall = time.perf_counter() - w0
    finally:
        shutil.rmtree(out, ignore_errors=True)
        ray.shutdown()
    return (f"ray pipeline ({n} cpu)", wall, n_tokens / wall / n)


if __name__ == "__main__":
    main()
