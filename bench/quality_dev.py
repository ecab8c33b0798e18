"""Does the quality score rank documents the way a careful curator would?

AUC (probability that a random *keep* document scores above a random *drop* one) on
the labelled development set (``bench/data/quality_dev/``: 296 documents, rubric in
``RUBRIC.md``), for:

* length alone (characters) and mean words per line: the baselines a classifier
  must beat to earn its place (issue 14);
* the old recipe: wiki + Gutenberg positives against CCNet/RedPajama web text, as
  ``docs/quality.md`` documented it before issue 14, trained here on the shared corpora
  with the development files excluded;
* the sample model the Makefile trains (``models/sample/quality.bin``), if present;
* the new recipe: the main text of real crawled pages (HTML + WARC) against the
  boilerplate the extractor removed from the same pages, fastText parameters chosen by
  validation AUC (``--search``), development files excluded.

Both recipes are trained in a temporary folder, deterministically (seeded, one
thread), so every run prints the same AUCs. Training the new recipe runs 17 fastText
trainings on ~2 MB of text: about a minute on one core.

    python bench/quality_dev.py [--out-dir DIR]
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import importlib.util  # noqa: E402
import logging  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from stages.models import fasttext as fasttext_compat  # noqa: E402
from stages.models.quality.train import QualityTrainConfig, positive_scores, roc_auc, train_quality  # noqa: E402
from stages.models.textnorm import TextNorm  # noqa: E402


def _devset():
    spec = importlib.util.spec_from_file_location("quality_devset", os.path.join(_HERE, "quality_devset.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


DEV = _devset()
REPO = Path(_HERE).parent


def shared_corpora() -> Path:
    d = Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared")).resolve() / "corpora"
    if not d.is_dir():
        raise SystemExit(f"shared corpora not found at {d}: set DATAPIPE_SHARED to the shared/ folder")
    return d


def old_recipe(c: Path, out: str, exclude: tuple[str, ...]) -> QualityTrainConfig:
    """``docs/quality.md`` before issue 14 (the development files excluded)."""
    return QualityTrainConfig(
        positive=(str(c / "wiki" / "wikitext-2-raw.test.txt"), str(c / "books" / "gutenberg" / "*.txt.gz")),
        negative=(str(c / "ccnet" / "*.jsonl*"), str(c / "ccnet" / "000.json.gz"),
                  str(c / "redpajama" / "redpajama-c*.jsonl")),
        out=out, exclude=exclude)


def new_recipe(c: Path, out: str, exclude: tuple[str, ...]) -> QualityTrainConfig:
    """The recipe ``docs/quality.md`` documents now."""
    html, warc = str(c / "web" / "html" / "*.html.gz"), str(c / "web" / "warc" / "*.warc.gz")
    return QualityTrainConfig(positive=(f"html:{html}", f"warc:{warc}"),
                              negative=(f"boilerplate:{html}", f"boilerplate:{warc}"),
                              out=out, exclude=exclude, search=True)


def mean_words_per_line(text: str) -> float:
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    return float(np.mean([len(ws) for ws in lines])) if lines else 0.0


def model_scores(path: str, texts: list[str]) -> np.ndarray:
    norm = TextNorm()  # every model here was trained with the default normalisation
    return positive_scores(fasttext_compat.load(path), [norm.one_line(t) for t in texts])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", help="keep the trained models here (default: a temporary folder)")
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {}, argv)
    logging.basicConfig(level=logging.WARNING)
    c = shared_corpora()
    labels = DEV.load_labels()
    texts, drifted = DEV.resolve(labels, c)
    y = np.array([r["label"] == 1 for r in labels])
    exclude = tuple(str(c / ln.strip()) for ln in (DEV.LABELS.parent / "files.txt").read_text().splitlines() if ln.strip())
    rows = [("length (characters)", roc_auc(y, np.array([len(t) for t in texts], float)), ""),
            ("mean words per line", roc_auc(y, np.array([mean_words_per_line(t) for t in texts])), "")]
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = args.out_dir or tmp
        recipes = [("old recipe (wiki+books vs CCNet/RedPajama)", old_recipe),
                   ("new recipe (page text vs its boilerplate)", new_recipe)]
        if args.smoke:   # one training of the new recipe, no parameter search: checks the path runs
            recipes = [("new recipe (smoke: no --search)",
                        lambda c, p, e: dataclasses.replace(new_recipe(c, p, e), search=False))]
        for name, recipe in recipes:
            path = os.path.join(out_dir, name.split()[0] + "-quality.bin")
            card = train_quality(recipe(c, path, exclude))
            note = f"held-out AUC {card['heldout']['auc']:.3f}"
            if card.get("search"):
                note += f", chosen {card['search']['chosen']}"
            rows.append((name, roc_auc(y, model_scores(path, texts)), note))
        sample = REPO / "models" / "sample" / "quality.bin"
        if sample.exists():
            card = json.loads(sample.with_suffix(".card.json").read_text())
            recipe = "new" if any(n["input"].startswith("boilerplate:") for n in card["data"]["negative"]) else "old"
            rows.append((f"sample model (make models, {recipe} recipe)",
                         roc_auc(y, model_scores(str(sample), texts)), str(sample.resolve())))
    print(f"quality development set: {len(y)} documents, {int(y.sum())} keep / {int((~y).sum())} drop "
          f"(labels: {DEV.LABELS.relative_to(REPO)}); {len(drifted)} extracted differently than when labelled "
          f"(charset guess, extract-stage settings) {drifted}")
    print(f"{'score':<48} {'AUC':>6}  notes")
    for name, auc, note in rows:
        print(f"{name:<48} {auc:>6.3f}  {note}")
    new, length = next(r[1] for r in rows if r[0].startswith("new recipe")), rows[0][1]
    print("\nnew recipe vs length alone:", "above" if new > length else "NOT above", f"({new:.3f} vs {length:.3f})")
    return 0 if new > length or args.smoke else 1


if __name__ == "__main__":
    sys.exit(main())
