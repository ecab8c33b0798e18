"""Streaming readers: input files in, base-schema Arrow batches out.

``READERS`` maps a job spec's ``format`` to its reader class; :func:`reader_for`
looks one up. See :mod:`datapipe.readers.base` for the contract (plan files into
splits, read a split) and how bad input becomes rejects. :func:`iter_documents`
(:mod:`datapipe.readers.iterate`) reads inputs with the same readers in one process,
for the tools that train models.
"""

from __future__ import annotations

from datapipe.errors import SpecError
from datapipe.readers.base import InputFile, ReadSplit, Reader
from datapipe.readers.files import HtmlReader, TextReader
from datapipe.readers.hf import HfReader
from datapipe.readers.iterate import Document, ReadStats, iter_documents
from datapipe.readers.jsonl import JsonlReader
from datapipe.readers.mediawiki import MediaWikiReader
from datapipe.readers.parquet import ParquetReader
from datapipe.readers.stackexchange import StackExchangeReader
from datapipe.readers.warc import WarcReader

READERS: dict[str, type[Reader]] = {
    "jsonl": JsonlReader,
    "parquet": ParquetReader,
    "text": TextReader,
    "html": HtmlReader,
    "warc": WarcReader,
    "mediawiki": MediaWikiReader,
    "stackexchange": StackExchangeReader,
    "hf": HfReader,
}

__all__ = ["READERS", "Document", "InputFile", "ReadSplit", "ReadStats", "Reader", "iter_documents", "reader_for"]


def reader_for(format: str) -> type[Reader]:
    """The reader class for a job spec's ``format``; unknown names list the valid ones."""
    try:
        return READERS[format]
    except (KeyError, TypeError):
        raise SpecError(
            f"unknown source format {format!r}; valid formats: {sorted(READERS)}"
        ) from None
