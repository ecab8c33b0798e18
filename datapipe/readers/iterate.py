"""A job's readers as a plain single-process iterator, for the tools that train models.

The model trainers (``quality train``, ``lm train|cutoffs``, ``tokenizer train``) read a
few hundred MB at most, on one machine, so they need no Ray Data pipeline; but a model
must see text the way the job that uses it produces it. :func:`iter_documents` reads
inputs named the way the command line names them, ``[format:]path-or-glob``, with the
job's own readers (:data:`datapipe.readers.READERS`):

* **Files.** A pattern is expanded through :mod:`datapipe.fs` as a job's ``paths`` are
  (``*``, ``?``, ``**`` at any depth; a folder means every file below it; local paths
  and URIs alike), files sorted per input, a file reached twice read once. An input
  matching nothing is a :class:`~datapipe.errors.SpecError` (a typo must not train on
  nothing). ``exclude`` (paths or globs) keeps files out of every input, e.g. a
  labelled evaluation set.
* **Format.** From the ``format:`` prefix (any registered reader's name, plugins'
  included), else guessed from the file name by the readers' own declarations
  (:func:`~datapipe.readers.registry.guess_format`: each reader's ``suffixes``,
  compression suffixes ignored, plus the options the name implies): ``.jsonl``/``.json``/
  ``.ndjson`` jsonl, ``.parquet`` parquet, ``.warc``/``.arc`` warc (response records),
  ``.wet``/``.wet.txt`` warc (WET ``conversion`` records), ``.html``/``.htm`` html,
  anything else text (one document per file, or per piece with ``text_split``).
* **Decompression, records, bad input** are the readers': a record that cannot be used
  is a reject ``read:<what>``; a file that cannot be read to its end follows
  ``on_error``. The tools use ``"skip"`` (the default here): the documents read before
  the damage are kept, the reader logs a warning naming the file, and the file counts
  one reject (``read:truncated_gzip``...); one bad file of a web dump must not stop a
  training run, and the count lands in the model's card. ``"fail"`` raises
  :class:`~datapipe.errors.CorruptInputError` naming the file.
* **Extraction.** ``stages`` run on every batch before documents come out, as a job's
  chain does. The trainers pass the ``extract`` stage with its default settings, so
  HTML and WARC pages become text exactly as a job's ``extract: {}`` makes it (tables
  kept). The engine imports no concrete stage, hence the parameter; a page that no
  stage turned into text is an error.

Rejects of readers and stages are counted per reason in the :class:`ReadStats` the
caller passes. Memory: one batch (``batch_rows`` documents) at a time; a whole-file
document is held whole (at most ``max_doc_bytes``).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

import pyarrow as pa

from datapipe import fs
from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.readers.base import BATCH_ROWS, MAX_DOC_BYTES, InputFile, KeyOptions, Reader, ReadSplit, read_split
from datapipe.readers.registry import ReaderRegistry, guess_format, reader_class, reader_registry
from datapipe.stage import Stage

log = logging.getLogger(__name__)

#: record fields that carry a document's language (CCNet keeps it under ``metadata``)
LANGUAGE_FIELDS = ("language", "lang", "metadata.language", "metadata.lang")
_SOURCE = "input"


@dataclass(frozen=True)
class Document:
    """One document: its text, where it came from, and what the record said about it.

    ``key`` is the reader's locator (``<path>@<byte offset>``, ``<path>:<line>``,
    ``<path>#<row>`` or ``<path>``): stable across runs. ``raw`` holds the page bytes
    the text was extracted from (HTML and WARC inputs). ``fields`` holds the record
    fields asked for with ``fields=`` (``None`` when absent)."""

    key: str
    path: str
    text: str
    url: str | None = None
    language: str | None = None
    raw: bytes | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class ReadStats:
    """What a read produced: documents, and rejects per reason (``read:invalid_json``,
    ``extract:empty``...). Model cards record it."""

    documents: int = 0
    rejects: dict[str, int] = field(default_factory=dict)

    def reject(self, reason: str) -> None:
        self.rejects[reason] = self.rejects.get(reason, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        return {"documents": self.documents, "rejects": dict(sorted(self.rejects.items()))}


def split_input(spec: str, readers: ReaderRegistry | None = None) -> tuple[str | None, str]:
    """``("warc", "data/*.gz")`` for ``"warc:data/*.gz"``; ``(None, spec)`` without a
    registered format prefix (``s3://...`` is a URI, not a format)."""
    head, sep, tail = spec.partition(":")
    if sep and head in (readers if readers is not None else reader_registry()):
        return head, tail
    return None, spec


def match_files(pattern: str, storage: fs.StorageOptions | None = None) -> list[str]:
    """Files of one path, folder or glob (``**`` at any depth), sorted, through
    :mod:`datapipe.fs`; ``[]`` when nothing matches."""
    if fs.is_local(pattern):
        pattern = os.path.expanduser(pattern)
    try:
        return fs.expand(pattern, storage)
    except OSError as exc:
        raise SpecError(f"input {pattern!r}: cannot list it: {exc}") from None


def _excluded(path: str, exclude: Sequence[str]) -> bool:
    key = fs.real_key(path)
    return any(key == fs.real_key(pat) or fnmatch.fnmatch(path, pat) for pat in exclude)


def expand_inputs(specs: Sequence[str], *, exclude: Sequence[str] = (),
                  storage: fs.StorageOptions | None = None,
                  readers: ReaderRegistry | None = None) -> list[tuple[str, str]]:
    """``[(format, path)]`` of input specs ``[format:]path-or-glob``, in spec order and
    sorted within a spec, each file once, minus ``exclude``. A spec matching no file is
    a :class:`SpecError`. ``readers``: the reader registry (default: built-in and plugin
    readers)."""
    return [(fmt, p) for _, fmt, p in _expand(specs, exclude=exclude, storage=storage, readers=readers)]


def _expand(specs: Sequence[str], *, exclude: Sequence[str], storage: fs.StorageOptions | None,
            readers: ReaderRegistry | None) -> list[tuple[int, str, str]]:
    """:func:`expand_inputs` with each file's spec (its index in ``specs``)."""
    readers = readers if readers is not None else reader_registry()
    out: list[tuple[int, str, str]] = []
    seen: set[str] = set()
    for n, spec in enumerate(specs):
        spec = os.fspath(spec)
        fmt, pattern = split_input(spec, readers)
        paths = match_files(pattern, storage)
        if not paths:
            raise SpecError(f"input {spec!r} matches no files; give a path, folder or glob, optionally "
                            f"prefixed with a format ({'/'.join(sorted(readers))}:...)")
        kept = [p for p in paths if not (exclude and _excluded(p, exclude))]
        if len(kept) < len(paths):
            log.info("%s: %d of %d files excluded", spec, len(paths) - len(kept), len(paths))
        for p in kept:
            key = fs.real_key(p)
            if key not in seen:
                seen.add(key)
                out.append((n, fmt or guess_format(p, readers), p))
    return out


def _options(cls: type[Reader], path: str, text_key: str, keep: tuple[str, ...],
             text_split: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The reader options for one file: what its name implies
    (:meth:`Reader.guess_options`: a WET file's ``conversion`` records), the text field and the record
    fields to keep (readers with :class:`KeyOptions`), how to cut text files (readers
    with a ``split`` option)."""
    opts = dict(cls.guess_options(path) or {})
    names = {f.name for f in dataclasses.fields(cls.Options)}
    if issubclass(cls.Options, KeyOptions):
        opts.update(text_key=text_key, metadata=keep)
    if text_split and "split" in names:
        opts.update(text_split)
    return opts or None


def _field(rec: Mapping[str, Any], name: str) -> Any:
    """A (dotted) field of the kept metadata, which nests dotted names
    (``metadata.language`` is ``rec["metadata"]["language"]``)."""
    node: Any = rec
    for part in name.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _language(rec: Mapping[str, Any]) -> str | None:
    for k in LANGUAGE_FIELDS:
        if value := _field(rec, k):
            return str(value)
    return None


def _documents(table: pa.Table, path: str, fields: Sequence[str], stats: ReadStats) -> Iterator[Document]:
    """The kept rows of one processed batch as documents; rejects counted."""
    cols = {c: table.column(c).to_pylist() for c in (S.TEXT, S.URL, S.RAW, S.ORIGIN, S.METADATA, S.REJECT_REASON)}
    texts, reasons = cols[S.TEXT], cols[S.REJECT_REASON]
    for i in range(table.num_rows):
        if reasons[i] is not None:
            stats.reject(reasons[i])
            continue
        if texts[i] is None:
            raise SpecError(f"{path}: holds pages, not text, and no stage extracted them; pass the extract "
                            "stage (stages=(Extract(),)) or read it with a text format")
        rec = json.loads(cols[S.METADATA][i]) if cols[S.METADATA][i] else {}
        stats.documents += 1
        yield Document(key=cols[S.ORIGIN][i], path=path, text=texts[i], url=cols[S.URL][i],
                       language=_language(rec), raw=cols[S.RAW][i], fields={k: _field(rec, k) for k in fields})


def iter_documents(
    specs: Sequence[str],
    *,
    text_key: str = "text",
    fields: Sequence[str] = (),
    text_split: Mapping[str, Any] | None = None,
    stages: Sequence[Stage] = (),
    exclude: Sequence[str] = (),
    on_error: str = "skip",
    stats: ReadStats | None = None,
    storage: fs.StorageOptions | None = None,
    batch_rows: int = BATCH_ROWS,
    max_doc_bytes: int = MAX_DOC_BYTES,
    readers: ReaderRegistry | None = None,
) -> Iterator[Document]:
    """Documents of every input, in a deterministic order (specs in order, files
    sorted, records in file order); see the module docstring for the rules.

    ``text_key``: the JSONL field / Parquet column with the text. ``fields``: record
    fields (JSONL keys, Parquet columns) to hand back in :attr:`Document.fields`.
    ``text_split``: the ``text`` reader's ``split``/``pattern``/``max_chars`` options,
    to cut text files into pieces. ``stages``: stage instances run on every batch
    (the extract stage for HTML/WARC). ``stats``: updated as documents come out.
    ``readers``: the reader registry (default: built-in and plugin readers)."""
    stats = stats if stats is not None else ReadStats()
    readers = readers if readers is not None else reader_registry()
    keep = tuple(dict.fromkeys((*LANGUAGE_FIELDS, *fields)))
    for stage in stages:
        stage.ensure_setup()
    files = _expand(specs, exclude=exclude, storage=storage, readers=readers)
    # what one input's files imply together, as a job's source (a code tree's .json files)
    together: dict[tuple[int, str], list[str]] = {}
    for n, fmt, path in files:
        together.setdefault((n, fmt), []).append(path)
    implied = {key: reader_class(readers, key[1]).source_options(paths) or {} for key, paths in together.items()}
    for n, fmt, path in files:
        cls = reader_class(readers, fmt)
        opts = {**implied[n, fmt],
                **(_options(cls, path, text_key, keep, text_split) or {})}
        reader: Reader = cls(source=_SOURCE, options=opts or None,
                             on_error=on_error, batch_rows=batch_rows, max_doc_bytes=max_doc_bytes)
        f = InputFile(path=path, rel=path, size=fs.stat(path, storage).size, storage=storage)
        for table in read_split(reader, ReadSplit((f,))):
            for stage in stages:
                table, _ = stage.process(table)
            yield from _documents(table, path, fields, stats)


def file_summary(specs: Sequence[str], *, exclude: Sequence[str] = (),
                 storage: fs.StorageOptions | None = None) -> list[dict[str, Any]]:
    """What a model card records about its inputs: path, format, bytes per file."""
    return [{"path": p, "format": fmt, "bytes": fs.stat(p, storage).size}
            for fmt, p in expand_inputs(specs, exclude=exclude, storage=storage)]
