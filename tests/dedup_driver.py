"""A tiny stand-in for the runner's side of the global-stage contract, for dedup tests:
each split's live rows -> ``side()`` + ``_split``/``_row`` -> Parquet under
``<work_dir>/side/``; the stage's passes once, through the engine's entry point
(``datapipe.passes.run_global``, under ``<work_dir>/passes/``); the decisions applied to
each split's rows as reject marks. Independent of ``datapipe.runner``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from datapipe import passes
from datapipe import schema as S
from datapipe.stage import GlobalStage, StageContext


def write_side(stage: GlobalStage, splits: dict[str, pa.Table], work_dir: Path) -> list[str]:
    """Side files of every split: the rows the stage sees (alive, of its sources), with
    ``_row`` their position among the split's rows."""
    side_dir = work_dir / "side"
    side_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for i, (name, t) in enumerate(sorted(splits.items())):
        live = S.alive_mask(t).to_numpy(zero_copy_only=False)
        if stage.sources is not None:
            live &= np.isin(np.array(t[S.SOURCE].to_pylist(), dtype=object), sorted(stage.sources))
        rows = np.flatnonzero(live)
        side = stage.side(t.take(pa.array(rows)))
        assert side.num_rows == len(rows) and S.TEXT not in side.column_names
        side = side.append_column("_split", pa.array([name] * len(rows), pa.string()))
        side = side.append_column("_row", pa.array(rows, pa.int64()))
        path = side_dir / f"part-{i:05d}.parquet"
        pq.write_table(side, path)
        files.append(str(path))
    return files


def run_global(stage: GlobalStage, splits: dict[str, pa.Table], work_dir: Path,
               sources: tuple[str, ...]) -> tuple[dict[str, tuple[str, str]], dict, str | None]:
    """Side files -> the stage's passes -> ``({document id: (reject reason, detail)},
    report, decisions URI)`` for the rows the decisions drop."""
    files = write_side(stage, splits, work_dir)
    ctx = StageContext(work_dir=str(work_dir / "passes"), sources=sources)
    uri = passes.run_global(stage, files, ctx)
    removed: dict[str, tuple[str, str]] = {}
    if uri is not None:
        dec = pq.read_table(uri)
        keys = list(zip(dec["_split"].to_pylist(), dec["_row"].to_pylist()))
        assert keys == sorted(keys), "decisions must be sorted by (_split, _row)"
        for (split, row), reason, detail in zip(keys, dec["reason"].to_pylist(), dec["detail"].to_pylist()):
            t = splits[split]
            assert S.alive_mask(t)[row].as_py(), "a decision names a row that was already dropped"
            removed[t[S.ID][row].as_py()] = (f"{stage.name}:{reason}", detail)
    return removed, ctx.report, uri


def split_tables(tables: list[pa.Table]) -> dict[str, pa.Table]:
    """One split per table, named by source and position."""
    return {f"{t[S.SOURCE][0].as_py()}-{i:04d}": t for i, t in enumerate(tables) if t.num_rows}


__all__ = ["run_global", "split_tables", "write_side"]
