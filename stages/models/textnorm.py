"""Text normalisation shared by model training and inference.

A model-based filter is only as good as the match between the text it was trained on
and the text it scores. The quality classifier (fastText) and the n-gram language
model (KenLM) therefore never see raw text: both ``datapipe quality train`` /
``datapipe lm train`` and the ``quality`` / ``perplexity`` stages pass documents
through one :class:`TextNorm`, and the settings used at training time are written
into the model card so that inference rebuilds exactly the same normaliser
(:meth:`TextNorm.from_dict`).

What it does, in the spirit of CCNet's normaliser (lowercase, digits to 0, unicode
punctuation to ASCII) but word-level instead of SentencePiece:

* ``lowercase``: ``str.lower``;
* unicode punctuation (curly quotes, dashes, ellipsis, guillemets, non-breaking and
  zero-width spaces...) mapped to ASCII, always (a fixed table, so it cannot drift);
* ``digits``: every ASCII digit becomes ``0`` (numbers carry no style signal and blow
  up the vocabulary);
* ``strip_accents``: NFD + removing combining marks (off by default: it costs ~2x
  and changes meaning in many languages);
* ``split_punct``: a space on both sides of every character that is neither a word
  character nor whitespace, so ``"end."`` and ``"end"`` are the same word and the
  reserved ARPA tokens ``<s>``/``</s>``/``<unk>`` can never be produced;
* whitespace runs collapsed to one space; lines kept (:meth:`lines`, for the LM, where
  a line is a sentence) or folded (:meth:`one_line`, for fastText, which reads one
  example per line).

Plain Python string operations (``bytes.translate`` for ASCII documents, a few
compiled regexes otherwise), ~25 MB/s per core on mixed web/wiki/book text: about
what fastText itself costs per document, a fraction of what KenLM costs.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass, fields
from typing import Any, Iterable, Mapping

from datapipe.errors import SpecError

#: Unicode punctuation and spaces folded to ASCII before anything else.
_PUNCT_MAP: dict[str, str] = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    "\u00ab": '"', "\u00bb": '"', "\u2039": "'", "\u203a": "'",
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-", "\u2026": "...", "\u00b7": ".", "\u2022": "*", "\u3001": ",", "\u3002": ".",
    "\uff0c": ",", "\uff0e": ".", "\uff01": "!", "\uff1f": "?", "\uff1a": ":", "\uff1b": ";",
    "\uff08": "(", "\uff09": ")",
    "\u00a0": " ", "\u2000": " ", "\u2001": " ", "\u2002": " ", "\u2003": " ", "\u2004": " ",
    "\u2005": " ", "\u2006": " ", "\u2007": " ", "\u2008": " ", "\u2009": " ", "\u200a": " ",
    "\u202f": " ", "\u205f": " ", "\u3000": " ", "\t": " ", "\r": "\n", "\x0b": "\n", "\x0c": "\n",
    "\u2028": "\n", "\u2029": "\n", "\x85": "\n",
    "\u200b": "", "\u200c": "", "\u200d": "", "\u2060": "", "\ufeff": "", "\u00ad": "",
}
# ASCII documents (most of them) take a bytes.translate fast path: one C pass that
# lowercases, zeroes digits and folds tabs / odd line breaks. Others: str.lower and two
# regex passes that only touch the characters to replace.
_ASCII_FOLD = {"\t": " ", "\r": "\n", "\x0b": "\n", "\x0c": "\n"}
_UPPER, _LOWER = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz"
_FOLD_FROM = "".join(_ASCII_FOLD).encode("ascii")
_FOLD_TO = "".join(_ASCII_FOLD.values()).encode("ascii")
_ASCII_TABLES = {
    (lower, digits): bytes.maketrans(
        (_UPPER if lower else b"") + (b"123456789" if digits else b"") + _FOLD_FROM,
        (_LOWER if lower else b"") + (b"000000000" if digits else b"") + _FOLD_TO,
    )
    for lower in (False, True) for digits in (False, True)
}
_MAP_RE = re.compile("[" + "".join(re.escape(c) for c in _PUNCT_MAP) + "]")
_DIGIT_RE = re.compile(r"[1-9]")
# a token is a run of word characters or one other non-space character
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")


def _map_char(m: re.Match) -> str:
    return _PUNCT_MAP[m.group()]


#: Tokens with a fixed meaning in ARPA files; a normalised line never contains them
#: when ``split_punct`` is on (the LM estimator maps them to ``<unk>`` otherwise).
RESERVED_TOKENS = ("<s>", "</s>", "<unk>")


@dataclass(kw_only=True, frozen=True)
class TextNorm:
    """Normalisation settings; written to model cards and read back at inference."""

    lowercase: bool = True
    digits: bool = True
    strip_accents: bool = False
    split_punct: bool = True
    #: keep only the first ``max_chars`` characters of a document (0 = all); bounds
    #: the cost of scoring pathological multi-MB documents
    max_chars: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.max_chars, int) or self.max_chars < 0:
            raise SpecError(f"textnorm.max_chars: expected an integer >= 0, got {self.max_chars!r}")

    # -- (de)serialisation for model cards ---------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "TextNorm":
        """Rebuild from a card's ``textnorm`` entry; unknown keys are an error (a card
        written by a newer version must not be silently misread)."""
        if not d:
            return cls()
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise SpecError(f"textnorm: unknown settings {unknown} in model card; known: {sorted(known)}")
        return cls(**dict(d))

    # -- the work ----------------------------------------------------------------------
    def __call__(self, text: str | None) -> str:
        """Normalised text, line breaks kept (runs of spaces collapsed per line, blank
        lines removed)."""
        return "\n".join(self.lines(text))

    def _base(self, text: str) -> str:
        if self.max_chars and len(text) > self.max_chars:
            text = text[: self.max_chars]
        if text.isascii():
            text = text.encode("ascii").translate(_ASCII_TABLES[self.lowercase, self.digits]).decode("ascii")
        else:
            if self.lowercase:
                text = text.lower()
            text = _MAP_RE.sub(_map_char, text)
            if self.digits:
                text = _DIGIT_RE.sub("0", text)
            if self.strip_accents:
                text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        return text

    def _tokens(self, text: str) -> list[str]:
        return _TOKEN_RE.findall(text) if self.split_punct else text.split()

    def lines(self, text: str | None) -> list[str]:
        """Non-empty normalised lines: the sentences an n-gram LM is trained on and
        scores (KenLM adds ``<s>``/``</s>`` around each)."""
        if not text:
            return []
        out = []
        for line in self._base(text).split("\n"):
            words = self._tokens(line)
            if words:
                out.append(" ".join(words))
        return out

    def one_line(self, text: str | None) -> str:
        """The whole document on one line: what fastText trains on and predicts."""
        if not text:
            return ""
        return " ".join(self._tokens(self._base(text)))

    def many_one_line(self, texts: Iterable[str | None]) -> list[str]:
        return [self.one_line(t) for t in texts]
