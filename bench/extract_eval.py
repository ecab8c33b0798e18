"""Extraction quality and cost: the ``extract`` stage against trafilatura called directly.

Runs over every HTML page in ``$DATAPIPE_SHARED/corpora/web/html/`` (549 real pages):

* **baseline** – ``trafilatura.extract(page_bytes)`` with trafilatura's default settings;
* **stage (trafilatura defaults)** – ``extract`` configured like that call
  (``favor_precision: false, include_comments: true``) and run the way the runner runs
  it (``Extract.process`` on Arrow batches), with its guard rails on (encoding
  detection, HTML sniffing, title, time limit);
* **stage (precision default)** – the stage's own defaults (``favor_precision: true``,
  no comments), what a job gets without options.

Agreement with the baseline, per page:

* *exact*: identical text (two empty outputs agree);
* *similar*: token-level F1 >= 0.9, where F1 = 2 |A ∩ B| / (|A| + |B|) over the
  multisets of whitespace tokens of the two outputs (1.0 when both are empty).

Time per page: CPU time of this process (``time.process_time``); each chunk of pages is
timed for the baseline and the stage back to back, ``--repeats`` times in alternating
order, and the fastest run of each chunk is kept (the machine may be shared; the minimum
is the least disturbed measurement). The stage's overhead
is ``stage / baseline - 1`` over the same pages; the target is < 15 %.

    .venv/bin/python bench/extract_eval.py [--limit N] [--repeats 3] [--chunk 16]
"""

from __future__ import annotations

import sys
from pathlib import Path

# keep bench/ itself off the import path (a script there named like a standard-library
# module would shadow it); import the project from the repository root
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
REPO = _HERE.parent
sys.path.insert(0, str(REPO))

import argparse  # noqa: E402
import collections  # noqa: E402
import gzip  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import trafilatura  # noqa: E402

from datapipe.schema import make_batch  # noqa: E402
from stages.extract import Extract, ExtractConfig  # noqa: E402


def shared_dir() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared")).resolve()


def load_pages(limit: int | None) -> list[tuple[str, bytes]]:
    folder = shared_dir() / "corpora" / "web" / "html"
    files = sorted(folder.glob("*.gz"))       # *.html.gz, and one page saved as plain .gz
    if not files:
        sys.exit(f"no pages under {folder}: set DATAPIPE_SHARED to the shared data folder")
    return [(p.name, gzip.decompress(p.read_bytes())) for p in files[:limit]]


def token_f1(a: str | None, b: str | None) -> float:
    ta, tb = (a or "").split(), (b or "").split()
    if not ta and not tb:
        return 1.0
    common = sum((collections.Counter(ta) & collections.Counter(tb)).values())
    return 2 * common / (len(ta) + len(tb))


def run_direct(raws: list[bytes]) -> list[str | None]:
    return [trafilatura.extract(r) for r in raws]


def run_stage(stage: Extract, raws: list[bytes]) -> tuple[list[str | None], list[str | None]]:
    batch = make_batch(source="web", ids=[f"p{i}" for i in range(len(raws))], raws=raws)
    out, _ = stage.process(batch)
    reasons = out.column("_reject_reason").to_pylist()
    texts = [t if r is None else None for t, r in zip(out.column("text").to_pylist(), reasons)]
    return texts, reasons


def timed(fn, *args):
    t0 = time.process_time()
    res = fn(*args)
    return time.process_time() - t0, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=None, help="only the first N pages")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=16, help="pages per Arrow batch")
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"limit": 8, "repeats": 1})

    pages = load_pages(args.limit)
    raws = [r for _, r in pages]
    n = len(raws)
    default_stage = Extract(ExtractConfig(favor_precision=False, include_comments=True))
    precision_stage = Extract(ExtractConfig())
    run_direct(raws[:3]), run_stage(default_stage, raws[:3]), run_stage(precision_stage, raws[:3])  # warm up

    best = {"direct": 0.0, "stage_default": 0.0, "stage_precision": 0.0}
    outputs: dict[str, list] = {"direct": [], "stage_default": [], "stage_precision": []}
    reasons: dict[str, list] = {"stage_default": [], "stage_precision": []}
    for start in range(0, n, args.chunk):
        chunk = raws[start:start + args.chunk]
        times = {k: [] for k in best}
        for rep in range(args.repeats):
            order = ["direct", "stage_default", "stage_precision"]
            if rep % 2:
                order.reverse()
            for name in order:
                if name == "direct":
                    dt, res = timed(run_direct, chunk)
                else:
                    dt, res = timed(run_stage, default_stage if name == "stage_default" else precision_stage, chunk)
                times[name].append(dt)
                if rep == 0:
                    if name == "direct":
                        outputs[name].extend(res)
                    else:
                        outputs[name].extend(res[0])
                        reasons[name].extend(res[1])
        for k in best:
            best[k] += min(times[k])
        done = min(start + args.chunk, n)
        print(f"\r{done}/{n} pages", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)

    direct = outputs["direct"]
    print(f"extract vs trafilatura.extract (defaults) on {n} pages from {shared_dir() / 'corpora/web/html'}")
    print(f"trafilatura {trafilatura.__version__}; agreement: exact = identical text; similar = token F1 >= 0.9")
    print()
    head = f"{'run (CPU time)':34s} {'ms/page':>8s} {'vs direct':>10s} {'exact':>7s} {'similar':>8s} {'mean F1':>8s} {'chars':>10s} {'kept':>5s}"
    print(head)
    print("-" * len(head))
    chars_direct = sum(len(t or "") for t in direct)
    print(f"{'trafilatura.extract (baseline)':34s} {best['direct'] / n * 1e3:8.2f} {'':>10s} {'':>7s} {'':>8s} {'':>8s} "
          f"{chars_direct:10d} {sum(bool(t) for t in direct):5d}")
    for name, label in (("stage_default", "stage, trafilatura defaults"), ("stage_precision", "stage, precision (default)")):
        outs = outputs[name]
        f1 = [token_f1(a, b) for a, b in zip(outs, direct)]
        exact = sum((a or None) == (b or None) for a, b in zip(outs, direct))
        similar = sum(x >= 0.9 for x in f1)
        overhead = best[name] / best["direct"] - 1
        print(f"{label:34s} {best[name] / n * 1e3:8.2f} {overhead * 100:+9.1f}% {exact / n * 100:6.1f}% "
              f"{similar / n * 100:7.1f}% {statistics.mean(f1):8.3f} {sum(len(t or '') for t in outs):10d} "
              f"{sum(bool(t) for t in outs):5d}")
    print()
    for name in reasons:
        counts = collections.Counter(r for r in reasons[name] if r)
        print(f"{name} rejects: {dict(counts) or 'none'}")
    diff = [(pages[i][0], round(token_f1(a, b), 3)) for i, (a, b) in enumerate(zip(outputs['stage_default'], direct))
            if (a or None) != (b or None)]
    if diff:
        print(f"stage (defaults) differs from the direct call on {len(diff)} pages, e.g. {diff[:5]}")
    overhead = best["stage_default"] / best["direct"] - 1
    print(f"\nstage overhead over the direct call: {overhead * 100:+.1f}% per page (target < 15%): "
          f"{'OK' if overhead < 0.15 else 'OVER'}")


if __name__ == "__main__":
    main()
