"""What one Ray task (or actor call) does with one read split: text moves once.

A job's stage chain is cut at its global stages into *phases*. In every phase, one call
of :meth:`SplitRunner.run` takes one read split from its input to its output:

* input: phase 0 reads the split with its reader; a later phase reloads the split's own
  rows from the work file the previous phase wrote and marks the rows the previous
  global stage decided to drop;
* then the phase's batch stages, fused, batch by batch;
* output: before a global stage, the split's rows go to a work file and the stage's
  compact ``side()`` rows to a side file; after the last global stage, the kept
  documents and the rejects go to ``documents/<source>/part-<split>.parquet`` and
  ``rejects/<source>/part-<split>.parquet`` (rows in read order) and the kept documents
  to the plan's document sink, if a stage provides one (``tokenize``: the split's token
  shards, :mod:`datapipe.sink`).

Every file name is a function of the split, never of scheduling, and files are written
under a temporary name and renamed: a retried split overwrites its own files with the
same bytes. Parquet row groups hold a fixed number of rows whatever the batch size, so
bytes do not depend on ``batch_rows``. The call returns a small record (files written
with rows, bytes and sha256, and its per-stage per-source stats) and writes the same
record last, as the split's done-record, so a restarted job can reuse the split.

All file access goes through :mod:`datapipe.fs` (atomic writes: :class:`fs.AtomicFile`).
"""

from __future__ import annotations

import gzip
import io
import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from datapipe import fs
from datapipe import schema as S
from datapipe import stats as ST
from datapipe.errors import FULL_DISK, DatapipeError, JobError
from datapipe.plan import Phase, SplitRef
from datapipe.sink import DocumentSink, SinkSplit, file_info
from datapipe.spec import OutputSpec
from datapipe.readers.base import read_split
from datapipe.schema import ROW, SPLIT
from datapipe.stage import mark_rejects

#: rows per Parquet row group in every file the runner writes (bytes independent of batch size)
ROW_GROUP_ROWS = 4096
REJECT_RENAMES = {S.REJECT_STAGE: "reject_stage", S.REJECT_REASON: "reject_reason", S.REJECT_DETAIL: "reject_detail"}
EDIT = "edit"   # a global stage's decisions: the units an edit removes (null: drop the row)


@dataclass(frozen=True)
class PhaseEnv:
    """Everything a split's task needs besides the split (shipped once per worker): its
    part of the plan, never the job spec."""

    phase: Phase
    staging: str
    readers: Mapping[str, Any]         # source -> reader (phase 0 reads with them)
    batch_rows: int                    # rows per batch when a later phase reloads a split
    output: OutputSpec
    decisions: str | None = None       # the previous global stage's decisions (URI)
    input_digest: str = ""             # identifies this phase's inputs for resume
    sink: DocumentSink | None = None   # the final phase's document sink (prepared)
    storage: fs.StorageOptions | None = None   # how ``staging`` is reached (picklable, no secrets)
    id_parts: int = 0                  # phase 0: parts of the id check (datapipe.unique_ids)
    id_drops: str | None = None        # phase 0: extra copies of ids to mark at read (URI)
    prepared: Mapping[str, Mapping[str, str]] = field(default_factory=dict)   # stage -> its prepare() artifacts

    def work(self, *parts: str) -> str:
        return _join(self.staging, "work", *parts)

    def done_path(self, ref: SplitRef) -> str:
        return self.work("done", f"p{self.phase.index}", ref.source, ref.part + ".json")

    def rows_path(self, phase_index: int, ref: SplitRef) -> str:
        return self.work("rows", f"p{phase_index}", ref.source, ref.part + ".parquet")

    def ids_path(self, ref: SplitRef) -> str:
        return self.work("ids", ref.source, ref.part + ".parquet")

    def side_path(self, ref: SplitRef) -> str:
        assert self.phase.after is not None
        return self.work("side", self.phase.after.name, ref.source, ref.part + ".parquet")


def sink_split(sink: DocumentSink, staging: str, ref: SplitRef, storage: fs.StorageOptions | None) -> SinkSplit:
    """Where ``ref``'s sink output goes: ``<staging>/<folder>/<source>``, with its
    records under ``<staging>/work/<folder>/<source>``."""
    return SinkSplit(source=ref.source, index=ref.index, folder=_join(staging, sink.folder, ref.source),
                     work_dir=_join(staging, "work", sink.folder, ref.source), storage=storage)


class SplitRunner:
    """Runs one phase over splits; stages are built (and set up) once per process."""

    def __init__(self, env: PhaseEnv) -> None:
        self.env = env
        self.stages = [st.make() for st in env.phase.stages]
        for stage in self.stages:
            stage.prepared = dict(env.prepared.get(stage.name, {}))
            stage.ensure_setup()
        self.glob = env.phase.after.make() if env.phase.after is not None else None
        self._before: Any = None   # the previous global stage, built when its decisions edit
        #: the columns the previous global stage adds: its decisions may set them (annotations)
        self._sets = tuple(env.phase.before.adds) if env.phase.before is not None else ()

    def __call__(self, batch: pa.Table) -> pa.Table:
        """Ray Data entry point: a batch of pickled :class:`SplitRef` in, records out."""
        import pickle

        records, errors = [], []
        for blob in batch.column("ref").to_pylist():
            try:
                records.append(json.dumps(self.run(pickle.loads(blob)), sort_keys=True))
                errors.append(None)
            except (DatapipeError, PermissionError) as e:  # the user's error, not a fault: no retry,
                records.append(None)                       # and Ray would drop its type (and an
                errors.append(pickle.dumps(e))             # OSError's path) on the way to the driver
            except OSError as e:
                if e.errno not in FULL_DISK:   # maybe transient (an object store): Ray retries
                    raise
                records.append(None)
                errors.append(pickle.dumps(e))
        return pa.table({"record": pa.array(records, pa.string()), "error": pa.array(errors, pa.binary())})

    def run(self, ref: SplitRef) -> dict[str, Any]:
        env = self.env
        stats: ST.SplitStats = {}
        if self.glob is None:
            out: Any = _OutputFiles(env, ref)
        else:   # a split of a source the global stage does not apply to gets no side rows
            side = self.glob.side if env.phase.after.applies_to(ref.source) else None
            out = _WorkFiles(env, ref, self.glob.name, side)
        t0 = time.perf_counter()
        ids: list[pa.Table] | None = [] if env.phase.before is None and env.id_parts else None
        for batch in self._input(ref, stats, ids):
            for spec, stage, schema in zip(env.phase.stages, self.stages, env.phase.schemas):
                rows = batch.num_rows
                batch, st = stage.process(batch)
                if batch.num_rows != rows:
                    raise JobError(f"stage {spec.name!r} returned {batch.num_rows} rows for {rows}: "
                                   "stages mark drops, never remove rows")
                batch = S.conform(batch, schema)
                ST.add(stats, spec.name, st)
            out.add(batch)
        record = {"key": ref.key, "phase": env.phase.index, "input": env.input_digest,
                  "stats": ST.to_dicts(stats), "seconds": round(time.perf_counter() - t0, 4), **out.close()}
        if ids is not None:
            from datapipe.unique_ids import write_ids

            write_ids(env.ids_path(ref), ids, env.storage)
            record["work"].append(file_info(env.ids_path(ref), env.storage))
            record["ids"] = env.ids_path(ref)
        fs.write_bytes(env.done_path(ref), (json.dumps(record, sort_keys=True) + "\n").encode(), env.storage)
        return record

    # -- input -------------------------------------------------------------------
    def _input(self, ref: SplitRef, stats: ST.SplitStats, ids: list[pa.Table] | None) -> Iterator[pa.Table]:
        env = self.env
        if env.phase.before is None:
            drops, _, _ = _decisions_for(env.id_drops, ref.key, env.storage)   # the id check never edits
            yield from _read(env.readers[ref.source], env.phase.input_schema, ref, stats, drops, ids, env.id_parts)
            return
        name = env.phase.before.name
        mine = env.phase.before.applies_to(ref.source)   # else: untouched, uncounted by the stage
        drops, edits, sets = _decisions_for(env.decisions if mine else None, ref.key, env.storage, self._sets)
        schema = env.phase.input_schema
        offset = 0
        for batch in _read_parquet_batches(env.rows_path(env.phase.index - 1, ref), env.batch_rows, env.storage):
            batch = _apply_decisions(S.conform(batch, schema), drops, offset, name)
            if sets[0].size:
                batch = _apply_sets(batch, sets, offset, name)
            if edits[0].size:
                batch, st = _apply_edits(batch, edits, offset, name, self._editor())
                ST.add(stats, name, st)
            elif mine:
                ST.add(stats, name, ST.tally_marks(batch, name, count_raw=False))
            offset += batch.num_rows
            yield batch
        last = max(int(drops[0].max()) if drops[0].size else -1, int(edits[0].max()) if edits[0].size else -1,
                   int(sets[0].max()) if sets[0].size else -1)
        if offset <= last:
            raise JobError(f"stage {name!r} decided on row {last} of split {ref.key}, which has {offset} rows")

    def _editor(self) -> Any:
        """The previous global stage, built once per process: it applies its own edits."""
        if self._before is None:
            self._before = self.env.phase.before.make()
        return self._before


def _read(reader: Any, schema: pa.Schema, ref: SplitRef, stats: ST.SplitStats, drops, ids: list[pa.Table] | None,
          id_parts: int) -> Iterator[pa.Table]:
    """The split's rows from its reader, with duplicate ids marked ``read:duplicate_id``
    (the first copy is kept; its origin is the detail): within the split as they are
    read, and the extra copies of ids first seen in earlier splits (``drops``: the
    rows :mod:`datapipe.unique_ids` decided on). Appends the id check's rows to ``ids``
    (when not None) and tallies the read stats."""
    seen: dict[str, str] = {}
    offset = 0
    t0 = time.perf_counter()
    for table in read_split(reader, ref.split):
        table = _mark_duplicate_ids(S.conform(table, schema), seen)
        table = _apply_decisions(table, drops, offset, "read")
        if ids is not None:
            from datapipe.unique_ids import id_rows

            ids.append(id_rows(table, offset, id_parts))
        offset += table.num_rows
        st = ST.tally_marks(table, "read", count_raw=True)
        elapsed = time.perf_counter() - t0
        for s in st.values():
            s.seconds = elapsed * s.docs_in / max(1, table.num_rows)
        ST.add(stats, "read", st)
        yield table
        t0 = time.perf_counter()


def _mark_duplicate_ids(table: pa.Table, seen: dict[str, str]) -> pa.Table:
    ids = table.column(S.ID).to_pylist()
    reasons = table.column(S.REJECT_REASON).to_pylist()
    origins = table.column(S.ORIGIN).to_pylist()
    dup, first = [], []
    for i, (doc_id, reason) in enumerate(zip(ids, reasons)):
        if reason is not None:
            continue
        if doc_id in seen:
            dup.append(i)
            first.append(f"first copy at {seen[doc_id]}")
        else:
            seen[doc_id] = origins[i] or ""
    return mark_rejects(table, dup, stage="read", reasons=["read:duplicate_id"] * len(dup), details=first)


def _decisions_for(uri: str | None, key: str, storage: fs.StorageOptions | None = None,
                   sets: tuple[str, ...] = ()) -> tuple[Any, Any, Any]:
    """This split's decisions as ``(drops, edits, annotations)``: drops are the decided
    rows (sorted) with their reasons and details; edits the rows a global stage edits
    (decisions with a non-null ``edit`` list, :meth:`~datapipe.stage.GlobalStage.apply_edits`)
    with their lists, empty when the decisions have no ``edit`` column; annotations the
    rows kept with values for the columns the stage adds (``sets``: those of the
    decisions' columns; a decision whose ``reason`` is null), as ``(rows, {column:
    values})``, empty when the decisions carry none of them."""
    no_edits = (np.zeros(0, np.int64), [])
    no_sets: tuple[Any, dict[str, Any]] = (np.zeros(0, np.int64), {})
    if uri is None:
        return (np.zeros(0, np.int64), [], []), no_edits, no_sets
    fsys, path = fs.resolve(uri, storage)
    cols = [ROW, "reason", "detail"]
    names = pq.ParquetDataset(path, filesystem=fsys).schema.names
    editing = EDIT in names
    setting = [c for c in sets if c in names]
    table = pq.read_table(path, filesystem=fsys, columns=cols + ([EDIT] if editing else []) + setting,
                          filters=[(SPLIT, "=", key)])
    table = table.sort_by(ROW)
    edits, annotations = no_edits, no_sets
    if editing:
        is_edit = pc.is_valid(table.column(EDIT))
        ed = table.filter(is_edit)
        edits = (ed.column(ROW).to_numpy(zero_copy_only=False).astype(np.int64), ed.column(EDIT).to_pylist())
        table = table.filter(pc.invert(is_edit))
    if setting:
        keep = pc.is_null(table.column("reason"))
        an = table.filter(keep)
        annotations = (an.column(ROW).to_numpy(zero_copy_only=False).astype(np.int64),
                       {c: an.column(c).combine_chunks() for c in setting})
        table = table.filter(pc.invert(keep))
    drops = (table.column(ROW).to_numpy(zero_copy_only=False).astype(np.int64),
             table.column("reason").to_pylist(), table.column("detail").to_pylist())
    return drops, edits, annotations


def _apply_sets(batch: pa.Table, sets, offset: int, stage: str) -> pa.Table:
    """``batch`` with the annotation decisions on its rows applied: each decided row gets
    the stage's values in the columns it adds (the row stays alive; other rows keep
    theirs, null for a row the stage did not see)."""
    rows, values = sets
    lo, hi = np.searchsorted(rows, [offset, offset + batch.num_rows])
    if lo == hi:
        return batch
    mask = np.zeros(batch.num_rows, bool)
    mask[rows[lo:hi] - offset] = True
    for col, vals in values.items():
        i = batch.schema.get_field_index(col)
        if i < 0:
            raise JobError(f"stage {stage!r} decided values of column {col!r}, which its rows do not have")
        typ = batch.schema.field(i).type
        old = batch.column(i).combine_chunks()
        batch = batch.set_column(i, col, pc.replace_with_mask(old, pa.array(mask), vals.slice(lo, hi - lo).cast(typ)))
    return batch


def _apply_decisions(batch: pa.Table, drops, offset: int, stage: str) -> pa.Table:
    rows, reasons, details = drops
    lo, hi = np.searchsorted(rows, [offset, offset + batch.num_rows])
    return mark_rejects(batch, rows[lo:hi] - offset, stage=stage, reasons=[f"{stage}:{r}" for r in reasons[lo:hi]],
                        details=details[lo:hi], first_row=offset)


def _apply_edits(batch: pa.Table, edits, offset: int, stage: str, editor: Any) -> tuple[pa.Table, dict[str, Any]]:
    """``batch`` with the edit decisions on its rows applied by the stage
    (``editor.apply_edits``): kept rows get their new text, rows with too little left are
    marked ``<stage>:empty`` (keeping the text they came with). Stats: bytes in are the
    texts before, bytes out after; ``docs_changed`` and the stage's change counts are
    those of the edited rows kept, per source."""
    rows, lists = edits
    lo, hi = np.searchsorted(rows, [offset, offset + batch.num_rows])
    if lo == hi:
        return batch, ST.tally_marks(batch, stage, count_raw=False)
    idx = rows[lo:hi] - offset
    taken = batch.take(pa.array(idx))
    dead = [int(i) + offset for i, r in zip(idx, taken.column(S.REJECT_REASON).to_pylist()) if r is not None]
    if dead:
        raise JobError(f"stage {stage!r} decided to edit row {dead[0]}, which is already rejected")
    new, changes = editor.apply_edits(taken.column(S.TEXT).to_pylist(), lists[lo:hi])
    if len(new) != len(idx):
        raise JobError(f"stage {stage!r}: apply_edits() returned {len(new)} texts for {len(idx)}")
    empty = np.array([t is None for t in new], bool)
    batch = mark_rejects(batch, idx[empty], stage=stage, reasons=[f"{stage}:empty"] * int(empty.sum()),
                         details=[None] * int(empty.sum()), first_row=offset)
    st = ST.tally_marks(batch, stage, count_raw=False)   # bytes in: the texts as they came
    mask = np.zeros(batch.num_rows, bool)
    mask[idx[~empty]] = True
    text = batch.column(S.TEXT).combine_chunks()
    repl = pa.array([t for t in new if t is not None], text.type)
    batch = batch.set_column(batch.schema.get_field_index(S.TEXT), S.TEXT,
                             pc.replace_with_mask(text, pa.array(mask), repl))
    for src, after in ST.tally_marks(batch, stage, count_raw=False).items():
        st[src].bytes_out = after.bytes_out
    sources = taken.column(S.SOURCE).to_pylist()
    for j in np.flatnonzero(~empty).tolist():
        s = st[sources[j]]
        s.docs_changed += 1
        for k, counts in changes.items():
            s.changes[k] = s.changes.get(k, 0) + int(counts[j])
    return batch, st


# -- sinks ---------------------------------------------------------------------------

class _WorkFiles:
    """Before a global stage: every row to the work file, ``side()`` of the alive rows
    (with ``_split``/``_row``) to the side file. ``side`` None (a split of a source the
    stage does not apply to): the rows only, no side file."""

    def __init__(self, env: PhaseEnv, ref: SplitRef, name: str, side) -> None:
        self.env, self.ref, self.name, self.side_fn = env, ref, name, side
        self.rows = _TableWriter(env.rows_path(env.phase.index, ref), "parquet", "zstd", env.storage)
        self.side = _TableWriter(env.side_path(ref), "parquet", "zstd", env.storage)
        self.offset = 0

    def add(self, batch: pa.Table) -> None:
        alive_mask = S.alive_mask(batch)
        self.rows.add(_without_spent_raw(batch, alive_mask))
        alive = np.flatnonzero(alive_mask.to_numpy(zero_copy_only=False))
        if len(alive) and self.side_fn is not None:
            live = batch.take(pa.array(alive))
            side = self.side_fn(live)
            if side.num_rows != len(alive):
                raise JobError(f"stage {self.name!r}: side() returned {side.num_rows} rows for {len(alive)}")
            side = side.append_column(SPLIT, pa.array([self.ref.key] * len(alive), pa.string()))
            side = side.append_column(ROW, pa.array(alive + self.offset, pa.int64()))
            self.side.add(side)
        self.offset += batch.num_rows

    def close(self) -> dict[str, Any]:
        work = [f for f in (self.rows.close(), self.side.close()) if f is not None]
        side = next((f["path"] for f in work if f["path"] == self.env.side_path(self.ref)), None)
        return {"work": work, "side": side, "files": [], "sink": None}


def _without_spent_raw(batch: pa.Table, alive: pa.Array) -> pa.Table:
    """``batch`` with the raw markup nulled where nothing after a global stage can read
    it: rows already rejected (``alive``: the batch's alive mask), and rows whose text has
    been produced (a page's HTML is ~5x its text; carried into the work file it would be
    written and read back once more). Rows still alive without text keep theirs. Outputs
    never hold raw, so the result is the same; only the work file shrinks."""
    if S.RAW not in batch.column_names or batch.num_rows == 0:
        return batch
    raw = batch.column(S.RAW)
    spent = pc.or_(pc.invert(alive), pc.is_valid(batch.column(S.TEXT)))
    if not pc.any(pc.and_(spent, pc.is_valid(raw))).as_py():
        return batch
    kept = pc.if_else(spent, pa.nulls(batch.num_rows, raw.type), raw)
    return batch.set_column(batch.column_names.index(S.RAW), S.RAW, kept)


class _OutputFiles:
    """After the last global stage: documents and rejects files, and the kept documents
    to the plan's document sink."""

    def __init__(self, env: PhaseEnv, ref: SplitRef) -> None:
        self.env, self.ref = env, ref
        opts = env.output
        ext = ".parquet" if opts.format == "parquet" else {"zstd": ".jsonl.zst", "gzip": ".jsonl.gz"}.get(opts.compression, ".jsonl")
        sums = env.sink.sums if env.sink is not None else ()
        self.writers = {kind: _TableWriter(_join(env.staging, kind, ref.source, ref.part + ext), opts.format,
                                           opts.compression, env.storage, sums=sums) for kind in ("documents", "rejects")}
        self.not_written = S.NOT_WRITTEN | (env.sink.consumes if env.sink is not None else frozenset())
        self.reject_counts: dict[str, int] = {}
        self.extra = env.sink.open(sink_split(env.sink, env.staging, ref, env.storage)) if env.sink is not None else None

    def add(self, batch: pa.Table) -> None:
        keep = [c for c in batch.column_names if c not in self.not_written]
        alive = S.alive_mask(batch)
        docs = batch.filter(alive)
        rejects = batch.filter(pc.invert(alive))
        if docs.num_rows:
            self.writers["documents"].add(docs.select(keep).drop_columns([S.REJECT_STAGE, S.REJECT_REASON, S.REJECT_DETAIL]))
            if self.extra is not None:
                self.extra.add(docs)
        if rejects.num_rows:
            rejects = rejects.select(keep)
            rejects = rejects.rename_columns([REJECT_RENAMES.get(c, c) for c in rejects.column_names])
            for stage, reason in zip(rejects.column("reject_stage").to_pylist(), rejects.column("reject_reason").to_pylist()):
                key = f"{stage}\t{reason}"
                self.reject_counts[key] = self.reject_counts.get(key, 0) + 1
            self.writers["rejects"].add(rejects)

    def close(self) -> dict[str, Any]:
        files = []
        for kind, writer in self.writers.items():
            info = writer.close()
            if info is None:
                continue
            info.update(kind=kind, source=self.ref.source, path=fs.relative(info["path"], self.env.staging),
                        reject_counts=json.dumps(self.reject_counts if kind == "rejects" else {}, sort_keys=True))
            files.append(info)
        return {"work": [], "side": None, "files": files, "sink": self.extra.close() if self.extra is not None else None}


class _TableWriter:
    """One output file, streamed: Parquet with fixed-size row groups, or JSONL lines.
    Nothing is created for a split with no rows."""

    def __init__(self, path: str, fmt: str, compression: str, storage: fs.StorageOptions | None = None, *,
                 sums: tuple[str, ...] = ()) -> None:
        self.path, self.fmt, self.compression, self.storage = path, fmt, compression, storage
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._writer = None
        self._rows = 0
        self._text_bytes = 0
        self._sums = dict.fromkeys(sums, 0)   # integer columns a document sink checks against

    def add(self, table: pa.Table) -> None:
        self._rows += table.num_rows
        if S.TEXT in table.column_names:
            self._text_bytes += S.text_bytes(table)
        for col in self._sums:
            if col in table.column_names:
                self._sums[col] += int(pc.sum(table.column(col)).as_py() or 0)
        self._pending.append(table)
        self._pending_rows += table.num_rows
        if self._pending_rows >= ROW_GROUP_ROWS:
            self._flush(final=False)

    def _flush(self, *, final: bool) -> None:
        if not self._pending:
            return
        table = pa.concat_tables(self._pending).combine_chunks()
        n = table.num_rows if final else table.num_rows - table.num_rows % ROW_GROUP_ROWS
        if self._writer is None:
            self._writer = _open_writer(self.path, table.schema, self.fmt, self.compression, self.storage)
        for off in range(0, n, ROW_GROUP_ROWS):
            self._writer.write(table.slice(off, min(ROW_GROUP_ROWS, n - off)))
        rest = table.slice(n)
        self._pending = [rest] if rest.num_rows else []
        self._pending_rows = rest.num_rows

    def close(self) -> dict[str, Any] | None:
        self._flush(final=True)
        if self._writer is None:
            return None
        self._writer.close()
        info = file_info(self.path, self.storage)
        info.update(rows=self._rows, text_bytes=self._text_bytes, **self._sums)
        return info


def jsonl_record(row: dict[str, Any]) -> dict[str, Any]:
    """One output row as a JSONL record, Dolma's layout (docs/formats.md): ``id``,
    ``text``, ``source`` at the top; every other written column under ``metadata`` by
    its column name, with nested values as JSON objects and lists. The ``metadata``
    column (the source record's kept fields, a JSON string in Parquet) is parsed, so it
    sits as an object at ``metadata.metadata``, never as a string inside a string."""
    top = (S.ID, S.TEXT, S.SOURCE)
    line = {k: row[k] for k in top if k in row}
    meta = {k: v for k, v in row.items() if k not in top}
    if isinstance(meta.get(S.METADATA), str):
        meta[S.METADATA] = json.loads(meta[S.METADATA])
    line["metadata"] = meta
    return line


class _JsonlWriter:
    """Dolma-style JSON lines: ``id``, ``text``, ``source``, then every other written
    column under ``metadata``; one line per row, keys sorted."""

    def __init__(self, path: str, compression: str, storage: fs.StorageOptions | None) -> None:
        raw = fs.AtomicFile(path, storage)
        if compression == "zstd":
            import zstandard

            self._fh = zstandard.ZstdCompressor(level=3).stream_writer(raw)
        elif compression == "gzip":
            self._fh = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0)
        else:
            self._fh = raw
        self._raw = raw

    def write(self, table: pa.Table) -> None:
        buf = io.StringIO()
        for row in table.to_pylist():
            buf.write(json.dumps(jsonl_record(row), ensure_ascii=False, sort_keys=True) + "\n")
        self._fh.write(buf.getvalue().encode("utf-8"))

    def close(self) -> None:
        self._fh.close()
        self._raw.commit()


def _open_writer(path: str, schema: pa.Schema, fmt: str, compression: str, storage: fs.StorageOptions | None):
    """A streaming writer whose ``close()`` publishes ``path`` whole (:class:`fs.AtomicFile`)."""
    if fmt == "jsonl":
        return _JsonlWriter(path, compression, storage)
    return _ParquetFile(path, schema, compression, storage)


class _ParquetFile:
    """``pq.ParquetWriter`` over an :class:`fs.AtomicFile`: the file appears on close."""

    def __init__(self, path: str, schema: pa.Schema, compression: str, storage: fs.StorageOptions | None) -> None:
        self._file = fs.AtomicFile(path, storage)
        self._writer = pq.ParquetWriter(self._file, schema, compression=None if compression == "none" else compression)

    def write(self, table: pa.Table) -> None:
        self._writer.write(table)

    def close(self) -> None:
        self._writer.close()
        self._file.commit()


def _read_parquet_batches(path: str, batch_rows: int, storage: fs.StorageOptions | None = None) -> Iterator[pa.Table]:
    if not fs.exists(path, storage):
        return
    f = pq.ParquetFile(fs.arrow_input(path, storage))
    for rb in f.iter_batches(batch_size=batch_rows):
        yield pa.Table.from_batches([rb])


def _join(*parts: str) -> str:
    return fs.join(*parts)


def written_by(record: Mapping[str, Any], staging: str) -> set[str]:
    """Every file a split's record says it wrote (URIs): work files, outputs and the
    sink's files with its split manifest."""
    out = {f["path"] for f in record.get("work", [])}
    out |= {_join(staging, f["path"]) for f in record.get("files", [])}
    if record.get("sink"):
        out |= {f["path"] for f in record["sink"]["written"]} | {record["sink"]["manifest"]}
    return out


def remove_stale(first: Mapping[str, Any], again: Mapping[str, Any], staging: str,
                 storage: fs.StorageOptions | None = None) -> list[str]:
    """Delete the files a split's first attempt wrote that its re-run (``again``, e.g.
    with duplicate ids rejected) did not write again: same-named files were overwritten,
    the others would linger in the output beside the re-run's. Returns them."""
    stale = sorted(written_by(first, staging) - written_by(again, staging))
    for uri in stale:
        fs.delete_file(uri, storage)
    return stale


def verify_done(record_path: str, staging: str, storage: fs.StorageOptions | None = None) -> dict[str, Any] | None:
    """The done-record at ``record_path`` when it and every file it lists are intact."""
    try:
        record = json.loads(fs.read_bytes(record_path, storage))
    except (OSError, ValueError):
        return None
    listed = list(record.get("work", [])) + [dict(f, path=_join(staging, f["path"])) for f in record.get("files", [])]
    if record.get("sink"):
        listed += record["sink"]["written"]
        if not fs.exists(record["sink"]["manifest"], storage):
            return None
    for f in listed:
        try:
            if fs.stat(f["path"], storage).size != f["file_bytes"] or fs.sha256(f["path"], storage) != f["sha256"]:
                return None
        except OSError:
            return None
    return record
