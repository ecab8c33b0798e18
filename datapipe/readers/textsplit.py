"""Cutting one long text file into many documents: the ``split:`` option of ``text`` sources.

A plain-text corpus is often one file holding many documents (WikiText, a book
collection, a log of posts); whole, it is one multi-megabyte document that length
filters drop. ``split`` says where documents end:

* ``paragraphs`` – at blank lines;
* ``lines`` – at every line break (blank lines are skipped);
* ``regex`` – a new document starts at each line matching ``pattern`` (``re.search``;
  anchor with ``^``/``$``), e.g. ``'^ = [^=].* = $'`` for WikiText article titles. Text
  before the first match is a document of its own.

``max_chars`` (0 = no limit) caps a document's length: with ``paragraphs`` and ``lines``
consecutive pieces are packed together up to it; any piece longer than it (and a
``regex`` section, which is never merged with the next) is cut at paragraph boundaries,
then line boundaries, and only a single longer line at the character limit.

The file is streamed line by line: memory holds one document. A document's key and
origin are ``<relative path>:<first line number>`` (1-based), so ids do not depend on
where other documents end; a later piece of one line cut at ``max_chars`` adds the
character column it starts at, ``<relative path>:<line>+<column>`` (0-based), so every
piece has its own id.
"""

from __future__ import annotations

import codecs
import functools
import io
import re
from typing import Iterable, Iterator

from datapipe.errors import SpecError
from datapipe.readers.base import Rec, reject

SPLITS = ("paragraphs", "lines", "regex")


def check_split_options(opts) -> None:
    """Validate a text source's ``split``/``pattern``/``max_chars`` options."""
    if opts.split is not None and opts.split not in SPLITS:
        raise SpecError(f"option split must be one of {list(SPLITS)} (or null: one document per file), got {opts.split!r}")
    if opts.split == "regex":
        if not isinstance(opts.pattern, str) or not opts.pattern:
            raise SpecError("option split: regex needs 'pattern', a regular expression matching the line that "
                            "starts each document, e.g. '^ = [^=].* = $'")
        try:
            re.compile(opts.pattern)
        except re.error as exc:
            raise SpecError(f"option pattern {opts.pattern!r} is not a valid regular expression: {exc}") from None
    elif opts.pattern is not None:
        raise SpecError("option pattern is only used with split: regex; remove it or set split: regex")
    if not isinstance(opts.max_chars, int) or opts.max_chars < 0:
        raise SpecError(f"option max_chars must be an integer >= 0 (0 = no limit), got {opts.max_chars!r}")
    if opts.max_chars and opts.split is None:
        raise SpecError("option max_chars needs split (paragraphs, lines or regex)")


def bounded_lines(stream, cap: int) -> Iterator[str]:
    """The lines of a text stream in pieces of at most ``cap`` + 1 characters (a C-level
    iterator: no Python frame per line). A piece of ``cap`` + 1 characters that does not
    end the line is a line longer than ``cap``: :func:`_sections` reads it through
    without holding it."""
    return iter(functools.partial(stream.readline, cap + 1), "")


def _sections(lines: Iterable[str], split: str, pattern: re.Pattern | None,
              cap: int | None = None, flush: bool = False) -> Iterator[tuple[int, list[str] | None]]:
    """``(first line number, lines)`` of each piece, blank edges trimmed, blank pieces
    dropped. A piece past ``cap`` characters (or holding a line ``None``: longer than
    ``cap``) is ``(first, None)``, its lines not kept; with ``flush`` a piece is instead
    handed on in parts of about ``cap`` characters (``max_chars`` cuts them anyway)."""
    buf: list[str] = []
    size, over = 0, False
    first = 0
    no = 0
    long_line = False   # inside a line longer than cap: its pieces are passed over
    for line in lines:
        if long_line:
            long_line = not line.endswith("\n")
            continue
        no += 1
        if cap is not None and len(line) > cap and not line.endswith("\n"):
            long_line = True
            line = None
        if line is None:
            if split == "lines":
                yield no, None
                continue
            if not buf:
                first = no
            over = True
            continue
        line = line.rstrip("\r\n")
        if split == "lines":
            if line.strip():
                yield no, [line]
            continue
        blank = not line.strip()
        if split == "paragraphs" and blank:
            if buf or over:
                yield first, None if over else buf
            buf, size, over = [], 0, False
            continue
        if split == "regex" and pattern.search(line):
            if over or any(x.strip() for x in buf):
                yield first, None if over else buf
            buf, size, over = [], 0, False
        if not buf and not over:
            first = no
        if over:
            continue
        if cap is not None and size + len(line) + 1 > cap and buf:
            if flush:
                yield first, buf
                buf, size, first = [], 0, no
            else:
                buf, over = [], True
                continue
        buf.append(line)
        size += len(line) + 1
    if over or any(x.strip() for x in buf):
        yield first, None if over else buf


def _trim(first: int, lines: list[str]) -> tuple[int, list[str]]:
    while lines and not lines[0].strip():
        lines = lines[1:]
        first += 1
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return first, lines


def _cut(first: int, lines: list[str], max_chars: int) -> Iterator[tuple[int, int, str]]:
    """A section longer than ``max_chars`` as chunks cut at paragraph, then line,
    boundaries: ``(line number, column, text)``, the column (0-based, in characters) where
    a piece starts inside a line cut at the character limit, else 0."""
    chunk: list[str] = []
    start, start_col, size = first, 0, 0
    para_end = None  # index in chunk after the last blank line
    for i, line in enumerate(lines):
        no = first + i
        col = 0
        while len(line) > max_chars:   # one line longer than the limit: hard cut
            if chunk:
                yield start, start_col, "\n".join(chunk).strip()
                chunk, size, para_end = [], 0, None
            yield no, col, line[:max_chars]
            line = line[max_chars:]
            col += max_chars
        if size + len(line) + 1 > max_chars and chunk:
            cut = para_end if para_end else len(chunk)
            text = "\n".join(chunk[:cut]).strip()
            if text:
                yield start, start_col, text
            chunk = chunk[cut:]
            start, start_col = no - len(chunk), 0
            size = sum(len(x) + 1 for x in chunk)
            para_end = None
        if not chunk:
            start, start_col = no, col
        chunk.append(line)
        size += len(line) + 1
        if not line.strip():
            para_end = len(chunk)
    text = "\n".join(chunk).strip()
    if text:
        yield start, start_col, text


def split_text(lines: Iterable[str], *, split: str, pattern: str | None = None,
               max_chars: int = 0, cap: int | None = None) -> Iterator[tuple[int, int, str | None]]:
    """``(first line number, column, text)`` for each document of a file's lines; the
    column is 0 unless the document is a later piece of one line cut at ``max_chars``.
    ``cap``: characters a piece may reach before it is ``text=None`` (too large; read
    through, not kept) or, with ``max_chars``, handed on in parts."""
    rx = re.compile(pattern) if split == "regex" else None
    packed: list[str] = []
    packed_first, packed_size = 0, 0
    joiner = "\n\n" if split == "paragraphs" else "\n"
    for first, lines_ in _sections(lines, split, rx, cap, flush=bool(max_chars)):
        if lines_ is None:
            yield first, 0, None
            continue
        first, lines_ = _trim(first, lines_)
        text = "\n".join(lines_)
        if max_chars and len(text) > max_chars:
            if packed:
                yield packed_first, 0, joiner.join(packed)
                packed, packed_size = [], 0
            yield from _cut(first, lines_, max_chars)
        elif max_chars and split != "regex":
            if packed and packed_size + len(joiner) + len(text) > max_chars:
                yield packed_first, 0, joiner.join(packed)
                packed, packed_size = [], 0
            if not packed:
                packed_first = first
            packed.append(text)
            packed_size += len(text) + (len(joiner) if packed_size else 0)
        else:
            yield first, 0, text
    if packed:
        yield packed_first, 0, joiner.join(packed)


def read_split_file(reader, f) -> Iterator:
    """The documents of text file ``f`` cut as ``reader.options`` says (streamed); a
    byte sequence invalid in the encoding ends the file with a reject for the rest."""
    opts = reader.options
    enc = opts.encoding
    utf8 = codecs.lookup(enc).name == "utf-8"
    limit = reader.max_doc_bytes
    last = 0
    with reader.input(f).open() as fh:
        lines = io.TextIOWrapper(fh, encoding="utf-8-sig" if utf8 else enc, errors="strict", newline="")
        try:
            for first, col, text in split_text(bounded_lines(lines, limit), split=opts.split, pattern=opts.pattern,
                                               max_chars=opts.max_chars, cap=limit):
                last = first
                loc = f"{f.rel}:{first}" + (f"+{col}" if col else "")
                if text is None:
                    yield reject(loc, loc, "too_large", f"a piece longer than max_doc_bytes ({limit}) characters; "
                                                        "read through, not kept")
                elif len(text.encode("utf-8")) > limit:
                    yield reject(loc, loc, "too_large", reader._too_large(len(text.encode("utf-8"))))
                else:
                    yield Rec(loc, loc, text=text)
        except UnicodeDecodeError as exc:
            loc = f"{f.rel}:{last}!decode"
            yield reject(loc, loc, "invalid_utf8" if utf8 else "invalid_encoding",
                         f"{enc}: {exc.reason} after line {last}; the rest of the file is not read")
