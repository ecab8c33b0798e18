"""C4 cleaning (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a
Unified Text-to-Text Transformer", section 2.2; reference code: TensorFlow Datasets
``c4_utils.clean_page`` and ``get_badwords_filter_fn``).

Line-level cleaning rewrites the text: each line (stripped) is removed, in this order,
when it has a word longer than ``max_word_length`` (1000), does not end in terminal
punctuation (``. ? ! "``) or ends in an ellipsis, has fewer than
``min_words_per_line`` (5) words, or mentions "javascript", or contains a policy
boilerplate phrase ("terms of use", "privacy policy", "cookie policy", "uses cookies",
"use of cookies", "use cookies"). Citation markers (``[1]``, ``[edit]``,
``[citation needed]``) are removed from lines first. Counters per document:
``lines_removed`` and one ``lines_<rule>`` per line rule, ``citations_removed``.

Document rules (``c4:<rule>``), in the reference code's order:

* ``lorem_ipsum`` – a line that survived the first three line rules contains "lorem
  ipsum" (checked before the javascript rule, like the reference);
* ``curly_bracket`` – such a line (not removed for javascript) contains ``{``;
* ``too_few_sentences`` – the kept lines hold fewer than ``min_sentences`` (3)
  sentences;
* ``bad_words`` – the cleaned text contains a listed word flanked by non-word
  characters (case insensitive; no flanking needed for Chinese, Japanese, Thai with
  per-language lists, as in mC4); detail = the word. No list ships with datapipe: with
  ``bad_words_path`` (one word or phrase per line) that list judges every language; else
  with ``bad_words_dir`` (a folder of per-language lists named by language code, as in
  the LDNOOBW repository: ``de``, ``fr``, ``en``, ...) each document is judged by its
  language's list; with neither the rule does not run and counts nothing.

Languages (:mod:`stages.heuristics.languages`, ``language`` column else ``default_language``): a line
ends in terminal punctuation when its last character is one of ``terminal_punctuation``
or of its language's own marks (``。！？`` ...); sentences also end at those marks; words
of languages written without spaces are characters. A document whose language has no
known sentence marks (Thai, Lao, unknown, none) keeps its lines regardless of their last
character (counted ``no_terminal_punct_unsupported_language``); one whose language has
no file in ``bad_words_dir`` is not judged by that rule (``bad_words_unsupported_language``).
``reference: datatrove`` reproduces datatrove's ``C4QualityFilter`` and
``C4BadWordsFilter`` (differences in ``docs/filters.md``).

The paper states the thresholds as "at least 5 words" per line and "fewer than 3
sentences"; the reference code agrees (datatrove's ``C4QualityFilter`` defaults to 3 and
5, the FineWeb variant). Sentences are counted with a regular expression (runs of
``. ! ?`` followed by a space or the end of the line, at least one per kept line)
instead of NLTK's punkt tokenizer.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe.errors import SpecError
from datapipe.stage import StageConfig
from stages.heuristics import datatrove_mode as DT
from stages.heuristics import languages as L
from stages.heuristics.byte_counts import count_words
from stages.heuristics.columns import as_bool, as_int, lengths, text_list
from stages.heuristics.pieces import Pieces, split_lines_py
from stages.heuristics.words import WS_CLASS
from datapipe.stage import Compute, Rewrite, RewriteFilterStage
from stages.heuristics.fineweb import line_ends
from stages.heuristics.config_checks import check_non_negative, check_reference, check_single_chars

log = logging.getLogger(__name__)

C4_END_MARKS = (".", "?", "!", '"')
C4_POLICY_SUBSTRINGS = ("terms of use", "privacy policy", "cookie policy", "uses cookies",
                        "use of cookies", "use cookies")
CITATION_RE2 = r"\[\d*\]|\[edit\]|\[citation needed\]"
SENTENCE_END_RE2 = (r"[.!?]+[\"'\x{201d}\x{2019})\]]*(?:[" + WS_CLASS + r"]|$)"
                    r"|[\x{3002}\x{ff01}\x{ff1f}\x{ff61}\x{0964}\x{0965}\x{061f}\x{06d4}\x{0589}\x{1362}\x{104b}\x{17d4}]+")
LINE_RULES = ("too_long_word", "no_terminal_punct", "too_few_words", "javascript", "policy")


@dataclass(kw_only=True, frozen=True)
class C4Config(StageConfig):
    min_words_per_line: int | None = 5
    min_sentences: int | None = 3
    max_word_length: int | None = 1000
    require_terminal_punct: bool = True
    terminal_punctuation: tuple[str, ...] = C4_END_MARKS
    remove_citations: bool = True
    filter_javascript: bool = True
    filter_policy: bool = True
    policy_substrings: tuple[str, ...] = C4_POLICY_SUBSTRINGS
    filter_lorem_ipsum: bool = True
    filter_curly_bracket: bool = True
    #: folder of per-language word lists named by language code (LDNOOBW layout)
    bad_words_dir: str | None = None
    #: one word list (a word or phrase per line) for every language; wins over bad_words_dir
    bad_words_path: str | None = None
    #: language of documents when the batch has no ``language`` column (null: unknown)
    default_language: str | None = "en"
    #: "paper" (the published rules) or "datatrove" (datatrove's implementation)
    reference: str = "paper"

    def __post_init__(self) -> None:
        s = "c4"
        check_reference(s, self.reference)
        check_non_negative(s, self, ("min_words_per_line", "min_sentences", "max_word_length"))
        if self.require_terminal_punct:
            check_single_chars(s, "terminal_punctuation", self.terminal_punctuation)
        if self.filter_policy and not self.policy_substrings:
            raise SpecError(f"{s}: policy_substrings is empty; list phrases or set filter_policy: false")
        if self.bad_words_path is not None and not os.path.isfile(self.bad_words_path):
            raise SpecError(f"{s}: bad_words_path {self.bad_words_path!r} is not a file; give the path of "
                            "a word list such as {shared}/lists/ldnoobw.txt, or null to disable")
        if self.bad_words_dir is not None and not os.path.isdir(self.bad_words_dir):
            raise SpecError(f"{s}: bad_words_dir {self.bad_words_dir!r} is not a directory; clone LDNOOBW "
                            "and point bad_words_dir at it, or use bad_words_path for one list")

    @property
    def judges_bad_words(self) -> bool:
        """Whether the bad-words rule runs (a list file or a folder of lists is configured)."""
        return self.bad_words_path is not None or self.bad_words_dir is not None


def _alternation(strings: list[str]) -> str:
    """An RE2 alternation of literal ``strings`` (longest first)."""
    return "|".join(re.escape(s) for s in sorted(set(strings), key=len, reverse=True))


def load_bad_words(path: str) -> list[str]:
    """Words/phrases of a LDNOOBW-style list: one per line, blank lines ignored, lower-cased."""
    with open(path, encoding="utf-8") as f:
        words = {line.strip().lower() for line in f}
    words.discard("")
    return sorted(words)


def bad_words_pattern(words: list[str], bounded: bool = True) -> str:
    """RE2 pattern: any listed word flanked by non-word characters or text ends (unless
    ``bounded`` is false: languages written without spaces), ignoring case; the word is
    capture group ``w``."""
    if not bounded:
        return r"(?i)(?P<w>" + _alternation(words) + r")"
    return r"(?i)(?:^|[^\p{L}\p{N}_])(?P<w>" + _alternation(words) + r")(?:[^\p{L}\p{N}_]|$)"


def _too_long_word(s: pa.Array, max_len: int | None) -> np.ndarray:
    """Lines with a word longer than ``max_len``: only lines that long can have one."""
    out = np.zeros(len(s), dtype=bool)
    if max_len is not None and len(s):
        cand = np.flatnonzero(lengths(s) > max_len)
        if len(cand):
            vals = s.take(pa.array(cand)).to_pylist()
            out[cand] = [max(map(len, v.split()), default=0) > max_len for v in vals]
    return out


def _remove_citations(s: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Lines without citation markers, and the markers removed from each line (citations
    come out of every line before the next rules look at it, as in the reference)."""
    citations = np.zeros(len(s), dtype=np.int64)
    if not len(s):
        return s, citations
    has_bracket = np.flatnonzero(as_bool(pc.match_substring(s, "[")))
    if len(has_bracket):
        sub = s.take(pa.array(has_bracket))
        found = as_int(pc.count_substring_regex(sub, CITATION_RE2))
        if found.any():
            citations[has_bracket] = found
            cleaned_sub = pc.replace_substring_regex(sub, CITATION_RE2, "").to_pylist()
            vals = s.to_pylist()
            for i, v in zip(has_bracket.tolist(), cleaned_sub):
                vals[i] = v
            s = pa.array(vals, pa.string())
    return s, citations


def _no_terminal_punct(lines: Pieces, langs: list, cfg: C4Config) -> tuple[np.ndarray, np.ndarray]:
    """(lines not ending in terminal punctuation or ending in an ellipsis, documents
    whose language has no known sentence marks: their lines are not judged)."""
    no_punct = np.zeros(len(lines), dtype=bool)
    punct_unknown = np.zeros(lines.n_docs, dtype=bool)
    if cfg.require_terminal_punct and len(lines):
        ends, punct_unknown = line_ends(lines, langs, tuple(cfg.terminal_punctuation))
        no_punct = (~ends | as_bool(pc.ends_with(lines.values, "..."))) & ~punct_unknown[lines.parent]
    return no_punct, punct_unknown


def _too_few_words(s: pa.Array, parent: np.ndarray, langs: list, running: np.ndarray,
                   min_words: int | None) -> np.ndarray:
    """Lines still ``running`` with fewer than ``min_words`` words (characters for
    languages written without spaces)."""
    few = np.zeros(len(s), dtype=bool)
    if min_words is None or not len(s):
        return few
    live = np.flatnonzero(running)
    if len(live):
        counts = count_words(s.take(pa.array(live)))
        by_chars = np.array([x is not None and x.by_chars for x in langs], dtype=bool)
        for j in np.flatnonzero(by_chars[parent[live]]):
            counts[j] = len(L.segment(s[int(live[j])].as_py()))
        few[live] = counts < min_words
    return few


def _content_rules(s: pa.Array, candidate: np.ndarray, cfg: C4Config) -> tuple[np.ndarray, ...]:
    """(lorem ipsum, javascript, curly bracket, policy) among the ``candidate`` lines; a
    line counts for the first of these that it matches."""
    m = len(s)
    zeros = np.zeros(m, dtype=bool)
    lorem = js = curly = policy = zeros
    ci = np.flatnonzero(candidate)
    if not len(ci):
        return lorem, js, curly, policy
    cs = s.take(pa.array(ci))

    def on_candidates(result: pa.Array) -> np.ndarray:
        out = np.zeros(m, dtype=bool)
        out[ci] = as_bool(result)
        return out

    if cfg.filter_lorem_ipsum:
        lorem = on_candidates(pc.match_substring(cs, "lorem ipsum", ignore_case=True))
    if cfg.filter_javascript:
        js = on_candidates(pc.match_substring(cs, "javascript", ignore_case=True)) & ~lorem
    if cfg.filter_curly_bracket:
        curly = on_candidates(pc.match_substring(cs, "{")) & ~lorem & ~js
    if cfg.filter_policy:
        pat = _alternation([p.lower() for p in cfg.policy_substrings])
        policy = on_candidates(pc.match_substring_regex(cs, pat, ignore_case=True)) & ~lorem & ~js & ~curly
    return lorem, js, curly, policy


def _first_offending_line(lorem: np.ndarray, curly: np.ndarray, parent: np.ndarray,
                          n: int) -> tuple[np.ndarray, list[str | None]]:
    """(keep, reasons) from the document rules decided by one line: the first offending
    line of a document names the reason."""
    keep = np.ones(n, dtype=bool)
    reasons: list[str | None] = [None] * n
    doc_line = lorem | curly
    if doc_line.any():
        idx = np.flatnonzero(doc_line)
        docs, first = np.unique(parent[idx], return_index=True)
        for d, li in zip(docs.tolist(), idx[first].tolist()):
            keep[d] = False
            reasons[d] = "lorem_ipsum" if lorem[li] else "curly_bracket"
    return keep, reasons


def _too_few_sentences(kept: Pieces, min_sentences: int, keep: np.ndarray, reasons: list) -> None:
    """Drop (in place) kept documents whose kept lines hold fewer than ``min_sentences``
    sentences (at least one per kept line)."""
    per_line = (np.maximum(as_int(pc.count_substring_regex(kept.values, SENTENCE_END_RE2)), 1)
                if len(kept) else np.zeros(0, dtype=np.int64))
    sentences = kept.total(per_line.astype(np.float64)).astype(np.int64)
    few = keep & (sentences < min_sentences)
    for d in np.flatnonzero(few):
        reasons[d] = f"too_few_sentences|{sentences[d]}"
    keep &= ~few


class C4(RewriteFilterStage):
    """C4's line cleaning and document rules; see the module docstring."""

    name = "c4"
    Config = C4Config
    compute = Compute(kind="actor")   # setup() loads state once per actor

    _bad_words_re: str | None = None           # set in setup() when a list file is configured

    def setup(self) -> None:
        self._patterns: dict[str, str | None] = {}
        self._words = None
        if self.config.bad_words_path:
            words = load_bad_words(self.config.bad_words_path)
            self._bad_words_re = bad_words_pattern(words) if words else None
            log.info("c4: %d bad words from %s", len(words), self.config.bad_words_path)

    def _pattern(self, lang: L.Language | None) -> str | None:
        """The bad-words pattern for documents of ``lang`` (None: no list)."""
        if self._bad_words_re is not None or self.config.bad_words_path:
            return self._bad_words_re
        if lang is None:
            return None
        if lang.code not in self._patterns:
            words = L.bad_words(self.config.bad_words_dir, lang.code)
            self._patterns[lang.code] = (bad_words_pattern(list(words), bounded=not lang.by_chars)
                                         if words else None)
        return self._patterns[lang.code]

    def rewrite(self, batch: pa.Table) -> Rewrite:
        cfg: C4Config = self.config
        self.ensure_setup()
        texts = text_list(batch)
        langs = L.languages_of(L.document_languages(batch, cfg.default_language))
        if cfg.reference == "datatrove":
            return self._datatrove(texts, langs)
        n = len(texts)
        lines = split_lines_py(texts, strip="both")
        parent = lines.parent
        # the line rules in the reference order; each sees the lines still in the running
        too_long = _too_long_word(lines.values, cfg.max_word_length)
        s, citations = (_remove_citations(lines.values) if cfg.remove_citations
                        else (lines.values, np.zeros(len(lines), dtype=np.int64)))
        no_punct, punct_unknown = _no_terminal_punct(Pieces(s, parent, n), langs, cfg)
        few_words = _too_few_words(s, parent, langs, ~too_long & ~no_punct, cfg.min_words_per_line)
        candidate = ~too_long & ~no_punct & ~few_words
        lorem, js, curly, policy = _content_rules(s, candidate, cfg)
        kept_line = candidate & ~lorem & ~js & ~curly & ~policy

        keep, reasons = _first_offending_line(lorem, curly, parent, n)
        kept = Pieces(s, parent, n).select(kept_line)
        if cfg.min_sentences is not None:
            _too_few_sentences(kept, cfg.min_sentences, keep, reasons)
        cleaned = pc.utf8_trim_whitespace(kept.join("\n"))   # blank lines can only be kept with rules off
        no_list = (self._bad_words(cleaned, langs, keep, reasons) if cfg.judges_bad_words
                   else np.zeros(n, dtype=bool))

        changes = {
            "lines_removed": lines.count(~kept_line),
            "lines_too_long_word": lines.count(too_long),
            "lines_no_terminal_punct": lines.count(no_punct & ~too_long),
            "lines_too_few_words": lines.count(few_words & ~no_punct & ~too_long),
            "lines_javascript": lines.count(js),
            "lines_policy": lines.count(policy),
            "citations_removed": lines.total(citations.astype(np.float64), kept_line).astype(np.int64),
        }
        if cfg.require_terminal_punct:
            changes["no_terminal_punct_unsupported_language"] = punct_unknown.astype(np.int64)
        if cfg.judges_bad_words:
            changes["bad_words_unsupported_language"] = no_list.astype(np.int64)
        return Rewrite(texts=cleaned, keep=keep, reasons=reasons, changes=changes)

    def _bad_words(self, cleaned: pa.Array, langs: list, keep: np.ndarray, reasons: list) -> np.ndarray:
        """Drop kept documents with a bad word of their language (in place); returns the
        kept documents that could not be judged (no list for their language)."""
        no_list = np.zeros(len(langs), dtype=bool)
        groups: dict[str, list[int]] = {}
        for d in np.flatnonzero(keep):
            pat = self._pattern(langs[d])
            if pat is None:
                no_list[d] = True
            else:
                groups.setdefault(pat, []).append(int(d))
        for pat, docs in groups.items():
            rows = np.array(docs, dtype=np.int64)
            sub = cleaned.take(pa.array(rows))
            hit = as_bool(pc.match_substring_regex(sub, pat))
            if hit.any():
                found = pc.extract_regex(sub.filter(pa.array(hit)), pat).field("w").to_pylist()
                for d, w in zip(rows[hit].tolist(), found):
                    keep[d] = False
                    reasons[d] = f"bad_words|{w.lower()}"
        return no_list

    def _datatrove(self, texts: list[str], langs: list) -> Rewrite:
        """datatrove's C4QualityFilter then C4BadWordsFilter, one document at a time."""
        cfg: C4Config = self.config
        if self._words is None:
            self._words = DT.Words()
        n = len(texts)
        keep = np.ones(n, dtype=bool)
        reasons: list[str | None] = [None] * n
        out = list(texts)
        unsupported = np.zeros(n, dtype=np.int64)
        no_list = np.zeros(n, dtype=np.int64)
        for i, (text, lang) in enumerate(zip(texts, langs)):
            try:
                verdict, out[i] = DT.c4(text, lang, self._words, cfg)
            except DT.Unsupported:
                unsupported[i] = 1
                continue
            if verdict is not None:
                keep[i], reasons[i] = False, f"{verdict[0]}|{verdict[1]}"
                continue
            if cfg.judges_bad_words:
                rx = DT.bad_words_regex(self._list_file(lang), lang)
                if rx is None:
                    no_list[i] = 1
                elif (m := rx.search(out[i].lower())) is not None:
                    keep[i], reasons[i] = False, f"bad_words|{m.group(m.lastindex or 0).strip()}"
        changes = {"word_tokenizer_unsupported_language": unsupported}
        if cfg.judges_bad_words:
            changes["bad_words_unsupported_language"] = no_list
        return Rewrite(texts=out, keep=keep, reasons=reasons, changes=changes)

    def _list_file(self, lang: L.Language | None) -> str | None:
        """The word list judging documents of ``lang``: ``bad_words_path`` for every
        language, else the language's file in ``bad_words_dir`` (None: no list)."""
        cfg: C4Config = self.config
        if cfg.bad_words_path:
            return cfg.bad_words_path
        if lang is None or cfg.bad_words_dir is None:
            return None
        path = L.bad_words_file(cfg.bad_words_dir, lang.code)
        return str(path) if path is not None else None

