"""Words as the heuristic filters count them, on the code points of a whole batch
(:func:`tokenize`, :class:`Tokens`) with per-code-point character classes
(:class:`CharTable`), without a Python object per token.

Conventions shared by every heuristic stage and by the readable per-document oracle in
``tests/heuristics_reference.py``:

* **words** are whitespace-separated tokens (``str.split()``, Unicode whitespace);
* a word's **core** is the token without leading and trailing characters that are not
  ``str.isalnum()`` (``"(Hello,"`` -> ``"Hello"``); a token whose core is empty
  (``"-"``, ``"..."``, ``"|"``) is a *symbol token*, not a word;
* **lines** follow ``str.splitlines()`` unless a stage says otherwise;
* lengths are in code points (Python ``len``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stages.heuristics.columns import py_counts
from stages.heuristics.grouping import GOLDEN, mix64
from stages.heuristics.languages import CHAR_SCRIPT_RANGES
from stages.heuristics.pieces import per_doc_count, per_doc_total

#: Unicode whitespace as ``str.isspace`` sees it, as an RE2 class body (RE2's ``\s`` is ASCII only).
WS_CLASS = r"\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
#: Leading/trailing characters that are not ``str.isalnum()`` (the word core's edges).
EDGE_PY = re.compile(r"^[\W_]+|[\W_]+$")

SPACE, ALNUM, ALPHA, CHAR_SEG = 1, 2, 4, 8


class CharTable:
    """Character classes (``str.isspace``/``isalnum``/``isalpha``) and simple lower-case
    mapping for code points, as lookup tables (~40-80 ms to build: get the process's one
    with :func:`char_table`); code points beyond the BMP are classified on the fly (they
    are rare)."""

    def __init__(self) -> None:
        cls = np.zeros(0x10000, dtype=np.uint8)
        low = np.arange(0x10000, dtype=np.uint32)
        for c in range(0x10000):
            if 0xD800 <= c < 0xE000:
                continue
            ch = chr(c)
            cls[c] = _classify(ch)
            lo = ch.lower()
            if len(lo) == 1:
                low[c] = ord(lo)
        self.cls = cls
        self.low = low

    def classes(self, cp: np.ndarray) -> np.ndarray:
        out = self.cls[np.minimum(cp, 0xFFFF)]
        astral = cp > 0xFFFF
        if astral.any():
            uniq, inv = np.unique(cp[astral], return_inverse=True)
            vals = np.array([_classify(chr(int(c))) for c in uniq], dtype=np.uint8)
            out[astral] = vals[inv]
        return out

    def lower(self, cp: np.ndarray) -> np.ndarray:
        out = self.low[np.minimum(cp, 0xFFFF)]
        astral = cp > 0xFFFF
        if astral.any():
            out[astral] = [ord(chr(int(c)).lower()[0]) for c in cp[astral]]
        return out


@functools.cache
def char_table() -> CharTable:
    """The process's :class:`CharTable`, built on first use (read-only once built)."""
    return CharTable()


def _classify(ch: str) -> int:
    cp = ord(ch)
    seg = any(lo <= cp <= hi for lo, hi in CHAR_SCRIPT_RANGES)
    return ((SPACE if ch.isspace() else 0) | (ALNUM if ch.isalnum() else 0) | (ALPHA if ch.isalpha() else 0)
            | (CHAR_SEG if seg else 0))


@dataclass
class Tokens:
    """Whitespace tokens of a batch of texts, found on the code-point array of the whole
    batch (``str.split()`` semantics), without a Python object per token."""

    n_docs: int
    cp: np.ndarray        # uint32 code points of all texts, one "\\n" between texts
    cls: np.ndarray       # uint8 class bits per code point
    doc: np.ndarray       # per token: its document
    start: np.ndarray     # per token: index of its first code point in ``cp``
    length: np.ndarray    # per token: code points

    def __len__(self) -> int:
        return len(self.start)

    def count(self, mask: np.ndarray | None = None) -> np.ndarray:
        """Tokens per document (only those where ``mask`` is true)."""
        return per_doc_count(self.doc, self.n_docs, mask)

    def total(self, weights: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Per-document sum of ``weights`` (only where ``mask`` is true)."""
        return per_doc_total(self.doc, self.n_docs, weights, mask)

    def cores(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per token: core start, core length (0 for symbol tokens) and whether the core
        has a letter. The core drops leading/trailing characters that are not
        ``str.isalnum()``."""
        n = len(self.start)
        end = self.start + self.length
        core_start = np.zeros(n, dtype=np.int64)
        core_len = np.zeros(n, dtype=np.int64)
        if n == 0:
            return core_start, core_len, np.zeros(0, dtype=bool)
        alnum = (self.cls & ALNUM) != 0
        alnum_pos = np.flatnonzero(alnum)
        cum = np.zeros(len(self.cls) + 1, dtype=np.int64)
        np.cumsum(alnum, out=cum[1:])
        lo = cum[self.start]          # alnums before the token = index of its first one
        hi = cum[end]
        has = hi > lo
        core_start[has] = alnum_pos[lo[has]]
        core_len[has] = alnum_pos[hi[has] - 1] - core_start[has] + 1
        np.cumsum((self.cls & ALPHA) != 0, out=cum[1:])
        has_alpha = cum[end] > cum[self.start]
        return core_start, core_len, has_alpha

    def hashes(self) -> np.ndarray:
        """64-bit hash of each token's exact text (equal tokens, equal hashes)."""
        n = len(self.start)
        if n == 0:
            return np.zeros(0, dtype=np.uint64)
        m = len(self.cp)
        marks = np.zeros(m, dtype=np.int64)
        marks[self.start] = self.start
        pos = np.arange(m, dtype=np.int64) - np.maximum.accumulate(marks)
        with np.errstate(over="ignore"):
            v = mix64(self.cp.astype(np.uint64) * GOLDEN + pos.astype(np.uint64))
        v[(self.cls & SPACE) != 0] = 0
        return np.bitwise_xor.reduceat(v, self.start)

    def span_hashes(self, starts: np.ndarray, lens: np.ndarray, table: CharTable, max_len: int) -> np.ndarray:
        """Hash of the lower-cased code points ``cp[start:start+len]`` for spans of at
        most ``max_len`` code points (longer spans hash to 0)."""
        h = np.zeros(len(starts), dtype=np.uint64)
        ok = (lens > 0) & (lens <= max_len)
        s, ln = starts[ok], lens[ok]
        acc = np.zeros(len(s), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for j in range(max_len):
                live = j < ln
                if not live.any():
                    break
                cpj = table.lower(self.cp[s[live] + j]).astype(np.uint64)
                acc[live] ^= mix64(cpj * GOLDEN + np.uint64(j + 1))
            acc ^= mix64(ln.astype(np.uint64) + np.uint64(0x51))
        h[ok] = acc
        return h


def string_span_hash(s: str) -> int:
    """The :meth:`Tokens.span_hashes` value of an already lower-cased string."""
    cp = np.frombuffer(s.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)
    acc = np.uint64(0)
    with np.errstate(over="ignore"):
        for j, c in enumerate(cp):
            acc ^= mix64(np.array([c * GOLDEN + np.uint64(j + 1)], dtype=np.uint64))[0]
        acc ^= mix64(np.array([len(cp) + 0x51], dtype=np.uint64))[0]
    return int(acc)


def tokenize(texts: Sequence[str], table: CharTable, by_chars: np.ndarray | None = None) -> Tokens:
    """Whitespace tokens of ``texts`` (``str.split()``). In the documents where
    ``by_chars`` is true, every character of a script written without spaces (CJK, Thai,
    ...; :data:`stages.heuristics.languages.CHAR_SCRIPT_RANGES`) is a token of its own."""
    n = len(texts)
    joined = "\n".join(texts)
    cp = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    cls = table.classes(cp) if len(cp) else np.zeros(0, dtype=np.uint8)
    lens = py_counts(texts, len)
    doc_start = np.zeros(n, dtype=np.int64)
    if n > 1:
        np.cumsum(lens[:-1] + 1, out=doc_start[1:])
    ns = (cls & SPACE) == 0
    if len(ns):
        brk_before = ~np.r_[False, ns[:-1]]
        brk_after = ~np.r_[ns[1:], False]
        if by_chars is not None and np.any(by_chars):
            seg = np.repeat(np.asarray(by_chars, dtype=bool), lens + 1)[: len(cp)] & ((cls & CHAR_SEG) != 0)
            brk_before = brk_before | seg | np.r_[False, seg[:-1]]
            brk_after = brk_after | seg | np.r_[seg[1:], False]
        starts = np.flatnonzero(ns & brk_before)
        ends = np.flatnonzero(ns & brk_after) + 1
    else:
        starts = ends = np.zeros(0, dtype=np.int64)
    doc = np.searchsorted(doc_start, starts, side="right") - 1
    return Tokens(n_docs=n, cp=cp, cls=cls, doc=doc.astype(np.int64), start=starts.astype(np.int64),
                  length=(ends - starts).astype(np.int64))
