"""Hugging Face datasets on disk: ``save_to_disk`` folders and the Hub's Parquet layout.

``format: hf`` reads, with no network and no ``datasets`` import:

* a folder written by ``Dataset.save_to_disk`` (``data-00000-of-00001.arrow`` files in
  Arrow's streaming IPC format, beside ``state.json`` and ``dataset_info.json``) or by
  ``DatasetDict.save_to_disk`` (one such folder per split, and ``dataset_dict.json``);
* a dataset repository as the Hub stores it, e.g. a local cache snapshot
  (``~/.cache/huggingface/hub/datasets--<org>--<name>/snapshots/<rev>/``) or a
  ``huggingface-cli download`` folder: Parquet files named ``<split>-00000-of-00002.parquet``
  (``data/`` layout) or under ``<config>/<split>/`` folders (the ``refs/convert/parquet``
  layout).

Point ``paths`` at the folder; the files of the layout that hold no rows (``*.json``,
``README.md``, ``.gitattributes``, lock files) are passed over. ``split`` picks one split:
a data file belongs to split ``S`` when one of its folders is named ``S`` or its name
starts with ``S-`` or ``S.`` (``train-00000-of-00001.parquet``); ``split: null`` reads
every data file. Options are the Parquet reader's (``text_key``, ``id_key``,
``url_key``, ``metadata``): ids are ``<rel path>#<row>`` locators unless ``id_key``
names a native id, and the rows become documents exactly as :mod:`~datapipe.readers.parquet`
makes them (a null or empty text is a ``read:`` reject). Parquet files split by row
group like any Parquet input; an ``.arrow`` shard is read whole (``save_to_disk`` writes
shards of at most 500 MB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, Sequence

import pyarrow as pa

from datapipe import fs
from datapipe.errors import SpecError
from datapipe.readers._streams import FileCorrupt
from datapipe.readers.base import InputFile, ReadSplit
from datapipe.readers.parquet import ParquetOptions, ParquetReader

DATA_SUFFIXES = (".arrow", ".parquet")


@dataclass(kw_only=True, frozen=True)
class HfOptions(ParquetOptions):
    """The Parquet reader's options, plus ``split``: the split to read (``train``,
    ``validation``...); None: every data file under the paths."""

    split: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.split is not None and (not isinstance(self.split, str) or not re.fullmatch(r"[\w.]+", self.split)):
            raise SpecError(f"option split must be a split name like 'train' (letters, digits, '_', '.'), "
                            f"got {self.split!r}")


def split_of(rel: str) -> set[str]:
    """The split names a data file's relative path can belong to: its folder names and
    the part of its file name before the first ``-`` or ``.``."""
    *folders, name = rel.replace("\\", "/").split("/")
    return set(folders) | {re.split(r"[-.]", name, maxsplit=1)[0]}


class HfReader(ParquetReader):
    format = "hf"
    Options = HfOptions
    suffixes = ()   # never guessed: `.parquet` stays the parquet reader's

    def data_files(self, files: Sequence[InputFile]) -> list[InputFile]:
        """The files holding rows, of the chosen split."""
        data = [f for f in files if f.rel.lower().endswith(DATA_SUFFIXES) and not fs.basename(f.rel).startswith(".")]
        split = self.options.split
        chosen = [f for f in data if split is None or split in split_of(f.rel)]
        if not chosen:
            found = sorted({f.rel for f in data})
            what = (f"no file of split {split!r}; data files: {found[:8]}" if data else
                    f"no .arrow or .parquet files among {len(files)} file(s)")
            raise SpecError(f"source {self.source!r} (format hf): {what}. Point paths at a save_to_disk folder "
                            "or a dataset repository folder (docs/readers.md)")
        return chosen

    def plan(self, files: Sequence[InputFile], *, split_bytes: int = 64 << 20) -> list[ReadSplit]:
        return super().plan(self.data_files(files), split_bytes=split_bytes)

    def _ranges(self, f: InputFile, split_bytes: int):
        return super()._ranges(f, split_bytes) if f.rel.lower().endswith(".parquet") else None

    def _records(self, f: InputFile, start: int, end: int | None) -> Iterator[pa.Table]:
        if f.rel.lower().endswith(".parquet"):
            yield from super()._records(f, start, end)
            return
        yield from self._arrow_records(f)

    def _arrow_records(self, f: InputFile) -> Iterator[pa.Table]:
        """A ``save_to_disk`` shard: Arrow's streaming IPC format (or the IPC file
        format, should a tool have written that), re-cut to ``batch_rows``."""
        try:
            batches = self._arrow_batches(f)
            first = next(batches, None)
            if first is None:
                return
            self._check_columns(first.schema)
            columns = self._wanted(first.schema.names)
            row = 0
            for batch in _chain(first, batches):
                for off in range(0, batch.num_rows, self.batch_rows):
                    part = batch.slice(off, self.batch_rows)
                    yield self._table(f, pa.RecordBatch.from_arrays([part.column(c) for c in columns], names=columns),
                                      row)
                    row += part.num_rows
        except (pa.ArrowException, OSError) as exc:
            raise FileCorrupt("corrupt_arrow", str(exc)) from exc

    def _arrow_batches(self, f: InputFile) -> Iterator[pa.RecordBatch]:
        src = self.input(f)
        try:
            yield from pa.ipc.open_stream(src.arrow_source())
            return
        except pa.ArrowInvalid:
            pass
        reader = pa.ipc.open_file(src.arrow_source())
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)

    def _check_columns(self, schema: pa.Schema) -> None:
        opts = self.options
        for what, key in (("text_key", opts.text_key), ("id_key", opts.id_key), ("url_key", opts.url_key)):
            if key is not None and key not in schema.names:
                raise FileCorrupt("missing_column", f"no column {key!r} ({what}); columns are {schema.names}")
        text_type = schema.field(opts.text_key).type
        if not (pa.types.is_string(text_type) or pa.types.is_large_string(text_type)
                or pa.types.is_binary(text_type) or pa.types.is_large_binary(text_type)):
            raise FileCorrupt("bad_column_type", f"text column {opts.text_key!r} is {text_type}, not a string")

    def _wanted(self, names: list[str]) -> list[str]:
        opts = self.options
        columns = [k for k in (opts.text_key, opts.id_key, opts.url_key) if k is not None]
        if opts.metadata == "all":
            columns += names
        elif opts.metadata is not None:
            columns += [k if k in names else k.split(".")[0] for k in opts.metadata]
        return [c for c in dict.fromkeys(columns) if c in names]


def _chain(first, rest):
    yield first
    yield from rest
