"""A radix index over sorted 64-bit hashes, for vectorised membership tests.

The top ``bits`` of a hash (about log2 of the entry count, at most 24) select a bucket of
2-4 consecutive entries; a query reads the bucket's bounds and compares a few entries, all
in NumPy over the whole batch of queries: a couple of array reads per query instead of a
binary search. Used by the URL lists (:mod:`stages.url_filter`) and the decontamination
n-gram index (:mod:`stages.decontam.ngrams`).
"""

from __future__ import annotations

import numpy as np


class RadixIndex:
    """Positions of query hashes in ``hashes`` (uint64, sorted ascending)."""

    def __init__(self, hashes: np.ndarray) -> None:
        self.hashes = hashes
        self.bits = max(1, min(24, int(len(hashes)).bit_length() - 1))
        top = (hashes >> np.uint64(64 - self.bits)).astype(np.int64)
        self.bucket = np.searchsorted(top, np.arange(2**self.bits + 1)).astype(
            np.int32 if len(top) < 2**31 else np.int64)

    @property
    def nbytes(self) -> int:
        """The bucket table's size (the hashes are the caller's)."""
        return int(self.bucket.nbytes)

    def positions(self, queries: np.ndarray) -> np.ndarray:
        """Per query, the position of the first equal entry of ``hashes``, or -1."""
        out = np.full(len(queries), -1, dtype=np.int64)
        if not len(self.hashes) or not len(queries):
            return out
        b = (queries >> np.uint64(64 - self.bits)).astype(np.int64)
        lo, hi = self.bucket[b], self.bucket[b + 1]
        todo = np.flatnonzero(hi > lo)
        step = 0
        while len(todo):
            k = lo[todo] + step
            live = k < hi[todo]
            todo, k = todo[live], k[live]
            eq = self.hashes[k] == queries[todo]
            out[todo[eq]] = k[eq]
            todo = todo[~eq]
            step += 1
        return out
