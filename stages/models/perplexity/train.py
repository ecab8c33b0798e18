"""``datapipe lm train`` and ``datapipe lm cutoffs``: the functions behind the CLI.

``train_lm`` reads reference text, normalises it (:class:`~stages.models.textnorm.TextNorm`),
estimates an interpolated modified Kneser-Ney model (:mod:`stages.models.perplexity.kneser_ney`),
writes ARPA (+ KenLM binary when ``build_binary`` exists), checks that KenLM loads it,
scores a held-out slice and writes the model card.

``compute_cutoffs`` scores a sample of documents per language and writes CCNet's
cut-off table: a CSV whose first column is the percentile 0..100 and whose other
columns, one per language, are the perplexity at that percentile. The ``perplexity``
stage reads it to assign ``head``/``middle``/``tail`` buckets.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import logging
import os
import time
from typing import Any, Mapping, Sequence

import numpy as np
import xxhash

from datapipe import fs
from datapipe.errors import SpecError
from datapipe.readers import ReadStats
from stages.models.textnorm import TextNorm
from stages.models import training_text as corpus
from stages.models.model_card import read_card, write_card
from stages.models.perplexity import arpa
from stages.models.perplexity.kneser_ney import check_normalisation, estimate
from stages.models.perplexity.score import load_kenlm, perplexities

log = logging.getLogger(__name__)


def _is_heldout(line: str, fraction: float) -> bool:
    return fraction > 0 and xxhash.xxh3_64_intdigest(line.encode("utf-8", "surrogatepass")) % 100_000 < fraction * 100_000


def train_lm(
    inputs: Sequence[str],
    out: str,
    *,
    order: int = 5,
    language: str = "en",
    norm: TextNorm | None = None,
    text_key: str = "text",
    max_bytes: int = 0,
    heldout_fraction: float = 0.01,
    binary: bool = True,
) -> dict[str, Any]:
    """Estimate an n-gram LM from ``inputs`` and write ``out`` (ARPA) plus its card.
    Returns the card."""
    if not 0.0 <= heldout_fraction < 0.5:
        raise SpecError(f"lm train: --heldout must be in [0, 0.5), got {heldout_fraction}")
    norm = norm or TextNorm()
    t0 = time.perf_counter()
    read = ReadStats()
    train, held, read_bytes = _read_lines(inputs, norm, text_key=text_key, max_bytes=max_bytes,
                                          heldout_fraction=heldout_fraction, stats=read)
    docs = read.documents
    if not train:
        raise SpecError(f"lm train: no text in {list(inputs)}")
    t_read = time.perf_counter() - t0
    log.info("read %d documents, %.1f MB, %d training lines in %.1fs", docs, read_bytes / 1e6, len(train), t_read)

    model = estimate(train, order=order)
    del train
    norm_err = check_normalisation(model)
    if norm_err > 1e-6:
        raise AssertionError(f"estimated model is not normalised (max |sum p - 1| = {norm_err:g})")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    t1 = time.perf_counter()
    size = arpa.write_arpa(model, out)
    t_write = time.perf_counter() - t1
    binary_path = None
    if binary:
        candidate = os.path.splitext(out)[0] + ".binary"
        if arpa.build_binary(out, candidate):
            binary_path = candidate
    stats = model.stats()
    del model  # free the arrays before KenLM loads its own copy
    t2 = time.perf_counter()
    heldout = _heldout_perplexity(load_kenlm(binary_path or out), held)
    t_check = time.perf_counter() - t2
    stats["seconds"].update(read=round(t_read, 3), write=round(t_write, 3), load_and_heldout=round(t_check, 3))
    card = {
        "kind": "kenlm-ngram",
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "created_by": "datapipe lm train",
        "model": os.path.basename(out),
        "binary": os.path.basename(binary_path) if binary_path else None,
        "language": language,
        "smoothing": "interpolated modified Kneser-Ney (stages.models.perplexity)",
        "textnorm": norm.to_dict(),
        "inputs": corpus.file_summary(inputs),
        "documents": docs,
        "rejects": read.to_dict()["rejects"],
        "text_bytes": read_bytes,
        "max_bytes": max_bytes,
        "heldout_fraction": heldout_fraction,
        "heldout": heldout,
        "arpa_bytes": size,
        "normalisation_max_error": norm_err,
        **stats,
    }
    write_card(out, card)
    log.info("wrote %s (%.1f MB); held-out perplexity %s", out, size / 1e6, heldout and heldout["perplexity"])
    return card


def _read_lines(inputs: Sequence[str], norm: TextNorm, *, text_key: str, max_bytes: int,
                heldout_fraction: float, stats: ReadStats) -> tuple[list[str], list[str], int]:
    """Normalised lines of the inputs, split into training and held-out lines by a hash
    of the line; stops after ``max_bytes`` of text (0: reads all). Also the bytes read."""
    train: list[str] = []
    held: list[str] = []
    read_bytes = 0
    for doc in corpus.iter_docs(inputs, text_key=text_key, stats=stats):
        read_bytes += len(doc.text.encode("utf-8", "surrogatepass"))
        for line in norm.lines(doc.text):
            (held if _is_heldout(line, heldout_fraction) else train).append(line)
        if max_bytes and read_bytes >= max_bytes:
            log.info("read %d bytes (max_bytes): stopping", read_bytes)
            break
    return train, held, read_bytes


def _heldout_perplexity(lm, held: list[str]) -> dict[str, Any] | None:
    """Perplexity of the held-out lines under the written model, as KenLM loads it."""
    if not held:
        return None
    total = sum(lm.score(line) for line in held)
    tokens = sum(line.count(" ") + 2 for line in held)
    return {"lines": len(held), "tokens": tokens, "perplexity": round(10.0 ** (-total / tokens), 3)}


PERCENTILES = tuple(range(101))


def compute_cutoffs(
    models: Mapping[str, str],
    inputs: Sequence[str],
    out: str,
    *,
    default_language: str | None = None,
    langid: str | None = None,
    text_key: str = "text",
    sample: int = 10_000,
) -> dict[str, Any]:
    """Perplexity percentiles per language over (up to ``sample`` documents per language
    of) ``inputs``, written as a CCNet-style CSV at ``out``. ``models`` maps language to
    model path. A document's language is its record's ``language`` field; else, with
    ``langid`` (a fastText language-ID model), the identified one; else
    ``default_language`` when given. A document of no known language is never counted as
    some default (a German page would skew the English percentiles): it is skipped and
    counted as ``no_language``. Documents in languages without a model are skipped too."""
    if not models:
        raise SpecError("lm cutoffs: give at least one --model [lang=]path")
    identify = _language_identifier(langid) if langid else None
    texts: dict[str, list[str]] = {lang: [] for lang in models}
    skipped = no_language = 0
    read = ReadStats()
    for doc in corpus.iter_docs(inputs, text_key=text_key, stats=read):
        lang = doc.language or (identify(doc.text) if identify else None) or default_language
        if lang is None:
            no_language += 1
            continue
        if lang not in texts:
            skipped += 1
            continue
        if len(texts[lang]) < sample:
            texts[lang].append(doc.text)
        if all(len(v) >= sample for v in texts.values()):
            break
    if no_language:
        log.warning("lm cutoffs: %d documents without a language skipped; give --langid MODEL or "
                    "--default-language LANG to use them", no_language)
    table: dict[str, np.ndarray] = {}
    counts = {}
    for lang, path in sorted(models.items()):
        if not texts[lang]:
            log.warning("lm cutoffs: no %s documents in the sample; no column for it", lang)
            continue
        card = read_card(path) or {}
        norm = TextNorm.from_dict(card.get("textnorm"))
        pp = perplexities(load_kenlm(path), norm, texts[lang])
        pp = pp[np.isfinite(pp)]
        if len(pp) == 0:
            continue
        table[lang] = np.percentile(pp, PERCENTILES)
        counts[lang] = int(len(pp))
    if not table:
        hint = (f"; {no_language} documents had no language: give --langid MODEL or --default-language LANG"
                if no_language else "")
        raise SpecError(f"lm cutoffs: no document of {sorted(models)} found in {list(inputs)}{hint}")
    write_cutoffs(out, table)
    return {"languages": counts, "skipped_other_languages": skipped, "no_language": no_language,
            "rejects": read.to_dict()["rejects"], "out": out}


def _language_identifier(path: str):
    """``text -> language`` with a fastText language-ID model (``lid.176``)."""
    from stages.models import fasttext as fasttext_compat

    if not os.path.isfile(path):
        raise SpecError(f"lm cutoffs: --langid {path!r} is not a file; give a fastText language-ID model "
                        "such as ../shared/models/lid.176.ftz")
    model = fasttext_compat.load(path)

    def identify(text: str) -> str | None:
        labels, _ = fasttext_compat.predict(model, [text.replace("\n", " ")])
        return labels[0][0].replace("__label__", "") if labels[0] else None

    return identify


def write_cutoffs(path: str, table: Mapping[str, np.ndarray]) -> None:
    """CCNet's layout: header ``,lang1,lang2``; row ``p`` holds the p-th percentile."""
    langs = sorted(table)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow([""] + langs)
    for i, p in enumerate(PERCENTILES):
        w.writerow([p] + [f"{table[lang][i]:.2f}" for lang in langs])
    fs.write_text(path, buf.getvalue())


def read_cutoffs(path: str) -> dict[str, np.ndarray]:
    """``{language: perplexity at percentile 0, 1, ...}`` from a cut-off CSV (ours has
    rows 0..100, CCNet's 0..99)."""
    if not os.path.isfile(path):
        raise SpecError(f"perplexity cut-offs {path} not found; compute them with `datapipe lm cutoffs`")
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2 or len(rows[0]) < 2:
        raise SpecError(f"{path}: expected a header ',lang1,...' and one row per percentile")
    langs = rows[0][1:]
    try:
        values = np.array([[float(x) for x in r[1:]] for r in rows[1:] if r], dtype=np.float64)
        pcts = [int(float(r[0])) for r in rows[1:] if r]
    except ValueError as e:
        raise SpecError(f"{path}: not a numeric cut-off table ({e})") from None
    if pcts != list(range(len(pcts))):
        raise SpecError(f"{path}: expected one row per percentile 0, 1, 2, ... in order (CCNet's layout)")
    return {lang: values[:, j] for j, lang in enumerate(langs)}
