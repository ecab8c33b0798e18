"""Document ids unique across the whole job: extra copies are ``read:duplicate_id``.

Within a split the reader's task marks a repeated id as it reads (the first copy in
read order is kept). Across splits no task can know, so the check is a small global
pass over compact data, joined to the end of phase 0 (before a global stage decides,
so dedup never sees an extra copy):

1. while reading, each split's task writes one row per document alive after read to
   ``work/ids/<source>/part-NNNNN.parquet``: the id's 128-bit xxh3 hash, the row and the
   origin; rows are grouped by ``part = hash % parts`` (one row group per part);
2. after phase 0, one Ray Data task per part (the driver itself when there is one part)
   reads that part of every split's file (row groups filtered by their statistics) and, per hash seen in more than one split,
   keeps the first copy in plan order (source, split, row) and decides to drop the
   others with the first copy's origin as detail;
3. the splits holding an extra copy (usually none) are run again with those decisions
   applied where the rows enter, as ``read:duplicate_id`` rejects: their outputs and
   stats are what a run that knew from the start would have written, so accounting,
   bytes and resume are unchanged, and the result does not depend on scheduling.

Memory: a part task holds its part's rows (``PART_ROWS`` ids at most, ~40 bytes each,
also when the driver runs the one part of a small job); the driver holds the decisions
(bounded by the number of extra copies). Time: the hashing in the read tasks plus
reading the compact files once; re-runs only for splits that hold extra copies.
"""

from __future__ import annotations

import math
import warnings
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from datapipe import fs
from datapipe import schema as S

REASON = "duplicate_id"
#: ids per part of the check (a part task's memory: ~40 bytes per id)
PART_ROWS = 4_000_000
#: input bytes assumed per id when sizing the parts before anything is read
BYTES_PER_ID = 200
ID_SCHEMA = pa.schema([("part", pa.int32()), ("h_hi", pa.uint64()), ("h_lo", pa.uint64()),
                       ("_row", pa.int64()), ("origin", pa.string())])


def parts_for(input_bytes: int) -> int:
    """Parts of the check for a job reading ``input_bytes`` (a function of the inputs
    only, so a restarted job cuts the same parts)."""
    return max(1, math.ceil(input_bytes / BYTES_PER_ID / PART_ROWS))


def id_rows(table: pa.Table, offset: int, parts: int) -> pa.Table:
    """The check's rows for one read batch: every row alive after read (``offset``: the
    batch's first row in the split)."""
    import xxhash

    alive = np.flatnonzero(S.alive_mask(table).to_numpy(zero_copy_only=False))
    ids = table.column(S.ID).take(pa.array(alive)).to_pylist()
    digests = [xxhash.xxh3_128_intdigest(i.encode("utf-8")) for i in ids]
    hi = np.array([d >> 64 for d in digests], dtype=np.uint64)
    lo = np.array([d & 0xFFFFFFFFFFFFFFFF for d in digests], dtype=np.uint64)
    return pa.table({"part": pa.array((hi % np.uint64(parts)).astype(np.int32)), "h_hi": hi, "h_lo": lo,
                     "_row": pa.array(alive + offset, pa.int64()),
                     "origin": table.column(S.ORIGIN).take(pa.array(alive))}, schema=ID_SCHEMA)


def write_ids(path: str, tables: list[pa.Table], storage: fs.StorageOptions | None) -> None:
    """The split's id file: rows ordered by part, one row group per part."""
    table = pa.concat_tables(tables) if tables else ID_SCHEMA.empty_table()
    table = table.sort_by([("part", "ascending"), ("_row", "ascending")])
    with fs.AtomicFile(path, storage) as out, pq.ParquetWriter(out, ID_SCHEMA, compression="zstd") as w:
        parts = table.column("part").to_numpy()
        cuts = np.flatnonzero(np.diff(parts)) + 1
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(parts)]):
            w.write_table(table.slice(int(lo), int(hi - lo)))


def _find(files: Sequence[tuple[int, str, str]], part: int, storage: fs.StorageOptions | None) -> pa.Table:
    """Extra copies among ``part`` of the id files ``(split order, split key, uri)``."""
    tables = []
    for order, key, uri in files:
        fsys, path = fs.resolve(uri, storage)
        t = pq.read_table(path, filesystem=fsys, filters=[("part", "=", part)],
                          columns=["h_hi", "h_lo", "_row", "origin"])
        if t.num_rows:
            tables.append(t.append_column("_order", pa.array(np.full(t.num_rows, order, np.int64)))
                           .append_column("_split", pa.array([key] * t.num_rows, pa.string())))
    if not tables:
        return _decisions([], [], [])
    t = pa.concat_tables(tables).sort_by([("h_hi", "ascending"), ("h_lo", "ascending"),
                                          ("_order", "ascending"), ("_row", "ascending")])
    hi, lo = t.column("h_hi").to_numpy(), t.column("h_lo").to_numpy()
    same = np.r_[False, (hi[1:] == hi[:-1]) & (lo[1:] == lo[:-1])]
    if not same.any():
        return _decisions([], [], [])
    first = np.maximum.accumulate(np.where(same, 0, np.arange(len(same))))   # each row's group start
    dup = np.flatnonzero(same)
    origins = t.column("origin").take(pa.array(first[dup])).to_pylist()
    return _decisions(t.column("_split").take(pa.array(dup)).to_pylist(),
                      t.column("_row").take(pa.array(dup)).to_pylist(),
                      [f"first copy at {o}" for o in origins])


def _find_parts(batch: pa.Table, files: Sequence[tuple[int, str, str]],
                storage: fs.StorageOptions | None) -> pa.Table:
    return pa.concat_tables([_find(files, p, storage) for p in batch.column("part").to_pylist()])


def _decisions(splits: list[str], rows: list[int], details: list[str]) -> pa.Table:
    return pa.table({"_split": pa.array(splits, pa.string()), "_row": pa.array(rows, pa.int64()),
                     "reason": pa.array([REASON] * len(rows), pa.string()),
                     "detail": pa.array(details, pa.string())})


def find_duplicates(files: Sequence[tuple[int, str, str]], parts: int, out: str, *, max_retries: int,
                    storage: fs.StorageOptions | None) -> tuple[str | None, list[str]]:
    """Run the check's part tasks over the splits' id files. Returns the decisions file
    written at ``out`` (None: no extra copy anywhere) and the keys of the splits holding
    extra copies."""
    if parts == 1:   # one part (< PART_ROWS ids): here, without a task's start-up
        found = [t for t in [_find(files, 0, storage)] if t.num_rows]
    else:   # one Ray Data task per part
        import ray

        ds = ray.data.from_items([{"part": p} for p in range(parts)], override_num_blocks=parts)
        with warnings.catch_warnings():   # retries only through ray_remote_args in Ray 2.60
            warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
            ds = ds.map_batches(_find_parts, fn_kwargs={"files": list(files), "storage": storage}, batch_size=1,
                                batch_format="pyarrow", num_cpus=1, max_retries=max_retries)
        found = [t for t in ds.iter_batches(batch_size=None, batch_format="pyarrow") if t.num_rows]
    if not found:
        return None, []
    table = pa.concat_tables(found).sort_by([("_split", "ascending"), ("_row", "ascending")])
    with fs.AtomicFile(out, storage) as f:
        pq.write_table(table, f)
    return out, sorted(set(table.column("_split").to_pylist()))

