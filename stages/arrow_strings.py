"""An Arrow string array as NumPy views of its UTF-8 bytes: the one place that reads a
string column's buffers.

Batch kernels that scan bytes (counting lines and words, hashing URLs, n-grams or
shingles) work on ``data[offsets[i]:offsets[i + 1]]`` instead of a Python string per row.
Used by the heuristic filters, the code filters, ``url_filter``, decontamination,
dedup and the ARPA writer of the n-gram LMs.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def utf8_buffers(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)`` of a ``string`` or ``large_string`` array: string ``i`` is the
    UTF-8 bytes ``data[offsets[i]:offsets[i + 1]]``.

    ``offsets`` are int64 and start at 0 (a sliced array's are rebased), ``data`` is a
    zero-copy uint8 view of the array's data buffer where the array allows it (a chunked
    array is combined first); nulls read as empty strings."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        arr = pc.fill_null(arr, "")
    if pa.types.is_large_string(arr.type):
        off_type = np.int64
    elif pa.types.is_string(arr.type):
        off_type = np.int32
    else:
        raise TypeError(f"utf8_buffers: expected a string or large_string array, got {arr.type}")
    n = len(arr)
    if n == 0:
        return np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    _, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, dtype=off_type)[arr.offset: arr.offset + n + 1].astype(np.int64)
    lo, hi = int(offsets[0]), int(offsets[-1])
    if lo:
        offsets -= lo
    data = np.frombuffer(data_buf, dtype=np.uint8)[lo:hi] if hi > lo else np.zeros(0, dtype=np.uint8)
    return offsets, data
