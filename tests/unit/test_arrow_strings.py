"""``utf8_buffers``: the one reader of a string column's buffers gives every string's
UTF-8 bytes back, whatever shape the array arrives in (sliced, chunked, large, with
nulls)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from stages.arrow_strings import utf8_buffers

TEXTS = ["Grüße", "", None, "naïve café", "東京", "a\nb", None, "x" * 300]


def strings_of(arr) -> list[str]:
    offsets, data = utf8_buffers(arr)
    assert offsets.dtype == np.int64 and data.dtype == np.uint8 and offsets[0] == 0
    assert len(offsets) == len(arr) + 1 and offsets[-1] == len(data)
    return [data[a:b].tobytes().decode("utf-8") for a, b in zip(offsets[:-1], offsets[1:])]


def expected(texts):
    return [t if t is not None else "" for t in texts]


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_every_string_reads_back_with_nulls_empty(kind):
    assert strings_of(pa.array(TEXTS, kind)) == expected(TEXTS)


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_a_slice_reads_its_own_strings_only(kind):
    arr = pa.array(TEXTS, kind)
    for lo, hi in [(1, 5), (3, 4), (5, 8), (2, 2)]:
        assert strings_of(arr.slice(lo, hi - lo)) == expected(TEXTS[lo:hi])


def test_chunked_array_reads_as_one():
    chunked = pa.chunked_array([pa.array(TEXTS[:3]), pa.array(TEXTS[3:])])
    assert strings_of(chunked) == expected(TEXTS)


def test_the_bytes_are_the_arrays_own_buffer_when_nothing_is_null():
    arr = pa.array(["abc", "de"])
    _, data = utf8_buffers(arr)
    assert data.base is not None and not data.flags.owndata


def test_empty_array_and_a_non_string_column():
    offsets, data = utf8_buffers(pa.array([], pa.string()))
    assert offsets.tolist() == [0] and len(data) == 0
    with pytest.raises(TypeError, match="int64"):
        utf8_buffers(pa.array([1, 2]))
