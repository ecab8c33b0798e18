"""``reference: datatrove``: the heuristic filters as datatrove implements them.

datatrove (the library FineWeb and FineWeb-2 were built with) states the same papers'
rules with its own implementation decisions; users who want "FineWeb's filters" need
those decisions, document for document. This module restates them, one document at a
time (written from reading datatrove 0.10's filters; no datatrove code is imported):

* words come from spaCy's rule-based tokenizer for the document's language
  (``spacy.blank(lang)``, what datatrove's ``SpaCyTokenizer`` uses for the languages
  it assigns to spaCy), stripped, empty tokens dropped; sentences from spaCy's
  ``sentencizer``. A language spaCy cannot tokenize without extra packages (Chinese
  needs jieba, Japanese SudachiPy, Thai PyThaiNLP) is not judged: the document passes
  and is counted as ``word_tokenizer_unsupported_language``;
* "symbol words" are tokens made only of datatrove's punctuation characters
  (:data:`PUNCTUATION`), its terminal punctuation is the Unicode sentence terminals of
  :data:`TERMINAL_PUNCTUATION` (both sets copied from datatrove, Apache-2.0);
* line splitting, comparisons and denominators are datatrove's; every place where that
  differs from the default (paper) rules is listed in ``docs/filters.md``.

Rule names are the stages' own (``word_count``, ``line_punct_ratio``, ...), so
reports compare across both references.
"""

from __future__ import annotations

import functools
import logging
import re
from collections import Counter
from typing import Any, Callable, Sequence

import numpy as np

from stages.heuristics import languages as L
from stages.heuristics.grouping import repeated_items as _duplicates

log = logging.getLogger(__name__)

#: datatrove's ``PUNCTUATION`` (utils/text.py): visible marks plus C0/C1 controls but tab/newline
PUNCTUATION = ('!/—”:％１〈&(、━\\【#%「」，】；+^]~“《„\';’{|∶´[=-`*．（–？！：$～«〉,><》)?）。…@_."}►»'
               + "".join(chr(x) for a, b in ((0, 9), (11, 13), (13, 32), (127, 160)) for x in range(a, b)))
#: datatrove's ``TERMINAL_PUNCTUATION`` (Unicode sentence terminals of its Unicode version)
TERMINAL_PUNCTUATION = frozenset("!.?։؝؞؟۔܀܁܂߹࠷࠹࠽࠾।॥၊။።፧፨᙮᜵᜶។៕៖៙៚᠃᠉᥄᥅᪨᪩᪪᪫᭚᭛᭞᭟᭽᭾᰻᰼᱾᱿‼‽⁇⁈⁉⸮⸼⹓⹔。꓿꘎꘏꛳꛷꡶꡷꣎꣏꤯꧈꧉꩝꩞꩟꫰꫱꯫﹒﹖﹗！．？｡\U00010a56\U00010a57\U00010f55\U00010f56\U00010f57\U00010f58\U00010f59\U00010f86\U00010f87\U00010f88\U00010f89\U00011047\U00011048\U000110be\U000110bf\U000110c0\U000110c1\U00011141\U00011142\U00011143\U000111c5\U000111c6\U000111cd\U000111de\U000111df\U00011238\U00011239\U0001123b\U0001123c\U000112a9\U0001144b\U0001144c\U000115c2\U000115c3\U000115c9\U000115ca\U000115cb\U000115cc\U000115cd\U000115ce\U000115cf\U000115d0\U000115d1\U000115d2\U000115d3\U000115d4\U000115d5\U000115d6\U000115d7\U00011641\U00011642\U0001173c\U0001173d\U0001173e\U00011944\U00011946\U00011a42\U00011a43\U00011a9b\U00011a9c\U00011c41\U00011c42\U00011ef7\U00011ef8\U00011f43\U00011f44\U00016a6e\U00016a6f\U00016af5\U00016b37\U00016b38\U00016b44\U00016e98\U0001bc9f\U0001da88")
PUNCTUATION_SET = frozenset(PUNCTUATION) | TERMINAL_PUNCTUATION

#: datatrove's C4 end marks (it adds the apostrophe to TFDS's)
C4_END_PUNCTUATION = (".", "?", "!", '"', "'")
_CITATION = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
#: datatrove's bad-words allowlist (applied to every language's list, as it does)
_BADWORDS_ALLOWLIST = {"sm", "グロ", "女の子", "性"}
_NO_BOUNDARY_BADWORDS = ("ja", "th", "zh")
#: spaCy language codes where they differ from the ISO 639-1 code langid gives
_SPACY_CODE = {"no": "nb"}
#: languages datatrove tokenizes with something spaCy's blank pipeline alone cannot do
_NEEDS_EXTRA = frozenset({"zh", "ja", "th", "ko", "vi", "lo", "km", "my", "bo"})

Verdict = tuple[str, float] | None


class Unsupported(Exception):
    """The document's language has no tokenizer here; the rule cannot judge it."""


class Words:
    """spaCy tokenizers and sentencizers per language, loaded on first use."""

    def __init__(self) -> None:
        self._nlp: dict[str, Any] = {}

    def _pipeline(self, lang: L.Language | None):
        if lang is None or lang.code in _NEEDS_EXTRA:
            raise Unsupported()
        code = _SPACY_CODE.get(lang.code, lang.code)
        if code not in self._nlp:
            try:
                import spacy
            except ImportError as e:  # pragma: no cover - depends on the install
                raise ImportError("reference: datatrove needs spaCy: pip install 'datapipe[reference]'") from e
            try:
                nlp = spacy.blank(code)
            except Exception:  # spaCy has no rules for this language
                nlp = None
            if nlp is not None:
                nlp.add_pipe("sentencizer")
            self._nlp[code] = nlp
        if self._nlp[code] is None:
            raise Unsupported()
        return self._nlp[code]

    def _doc(self, text: str, lang: L.Language | None):
        nlp = self._pipeline(lang)
        nlp.max_length = len(text) + 10
        try:
            return nlp(text)
        except Exception:
            if "IS_ALPHA" in text:      # the string that breaks spaCy's tokenizer; datatrove drops it
                return nlp(text.replace("IS_ALPHA", ""))
            raise

    def words(self, text: str, lang: L.Language | None) -> list[str]:
        return [t for t in (tok.text.strip() for tok in self._doc(text, lang)) if t]

    def sentences(self, text: str, lang: L.Language | None) -> int:
        """How many parts datatrove's ``split_into_sentences`` cuts text into."""
        return max(len(list(self._doc(text, lang).sents)), 1)


def run_per_document(texts: Sequence[str], langs: Sequence[L.Language | None],
                     rule: Callable[[str, L.Language | None], Verdict]):
    """Keep mask, reasons and counters of a per-document rule (FilterStage.keep's result)."""
    n = len(texts)
    keep = np.ones(n, dtype=bool)
    reasons: list[str | None] = [None] * n
    unsupported = np.zeros(n, dtype=np.int64)
    for i, (text, lang) in enumerate(zip(texts, langs)):
        try:
            verdict = rule(text, lang)
        except Unsupported:
            unsupported[i] = 1
            continue
        if verdict is not None:
            keep[i] = False
            reasons[i] = f"{verdict[0]}|{_fmt(verdict[1])}"
    return keep, reasons, {"word_tokenizer_unsupported_language": unsupported}


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{float(v):.4g}"


def gopher_quality(text: str, words: list[str], cfg, stop_words: frozenset[str] | None) -> Verdict:
    """datatrove's GopherQualityFilter: word counts and lengths over non-symbol tokens;
    ratios over all tokens; stop words as *distinct* exact (case-sensitive) tokens."""
    n = len(words)
    safe = max(n, 1)
    non_symbol = [w for w in words if any(ch not in PUNCTUATION_SET for ch in w)]
    k = len(non_symbol)
    if (cfg.min_words and k < cfg.min_words) or (cfg.max_words and k > cfg.max_words):
        return "word_count", k
    if k:
        mean = sum(len(w) for w in non_symbol) / k
        if (cfg.min_mean_word_length and mean < cfg.min_mean_word_length) or (
                cfg.max_mean_word_length and mean > cfg.max_mean_word_length):
            return "mean_word_length", mean
    if cfg.max_hash_ratio and text.count("#") / safe > cfg.max_hash_ratio:
        return "hash_ratio", text.count("#") / safe
    if cfg.max_ellipsis_ratio and (text.count("...") + text.count("…")) / safe > cfg.max_ellipsis_ratio:
        return "ellipsis_ratio", (text.count("...") + text.count("…")) / safe
    lines = text.splitlines()
    n_lines = max(len(lines), 1)
    if cfg.max_bullet_lines:
        r = sum(x.lstrip().startswith(tuple(cfg.bullet_chars)) for x in lines) / n_lines
        if r > cfg.max_bullet_lines:
            return "bullet_lines", r
    if cfg.max_ellipsis_lines:
        r = sum(x.rstrip().endswith(("...", "…")) for x in lines) / n_lines
        if r > cfg.max_ellipsis_lines:
            return "ellipsis_lines", r
    if cfg.min_alpha_words:
        r = sum(any(c.isalpha() for c in w) for w in words) / safe
        if r < cfg.min_alpha_words:
            return "alpha_words", r
    if cfg.min_stop_words:
        if not stop_words:
            raise Unsupported()
        c = len(stop_words.intersection(words))
        if c < cfg.min_stop_words:
            return "stop_words", c
    return None


def _skip_ahead_duplicates(words: list[str], n: int) -> int:
    """Characters of repeated n-grams (words concatenated), jumping past each repeat."""
    seen: set[str] = set()
    chars = i = 0
    while i < len(words) - n + 1:
        gram = "".join(words[i:i + n])
        if gram in seen:
            chars += len(gram)
            i += n
        else:
            seen.add(gram)
            i += 1
    return chars


_PARAGRAPHS = re.compile(r"\n{2,}")
_LINES = re.compile("\n+")


def gopher_repetition(text: str, words: list[str], cfg) -> Verdict:
    """datatrove's GopherRepetitionFilter: paragraphs split on 2+ newlines of the stripped
    text and lines on newline runs, both compared unstripped; n-grams over tokens."""
    total = max(len(text), 1)
    paras = _PARAGRAPHS.split(text.strip())
    count, chars = _duplicates(paras)
    if cfg.max_dup_para_frac and count / len(paras) > cfg.max_dup_para_frac:
        return "dup_para_frac", count / len(paras)
    if cfg.max_dup_para_char_frac and chars / total > cfg.max_dup_para_char_frac:
        return "dup_para_char_frac", chars / total
    lines = _LINES.split(text)
    count, chars = _duplicates(lines)
    if cfg.max_dup_line_frac and count / len(lines) > cfg.max_dup_line_frac:
        return "dup_line_frac", count / len(lines)
    if cfg.max_dup_line_char_frac and chars / total > cfg.max_dup_line_char_frac:
        return "dup_line_char_frac", chars / total
    for n, limit in dict(cfg.top_ngram_char_frac).items():
        grams = [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]
        if not grams:
            continue
        gram, c = Counter(grams).most_common(1)[0]
        if len(gram) * c / total > limit:
            return f"top_{n}gram_char_frac", len(gram) * c / total
    for n, limit in dict(cfg.dup_ngram_char_frac).items():
        r = _skip_ahead_duplicates(words, n) / total
        if r > limit:
            return f"dup_{n}gram_char_frac", r
    return None


def fineweb(text: str, words_of: Callable[[], list[str]], cfg, stop_chars: tuple[str, ...]) -> Verdict:
    """datatrove's FineWebQualityFilter: lines split on ``\\n`` and kept unstripped (a
    trailing ``\\r`` or space hides the last mark), strict comparisons."""
    lines = [x for x in text.split("\n") if x.strip() != ""]
    if not lines:
        return "empty", 0
    n = len(lines)
    if cfg.min_line_punct_ratio is not None:
        r = sum(1 for x in lines if x.endswith(stop_chars)) / n
        if r < cfg.min_line_punct_ratio:
            return "line_punct_ratio", r
    if cfg.max_short_line_ratio is not None:
        r = sum(1 for x in lines if len(x) <= cfg.short_line_length) / n
        if r > cfg.max_short_line_ratio:
            return "short_line_ratio", r
    if cfg.max_char_dup_ratio is not None:
        r = _duplicates(lines)[1] / max(len(text.replace("\n", "")), 1)
        if r > cfg.max_char_dup_ratio:
            return "char_dup_ratio", r
    if cfg.max_list_ratio is not None:
        r = text.count("\n") / max(len(words_of()), 1)
        if r > cfg.max_list_ratio:
            return "list_ratio", r
    return None


def c4(text: str, lang: L.Language | None, words: Words, cfg) -> tuple[Verdict, str]:
    """datatrove's C4QualityFilter: ``(verdict, cleaned text)``. Words per line are
    counted before citations are cut; sentences are spaCy sentencizer sentences."""
    end_marks = tuple(cfg.terminal_punctuation)
    kept: list[str] = []
    sentences = 0
    for line in text.splitlines():
        line = line.strip()
        line_words = line.split()
        if cfg.max_word_length is not None and any(len(w) > cfg.max_word_length for w in line_words):
            continue
        if cfg.remove_citations:
            line = _CITATION.sub("", line)
        if cfg.require_terminal_punct and (not line.endswith(end_marks) or line.endswith("...")):
            continue
        if cfg.min_words_per_line is not None and len(line_words) < cfg.min_words_per_line:
            continue
        low = line.lower()
        if cfg.filter_lorem_ipsum and "lorem ipsum" in low:
            return ("lorem_ipsum", 0), text
        if cfg.filter_javascript and "javascript" in low:
            continue
        if cfg.filter_curly_bracket and "{" in line:
            return ("curly_bracket", 0), text
        if cfg.filter_policy and any(p in low for p in cfg.policy_substrings):
            continue
        if cfg.min_sentences is not None:
            sentences += words.sentences(line, lang)
        kept.append(line)
    if cfg.min_sentences is not None and sentences < cfg.min_sentences:
        return ("too_few_sentences", sentences), text
    return None, "\n".join(kept).strip()


def bad_words_regex(path: str | None, lang: L.Language | None) -> re.Pattern | None:
    """datatrove's C4BadWordsFilter pattern for the list at ``path`` judging documents of
    ``lang`` (None: no list). Its list entries are not lower-cased while the text is, so
    upper-case entries never match there."""
    if path is None:
        return None
    return _bad_words_regex(path, lang is not None and lang.code in _NO_BOUNDARY_BADWORDS)


@functools.lru_cache(maxsize=None)
def _bad_words_regex(path: str, no_boundary: bool) -> re.Pattern:
    with open(path, encoding="utf-8") as f:
        raw = {line.strip() for line in f}                          # not lower-cased
    words = [re.escape(w) for w in sorted(raw - _BADWORDS_ALLOWLIST)]
    if no_boundary:
        return re.compile("|".join(words))
    return re.compile(r"(?:\W|^)({})(?:\W|$)".format("|".join(words)))
