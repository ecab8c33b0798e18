"""Document ids unique across the whole job: extra copies are ``read:duplicate_id``.

Within a split the reader's task marks a repeated id as it reads (the first copy in
read order is kept). Across splits no task can know, so the check is a small global
pass over compact data, joined to the end of phase 0 (before a global stage decides,
so dedup never sees an extra copy):

1. while reading, each split's task writes one row per document alive after read to
   ``work/ids/<source>/part-NNNNN.parquet``: the id's 128-bit xxh3 hash, the row and the
   origin; rows are grouped by ``part = hash % parts`` (one row group per part);
2. after phase 0, the check's one declared pass (:func:`check_passes`, run by the
   engine's pass executor (:func:`datapipe.passes.run_passes`), which owns its files, resume key,
   commit and timing): one Ray Data task per part (the driver itself when there is one
   part) reads that part of every split's file (row groups filtered by their
   statistics) and, per hash seen in more than one split, keeps the first copy in plan
   order (source, split, row) and decides to drop the others with the first copy's
   origin as detail;
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
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from datapipe import fs
from datapipe import schema as S
from datapipe.passes import Output, Parts, Pass, parquet_files, run_passes

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


#: the executor's name for the splits' id files
IDS = "ids"


def extra_copies(t: pa.Table, *, splits: list[str]) -> pa.Table:
    """The decisions for one part of the id files (``_input``: the file's position, which
    is its split's position in plan order, ``splits[_input]`` its key): per hash seen more
    than once, every copy after the first in (split, row) order."""
    t = t.sort_by([("h_hi", "ascending"), ("h_lo", "ascending"), ("_input", "ascending"), ("_row", "ascending")])
    hi, lo = t.column("h_hi").to_numpy(), t.column("h_lo").to_numpy()
    same = np.r_[False, (hi[1:] == hi[:-1]) & (lo[1:] == lo[:-1])]
    if not same.any():
        return S.DECISIONS.empty_table()
    first = np.maximum.accumulate(np.where(same, 0, np.arange(len(same))))   # each row's group start
    dup = np.flatnonzero(same)
    origins = t.column("origin").take(pa.array(first[dup])).to_pylist()
    names = np.array(splits, dtype=object)[t.column("_input").to_numpy()[dup]]
    return pa.table({"_split": pa.array(names.tolist(), pa.string()), "_row": t.column("_row").take(pa.array(dup)),
                     "reason": pa.array([REASON] * len(dup), pa.string()),
                     "detail": pa.array([f"first copy at {o}" for o in origins], pa.string())}, schema=S.DECISIONS)


def check_passes(splits: Sequence[str], parts: int) -> list[Pass]:
    """The check as a pass: one task per part of the id files (the read tasks wrote one
    row group per part, so a part task reads only its row groups, and no shuffle is
    needed; one part runs on the driver), its output the sorted decisions."""
    return [Pass(name="duplicates", inputs=(IDS,), fn=extra_copies, partitioning=Parts(column="part", parts=parts),
                 output=Output(schema=S.DECISIONS, sort_by=(S.SPLIT, S.ROW)),
                 params={"splits": list(splits)}, columns=("h_hi", "h_lo", "_row", "origin"))]


def find_duplicates(files: Sequence[tuple[str, str]], parts: int, work: str, *, max_retries: int,
                    storage: fs.StorageOptions | None, timings: list[dict[str, Any]] | None = None
                    ) -> tuple[str | None, list[str]]:
    """Run the check over the splits' id files ``(split key, uri)`` in plan order with
    the engine's pass executor under ``work`` (a committed check with the same id files
    is reused). Returns the decisions (None: no extra copy anywhere) and the keys of the
    splits holding extra copies."""
    plan = check_passes([key for key, _ in files], parts)
    art = run_passes(plan, work, storage, inputs={IDS: [uri for _, uri in files]}, timings=timings,
                     max_retries=max_retries).artifacts["duplicates"]
    if not art.rows:
        return None, []
    tables = [pq.read_table(fs.arrow_input(f, storage), columns=["_split"]) for f in parquet_files(art.uri, storage)]
    return art.uri, sorted(set(pa.concat_tables(tables).column("_split").to_pylist()))
