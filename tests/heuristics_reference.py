"""Plain per-document Python versions of the heuristic filters: the test oracle.

These are the readable statement of each rule (one document at a time, the way datatrove
writes them) and the yardstick for the vectorised stages: the unit tests
(``tests/unit/test_heuristics.py``) check that both give the same verdict on real text,
and ``bench/filters.py`` times the stages against these loops. Production code never
imports this module.

Each function takes one text and the stage's config and returns ``(rule, value)`` for
the first failing rule, or ``None`` when the document is kept (``c4`` also returns the
cleaned text).
"""

from __future__ import annotations

import re
from collections import Counter

from stages.heuristics.grouping import repeated_items as _duplicates
from stages.heuristics.words import EDGE_PY
from stages.heuristics.c4 import C4Config
from stages.heuristics.fineweb import FineWebConfig
from stages.heuristics.gopher_quality import GopherQualityConfig
from stages.heuristics.gopher_repetition import GopherRepetitionConfig

Verdict = tuple[str, float] | None

_CITATION = re.compile(r"\[\d*\]|\[edit\]|\[citation needed\]")
_SENTENCE_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*(?:\s|$)")


def gopher_quality(text: str, cfg: GopherQualityConfig) -> Verdict:
    cores = [EDGE_PY.sub("", t) for t in text.split()]
    words = [c for c in cores if c]
    n = len(words)
    safe = max(n, 1)
    if (cfg.min_words is not None and n < cfg.min_words) or (cfg.max_words is not None and n > cfg.max_words):
        return "word_count", n
    if n:
        mean = sum(len(w) for w in words) / n
        if ((cfg.min_mean_word_length is not None and mean < cfg.min_mean_word_length)
                or (cfg.max_mean_word_length is not None and mean > cfg.max_mean_word_length)):
            return "mean_word_length", mean
    if cfg.max_hash_ratio is not None and text.count("#") / safe > cfg.max_hash_ratio:
        return "hash_ratio", text.count("#") / safe
    if cfg.max_ellipsis_ratio is not None:
        r = (text.count("...") + text.count("…")) / safe
        if r > cfg.max_ellipsis_ratio:
            return "ellipsis_ratio", r
    lines = text.splitlines()
    n_lines = max(len(lines), 1)
    if cfg.max_bullet_lines is not None:
        r = sum(line.lstrip().startswith(tuple(cfg.bullet_chars)) for line in lines) / n_lines
        if r > cfg.max_bullet_lines:
            return "bullet_lines", r
    if cfg.max_ellipsis_lines is not None:
        r = sum(line.rstrip().endswith(("...", "…")) for line in lines) / n_lines
        if r > cfg.max_ellipsis_lines:
            return "ellipsis_lines", r
    if cfg.min_alpha_words is not None and n:
        r = sum(any(ch.isalpha() for ch in w) for w in words) / n
        if r < cfg.min_alpha_words:
            return "alpha_words", r
    if cfg.min_stop_words is not None:
        stop = set(cfg.stop_words)
        c = sum(w.lower() in stop for w in words)
        if c < cfg.min_stop_words:
            return "stop_words", c
    return None


def gopher_repetition(text: str, cfg: GopherRepetitionConfig) -> Verdict:
    total = max(len(text), 1)
    paras, run = [], []
    for line in text.splitlines() + [""]:
        line = line.strip()
        if line:
            run.append(line)
        elif run:
            paras.append("\n".join(run))
            run = []
    count, chars = _duplicates(paras)
    if cfg.max_dup_para_frac is not None and count / max(len(paras), 1) > cfg.max_dup_para_frac:
        return "dup_para_frac", count / max(len(paras), 1)
    if cfg.max_dup_para_char_frac is not None and chars / total > cfg.max_dup_para_char_frac:
        return "dup_para_char_frac", chars / total
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    count, chars = _duplicates(lines)
    if cfg.max_dup_line_frac is not None and count / max(len(lines), 1) > cfg.max_dup_line_frac:
        return "dup_line_frac", count / max(len(lines), 1)
    if cfg.max_dup_line_char_frac is not None and chars / total > cfg.max_dup_line_char_frac:
        return "dup_line_char_frac", chars / total
    words = text.split()
    for n, limit in sorted(dict(cfg.top_ngram_char_frac).items()):
        grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
        if not grams:
            continue
        gram, c = Counter(grams).most_common(1)[0]
        r = len(" ".join(gram)) * c / total
        if r > limit:
            return f"top_{n}gram_char_frac", r
    for n, limit in sorted(dict(cfg.dup_ngram_char_frac).items()):
        seen: set[tuple[str, ...]] = set()
        covered = [False] * len(words)
        for i in range(len(words) - n + 1):
            gram = tuple(words[i:i + n])
            if gram in seen:
                for j in range(i, i + n):
                    covered[j] = True
            else:
                seen.add(gram)
        r = sum(len(w) for w, c in zip(words, covered) if c) / total
        if r > limit:
            return f"dup_{n}gram_char_frac", r
    return None


def fineweb(text: str, cfg: FineWebConfig) -> Verdict:
    lines = [line.rstrip() for line in text.split("\n")]
    if cfg.skip_blank_lines:
        lines = [line for line in lines if line.strip()]
    if not lines:
        return "empty", 0
    n = len(lines)
    if cfg.min_line_punct_ratio is not None:
        r = sum(line.endswith(tuple(cfg.terminal_punctuation)) for line in lines) / n
        if r <= cfg.min_line_punct_ratio:
            return "line_punct_ratio", r
    if cfg.max_short_line_ratio is not None:
        r = sum(len(line) <= cfg.short_line_length for line in lines) / n
        if r >= cfg.max_short_line_ratio:
            return "short_line_ratio", r
    if cfg.max_char_dup_ratio is not None:
        _, chars = _duplicates([line.strip() for line in lines])
        r = chars / max(len(text) - text.count("\n"), 1)
        if r >= cfg.max_char_dup_ratio:
            return "char_dup_ratio", r
    if cfg.max_list_ratio is not None:
        r = text.count("\n") / max(len(text.split()), 1)
        if r > cfg.max_list_ratio:
            return "list_ratio", r
    return None


def c4_bad_words_regex(words: list[str]) -> re.Pattern:
    alternation = "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))
    return re.compile(r"(?:^|[\W_])(" + alternation + r")(?:[\W_]|$)")


def c4(text: str, cfg: C4Config, bad_words: re.Pattern | None = None) -> tuple[Verdict, str]:
    """``(verdict, cleaned_text)``, as TensorFlow Datasets' ``clean_page`` + bad-words filter."""
    policies = tuple(p.lower() for p in cfg.policy_substrings)
    kept: list[str] = []
    sentences = 0
    for line in text.splitlines():
        line = line.strip()
        if cfg.max_word_length is not None and any(len(w) > cfg.max_word_length for w in line.split()):
            continue
        if cfg.remove_citations:
            line = _CITATION.sub("", line)
        if cfg.require_terminal_punct and (not line.endswith(tuple(cfg.terminal_punctuation)) or line.endswith("...")):
            continue
        if cfg.min_words_per_line is not None and len(line.split()) < cfg.min_words_per_line:
            continue
        low = line.lower()
        if cfg.filter_lorem_ipsum and "lorem ipsum" in low:
            return ("lorem_ipsum", 0), text
        if cfg.filter_javascript and "javascript" in low:
            continue
        if cfg.filter_curly_bracket and "{" in line:
            return ("curly_bracket", 0), text
        if cfg.filter_policy and any(p in low for p in policies):
            continue
        sentences += max(1, len(_SENTENCE_END.findall(line)))
        kept.append(line)
    if cfg.min_sentences is not None and sentences < cfg.min_sentences:
        return ("too_few_sentences", sentences), text
    cleaned = "\n".join(kept).strip()
    if bad_words is not None:
        m = bad_words.search(cleaned.lower())
        if m:
            return ("bad_words", 0), text
    return None, cleaned
