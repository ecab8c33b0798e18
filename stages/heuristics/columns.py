"""A batch's columns as NumPy arrays and Python lists, the form the heuristic filters'
rules compute on (nulls read as empty strings, ``False`` or ``0``).

Per-document aggregates that Python's ``str`` methods compute in one C call (``count``,
``len``) stay in Python (:func:`text_list`, :func:`py_counts`); per-token and per-line
work is done on arrays (:mod:`.pieces`, :mod:`.words`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


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
