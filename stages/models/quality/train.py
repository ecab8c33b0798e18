"""``datapipe quality train`` / ``datapipe quality calibrate``: the fastText quality
classifier behind the ``quality`` stage.

Recipe: text we want more of is the positive class ``__label__hq``, text to push down
the negative ``__label__lq``; a linear fastText model on word n-grams learns the
difference, and ``P(hq)`` becomes the document's ``quality_score``. GPT-3 used
curated text (Wikipedia, books) against random web text; on a multilingual web crawl
that learns "English prose vs web page", so the documented default (issue 14,
``docs/quality.md``) is the main text of real crawled pages against the boilerplate the
extractor removed from the same pages (``boilerplate:`` inputs,
:mod:`stages.models.quality.inputs`), with the fastText parameters chosen on a validation
split (``--search``) and labelled evaluation files kept out (``--exclude``).

How examples are made (deterministic: same inputs + seed, same model and card)

* every input document is normalised with :class:`~stages.models.textnorm.TextNorm`
  (:meth:`~stages.models.textnorm.TextNorm.one_line`, exactly what the stage does) and cut
  into chunks of ``chunk_words`` words (shorter than ``min_words``: dropped), so a
  whole book is many examples and a tweet-sized page one;
* each input spec (``--positive wiki/*.parquet books/*.txt`` is two) is a source;
  a source contributes at most ``max_examples // sources-in-its-class`` chunks, the
  ones with the smallest seeded hash (a uniform sample independent of reading order);
* the larger class is cut to ``balance`` x the smaller one;
* a seeded hash puts ``heldout`` of the chunks aside. The split is per chunk, not per
  document: with a handful of long web documents a per-document split would make the
  held-out metrics a coin toss. Chunks of one document share topic, not text, and the
  metric of interest is separating styles, so this leaks little; the card says so.

The card (``<model>.card.json``) records inputs (files, bytes, documents, chunks per
source), fastText parameters, held-out AUC / precision / recall / F1 / accuracy at 0.5
and a precision-recall table, held-out score quantiles, and optionally a *calibration*:
score quantiles over an unlabelled sample of the corpus to be filtered, from which the
stage derives the threshold that keeps a given top fraction (the same threshold on
every batch and every worker).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import heapq
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np
import xxhash

from stages.models import fasttext as fasttext_compat
from datapipe import fs
from datapipe.errors import SpecError
from datapipe.readers import ReadStats
from stages.models.textnorm import TextNorm
from stages.models.model_card import add_textnorm_args, read_card, textnorm_from_args, write_card
from stages.models.quality import inputs

log = logging.getLogger(__name__)

POSITIVE, NEGATIVE = "hq", "lq"
#: number of quantiles stored for calibration (0.0, 0.001, ..., 1.0)
QUANTILE_POINTS = 1001


@dataclass(kw_only=True, frozen=True)
class FastTextParams:
    """fastText ``train_supervised`` parameters (names as fastText spells them).
    ``bucket`` is small on purpose: 200k x dim 32 keeps the model ~30 MB instead of
    fastText's default 2M-bucket ~800 MB; one thread keeps training deterministic."""

    lr: float = 0.5
    epoch: int = 20
    dim: int = 32
    wordNgrams: int = 2
    minCount: int = 2
    bucket: int = 200_000
    loss: str = "softmax"
    thread: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.lr <= 0 or self.epoch < 1 or self.dim < 1 or self.wordNgrams < 1:
            raise SpecError(f"fastText params must be positive: {self}")
        if self.loss not in ("softmax", "ns", "hs", "ova"):
            raise SpecError(f"fastText loss {self.loss!r}: use softmax, ns, hs or ova")


@dataclass(kw_only=True, frozen=True)
class QualityTrainConfig:
    """What ``datapipe quality train`` does; every field is a CLI flag."""

    positive: tuple[str, ...]
    negative: tuple[str, ...]
    out: str
    chunk_words: int = 128
    min_words: int = 16
    max_examples: int = 40_000
    balance: float = 1.0
    heldout: float = 0.2
    seed: int = 0
    text_key: str = "text"
    calibrate: tuple[str, ...] = ()
    calibrate_docs: int = 20_000
    exclude: tuple[str, ...] = ()
    search: bool = False
    textnorm: TextNorm = field(default_factory=TextNorm)
    fasttext: FastTextParams = field(default_factory=FastTextParams)

    def __post_init__(self) -> None:
        if not self.positive or not self.negative:
            raise SpecError("quality train: give at least one --positive and one --negative input")
        if self.chunk_words < 1 or not 1 <= self.min_words <= self.chunk_words:
            raise SpecError(f"quality train: need 1 <= --min-words <= --chunk-words, got "
                            f"{self.min_words} and {self.chunk_words}")
        if not 0.0 < self.heldout < 0.9:
            raise SpecError(f"quality train: --heldout must be in (0, 0.9), got {self.heldout}")
        if self.max_examples < 10:
            raise SpecError(f"quality train: --max-examples must be >= 10, got {self.max_examples}")
        if self.balance < 1.0:
            raise SpecError(f"quality train: --balance is the largest class ratio allowed, >= 1, got {self.balance}")


def _hash(seed: int, text: str) -> int:
    return xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"), seed=seed)


def _chunks(words: list[str], size: int, min_words: int) -> Iterable[str]:
    for s in range(0, len(words), size):
        piece = words[s : s + size]
        if len(piece) >= min_words:
            yield " ".join(piece)


def _collect(spec: str, cfg: QualityTrainConfig, cap: int) -> tuple[list[tuple[int, str]], dict[str, Any]]:
    """The ``cap`` chunks of one source with the smallest seeded hash, plus its summary."""
    heap: list[tuple[int, str]] = []  # max-heap by hash via negation
    docs = chunks = nbytes = 0
    seen: set[int] = set()
    read = ReadStats()
    for doc in inputs.iter_docs(spec, text_key=cfg.text_key, exclude=cfg.exclude, stats=read):
        docs += 1
        nbytes += len(doc.text.encode("utf-8", "surrogatepass"))
        for chunk in _chunks(cfg.textnorm.one_line(doc.text).split(" "), cfg.chunk_words, cfg.min_words):
            h = _hash(cfg.seed, chunk)
            if h in seen:  # exact duplicate chunk (licence boilerplate): once is enough
                continue
            seen.add(h)
            chunks += 1
            if len(heap) < cap:
                heapq.heappush(heap, (-h, chunk))
            elif -heap[0][0] > h:
                heapq.heapreplace(heap, (-h, chunk))
    picked = sorted(((-nh, c) for nh, c in heap))  # smallest hashes first: any prefix is a uniform sample
    summary = {"input": spec, "files": inputs.file_summary(spec, cfg.exclude), "documents": docs,
               "text_bytes": nbytes, "rejects": read.to_dict()["rejects"], "chunks": chunks,
               "chunks_used": len(picked)}
    return picked, summary


def allot(sizes: Sequence[int], total: int) -> list[int]:
    """Split ``total`` examples across sources as evenly as their sizes allow (equal
    shares; what a small source cannot fill goes to the others)."""
    shares = [0] * len(sizes)
    left = min(total, sum(sizes))
    open_ = [i for i, n in enumerate(sizes) if n > 0]
    while left > 0 and open_:
        each = max(1, left // len(open_))
        for i in list(open_):
            take = min(each, sizes[i] - shares[i], left)
            shares[i] += take
            left -= take
            if shares[i] >= sizes[i]:
                open_.remove(i)
            if left == 0:
                break
    return shares


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney U with average ranks for ties)."""
    labels = np.asarray(labels, dtype=bool)
    scores = np.asarray(scores, dtype=np.float64)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    uniq, inv, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    avg_rank = ends - (counts - 1) / 2.0  # 1-based average rank of each distinct score
    ranks = avg_rank[inv]
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _pr(labels: np.ndarray, scores: np.ndarray, t: float) -> dict[str, float]:
    pred = scores >= t
    tp = int((pred & labels).sum())
    fp = int((pred & ~labels).sum())
    fn = int((~pred & labels).sum())
    prec = tp / (tp + fp) if tp + fp else 1.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    acc = float((pred == labels).mean())
    return {"threshold": t, "precision": round(prec, 4), "recall": round(rec, 4), "f1": round(f1, 4),
            "accuracy": round(acc, 4)}


def positive_scores(model, texts: Sequence[str], label: str = POSITIVE) -> np.ndarray:
    """``P(label)`` per already-normalised one-line text (float32; 0 for a text with no
    words, which fastText cannot score). The one scoring function of training, held-out
    evaluation, calibration and the ``quality`` stage."""
    if not texts:
        return np.zeros(0, dtype=np.float32)
    labels, probs = fasttext_compat.predict(model, texts, k=-1)
    out = np.zeros(len(texts), dtype=np.float32)
    for i, (labs, ps) in enumerate(zip(labels, probs)):
        for lab, p in zip(labs, ps):
            if lab == label:
                out[i] = p
                break
    return out


def quantiles(scores: np.ndarray) -> list[float]:
    """:data:`QUANTILE_POINTS` evenly spaced quantiles (0 to 1) of ``scores``."""
    q = np.quantile(np.asarray(scores, dtype=np.float64), np.linspace(0.0, 1.0, QUANTILE_POINTS))
    return [round(float(x), 6) for x in q]


def calibration(model, norm: TextNorm, specs: Sequence[str], *, text_key: str = "text",
                max_docs: int = 20_000) -> dict[str, Any]:
    """Score quantiles over (the first ``max_docs`` documents of) an unlabelled sample of
    the corpus the stage will filter: the basis of a deterministic top-fraction threshold."""
    texts = []
    for spec in specs:
        for doc in inputs.iter_docs(spec, text_key=text_key):
            if len(texts) >= max_docs:
                break
            texts.append(norm.one_line(doc.text))
    if not texts:
        raise SpecError(f"quality calibrate: no documents in {list(specs)}")
    scores = positive_scores(model, texts)
    return {"inputs": [f for spec in specs for f in inputs.file_summary(spec)], "documents": len(texts),
            "mean_score": round(float(scores.mean()), 6), "quantiles": quantiles(scores)}


_TRAIN_CHILD = """
import json, sys
import fasttext
a = json.loads(sys.argv[1])
out = a.pop("_out")
try:
    m = fasttext.train_supervised(verbose=0, **a)
except RuntimeError as e:
    if "NaN" in str(e):
        sys.exit(3)
    raise
m.save_model(out)
"""


def _train_fasttext(train_file: str, out: str, params: dict[str, Any], retries: int = 3) -> float:
    """Run ``fasttext.train_supervised`` in a fresh interpreter and return the learning
    rate that worked.

    Why a child process: fastText 0.9.3's trainer intermittently raises "Encountered
    NaN" depending on the calling process's heap state (the same file and parameters
    train fine in a fresh interpreter, every time: it reads memory it did not
    initialise). A fresh interpreter makes training reproducible and keeps a C++ abort
    from taking the caller down. A genuine divergence (NaN in the fresh process too) is
    retried with half the learning rate, up to ``retries`` times; the card records the
    rate used."""
    lr = float(params["lr"])
    for attempt in range(retries + 1):
        args = dict(params, lr=lr, input=train_file, _out=out)
        proc = subprocess.run([sys.executable, "-c", _TRAIN_CHILD, json.dumps(args)],
                              capture_output=True, text=True)
        if proc.returncode == 0:
            return lr
        if proc.returncode != 3:
            raise RuntimeError(f"fastText training failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
        log.warning("fastText diverged (NaN) at lr=%g; retrying with lr=%g", lr, lr / 2)
        lr /= 2
    raise RuntimeError(f"fastText training diverged (NaN) even at lr={lr * 2:g}; lower --lr")


#: the grid ``--search`` tries (every combination), each scored on a validation split
SEARCH_GRID: dict[str, tuple] = {"lr": (0.1, 0.5), "epoch": (5, 20), "wordNgrams": (1, 2), "dim": (16, 64)}


def _search(train_lines: list[str], base: dict[str, Any], seed: int, tmp: str) -> tuple[list[dict[str, Any]], dict]:
    """fastText parameters chosen by measurement: every :data:`SEARCH_GRID` combination
    is trained on 80% of the training examples and scored (AUC) on the other 20% (a
    seeded split of the *training* examples: the held-out set stays untouched for the
    card's final numbers). Returns the combinations best first (ties: the earlier, cheaper
    one); the final model is trained with the first that trains without diverging
    (fastText 0.9.3 sometimes diverges on a few hundred examples)."""
    import itertools

    fit, valid = [], []
    for line in train_lines:
        (valid if _hash(seed + 3, line) % 5 == 0 else fit).append(line)
    v_labels = np.array([ln.startswith(f"__label__{POSITIVE} ") for ln in valid])
    v_texts = [ln.split(" ", 1)[1] for ln in valid]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8",
                                     dir=os.path.dirname(os.path.abspath(tmp))) as tf:
        tf.write("\n".join(fit) + "\n")
        fit_file = tf.name
    results = []
    try:
        for values in itertools.product(*SEARCH_GRID.values()):
            trial = dict(base, **dict(zip(SEARCH_GRID, values)))
            try:
                trial["lr"] = _train_fasttext(fit_file, tmp, trial)
            except RuntimeError as e:  # a combination that diverges is a losing trial, not a failure
                log.warning("search %s: %s", dict(zip(SEARCH_GRID, values)), e)
                results.append({**dict(zip(SEARCH_GRID, values)), "valid_auc": None})
                continue
            auc = roc_auc(v_labels, positive_scores(fasttext_compat.load(tmp), v_texts))
            results.append({**dict(zip(SEARCH_GRID, values)), "valid_auc": round(auc, 5)})
            log.info("search %s: validation AUC %.4f", results[-1], auc)
    finally:
        os.unlink(fit_file)
        if os.path.exists(tmp):
            os.unlink(tmp)
    done = [i for i, r in enumerate(results) if r["valid_auc"] is not None]
    if not done:
        raise RuntimeError("fastText diverged for every --search combination; lower --lr or give more data")
    ranked = sorted(done, key=lambda i: (-results[i]["valid_auc"], i))
    return ([dict(base, **{k: results[i][k] for k in SEARCH_GRID}) for i in ranked],
            {"grid": {k: list(v) for k, v in SEARCH_GRID.items()}, "validation_examples": len(valid),
             "fit_examples": len(fit), "trials": results})


def _read_classes(cfg: QualityTrainConfig) -> tuple[dict[str, list[tuple[int, str]]], dict[str, list[dict]]]:
    """The examples of each class (``(hash, chunk)``, sources balanced by :func:`allot`,
    the larger class cut to ``balance`` x the smaller) and a summary per source."""
    per_source: dict[str, list[list[tuple[int, str]]]] = {}
    sources: dict[str, list[dict[str, Any]]] = {}
    for label, specs in ((POSITIVE, cfg.positive), (NEGATIVE, cfg.negative)):
        cap = max(1, cfg.max_examples // len(specs))
        per_source[label] = []
        sources[label] = []
        for spec in specs:
            picked, summary = _collect(spec, cfg, cap)
            per_source[label].append(picked)
            sources[label].append(summary)
        if not any(per_source[label]):
            raise SpecError(f"quality train: the {label} inputs {list(specs)} yield no chunk of "
                            f">= {cfg.min_words} words")
    smaller = min(sum(map(len, v)) for v in per_source.values())
    limit = int(smaller * cfg.balance)
    classes: dict[str, list[tuple[int, str]]] = {}
    for label, pools in per_source.items():
        shares = allot([len(p) for p in pools], limit)
        classes[label] = [item for pool, k in zip(pools, shares) for item in pool[:k]]
        for summary, k in zip(sources[label], shares):
            summary["chunks_used"] = k
            log.info("%s %s: %d documents, %d chunks, %d used", label, summary["input"],
                     summary["documents"], summary["chunks"], k)
    return classes, sources


def _split_heldout(cfg: QualityTrainConfig, classes: dict[str, list[tuple[int, str]]]
                   ) -> tuple[list[str], list[str], list[bool]]:
    """fastText training lines (``__label__<class> <text>``, classes interleaved by a
    seeded hash) and the held-out texts with their labels (True: positive)."""
    train_lines: list[str] = []
    held_texts: list[str] = []
    held_labels: list[bool] = []
    for label, items in classes.items():
        for _h, text in items:
            if _hash(cfg.seed + 1, text) % 10_000 < cfg.heldout * 10_000:
                held_texts.append(text)
                held_labels.append(label == POSITIVE)
            else:
                train_lines.append(f"__label__{label} {text}")
    # interleave classes deterministically (fastText reads sequentially; a sorted-by-class
    # file would make the last epochs' updates one-sided)
    train_lines.sort(key=lambda s: _hash(cfg.seed + 2, s))
    if not held_texts or len(set(held_labels)) < 2:
        raise SpecError("quality train: the held-out split has fewer than two classes; give more data "
                        "or a larger --heldout")
    return train_lines, held_texts, held_labels


def _fit(cfg: QualityTrainConfig, train_lines: list[str], out: str) -> tuple[dict[str, Any], dict | None]:
    """Train the final model into ``out`` (parameters chosen by ``--search`` when asked;
    a candidate that diverges gives way to the next best). Returns the parameters used
    and the search record."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8",
                                     dir=os.path.dirname(os.path.abspath(out))) as tf:
        tf.write("\n".join(train_lines))
        tf.write("\n")
        train_file = tf.name
    params = {k: getattr(cfg.fasttext, k) for k in cfg.fasttext.__dataclass_fields__}
    tmp_model = f"{out}.tmp{os.getpid()}"
    search = None
    try:
        candidates = [params]
        if cfg.search:
            candidates, search = _search(train_lines, params, cfg.seed, tmp_model)
        skipped = []
        for k, params in enumerate(candidates):
            try:
                params = dict(params, lr=_train_fasttext(train_file, tmp_model, params))
                break
            except RuntimeError:
                if k == len(candidates) - 1:
                    raise
                log.warning("final training diverged with %s; trying the next best", params)
                skipped.append({g: params[g] for g in SEARCH_GRID})
        if search is not None:
            search["chosen"] = {g: params[g] for g in SEARCH_GRID}
            search["diverged_on_final"] = skipped
    finally:
        os.unlink(train_file)
    fs.move_into_place(tmp_model, out)
    return params, search


def heldout_metrics(model, texts: Sequence[str], labels: Sequence[bool]) -> dict[str, Any]:
    """The card's ``heldout`` block: AUC, precision/recall/F1/accuracy at 0.5, a
    precision-recall table and the score quantiles."""
    y = np.array(labels)
    scores = positive_scores(model, texts)
    return {
        "examples": int(len(y)),
        "positives": int(y.sum()),
        "negatives": int((~y).sum()),
        "auc": round(roc_auc(y, scores), 5),
        **{k: v for k, v in _pr(y, scores, 0.5).items() if k != "threshold"},
        "pr_table": [_pr(y, scores, t) for t in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)],
        "score_quantiles": quantiles(scores),
        "split": "per chunk (seeded hash); see stages.models.quality.train",
    }


def train_quality(cfg: QualityTrainConfig) -> dict[str, Any]:
    """Train the classifier, evaluate it on the held-out split, write model + card.
    Returns the card."""
    t0 = time.perf_counter()
    classes, sources = _read_classes(cfg)
    t_read = time.perf_counter() - t0
    train_lines, held_texts, held_labels = _split_heldout(cfg, classes)

    out = os.fspath(cfg.out)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    t1 = time.perf_counter()
    params, search = _fit(cfg, train_lines, out)
    model = fasttext_compat.load(out)
    t_train = time.perf_counter() - t1

    metrics = heldout_metrics(model, held_texts, held_labels)
    card: dict[str, Any] = {
        "kind": "fasttext-quality",
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "created_by": "datapipe quality train",
        "model": os.path.basename(out),
        "model_bytes": os.path.getsize(out),
        "labels": {"positive": POSITIVE, "negative": NEGATIVE},
        "score": f"P(__label__{POSITIVE}) from fastText softmax",
        "textnorm": cfg.textnorm.to_dict(),
        "data": {
            "positive": sources[POSITIVE],
            "negative": sources[NEGATIVE],
            "chunk_words": cfg.chunk_words,
            "min_words": cfg.min_words,
            "max_examples": cfg.max_examples,
            "balance": cfg.balance,
            "seed": cfg.seed,
            "heldout_fraction": cfg.heldout,
            "train_examples": {lab: sum(1 for s in train_lines if s.startswith(f"__label__{lab} "))
                               for lab in (POSITIVE, NEGATIVE)},
            "heldout_examples": {POSITIVE: metrics["positives"], NEGATIVE: metrics["negatives"]},
        },
        "fasttext": params,
        "search": search,
        "heldout": metrics,
        "calibration": None,
        "seconds": {"read": round(t_read, 3), "train": round(t_train, 3)},
    }
    if cfg.calibrate:
        t2 = time.perf_counter()
        card["calibration"] = calibration(model, cfg.textnorm, cfg.calibrate, text_key=cfg.text_key,
                                          max_docs=cfg.calibrate_docs)
        card["seconds"]["calibrate"] = round(time.perf_counter() - t2, 3)
    write_card(out, card)
    log.info("wrote %s: held-out AUC %.4f, precision %.3f, recall %.3f (%d examples)", out,
             metrics["auc"], metrics["precision"], metrics["recall"], metrics["examples"])
    return card


def calibrate_model(model_path: str, specs: Sequence[str], *, text_key: str = "text",
                    max_docs: int = 20_000) -> dict[str, Any]:
    """Add (or replace) the calibration of an existing model's card."""
    card = read_card(model_path, required=True)
    norm = TextNorm.from_dict(card.get("textnorm"))
    model = fasttext_compat.load(model_path)
    card["calibration"] = calibration(model, norm, specs, text_key=text_key, max_docs=max_docs)
    write_card(model_path, card)
    return card


# -- command line ------------------------------------------------------------------------

def _cmd_train(args: argparse.Namespace) -> int:
    ft = FastTextParams(lr=args.lr, epoch=args.epoch, dim=args.dim, wordNgrams=args.word_ngrams,
                        minCount=args.min_count, bucket=args.bucket, thread=args.threads, seed=args.seed)
    cfg = QualityTrainConfig(
        positive=tuple(args.positive), negative=tuple(args.negative), out=args.out,
        chunk_words=args.chunk_words, min_words=args.min_words, max_examples=args.max_examples,
        balance=args.balance, heldout=args.heldout, seed=args.seed, text_key=args.text_key,
        calibrate=tuple(args.calibrate or ()), calibrate_docs=args.calibrate_docs,
        exclude=tuple(args.exclude), search=args.search,
        textnorm=textnorm_from_args(args), fasttext=ft,
    )
    if args.by_language:
        return _train_by_language(args, cfg)
    if not args.out:
        raise SpecError("quality train: give --out PATH (one model) or --by-language --out-dir DIR (one per language)")
    card = train_quality(cfg)
    h = card["heldout"]
    print(json.dumps({"model": cfg.out, "auc": h["auc"], "precision": h["precision"], "recall": h["recall"],
                      "heldout_examples": h["examples"], "train_examples": card["data"]["train_examples"],
                      "calibrated": card["calibration"] is not None, "seconds": card["seconds"]}, indent=2))
    return 0


def _train_by_language(args: argparse.Namespace, cfg: QualityTrainConfig) -> int:
    """One classifier per language present on both sides: ``OUT_DIR/<lang>.bin`` and its
    card (with ``language``), the language from ``--lang-key`` or ``--langid``; the
    quality stage's ``models_dir`` reads the folder."""
    import dataclasses
    import tempfile

    from stages.models.by_language import split_by_language
    from stages.models.model_card import read_card, write_card

    if not args.out_dir:
        raise SpecError("quality train --by-language: give --out-dir DIR (models are written as DIR/<lang>.bin)")
    kw = dict(lang_key=args.lang_key, langid=args.langid, text_key=args.text_key, languages=args.languages or (),
              min_docs=args.min_docs)
    summary: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="quality-by-language-") as work:
        pos, pos_n = split_by_language(args.positive, work, tag="positive", **kw)
        neg, neg_n = split_by_language(args.negative, work, tag="negative", **kw)
        cal = split_by_language(args.calibrate, work, tag="calibrate", **kw)[0] if args.calibrate else {}
        os.makedirs(args.out_dir, exist_ok=True)
        for lang in sorted(set(pos) & set(neg)):
            out = os.path.join(args.out_dir, f"{lang}.bin")
            one = dataclasses.replace(cfg, positive=(pos[lang],), negative=(neg[lang],), out=out,
                                      calibrate=(cal[lang],) if lang in cal else ())
            card = train_quality(one)
            card = read_card(out, required=True)
            card["language"] = lang
            card["by_language"] = {"language_from": args.lang_key or "lid.176", "positive_docs": pos_n[lang],
                                   "negative_docs": neg_n[lang], "positive": list(args.positive),
                                   "negative": list(args.negative)}
            write_card(out, card)
            summary[lang] = {"model": out, "auc": card["heldout"]["auc"], "positive_docs": pos_n[lang],
                             "negative_docs": neg_n[lang], "calibrated": card.get("calibration") is not None}
    skipped = sorted((set(pos_n) | set(neg_n)) - set(summary))
    print(json.dumps({"out_dir": args.out_dir, "models": summary,
                      "skipped_languages": {k or "(none)": [pos_n.get(k, 0), neg_n.get(k, 0)] for k in skipped}},
                     indent=2))
    if not summary:
        raise SpecError("quality train --by-language: no language has both positive and negative documents "
                        f"(at least --min-docs {args.min_docs} each)")
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    card = calibrate_model(args.model, args.input, text_key=args.text_key, max_docs=args.max_docs)
    c = card["calibration"]
    print(json.dumps({"model": args.model, "documents": c["documents"], "mean_score": c["mean_score"],
                      "median": c["quantiles"][QUANTILE_POINTS // 2]}, indent=2))
    return 0


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Add ``quality train`` and ``quality calibrate`` to the ``datapipe`` command line."""
    q = subparsers.add_parser("quality", help="fastText quality classifier for the quality stage")
    sub = q.add_subparsers(dest="quality_command", required=True)
    t = sub.add_parser("train", help="train the classifier and write model + card",
                       description="Inputs are paths or globs ([format:]path; formats text, jsonl, "
                                   "parquet, warc, html; guessed from the name). Each input is one source.")
    t.add_argument("--positive", nargs="+", required=True,
                   help="text to keep more of (main text of crawled pages: html:/warc: inputs; wiki, books)")
    t.add_argument("--negative", nargs="+", required=True,
                   help="text to push down: boilerplate:<html/warc> (what the extractor removed), raw web text")
    t.add_argument("--out", help="model path, e.g. models/quality.bin (card: models/quality.card.json)")
    t.add_argument("--by-language", action="store_true",
                   help="one classifier per language found on both sides, written as OUT_DIR/<lang>.bin")
    t.add_argument("--out-dir", help="--by-language: folder of the models (the quality stage's models_dir)")
    t.add_argument("--lang-key", help="--by-language: field holding the language (default: --langid)")
    t.add_argument("--langid", help="--by-language: fastText language-ID model (default: the packaged lid.176)")
    t.add_argument("--languages", nargs="+", help="--by-language: only these languages")
    t.add_argument("--min-docs", type=int, default=20, help="--by-language: skip languages with fewer documents")
    t.add_argument("--chunk-words", type=int, default=128, help="words per training example (default 128)")
    t.add_argument("--min-words", type=int, default=16, help="drop shorter chunks (default 16)")
    t.add_argument("--max-examples", type=int, default=40_000, help="chunks per class at most (default 40000)")
    t.add_argument("--balance", type=float, default=1.0, help="largest class size / smallest (default 1)")
    t.add_argument("--heldout", type=float, default=0.2, help="held-out fraction (default 0.2)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--text-key", default="text", help="JSONL field / Parquet column with the text")
    t.add_argument("--calibrate", nargs="+", help="unlabelled sample of the corpus to filter: stores score "
                                                 "quantiles for the stage's top_fraction mode")
    t.add_argument("--calibrate-docs", type=int, default=20_000)
    t.add_argument("--exclude", nargs="+", default=[],
                   help="files (paths or globs) never read from any input, e.g. a labelled evaluation set")
    t.add_argument("--search", action="store_true",
                   help="choose lr/epoch/wordNgrams/dim by validation AUC over a small grid (16 trainings)")
    g = t.add_argument_group("fastText")
    g.add_argument("--lr", type=float, default=0.5)
    g.add_argument("--epoch", type=int, default=20)
    g.add_argument("--dim", type=int, default=32)
    g.add_argument("--word-ngrams", type=int, default=2)
    g.add_argument("--min-count", type=int, default=2)
    g.add_argument("--bucket", type=int, default=200_000)
    g.add_argument("--threads", type=int, default=1, help="fastText threads (1 = deterministic)")
    add_textnorm_args(t)
    t.set_defaults(func=_cmd_train)

    c = sub.add_parser("calibrate", help="store score quantiles of a corpus sample in a model's card")
    c.add_argument("--model", required=True)
    c.add_argument("--input", nargs="+", required=True)
    c.add_argument("--text-key", default="text")
    c.add_argument("--max-docs", type=int, default=20_000)
    c.set_defaults(func=_cmd_calibrate)
