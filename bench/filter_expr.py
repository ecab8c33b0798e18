"""Throughput of the `filter_expr` stage beside pandas evaluating the same rule written by
hand, and a plain per-document Python loop, on real text from ../shared (or
$DATAPIPE_SHARED): RedPajama, CCNet and WikiText documents with their fastText language
(the `langid` stage, run once beforehand) and CCNet's own perplexity in `metadata`.

    .venv/bin/python bench/filter_expr.py [--docs 20000] [--batch 256] [--repeat 3]

Two rules: one over columns (`language == "en" and len(text) > 500`) and one that also
reads a metadata field (`... or metadata.ppl < 330`, one `json.loads` per document). The
kept masks of all three paths are checked equal before anything is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyarrow as pa  # noqa: E402

from datapipe import schema as S  # noqa: E402
from stages.heuristics.filter_expr import FilterExpr, FilterExprConfig  # noqa: E402
from stages.models.langid import LangId  # noqa: E402

RULES = ('language == "en" and len(text) > 500',
         '(language == "en" and len(text) > 500) or metadata.ppl < 330')


def _docs(shared: Path, n: int) -> tuple[list[str], list[str | None]]:
    texts, meta = [], []
    for f in sorted((shared / "corpora" / "redpajama").glob("*.jsonl")) + \
            sorted((shared / "corpora" / "stackexchange").glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            texts.append(json.loads(line)["text"])
            meta.append(None)
    for f in sorted((shared / "corpora" / "ccnet").glob("cc_en_head-*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            d = json.loads(line)
            texts.append(d["text"])
            meta.append(json.dumps({"ppl": d["metadata"]["perplexity"]}))
    wiki = (shared / "corpora" / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8").split("\n = ")
    texts.extend(w for w in wiki if w.strip())
    meta.extend(None for w in wiki if w.strip())
    idx = [i % len(texts) for i in range(n)]
    return [texts[i] for i in idx], [meta[i] for i in idx]


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return max(best, 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"docs": 300, "repeat": 1})

    shared = Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared"))
    texts, meta = _docs(shared, args.docs)
    lid = LangId()
    batches = []
    for j in range(0, len(texts), args.batch):
        b = S.make_batch(source="bench", ids=[f"b/{i}" for i in range(j, j + len(texts[j:j + args.batch]))],
                         texts=texts[j:j + args.batch], metadata=meta[j:j + args.batch])
        out, _ = lid.process(b)
        batches.append(out)
    table = pa.concat_tables(batches)
    df = table.select(["text", "language", "metadata"]).to_pandas()
    df["ppl"] = [json.loads(m)["ppl"] if m else None for m in meta]   # pandas gets it parsed for free
    mb = sum(len(t.encode()) for t in texts) / 1e6

    def ours(rule):
        stage = FilterExpr(FilterExprConfig(keep=rule))
        stage.ensure_setup()
        return lambda: [stage.process(b)[0] for b in batches]

    def kept_ours(rule):
        return [r is None for b in ours(rule)() for r in b.column("_reject_reason").to_pylist()]

    def pandas_rule(k):
        base = (df["language"] == "en") & (df["text"].str.len() > 500)
        return base if k == 0 else base | (df["ppl"] < 330).fillna(False)

    def loop_rule(k):
        out = []
        for t, lang, m in zip(texts, table.column("language").to_pylist(), meta):
            ok = lang == "en" and len(t) > 500
            if k == 1 and not ok and m is not None:
                ok = json.loads(m)["ppl"] < 330
            out.append(ok)
        return out

    print(f"{len(texts)} documents, {mb:.1f} MB, batches of {args.batch} (CPU seconds, best of {args.repeat})")
    print(f"{'rule':<62} {'path':<28} {'docs/s':>10} {'vs loop':>8}")
    for k, rule in enumerate(RULES):
        assert kept_ours(rule) == pandas_rule(k).tolist() == loop_rule(k), rule
        t_ours = _best(ours(rule), args.repeat)
        t_pd = _best(lambda: pandas_rule(k), args.repeat)
        t_loop = _best(lambda: loop_rule(k), args.repeat)
        for name, t in (("filter_expr stage", t_ours), ("pandas, by hand (baseline)", t_pd),
                        ("python loop (baseline)", t_loop)):
            print(f"{rule:<62} {name:<28} {len(texts) / t:>10.0f} {t_loop / t:>7.2f}x")


if __name__ == "__main__":
    main()
