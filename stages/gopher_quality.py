"""Gopher quality filter (Rae et al. 2021, "Scaling Language Models: Methods, Analysis &
Insights from Training Gopher", appendix A, MassiveWeb quality filters).

Rules, checked in this order; the first that fails names the drop
(``gopher_quality:<rule>``, detail = the measured value):

==================  ==============================================================  =========
rule                drops a document when                                           default
==================  ==============================================================  =========
word_count          words < ``min_words`` or > ``max_words``                        50, 100000
mean_word_length    mean word length < ``min_mean_word_length`` or > max             3, 10
hash_ratio          ``#`` per word > ``max_hash_ratio``                             0.1
ellipsis_ratio      (``...`` + ``…``) per word > ``max_ellipsis_ratio``             0.1
bullet_lines        fraction of lines starting with a bullet > ``max_bullet_lines`` 0.9
ellipsis_lines      fraction of lines ending with an ellipsis > max                 0.3
alpha_words         fraction of words with a letter < ``min_alpha_words``           0.8
stop_words          occurrences of the stop words < ``min_stop_words``              2
==================  ==============================================================  =========

Words, cores and lines follow :mod:`stages._text`. Word counts and lengths use word
cores (``"word,"`` counts 4 characters, ``"-"`` is not a word), which is what the
datatrove implementation gets from its tokenizer splitting punctuation off. Stop words
are matched on lower-cased cores. Any threshold set to ``null`` disables its rule.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from datapipe.errors import SpecError
from datapipe.stage import FilterStage, StageConfig
from stages import _text as T

log = logging.getLogger(__name__)

GOPHER_STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")


def _check_fraction(stage: str, name: str, value: float | None) -> None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise SpecError(f"{stage}: {name} must be a fraction between 0 and 1 (or null to disable), got {value}")


@dataclass(kw_only=True, frozen=True)
class GopherQualityConfig(StageConfig):
    min_words: int | None = 50
    max_words: int | None = 100_000
    min_mean_word_length: float | None = 3.0
    max_mean_word_length: float | None = 10.0
    max_hash_ratio: float | None = 0.1
    max_ellipsis_ratio: float | None = 0.1
    max_bullet_lines: float | None = 0.9
    max_ellipsis_lines: float | None = 0.3
    min_alpha_words: float | None = 0.8
    min_stop_words: int | None = 2
    stop_words: tuple[str, ...] = GOPHER_STOP_WORDS
    bullet_chars: tuple[str, ...] = ("•", "-")

    def __post_init__(self) -> None:
        s = "gopher_quality"
        for name in ("min_words", "max_words", "min_stop_words"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise SpecError(f"{s}: {name} must be >= 0 (or null to disable), got {v}")
        if self.min_words is not None and self.max_words is not None and self.max_words < self.min_words:
            raise SpecError(f"{s}: max_words ({self.max_words}) must be >= min_words ({self.min_words})")
        lo, hi = self.min_mean_word_length, self.max_mean_word_length
        if lo is not None and hi is not None and hi < lo:
            raise SpecError(f"{s}: max_mean_word_length ({hi}) must be >= min_mean_word_length ({lo})")
        for name in ("max_bullet_lines", "max_ellipsis_lines", "min_alpha_words"):
            _check_fraction(s, name, getattr(self, name))
        for name in ("max_hash_ratio", "max_ellipsis_ratio"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise SpecError(f"{s}: {name} must be >= 0 (or null to disable), got {v}")
        if any(len(c) != 1 for c in self.bullet_chars):
            raise SpecError(f"{s}: bullet_chars must be single characters, got {list(self.bullet_chars)}")
        if self.min_stop_words and not self.stop_words:
            raise SpecError(f"{s}: stop_words is empty but min_stop_words={self.min_stop_words}; "
                            "give a list of stop words or set min_stop_words: null")


#: Rule names in checking order.
RULES = ("word_count", "mean_word_length", "hash_ratio", "ellipsis_ratio", "bullet_lines",
         "ellipsis_lines", "alpha_words", "stop_words")


class GopherQuality(FilterStage):
    """Gopher's document-quality heuristics on ``text``; see the module docstring."""

    name = "gopher_quality"
    Config = GopherQualityConfig

    _chars: T.CharTable | None = None          # set in setup()
    _stop_hashes: np.ndarray | None = None

    def setup(self) -> None:
        self._chars = T.CharTable()
        self._stop_hashes = np.array(sorted({T.string_span_hash(w.lower()) for w in self.config.stop_words}),
                                     dtype=np.uint64)

    def keep(self, batch: pa.Table):
        cfg: GopherQualityConfig = self.config
        self.ensure_setup()
        texts = T.text_list(batch)
        n = len(texts)
        toks = T.tokenize(texts, self._chars)
        core_start, core_len, has_alpha = toks.cores()
        is_word = core_len > 0
        n_words = toks.count(is_word)
        safe_words = np.maximum(n_words, 1)
        mean_len = toks.total(core_len.astype(np.float64), is_word) / safe_words

        fails: list[tuple[str, np.ndarray, np.ndarray]] = []
        wc_fail = np.zeros(n, dtype=bool)
        if cfg.min_words is not None:
            wc_fail |= n_words < cfg.min_words
        if cfg.max_words is not None:
            wc_fail |= n_words > cfg.max_words
        fails.append(("word_count", wc_fail, n_words))

        ml_fail = np.zeros(n, dtype=bool)
        if cfg.min_mean_word_length is not None:
            ml_fail |= mean_len < cfg.min_mean_word_length
        if cfg.max_mean_word_length is not None:
            ml_fail |= mean_len > cfg.max_mean_word_length
        fails.append(("mean_word_length", ml_fail & (n_words > 0), mean_len))

        if cfg.max_hash_ratio is not None:
            r = T.py_counts(texts, lambda t: t.count("#")) / safe_words
            fails.append(("hash_ratio", r > cfg.max_hash_ratio, r))
        if cfg.max_ellipsis_ratio is not None:
            r = T.py_counts(texts, lambda t: t.count("...") + t.count("\u2026")) / safe_words
            fails.append(("ellipsis_ratio", r > cfg.max_ellipsis_ratio, r))

        if cfg.max_bullet_lines is not None or cfg.max_ellipsis_lines is not None:
            bullets = tuple(cfg.bullet_chars)
            n_lines = np.zeros(n, dtype=np.int64)
            n_bullet = np.zeros(n, dtype=np.int64)
            n_ell = np.zeros(n, dtype=np.int64)
            for i, t in enumerate(texts):
                lines = t.splitlines()
                n_lines[i] = len(lines)
                n_bullet[i] = sum(1 for x in lines if x.lstrip().startswith(bullets))
                n_ell[i] = sum(1 for x in lines if x.rstrip().endswith(("...", "\u2026")))
            safe_lines = np.maximum(n_lines, 1)
            if cfg.max_bullet_lines is not None:
                r = n_bullet / safe_lines
                fails.append(("bullet_lines", r > cfg.max_bullet_lines, r))
            if cfg.max_ellipsis_lines is not None:
                r = n_ell / safe_lines
                fails.append(("ellipsis_lines", r > cfg.max_ellipsis_lines, r))

        if cfg.min_alpha_words is not None:
            r = toks.count(has_alpha & is_word) / safe_words
            fails.append(("alpha_words", (r < cfg.min_alpha_words) & (n_words > 0), r))

        if cfg.min_stop_words is not None:
            max_len = max((len(w) for w in cfg.stop_words), default=0)
            cand = is_word & (core_len <= max_len)
            h = toks.span_hashes(core_start[cand], core_len[cand], self._chars, max_len)
            c = toks.count(_scatter_mask(cand, np.isin(h, self._stop_hashes)))
            fails.append(("stop_words", c < cfg.min_stop_words, c))

        return T.first_failure(fails, n)


def _scatter_mask(where: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = np.zeros(len(where), dtype=bool)
    out[where] = values
    return out
