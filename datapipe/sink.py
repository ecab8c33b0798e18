"""Document sinks: output a stage writes beside ``documents/`` and ``rejects/``.

The runner writes every split's documents and rejects itself (Parquet or JSONL). A stage
whose output has its own format (``tokenize``: Megatron token shards) provides a
:class:`DocumentSink` from :meth:`datapipe.stage.Stage.sink`; the runner knows nothing
else about it:

* once on the driver, when the job is planned: the stage builds the sink;
* before the final phase, on the driver: :meth:`DocumentSink.prepare` (load what
  every split needs; the sink is then shipped to the tasks);
* in each split's task of the final phase: :meth:`DocumentSink.open` gives a
  :class:`SplitWriter` that receives the split's kept documents in read order and
  writes the split's files itself (text moves once);
* on the driver, after every split: :meth:`DocumentSink.finish` merges the splits'
  records (O(files), never O(documents)) and checks them against the documents files.

Files are named by the split, never by scheduling, so a retried split rewrites its own
files with the same bytes; a split writer's record lists every file with size and
sha256, and a resumed run reuses the split only when they verify.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator

import pyarrow as pa

from datapipe import fs


@dataclass(frozen=True, kw_only=True)
class SinkSplit:
    """Where one split's sink output goes. ``folder``: ``<staging>/<sink folder>/<source>``
    (published with the output); ``work_dir``: ``<staging>/work/<sink folder>/<source>``
    (deleted at commit)."""

    source: str
    index: int
    folder: str
    work_dir: str
    storage: fs.StorageOptions | None = None

    @property
    def part(self) -> str:
        return f"part-{self.index:05d}"


class SplitWriter(ABC):
    """One split's sink output, written in the split's task."""

    @abstractmethod
    def add(self, kept: pa.Table) -> None:
        """The split's next kept documents (every column, ``consumes`` included)."""

    @abstractmethod
    def close(self) -> dict[str, Any] | None:
        """Finish the split's files. Returns None when nothing was written, else
        ``{"manifest": uri, "written": [{"path", "file_bytes", "sha256"}, ...]}``: the
        split's own record of what it wrote (``manifest`` must exist for a resume)."""


@dataclass(frozen=True, kw_only=True)
class SinkResult:
    """What :meth:`DocumentSink.finish` hands back: per-source totals for the report and
    ``manifest.json`` (JSON-able), and the disagreements found (empty: consistent)."""

    totals: dict[str, Any]
    problems: list[str]


class DocumentSink(ABC):
    """Output a stage writes per split beside documents/rejects (see the module doc).

    Subclasses set ``folder`` (the output folder it publishes, e.g. ``shards``),
    ``consumes`` (stage columns it takes that the documents/rejects files never hold)
    and ``sums`` (integer columns whose per-file sums the runner records with every
    documents and rejects file, under the column's name, so :meth:`finish` can check
    its output against the documents written). A sink is
    pickled to the tasks: keep it small."""

    folder: ClassVar[str]
    consumes: ClassVar[frozenset[str]] = frozenset()
    sums: ClassVar[tuple[str, ...]] = ()

    def prepare(self) -> None:
        """On the driver, once before the splits run."""

    @abstractmethod
    def open(self, split: SinkSplit) -> SplitWriter:
        """The writer of one split (in the split's task)."""

    @abstractmethod
    def finish(self, *, staging: str, storage: fs.StorageOptions | None, sources: list[str],
               splits: list[tuple[SinkSplit, dict[str, Any] | None]], documents: list[dict[str, Any]]) -> SinkResult:
        """On the driver after every split: ``splits`` holds each split (plan order) with
        the record its writer returned; ``documents`` the documents files written (each
        with ``source``, ``rows`` and each of ``sums``)."""


# -- helpers for sinks that write real local files (memory-mapped or fsynced) ------

@contextlib.contextmanager
def local_dir(folder: str) -> Iterator[str]:
    """``folder`` itself when local; else a task-local temporary folder (removed after)
    whose files the caller uploads to ``folder`` with :func:`upload`."""
    if fs.is_local(folder):
        os.makedirs(fs.local_path(folder), exist_ok=True)
        yield fs.local_path(folder)
        return
    tmp = tempfile.mkdtemp(prefix="datapipe-sink-")
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def upload(local: str, uri: str, storage: fs.StorageOptions | None) -> None:
    """Stream local file ``local`` to ``uri`` (never whole in memory)."""
    fs.upload_file(local, uri, storage)


def file_info(path: str, storage: fs.StorageOptions | None = None) -> dict[str, Any]:
    """``{"path", "file_bytes", "sha256"}``: how a done-record lists a file."""
    return {"path": path, "file_bytes": fs.stat(path, storage).size, "sha256": fs.sha256(path, storage)}
