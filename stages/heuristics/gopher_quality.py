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

Words, cores and lines follow :mod:`stages.heuristics.words`. Word counts and lengths use word
cores (``"word,"`` counts 4 characters, ``"-"`` is not a word), which is what the
datatrove implementation gets from its tokenizer splitting punctuation off. Stop words
are matched on lower-cased cores. Any threshold set to ``null`` disables its rule.

Languages (:mod:`stages.heuristics.languages`): each document is judged by its ``language`` (column, else
``default_language``). ``stop_words`` is the English list (Gopher's eight by default);
other languages use their ``stopwordsiso`` list. Languages
written without spaces are tokenized by characters, so ``mean_word_length`` cannot judge
them; a language without a stop-word list (or a document without a language) cannot be
judged by ``stop_words``. Such documents pass that rule and are counted as
``<rule>_unsupported_language`` in the stage's counters.

``reference: datatrove`` reproduces datatrove's ``GopherQualityFilter`` instead
(:mod:`stages.heuristics.datatrove_mode`; the differences are listed in ``docs/filters.md``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from datapipe.errors import SpecError
from datapipe.stage import Compute, FilterStage, StageConfig
from stages.heuristics import datatrove_mode as DT
from stages.heuristics import languages as L
from stages.heuristics.columns import py_counts, text_list
from stages.heuristics.grouping import mix64
from stages.heuristics.verdicts import first_failure
from stages.heuristics.words import char_table, CharTable, string_span_hash, tokenize, Tokens
from stages.heuristics.languages import GOPHER_STOP_WORDS
from stages.heuristics.config_checks import check_fractions, check_non_negative, check_reference, check_single_chars

log = logging.getLogger(__name__)

#: longest stop word matched (longer entries of a list never match)
MAX_STOP_WORD_LEN = 24


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
    #: language of documents when the batch has no ``language`` column (null: unknown)
    default_language: str | None = "en"
    #: "paper" (the published rules) or "datatrove" (datatrove's implementation)
    reference: str = "paper"

    def __post_init__(self) -> None:
        s = "gopher_quality"
        check_reference(s, self.reference)
        check_non_negative(s, self, ("min_words", "max_words", "min_stop_words"))
        if self.min_words is not None and self.max_words is not None and self.max_words < self.min_words:
            raise SpecError(f"{s}: max_words ({self.max_words}) must be >= min_words ({self.min_words})")
        lo, hi = self.min_mean_word_length, self.max_mean_word_length
        if lo is not None and hi is not None and hi < lo:
            raise SpecError(f"{s}: max_mean_word_length ({hi}) must be >= min_mean_word_length ({lo})")
        check_fractions(s, self, ("max_bullet_lines", "max_ellipsis_lines", "min_alpha_words"))
        check_non_negative(s, self, ("max_hash_ratio", "max_ellipsis_ratio"))
        check_single_chars(s, "bullet_chars", self.bullet_chars, non_empty=False)
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
    compute = Compute(kind="actor")   # setup() loads state once per actor

    _chars: CharTable | None = None          # set in setup()
    _stop_hashes: dict[str, np.ndarray]

    def setup(self) -> None:
        self._chars = char_table()
        self._stop_hashes = {}

    def _dt_words(self) -> DT.Words:
        if getattr(self, "_words", None) is None:
            self._words = DT.Words()
        return self._words

    def _stop_words(self, lang: L.Language | None) -> frozenset[str] | None:
        if lang is None:
            return None
        if lang.code == "en":
            return frozenset(w.lower() for w in self.config.stop_words)
        return lang.stop_words

    def _hashes(self, lang: L.Language) -> np.ndarray:
        if lang.code not in self._stop_hashes:
            words = self._stop_words(lang) or ()
            self._stop_hashes[lang.code] = np.array(
                sorted({string_span_hash(w) for w in words if len(w) <= MAX_STOP_WORD_LEN}), dtype=np.uint64)
        return self._stop_hashes[lang.code]

    def keep(self, batch: pa.Table):
        cfg: GopherQualityConfig = self.config
        self.ensure_setup()
        texts = text_list(batch)
        langs = L.languages_of(L.document_languages(batch, cfg.default_language))
        if cfg.reference == "datatrove":
            words = self._dt_words()
            return DT.run_per_document(
                texts, langs, lambda t, lang: DT.gopher_quality(t, words.words(t, lang), cfg, self._stop_words(lang)))
        n = len(texts)
        by_chars = np.array([x is not None and x.by_chars for x in langs], dtype=bool)
        toks = tokenize(texts, self._chars, by_chars)
        core_start, core_len, has_alpha = toks.cores()
        is_word = core_len > 0
        n_words = toks.count(is_word)
        safe_words = np.maximum(n_words, 1)
        mean_len = toks.total(core_len.astype(np.float64), is_word) / safe_words

        fails: list[tuple] = []
        wc_fail = np.zeros(n, dtype=bool)
        if cfg.min_words is not None:
            wc_fail |= n_words < cfg.min_words
        if cfg.max_words is not None:
            wc_fail |= n_words > cfg.max_words
        fails.append(("word_count", wc_fail, n_words))

        if cfg.min_mean_word_length is not None or cfg.max_mean_word_length is not None:
            ml_fail = np.zeros(n, dtype=bool)
            if cfg.min_mean_word_length is not None:
                ml_fail |= mean_len < cfg.min_mean_word_length
            if cfg.max_mean_word_length is not None:
                ml_fail |= mean_len > cfg.max_mean_word_length
            fails.append(("mean_word_length", ml_fail & (n_words > 0), mean_len, by_chars))

        if cfg.max_hash_ratio is not None:
            r = py_counts(texts, lambda t: t.count("#")) / safe_words
            fails.append(("hash_ratio", r > cfg.max_hash_ratio, r))
        if cfg.max_ellipsis_ratio is not None:
            r = py_counts(texts, lambda t: t.count("...") + t.count("\u2026")) / safe_words
            fails.append(("ellipsis_ratio", r > cfg.max_ellipsis_ratio, r))

        if cfg.max_bullet_lines is not None or cfg.max_ellipsis_lines is not None:
            fails.extend(self._line_rules(texts))

        if cfg.min_alpha_words is not None:
            r = toks.count(has_alpha & is_word) / safe_words
            fails.append(("alpha_words", (r < cfg.min_alpha_words) & (n_words > 0), r))

        if cfg.min_stop_words is not None:
            c, unknown = self._count_stop_words(toks, langs, core_start, core_len, is_word)
            fails.append(("stop_words", c < cfg.min_stop_words, c, unknown))

        return first_failure(fails, n)

    def _line_rules(self, texts: list[str]) -> list[tuple]:
        cfg: GopherQualityConfig = self.config
        n = len(texts)
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
        out = []
        if cfg.max_bullet_lines is not None:
            r = n_bullet / safe_lines
            out.append(("bullet_lines", r > cfg.max_bullet_lines, r))
        if cfg.max_ellipsis_lines is not None:
            r = n_ell / safe_lines
            out.append(("ellipsis_lines", r > cfg.max_ellipsis_lines, r))
        return out

    def _count_stop_words(self, toks: Tokens, langs: list[L.Language | None], core_start: np.ndarray,
                          core_len: np.ndarray, is_word: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per document: stop-word occurrences of its language, and whether its language
        has no list. A word matches when its lower-cased core hashes to a stop word of the
        document's language (the language index is mixed into the hash)."""
        n = len(langs)
        codes = sorted({x.code for x in langs if x is not None and self._stop_words(x)})
        index = {c: i + 1 for i, c in enumerate(codes)}
        doc_lang = np.array([index.get(x.code, 0) if x is not None else 0 for x in langs], dtype=np.uint64)
        unknown = doc_lang == 0
        if not codes:
            return np.zeros(n, dtype=np.int64), unknown
        by_code = {x.code: x for x in langs if x is not None}
        table = np.concatenate([self._hashes(by_code[c]) ^ mix64(np.full(1, index[c], dtype=np.uint64))
                                for c in codes])
        max_len = min(MAX_STOP_WORD_LEN, max(max(map(len, self._stop_words(by_code[c]))) for c in codes))
        cand = is_word & (core_len <= max_len) & ~unknown[toks.doc]
        h = toks.span_hashes(core_start[cand], core_len[cand], self._chars, max_len)
        h ^= mix64(doc_lang[toks.doc[cand]])
        hit = np.zeros(len(cand), dtype=bool)
        hit[cand] = np.isin(h, table)
        return toks.count(hit), unknown
