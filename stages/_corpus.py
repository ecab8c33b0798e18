"""Reading training text for the model trainers (``quality train``, ``lm train``,
``lm cutoffs``).

The trainers take inputs the way a job names its sources: paths or globs, the format
guessed from the file name or forced with a ``format:`` prefix
(``warc:data/*.gz``). Training reads a few hundred MB at most, on the driver, so
this is a plain single-process reader, not a Ray Data pipeline; it supports

==========  ================================================  ==========================
format      files                                             one document is
==========  ================================================  ==========================
text        ``.txt`` (and anything unknown), ``.gz``/``.zst``  a whole file
jsonl       ``.jsonl``/``.json``/``.ndjson`` (+ ``.gz``/          a line (``text_key``,
            ``.zst``/``.bz2``)                                  default ``text``)
parquet     ``.parquet``                                      a row (``text_key``)
warc        ``.warc``/``.arc``/``.wet`` (+ ``.gz``)             a response record with
                                                              HTML (main text extracted
                                                              with trafilatura) or a WET
                                                              ``conversion`` record
html        ``.html``/``.htm`` (+ ``.gz``)                     a file (trafilatura)
==========  ================================================  ==========================

Each document comes with its language when the record carries one (a ``language``
field in JSONL/Parquet, CCNet's ``metadata.language``), which ``lm cutoffs`` uses.
Unreadable records are skipped and counted (logged), never fatal: a trainer should not
die on one bad line of a web dump.
"""

from __future__ import annotations

import bz2
import glob
import gzip
import io
import json
import logging
import os
from dataclasses import dataclass
from typing import IO, Iterator, Sequence

from datapipe.errors import SpecError

log = logging.getLogger(__name__)

FORMATS = ("text", "jsonl", "parquet", "warc", "html")


@dataclass(frozen=True)
class Doc:
    """One training document: where it came from, its text, its language if known."""

    key: str
    text: str
    language: str | None = None


def _strip_compression(name: str) -> str:
    for ext in (".gz", ".zst", ".zstd", ".bz2"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def guess_format(path: str) -> str:
    """Format from the file name (compression suffixes ignored); ``text`` if unknown."""
    base = _strip_compression(os.path.basename(path).lower())
    if base.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if base.endswith(".parquet"):
        return "parquet"
    if base.endswith((".warc", ".arc", ".wet")) or ".warc" in base or base.endswith(".wet.txt"):
        return "warc"
    if base.endswith((".html", ".htm")):
        return "html"
    return "text"


def expand(specs: Sequence[str]) -> list[tuple[str, str]]:
    """``[(format, path)]`` for input specs ``[format:]path-or-glob``, sorted per spec;
    a spec matching nothing is a :class:`SpecError` (a typo must not train on nothing)."""
    out: list[tuple[str, str]] = []
    for spec in specs:
        fmt = None
        pattern = spec
        head, sep, tail = spec.partition(":")
        if sep and head in FORMATS:
            fmt, pattern = head, tail
        paths = sorted(p for p in glob.glob(os.path.expanduser(pattern), recursive=True) if os.path.isfile(p))
        if not paths:
            raise SpecError(f"input {spec!r} matches no file; give a path or glob of "
                            f"{'/'.join(FORMATS)} files, optionally prefixed with 'format:'")
        out.extend((fmt or guess_format(p), p) for p in paths)
    return out


def _open_binary(path: str) -> IO[bytes]:
    low = path.lower()
    if low.endswith(".gz"):
        return gzip.open(path, "rb")
    if low.endswith((".zst", ".zstd")):
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), read_across_frames=True, closefd=True)
    if low.endswith(".bz2"):
        return bz2.open(path, "rb")
    return open(path, "rb")


def _language(rec: dict) -> str | None:
    lang = rec.get("language") or rec.get("lang")
    if not lang and isinstance(rec.get("metadata"), dict):
        lang = rec["metadata"].get("language") or rec["metadata"].get("lang")
    return str(lang) if lang else None


def _read_text(path: str) -> Iterator[Doc]:
    with _open_binary(path) as f:
        data = f.read()
    yield Doc(key=path, text=data.decode("utf-8", errors="replace"))


def _read_jsonl(path: str, text_key: str) -> Iterator[Doc]:
    bad = 0
    with _open_binary(path) as raw:
        for i, line in enumerate(io.TextIOWrapper(raw, encoding="utf-8", errors="replace")):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                text = rec[text_key]
            except (ValueError, KeyError, TypeError):
                bad += 1
                continue
            if isinstance(text, str) and text:
                yield Doc(key=f"{path}:{i + 1}", text=text, language=_language(rec))
    if bad:
        log.warning("%s: skipped %d unreadable lines (no JSON object with a %r string)", path, bad, text_key)


def _read_parquet(path: str, text_key: str) -> Iterator[Doc]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    names = pf.schema_arrow.names
    if text_key not in names:
        raise SpecError(f"{path}: no column {text_key!r} (columns: {names}); pass --text-key")
    cols = [text_key] + [c for c in ("language",) if c in names]
    row = 0
    for batch in pf.iter_batches(columns=cols, batch_size=4096):
        texts = batch.column(0).to_pylist()
        langs = batch.column(1).to_pylist() if batch.num_columns > 1 else [None] * len(texts)
        for t, lang in zip(texts, langs):
            if t:
                yield Doc(key=f"{path}#{row}", text=t, language=lang)
            row += 1


def _html_text(html: bytes | str) -> str | None:
    import trafilatura

    try:
        return trafilatura.extract(html, include_comments=False, include_tables=False)
    except Exception:  # noqa: BLE001 - a broken page is skipped, not fatal
        return None


def _read_warc(path: str) -> Iterator[Doc]:
    from warcio.archiveiterator import ArchiveIterator

    with open(path, "rb") as f:
        try:
            for rec in ArchiveIterator(f, arc2warc=True):
                uri = rec.rec_headers.get_header("WARC-Target-URI") or ""
                key = f"{path}@{uri}"
                if rec.rec_type == "conversion":
                    text = rec.content_stream().read().decode("utf-8", errors="replace")
                elif rec.rec_type == "response" and rec.http_headers is not None:
                    ctype = (rec.http_headers.get_header("Content-Type") or "").lower()
                    if "html" not in ctype:
                        continue
                    text = _html_text(rec.content_stream().read())
                else:
                    continue
                if text and text.strip():
                    yield Doc(key=key, text=text)
        except Exception as e:  # noqa: BLE001 - a truncated archive keeps what was read
            log.warning("%s: stopped reading at a broken record (%s)", path, e)


def _read_html(path: str) -> Iterator[Doc]:
    with _open_binary(path) as f:
        text = _html_text(f.read())
    if text and text.strip():
        yield Doc(key=path, text=text)


def iter_docs(specs: Sequence[str], *, text_key: str = "text") -> Iterator[Doc]:
    """Documents of every input, in a deterministic order (specs in order, files
    sorted, records in file order)."""
    for fmt, path in expand(specs):
        if fmt == "text":
            yield from _read_text(path)
        elif fmt == "jsonl":
            yield from _read_jsonl(path, text_key)
        elif fmt == "parquet":
            yield from _read_parquet(path, text_key)
        elif fmt == "warc":
            yield from _read_warc(path)
        elif fmt == "html":
            yield from _read_html(path)
        else:  # pragma: no cover - expand() only yields known formats
            raise SpecError(f"unknown format {fmt!r}")


def file_summary(specs: Sequence[str]) -> list[dict]:
    """What a model card records about its inputs: path, format, bytes."""
    return [{"path": p, "format": fmt, "bytes": os.path.getsize(p)} for fmt, p in expand(specs)]
