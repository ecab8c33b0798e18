"""A radix index over sorted 64-bit hashes, for vectorised membership tests.

The top ``bits`` of a hash (about log2 of the entry count, at most 24) select a bucket of
2-4 consecutive entries; a query reads the bucket's bounds and compares a few entries, all
in NumPy over the whole batch of queries: a couple of array reads per query instead of a
binary search. Used by the URL lists (:mod:`stages.heuristics.url_filter`) and the decontamination
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
        # one bit per slot of the hashes' low bits, ~8 slots an entry: a query whose bit is
        # clear (most absent ones, ~90%) stops after one read of this small table
        self.slot_bits = max(6, min(34, (8 * len(hashes)).bit_length()))
        bits = np.zeros(1 << self.slot_bits, dtype=bool)
        bits[(hashes & np.uint64((1 << self.slot_bits) - 1)).astype(np.int64)] = True
        self.present = np.packbits(bits, bitorder="little").view("<u8").astype(np.uint64, copy=False)

    @property
    def nbytes(self) -> int:
        """The bucket and presence tables' size (the hashes are the caller's)."""
        return int(self.bucket.nbytes + self.present.nbytes)

    def positions(self, queries: np.ndarray) -> np.ndarray:
        """Per query, the position of the first equal entry of ``hashes``, or -1."""
        out = np.full(len(queries), -1, dtype=np.int64)
        if not len(self.hashes) or not len(queries):
            return out
        slots = queries & np.uint64((1 << self.slot_bits) - 1)
        words = self.present[(slots >> np.uint64(6)).astype(np.int64)]
        maybe = np.flatnonzero((words >> (slots & np.uint64(63))) & np.uint64(1))
        b = (queries[maybe] >> np.uint64(64 - self.bits)).astype(np.int64)
        lo, hi = self.bucket[b], self.bucket[b + 1]
        nonempty = hi > lo
        todo, lo, hi = maybe[nonempty], lo[nonempty], hi[nonempty]
        k = lo.astype(np.int64)
        while len(todo):
            eq = self.hashes[k] == queries[todo]
            out[todo[eq]] = k[eq]
            k = k + 1
            live = ~eq & (k < hi)
            todo, k, hi = todo[live], k[live], hi[live]
        return out
