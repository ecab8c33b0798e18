"""Vectorised text helpers shared by the heuristic filters.

The filters run on every document, so they work on whole Arrow batches: a batch's texts
are split once into a flat column of pieces (words or lines) plus, for each piece, the
index of the document it came from (``parent``). Per-document statistics are then numpy
``bincount``s over ``parent``, and "is this line/n-gram a repeat within its document"
is one stable sort over (document, key) pairs. No Python loop runs per document or per
word on these paths.

Conventions, shared by every heuristic stage so that they agree with each other and
with the readable per-document reference in :mod:`stages._reference`:

* **words** are whitespace-separated tokens (Python ``str.split()`` semantics,
  Unicode whitespace);
* a word's **core** is the token with leading and trailing characters that are neither
  letters nor digits stripped (``"(Hello,"`` -> ``"Hello"``); a token whose core is
  empty (``"-"``, ``"..."``, ``"|"``) is a *symbol token*, not a word;
* **lines** follow Python ``str.splitlines()`` (``\\n``, ``\\r\\n``, ``\\r`` and the
  other Unicode line boundaries; no empty last line after a trailing break);
* lengths are in Unicode code points (Python ``len``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Unicode whitespace as Python's ``str.isspace`` sees it, as an RE2 class body
#: (RE2's ``\\s`` is ASCII only).
WS_CLASS = r"\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
#: Line boundaries of ``str.splitlines`` (RE2 syntax).
LINE_BREAK_RE2 = r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x{85}\x{2028}\x{2029}]"
#: Leading/trailing non-letter, non-digit characters of a token (RE2 syntax).
EDGE_RE2 = r"^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$"
#: Python equivalents, for the per-document reference implementation.
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


def lengths(arr: pa.Array) -> np.ndarray:
    """Code-point length of every string (nulls count 0), as int64."""
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int64)
    return pc.fill_null(pc.utf8_length(arr), 0).to_numpy(zero_copy_only=False).astype(np.int64)


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
        p = self.parent if mask is None else self.parent[mask]
        return np.bincount(p, minlength=self.n_docs).astype(np.int64)

    def total(self, weights: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Per-document sum of ``weights`` (only where ``mask`` is true)."""
        if mask is not None:
            return np.bincount(self.parent[mask], weights=weights[mask], minlength=self.n_docs)
        return np.bincount(self.parent, weights=weights, minlength=self.n_docs)

    def select(self, mask: np.ndarray) -> "Pieces":
        return Pieces(self.values.filter(pa.array(mask)), self.parent[mask], self.n_docs)

    def join(self, sep: str) -> pa.Array:
        """One string per document: its pieces joined by ``sep`` (``""`` for none)."""
        counts = self.count()
        offsets = np.zeros(self.n_docs + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        lists = pa.ListArray.from_arrays(pa.array(offsets), self.values)
        return pc.binary_join(lists, sep)


def _from_lists(lists: pa.Array, n_docs: int) -> Pieces:
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    values = pc.list_flatten(lists)
    parent = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False).astype(np.int64)
    return Pieces(values, parent, n_docs)


def split_words(texts: pa.Array) -> Pieces:
    """Whitespace-separated tokens of every text (``str.split()``; no empty tokens)."""
    pieces = _from_lists(pc.utf8_split_whitespace(texts), len(texts))
    nonempty = lengths(pieces.values) > 0
    return pieces if nonempty.all() else pieces.select(nonempty)


def split_lines(texts: pa.Array, *, pattern: str = LINE_BREAK_RE2, drop_trailing_empty: bool = True) -> Pieces:
    """Lines of every text. With the default pattern and ``drop_trailing_empty`` this is
    ``str.splitlines()``: an empty text has no lines and a trailing break adds none."""
    lists = pc.split_pattern_regex(texts, pattern)
    pieces = _from_lists(lists, len(texts))
    if not drop_trailing_empty or len(pieces) == 0:
        return pieces
    offsets = lists.offsets.to_numpy()
    nonempty_lists = offsets[1:] > offsets[:-1]
    last = offsets[1:][nonempty_lists] - 1
    last = last[lengths(pieces.values.take(pa.array(last))) == 0]
    if len(last) == 0:
        return pieces
    keep = np.ones(len(pieces), dtype=bool)
    keep[last] = False
    return pieces.select(keep)


def word_cores(words: pa.Array) -> pa.Array:
    """Each token without its leading/trailing non-alphanumeric characters."""
    if len(words) == 0:
        return words
    return pc.replace_substring_regex(words, EDGE_RE2, "")


def repeats(keys: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """True where ``keys[i]`` already occurred earlier in the same document.

    ``keys`` are integers (dictionary codes or hashes); equal keys in different
    documents are unrelated."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=bool)
    doc_key = mix64(keys.astype(np.uint64) ^ mix64(parent.astype(np.uint64) + _GOLDEN))
    order = np.argsort(doc_key, kind="stable")
    sk = doc_key[order]
    first_sorted = np.ones(n, dtype=bool)
    first_sorted[1:] = sk[1:] != sk[:-1]
    rep = np.empty(n, dtype=bool)
    rep[order] = ~first_sorted
    return rep


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


def ngram_hashes(word_codes: np.ndarray, max_n: int) -> list[np.ndarray]:
    """``out[n][i]`` is a 64-bit hash of the word codes ``i .. i+n-1`` (for every ``i``;
    the caller masks positions whose n-gram would cross a document end)."""
    out: list[np.ndarray] = [np.zeros(0, dtype=np.uint64)]
    h = mix64(word_codes.astype(np.uint64) + _GOLDEN)
    out.append(h)
    m = len(word_codes)
    w = word_codes.astype(np.uint64)
    with np.errstate(over="ignore"):
        for n in range(2, max_n + 1):
            nxt = np.zeros(m, dtype=np.uint64)
            if m >= n:
                nxt[: m - n + 1] = mix64(h[: m - n + 1] * _GOLDEN + w[n - 1:] + np.uint64(n))
            h = nxt
            out.append(h)
    return out


def positions_in_doc(parent: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """For contiguous pieces: each piece's index within its document, and the number of
    pieces of its document."""
    counts = np.bincount(parent, minlength=n_docs)
    starts = np.zeros(n_docs, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    pos = np.arange(len(parent), dtype=np.int64) - starts[parent]
    return pos, counts[parent]


def char_class(chars: Sequence[str]) -> str:
    """An RE2 character class matching any of ``chars`` (single code points)."""
    body = "".join("\\x{%x}" % ord(c) for c in chars)
    return f"[{body}]"


def alternation(strings: Sequence[str]) -> str:
    """An RE2 alternation of literal ``strings`` (longest first)."""
    return "|".join(re.escape(s) for s in sorted(set(strings), key=len, reverse=True))


def fmt(value: float) -> str:
    """Compact number for reject details."""
    if isinstance(value, (int, np.integer)) or float(value).is_integer():
        return str(int(value))
    return f"{float(value):.4g}"
