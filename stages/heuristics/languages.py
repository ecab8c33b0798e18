"""Per-language settings of the heuristic filters.

Every heuristic stage reads the ``language`` column when the batch has one (langid adds
it) and judges each document by its own language's settings; without the column every
document is of the stage's ``default_language`` (English unless configured). What a
language brings:

* **stop words** – English keeps Gopher's eight (the paper's rule); every other
  language uses the list of the ``stopwordsiso`` package (stopwords-iso, MIT; 58
  languages, covering the 20+ most common languages of Common Crawl). Entries that are
  not a single word (phrases, punctuation) are dropped; for languages segmented by
  characters only one-character entries can match a token and only those are kept.
* **segmentation** – Chinese, Japanese, Thai, Lao, Khmer, Myanmar and Tibetan do not
  separate words by spaces: every character of those scripts is a token of its own
  (other runs stay whitespace tokens). A character is not a word, so rules about word
  *length* cannot judge these languages.
* **terminal punctuation** – the stage's configured marks plus the language's own
  (``。！？`` for CJK, ``।॥`` for Devanagari/Bengali, ``؟۔`` for Arabic script, ``;``
  for Greek, closing quotes ``» ” “ ’`` for languages that end quoted sentences with them).
  Thai and Lao have no sentence punctuation: line-punctuation rules cannot judge them.
* **bad words** – not bundled (no PyPI package ships the LDNOOBW lists): the user
  names a folder of per-language lists, one file per language code in the layout of the
  LDNOOBW repository (``de``, ``fr``, ``en``, ...; ``tl`` reads ``fil``, ``nb``/``nn``
  read ``no``). :func:`bad_words_file` finds a language's file, :func:`bad_words` reads
  it (cached per folder and code).

A rule that needs a setting the document's language lacks (or a document without a
language) passes the document and counts it in the stage's counters as
``<rule>_unsupported_language``: never a silent drop.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pyarrow as pa

#: the column langid adds
LANGUAGE_COLUMN = "language"

#: Gopher's English stop words (Rae et al. 2021, appendix A).
GOPHER_STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")

#: Scripts whose words are not separated by spaces; each of their characters is a token.
#: Han (+ extensions, compatibility), CJK punctuation, kana, full/half-width forms, Thai, Lao,
#: Khmer, Myanmar, Tibetan.
CHAR_SCRIPT_RANGES = ((0x0E00, 0x0EFF), (0x0F00, 0x0FFF), (0x1000, 0x109F), (0x1780, 0x17FF),
                      (0x2E80, 0x2FDF), (0x3000, 0x30FF), (0x31F0, 0x31FF), (0x3400, 0x4DBF),
                      (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xFF00, 0xFFEF), (0x20000, 0x3FFFF))
CHAR_CLASS = "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in CHAR_SCRIPT_RANGES)
_SEG_RE = re.compile(f"[{CHAR_CLASS}]|[^\\s{CHAR_CLASS}]+")

CHAR_SEGMENTED = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo"})

_CJK_END = ("。", "！", "？", "｡", "．", "」", "』", "”")
_CLOSING_QUOTES = ("»", "”", "“", "’")
#: extra terminal punctuation per language; () = the language has none (Thai, Lao)
_TERMINAL_EXTRA: dict[str, tuple[str, ...]] = {
    "zh": _CJK_END, "ja": _CJK_END, "ko": _CJK_END[:3],
    "hi": ("।", "॥"), "mr": ("।", "॥"), "ne": ("।", "॥"), "sa": ("।", "॥"), "bn": ("।", "॥"),
    "ar": ("؟", "۔", "؞"), "fa": ("؟", "۔"), "ur": ("؟", "۔"), "ps": ("؟", "۔"),
    "el": (";",), "hy": ("։", "՜", "՞"), "am": ("።", "፧", "፨"), "my": ("။",), "km": ("។", "៕"),
    "bo": ("།",),
}
#: languages written without sentence punctuation (spaces end sentences)
_NO_SENTENCE_MARKS = frozenset({"th", "lo"})

#: language code -> the LDNOOBW file name that holds its list
_LDNOOBW_ALIASES = {"tl": "fil", "nb": "no", "nn": "no"}

_WORD = re.compile(r"^[^\W_](?:.*[^\W_])?$", re.S)


@dataclass(frozen=True)
class Language:
    """What the filters know about one language (``None`` fields: nothing known)."""

    code: str
    stop_words: frozenset[str] | None
    by_chars: bool
    #: marks added to a stage's terminal punctuation; None: the script has no sentence marks
    terminal_extra: tuple[str, ...] | None


def normalize_code(value: object) -> str | None:
    """``"de"``, ``"DE"``, ``"de-AT"``, ``"zh_Hans"``, ``"__label__de"`` -> ``"de"``;
    empty or null -> None."""
    if value is None:
        return None
    code = str(value).strip().lower()
    if code.startswith("__label__"):
        code = code[len("__label__"):]
    code = re.split(r"[-_]", code, maxsplit=1)[0]
    return code or None


@functools.lru_cache(maxsize=None)
def language(code: str) -> Language:
    """Settings of ``code`` (a normalized ISO 639-1 code)."""
    stop = _stop_words(code)
    if code in _NO_SENTENCE_MARKS or (code not in _TERMINAL_EXTRA and stop is None):
        extra = None                  # no marks, or a language we know nothing about
    else:
        extra = _TERMINAL_EXTRA.get(code, () if code == "en" else _CLOSING_QUOTES)
    return Language(code=code, stop_words=stop, by_chars=code in CHAR_SEGMENTED, terminal_extra=extra)


def terminal_marks(langs: Sequence[Language | None], base: Sequence[str]) -> tuple[dict[tuple[str, ...], list[int]], list[int]]:
    """Documents grouped by their terminal punctuation (``base`` plus their language's
    own marks), and the documents whose language has none we know (not judged)."""
    groups: dict[tuple[str, ...], list[int]] = {}
    unknown: list[int] = []
    for i, lang in enumerate(langs):
        if lang is None or lang.terminal_extra is None:
            unknown.append(i)
            continue
        marks = tuple(sorted(set(base) | set(lang.terminal_extra)))
        groups.setdefault(marks, []).append(i)
    return groups, unknown


def _stop_words(code: str) -> frozenset[str] | None:
    if code == "en":
        return frozenset(GOPHER_STOP_WORDS)
    import stopwordsiso

    if not stopwordsiso.has_lang(code):
        return None
    words = {w.strip().lower() for w in stopwordsiso.stopwords(code)}
    words = {w for w in words if _WORD.match(w) and not any(c.isspace() for c in w)}
    if code in CHAR_SEGMENTED:
        words = {w for w in words if len(w) == 1}
    return frozenset(words) or None


def bad_words_file(folder: str, code: str) -> Path | None:
    """The list of ``code`` in ``folder`` (LDNOOBW layout: a file named by the language
    code), or None when the folder has none."""
    path = Path(folder) / _LDNOOBW_ALIASES.get(code, code)
    return path if path.is_file() else None


@functools.lru_cache(maxsize=None)
def bad_words(folder: str, code: str) -> tuple[str, ...] | None:
    """The lower-cased entries of ``code``'s list in ``folder`` (blank lines dropped), or
    None when the folder has no list for it."""
    path = bad_words_file(folder, code)
    if path is None:
        return None
    words = {line.strip().lower() for line in path.read_text(encoding="utf-8").splitlines()}
    words.discard("")
    return tuple(sorted(words))


def segment(text: str) -> list[str]:
    """Tokens of a text in a language segmented by characters: every character of those
    scripts alone, whitespace-separated runs of anything else."""
    return _SEG_RE.findall(text)


def document_languages(batch: pa.Table, default: str | None) -> list[str | None]:
    """Each row's normalized language: the ``language`` column when the batch has one
    (null -> None), else ``default`` for every row."""
    if LANGUAGE_COLUMN not in batch.column_names:
        code = normalize_code(default)
        return [code] * batch.num_rows
    return [normalize_code(v) for v in batch.column(LANGUAGE_COLUMN).to_pylist()]


def languages_of(codes: Sequence[str | None]) -> list[Language | None]:
    """Settings per row (None for rows without a language)."""
    return [language(c) if c is not None else None for c in codes]
