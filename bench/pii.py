"""Throughput of the ``pii`` stage on real text, beside a naive baseline, in one run.

* **stage** – ``PiiStage.process(batch)``: the full stage as the runner calls it
  (RE2 gates over the Arrow batch, Python detectors only on documents and families
  whose gate fired, replacement, ``pii_counts``, stats).
* **naive** – the same detectors and replacement, run one after another on every
  document with no pre-check (``Detector.find(text, gated=False)``), outputs gathered
  into a list: what a straightforward implementation does.

Both run in this process; time is CPU time of the process (``time.process_time``), so
docs/s is per core and other load on a shared machine barely moves it. Each figure is
the best of ``--repeat`` runs. The script also checks that both paths produce
identical text.

``--baseline REF`` (default ``main``) also times the ``pii`` stage as it is at git
revision ``REF`` (its ``stages/pii`` loaded from ``git show`` into a temporary package),
on the same batches, alternating with ours: the old-vs-new throughput ratio of a
detector change, measured in one process on one machine (issue 27: no more than 25%
slower). ``--baseline ''`` skips it.

    python bench/pii.py [--repeat 5] [--copies 1] [--baseline main]
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
# Python puts bench/ first on sys.path for a script run from it, and other scripts there
# may shadow standard modules (a file named like a stdlib module, e.g. tokenize.py, breaks `import dataclasses`): drop it,
# and load sibling modules by path instead.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))  # the repository: datapipe/, stages/

import argparse  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(_HERE).parent

import pyarrow as pa  # noqa: E402

from datapipe import schema as S  # noqa: E402
from stages.pii import PII_TYPES, PiiStage  # noqa: E402


def shared_dir() -> Path:
    d = Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared")).resolve()
    if not (d / "corpora").is_dir():
        raise SystemExit(f"shared data not found at {d}: set DATAPIPE_SHARED to the shared/ folder")
    return d


def load_sources(shared: Path) -> dict[str, list[str]]:
    """Real documents per source: CCNet (jsonl + Dolma json.gz), WikiText-2 articles,
    RedPajama StackExchange."""
    corp = shared / "corpora"
    ccnet = []
    for f in sorted((corp / "ccnet").glob("cc_en_head-*.jsonl")):
        ccnet += [json.loads(line)["text"] for line in f.read_text(encoding="utf-8").splitlines()]
    with gzip.open(corp / "ccnet" / "000.json.gz", "rt", encoding="utf-8") as fh:
        ccnet += [json.loads(line)["text"] for line in fh if line.strip()]
    raw = (corp / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    wiki = [a.strip() for a in re.split(r"\n (?== [^=].* = \n)", raw) if len(a.strip()) > 200]
    se = [json.loads(line)["text"] for line in
          (corp / "stackexchange" / "redpajama-stackexchange.jsonl").read_text(encoding="utf-8").splitlines()]
    return {"ccnet": ccnet, "wiki": wiki, "stackexchange": se}


def baseline_stage(ref: str, tmp: str):
    """A ``PiiStage`` built from ``stages/pii`` at git revision ``ref``, imported as the
    package ``pii_baseline`` (its ``stages.pii`` imports rewritten)."""
    names = subprocess.run(["git", "-C", str(REPO), "ls-tree", "--name-only", f"{ref}:stages/pii"],
                           check=True, capture_output=True, text=True).stdout.split()
    pkg = Path(tmp) / "pii_baseline"
    pkg.mkdir()
    for name in names:
        if not name.endswith(".py"):
            continue
        src = subprocess.run(["git", "-C", str(REPO), "show", f"{ref}:stages/pii/{name}"],
                             check=True, capture_output=True, text=True).stdout
        (pkg / name).write_text(src.replace("stages.pii", "pii_baseline"), encoding="utf-8")
    sys.path.insert(0, tmp)
    import pii_baseline  # noqa: PLC0415
    stage = pii_baseline.PiiStage()
    stage.ensure_setup()
    return stage


def best_of(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--copies", type=int, default=3, help="repeat each corpus this many times per batch")
    ap.add_argument("--baseline", default="main", help="git revision whose pii stage to time beside ours ('' to skip)")
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"repeat": 1, "copies": 1, "baseline": ""}, argv)
    if args.baseline:
        with tempfile.TemporaryDirectory() as tmp:
            return _compare(args, baseline_stage(args.baseline, tmp))
    return _throughput(args)


def _compare(args: argparse.Namespace, base) -> int:
    """Our stage and the baseline's, alternately on the same batches (CPU time, best of
    ``--repeat``), and the ratio."""
    stage = PiiStage()
    stage.ensure_setup()
    sources = load_sources(shared_dir())
    print(f"pii stage vs the stage at {args.baseline!r} (CPU time per core, best of {args.repeat}, alternating)")
    print(f"{'source':<14} {'MB':>6} {'base MB/s':>10} {'ours MB/s':>10} {'ours/base':>10}")
    tb = to = 0.0
    total = 0
    for name, texts in sources.items():
        texts = texts * args.copies
        batch = S.make_batch(source=name, ids=[f"{name}/{i}" for i in range(len(texts))], texts=texts)
        nbytes = S.text_bytes(batch)
        best_b = best_o = float("inf")
        for _ in range(args.repeat):
            t0 = time.process_time()
            base.process(batch)
            t1 = time.process_time()
            stage.process(batch)
            t2 = time.process_time()
            best_b, best_o = min(best_b, t1 - t0), min(best_o, t2 - t1)
        tb, to, total = tb + best_b, to + best_o, total + nbytes
        print(f"{name:<14} {nbytes / 1e6:>6.2f} {nbytes / 1e6 / best_b:>10.1f} {nbytes / 1e6 / best_o:>10.1f} "
              f"{best_b / best_o:>10.2f}")
    print(f"{'all':<14} {total / 1e6:>6.2f} {total / 1e6 / tb:>10.1f} {total / 1e6 / to:>10.1f} {tb / to:>10.2f}")
    print("target (issue 27): ours/base >= 0.75 on 'all'")
    return 0


def _throughput(args: argparse.Namespace) -> int:

    stage = PiiStage()
    stage.ensure_setup()
    det, rep = stage.detector, stage.replacer
    sources = load_sources(shared_dir())
    types = [t for t in PII_TYPES if t in det.types]
    print(f"pii stage throughput per core (CPU time, best of {args.repeat}); types: {', '.join(types)}")
    print(f"{'source':<14} {'docs':>5} {'MB':>6} {'gated':>6} {'found':>6} "
          f"{'naive docs/s':>13} {'stage docs/s':>13} {'naive MB/s':>11} {'stage MB/s':>11} {'speedup':>8}")
    totals = {"docs": 0, "bytes": 0, "naive": 0.0, "stage": 0.0}
    for name, texts in sources.items():
        texts = texts * args.copies
        ids = [f"{name}/{i}" for i in range(len(texts))]
        batch = S.make_batch(source=name, ids=ids, texts=texts)
        nbytes = S.text_bytes(batch)

        def naive() -> list[str]:
            return [rep.apply(t, det.find(t, gated=False), i) for t, i in zip(texts, ids)]

        def staged() -> pa.Table:
            return stage.process(batch)[0]

        t_naive, out_naive = best_of(naive, args.repeat)
        t_stage, out_stage = best_of(staged, args.repeat)
        same = out_stage.column(S.TEXT).to_pylist() == out_naive
        if not same:
            print(f"  !! {name}: stage and naive outputs differ", file=sys.stderr)
            return 1
        fired = sum(1 for t in texts if det.families_for(t))
        found = sum(1 for c in out_stage.column("pii_counts").to_pylist() if any(v for v in c.values() if v))
        n = len(texts)
        print(f"{name:<14} {n:>5} {nbytes / 1e6:>6.2f} {fired / n:>6.0%} {found:>6} {n / t_naive:>13.0f} {n / t_stage:>13.0f} "
              f"{nbytes / 1e6 / t_naive:>11.2f} {nbytes / 1e6 / t_stage:>11.2f} {t_naive / t_stage:>7.1f}x")
        totals["docs"] += n
        totals["bytes"] += nbytes
        totals["naive"] += t_naive
        totals["stage"] += t_stage
    n, b = totals["docs"], totals["bytes"]
    print(f"{'all':<14} {n:>5} {b / 1e6:>6.2f} {'':>6} {'':>6} {n / totals['naive']:>13.0f} {n / totals['stage']:>13.0f} "
          f"{b / 1e6 / totals['naive']:>11.2f} {b / 1e6 / totals['stage']:>11.2f} {totals['naive'] / totals['stage']:>7.1f}x")
    print("gated: share of documents on which at least one family's pre-check fired; "
          "found: documents with at least one replacement. Outputs of both paths identical.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
