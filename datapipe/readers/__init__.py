"""Streaming readers: input files in, base-schema Arrow batches out.

``READERS`` maps the built-in formats to their reader classes; the registry a job
resolves ``format`` against is those plus every plugin's readers
(:func:`~datapipe.readers.registry.reader_registry`), and :func:`reader_for` looks one
up there. See :mod:`datapipe.readers.base` for the contract (plan files into
splits, read a split) and how bad input becomes rejects. :func:`iter_documents`
(:mod:`datapipe.readers.iterate`) reads inputs with the same readers in one process,
for the tools that train models.
"""

from __future__ import annotations

from datapipe.readers.arxiv import ArxivReader
from datapipe.readers.base import InputFile, ReadSplit, Reader
from datapipe.readers.code import CodeReader
from datapipe.readers.files import HtmlReader, TextReader
from datapipe.readers.hf import HfReader
from datapipe.readers.iterate import Document, ReadStats, iter_documents
from datapipe.readers.jsonl import JsonlReader
from datapipe.readers.mediawiki import MediaWikiReader
from datapipe.readers.parquet import ParquetReader
from datapipe.readers.stackexchange import StackExchangeReader
from datapipe.readers.warc import WarcReader
from datapipe.readers.registry import guess_format, reader_class, reader_registry

READERS: dict[str, type[Reader]] = {
    "jsonl": JsonlReader,
    "parquet": ParquetReader,
    "text": TextReader,
    "html": HtmlReader,
    "warc": WarcReader,
    "mediawiki": MediaWikiReader,
    "stackexchange": StackExchangeReader,
    "code": CodeReader,
    "arxiv": ArxivReader,
    "hf": HfReader,
}

__all__ = ["READERS", "Document", "InputFile", "ReadSplit", "ReadStats", "Reader", "guess_format",
           "iter_documents", "reader_class", "reader_for", "reader_registry"]


def reader_for(format: str) -> type[Reader]:
    """The reader class for a job spec's ``format`` among the built-in and plugin
    readers; unknown names list the valid ones."""
    return reader_class(reader_registry(), format)
