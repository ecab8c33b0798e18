"""Per-string counts computed on the UTF-8 bytes of an Arrow string array
(:func:`stages.arrow_strings.utf8_buffers`), without a Python object per string or
token: occurrences of one byte (lines) and whitespace-separated words.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from stages.arrow_strings import utf8_buffers

_ASCII_WS = np.zeros(256, dtype=bool)
_ASCII_WS[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
_ASCII_WS.flags.writeable = False


def count_byte(arr: pa.Array, byte: int) -> np.ndarray:
    """Occurrences of one ASCII byte (``"\\n"`` -> 10) per string."""
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int64)
    offsets, b = utf8_buffers(arr)
    hits = np.flatnonzero(b == byte)
    return np.diff(np.searchsorted(hits, offsets))


def count_words(arr: pa.Array) -> np.ndarray:
    """Whitespace-separated tokens per string (``len(s.split())``), computed on the UTF-8
    bytes of the Arrow array without creating a Python object per string or token.
    Multi-byte Unicode whitespace (U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028,
    U+2029, U+202F, U+205F, U+3000) separates tokens as ``str.split`` does."""
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    offsets, b = utf8_buffers(arr)
    if len(b) == 0:
        return np.zeros(n, dtype=np.int64)
    ws = _ASCII_WS[b]
    if (b >= 0xC2).any():
        _mark_multibyte_ws(b, ws)
    starts = ~ws
    starts[1:] &= ws[:-1]
    heads = offsets[:-1][offsets[:-1] < len(b)]
    starts[heads] = ~ws[heads]          # a string's first byte starts a token if not blank
    return np.diff(np.searchsorted(np.flatnonzero(starts), offsets))


def _mark_multibyte_ws(b: np.ndarray, ws: np.ndarray) -> None:
    """Mark the bytes of multi-byte whitespace characters in ``ws`` (in place)."""
    m = len(b)
    c2 = np.flatnonzero(b[:-1] == 0xC2)
    c2 = c2[(b[c2 + 1] == 0x85) | (b[c2 + 1] == 0xA0)]
    ws[c2] = True
    ws[c2 + 1] = True
    for lead in (0xE1, 0xE2, 0xE3):
        p = np.flatnonzero(b[: max(m - 2, 0)] == lead)
        if not len(p):
            continue
        x, y = b[p + 1], b[p + 2]
        if lead == 0xE1:
            hit = (x == 0x9A) & (y == 0x80)                                   # U+1680
        elif lead == 0xE2:
            hit = ((x == 0x80) & ((y <= 0x8A) | (y == 0xA8) | (y == 0xA9) | (y == 0xAF))) | (
                (x == 0x81) & (y == 0x9F))                                    # U+2000-200A, 2028/9, 202F, 205F
        else:
            hit = (x == 0x80) & (y == 0x80)                                   # U+3000
        p = p[hit]
        ws[p] = True
        ws[p + 1] = True
        ws[p + 2] = True
