"""The reader contract: plan a source's files into splits, read a split as Arrow batches.

A reader never holds a whole input file in memory. ``plan`` cuts large inputs into
several :class:`ReadSplit` (byte ranges, or row groups for Parquet) and groups many
small files into one split, so that a Ray ``ReadTask`` per split gives balanced work.
``read`` streams one split as base-schema tables (:func:`datapipe.schema.make_batch`)
of at most ``batch_rows`` rows.

Ids are ``schema.make_id(source, key)`` where ``key`` is the record's native id when
the format has one, else a locator (``rel:line``, ``rel@offset``, ``rel#row``, ``rel``)
that does not depend on how the file was split. A file name that is not valid UTF-8
appears in ``origin`` percent-encoded (:func:`escape_name`: each undecodable byte
``%XX``, ``%`` as ``%25``), so its bytes can be recovered.

Bad input is data:

* a record that cannot be used (invalid JSON or UTF-8, no text, empty, over
  ``max_doc_bytes``) is always a reject row with reason ``read:<what>``;
* a file that cannot be read to its end (truncated gzip, corrupt zstd, garbled WARC,
  empty file, unreadable Parquet) follows ``on_error``: ``"skip"`` emits the documents
  read before the failure and then one reject row for the file (origin = the file's
  relative path, detail = what went wrong); ``"fail"`` raises
  :class:`~datapipe.errors.CorruptInputError` naming the file.
"""

from __future__ import annotations

import json
import logging
import os
import zlib
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator, Mapping, NamedTuple, Sequence

import pyarrow as pa
import zstandard

from datapipe import fs
from datapipe import schema as S
from datapipe.config import build
from datapipe.errors import CorruptInputError, SpecError
from datapipe.readers._streams import FileCorrupt, classify
from datapipe.readers.inputs import DEFAULT_LIMITS, Input, InputLimits

#: rows per Arrow batch a reader yields and a stage processes (``execution.batch_rows``)
BATCH_ROWS = 256
#: the largest document a reader emits, in UTF-8 bytes (``execution.max_doc_bytes``)
MAX_DOC_BYTES = 16 << 20

log = logging.getLogger(__name__)

ON_ERROR = ("skip", "fail")

# Flush a batch early once its text + raw payload passes this many bytes, so that a
# batch of large pages stays a reasonable size whatever batch_rows says.
_BATCH_BYTES = 64 << 20

# Exceptions that end the reading of one file (file-level corruption). Anything else
# is a bug and propagates.
_FILE_ERRORS: tuple[type[BaseException], ...] = (
    FileCorrupt,
    OSError,
    EOFError,
    zlib.error,
    zstandard.ZstdError,
    pa.ArrowException,
)


@dataclass(kw_only=True, frozen=True)
class KeyOptions:
    """Where a record format keeps its fields: ``text_key`` (required), ``id_key`` and
    ``url_key`` (optional). Shared by the JSONL and Parquet readers."""

    text_key: str = "text"
    id_key: str | None = None
    url_key: str | None = None
    #: record fields kept as a JSON object in the ``metadata`` column: a list of field
    #: names (dotted paths allowed), ``"all"`` (every field but the text), or None
    metadata: tuple[str, ...] | str | None = None

    def __post_init__(self) -> None:
        for name, optional in (("text_key", False), ("id_key", True), ("url_key", True)):
            value = getattr(self, name)
            if value is None and optional:
                continue
            if not isinstance(value, str) or not value:
                raise SpecError(f"option {name} must be a non-empty string (a JSON key or a dotted "
                                f"path like 'meta.url'), got {value!r}")
        meta = self.metadata
        if isinstance(meta, list):
            meta = tuple(meta)
            object.__setattr__(self, "metadata", meta)
        if not (meta is None or meta == "all"
                or (isinstance(meta, tuple) and meta and all(isinstance(k, str) and k for k in meta))):
            raise SpecError(f"option metadata must be a list of field names, 'all', or null, got {meta!r}")


def metadata_json(record: Mapping[str, Any], keep: tuple[str, ...] | str | None, text_key: str, get) -> str | None:
    """The JSON object (keys sorted) of the fields ``keep`` names in ``record``; ``get``
    looks a (dotted) key up. Values JSON cannot hold are written as strings."""
    if keep is None:
        return None
    if keep == "all":
        fields = {k: v for k, v in record.items() if k != text_key}
    else:
        fields = {}
        # a dotted name keeps its nesting: metadata.perplexity -> {"metadata": {"perplexity": ..}};
        # shallow names first, so "a" kept whole beside "a.b" already holds it
        for k in sorted(keep, key=lambda name: name.count(".")):
            *parents, leaf = k.split(".")
            node = fields
            for p in parents:
                node = node.setdefault(p, {})
                if not isinstance(node, dict):
                    break
            else:
                node.setdefault(leaf, get(record, k))
    return json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class InputFile:
    """One input file. ``rel`` is its path relative to the source root: ids and origins
    use it, so moving the corpus does not change document ids."""

    path: str
    rel: str
    size: int
    storage: Any = None   # datapipe.fs.StorageOptions: how to reach ``path`` when it is a URI
    #: the declared input roots (real paths, or object-store prefixes) the input layer
    #: confines every read for this file to; ``()``: the folder ``rel`` is relative to
    roots: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReadSplit:
    """A unit of reading work (one Ray ReadTask).

    Either one file with a range (``start``/``end``: byte offsets for JSONL and WARC,
    row-group indices for Parquet; ``end`` exclusive, ``None`` = to the end), or one or
    more whole files (``start == 0``, ``end is None``).
    """

    files: tuple[InputFile, ...]
    start: int = 0
    end: int | None = None
    nbytes: int | None = None  # on-disk bytes this split covers, set by plan()

    @property
    def num_bytes(self) -> int:
        """Approximate input bytes (for scheduling and progress): ``nbytes`` when the
        plan set it, else the files' sizes."""
        if self.nbytes is not None:
            return self.nbytes
        return sum(f.size for f in self.files)


class Rec(NamedTuple):
    """One output row from a format's record generator."""

    key: str  # native id or locator; hashed into the id
    origin: str
    text: str | bytes | None = None  # bytes: already-validated UTF-8
    raw: bytes | None = None
    url: str | None = None
    reason: str | None = None  # rule name without "read:"; None = a document
    detail: str | None = None
    source_id: str | None = None  # the record's own id in its corpus
    metadata: str | None = None  # JSON object of the fields options.metadata keeps


def reject(key: str, origin: str, reason: str, detail: str) -> Rec:
    return Rec(key, origin, reason=reason, detail=detail)


def safe_str(s: str) -> str:
    """``s`` made encodable as UTF-8 (lone surrogates from odd file names or JSON
    escapes become U+FFFD), for columns Arrow must store."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


class _Rows:
    """Accumulates :class:`Rec` rows into base-schema tables of <= batch_rows rows."""

    def __init__(self, source: str, batch_rows: int) -> None:
        self.source = source
        self.batch_rows = batch_rows
        self._recs: list[Rec] = []
        self._bytes = 0

    def add(self, rec: Rec) -> pa.Table | None:
        self._recs.append(rec)
        if rec.text is not None:
            self._bytes += len(rec.text)
        if rec.raw is not None:
            self._bytes += len(rec.raw)
        if len(self._recs) >= self.batch_rows or self._bytes >= _BATCH_BYTES:
            return self.flush()
        return None

    def flush(self) -> pa.Table | None:
        if not self._recs:
            return None
        recs, self._recs, self._bytes = self._recs, [], 0
        try:
            return self._table(recs)
        except (pa.ArrowException, UnicodeError):
            # A string Arrow cannot store (lone surrogates from a JSON escape): make
            # every string safe and reject documents whose text was not valid Unicode.
            return self._table([_sanitized(r) for r in recs])

    def _table(self, recs: list[Rec]) -> pa.Table:
        if not any(isinstance(r.text, bytes) for r in recs):
            src = self.source
            return S.make_batch(
                source=src,
                ids=[S.make_id(src, r.key) for r in recs],
                texts=[r.text for r in recs],
                urls=[r.url for r in recs],
                raws=[r.raw for r in recs],
                origins=[r.origin for r in recs],
                reject_reasons=[None if r.reason is None else f"read:{r.reason}" for r in recs],
                reject_details=[r.detail for r in recs],
                source_ids=[r.source_id for r in recs],
                metadata=[r.metadata for r in recs],
            )
        # Texts handed over as UTF-8 bytes (whole text files): build the column from the
        # bytes (one copy, validated by Arrow's cast) rather than from Python strings.
        table = self._table([r._replace(text=None) for r in recs])
        texts = [r.text.encode("utf-8") if isinstance(r.text, str) else r.text for r in recs]
        column = pa.array(texts, pa.binary()).cast(pa.string())
        return table.set_column(table.schema.get_field_index(S.TEXT), S.BASE_SCHEMA.field(S.TEXT), column)


def escape_name(s: str) -> str:
    """A locator made storable without losing which file it names. A file name that is
    not valid UTF-8 reaches Python with its undecodable bytes as lone surrogates
    (``os.fsdecode``); here each such byte becomes ``%XX`` and ``%`` itself ``%25``
    (percent-encoding), so ``urllib.parse.unquote_to_bytes`` gives the name's bytes back.
    A string without such bytes is returned as it is (valid names keep their origins)."""
    if not any("\udc80" <= ch <= "\udcff" for ch in s):
        return safe_str(s)
    out = []
    for ch in s:
        if "\udc80" <= ch <= "\udcff":
            out.append(f"%{ord(ch) - 0xDC00:02X}")
        elif ch == "%":
            out.append("%25")
        else:
            out.append(ch)
    return safe_str("".join(out))


def _sanitized(r: Rec) -> Rec:
    url = None if r.url is None else safe_str(r.url)
    origin = escape_name(r.origin)
    detail = None if r.detail is None else safe_str(r.detail)
    source_id = None if r.source_id is None else safe_str(r.source_id)
    metadata = None if r.metadata is None else safe_str(r.metadata)
    if isinstance(r.text, str) and safe_str(r.text) is not r.text:
        return Rec(r.key, origin, url=url, reason="invalid_utf8",
                   detail="text holds a lone surrogate (invalid Unicode escape)", source_id=source_id)
    return r._replace(url=url, origin=origin, detail=detail, source_id=source_id, metadata=metadata)


def _options(cls: type, options: Any, fmt: str) -> Any:
    """The reader's ``Options`` from a dataclass, a mapping (checked as a job spec's
    ``options:`` are, by :func:`datapipe.config.build`) or None (the defaults)."""
    if isinstance(options, cls):
        return options
    return build(cls, options, where=f"format {fmt!r}: options")


class Reader:
    """Base of every reader. Subclasses set ``format``, ``Options`` and ``markup``, and
    implement :meth:`_records` (and :meth:`_ranges` when a file can be split).

    How a reader is found (:mod:`datapipe.readers.registry`): a job spec's ``format:``
    names it; a file named without a format (the model trainers' ``[format:]path``
    inputs) is given to the reader with the longest of its ``suffixes`` that ends the
    file's name once a compression suffix is stripped, and :meth:`guess_options` adds
    what the name implies (a WET file: ``records: conversion``)."""

    format: ClassVar[str] = ""
    Options: ClassVar[type]
    markup: ClassVar[bool] = False  # True: documents carry ``raw`` bytes, text is null
    #: lower-case file name endings (compression suffix stripped) this reader claims when
    #: a format must be guessed; ``()``: never guessed, only named
    suffixes: ClassVar[tuple[str, ...]] = ()
    #: columns its documents carry besides the base schema (the ``code`` reader's
    #: ``repo``, ``path``, ``language``...): the job's schema includes them
    columns: ClassVar[Mapping[str, pa.DataType]] = {}

    @classmethod
    def guess_options(cls, path: str) -> dict[str, Any] | None:
        """Options a file's name implies when its format was guessed; None: the defaults."""
        return None

    @classmethod
    def source_options(cls, paths: Sequence[str]) -> dict[str, Any] | None:
        """Options that all the files of one input imply together, for tools that read
        file by file what a job reads as one source (:func:`~datapipe.readers.iterate.iter_documents`:
        the ``code`` reader's ``layout: auto`` is decided over every file of the source,
        not per file). None: nothing to add."""
        return None

    def __init__(
        self,
        *,
        source: str,
        options: Any = None,
        on_error: str = "skip",
        batch_rows: int = BATCH_ROWS,
        max_doc_bytes: int = MAX_DOC_BYTES,
        limits: InputLimits | None = None,
    ) -> None:
        if not isinstance(source, str) or not source:
            raise SpecError(f"reader source must be a non-empty string, got {source!r}")
        if on_error not in ON_ERROR:
            raise SpecError(f"on_error must be one of {list(ON_ERROR)}, got {on_error!r}")
        if not isinstance(batch_rows, int) or batch_rows <= 0:
            raise SpecError(f"batch_rows must be a positive integer, got {batch_rows!r}")
        if not isinstance(max_doc_bytes, int) or max_doc_bytes <= 0:
            raise SpecError(f"max_doc_bytes must be a positive integer, got {max_doc_bytes!r}")
        self.source = source
        self.options = _options(self.Options, options, self.format)
        self.on_error = on_error
        self.batch_rows = batch_rows
        self.max_doc_bytes = max_doc_bytes
        if limits is not None and not isinstance(limits, InputLimits):
            raise SpecError(f"limits must be an InputLimits, got {limits!r}")
        self.limits = limits if limits is not None else DEFAULT_LIMITS

    def __getstate__(self) -> dict:
        # the input layer's caches are per process: a task on another node resolves anew
        return {k: v for k, v in self.__dict__.items() if k not in ("_real_dirs", "_last_input")}

    def input(self, f: InputFile) -> Input:
        """``f`` through the input layer: the only way a reader reaches its bytes
        (confined to the declared inputs, regular files only, under ``limits``)."""
        cached = self.__dict__.get("_last_input")
        if cached is not None and cached[0] is f:
            return cached[1]
        src = Input.of(f, self.limits, self.__dict__.setdefault("_real_dirs", {}))
        self.__dict__["_last_input"] = (f, src)
        return src

    def __repr__(self) -> str:
        return f"{type(self).__name__}(source={self.source!r}, options={self.options!r})"

    # ------------------------------------------------------------------ contract

    def provides(self) -> frozenset[str]:
        """Columns the documents of this reader carry from the start."""
        return (S.MARKUP_SOURCE_COLUMNS if self.markup else S.TEXT_SOURCE_COLUMNS) | frozenset(self.columns)

    def plan(self, files: Sequence[InputFile], *, split_bytes: int = 64 << 20) -> list[ReadSplit]:
        """Cut ``files`` into splits of about ``split_bytes`` input bytes.

        A file larger than ``split_bytes`` that the format can split becomes several
        range splits; the other files are grouped, in order, into splits of whole files
        up to ``split_bytes``. Reading all splits yields the same documents (same ids,
        same texts) whatever ``split_bytes`` is.
        """
        if not isinstance(split_bytes, int) or split_bytes <= 0:
            raise SpecError(f"split_bytes must be a positive integer, got {split_bytes!r}")
        splits: list[ReadSplit] = []
        group: list[InputFile] = []
        group_bytes = 0

        def close_group() -> None:
            nonlocal group, group_bytes
            if group:
                splits.append(ReadSplit(tuple(group), nbytes=group_bytes))
            group, group_bytes = [], 0

        for f in files:
            ranges = self._ranges(f, split_bytes) if f.size > split_bytes else None
            if ranges is None:
                if group and group_bytes + f.size > split_bytes:
                    close_group()
                group.append(f)
                group_bytes += f.size
            else:
                close_group()
                splits.extend(ReadSplit((f,), s, e, nbytes=n) for s, e, n in ranges)
        close_group()
        return splits

    def read(self, split: ReadSplit) -> Iterator[pa.Table]:
        """Stream the split's documents and rejects as base-schema tables."""
        rows = _Rows(self.source, self.batch_rows)
        ranged = len(split.files) == 1
        for f in split.files:
            start, end = (split.start, split.end) if ranged else (0, None)
            try:
                if start == 0:
                    size = self.input(f).check()   # refused (outside the inputs, a FIFO...) before anything is read
                    if (size if size is not None else fs.stat(f.path, f.storage).size) == 0:
                        raise FileCorrupt("empty_file", "the file has 0 bytes")
                for rec in self._records(f, start, end):
                    if isinstance(rec, pa.Table):  # a vectorised reader's ready batch
                        table = rows.flush()
                        if table is not None:
                            yield table
                        yield rec
                        continue
                    table = rows.add(rec)
                    if table is not None:
                        yield table
            except Exception as exc:   # _FILE_ERRORS are classified; anything else is a reader_error
                if not isinstance(exc, _FILE_ERRORS) and strict():
                    raise
                reason, detail = (classify(exc, self._compression(f)) if isinstance(exc, _FILE_ERRORS)
                                  else ("reader_error", _error_detail(exc)))
                if self.on_error == "fail":
                    raise CorruptInputError(f.path, f"read:{reason}", detail) from exc
                log.warning("source %s: skipping the rest of %s: read:%s (%s)",
                            self.source, f.path, reason, detail)
                key = f"{f.rel}!{reason}" + (f"@{start}" if start else "")
                table = rows.add(reject(key, f.rel, reason, detail))
                if table is not None:
                    yield table
        table = rows.flush()
        if table is not None:
            yield table

    # ------------------------------------------------------------------ for subclasses

    def _ranges(self, f: InputFile, split_bytes: int) -> list[tuple[int, int | None, int]] | None:
        """``(start, end, nbytes)`` ranges to split a file larger than ``split_bytes``
        into, or ``None`` (read it whole)."""
        return None

    def _compression(self, f: InputFile) -> str | None:
        """The file's compression, for naming a failure (``truncated_gzip``)."""
        return None

    def _records(self, f: InputFile, start: int, end: int | None) -> Iterator[Rec | pa.Table]:
        """Rows for the records of ``f`` that start in ``[start, end)``; a vectorised
        reader may yield ready base-schema tables (<= ``batch_rows`` rows) instead.

        Raise (or let through) a file-level error to end the file; yield a reject
        ``Rec`` for a bad record.
        """
        raise NotImplementedError

    def _too_large(self, n: int, *, more: bool = False) -> str:
        """Reject detail; ``more``: ``n`` is only what was read before giving up."""
        if more:
            return f"larger than max_doc_bytes ({self.max_doc_bytes} bytes); not read further"
        return f"{n} bytes > max_doc_bytes ({self.max_doc_bytes})"


#: set (to anything but ``0``) to let an unexpected exception out of a reader instead of
#: turning it into a reject: the test suite sets it, so a reader's bug fails tests loudly
#: while users get a counted reject naming the file
STRICT_ENV = "DATAPIPE_STRICT_READERS"


def strict() -> bool:
    return os.environ.get(STRICT_ENV, "0") not in ("", "0")


def _error_detail(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def read_split(reader: Reader, split: ReadSplit) -> Iterator[pa.Table]:
    """The reader boundary: ``reader.read(split)`` where nothing a reader raises on data
    reaches the user as a traceback. A :class:`FileCorrupt` (the input layer's refusals
    included) or any other exception ends the split with one ``read:<reason>`` reject
    row per file of the split not yet finished (``reader_error`` for an exception the
    reader did not classify), or, under ``on_error: fail``, one
    :class:`~datapipe.errors.CorruptInputError` naming the file. Rows already handed
    over stay counted. With :data:`STRICT_ENV` set, an unclassified exception is
    raised (a reader bug)."""
    try:
        yield from reader.read(split)
    except CorruptInputError:
        raise
    except Exception as exc:
        if not isinstance(exc, FileCorrupt) and strict():
            raise
        reason, detail = (exc.reason, exc.detail) if isinstance(exc, FileCorrupt) else ("reader_error", _error_detail(exc))
        first = split.files[0]
        if reader.on_error == "fail":
            raise CorruptInputError(first.path, f"read:{reason}", detail) from exc
        log.warning("source %s: split of %s ended early: read:%s (%s)", reader.source,
                    ", ".join(f.rel for f in split.files[:3]), reason, detail)
        key = f"!{reason}" + (f"@{split.start}" if split.start else "")
        rows = [reject(f"{f.rel}{key}", f.rel, reason, f"{detail} (reading split of {len(split.files)} file(s); "
                       "rows already read are kept)") for f in split.files]
        table = _Rows(reader.source, max(1, len(rows)))._table(rows)
        yield table


def byte_ranges(size: int, split_bytes: int) -> list[tuple[int, int | None, int]]:
    """``[0, s), [s, 2s), ..., [ks, None)``: byte ranges of about ``split_bytes``."""
    n = max(1, -(-size // split_bytes))
    return [
        (i * split_bytes, (i + 1) * split_bytes if i < n - 1 else None,
         min(split_bytes, size - i * split_bytes))
        for i in range(n)
    ]
