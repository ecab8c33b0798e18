"""Throughput of the ``quality`` and ``perplexity`` stages beside the plain loop a user
would write around fastText / KenLM, on the same documents, in the same run.

    .venv/bin/python bench/model_filters.py [--docs 3000] [--batch-rows 256]
        [--quality-model M.bin] [--lm-model M.arpa]
    .venv/bin/python bench/model_filters.py --quality-dir DIR --lm-dir DIR   # per language

Per language (issue 27; ``--quality-dir``/``--lm-dir`` from ``quality train`` / ``lm
train --by-language``): the real web pages of ``corpora/web/html`` (German, English and
a few others), language from the packaged lid.176, scored by the stages with
``models_dir`` beside a loop that picks each document's model by its language (and
skips languages without one).

Without model paths it first trains small ones from the shared corpora
($DATAPIPE_SHARED, default ../shared) into a temporary folder.

Baselines ("loop"): for each document, normalise it with the model's TextNorm and call
the model's own Python binding (``model.f.predict(line, -1, 0, "replace")`` for
fastText, ``model.score(line)`` per line for KenLM). "model only" is the same loop on
pre-normalised text: the share of normalisation. The stage column is
``stage.process(batch)`` over batches of ``--batch-rows`` rows (Arrow in, Arrow out,
drops marked, stats counted). Throughput is documents per CPU-second of this process
(docs/s per core: both sides are single-threaded); each figure is the best of
``--repeats`` interleaved runs, so a noisy shared machine penalises both sides alike.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from stages.models import fasttext as fasttext_compat  # noqa: E402
from datapipe import schema as S  # noqa: E402
from stages.models import training_text as corpus  # noqa: E402
from stages.models.model_card import read_card  # noqa: E402
from stages.models.perplexity.score import load_kenlm  # noqa: E402
from stages.models.textnorm import TextNorm  # noqa: E402


def shared_dir() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared")).resolve()


def documents(n: int) -> list[str]:
    """A mix of real documents: web (CCNet, RedPajama), StackExchange, wiki sections,
    book passages of ~3 KB, cycled to ``n``."""
    c = shared_dir() / "corpora"
    web = [d.text for d in corpus.iter_docs([str(c / "ccnet" / "*.jsonl"), str(c / "redpajama" / "*.jsonl"),
                                             str(c / "stackexchange" / "redpajama-stackexchange.jsonl")])]
    wiki = (c / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8").replace("\r\n", "\n").split(" = = ")
    book = next(corpus.iter_docs([str(c / "books" / "gutenberg" / "2701-0.txt.gz")])).text
    books = [book[i:i + 3000] for i in range(0, min(len(book), 600_000), 3000)]
    pool = [t for t in web + wiki + books if t.strip()]
    rng = np.random.default_rng(0)
    rng.shuffle(pool)
    return [pool[i % len(pool)] for i in range(n)]


def train_models(tmp: str) -> tuple[str, str]:
    from stages.models.perplexity.train import train_lm
    from stages.models.quality.train import QualityTrainConfig, train_quality

    c = shared_dir() / "corpora"
    q = os.path.join(tmp, "quality.bin")
    train_quality(QualityTrainConfig(
        positive=(str(c / "wiki" / "wikitext-2-raw.test.txt"), str(c / "books" / "gutenberg" / "1*.txt.gz")),
        negative=(str(c / "ccnet" / "*.jsonl"), str(c / "ccnet" / "000.json.gz"),
                  str(c / "redpajama" / "redpajama-cc-2023-06-refined.jsonl")),
        out=q))
    lm = os.path.join(tmp, "wiki.arpa")
    train_lm([str(c / "wiki" / "wikitext-2-raw.test.txt")], lm, order=5)
    return q, lm


def cpu_seconds(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--batch-rows", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quality-model")
    ap.add_argument("--lm-model")
    ap.add_argument("--quality-dir", help="per-language classifiers (quality train --by-language)")
    ap.add_argument("--lm-dir", help="per-language LMs (lm train --by-language)")
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"docs": 100, "repeats": 1}, argv)
    if args.quality_dir or args.lm_dir:
        if not (args.quality_dir and args.lm_dir):
            ap.error("give both --quality-dir and --lm-dir")
        return by_language(args)

    from stages.models.perplexity import PerplexityConfig, PerplexityFilter
    from stages.models.quality import QualityConfig, QualityFilter

    with tempfile.TemporaryDirectory() as tmp:
        qpath, lmpath = args.quality_model, args.lm_model
        if not (qpath and lmpath):
            print("training models from the shared corpora ...", file=sys.stderr)
            tq, tl = train_models(tmp)
            qpath, lmpath = qpath or tq, lmpath or tl
        texts = documents(args.docs)
        nbytes = sum(len(t.encode()) for t in texts)
        table = S.make_batch(source="bench", ids=[f"bench/{i:08d}" for i in range(len(texts))], texts=texts)
        batches = [table.slice(i, args.batch_rows) for i in range(0, table.num_rows, args.batch_rows)]

        qstage = QualityFilter(QualityConfig(model=qpath, threshold=0.5))
        pstage = PerplexityFilter(PerplexityConfig(model=lmpath, max_perplexity=1000.0))
        qstage.ensure_setup()
        pstage.ensure_setup()
        ft = fasttext_compat.load(qpath)
        qnorm = TextNorm.from_dict(read_card(qpath)["textnorm"])
        lm = load_kenlm(lmpath)
        lnorm = TextNorm.from_dict((read_card(lmpath) or {}).get("textnorm"))
        pre_one = [qnorm.one_line(t) for t in texts]
        pre_lines = [lnorm.lines(t) for t in texts]

        def ft_loop():
            out = np.empty(len(texts), dtype=np.float32)
            for i, t in enumerate(texts):
                pairs = ft.f.predict(qnorm.one_line(t), -1, 0.0, "replace")
                out[i] = next((p for p, lab in pairs if lab == "__label__hq"), 0.0)

        def ft_model_only():
            for line in pre_one:
                ft.f.predict(line, -1, 0.0, "replace")

        def lm_loop():
            out = np.empty(len(texts))
            for i, t in enumerate(texts):
                total, tokens = 0.0, 0
                for line in lnorm.lines(t):
                    total += lm.score(line)
                    tokens += line.count(" ") + 2
                out[i] = 10.0 ** (-total / tokens) if tokens else np.nan

        def lm_model_only():
            for lines in pre_lines:
                for line in lines:
                    lm.score(line)

        def run_stage(stage):
            return lambda: [stage.process(b) for b in batches]

        cases = {
            "quality: stage": run_stage(qstage), "quality: loop": ft_loop, "quality: model only": ft_model_only,
            "perplexity: stage": run_stage(pstage), "perplexity: loop": lm_loop,
            "perplexity: model only": lm_model_only,
        }
        best = {k: float("inf") for k in cases}
        for _ in range(args.repeats):
            for name, fn in cases.items():
                best[name] = min(best[name], cpu_seconds(fn))

    n = len(texts)
    print(f"\n{n} documents, {nbytes / 1e6:.1f} MB, batches of {args.batch_rows} rows; "
          f"docs/s per core (best of {args.repeats})\n")
    print("| stage      | stage.process | plain loop (baseline) | stage / loop | model only |")
    print("|------------|--------------:|----------------------:|-------------:|-----------:|")
    for stage in ("quality", "perplexity"):
        s, loop, only = (n / best[f"{stage}: {k}"] for k in ("stage", "loop", "model only"))
        print(f"| {stage:<10} | {s:13,.0f} | {loop:21,.0f} | {s / loop:11.2f}x | {only:10,.0f} |")
    return 0


def by_language(args: argparse.Namespace) -> int:
    """The stages with ``models_dir`` vs a per-language loop, on real pages."""
    import pyarrow as pa

    from stages.models.by_language import identifier, models_in_dir
    from stages.models.perplexity import PerplexityConfig, PerplexityFilter
    from stages.models.quality import QualityConfig, QualityFilter

    c = shared_dir() / "corpora"
    texts = [d.text for d in corpus.iter_docs([str(c / "web" / "html" / "*.html.gz")]) if d.text.strip()]
    identify = identifier(None)
    langs = [identify(t) for t in texts]
    nbytes = sum(len(t.encode()) for t in texts)
    table = S.make_batch(source="bench", ids=[f"bench/{i:08d}" for i in range(len(texts))], texts=texts)
    table = table.append_column("language", pa.array(langs, pa.string()))
    batches = [table.slice(i, args.batch_rows) for i in range(0, table.num_rows, args.batch_rows)]
    qstage = QualityFilter(QualityConfig(models_dir=args.quality_dir, mode="score"))
    pstage = PerplexityFilter(PerplexityConfig(models_dir=args.lm_dir))
    qstage.ensure_setup()
    pstage.ensure_setup()
    qm = {lg: (fasttext_compat.load(p), TextNorm.from_dict(read_card(p)["textnorm"]))
          for lg, p in models_in_dir(args.quality_dir, "fasttext-quality", where="bench").items()}
    lms = {lg: (load_kenlm(p), TextNorm.from_dict((read_card(p) or {}).get("textnorm")))
           for lg, p in models_in_dir(args.lm_dir, "kenlm-ngram", where="bench").items()}

    def ft_loop():
        for t, lg in zip(texts, langs):
            if lg in qm:
                model, norm = qm[lg]
                model.f.predict(norm.one_line(t), -1, 0.0, "replace")

    def lm_loop():
        for t, lg in zip(texts, langs):
            if lg in lms:
                lm, norm = lms[lg]
                sum(lm.score(line) for line in norm.lines(t))

    cases = {"quality: stage": lambda: [qstage.process(b) for b in batches], "quality: loop": ft_loop,
             "perplexity: stage": lambda: [pstage.process(b) for b in batches], "perplexity: loop": lm_loop}
    best = {k: float("inf") for k in cases}
    for _ in range(args.repeats):
        for name, fn in cases.items():
            best[name] = min(best[name], cpu_seconds(fn))
    n = len(texts)
    counts = {lg: langs.count(lg) for lg in sorted(set(langs), key=lambda x: (-langs.count(x), str(x)))}
    print(f"\n{n} web pages, {nbytes / 1e6:.1f} MB of text, languages {counts}; models for "
          f"{sorted(qm)} (quality) and {sorted(lms)} (LM); docs/s per core (best of {args.repeats})\n")
    print("| stage (per language) | stage.process | per-language loop (baseline) | stage / loop |")
    print("|----------------------|--------------:|-----------------------------:|-------------:|")
    for stage in ("quality", "perplexity"):
        st, loop = (n / best[f"{stage}: {k}"] for k in ("stage", "loop"))
        print(f"| {stage:<20} | {st:13,.0f} | {loop:28,.0f} | {st / loop:11.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
