"""Pure functions of decontamination: text normalisation, word n-gram hashing, the
n-gram index (build, save, load, look up) and the matcher. No Ray, no engine: the
``decontaminate`` stage calls them, and a global-stage pass can call them the same way.

Normalisation (the GPT-3 / datatrove ``simplify_text`` idea: case, punctuation and
whitespace do not count): the text is lower-cased (Unicode ``utf8_lower``), every run
of characters that are not letters or digits (``[^\\p{L}\\p{N}]+``: punctuation,
symbols, whitespace, ``_``) becomes one space, and words are what lies between spaces.
So ``"The Eiffel-Tower, in PARIS!"`` is ``the eiffel tower in paris``. Accents are kept
(``café`` != ``cafe``), as in GPT-3; datatrove's ``simplify_text`` can also strip them.

Hashing: each word's bytes get a 64-bit polynomial hash (prefix sums over the batch's
byte buffer, all numpy), and an n-gram's hash combines its ``n`` word hashes
polynomially, so a batch is hashed with a handful of vector passes, no Python per word.
Membership is exact up to 64-bit hash collisions (probability ~ index size / 2**64 per
lookup: 5e-14 for 1M n-grams).
"""

from __future__ import annotations

import io
import json
import logging
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe import fs
from stages._radix import RadixIndex

log = logging.getLogger(__name__)

NON_WORD_RE2 = r"[^\p{L}\p{N}]+"
_P = 0x100000001B3 * 2 + 1          # word-byte multiplier (odd: invertible modulo 2**64)
_P_INV = pow(_P, -1, 2**64)
_Q = 0x9E3779B97F4A7C15              # n-gram combiner
_LEN_MIX = 0xC2B2AE3D27D4EB4F


def normalize(texts: pa.Array) -> pa.Array:
    """Lower case, and every non-letter/digit run to one space (see module doc)."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    texts = pc.fill_null(texts.cast(pa.string()), "")
    return pc.replace_substring_regex(pc.utf8_lower(texts), NON_WORD_RE2, " ")


def _buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    arr = pc.fill_null(arr, "")
    if arr.offset != 0:
        arr = pa.concat_arrays([arr])
    n = len(arr)
    off_type = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(arr.buffers()[1], dtype=off_type)[: n + 1].astype(np.int64)
    buf = arr.buffers()[2]
    data = np.frombuffer(buf, dtype=np.uint8)[: int(offsets[-1])] if buf is not None and n else np.zeros(0, np.uint8)
    return offsets, data


@dataclass
class Words:
    """The words of a batch of normalised texts, in order: the strings, the row each
    belongs to, and their hashes."""

    strings: pa.Array
    row: np.ndarray
    hashes: np.ndarray

    def text(self, i: int, j: int) -> str:
        """Words ``i .. j-1`` joined by spaces (they are consecutive in one row)."""
        return " ".join(self.strings[i:j].to_pylist())


def _span_hashes(arr: pa.Array) -> np.ndarray:
    """64-bit polynomial hash of every string: prefix sums of ``(b + 1) * P**j`` over the
    byte buffer, so a string's hash is ``(S[end] - S[start]) * P**-start`` (numpy, no
    Python per string), mixed with its length."""
    offsets, data = _buffers(arr)
    with np.errstate(over="ignore"):
        pw = np.full(len(data) + 1, _P, dtype=np.uint64)
        pw[0] = 1
        pw = np.cumprod(pw, dtype=np.uint64)
        inv = np.full(len(data) + 1, _P_INV, dtype=np.uint64)
        inv[0] = 1
        inv = np.cumprod(inv, dtype=np.uint64)
        acc = np.zeros(len(data) + 1, dtype=np.uint64)
        np.cumsum((data.astype(np.uint64) + np.uint64(1)) * pw[:-1], out=acc[1:])
        starts, ends = offsets[:-1], offsets[1:]
        h = (acc[ends] - acc[starts]) * inv[starts]
        return h ^ ((ends - starts).astype(np.uint64) * np.uint64(_LEN_MIX))


def words(norm: pa.Array) -> Words:
    """Split normalised texts into words (Arrow ``split_pattern``) and hash each: the
    batch's distinct words are hashed once (``dictionary_encode``), then gathered."""
    lists = pc.split_pattern(norm, " ")
    flat = pc.list_flatten(lists)
    row = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    nonempty = pc.greater(pc.binary_length(flat), 0)
    flat = flat.filter(nonempty)
    row = row[nonempty.to_numpy(zero_copy_only=False)]
    if len(flat) == 0:
        return Words(strings=flat, row=row.astype(np.int64), hashes=np.zeros(0, np.uint64))
    enc = pc.dictionary_encode(flat)
    dict_h = _span_hashes(enc.dictionary)
    codes = enc.indices.to_numpy(zero_copy_only=False)
    return Words(strings=flat, row=row.astype(np.int64), hashes=dict_h[codes])


def ngram_hashes(w: Words, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The hash of every n-gram of ``n`` consecutive words within one row, and its first
    word's index (an n-gram never spans two texts)."""
    m = len(w.hashes) - n + 1
    if m <= 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    with np.errstate(over="ignore"):
        h = w.hashes[:m].copy()
        q = np.uint64(_Q)
        for k in range(1, n):
            h = h * q + w.hashes[k:k + m]
    first = np.arange(m)
    ok = w.row[:m] == w.row[n - 1:]
    return h[ok], first[ok]


def text_ngram_hashes(texts: list[str] | pa.Array, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(hashes, row) of every n-gram of the texts: what the index holds for eval items."""
    w = words(normalize(pa.array(texts, pa.string()) if isinstance(texts, list) else texts))
    h, first = ngram_hashes(w, n)
    return h, w.row[first]


@dataclass
class NgramIndex:
    """Sorted unique n-gram hashes (uint64) with the benchmark each came from (uint16
    index into ``names``; the first benchmark listed wins a shared n-gram). 10 bytes an
    n-gram; saved as one ``.npz`` (``save``/``load``) to ship to workers."""

    n: int
    hashes: np.ndarray
    bench: np.ndarray
    names: list[str]
    items: dict[str, int]
    short_items: dict[str, int]

    @property
    def nbytes(self) -> int:
        return int(self.hashes.nbytes + self.bench.nbytes + self._radix_index().nbytes)

    def __len__(self) -> int:
        return len(self.hashes)

    def _radix_index(self) -> RadixIndex:
        r = getattr(self, "_radix", None)
        if r is None:
            r = self._radix = RadixIndex(self.hashes)
        return r

    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash, its position in the index or -1 (:class:`stages._radix.RadixIndex`)."""
        return self._radix_index().positions(hashes)

    def save(self, uri: str) -> None:
        buf = io.BytesIO()
        meta = json.dumps({"n": self.n, "names": self.names, "items": self.items, "short_items": self.short_items})
        np.savez(buf, hashes=self.hashes, bench=self.bench, meta=np.frombuffer(meta.encode(), dtype=np.uint8))
        fs.write_bytes(uri, buf.getvalue())

    @classmethod
    def load(cls, uri: str) -> "NgramIndex":
        with np.load(io.BytesIO(fs.read_bytes(uri))) as z:
            meta = json.loads(z["meta"].tobytes().decode())
            return cls(n=meta["n"], hashes=z["hashes"], bench=z["bench"], names=meta["names"],
                       items=meta["items"], short_items=meta["short_items"])


def read_eval_items(uri: str, fields: tuple[str, ...]) -> list[str]:
    """The texts of one evaluation file: JSONL (``.jsonl``/``.json``: one object a line,
    each of ``fields`` that is present, a string or a list of strings), Parquet (the
    same fields as columns), else plain text (one item a non-empty line)."""
    name = uri.lower()
    out: list[str] = []

    def take(v: object) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list):
            out.extend(x for x in v if isinstance(x, str))

    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        t = pq.read_table(fs.arrow_input(uri))
        missing = [f for f in fields if f not in t.column_names]
        if len(missing) == len(fields):
            raise ValueError(f"evaluation file {uri}: none of the text fields {list(fields)} is a column "
                             f"(columns: {t.column_names}); set text_fields")
        for f in fields:
            if f in t.column_names:
                for v in t.column(f).to_pylist():
                    take(v)
        return out
    text = fs.read_text(uri)
    if name.endswith((".jsonl", ".json")):
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as e:
                raise ValueError(f"evaluation file {uri}: line {i} is not JSON ({e}); fix the line or "
                                 "give the file a .txt name to index it as plain text") from None
            if isinstance(obj, dict):
                for f in fields:
                    take(obj.get(f))
        return out
    return [line for line in text.splitlines() if line.strip()]


def build_index(eval_sets: dict[str, list[str]], *, n: int = 13, fields: tuple[str, ...] = ("text",)) -> NgramIndex:
    """The n-gram index of the evaluation sets (benchmark name -> files). Items shorter
    than ``n`` words have no n-gram; they are counted in ``short_items`` (lower ``n`` to
    cover them, as GPT-3 did per benchmark)."""
    all_h, all_b = [], []
    names = list(eval_sets)
    items: dict[str, int] = {}
    short: dict[str, int] = {}
    for b, name in enumerate(names):
        texts: list[str] = []
        for uri in eval_sets[name]:
            texts.extend(read_eval_items(uri, fields))
        items[name] = len(texts)
        for i in range(0, len(texts), 4096):
            chunk = texts[i:i + 4096]
            h, row = text_ngram_hashes(chunk, n)
            all_h.append(h)
            all_b.append(np.full(len(h), b, dtype=np.uint16))
            short[name] = short.get(name, 0) + int(len(chunk) - len(np.unique(row)))
    return index_from_hashes(np.concatenate(all_h) if all_h else np.zeros(0, np.uint64),
                             np.concatenate(all_b) if all_b else np.zeros(0, np.uint16),
                             n=n, names=names, items=items, short_items=short)


def index_from_hashes(hashes: np.ndarray, bench: np.ndarray, *, n: int, names: list[str],
                      items: dict[str, int] | None = None, short_items: dict[str, int] | None = None) -> NgramIndex:
    """Sort and deduplicate n-gram hashes (first benchmark wins) into an index."""
    order = np.lexsort((bench, hashes))
    h, b = hashes[order], bench[order]
    first = np.ones(len(h), dtype=bool)
    first[1:] = h[1:] != h[:-1]
    return NgramIndex(n=n, hashes=h[first], bench=b[first], names=list(names), items=dict(items or {}),
                      short_items=dict(short_items or {}))


@dataclass
class Hits:
    """What the matcher found in a batch: per row, the first hit (index position and
    first word) or -1; ``words``: the batch's words (to name the n-gram)."""

    first_pos: np.ndarray
    first_word: np.ndarray
    count: np.ndarray
    words: Words
    ngram_first: np.ndarray
    ngram_hit: np.ndarray


def match(texts: pa.Array, index: NgramIndex) -> Hits:
    """Every n-gram of every text looked up in the index."""
    w = words(normalize(texts))
    h, first = ngram_hashes(w, index.n)
    pos = index.lookup(h)
    hit = pos >= 0
    nrows = len(texts)
    first_pos = np.full(nrows, -1, dtype=np.int64)
    first_word = np.full(nrows, -1, dtype=np.int64)
    count = np.zeros(nrows, dtype=np.int64)
    if hit.any():
        rows = w.row[first[hit]]             # non-decreasing: n-grams are in text order
        np.add.at(count, rows, 1)
        uniq = np.unique(rows)
        k = np.searchsorted(rows, uniq)      # each row's first hit
        first_pos[uniq] = pos[hit][k]
        first_word[uniq] = first[hit][k]
    return Hits(first_pos=first_pos, first_word=first_word, count=count, words=w, ngram_first=first, ngram_hit=hit)
