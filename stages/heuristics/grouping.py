"""Equal keys and repeats: integer keys for strings (dictionary codes, SplitMix64 hashes)
and "has this line/n-gram occurred earlier in its document", one hash-table pass
(:func:`first_seen`) over (document, key) pairs.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_SPLITMIX_A = np.uint64(0xBF58476D1CE4E5B9)
_SPLITMIX_B = np.uint64(0x94D049BB133111EB)
#: the 64-bit golden-ratio constant, to spread small integers before :func:`mix64`
GOLDEN = np.uint64(0x9E3779B97F4A7C15)


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


def codes(values: pa.Array) -> np.ndarray:
    """Integer code per string: equal strings get equal codes (within this array)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    enc = pc.dictionary_encode(values)
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)


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
    doc_key = mix64(keys.astype(np.uint64) ^ mix64(parent.astype(np.uint64) + GOLDEN))
    return ~first_seen(doc_key)[1]


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
