"""Throughput of the heuristic filters and language ID, per core, beside a baseline.

Text: the Common Crawl documents of ``$DATAPIPE_SHARED/corpora/ccnet/`` (CCNet output
and Dolma-format CC pages) and the Wikipedia articles of WikiText-2 (raw test split),
repeated to ``--docs`` documents and cut into Arrow batches of ``--batch`` rows (the
runner's default batch size).

* **stage** – ``Stage.process(batch)``, exactly what a worker runs;
* **baseline** – the same rules as a plain per-document Python loop
  (``tests/heuristics_reference.py``, the readable statement of each rule); for ``langid`` a loop
  calling fastText once per document.

Each is timed ``--repeats`` times, alternating, in this single process, as CPU time
(``time.process_time``: docs per CPU-second is docs/s per core, and a busy shared
machine disturbs it less than wall time), and the fastest run is kept. The *chain* runs gopher_repetition,
gopher_quality, c4 and fineweb in sequence the way a job does: documents dropped by one
stage are skipped by the next, c4's cleaned text feeds fineweb. Target: the chain at
>= 300 docs/s per core and faster than its per-document loop.

    .venv/bin/python bench/filters.py [--docs 2000] [--batch 256] [--repeats 3]
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
import gzip  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402

from stages.models import fasttext as fasttext_compat  # noqa: E402
from datapipe.schema import make_batch  # noqa: E402
from tests import heuristics_reference as R  # noqa: E402  (the test oracle)
from stages.heuristics.c4 import C4, C4Config, load_bad_words  # noqa: E402
from stages.heuristics.fineweb import FineWeb  # noqa: E402
from stages.heuristics.gopher_quality import GopherQuality  # noqa: E402
from stages.heuristics.gopher_repetition import GopherRepetition  # noqa: E402
from stages.models.langid import LangId, LangIdConfig  # noqa: E402


def shared_dir() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared")).resolve()


def load_texts() -> tuple[list[str], str]:
    c = shared_dir() / "corpora"
    if not (c / "ccnet").is_dir():
        sys.exit(f"shared corpora not found under {c}: set DATAPIPE_SHARED")
    docs = []
    for p in sorted((c / "ccnet").glob("*.jsonl")):
        docs += [json.loads(line)["text"] for line in p.open(encoding="utf-8")]
    with gzip.open(c / "ccnet" / "000.json.gz", "rt", encoding="utf-8") as f:
        docs += [json.loads(line)["text"] for line in f]
    n_cc = len(docs)
    wiki = (c / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    articles = [a.strip("\n") for a in re.split(r"\n(?= = [^=].* = \s*\n)", wiki) if a.strip()]
    docs += articles
    return docs, f"{n_cc} CC docs (ccnet/) + {len(articles)} WikiText-2 articles"


def batches(texts: list[str], size: int):
    return [make_batch(source="bench", ids=[f"d{i + j}" for j in range(len(texts[i:i + size]))],
                       texts=texts[i:i + size]) for i in range(0, len(texts), size)]


def stage_run(stages, tables):
    """Run stages in sequence over every batch (a fused segment); return kept count."""
    kept = 0
    for t in tables:
        for st in stages:
            t, _ = st.process(t)
        kept += sum(r is None for r in t.column("_reject_reason").to_pylist())
    return kept


def loop_run(funcs, texts):
    kept = 0
    for text in texts:
        for f in funcs:
            verdict, text = f(text)
            if verdict is not None:
                break
        else:
            kept += 1
    return kept


def best_of(repeats: int, fns: dict):
    """Time each callable ``repeats`` times, alternating; fastest time and last result."""
    times = {k: [] for k in fns}
    results = {}
    names = list(fns)
    for rep in range(repeats):
        for k in (names if rep % 2 == 0 else names[::-1]):
            t0 = time.process_time()
            results[k] = fns[k]()
            times[k].append(time.process_time() - t0)
    return {k: min(v) for k, v in times.items()}, results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"docs": 100, "repeats": 1})

    base, what = load_texts()
    texts = (base * (args.docs // len(base) + 1))[: args.docs]
    tables = batches(texts, args.batch)
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    sd = shared_dir()
    bad_words = str(sd / "lists" / "ldnoobw.txt")
    bw_re = R.c4_bad_words_regex(load_bad_words(bad_words))
    model_path = str(sd / "models" / "lid.176.ftz")

    gr, gq, c4, fw = GopherRepetition(), GopherQuality(), C4(C4Config(bad_words_path=bad_words)), FineWeb()
    lid = LangId(LangIdConfig(model=model_path))
    for st in (gr, gq, c4, fw, lid):
        st.ensure_setup()
    model = fasttext_compat.load(model_path)

    def ref(fn, cfg, **kw):
        return lambda text: (fn(text, cfg, **kw), text)

    def ref_c4(text):
        verdict, cleaned = R.c4(text, c4.config, bw_re)
        return verdict, cleaned

    def ref_lid(text):
        labels, probs = fasttext_compat.predict(model, [text], k=1)
        return None, text

    rows = [
        ("gopher_repetition", [gr], [ref(R.gopher_repetition, gr.config)]),
        ("gopher_quality", [gq], [ref(R.gopher_quality, gq.config)]),
        ("c4 (+ bad words)", [c4], [ref_c4]),
        ("fineweb", [fw], [ref(R.fineweb, fw.config)]),
        ("langid (fastText)", [lid], [ref_lid]),
        ("chain: repetition>quality>c4>fineweb", [gr, gq, c4, fw],
         [ref(R.gopher_repetition, gr.config), ref(R.gopher_quality, gq.config), ref_c4, ref(R.fineweb, fw.config)]),
    ]
    print(f"{len(texts)} documents ({mb:.1f} MB; {what}, repeated), batches of {args.batch}, "
          f"1 process, CPU time, best of {args.repeats}")
    print()
    head = f"{'stage':38s} {'docs/s':>9s} {'MB/s':>7s} {'baseline docs/s':>16s} {'speed-up':>9s} {'kept':>11s}"
    print(head)
    print("-" * len(head))
    summary = {}
    for name, stages, funcs in rows:
        t, res = best_of(args.repeats, {"stage": lambda s=stages: stage_run(s, tables),
                                        "loop": lambda f=funcs: loop_run(f, texts)})
        dps, bdps = len(texts) / t["stage"], len(texts) / t["loop"]
        agree = "" if res["stage"] == res["loop"] else f" (loop kept {res['loop']})"
        print(f"{name:38s} {dps:9.0f} {mb / t['stage']:7.1f} {bdps:16.0f} {dps / bdps:8.1f}x "
              f"{res['stage']:5d}/{len(texts)}{agree}")
        summary[name] = (dps, bdps)
    dps, bdps = summary["chain: repetition>quality>c4>fineweb"]
    ok = dps >= 300 and dps > bdps
    print(f"\nchain: {dps:.0f} docs/s per core (target >= 300 and faster than the loop's {bdps:.0f}): "
          f"{'OK' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
