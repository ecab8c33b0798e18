"""WARC / ARC / WET reader (``.warc``, ``.warc.gz``, ``.arc``, ``.arc.gz``, ``.wet``,
``.wet.gz``, ``.warc.wet.gz``), on top of ``warcio``.

``records: response`` (default): each ``response`` record is one unit. An HTML
response (by HTTP ``Content-Type``, or by sniffing the payload when there is none)
with a 2xx status becomes a document whose ``raw`` is the HTTP payload only (headers
stripped; chunked transfer and gzip/deflate content encodings undone by warcio). The
HTTP charset is not kept: detecting the page's encoding is the ``extract`` stage's job.
A response that is not a usable page is a reject (``read:content_type``,
``read:http_status``, ``read:empty``, ``read:too_large``), so every response record is
accounted for. Other record types (request, metadata, warcinfo, revisit) are not
documents and are passed over.

``records: conversion``: each ``conversion`` record (a WET file's extracted text) is a
document with ``text`` = the payload decoded as UTF-8.

``url`` is ``WARC-Target-URI``; the id key and ``source_id`` are ``WARC-Record-ID``, so
results join back to the crawl (ARC records have none: warcio would invent a random
one, so they use the locator ``rel@offset`` and ``source_id`` is null).

Splitting: a ``.warc.gz`` larger than ``split_bytes`` splits by byte range. A split
starting at ``s`` scans forward from ``s`` for the first gzip member that decompresses
to something starting with ``WARC/`` and reads the records that start before its end
(offsets from warcio), so each record is read by exactly one split. An uncompressed
``.warc`` splits the same way, a record start being a ``WARC/x.y`` line at a line start
followed by a header block that parses (a payload that itself holds a full WARC header
at a line start would fool this; crawls of uncompressed WARC files are the only
realistic case). ARC files are one split each. A ``.warc.gz`` that is one gzip stream
(``gzip file.warc``) rather than a member per record is valid: the split at offset 0
reads it as one stream (locators are then offsets in the decompressed data) and the
others find no member start in it.

Corruption (a record cut short of its ``Content-Length``, an unparsable record header,
broken gzip): under ``on_error: fail`` it raises for the file. Under ``skip`` it becomes
one reject for the damaged region (``read:truncated_gzip`` / ``read:corrupt_warc``,
origin = the file) and reading resumes at the next valid record start, found the same
way a split finds its first record, so a damaged record costs only itself and the
documents do not depend on the split size. (ARC files are not resumed: the rest of the
file is skipped.) A record whose ``Content-Length`` does not meet the blank-line
separator in an uncompressed WARC, which warcio reads past, is a ``read:corrupt_record``
reject.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import zlib
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from warcio.archiveiterator import ArchiveIterator

from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.readers._streams import GZIP_MAGIC, FileCorrupt, read_upto, strip_compression
from datapipe.readers.base import InputFile, ReadSplit, Rec, Reader, byte_ranges, reject

log = logging.getLogger(__name__)

RECORD_KINDS = ("response", "conversion")
_SCAN_CHUNK = 1 << 20
_HEADER_MAX = 64 << 10
_SNIFF = 1024
_HTML_MARKERS = (b"<!doctype html", b"<html", b"<head", b"<body", b"<title")
_WARC_LINE = re.compile(rb"WARC/\d+\.\d+\r?\n")


@dataclass(kw_only=True, frozen=True)
class WarcOptions:
    """``records``: ``"response"`` (HTML pages into ``raw``) or ``"conversion"`` (WET
    text). ``content_types``: HTTP media types taken as pages. ``require_2xx``: only
    2xx responses are documents (redirect and error pages become rejects)."""

    records: str = "response"
    content_types: tuple[str, ...] = ("text/html", "application/xhtml+xml")
    require_2xx: bool = True

    def __post_init__(self) -> None:
        if self.records not in RECORD_KINDS:
            raise SpecError(f"option records must be one of {list(RECORD_KINDS)}, "
                            f"got {self.records!r}")
        cts = self.content_types
        if isinstance(cts, str) or not all(isinstance(c, str) and c for c in cts):
            raise SpecError("option content_types must be a list of media types such as "
                            f"['text/html'], got {cts!r}")
        object.__setattr__(self, "content_types", tuple(c.strip().lower() for c in cts))
        if not isinstance(self.require_2xx, bool):
            raise SpecError(f"option require_2xx must be true or false, got {self.require_2xx!r}")


#: file name endings (compression stripped, :func:`strip_compression`) of WET files
WET_SUFFIXES = (".wet", ".wet.txt")


def is_arc(path: str) -> bool:
    return strip_compression(path).lower().endswith(".arc")


def is_wet(path: str) -> bool:
    """A WET file (extracted text in ``conversion`` records), by name: ``.wet``,
    ``.wet.txt``, each optionally compressed."""
    return strip_compression(path).lower().endswith(WET_SUFFIXES)


class _QuietIterator(ArchiveIterator):
    """warcio prints warnings about malformed records to stderr; keep them and count
    them instead (``err_count`` already counts; ``notes`` keeps the text)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.notes: list[str] = []

    def quiet(self):
        return _capture(self.notes)

    def _raise_invalid_gzip_err(self) -> None:
        raise _NonChunkedGzip()


class _NonChunkedGzip(Exception):
    """A gzip member holds more than one record: the file is one plain gzip stream."""


@contextlib.contextmanager
def _capture(notes: list[str]):
    # redirect_stderr is process-wide; fine for a reader, which runs one split at a time
    # in its worker process.
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        yield
    text = buf.getvalue().strip()
    if text:
        notes.append(" ".join(text.split()))
        log.debug("warcio: %s", text)


def _printable(s: str, limit: int = 400) -> str:
    """A one-line, printable, bounded version of an error message (warcio quotes the
    garbage it choked on)."""
    s = " ".join(s.split())
    s = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in s)
    return s if len(s) <= limit else s[:limit] + "..."


def _check_tail(fh, off: int, size: int, gz: bool) -> None:
    """After the last record: the bytes from ``off`` (where the next record would start)
    to the end of the file must be nothing but blank lines. warcio ends quietly at a
    record or gzip member cut short, which would pass a cut file as complete."""
    if off >= size:
        return
    fh.seek(off)
    rest = fh.read(min(size - off, 1 << 16))
    if not rest.strip():
        return
    if gz and rest.startswith(GZIP_MAGIC):
        raise FileCorrupt("truncated_gzip", f"the file ends inside the gzip member at byte {off} "
                                            f"({size - off} bytes that are no complete record)", off)
    raise FileCorrupt("truncated", f"the file ends inside the record at byte {off} "
                                   f"({size - off} bytes that are no complete record)", off)


def _is_gzip_warc_member(fh, off: int) -> bool:
    """Does a gzip member starting at ``off`` decompress to a WARC record header?"""
    fh.seek(off)
    d = zlib.decompressobj(31)
    out = b""
    try:
        for _ in range(16):
            chunk = fh.read(4096)
            if not chunk:
                break
            out += d.decompress(chunk, 64)
            if len(out) >= 8 or d.eof:
                break
    except zlib.error:
        return False
    return out.startswith(b"WARC/")


def _is_warc_header(fh, off: int) -> bool:
    """Does a WARC record header start at ``off`` of an uncompressed file: a ``WARC/x.y``
    line, then ``name: value`` fields up to a blank line, with ``WARC-Type`` and a numeric
    ``Content-Length``? (What follows the record is not checked: a damaged next record
    must not hide this one.)"""
    fh.seek(off)
    head = fh.read(_HEADER_MAX)
    m = _WARC_LINE.match(head)
    if not m:
        return False
    end = head.find(b"\r\n\r\n")
    if end < 0:
        return False
    fields: dict[bytes, bytes] = {}
    for line in head[m.end():end].split(b"\r\n"):
        name, sep, value = line.partition(b":")
        if not sep:
            return False
        fields[name.strip().lower()] = value.strip()
    return b"warc-type" in fields and fields.get(b"content-length", b"").isdigit()


def _single_gzip_member(fh, size: int) -> bool:
    """Is the file one gzip member (nothing but padding after it)?"""
    fh.seek(0)
    d = zlib.decompressobj(31)
    try:
        while not d.eof:
            chunk = fh.read(_SCAN_CHUNK)
            if not chunk:
                return True  # truncated: the stream read reports it
            d.decompress(chunk, 1)  # output discarded; max_length keeps memory flat
            while d.unconsumed_tail and not d.eof:
                d.decompress(d.unconsumed_tail, 1 << 16)
    except zlib.error:
        return False
    return not d.unused_data.strip(b"\0") and not fh.read(1 << 16).strip(b"\0")


def _next_record_start(fh, start: int, end: int | None, gz: bool) -> int | None:
    """First record start in ``[start, end)``, or ``None``."""
    pos = start - 1 if not gz else start  # plain: a record line follows a newline
    needle = GZIP_MAGIC + b"\x08" if gz else b"\nWARC/"
    shift = 0 if gz else 1
    while end is None or pos < end:
        fh.seek(pos)
        buf = fh.read(_SCAN_CHUNK + len(needle))
        if len(buf) < len(needle):
            return None
        i = buf.find(needle)
        while 0 <= i < _SCAN_CHUNK:
            cand = pos + i + shift
            if end is not None and cand >= end:
                return None
            ok = _is_gzip_warc_member(fh, cand) if gz else _is_warc_header(fh, cand)
            if ok:
                return cand
            i = buf.find(needle, i + 1)
        pos += _SCAN_CHUNK
    return None


class WarcReader(Reader):
    format = "warc"
    Options = WarcOptions
    suffixes = (".warc", ".arc", *WET_SUFFIXES)

    @classmethod
    def guess_options(cls, path: str) -> dict[str, Any] | None:
        return {"records": "conversion"} if is_wet(path) else None

    def provides(self) -> frozenset[str]:
        if self.options.records == "conversion":
            return S.TEXT_SOURCE_COLUMNS
        return S.MARKUP_SOURCE_COLUMNS

    def plan(self, files: Sequence[InputFile], *, split_bytes: int = 64 << 20) -> list[ReadSplit]:
        if self.options.records == "response":
            wet = [f.rel for f in files if is_wet(f.path)]
            if wet:
                raise SpecError(
                    f"source {self.source!r}: {wet[:3]} look like WET files (extracted text, "
                    "no response records); set `options: {records: conversion}` for them")
        return super().plan(files, split_bytes=split_bytes)

    def _ranges(self, f: InputFile, split_bytes: int):
        if is_arc(f.path):
            return None
        return byte_ranges(f.size, split_bytes)

    def _compression(self, f: InputFile) -> str | None:
        return "gzip" if f.path.lower().endswith(".gz") else None

    def _records(self, f: InputFile, start: int, end: int | None) -> Iterator[Rec]:
        arc = is_arc(f.path)
        seen = [0]  # records consumed so far (any type)
        src = self.input(f)
        with src.open_raw() as fh:
            gz = fh.read(2) == GZIP_MAGIC
            size = fh.seek(0, io.SEEK_END)
            pos: int | None = start
            single_stream = False
            if start > 0:
                pos = _next_record_start(fh, start, end, gz)
            while pos is not None:
                fh.seek(pos)
                it = _QuietIterator(fh, arc2warc=arc)
                try:
                    yield from self._iterate(f, it, gz, arc, end, 0, seen)
                    if end is None:
                        _check_tail(fh, it.offset, size, gz)
                    return
                except _NonChunkedGzip:
                    if pos == 0 and seen[0] == 1 and _single_gzip_member(fh, size):
                        single_stream = True  # a plain single-stream gzip: read it below
                        break
                    exc = FileCorrupt("corrupt_warc", "a gzip member holds several records "
                                      "(mixed member-per-record and multi-record gzip)", pos)
                except FileCorrupt as e:
                    exc = e
                # A damaged region: in "skip" mode, report it and go on at the next valid
                # record start. Every split resumes with the same rule, so the documents
                # read do not depend on split_bytes. ARC files are not resynchronised.
                bad = exc.offset
                if self.on_error == "fail" or arc or bad is None:
                    raise exc
                pos = _next_record_start(fh, bad + 1, end, gz)
                log.warning("source %s: %s: read:%s at byte %d; %s", self.source, f.path,
                            exc.reason, bad, "giving up" if pos is None else f"resuming at {pos}")
                yield reject(f"{f.rel}!{exc.reason}@{bad}", f.rel, exc.reason, exc.detail)
        if not single_stream:
            return
        # The whole file is one gzip stream (``gzip file.warc``): valid, but warcio cannot
        # read it member by member. Read the decompressed stream instead (offsets are then
        # positions in the decompressed data); no other split finds a member start in it.
        log.info("%s is not member-per-record gzip; reading it as one stream", f.path)
        with src.open(compression="gzip") as stream:
            it = _QuietIterator(stream, arc2warc=arc)
            yield from self._iterate(f, it, False, arc, None, seen[0], [0])

    def _iterate(self, f: InputFile, it: "_QuietIterator", gz: bool, arc: bool,
                 end: int | None, skip: int, seen: list[int]) -> Iterator[Rec]:
        """Rows for the records of ``it`` that start before ``end``; the first ``skip``
        records are checked but not emitted (already emitted by an earlier attempt)."""
        records = iter(it)
        while True:
            off = it.offset
            try:
                with it.quiet():
                    rec = next(records)
            except StopIteration:
                break
            except _NonChunkedGzip:
                raise
            except Exception as exc:  # warcio raises many types on garbage
                raise self._corrupt(it, gz, off, exc) from exc
            off = it.offset
            if end is not None and off >= end:
                break
            try:
                with it.quiet():
                    out = self._record(f, rec, off, arc)
                    errs = it.err_count
                    it.read_to_end()
            except Exception as exc:
                raise self._corrupt(it, gz, off, exc) from exc
            missing = getattr(rec.raw_stream, "limit", 0)   # a LimitReader; not on every damaged record
            dec = getattr(it.reader, "decompressor", None) if gz else None
            if dec is not None and not getattr(dec, "eof", True):
                # the record's gzip member never ended: warcio hands out what it had
                raise self._corrupt(it, gz, off, EOFError("the file ends inside this record's gzip member"))
            if missing > 0:
                raise self._corrupt(it, gz, off, None, f"record at byte {off} ends "
                                    f"{missing} bytes short of its Content-Length")
            # (In a gzip file the separator lies inside the record's own member; a warning
            # there is about the next member, which the next step reports.)
            if it.err_count > errs and out is not None and not gz:
                note = it.notes[-1] if it.notes else ""
                out = out._replace(text=None, raw=None, reason="corrupt_record", detail=_printable(
                    "record is not followed by the blank-line separator (wrong "
                    f"Content-Length?) {note}"))
            seen[0] += 1
            if out is not None and seen[0] > skip:
                yield out

    @staticmethod
    def _corrupt(it: _QuietIterator, gz: bool, off: int, exc: BaseException | None,
                 detail: str = "") -> FileCorrupt:
        dec = getattr(it.reader, "decompressor", None) if it.reader is not None else None
        truncated_gz = isinstance(exc, EOFError) or (
            gz and dec is not None and not getattr(dec, "eof", True))
        reason = "truncated_gzip" if truncated_gz else "corrupt_warc"
        parts = [detail] if detail else []
        if truncated_gz:
            parts.insert(0, "the file ends inside a gzip member")
        if exc is not None:
            parts.append(f"{type(exc).__name__}: {' '.join(str(exc).split())} (record at byte {off})")
        if it.notes:
            parts.append(f"warcio: {it.notes[-1]}")
        return FileCorrupt(reason, _printable("; ".join(parts)), off)

    def _record(self, f: InputFile, rec, off: int, arc: bool) -> Rec | None:
        kind = self.options.records
        if rec.rec_type != kind:
            return None
        h = rec.rec_headers
        url = h.get_header("WARC-Target-URI")
        loc = f"{f.rel}@{off}"
        native = None if arc or rec.format == "arc2warc" else h.get_header("WARC-Record-ID")
        key = native or loc
        limit = self.max_doc_bytes
        if kind == "conversion":
            data = read_upto(rec.content_stream(), limit + 1)
            if len(data) > limit:
                return Rec(key, loc, source_id=native, url=url, reason="too_large", detail=self._too_large(len(data), more=True))
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                return Rec(key, loc, source_id=native, url=url, reason="invalid_utf8",
                           detail=f"{exc.reason} at byte {exc.start}")
            if not text.strip():
                return Rec(key, loc, source_id=native, url=url, reason="empty", detail="empty conversion record")
            return Rec(key, loc, source_id=native, text=text, url=url)

        http = rec.http_headers
        status = (http.get_statuscode() or None) if http is not None else None
        if self.options.require_2xx and status is not None and not str(status).startswith("2"):
            return Rec(key, loc, source_id=native, url=url, reason="http_status", detail=f"HTTP status {status}")
        ctype = http.get_header("Content-Type") if http is not None else None
        mime = (ctype or "").split(";")[0].strip().lower()
        if mime and mime not in self.options.content_types:
            return Rec(key, loc, source_id=native, url=url, reason="content_type", detail=f"Content-Type {mime}")
        data = read_upto(rec.content_stream(), limit + 1)
        if len(data) > limit:
            return Rec(key, loc, source_id=native, url=url, reason="too_large", detail=self._too_large(len(data), more=True))
        if not data.strip():
            return Rec(key, loc, source_id=native, url=url, reason="empty", detail="empty HTTP payload")
        if not mime:
            head = data[:_SNIFF].lstrip().lower()
            if not any(m in head for m in _HTML_MARKERS):
                return Rec(key, loc, source_id=native, url=url, reason="content_type",
                           detail="no Content-Type and the payload does not look like HTML")
        return Rec(key, loc, source_id=native, raw=data, url=url)
