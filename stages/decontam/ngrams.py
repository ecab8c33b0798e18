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
lookup: 5e-14 for 1M n-grams) with :class:`NgramIndex`; :class:`BloomIndex` trades that
for memory (Bloom filters: ``-ln(fpr) / ln(2)**2`` bits an n-gram, 4.8 bytes at the
default ``bloom_fpr`` 1e-8 instead of 10).
"""

from __future__ import annotations

import io
import json
import logging
import lzma
import zlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import zstandard

from datapipe import fs
from datapipe.readers.inputs import FileCorrupt, Input, classify, strip_compression
from stages.arrow_strings import utf8_buffers
from stages.hashing.radix import RadixIndex

log = logging.getLogger(__name__)

NON_WORD_RE2 = r"[^\p{L}\p{N}]+"
_P = 0x100000001B3 * 2 + 1          # word-byte multiplier (odd: invertible modulo 2**64)
_P_INV = pow(_P, -1, 2**64)
_Q = 0x9E3779B97F4A7C15              # n-gram combiner
_LEN_MIX = 0xC2B2AE3D27D4EB4F
_READ = 1 << 20


def normalize(texts: pa.Array) -> pa.Array:
    """Lower case, and every non-letter/digit run to one space (see module doc)."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    texts = pc.fill_null(texts.cast(pa.string()), "")
    return pc.replace_substring_regex(pc.utf8_lower(texts), NON_WORD_RE2, " ")


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
    offsets, data = utf8_buffers(arr)
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
        """Per hash, its position in the index or -1 (:class:`stages.hashing.radix.RadixIndex`)."""
        return self._radix_index().positions(hashes)

    def benchmarks(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash, the benchmark (index into ``names``) holding it, or -1."""
        pos = self.lookup(hashes)
        out = np.full(len(hashes), -1, dtype=np.int64)
        hit = pos >= 0
        out[hit] = self.bench[pos[hit]]
        return out

    def per_benchmark(self) -> dict[str, int]:
        """Distinct n-grams each benchmark owns (a shared one counts for the first)."""
        counts = np.bincount(self.bench, minlength=len(self.names)) if len(self.bench) else [0] * len(self.names)
        return {name: int(c) for name, c in zip(self.names, counts)}

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


def eval_input(uri: str, storage: fs.StorageOptions | None) -> Input:
    """An evaluation file through the input layer (a side input the user named, like
    arXiv's ``metadata_file``): rooted at its own folder, and locally also at the folder
    its link leads to (a named link, e.g. into a download cache, is followed)."""
    import os

    roots = [fs.parent(uri) or "."]
    if fs.is_local(uri):
        roots.append(os.path.dirname(os.path.realpath(fs.local_path(uri))))
    return Input(uri, fs.basename(uri), tuple(roots), storage)


def _read_all(fh, limit: int | None) -> bytes:
    """The stream's bytes (to ``limit``) in 1 MiB reads (a bounded stream's ``read()``
    would ask its decompressor for the whole budget at once)."""
    parts, got = [], 0
    while limit is None or got < limit:
        b = fh.read(_READ if limit is None else min(_READ, limit - got))
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def read_eval_items(uri: str, fields: tuple[str, ...], storage: fs.StorageOptions | None = None, *,
                    limit: int | None = None) -> list[str]:
    """The texts of one evaluation file: JSONL (``.jsonl``/``.json``: one object a line,
    each of ``fields`` that is present, a string or a list of strings), Parquet (the
    same fields as columns), else plain text (one item a non-empty line). Compressed
    files (``.gz``, ``.zst``, ``.bz2``, ``.xz``, or those magic bytes: how benchmarks
    ship, e.g. ``HumanEval.jsonl.gz``) are read decompressed through the input layer,
    their format named by the name without the compression suffix; a cut or damaged
    stream is an error, never a partial set. ``limit``: read no more than this many
    decompressed bytes (the whole lines before it; the first row group of a Parquet):
    the config check's look at a large set. Raises ``ValueError`` naming the file."""
    name = strip_compression(uri).lower()
    src = eval_input(uri, storage)
    out: list[str] = []

    def take(v: object) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list):
            out.extend(x for x in v if isinstance(x, str))

    comp = src.compression()
    try:
        if name.endswith(".parquet"):
            import pyarrow.parquet as pq

            if comp is None:
                pf = pq.ParquetFile(src.arrow_source())
            else:
                with src.open() as fh:
                    pf = pq.ParquetFile(pa.BufferReader(_read_all(fh, None)))
            cols = pf.schema_arrow.names
            if not any(f in cols for f in fields):
                raise ValueError(f"evaluation file {uri}: none of the text fields {list(fields)} is a column "
                                 f"(columns: {cols}); set text_fields")
            present = [f for f in fields if f in cols]
            t = (pf.read_row_group(0, columns=present) if limit is not None and pf.num_row_groups
                 else pf.read(columns=present))
            for f in present:
                for v in t.column(f).to_pylist():
                    take(v)
            return out
        with src.open() as fh:
            data = _read_all(fh, None if limit is None else limit + 1)
    except (FileCorrupt, EOFError, OSError, zlib.error, lzma.LZMAError, zstandard.ZstdError) as e:
        reason, detail = classify(e, comp)   # the readers' names: truncated_gzip, corrupt_zstd, ...
        raise ValueError(f"{reason}: {detail}") from None
    if limit is not None and len(data) > limit:
        data = data[:data.rfind(b"\n", 0, limit) + 1]   # whole lines only
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        hint = ("; it looks compressed: give it its compression suffix (.gz, .zst, .bz2, .xz)"
                if comp is None and data[:2] == b"\x1f\x8b" else "")
        raise ValueError(f"evaluation file {uri} is not UTF-8 text (byte {e.start} of its content){hint}") from None
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
    """What the matcher found in a batch: per row, the first hit (its benchmark, an index
    into ``names``, and its first word) or -1; ``words``: the batch's words (to name the n-gram)."""

    first_bench: np.ndarray
    first_word: np.ndarray
    count: np.ndarray
    words: Words
    ngram_first: np.ndarray
    ngram_hit: np.ndarray


def match(texts: pa.Array, index: "NgramIndex | BloomIndex") -> Hits:
    """Every n-gram of every text looked up in the index."""
    w = words(normalize(texts))
    h, first = ngram_hashes(w, index.n)
    pos = index.benchmarks(h)
    hit = pos >= 0
    nrows = len(texts)
    first_bench = np.full(nrows, -1, dtype=np.int64)
    first_word = np.full(nrows, -1, dtype=np.int64)
    count = np.zeros(nrows, dtype=np.int64)
    if hit.any():
        rows = w.row[first[hit]]             # non-decreasing: n-grams are in text order
        np.add.at(count, rows, 1)
        uniq = np.unique(rows)
        k = np.searchsorted(rows, uniq)      # each row's first hit
        first_bench[uniq] = pos[hit][k]
        first_word[uniq] = first[hit][k]
    return Hits(first_bench=first_bench, first_word=first_word, count=count, words=w, ngram_first=first, ngram_hit=hit)


# -- Bloom filters ---------------------------------------------------------------------

_M32 = np.uint64(0xFFFFFFFF)
#: the per-benchmark filters' false-positive rate: they only name the benchmark of an
#: n-gram the main filter holds, so a looser rate costs a rare wrong name, never a drop
NAME_FPR = 1e-4
#: the most bits one filter may have (probe positions are 32-bit fractions of ``m``)
MAX_BLOOM_BITS = 2**32


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: the n-gram hashes' bits spread evenly (the polynomial
    hash's low bits are weak)."""
    with np.errstate(over="ignore"):
        h = h ^ (h >> np.uint64(30))
        h = h * np.uint64(0xBF58476D1CE4E5B9)
        h = h ^ (h >> np.uint64(27))
        h = h * np.uint64(0x94D049BB133111EB)
        return h ^ (h >> np.uint64(31))


def bloom_size(count: int, fpr: float) -> tuple[int, int]:
    """(bits, probes) of a Bloom filter holding ``count`` items at false-positive rate
    ``fpr``: ``m = -count ln(fpr) / ln(2)^2`` (a multiple of 64), ``k = m/count ln 2``."""
    m = max(64, int(np.ceil(-max(count, 1) * np.log(fpr) / np.log(2) ** 2 / 64)) * 64)
    k = max(1, int(round(m / max(count, 1) * np.log(2))))
    if m > MAX_BLOOM_BITS:
        raise ValueError(f"a Bloom filter of {count} n-grams at fpr {fpr} needs {m} bits, more than "
                         f"{MAX_BLOOM_BITS}; raise bloom_fpr or use index_kind: exact")
    return m, k


@dataclass
class Bloom:
    """One Bloom filter over 64-bit hashes: ``m`` bits in uint64 words, ``k`` probes by
    double hashing (``g_i = h1 + i*h2`` mod 2**32, scaled to ``[0, m)``), numpy only.
    A query stops probing at its first unset bit, so clean text costs ~2 probes."""

    bits: np.ndarray
    m: int
    k: int

    @classmethod
    def build(cls, hashes: np.ndarray, fpr: float) -> "Bloom":
        m, k = bloom_size(len(hashes), fpr)
        words_ = np.zeros(m // 64, dtype=np.uint64)
        h1, h2 = cls._split(hashes)
        for i in range(k):
            idx = cls._probe(h1, h2, i, m)
            np.bitwise_or.at(words_, idx >> np.uint64(6), np.uint64(1) << (idx & np.uint64(63)))
        return cls(bits=words_, m=m, k=k)

    @staticmethod
    def _split(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = _mix(hashes.astype(np.uint64, copy=False))
        return a & _M32, (a >> np.uint64(32)) | np.uint64(1)

    @staticmethod
    def _probe(h1: np.ndarray, h2: np.ndarray, i: int, m: int) -> np.ndarray:
        with np.errstate(over="ignore"):
            g = (h1 + np.uint64(i) * h2) & _M32
            return (g * np.uint64(m)) >> np.uint64(32)

    def contains(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash, whether the filter may hold it (never False for a member)."""
        h1, h2 = self._split(hashes)
        todo = np.arange(len(hashes))
        for i in range(self.k):
            if not len(todo):
                break
            idx = self._probe(h1[todo], h2[todo], i, self.m)
            bit = (self.bits[(idx >> np.uint64(6)).astype(np.int64)] >> (idx & np.uint64(63))) & np.uint64(1)
            todo = todo[bit.astype(bool)]
        out = np.zeros(len(hashes), dtype=bool)
        out[todo] = True
        return out

    @property
    def nbytes(self) -> int:
        return int(self.bits.nbytes)


@dataclass
class BloomIndex:
    """The evaluation n-grams as Bloom filters, for sets too large to hold exactly: one
    filter over every n-gram (the hot path: each document n-gram is probed once) and,
    with several benchmarks, one per benchmark at :data:`NAME_FPR`, consulted only for the
    n-grams the first filter holds, to name the benchmark (a true member of benchmark B
    may be named after an earlier-listed one with probability ~NAME_FPR). A hit needs
    both (no false negatives, so a true member always passes), so the false-positive
    rate per n-gram is at most ``fpr``. Same :meth:`benchmarks` contract as
    :class:`NgramIndex`."""

    n: int
    names: list[str]
    fpr: float
    ngrams: int
    all: Bloom
    per: list[Bloom]

    @classmethod
    def from_index(cls, index: NgramIndex, fpr: float) -> "BloomIndex":
        per = ([Bloom.build(index.hashes[index.bench == b], max(fpr, NAME_FPR)) for b in range(len(index.names))]
               if len(index.names) > 1 else [])
        return cls(n=index.n, names=list(index.names), fpr=fpr, ngrams=len(index),
                   all=Bloom.build(index.hashes, fpr), per=per)

    def __len__(self) -> int:
        return self.ngrams

    @property
    def nbytes(self) -> int:
        return self.all.nbytes + sum(b.nbytes for b in self.per)

    def benchmarks(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash, the first benchmark whose filter holds it, or -1."""
        out = np.full(len(hashes), -1, dtype=np.int64)
        cand = np.flatnonzero(self.all.contains(hashes))
        if not self.per:
            out[cand] = 0
            return out
        for b, f in enumerate(self.per):
            if not len(cand):
                break
            yes = f.contains(hashes[cand])
            out[cand[yes]] = b
            cand = cand[~yes]
        return out
