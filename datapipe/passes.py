"""The engine's side of a global stage's Ray Data passes: where their artifacts live, how
each is written and committed, how it is read back, and how long each took.

A global stage whose ``decide()`` needs more than one process (dedup's distributed
path) builds each pass as a Ray Data dataset and hands it to :meth:`PassRunner.write`,
which owns the rest: the artifact's place under the stage's work folder, the write
through the job's storage (``write_parquet(..., filesystem=)``), the commit (written
under ``<name>.staging`` and published whole, so a half-written pass is never read),
the row count (from the Parquet footers) and the timing record that reaches the
stage's report. :meth:`PassRunner.read` reads an artifact (or side files) back with the
same storage, and :meth:`PassRunner.group` hands every partition of a dataset whole to
a kernel. Every access goes through :mod:`datapipe.fs`, so the passes reach an object
store with the spec's ``storage:`` options, never the worker's environment.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from datapipe import fs

log = logging.getLogger(__name__)


def timing(name: str, t0: float, rows: int) -> dict[str, Any]:
    """A pass's timing record (``t0``: its ``perf_counter`` start): seconds and rows,
    plus wall-clock ``t_start``/``t_end`` to line it up with other measurements."""
    seconds, now = time.perf_counter() - t0, time.time()
    return {"pass": name, "seconds": round(seconds, 3), "rows": rows, "t_start": now - seconds, "t_end": now}


def parquet_files(path: str, storage: fs.StorageOptions | None) -> list[str]:
    """The Parquet files of an artifact (a file, or a folder of them), as URIs, sorted."""
    if not fs.exists(path, storage):
        return []
    if fs.is_file(path, storage):
        return [path]
    return [f for f in fs.list_files(path, storage) if f.endswith(".parquet")]


def count_rows(path: str, storage: fs.StorageOptions | None) -> int:
    """Rows of an artifact, from the Parquet footers only."""
    return sum(pq.ParquetFile(fs.arrow_input(f, storage)).metadata.num_rows for f in parquet_files(path, storage))


def publish_dir(src: str, dst: str, storage: fs.StorageOptions | None) -> None:
    """Folder ``src`` (complete) becomes ``dst`` (absent): renamed locally, copied then
    deleted on an object store."""
    if fs.is_local(src):
        fs.replace_dir(src, dst, aside=dst + ".old")
        return
    for f in fs.list_files(src, storage):
        fs.copy_file(f, fs.join(dst, fs.relative(f, src)), storage)
    fs.delete_tree(src, storage)


class PassRunner:
    """Runs a global stage's passes under ``root`` (its work folder) with ``storage``;
    appends each pass's :func:`timing` to ``timings``."""

    def __init__(self, root: str, storage: fs.StorageOptions | None, timings: list[dict[str, Any]]) -> None:
        self.root, self.storage, self.timings = root, storage, timings

    def write(self, name: str, make_ds: Callable[[], Any], *, partition_cols: list[str] | None = None
              ) -> tuple[str, int]:
        """Run one pass: write ``make_ds()`` as the artifact ``<root>/<name>`` (under a
        staging name, published when complete) and return its URI and row count."""
        out = fs.join(self.root, name)
        tmp = out + ".staging"
        fs.Location(out, self.storage).delete()
        fs.Location(tmp, self.storage).delete()
        t0 = time.perf_counter()
        fsys, path = fs.resolve(tmp, self.storage)
        make_ds().write_parquet(path, filesystem=fsys, **({"partition_cols": partition_cols} if partition_cols else {}))
        fs.makedirs(tmp, self.storage)   # an empty pass writes no file; locally the folder must exist to move
        publish_dir(tmp, out, self.storage)
        rows = count_rows(out, self.storage)
        self.timings.append(timing(name, t0, rows))
        log.info("pass %s: %d rows in %.1f s", name, rows, time.perf_counter() - t0)
        return out, rows

    def read(self, path: str | list[str], columns: list[str] | None = None, schema: pa.Schema | None = None) -> Any:
        """An artifact (or several, or side files) as a Ray dataset; ``schema``'s empty
        dataset when there is nothing."""
        import ray

        paths = [path] if isinstance(path, str) else list(path)
        if not any(parquet_files(p, self.storage) for p in paths):
            if schema is None:
                raise AssertionError(f"no data at {path} and no schema to stand in")
            return ray.data.from_arrow(schema.empty_table())
        resolved = [fs.resolve(p, self.storage) for p in paths]
        where = [p for _, p in resolved]
        ds = ray.data.read_parquet(where[0] if isinstance(path, str) else where, filesystem=resolved[0][0])
        return ds.select_columns(columns) if columns else ds

    @staticmethod
    def group(ds: Any, parts: int, kernel: Callable[..., pa.Table], **fn_kwargs: Any) -> Any:
        """Hand every ``_part`` partition of ``ds`` whole to ``kernel``. One partition runs
        as a single task (no shuffle service to start); more use Ray Data's hash shuffle
        into ``parts`` partitions."""
        kw = {"fn_kwargs": fn_kwargs} if fn_kwargs else {}
        if parts == 1:
            return ds.groupby(None).map_groups(kernel, batch_format="pyarrow", **kw)
        return ds.groupby("_part", num_partitions=parts).map_groups(kernel, batch_format="pyarrow", **kw)

    @staticmethod
    def parts(rows: int, cap: int, cpus: int, min_rows: int) -> int:
        """Partitions for a shuffle of ``rows`` rows: at most ``cap`` rows each (memory),
        and spread over ``cpus`` while partitions keep at least ``min_rows`` rows."""
        return max(1, math.ceil(rows / cap), min(cpus, rows // min_rows))
