"""``decontaminate``: drop documents that share a word n-gram (13 by default, as GPT-3)
with an evaluation set, or cut the overlapping spans out (``mode: cut``).

The evaluation sets are files the user names (``eval_sets: {benchmark: [files]}``:
JSONL/Parquet with ``text_fields``, or plain text, one item a line), or a prebuilt index
(``index: path/to/index.npz``, from :func:`stages.decontam.ngrams.build_index` +
``NgramIndex.save``). How the index is built and shipped today: in ``setup()``, once
per actor (``compute`` asks for actors), each actor builds it from the files (or loads
the ``.npz``); it is a sorted uint64 array of n-gram hashes plus a uint16 benchmark id
per n-gram (10 bytes an n-gram, 10 MB for 1M n-grams; the size is logged). The builder
and the matcher are pure functions in :mod:`stages.decontam.ngrams`, so a global-stage
pass can build the ``.npz`` once per run and hand its path to the workers.

Reject: ``decontaminate:contaminated`` with detail ``<benchmark>: "<the n-gram>"
(+K more)``. Cut mode removes every overlapping word span (the union of the matching
n-grams' words, from the first word's start to the last one's end in the original text)
and counts ``ngrams_cut``/``chars_cut``; a document left empty is ``decontaminate:empty``.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import Literal, Mapping

import numpy as np
import pyarrow as pa

from datapipe import fs
from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.stage import Compute, Rewrite, RewriteFilterStage, StageConfig
from stages.decontam.ngrams import NgramIndex, build_index, match, ngram_hashes, normalize, words

log = logging.getLogger(__name__)

_PY_WORD = re.compile(r"[^\W_]+")


@dataclass(kw_only=True, frozen=True)
class DecontamConfig(StageConfig):
    #: benchmark name -> evaluation files (JSONL/Parquet with text_fields, or plain text)
    eval_sets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: a prebuilt index (.npz from NgramIndex.save); wins over eval_sets
    index: str | None = None
    #: fields of JSONL/Parquet evaluation records that hold text
    text_fields: tuple[str, ...] = ("text",)
    #: n-gram length in words
    n: int = 13
    mode: Literal["drop", "cut"] = "drop"

    def __post_init__(self) -> None:
        if self.n < 2:
            raise SpecError(f"decontaminate: n must be >= 2 words, got {self.n}; GPT-3 used 13")
        if self.mode not in ("drop", "cut"):
            raise SpecError(f"decontaminate: mode must be 'drop' or 'cut', got {self.mode!r}")
        if self.index is None and not self.eval_sets:
            raise SpecError("decontaminate: give eval_sets ({benchmark: [files]}) or index (a prebuilt .npz)")
        paths = [self.index] if self.index is not None else [p for ps in self.eval_sets.values() for p in ps]
        for p in paths:
            try:
                ok = fs.is_file(p)
            except OSError as e:
                raise SpecError(f"decontaminate: cannot reach {p!r}: {e}") from None
            if not ok:
                raise SpecError(f"decontaminate: {p!r} is not a file; give evaluation files (JSONL, Parquet or "
                                ".txt) or a prebuilt index .npz")
        if not self.text_fields:
            raise SpecError("decontaminate: text_fields is empty; name the record fields holding text")


class Decontaminate(RewriteFilterStage):
    """Drops (or cuts) what overlaps evaluation sets by a word n-gram."""

    name = "decontaminate"
    Config = DecontamConfig
    compute = Compute(kind="actor")

    def setup(self) -> None:
        cfg = self.config
        t0 = time.perf_counter()
        if cfg.index is not None:
            self.index = NgramIndex.load(cfg.index)
            if self.index.n != cfg.n:
                raise SpecError(f"decontaminate: index {cfg.index} holds {self.index.n}-grams but n is {cfg.n}; "
                                f"set n: {self.index.n} or rebuild the index")
        else:
            self.index = build_index({k: list(v) for k, v in cfg.eval_sets.items()}, n=cfg.n,
                                     fields=cfg.text_fields)
        log.info("decontaminate: %d %d-grams from %s in %.1f s, %.1f MB; items %s, shorter than n: %s",
                 len(self.index), cfg.n, self.index.names, time.perf_counter() - t0, self.index.nbytes / 1e6,
                 self.index.items, self.index.short_items)

    def rewrite(self, batch: pa.Table) -> Rewrite:
        texts = batch.column(S.TEXT).combine_chunks()
        hits = match(texts, self.index)
        m = batch.num_rows
        keep = np.ones(m, dtype=bool)
        reasons: list[str | None] = [None] * m
        ngrams_cut = np.zeros(m, dtype=np.int64)
        chars_cut = np.zeros(m, dtype=np.int64)
        new_texts = None
        hit_rows = np.flatnonzero(hits.first_pos >= 0)
        if self.config.mode == "cut" and len(hit_rows):
            new_texts = texts.to_pylist()
        for r in map(int, hit_rows):
            if new_texts is not None:
                cut = _cut(new_texts[r], self.index)
                if cut is not None:
                    new_texts[r], ngrams_cut[r], chars_cut[r] = cut
                    continue
            keep[r] = False
            reasons[r] = "contaminated|" + self._detail(hits, r)
        return Rewrite(texts=texts if new_texts is None else pa.array(new_texts, pa.string()), keep=keep,
                       reasons=reasons, changes={"ngrams_cut": ngrams_cut, "chars_cut": chars_cut,
                                                 "ngram_hits": hits.count})

    def _detail(self, hits, r: int) -> str:
        bench = self.index.names[int(self.index.bench[hits.first_pos[r]])]
        i = int(hits.first_word[r])
        more = int(hits.count[r]) - 1
        return f'{bench}: "{hits.words.text(i, i + self.index.n)}"' + (f" (+{more} more)" if more else "")


def _cut(text: str, index: NgramIndex) -> tuple[str, int, int] | None:
    """The text without the word spans of its matching n-grams; None when the Python
    word split disagrees with the vectorised one (the caller drops the document)."""
    spans = [(mt.start(), mt.end()) for mt in _PY_WORD.finditer(text)]
    w = words(normalize(pa.array([" ".join(text[a:b] for a, b in spans)], pa.string())))
    if len(w.hashes) != len(spans):
        return None
    h, first = ngram_hashes(w, index.n)
    hit = index.lookup(h) >= 0
    if not hit.any():
        return None
    covered = np.zeros(len(spans) + 1, dtype=np.int64)
    for f in first[hit]:
        covered[f] += 1
        covered[f + index.n] -= 1
    inside = np.cumsum(covered[:-1]) > 0
    out, pos, removed = [], 0, 0
    k = 0
    while k < len(spans):
        if inside[k]:
            j = k
            while j + 1 < len(spans) and inside[j + 1]:
                j += 1
            a, b = spans[k][0], spans[j][1]
            out.append(text[pos:a])
            removed += b - a
            pos = b
            k = j + 1
        else:
            k += 1
    out.append(text[pos:])
    return re.sub(r"[ \t]{2,}", " ", "".join(out)).strip(), int(hit.sum()), removed
