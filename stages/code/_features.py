"""Per-file statistics of a whole batch of source files, vectorised over the batch's
UTF-8 buffer (no Python per line or per character).

Lengths are in code points, as Python's ``len`` counts them: a UTF-8 continuation byte
(``0b10xxxxxx``) starts no character. Lines follow ``str.split("\\n")`` with a trailing
empty line not counted (``"a\\nb\\n"`` has 2 lines, ``""`` has 0), which is what
``str.splitlines`` gives on ``\\n``-terminated code; the line lengths exclude the ``\\n``.

The alphanumeric fraction counts ASCII letters and digits plus every non-ASCII
character whose UTF-8 lead byte is a letter-range one (``U+00C0`` and up): in code,
non-ASCII characters are nearly all letters of identifiers, comments and strings.
BigCode's ``alphanum_fraction`` calls ``str.isalnum`` per character; on ASCII files the
two agree exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stages.arrow_strings import utf8_buffers

_ALNUM = np.zeros(256, dtype=bool)
for _c in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789":
    _ALNUM[_c] = True
_ALNUM[0xC3:0xF5] = True  # lead bytes of U+00C0 and above (Latin-1 letters onwards)
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 10, 13, 32]] = True

#: StarCoder2's encoded-data patterns (Lozhkov et al. 2024, "StarCoder 2 and The Stack
#: v2", data preprocessing): base64 runs, hex byte lists, ``\\u`` escapes.
ENCODED_DATA_RE = (r"[a-zA-Z0-9+/\n=]{64,}"
                   r"|(?:\b(?:0x|\\x)?[0-9a-fA-F]{2}(?:,|\b\s*)){8,}"
                   r"|(?:\\u[0-9a-fA-F]{4}){8,}")


@dataclass
class FileStats:
    """One value per file of the batch."""

    chars: np.ndarray          # code points
    size: np.ndarray           # UTF-8 bytes
    lines: np.ndarray
    max_line: np.ndarray       # longest line, code points
    mean_line: np.ndarray      # mean line length, code points (0 for an empty file)
    alnum_fraction: np.ndarray
    space_fraction: np.ndarray
    long_line_share: np.ndarray  # share of characters in lines of >= ``long_line`` code points


def file_stats(texts: pa.Array, long_line: int = 500) -> FileStats:
    """Line and character statistics of every string in ``texts`` (nulls: empty)."""
    n = len(texts)
    offsets, data = utf8_buffers(texts)
    starts, ends = offsets[:-1], offsets[1:]
    size = np.diff(offsets)
    # characters before byte position p: p minus the continuation bytes before it
    # (sparse in code: most files are ASCII)
    cont = np.flatnonzero((data & 0xC0) == 0x80)

    def cidx(pos: np.ndarray) -> np.ndarray:
        return pos - np.searchsorted(cont, pos) if len(cont) else pos

    chars = cidx(ends) - cidx(starts)
    alnum_flags, space_flags = _ALNUM[data], _SPACE[data]
    alnum = np.fromiter((np.count_nonzero(alnum_flags[a:b]) for a, b in zip(starts.tolist(), ends.tolist())),
                        dtype=np.int64, count=n)
    space = np.fromiter((np.count_nonzero(space_flags[a:b]) for a, b in zip(starts.tolist(), ends.tolist())),
                        dtype=np.int64, count=n)

    # line events: every "\n" ends a line; every file end ends one too (kept unless empty)
    nl = np.flatnonzero(data == 10)
    ev_pos = np.concatenate([nl, ends])
    ev_next = np.concatenate([nl + 1, ends])
    ev_end_of_file = np.concatenate([np.zeros(len(nl), bool), np.ones(n, bool)])
    order = np.lexsort((ev_end_of_file == 0, ev_pos))  # at one position the file end comes first
    ev_pos, ev_next, ev_end_of_file = ev_pos[order], ev_next[order], ev_end_of_file[order]
    line_start = np.empty_like(ev_pos)
    if len(ev_pos):
        line_start[0] = 0
        line_start[1:] = ev_next[:-1]
    length = cidx(ev_pos) - cidx(line_start)
    doc = np.cumsum(ev_end_of_file) - ev_end_of_file  # file index of each event
    real = ~(ev_end_of_file & (length == 0))            # an empty last line is no line
    doc, length = doc[real], length[real]
    lines = np.bincount(doc, minlength=n)
    total = np.bincount(doc, weights=length, minlength=n)
    max_line = np.zeros(n, dtype=np.int64)
    np.maximum.at(max_line, doc, length)
    long_chars = np.bincount(doc, weights=np.where(length >= long_line, length, 0), minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_line = np.where(lines > 0, total / np.maximum(lines, 1), 0.0)
        alnum_fraction = np.where(chars > 0, alnum / np.maximum(chars, 1), 0.0)
        space_fraction = np.where(chars > 0, space / np.maximum(chars, 1), 0.0)
        long_line_share = np.where(chars > 0, long_chars / np.maximum(chars, 1), 0.0)
    return FileStats(chars=chars, size=size, lines=lines, max_line=max_line, mean_line=mean_line,
                     alnum_fraction=alnum_fraction, space_fraction=space_fraction,
                     long_line_share=long_line_share)


def encoded_data(texts: pa.Array, chars: np.ndarray, run_over: float = 0) -> tuple[np.ndarray, np.ndarray]:
    """(fraction of characters inside encoded-data matches, longest match in code
    points) per file. One RE2 replace over the batch measures the matched characters;
    only the files with more than ``run_over`` matched characters (the only ones that can
    hold a longer match) are scanned in Python for their longest one; the others report
    their matched total, a bound of their longest match."""
    import re

    stripped = pc.replace_substring_regex(texts, ENCODED_DATA_RE, "")
    removed = chars - pc.utf8_length(stripped).to_numpy(zero_copy_only=False)
    frac = np.where(chars > 0, removed / np.maximum(chars, 1), 0.0)
    longest = removed.astype(np.int64)
    hit = np.flatnonzero(removed > run_over)
    if len(hit):
        rx = re.compile(ENCODED_DATA_RE, re.ASCII)
        for i, t in zip(hit, texts.take(pa.array(hit)).to_pylist()):
            longest[i] = max((m.end() - m.start() for m in rx.finditer(t)), default=0)
    return frac, longest
