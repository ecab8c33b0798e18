"""Text normalisation, shingling and MinHash signatures, vectorised over a batch.

The contract that matters: for every document, :func:`signatures` returns exactly the
hash values of ``datasketch.MinHash(num_perm=P, seed=S, scheme=X)`` after
``update(s)`` for every shingle ``s`` of :func:`shingles` (the default datasketch hash,
``sha1_hash32``: the first four bytes of SHA-1, little endian). Users can therefore mix
our signatures with datasketch tooling (``MinHash(hashvalues=..., scheme=...)``).

How it is fast: the normalisation runs in Arrow's C++ kernels over the whole batch;
shingle boundaries come from one NumPy pass over the batch's UTF-8 buffer; the only
Python loop left is one ``hashlib.sha1`` call per shingle (which the datasketch
equality requires); the permutations and the per-document minimum are NumPy over
(permutations x shingles) tiles sized to stay in cache.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stages.arrow_strings import utf8_buffers

log = logging.getLogger(__name__)

Scheme = Literal["affine32", "legacy"]
ShingleKind = Literal["word", "token", "char"]

_MERSENNE = np.uint64((1 << 61) - 1)
_MAX32 = np.uint64((1 << 32) - 1)
#: shingles per tile of the permutation step: 128 x 8192 uint32 = 4 MiB
_TILE = 8192


@dataclass(kw_only=True, frozen=True)
class Normalisation:
    """How text is normalised before shingling (and before the exact-duplicate hash).

    ``punctuation`` removes Unicode punctuation and symbols; ``digits`` maps every
    decimal digit to ``0``; ``whitespace`` collapses runs of whitespace to one space
    and trims (word shingles always split on whitespace, so it only changes character
    shingles).
    """

    lowercase: bool = True
    punctuation: bool = True
    digits: bool = True
    whitespace: bool = True
    nfkc: bool = False


@dataclass(kw_only=True, frozen=True)
class Shingling:
    """``word``: whitespace-separated words (prose); ``token``: code tokens, each run of
    letters/digits/underscore and each punctuation or symbol character its own token
    (``x+=1`` is ``x + = 1``), so code that differs only in spacing or layout has the same
    shingles; ``char``: code points."""

    kind: ShingleKind = "word"
    n: int = 5

    @property
    def words(self) -> bool:
        """Shingles are runs of whitespace-separated tokens (``word`` and ``token``)."""
        return self.kind != "char"


def normalise(texts: pa.Array | pa.ChunkedArray, norm: Normalisation, *, for_words: bool,
              symbols: bool = False) -> pa.Array:
    """Normalised copy of a string array (nulls become empty strings). ``symbols``: every
    punctuation or symbol character left becomes a token of its own (``token`` shingles)."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks() if texts.num_chunks != 1 else texts.chunk(0)
    t = pc.fill_null(texts.cast(pa.large_string()), "")
    if norm.nfkc:
        t = pc.utf8_normalize(t, "NFKC")
    if norm.lowercase:
        t = pc.utf8_lower(t)
    if norm.punctuation:
        t = pc.replace_substring_regex(t, r"[\pP\pS]+", "")
    if norm.digits:
        t = pc.replace_substring_regex(t, r"\p{Nd}", "0")
    if symbols:
        t = pc.replace_substring_regex(t, r"([\p{Po}\p{Ps}\p{Pe}\p{Pd}\p{Pi}\p{Pf}\pS])", r" \1 ")
    if norm.whitespace or for_words:
        t = pc.replace_substring_regex(t, r"[\s\p{Z}\x{85}\x{1c}-\x{1f}]+", " ")
        t = pc.utf8_trim(t, " ")
    return t


def shingle_spans(norm_texts: pa.Array, shingling: Shingling) -> tuple[memoryview, np.ndarray, np.ndarray, np.ndarray]:
    """Byte spans of every shingle of every document of a normalised batch.

    Returns ``(buffer, starts, ends, ptr)``: shingle ``j`` is ``buffer[starts[j]:ends[j]]``
    and document ``d`` owns shingles ``ptr[d]:ptr[d+1]``. Word shingles are ``n``
    consecutive whitespace-separated tokens joined by one space; character shingles
    are ``n`` consecutive code points. A document shorter than ``n`` tokens (or code
    points) has one shingle, the whole document; an empty one has none.
    """
    offsets, data = utf8_buffers(norm_texts)
    buf = memoryview(data)   # offsets start at the first string: spans index data itself
    ndocs = len(offsets) - 1
    nonempty = offsets[1:] > offsets[:-1]
    if shingling.words:
        # normalised text: single spaces between tokens, none at either end
        sp = np.flatnonzero(data == 0x20).astype(np.int64)
        tok_start = np.sort(np.concatenate([offsets[:-1][nonempty], sp + 1]))
        tok_end = np.sort(np.concatenate([sp, offsets[1:][nonempty]]))
    else:
        tok_start = np.flatnonzero((data & 0xC0) != 0x80).astype(np.int64)
        tok_end = np.empty_like(tok_start)
        tok_end[:-1] = tok_start[1:]
        if len(tok_start):
            tok_end[-1] = len(data)
        # the last code point of each document ends at the document's end
        doc_of_tok = np.searchsorted(offsets, tok_start, side="right") - 1
        last = np.flatnonzero(np.diff(np.append(doc_of_tok, ndocs)) != 0)
        tok_end[last] = offsets[1:][doc_of_tok[last]]
    doc_of_tok = np.searchsorted(offsets, tok_start, side="right") - 1
    counts = np.bincount(doc_of_tok, minlength=ndocs).astype(np.int64)
    first_tok = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    n = shingling.n
    k = np.where(counts > 0, np.maximum(counts - n + 1, 1), 0)
    ptr = np.concatenate([[0], np.cumsum(k)]).astype(np.int64)
    total = int(ptr[-1])
    doc_of_sh = np.repeat(np.arange(ndocs, dtype=np.int64), k)
    j = np.arange(total, dtype=np.int64) - ptr[doc_of_sh]
    t0 = first_tok[doc_of_sh] + j
    t1 = t0 + np.minimum(n, counts[doc_of_sh]) - 1
    return buf, tok_start[t0], tok_end[t1], ptr


def sha1_hash32(buf: memoryview, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``datasketch.hashfunc.sha1_hash32`` of every span, as uint32."""
    if len(starts) == 0:
        return np.zeros(0, np.uint32)
    sha1 = hashlib.sha1
    digests = b"".join([sha1(buf[s:e]).digest() for s, e in zip(starts.tolist(), ends.tolist())])
    return np.frombuffer(digests, dtype="<u4").reshape(-1, 5)[:, 0].astype(np.uint32)


def permutations(num_perm: int, seed: int, scheme: Scheme = "affine32") -> tuple[np.ndarray, np.ndarray]:
    """The ``(a, b)`` parameters datasketch draws from ``np.random.RandomState(seed)``."""
    gen = np.random.RandomState(seed)
    if scheme == "legacy":
        pairs = [(gen.randint(1, _MERSENNE, dtype=np.uint64), gen.randint(0, _MERSENNE, dtype=np.uint64))
                 for _ in range(num_perm)]
        ab = np.array(pairs, dtype=np.uint64).T
        return ab[0].copy(), ab[1].copy()
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a, b


def fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finaliser (datasketch's pre-mix for ``affine32``)."""
    h = h.astype(np.uint32, copy=True)
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def min_by_document(hv: np.ndarray, ptr: np.ndarray, a: np.ndarray, b: np.ndarray, scheme: Scheme = "affine32") -> np.ndarray:
    """Per-document minimum of the permuted hashes: the MinHash signatures.

    ``hv`` are the raw 32-bit shingle hashes, document ``d`` owning ``hv[ptr[d]:ptr[d+1]]``.
    Returns ``(documents, num_perm)`` uint32; a document without shingles gets
    datasketch's empty value (``2**32 - 1`` everywhere).
    """
    ndocs, num_perm = len(ptr) - 1, len(a)
    sig = np.full((ndocs, num_perm), np.uint32(0xFFFFFFFF), dtype=np.uint32)
    total = len(hv)
    if total == 0:
        return sig
    if scheme == "legacy":
        x = hv.astype(np.uint64)
        a2, b2 = a[:, None], b[:, None]
    else:
        x = fmix32(hv)
        a2, b2 = a[:, None], b[:, None]
    counts = np.diff(ptr)
    with_sh = np.flatnonzero(counts > 0)
    starts_all = ptr[with_sh]
    tile = np.empty((num_perm, _TILE), dtype=np.uint64 if scheme == "legacy" else np.uint32)
    for c0 in range(0, total, _TILE):
        c1 = min(c0 + _TILE, total)
        w = c1 - c0
        out = tile[:, :w]
        xc = x[c0:c1]
        if scheme == "legacy":
            np.multiply(a2, xc[None, :], out=out)
            np.add(out, b2, out=out)
            np.remainder(out, _MERSENNE, out=out)
            np.bitwise_and(out, _MAX32, out=out)
        else:
            np.multiply(a2, xc[None, :], out=out)
            np.add(out, b2, out=out)
        # documents with shingles inside [c0, c1)
        lo = np.searchsorted(starts_all, c0, side="right") - 1
        hi = np.searchsorted(starts_all, c1, side="left")
        lo = max(lo, 0)
        docs = with_sh[lo:hi]
        seg = np.maximum(ptr[docs], c0) - c0
        keep = ptr[docs + 1] > c0
        docs, seg = docs[keep], seg[keep]
        red = np.minimum.reduceat(out, seg, axis=1).T
        sig[docs] = np.minimum(sig[docs], red.astype(np.uint32))
    return sig


def unique_sorted_per_document(hv: np.ndarray, ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each document's distinct shingle hashes, sorted (for exact Jaccard).

    Returns ``(values, new_ptr)`` in the same layout as ``(hv, ptr)``."""
    ndocs = len(ptr) - 1
    if len(hv) == 0:
        return hv, np.zeros(ndocs + 1, np.int64)
    doc = np.repeat(np.arange(ndocs, dtype=np.int64), np.diff(ptr))
    order = np.lexsort((hv, doc))
    v, d = hv[order], doc[order]
    keep = np.ones(len(v), dtype=bool)
    keep[1:] = (v[1:] != v[:-1]) | (d[1:] != d[:-1])
    v, d = v[keep], d[keep]
    counts = np.bincount(d, minlength=ndocs)
    return v, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


@dataclass(frozen=True)
class BatchSignatures:
    """What the signature pass computes for one batch."""

    sig: np.ndarray          # (docs, num_perm) uint32
    n_shingles: np.ndarray   # (docs,) int64, 0 = not eligible
    exact: list[bytes]       # 16-byte hash of the normalised text per document
    shingle_values: np.ndarray | None  # distinct shingle hashes, sorted per document
    shingle_ptr: np.ndarray | None


def batch_signatures(texts: pa.Array | pa.ChunkedArray, *, norm: Normalisation, shingling: Shingling,
                     a: np.ndarray, b: np.ndarray, scheme: Scheme = "affine32",
                     keep_shingles: bool = False) -> BatchSignatures:
    """Signatures, exact hashes and (optionally) shingle sets of a batch of texts."""
    import xxhash

    normed = normalise(texts, norm, for_words=shingling.words, symbols=shingling.kind == "token")
    buf, starts, ends, ptr = shingle_spans(normed, shingling)
    hv = sha1_hash32(buf, starts, ends)
    sig = min_by_document(hv, ptr, a, b, scheme)
    offsets, _ = utf8_buffers(normed)
    h128 = xxhash.xxh3_128_digest
    exact = [h128(buf[s:e]) for s, e in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
    vals = vptr = None
    if keep_shingles:
        vals, vptr = unique_sorted_per_document(hv, ptr)
    return BatchSignatures(sig=sig, n_shingles=np.diff(ptr), exact=exact, shingle_values=vals, shingle_ptr=vptr)


def shingles(text: str, *, norm: Normalisation = Normalisation(), shingling: Shingling = Shingling()) -> list[bytes]:
    """The shingles of one document, as bytes to feed ``datasketch.MinHash.update``.

    The reference, per-document form of what :func:`batch_signatures` hashes."""
    normed = normalise(pa.array([text], pa.large_string()), norm, for_words=shingling.words,
                       symbols=shingling.kind == "token")[0].as_py()
    n = shingling.n
    if shingling.words:
        toks = normed.split(" ") if normed else []
        if not toks:
            return []
        if len(toks) < n:
            return [" ".join(toks).encode("utf-8")]
        return [" ".join(toks[i:i + n]).encode("utf-8") for i in range(len(toks) - n + 1)]
    if not normed:
        return []
    if len(normed) < n:
        return [normed.encode("utf-8")]
    return [normed[i:i + n].encode("utf-8") for i in range(len(normed) - n + 1)]


# -- LSH parameters -----------------------------------------------------------------

def _fp_probability(threshold: float, b: int, r: int) -> float:
    from scipy.integrate import quad

    return quad(lambda s: 1 - (1 - s ** float(r)) ** float(b), 0.0, threshold)[0]


def _fn_probability(threshold: float, b: int, r: int) -> float:
    from scipy.integrate import quad

    return quad(lambda s: 1 - (1 - (1 - s ** float(r)) ** float(b)), threshold, 1.0)[0]


def optimal_bands_rows(threshold: float, num_perm: int, weights: tuple[float, float] = (0.5, 0.5)) -> tuple[int, int]:
    """``(bands, rows)`` minimising ``w_fp * P(false positive) + w_fn * P(false negative)``.

    The same grid search and integrals as datasketch's ``MinHashLSH`` (so the same
    threshold and weights give the same parameters): similarity is uniform on [0, 1],
    a false positive is a candidate below ``threshold``, a false negative a
    non-candidate above it."""
    wfp, wfn = weights
    best, opt = float("inf"), (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            err = _fp_probability(threshold, b, r) * wfp + _fn_probability(threshold, b, r) * wfn
            if err < best:
                best, opt = err, (b, r)
    return opt


def candidate_probability(s: float | np.ndarray, bands: int, rows: int) -> float | np.ndarray:
    """P(two documents of Jaccard similarity ``s`` share at least one band): the S-curve."""
    return 1.0 - (1.0 - np.power(s, rows)) ** bands


def s_curve(bands: int, rows: int, points: Sequence[float] = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))) -> dict[str, float]:
    return {f"{p:.2f}": round(float(candidate_probability(p, bands, rows)), 4) for p in points}


# -- band buckets -------------------------------------------------------------------

_K1 = np.uint64(0xFF51AFD7ED558CCD)
_K2 = np.uint64(0xC4CEB9FE1A85EC53)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
#: identifies the bucket hash below in persisted indexes; change it if the hash changes
BUCKET_HASH_VERSION = "fmix64-band-v1"


def _fmix64(h: np.ndarray) -> np.ndarray:
    h ^= h >> np.uint64(33)
    h *= _K1
    h ^= h >> np.uint64(33)
    h *= _K2
    h ^= h >> np.uint64(33)
    return h


def band_buckets(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """One 64-bit bucket id per (document, band): a hash of the band's ``rows`` values
    and the band number. Two documents share a bucket iff (up to 64-bit collisions)
    they agree on every value of that band, which is datasketch's candidate rule."""
    n = sig.shape[0]
    seg = sig[:, : bands * rows].reshape(n, bands, rows).astype(np.uint64)
    with np.errstate(over="ignore"):
        h = np.broadcast_to((np.arange(bands, dtype=np.uint64) + np.uint64(1)) * _GOLD, (n, bands)).copy()
        for j in range(rows):
            h = _fmix64((h ^ seg[:, :, j]) * _GOLD + np.uint64(j))
    return h
