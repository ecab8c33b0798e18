"""Vectorised text helpers shared by the heuristic filters.

The filters run on every document, so they work on a whole batch at once: texts become
flat arrays of pieces (lines, tokens) with, for each piece, the document it belongs to;
per-document statistics are ``bincount``s over that index, and "has this line/n-gram
occurred earlier in its document" is one hash-table pass (:func:`first_seen`) over
(document, key) pairs. Per-document aggregates that Python's ``str`` methods compute in
one C call (``count``, ``splitlines``) stay in Python; per-token work never does.

Conventions shared by every heuristic stage and by the readable per-document reference
in ``tests/heuristics_reference.py`` (the test oracle):

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
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stages.heuristics.languages import CHAR_SCRIPT_RANGES

#: Unicode whitespace as ``str.isspace`` sees it, as an RE2 class body (RE2's ``\s`` is ASCII only).
WS_CLASS = r"\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
#: Leading/trailing characters that are not ``str.isalnum()`` (the word core's edges).
EDGE_PY = re.compile(r"^[\W_]+|[\W_]+$")

_SPLITMIX_A = np.uint64(0xBF58476D1CE4E5B9)
_SPLITMIX_B = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def texts_of(batch: pa.Table, column: str = "text") -> pa.Array:
    """The batch's text column as one string array, nulls as empty strings."""
    col = batch.column(column)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if col.type != pa.string():
        col = col.cast(pa.string())
    return pc.fill_null(col, "")


def text_list(batch: pa.Table, column: str = "text") -> list[str]:
    """The batch's texts as Python strings (nulls as ``""``).

    Per-document aggregates (``str.count``, ``len``) are single C calls per document
    and cheaper in Python than through Arrow kernels; per-word and per-line work is
    done on arrays."""
    return [t if t is not None else "" for t in batch.column(column).to_pylist()]


def lengths(arr: pa.Array) -> np.ndarray:
    """Code-point length of every string (nulls count 0), as int64."""
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int64)
    return pc.fill_null(pc.utf8_length(arr), 0).to_numpy(zero_copy_only=False).astype(np.int64)


def py_counts(values: Sequence[str], fn: Callable[[str], int]) -> np.ndarray:
    """``fn(v)`` for every value, as int64 (for ``str`` methods like ``str.count``)."""
    return np.fromiter((fn(v) for v in values), dtype=np.int64, count=len(values))


def as_bool(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A boolean Arrow result as a numpy bool array (nulls are False)."""
    if len(arr) == 0:
        return np.zeros(0, dtype=bool)
    return pc.fill_null(arr, False).to_numpy(zero_copy_only=False).astype(bool)


def as_int(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int64)
    return pc.fill_null(arr, 0).to_numpy(zero_copy_only=False).astype(np.int64)


@dataclass(frozen=True)
class Pieces:
    """A batch's texts split into pieces: ``values[i]`` belongs to document ``parent[i]``;
    pieces of one document are contiguous and in text order."""

    values: pa.Array
    parent: np.ndarray
    n_docs: int

    def __len__(self) -> int:
        return len(self.values)

    def count(self, mask: np.ndarray | None = None) -> np.ndarray:
        """Pieces per document (only those where ``mask`` is true)."""
        return per_doc_count(self.parent, self.n_docs, mask)

    def total(self, weights: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Per-document sum of ``weights`` (only where ``mask`` is true)."""
        return per_doc_total(self.parent, self.n_docs, weights, mask)

    def select(self, mask: np.ndarray) -> "Pieces":
        return Pieces(self.values.filter(pa.array(mask)), self.parent[mask], self.n_docs)

    def join(self, sep: str) -> pa.Array:
        """One string per document: its pieces joined by ``sep`` (``""`` for none)."""
        counts = self.count()
        offsets = np.zeros(self.n_docs + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        lists = pa.ListArray.from_arrays(pa.array(offsets), self.values)
        return pc.binary_join(lists, sep)


def per_doc_count(doc: np.ndarray, n_docs: int, mask: np.ndarray | None = None) -> np.ndarray:
    """How many items (pieces, tokens) of each document, ``doc[i]`` being item ``i``'s
    document (only items where ``mask`` is true)."""
    d = doc if mask is None else doc[mask]
    return np.bincount(d, minlength=n_docs).astype(np.int64)


def per_doc_total(doc: np.ndarray, n_docs: int, weights: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Per-document sum of the items' ``weights`` (only items where ``mask`` is true)."""
    if mask is not None:
        return np.bincount(doc[mask], weights=weights[mask], minlength=n_docs)
    return np.bincount(doc, weights=weights, minlength=n_docs)


def first_seen(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group equal keys with a hash table (``pandas.factorize``, linear time; pandas
    ships with ``ray[data]``): ``(group of each key, True where a key appears for the
    first time, size of each group)``. Groups are numbered in order of first appearance."""
    import pandas as pd

    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64)
    group, _ = pd.factorize(keys)
    group = group.astype(np.int64, copy=False)
    top = np.maximum.accumulate(group)
    first = np.empty(len(group), dtype=bool)
    first[0] = True
    first[1:] = top[1:] > top[:-1]       # a new group number is always the largest so far
    return group, first, np.bincount(group)


def repeats(keys: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """True where ``keys[i]`` already occurred earlier in the same document.

    ``keys`` are integers (dictionary codes or hashes); equal keys in different
    documents are unrelated."""
    if len(keys) == 0:
        return np.zeros(0, dtype=bool)
    doc_key = mix64(keys.astype(np.uint64) ^ mix64(parent.astype(np.uint64) + _GOLDEN))
    return ~first_seen(doc_key)[1]


def codes(values: pa.Array) -> np.ndarray:
    """Integer code per string: equal strings get equal codes (within this array)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    enc = pc.dictionary_encode(values)
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)


def mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser: a fast, well-mixed 64-bit hash of 64-bit integers."""
    with np.errstate(over="ignore"):
        x = x.astype(np.uint64, copy=True)
        x ^= x >> np.uint64(30)
        x *= _SPLITMIX_A
        x ^= x >> np.uint64(27)
        x *= _SPLITMIX_B
        x ^= x >> np.uint64(31)
    return x


def positions_in_doc(parent: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """For contiguous pieces: each piece's index within its document, and the number of
    pieces of its document."""
    counts = np.bincount(parent, minlength=n_docs)
    starts = np.zeros(n_docs, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    pos = np.arange(len(parent), dtype=np.int64) - starts[parent]
    return pos, counts[parent]


def alternation(strings: Sequence[str]) -> str:
    """An RE2 alternation of literal ``strings`` (longest first)."""
    return "|".join(re.escape(s) for s in sorted(set(strings), key=len, reverse=True))


def fmt(value: float) -> str:
    """Compact number for reject details."""
    if isinstance(value, (int, np.integer)) or float(value).is_integer():
        return str(int(value))
    return f"{float(value):.4g}"


def first_failure(fails: Sequence[tuple], n: int) -> tuple[np.ndarray, list[str | None], dict[str, np.ndarray]]:
    """Keep mask, reasons and counters from per-rule failure masks, checked in the given
    order: a document dropped by an earlier rule is reported under that rule, with the
    measured value as detail (``"mean_word_length|2.5"``).

    An entry may carry a fourth element, a mask of the documents the rule could not judge
    (their language has no settings for it): those are never failed by it, and the ones
    that reached the rule are counted as ``<rule>_unsupported_language``."""
    keep = np.ones(n, dtype=bool)
    reasons: list[str | None] = [None] * n
    counters: dict[str, np.ndarray] = {}
    for entry in fails:
        rule, failed, value = entry[:3]
        if len(entry) > 3 and entry[3] is not None:
            skipped = np.asarray(entry[3], dtype=bool)
            failed = failed & ~skipped
            key = f"{rule}_unsupported_language"
            counters[key] = counters.get(key, np.zeros(n, dtype=np.int64)) + (skipped & keep)
        new = failed & keep
        for i in np.flatnonzero(new):
            reasons[i] = f"{rule}|{fmt(value[i])}"
        keep &= ~failed
    return keep, reasons, counters


def split_lines_py(texts: Sequence[str], *, sep: str | None = None, strip: str | None = None,
                   drop_blank: bool = False) -> Pieces:
    """Lines of every text as pieces. ``sep=None`` is ``str.splitlines()``, otherwise
    ``str.split(sep)``. ``strip``: ``"both"``, ``"right"`` or ``None``. ``drop_blank``
    removes lines that are empty after stripping surrounding whitespace."""
    flat: list[str] = []
    counts = np.zeros(len(texts), dtype=np.int64)
    for i, t in enumerate(texts):
        lines = t.splitlines() if sep is None else t.split(sep)
        if strip == "both":
            lines = [x.strip() for x in lines]
        elif strip == "right":
            lines = [x.rstrip() for x in lines]
        if drop_blank:
            lines = [x for x in lines if x and not x.isspace()]
        counts[i] = len(lines)
        flat.extend(lines)
    parent = np.repeat(np.arange(len(texts), dtype=np.int64), counts)
    return Pieces(pa.array(flat, pa.string()), parent, len(texts))


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
            v = mix64(self.cp.astype(np.uint64) * _GOLDEN + pos.astype(np.uint64))
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
                acc[live] ^= mix64(cpj * _GOLDEN + np.uint64(j + 1))
            acc ^= mix64(ln.astype(np.uint64) + np.uint64(0x51))
        h[ok] = acc
        return h


def string_span_hash(s: str) -> int:
    """The :meth:`Tokens.span_hashes` value of an already lower-cased string."""
    cp = np.frombuffer(s.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)
    acc = np.uint64(0)
    with np.errstate(over="ignore"):
        for j, c in enumerate(cp):
            acc ^= mix64(np.array([c * _GOLDEN + np.uint64(j + 1)], dtype=np.uint64))[0]
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


_ASCII_WS = np.zeros(256, dtype=bool)
_ASCII_WS[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
_ASCII_WS.flags.writeable = False


def _utf8(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets relative to the first string, UTF-8 bytes) of a string array, zero-copy
    where possible; nulls read as empty strings."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        arr = pc.fill_null(arr, "")
    n = len(arr)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int32)[arr.offset: arr.offset + n + 1].astype(np.int64)
    lo, hi = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(bufs[2], dtype=np.uint8)[lo:hi] if hi > lo else np.zeros(0, dtype=np.uint8)
    return offsets - lo, data


def count_byte(arr: pa.Array, byte: int) -> np.ndarray:
    """Occurrences of one ASCII byte (``"\\n"`` -> 10) per string."""
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int64)
    offsets, b = _utf8(arr)
    hits = np.flatnonzero(b == byte)
    return np.diff(np.searchsorted(hits, offsets))


def count_words(arr: pa.Array) -> np.ndarray:
    """Whitespace-separated tokens per string (``len(s.split())``), computed on the UTF-8
    bytes of the Arrow array without creating a Python object per string or token.
    Multi-byte Unicode whitespace (U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028,
    U+2029, U+202F, U+205F, U+3000) separates tokens as ``str.split`` does."""
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    offsets, b = _utf8(arr)
    if len(b) == 0:
        return np.zeros(n, dtype=np.int64)
    ws = _ASCII_WS[b]
    if (b >= 0xC2).any():
        _mark_multibyte_ws(b, ws)
    starts = ~ws
    starts[1:] &= ws[:-1]
    heads = offsets[:-1][offsets[:-1] < len(b)]
    starts[heads] = ~ws[heads]          # a string's first byte starts a token if not blank
    return np.diff(np.searchsorted(np.flatnonzero(starts), offsets))


def _mark_multibyte_ws(b: np.ndarray, ws: np.ndarray) -> None:
    """Mark the bytes of multi-byte whitespace characters in ``ws`` (in place)."""
    m = len(b)
    c2 = np.flatnonzero(b[:-1] == 0xC2)
    c2 = c2[(b[c2 + 1] == 0x85) | (b[c2 + 1] == 0xA0)]
    ws[c2] = True
    ws[c2 + 1] = True
    for lead in (0xE1, 0xE2, 0xE3):
        p = np.flatnonzero(b[: max(m - 2, 0)] == lead)
        if not len(p):
            continue
        x, y = b[p + 1], b[p + 2]
        if lead == 0xE1:
            hit = (x == 0x9A) & (y == 0x80)                                   # U+1680
        elif lead == 0xE2:
            hit = ((x == 0x80) & ((y <= 0x8A) | (y == 0xA8) | (y == 0xA9) | (y == 0xAF))) | (
                (x == 0x81) & (y == 0x9F))                                    # U+2000-200A, 2028/9, 202F, 205F
        else:
            hit = (x == 0x80) & (y == 0x80)                                   # U+3000
        p = p[hit]
        ws[p] = True
        ws[p + 1] = True
        ws[p + 2] = True


def repeated_items(items: list[str]) -> tuple[int, int]:
    """How many items repeat an earlier one, and their characters (Gopher's duplicate
    line/paragraph fractions, per document)."""
    seen: set[str] = set()
    count = chars = 0
    for item in items:
        if item in seen:
            count += 1
            chars += len(item)
        else:
            seen.add(item)
    return count, chars
