"""Parquet reader: one document per row.

A file larger than ``split_bytes`` splits by row group: consecutive row groups are
grouped into one split up to ``split_bytes`` of compressed column data, and a split's
``start``/``end`` are row-group indices. Only the configured columns are read, batch
by batch (``ParquetFile.iter_batches``), so memory is bounded by a row group's pages.

The locator is ``rel#<row index in the file>``, known from the footer whatever the
split, so ids do not depend on ``split_bytes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from datapipe import schema as S
from datapipe.readers._streams import FileCorrupt
from datapipe.readers.base import InputFile, KeyOptions, Reader, escape_name, metadata_json
from datapipe.readers.inputs import Input
from datapipe.readers.jsonl import get_field


@dataclass(kw_only=True, frozen=True)
class ParquetOptions(KeyOptions):
    """``text_key``: the text column (string, or binary holding UTF-8). ``id_key``: a
    column of native ids (also kept in ``source_id``). ``url_key``: a URL column.
    ``metadata``: columns kept as a JSON object in the ``metadata`` column (names,
    dotted paths into struct columns, or ``all``)."""


def _open(src: Input) -> pq.ParquetFile:
    source = src.arrow_source()
    try:
        pf = pq.ParquetFile(source)
        pf.schema_arrow.names   # a schema whose names or metadata are not UTF-8 fails here, not later
        return pf
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise FileCorrupt("corrupt_parquet", str(exc)) from exc


def _valid_strings(col: pa.Array) -> pa.Array:
    """A string column as it is when it is valid UTF-8 (Parquet readers do not check);
    else with each bad value's bytes decoded with U+FFFD for what is not UTF-8."""
    try:
        col.validate(full=True)
        return col
    except pa.ArrowInvalid:
        return pa.array([None if b is None else b.decode("utf-8", "replace")
                         for b in col.cast(pa.binary()).to_pylist()], pa.string())


class ParquetReader(Reader):
    format = "parquet"
    Options = ParquetOptions
    suffixes = (".parquet",)

    def _ranges(self, f: InputFile, split_bytes: int):
        try:
            md = pq.read_metadata(self.input(f).arrow_source())
        except (pa.ArrowException, OSError, FileCorrupt):
            return None  # read() reports the corrupt file
        ranges: list[tuple[int, int | None, int]] = []
        first, acc = 0, 0
        for i in range(md.num_row_groups):
            rg = md.row_group(i)
            size = sum(rg.column(j).total_compressed_size for j in range(rg.num_columns))
            if acc and acc + size > split_bytes:
                ranges.append((first, i, acc))
                first, acc = i, 0
            acc += size
        if md.num_row_groups == 0:
            return None
        ranges.append((first, md.num_row_groups, acc))
        return ranges

    def _records(self, f: InputFile, start: int, end: int | None) -> Iterator[pa.Table]:
        opts = self.options
        pf = _open(self.input(f))
        md = pf.metadata
        names = pf.schema_arrow.names
        for what, key in (("text_key", opts.text_key), ("id_key", opts.id_key), ("url_key", opts.url_key)):
            if key is not None and key not in names:
                raise FileCorrupt("missing_column",
                                  f"no column {key!r} ({what}); columns are {names}")
        text_type = pf.schema_arrow.field(opts.text_key).type
        if not (pa.types.is_string(text_type) or pa.types.is_large_string(text_type)
                or pa.types.is_binary(text_type) or pa.types.is_large_binary(text_type)):
            raise FileCorrupt("bad_column_type",
                              f"text column {opts.text_key!r} is {text_type}, not a string")
        stop = md.num_row_groups if end is None else min(end, md.num_row_groups)
        groups = list(range(start, stop))
        if not groups:
            return
        row = sum(md.row_group(i).num_rows for i in range(start))
        columns = [k for k in (opts.text_key, opts.id_key, opts.url_key) if k is not None]
        if opts.metadata == "all":
            columns += names
        elif opts.metadata is not None:
            columns += [k if k in names else k.split(".")[0] for k in opts.metadata]
        columns = [c for c in dict.fromkeys(columns) if c in names]
        try:
            batches = pf.iter_batches(batch_size=self.batch_rows, row_groups=groups, columns=columns)
            for batch in batches:
                yield self._table(f, batch, row)
                row += batch.num_rows
        except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
            raise FileCorrupt("corrupt_parquet", f"{exc} (at row {row})") from exc

    def _table(self, f: InputFile, batch: pa.RecordBatch, row0: int) -> pa.Table:
        """One base-schema table for one Parquet batch, checks done column-wise."""
        opts = self.options
        n = batch.num_rows
        text = batch.column(opts.text_key)
        reasons: list[str | None] = [None] * n
        details: list[str | None] = [None] * n
        if pa.types.is_large_string(text.type) or pa.types.is_large_binary(text.type):
            text = text.cast(pa.string() if pa.types.is_large_string(text.type) else pa.binary())
        if pa.types.is_string(text.type):
            # the Parquet reader does not check that strings are UTF-8; a cast through
            # binary does (Arrow's fast validator: cheaper than validate(full=True))
            try:
                text.cast(pa.binary()).cast(pa.string())
            except pa.ArrowInvalid:
                text = text.cast(pa.binary())   # rows that are not UTF-8 become rejects below
        if pa.types.is_binary(text.type):
            text = self._decode(text, reasons, details)
        lengths = pc.fill_null(pc.binary_length(text), 0).to_numpy(zero_copy_only=False)
        nulls = pc.is_null(text).to_numpy(zero_copy_only=False)
        blank = pc.fill_null(pc.utf8_is_space(text), False).to_numpy(zero_copy_only=False)
        blank |= (lengths == 0) & ~nulls
        limit = self.max_doc_bytes
        for i in np.flatnonzero(nulls | blank | (lengths > limit)):
            if reasons[i] is not None:
                continue
            if nulls[i]:
                reasons[i], details[i] = "read:missing_text", f"{opts.text_key!r} is null"
            elif lengths[i] > limit:
                reasons[i], details[i] = "read:too_large", self._too_large(int(lengths[i]))
            else:
                reasons[i], details[i] = "read:empty", f"{opts.text_key!r} is empty or whitespace"
        locs = [f"{f.rel}#{r}" for r in range(row0, row0 + n)]
        keys = locs
        native = [None] * n
        if opts.id_key is not None:
            native = _valid_strings(pc.cast(batch.column(opts.id_key), pa.string())).to_pylist()
            keys = [loc if v is None else v for loc, v in zip(locs, native)]
        meta = [None] * n
        if opts.metadata is not None:
            try:
                rows = batch.to_pylist()
            except UnicodeDecodeError:   # a string field that is not UTF-8
                rows = pa.RecordBatch.from_arrays(
                    [_valid_strings(c) if pa.types.is_string(c.type) else c for c in batch.columns],
                    names=batch.schema.names).to_pylist()
            meta = [metadata_json(row, opts.metadata, opts.text_key, get_field) for row in rows]
        urls = (_valid_strings(pc.cast(batch.column(opts.url_key), pa.string())) if opts.url_key is not None
                else pa.nulls(n, pa.string()))
        reason_arr = pa.array(reasons, pa.string())
        bad = pc.is_valid(reason_arr)
        if any(r is not None for r in reasons):
            text = pc.if_else(bad, pa.nulls(n, pa.string()), text)
        source = self.source
        return pa.Table.from_arrays(
            [
                pa.array([S.make_id(source, k) for k in keys], pa.string()),
                pa.array([source] * n, pa.string()),
                text,
                urls,
                pa.nulls(n, pa.binary()),
                pa.array([escape_name(x) for x in locs] if escape_name(f.rel) != f.rel else locs, pa.string()),
                pa.array(native, pa.string()),
                pa.array(meta, pa.string()),
                pc.if_else(bad, pa.scalar("read"), pa.scalar(None, pa.string())),
                reason_arr,
                pa.array(details, pa.string()),
            ],
            schema=S.BASE_SCHEMA,
        )

    @staticmethod
    def _decode(col: pa.Array, reasons: list, details: list) -> pa.Array:
        """A binary text column as strings; rows that are not UTF-8 become rejects."""
        try:
            return col.cast(pa.string())
        except pa.ArrowInvalid:
            out = []
            for i, b in enumerate(col.to_pylist()):
                if b is None:
                    out.append(None)
                    continue
                try:
                    out.append(b.decode("utf-8"))
                except UnicodeDecodeError as exc:
                    reasons[i], details[i] = "read:invalid_utf8", f"{exc.reason} at byte {exc.start}"
                    out.append(None)
            return pa.array(out, pa.string())
