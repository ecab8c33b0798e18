"""The global-stage contract (``side()`` per split, ``decide()`` once, decisions applied
per split) run on a Ray Dataset, for a runner that hands a global stage the whole
dataset (``run(ds, ctx) -> ds``).

A split here is one batch of the materialised documents, named by a hash of its first
id, so names depend only on the data. Text is written once (``docs``), side rows are
computed from it, and every document comes back with the decided drops marked. A runner
that keeps text in the split's task (the global-stage contract) does not need this.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash
from pyarrow import fs as pafs

from datapipe import schema as S
from datapipe.stage import GlobalStage, StageContext
from stages.dedup.passes import ROW, SPLIT, _fs

LIVE = "_dd_live"


def run_on_dataset(stage: GlobalStage, ds: Any, ctx: StageContext, *, batch_rows: int) -> Any:
    root = ctx.work_dir.rstrip("/")
    applies = sorted(stage.sources) if stage.sources is not None else None
    docs, side_dir = f"{root}/docs", f"{root}/side"
    for folder in (docs, side_dir):   # a rerun starts from scratch; decide() reuses its own work
        fs, p = _fs(folder)
        if fs.get_file_info(p).type != pafs.FileType.NotFound:
            fs.delete_dir(p)
    ds.map_batches(_number, fn_kwargs={"applies": applies}, batch_format="pyarrow",
                   batch_size=batch_rows).write_parquet(docs)
    import ray

    if not _exists(docs):     # no documents came in
        stage.decide([], ctx)
        return ds
    ray.data.read_parquet(docs).map_batches(_side, fn_kwargs={"stage": stage}, batch_format="pyarrow",
                                            batch_size=batch_rows).write_parquet(side_dir)
    decisions = stage.decide([side_dir] if _exists(side_dir) else [], ctx)
    dec = None
    if decisions is not None:
        fs, p = _fs(decisions)
        dec = pq.read_table(p, filesystem=fs)   # bounded by the number of duplicates
    return ray.data.read_parquet(docs).map_batches(apply_decisions, fn_kwargs={"decisions": dec, "stage": stage.name},
                                                   batch_format="pyarrow")


def _exists(folder: str) -> bool:
    fs, p = _fs(folder)
    info = fs.get_file_info(p)
    return info.type != pafs.FileType.NotFound and any(
        f.path.endswith(".parquet") for f in fs.get_file_info(pafs.FileSelector(p, recursive=True)))


def _number(batch: pa.Table, *, applies: list[str] | None) -> pa.Table:
    n = batch.num_rows
    name = f"{xxhash.xxh3_64_intdigest(str(batch.column(S.ID)[0].as_py()).encode()):016x}" if n else ""
    live = S.alive_mask(batch)
    if applies is not None:
        live = pc.and_(live, pc.is_in(batch.column(S.SOURCE), pa.array(applies, pa.string())))
    return (batch.append_column(SPLIT, pa.array([name] * n, pa.string()))
            .append_column(ROW, pa.array(np.arange(n, dtype=np.int64))).append_column(LIVE, live))


def _side(batch: pa.Table, *, stage: GlobalStage) -> pa.Table:
    live = batch.filter(batch.column(LIVE))
    side = stage.side(live.drop_columns([SPLIT, ROW, LIVE]))
    return side.append_column(SPLIT, live.column(SPLIT)).append_column(ROW, live.column(ROW))


def apply_decisions(batch: pa.Table, *, decisions: pa.Table | None, stage: str) -> pa.Table:
    """Mark the rows of ``batch`` that ``decisions`` names (by ``_split``, ``_row``) as
    rejects of ``stage``; drop the helper columns."""
    out = batch.drop_columns([c for c in (SPLIT, ROW, LIVE) if c in batch.column_names])
    if decisions is None or batch.num_rows == 0:
        return out
    want = pc.binary_join_element_wise(decisions.column(SPLIT), decisions.column(ROW).cast(pa.string()), "#")
    have = pc.binary_join_element_wise(batch.column(SPLIT), batch.column(ROW).cast(pa.string()), "#")
    idx = pc.index_in(have, value_set=want)
    hit = pc.is_valid(idx)
    if not pc.any(hit).as_py():
        return out
    reason = pc.binary_join_element_wise(pa.scalar(f"{stage}:"), decisions.column("reason").take(idx), "")
    cols = {name: out.column(name) for name in out.column_names}
    cols[S.REJECT_STAGE] = pc.if_else(hit, pa.scalar(stage), cols[S.REJECT_STAGE])
    cols[S.REJECT_REASON] = pc.if_else(hit, reason, cols[S.REJECT_REASON])
    cols[S.REJECT_DETAIL] = pc.if_else(hit, decisions.column("detail").take(idx), cols[S.REJECT_DETAIL])
    return pa.table(cols, schema=out.schema)
