"""Reading training text for the model trainers (``quality train``, ``lm train``,
``lm cutoffs``, ``tokenizer train``).

The trainers take inputs the way a job names its sources: paths or globs, the format
guessed from the file name or forced with a ``format:`` prefix (``warc:data/*.gz``),
and read them with the job's readers (:func:`datapipe.readers.iter_documents`) plus
the ``extract`` stage with its default settings, the one a job's ``extract: {}`` runs.
So a model is trained on text extracted exactly like the text it will score (tables
kept), and bad input is handled as in a job: a bad record is a counted reject, a
damaged file is read up to the damage with a warning naming it and one counted reject
(``on_error: skip``); the counts go into the model's card.

Each document comes with its language when the record carries one (a ``language``
field in JSONL/Parquet, CCNet's ``metadata.language``), which ``lm cutoffs`` uses.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from datapipe.readers import Document, ReadStats, iter_documents
from datapipe.readers.iterate import file_summary
from stages.extract import Extract

__all__ = ["Document", "ReadStats", "file_summary", "iter_docs"]


def iter_docs(specs: Sequence[str], *, text_key: str = "text", exclude: Sequence[str] = (),
              stats: ReadStats | None = None, **kw: Any) -> Iterator[Document]:
    """Documents of every input, in a deterministic order (specs in order, files
    sorted, records in file order), HTML and WARC pages extracted by the extract stage.
    ``kw``: more :func:`~datapipe.readers.iter_documents` options."""
    return iter_documents(specs, text_key=text_key, exclude=exclude, stats=stats, stages=(Extract(),), **kw)
