"""Extraction quality and cost: each ``extractor:`` of the ``extract`` stage, same pages, same run.

Pages: every HTML page in ``--pages`` (default ``$DATAPIPE_SHARED/corpora/web/html/``, 549
real pages; ``*.html``, ``*.html.gz`` and ``*.gz``). Rows, all timed on the same pages in
the same run:

* **trafilatura.extract (direct)** – the library called directly with its own defaults;
* **stage, trafilatura defaults** – ``extract`` configured like that call
  (``favor_precision: false, include_comments: true``), run the way the runner runs it
  (``Extract.process`` on Arrow batches) with its guard rails on: its overhead over the
  direct call is the stage's own cost (target < 15 %);
* **stage, extractor: X** – the stage's default options (``favor_precision: true``, no
  comments) with each extractor of ``--extractors``; ``trafilatura`` is the reference the
  others are compared with.

Quality, two ways:

* against ground truth, with ``--truth FILE``: trafilatura's evaluation set
  (``tests/evaldata.json`` in adbar/trafilatura: per page, snippets the main text must
  contain and snippets it must not). Each snippet is a true positive (wanted, found), a
  false negative (wanted, missing), a false positive (unwanted, found); precision, recall
  and F1 are over all snippets of all pages that have an entry (micro-averaged);
* against the articlebench set, with ``--articlebench DIR`` (a checkout of Zyte's
  article-extraction-benchmark: 181 pages in ``html/*.html.gz``, ``ground-truth.json``
  with each page's ``articleBody``): their metric, written here from their evaluate.py:
  per page, the 4-token shingles (``\\w+`` tokens) of the text and of the truth give TP, FP
  and FN as counts normalised to sum 1; precision and recall are means over the pages
  (a page with nothing extracted has no precision, one with an empty truth no recall),
  F1 = 2PR / (P + R) of those means;
* agreement with the reference extractor, per page: *exact* (identical text; two empty
  outputs agree) and *similar* (token F1 >= 0.9, F1 = 2 |A ∩ B| / (|A| + |B|) over the
  multisets of whitespace tokens, 1.0 when both are empty).

The held-out set is trafilatura's evaluation pages that are not among the shared ones:
``--pages <trafilatura checkout>/tests/eval --truth <...>/tests/evaldata.json
--skip-shared --only-truth`` (464 pages at trafilatura e90b0ef).
The articlebench set: ``--articlebench <article-extraction-benchmark checkout>`` (181 pages
at 4a3bc97), pages and truth both from that folder.

Time per page: CPU time of this process (``time.process_time``), which a shared machine
distorts less than wall time; each chunk of pages is timed for every row back to back,
``--repeats`` times in alternating order, and the fastest run of each chunk is kept.

    .venv/bin/python bench/extract_eval.py [--truth evaldata.json] [--extractors trafilatura,cascade]
        [--pages DIR --skip-shared --only-truth | --articlebench DIR] [--limit N] [--repeats 3] [--chunk 16]
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
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import trafilatura  # noqa: E402

from datapipe.schema import make_batch  # noqa: E402
from stages.extract.extractors import EXTRACTORS  # noqa: E402
from stages.extract import Extract, ExtractConfig  # noqa: E402


def shared_dir() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared")).resolve()


def _page_name(p: Path) -> str:
    """The page's name without a ``.gz`` suffix (the key in trafilatura's evaluation set)."""
    return p.name[:-3] if p.name.endswith(".gz") else p.name


def load_pages(folder: Path, limit: int | None, *, skip_shared: bool, truth: dict | None,
               only_truth: bool) -> list[tuple[str, bytes]]:
    files = sorted(p for p in folder.iterdir() if p.name.endswith((".html", ".htm", ".gz")))
    if not files:
        sys.exit(f"no pages under {folder}: set DATAPIPE_SHARED to the shared data folder or pass --pages")
    if skip_shared:
        shared = {_page_name(p) for p in (shared_dir() / "corpora" / "web" / "html").iterdir()}
        files = [p for p in files if _page_name(p) not in shared]
    if only_truth:
        files = [p for p in files if _page_name(p) in (truth or {})]
    files = files[:limit]
    return [(_page_name(p), gzip.decompress(p.read_bytes()) if p.name.endswith(".gz") else p.read_bytes())
            for p in files]


def load_truth(path: str | None) -> dict | None:
    """``{page file name: {"with": [...], "without": [...]}}`` from trafilatura's evaldata.json."""
    if not path:
        return None
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {v["file"]: v for v in data.values() if isinstance(v, dict) and "file" in v}


def truth_scores(names: list[str], outs: list[str | None], truth: dict) -> tuple[float, float, float, int]:
    """(precision, recall, F1, pages scored) over the snippets of the pages that have an entry."""
    tp = fn = fp = pages = 0
    for name, out in zip(names, outs):
        entry = truth.get(name)
        if entry is None:
            continue
        pages += 1
        out = out or ""
        found = [s in out for s in entry.get("with", [])]
        tp += sum(found)
        fn += len(found) - sum(found)
        fp += sum(s in out for s in entry.get("without", []))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1, pages


def load_articlebench(folder: Path, limit: int | None) -> tuple[list[tuple[str, bytes]], dict[str, str]]:
    """The pages of an article-extraction-benchmark checkout, named by their key in
    ``ground-truth.json`` (the file name without ``.html.gz``), and ``{key: articleBody}``."""
    truth_file, html_dir = folder / "ground-truth.json", folder / "html"
    if not truth_file.is_file() or not html_dir.is_dir():
        sys.exit(f"--articlebench {folder}: expected ground-truth.json and html/ there "
                 "(a checkout of github.com/scrapinghub/article-extraction-benchmark)")
    truth = {k: (v.get("articleBody") or "") for k, v in json.loads(truth_file.read_text(encoding="utf-8")).items()}
    pages = [(n.removesuffix(".html"), raw) for n, raw in
             load_pages(html_dir, limit, skip_shared=False, truth=None, only_truth=False)]
    missing = [n for n, _ in pages if n not in truth]
    if missing:
        sys.exit(f"--articlebench {folder}: {len(missing)} pages have no ground-truth.json entry, e.g. {missing[:3]}")
    return pages, truth


_WORD = re.compile(r"\w+")


def _shingles(text: str, n: int = 4) -> collections.Counter:
    """The multiset of n-token shingles; a text of fewer than n tokens is one shorter shingle."""
    tokens = _WORD.findall(text)
    return collections.Counter(tuple(tokens[i:i + n]) for i in range(max(1, len(tokens) - n + 1)) if tokens)


def shingle_match(true: str, pred: str) -> tuple[float, float, float]:
    """(TP, FP, FN) of one page over its 4-token shingles, scaled to sum 1 (so that a long
    article weighs as much as a short one); all 0 when both texts are empty."""
    t, p = _shingles(true), _shingles(pred)
    tp = sum((t & p).values())
    fp = sum((p - t).values())
    fn = sum((t - p).values())
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def articlebench_scores(names: list[str], outs: list[str | None], truth: dict[str, str]) -> tuple[float, float, float, int]:
    """(precision, recall, F1, pages scored) as article-extraction-benchmark's evaluate.py
    computes them: per-page precision averaged over the pages with something extracted,
    per-page recall over the pages with a non-empty truth (a page where both texts are
    equal, empty included, scores 1), F1 of the two means."""
    precisions, recalls = [], []
    for name, out in zip(names, outs):
        tp, fp, fn = shingle_match(truth[name], out or "")
        if tp + fp > 0:
            precisions.append(1.0 if fp == fn == 0 else tp / (tp + fp))
        if tp + fn > 0:
            recalls.append(1.0 if fp == fn == 0 else tp / (tp + fn))
    precision = statistics.mean(precisions) if precisions else 0.0
    recall = statistics.mean(recalls) if recalls else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1, len(names)


def token_f1(a: str | None, b: str | None) -> float:
    ta, tb = (a or "").split(), (b or "").split()
    if not ta and not tb:
        return 1.0
    common = sum((collections.Counter(ta) & collections.Counter(tb)).values())
    return 2 * common / (len(ta) + len(tb))


def run_direct(raws: list[bytes]) -> tuple[list[str | None], int]:
    return [trafilatura.extract(r) for r in raws], 0


def run_stage(stage: Extract, raws: list[bytes]) -> tuple[list[str | None], int]:
    """The kept texts (None for a reject) and the number of cascade fallbacks."""
    batch = make_batch(source="web", ids=[f"p{i}" for i in range(len(raws))], raws=raws)
    out, stats = stage.process(batch)
    reasons = out.column("_reject_reason").to_pylist()
    texts = [t if r is None else None for t, r in zip(out.column("text").to_pylist(), reasons)]
    return texts, sum(s.changes.get("cascade_fallbacks", 0) for s in stats.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", default=None, help="folder of pages (default: the shared corpora/web/html)")
    ap.add_argument("--truth", default=None, help="trafilatura's tests/evaldata.json: ground truth for F1")
    ap.add_argument("--skip-shared", action="store_true", help="leave out pages that are in the shared set (held-out)")
    ap.add_argument("--only-truth", action="store_true", help="only pages that have a ground-truth entry")
    ap.add_argument("--articlebench", default=None, metavar="DIR",
                    help="a checkout of Zyte's article-extraction-benchmark: its html/ pages, scored against its "
                         "ground-truth.json with its shingle metric (instead of --pages/--truth)")
    ap.add_argument("--extractors", default=",".join(EXTRACTORS),
                    help=f"comma-separated, the first is the reference (default: {','.join(EXTRACTORS)})")
    ap.add_argument("--no-direct", action="store_true", help="leave out the direct call and the stage-overhead row")
    ap.add_argument("--cascade-min-chars", type=int, default=ExtractConfig.cascade_min_chars)
    ap.add_argument("--limit", type=int, default=None, help="only the first N pages")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=16, help="pages per Arrow batch")
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"limit": 8, "repeats": 1})

    if args.articlebench:
        if args.pages or args.truth or args.skip_shared or args.only_truth:
            ap.error("--articlebench DIR brings its own pages and truth: leave out --pages, --truth, "
                     "--skip-shared and --only-truth")
        folder = Path(args.articlebench) / "html"
        pages, bench_truth = load_articlebench(Path(args.articlebench), args.limit)

        def score(names: list[str], outs: list) -> tuple[float, float, float, int]:
            return articlebench_scores(names, outs, bench_truth)
        truth_label = (f"{args.articlebench}/ground-truth.json (articleBody; article-extraction-benchmark's "
                       "4-token shingle P/R, averaged over pages)")
    else:
        truth = load_truth(args.truth)
        folder = Path(args.pages) if args.pages else shared_dir() / "corpora" / "web" / "html"
        pages = load_pages(folder, args.limit, skip_shared=args.skip_shared, truth=truth, only_truth=args.only_truth)
        score = None if truth is None else (lambda names, outs: truth_scores(names, outs, truth))
        truth_label = f"{args.truth} (snippet P/R/F1, micro-averaged)"
    names, raws = [n for n, _ in pages], [r for _, r in pages]
    n = len(raws)

    runs: dict[str, tuple[str, object]] = {}   # row key -> (label, stage or None)
    if not args.no_direct:
        runs["direct"] = ("trafilatura.extract (direct)", None)
        runs["stage_defaults"] = ("stage, trafilatura defaults",
                                  Extract(ExtractConfig(favor_precision=False, include_comments=True)))
    extractors = [e.strip() for e in args.extractors.split(",") if e.strip()]
    for ex in extractors:
        runs[ex] = (f"stage, extractor: {ex}", Extract(ExtractConfig(extractor=ex, cascade_min_chars=args.cascade_min_chars)))

    def run(key: str, chunk: list[bytes]):
        stage = runs[key][1]
        return run_direct(chunk) if stage is None else run_stage(stage, chunk)

    for key in runs:
        run(key, raws[:3])   # warm up: imports, trafilatura's and jusText's caches

    best = dict.fromkeys(runs, 0.0)
    outputs: dict[str, list] = {k: [] for k in runs}
    fallbacks = dict.fromkeys(runs, 0)
    for start in range(0, n, args.chunk):
        chunk = raws[start:start + args.chunk]
        times: dict[str, list[float]] = {k: [] for k in runs}
        for rep in range(args.repeats):
            order = list(runs) if rep % 2 == 0 else list(reversed(runs))
            for key in order:
                t0 = time.process_time()
                texts, fb = run(key, chunk)
                times[key].append(time.process_time() - t0)
                if rep == 0:
                    outputs[key].extend(texts)
                    fallbacks[key] += fb
        for key in runs:
            best[key] += min(times[key])
        print(f"\r{min(start + args.chunk, n)}/{n} pages", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)

    ref_key = extractors[0] if extractors else "direct"
    ref = outputs[ref_key]
    print(f"extract on {n} pages from {folder}{' (not in the shared set)' if args.skip_shared else ''}; "
          f"trafilatura {trafilatura.__version__}; CPU time of this process, best of {args.repeats} per chunk")
    print(f"agreement with the reference row ({runs[ref_key][0]}): exact = identical text, similar = token F1 >= 0.9")
    if score is not None:
        print(f"ground truth: {truth_label}")
    print()
    head = (f"{'row':34s} {'ms/page':>8s} {'vs ref':>7s} {'exact':>7s} {'similar':>8s} {'tokF1':>6s}"
            f"{'  P     R     F1   ' if score is not None else ''} {'kept':>5s} {'fallback':>8s}")
    print(head)
    print("-" * len(head))
    for key, (label, stage) in runs.items():
        outs = outputs[key]
        f1s = [token_f1(a, b) for a, b in zip(outs, ref)]
        exact = sum((a or None) == (b or None) for a, b in zip(outs, ref))
        line = (f"{label:34s} {best[key] / n * 1e3:8.2f} {best[key] / best[ref_key]:6.2f}x {exact / n * 100:6.1f}% "
                f"{sum(x >= 0.9 for x in f1s) / n * 100:7.1f}% {statistics.mean(f1s):6.3f}")
        if score is not None:
            p, r, f, _ = score(names, outs)
            line += f" {p:5.3f} {r:5.3f} {f:5.3f}"
        fb = f"{fallbacks[key] / n * 100:7.1f}%" if key == "cascade" else ""
        print(f"{line} {sum(bool(t) for t in outs):5d} {fb:>8s}")
    if score is not None:
        print(f"\npages with ground truth: {score(names, ref)[3]} of {n}")
    if "direct" in runs:
        diff = [(names[i], round(token_f1(a, b), 3)) for i, (a, b) in enumerate(zip(outputs["stage_defaults"], outputs["direct"]))
                if (a or None) != (b or None)]
        if diff:
            print(f"stage (trafilatura defaults) differs from the direct call on {len(diff)} pages, e.g. {diff[:5]}")
        overhead = best["stage_defaults"] / best["direct"] - 1
        print(f"stage overhead over the direct call: {overhead * 100:+.1f}% per page (target < 15%): "
              f"{'OK' if overhead < 0.15 else 'OVER'}")


if __name__ == "__main__":
    main()
