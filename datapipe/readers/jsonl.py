"""JSON Lines reader: ``.jsonl``, ``.json``, ``.jsonl.gz``/``.json.gz``, ``.jsonl.zst``.

One JSON object per line. An uncompressed file larger than ``split_bytes`` splits by
byte range: a split that starts mid-line skips to the next newline, and a line belongs
to the split where it starts, so every line is read exactly once. A compressed file
cannot be entered mid-stream, so it is always one split (still streamed line by line).

Locators (the id when ``id_key`` is not set, and the ``origin``): ``rel@<byte offset of
the line>`` for uncompressed files (a line number would need every split to count the
lines before it), ``rel:<line number>`` (1-based) for compressed ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator

from datapipe.readers._streams import FileCorrupt
from datapipe.readers.base import InputFile, KeyOptions, Rec, Reader, byte_ranges, metadata_json, reject

_BOM = b"\xef\xbb\xbf"
_SKIP_CHUNK = 1 << 20


@dataclass(kw_only=True, frozen=True)
class JsonlOptions(KeyOptions):
    """``text_key``: field holding the document text. ``id_key``: field holding a native
    id (ids are then ``make_id(source, str(value))``; records without it fall back to the
    locator). ``url_key``: field holding the URL. A key that is not found as such is
    tried as a dotted path (``meta.url``). ``metadata``: fields kept as a JSON object in
    the ``metadata`` column (names, or ``all``); the native id also goes to ``source_id``."""


def get_field(obj: dict, key: str) -> Any:
    """``obj[key]``, else the dotted path ``a.b.c``; ``None`` when absent."""
    if key in obj:
        return obj[key]
    if "." not in key:
        return None
    cur: Any = obj
    for part in key.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _skip_line(fh) -> int:
    """Consume through the next newline (or EOF) in bounded chunks; bytes consumed."""
    n = 0
    while True:
        chunk = fh.readline(_SKIP_CHUNK)
        n += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return n


class JsonlReader(Reader):
    format = "jsonl"
    Options = JsonlOptions
    suffixes = (".jsonl", ".json", ".ndjson")

    def _compression(self, f: InputFile) -> str | None:
        return self.input(f).compression()

    def _ranges(self, f: InputFile, split_bytes: int):
        if self.input(f).compression() is not None:
            return None
        return byte_ranges(f.size, split_bytes)

    def _records(self, f: InputFile, start: int, end: int | None) -> Iterator[Rec]:
        src = self.input(f)
        comp = src.compression()
        if comp is not None and (start or end is not None):
            raise ValueError(f"{f.path}: a compressed file cannot be read from a byte range")
        limit = self.max_doc_bytes + 1
        with src.open(compression=comp) as fh:
            pos = start
            if start > 0:
                fh.seek(start - 1)
                pos = start - 1 + _skip_line(fh)
            lineno = 0
            while end is None or pos < end:
                line = fh.readline(limit)
                if not line:
                    break
                line_start = pos
                pos += len(line)
                lineno += 1
                loc = f"{f.rel}@{line_start}" if comp is None else f"{f.rel}:{lineno}"
                if len(line) >= limit and not line.endswith(b"\n"):
                    n = len(line) + _skip_line(fh)
                    pos = line_start + n
                    yield reject(loc, loc, "too_large", self._too_large(n))
                    continue
                if line_start == 0 and line.startswith(_BOM):
                    line = line[len(_BOM):]
                body = line.rstrip(b"\r\n")
                if not body.strip():
                    continue  # blank line: not a record
                yield self._parse(body, loc)
            if comp is not None and lineno == 0:
                raise FileCorrupt("empty_file", f"decompresses to 0 bytes ({comp})")

    def _parse(self, body: bytes, loc: str) -> Rec:
        opts = self.options
        try:
            s = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return reject(loc, loc, "invalid_utf8",
                          f"{exc.reason} at byte {exc.start}: {body[max(0, exc.start - 20):exc.start + 20]!r}")
        try:
            obj = json.loads(s)
        except (ValueError, RecursionError) as exc:
            return reject(loc, loc, "invalid_json", str(exc)[:300])
        if not isinstance(obj, dict):
            return reject(loc, loc, "not_object", f"line is a JSON {type(obj).__name__}, not an object")
        key = loc
        source_id = None
        if opts.id_key is not None:
            native = get_field(obj, opts.id_key)
            if native is not None:
                key = source_id = str(native)
        text = get_field(obj, opts.text_key)
        meta = metadata_json(obj, opts.metadata, opts.text_key, get_field)
        if text is None:
            return Rec(key, loc, reason="missing_text", detail=f"no {opts.text_key!r} field (or it is null)",
                       source_id=source_id, metadata=meta)
        if not isinstance(text, str):
            return Rec(key, loc, reason="bad_text", detail=f"{opts.text_key!r} is a {type(text).__name__}, not a string",
                       source_id=source_id, metadata=meta)
        if not text.strip():
            return Rec(key, loc, reason="empty", detail=f"{opts.text_key!r} is empty or whitespace",
                       source_id=source_id, metadata=meta)
        url = None
        if opts.url_key is not None:
            u = get_field(obj, opts.url_key)
            url = None if u is None else str(u)
        return Rec(key, loc, text=text, url=url, source_id=source_id, metadata=meta)
