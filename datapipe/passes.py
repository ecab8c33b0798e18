"""The engine's side of a global stage's passes: a stage declares them as data
(:class:`Pass`: inputs, the function each runs, how rows are partitioned, what it
writes, params), as a list or as a generator that gets each batch's artifacts back and
yields the next, and the executor runs them and owns the rest, the same way for every
global stage: where they run (the driver, one Ray task, or Ray Data passes: chosen here
from the rows and the cluster, :func:`run_global`), where each pass's artifact lives
under the stage's work folder, the write through the job's storage
(``write_parquet(..., filesystem=)``), the commit (written under ``<name>.staging``,
published whole, then a ``.done`` record, so a half-written pass is never read), the
resume key (the declaration and its inputs' contents: a committed pass is reused), the
row count (from the Parquet footers), the timing record that reaches the stage's
report, and a folder the job names (:class:`Publish`: an index a later run reads),
published whole. Every access goes through :mod:`datapipe.fs`, so the passes reach an
object store with the spec's ``storage:`` options, never the worker's environment.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import logging
import math
import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Iterable, Mapping, Sequence, Union

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


def read_dataset(paths: list[str], storage: fs.StorageOptions | None, columns: list[str] | None = None) -> Any:
    """Parquet files (or folders of them) as one Ray dataset, read with the job's storage."""
    import ray

    resolved = [fs.resolve(p, storage) for p in paths]
    ds = ray.data.read_parquet([p for _, p in resolved], filesystem=resolved[0][0])
    return ds.select_columns(columns) if columns else ds


def group(ds: Any, parts: int, kernel: Callable[..., pa.Table], **fn_kwargs: Any) -> Any:
    """Hand every ``_part`` partition of ``ds`` whole to ``kernel``. One partition runs as
    a single task (no shuffle service to start); more use Ray Data's hash shuffle into
    ``parts`` partitions."""
    kw = {"fn_kwargs": fn_kwargs} if fn_kwargs else {}
    if parts == 1:
        return ds.groupby(None).map_groups(kernel, batch_format="pyarrow", **kw)
    return ds.groupby(PART, num_partitions=parts).map_groups(kernel, batch_format="pyarrow", **kw)


def partitions(rows: int, cap: int, cpus: int, min_rows: int) -> int:
    """Partitions for a shuffle of ``rows`` rows: at most ``cap`` rows each (memory), and
    spread over ``cpus`` while partitions keep at least ``min_rows`` rows."""
    return max(1, math.ceil(rows / cap), min(cpus, rows // min_rows))


# -- declared passes ----------------------------------------------------------------

#: the input name of a global stage's side files (each row carries ``_split``, ``_row``)
SIDE = "side"
#: the column :class:`Hash` routes rows by (dropped before the pass's function sees them)
PART = "_part"
#: the column :class:`Parts` appends: the position of the row's input file
INPUT = "_input"


@dataclass(kw_only=True, frozen=True)
class Hash:
    """Rows routed by a hash of ``column`` into ``parts`` partitions (xxh3-64 of a string
    or binary value, the value itself for an integer; nulls go to part 0), each partition
    handed whole to the pass's function: every row sharing a value meets in one call.
    One part runs as a single task, more use Ray Data's hash shuffle."""

    column: str
    parts: int = 1

    def __post_init__(self) -> None:
        if not self.column:
            raise ValueError("Hash.column is empty; name the column the rows are partitioned by")
        if not isinstance(self.parts, int) or self.parts < 1:
            raise ValueError(f"Hash.parts={self.parts!r}; use a whole number >= 1")


@dataclass(kw_only=True, frozen=True)
class Parts:
    """The inputs already carry their part (``column``, 0..parts-1, one row group per part,
    as a task wrote them): one task per part reads that part of every input file (row
    groups filtered by their statistics; no shuffle) and hands it, with ``_input`` (the
    file's position among the inputs), to the pass's function. One part runs on the
    driver, without a task's start-up."""

    column: str
    parts: int

    def __post_init__(self) -> None:
        if not self.column:
            raise ValueError("Parts.column is empty; name the column that holds each row's part")
        if not isinstance(self.parts, int) or self.parts < 1:
            raise ValueError(f"Parts.parts={self.parts!r}; use a whole number >= 1")


@dataclass(kw_only=True, frozen=True)
class Blocks:
    """The pass's function runs on each block of the inputs as it is read (a map: no row
    needs another)."""


@dataclass(kw_only=True, frozen=True)
class Routed:
    """The inputs' maps put each row's partition (0..parts-1) in ``_part`` themselves (a
    stage-specific routing, such as by a band bucket or an exploded list); each partition
    is handed whole to the pass's function, as with :class:`Hash`."""

    parts: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.parts, int) or self.parts < 1:
            raise ValueError(f"Routed.parts={self.parts!r}; use a whole number >= 1")


@dataclass(kw_only=True, frozen=True)
class Ref:
    """A param naming an earlier pass: the function gets that pass's artifact URI; the
    resume key gets that pass's key."""

    name: str


class _Storage:
    """The :data:`STORAGE` param (a singleton)."""

    def __repr__(self) -> str:
        return "STORAGE"


#: a param the function gets as the job's :class:`datapipe.fs.StorageOptions` (not in the key)
STORAGE = _Storage()


@dataclass(kw_only=True, frozen=True)
class Input:
    """One input of a pass: ``name`` (an input given to the executor, or an earlier pass),
    the ``columns`` read (None: all), and ``maps``, ``(fn, params)`` steps applied to each
    block as it is read (before partitioning; params as for :class:`Pass`)."""

    name: str
    columns: tuple[str, ...] | None = None
    maps: tuple[tuple[Callable[..., pa.Table], Mapping[str, Any]], ...] = ()


@dataclass(kw_only=True, frozen=True)
class Output:
    """What a pass writes: rows of ``schema`` (it also stands in when there are none).
    With ``sort_by``, the rows (a small result, such as decisions) are gathered on the
    driver, sorted and written as one file; without, each block is written as it comes."""

    schema: pa.Schema | None = None
    sort_by: tuple[str, ...] = ()
    partition_cols: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.sort_by and self.schema is None:
            raise ValueError("Output.sort_by needs Output.schema (it stands in when there are no rows)")
        if self.sort_by and self.partition_cols:
            raise ValueError("Output: sort_by (one file) and partition_cols (folders) exclude each other")
        missing = [c for c in self.sort_by if c not in self.schema.names] if self.sort_by else []
        if missing:
            raise ValueError(f"Output.sort_by names {missing}, not in the schema {self.schema.names}; "
                             "sort by the output's own columns")


@dataclass(kw_only=True, frozen=True)
class Pass:
    """One pass of a global stage, as data: it reads ``inputs`` (``SIDE``, another input
    the executor was given by name, or the name of an earlier pass), partitions their rows
    (``partitioning``), calls ``fn(table, **params)`` on each partition and writes
    ``output``. ``columns``: the input columns read (None: all). ``params`` are the
    function's keyword arguments and, with the inputs' contents, the pass's resume key, so
    they must be JSON values; ``fn`` is a module-level function (Ray ships it)."""

    name: str
    inputs: tuple[str | Input, ...]
    fn: Callable[..., pa.Table]
    partitioning: Hash | Routed | Parts | Blocks
    output: Output
    params: Mapping[str, Any] = field(default_factory=dict)
    columns: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"Pass.name={self.name!r}; use a non-empty name without '/'")
        if not self.inputs:
            raise ValueError(f"pass {self.name!r} has no inputs; name SIDE or an earlier pass")
        ins = tuple(i if isinstance(i, Input) else Input(name=i, columns=self.columns) for i in self.inputs)
        object.__setattr__(self, "inputs", ins)
        if isinstance(self.partitioning, Parts) and any(i.maps for i in ins):
            raise ValueError(f"pass {self.name!r}: a Parts pass reads its parts as written; it takes no maps")
        for params in [self.params, *(kw for i in ins for _, kw in i.maps)]:
            try:
                json.dumps(_key_params(params, {}), sort_keys=True)
            except TypeError as e:
                raise ValueError(f"pass {self.name!r}: params must be JSON values, Ref or STORAGE "
                                 f"(they key its resume): {e}") from None


@dataclass(kw_only=True, frozen=True)
class Artifact:
    """A committed pass: its folder of Parquet files, rows, resume key, and whether this
    run reused it."""

    uri: str
    rows: int
    key: str
    reused: bool


@dataclass(kw_only=True, frozen=True)
class Discard:
    """A step after which nothing reads the pass ``name`` any more: the executor deletes
    its artifact and commit (the star rounds of a connected-components chain)."""

    name: str


@dataclass(kw_only=True, frozen=True)
class Publish:
    """A folder the job names and a later run reads (dedup's ``index_out``), assembled
    by the executor under ``<dest>.staging`` and then published whole in place of
    ``dest``: ``folders`` (a name inside it -> an earlier pass's name, whose artifact is
    copied, or the URI of a folder) and ``texts`` (a name inside it -> the file's text,
    such as a ``meta.json`` written last). ``name`` names its timing record."""

    name: str
    dest: str
    folders: Mapping[str, str] = field(default_factory=dict)
    texts: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.dest:
            raise ValueError(f"Publish {self.name!r}: dest is empty; name the folder the job writes")


#: what a stage hands the executor in one batch
Step = Union[Pass, Discard, Publish]
#: a stage's plan: a fixed list of steps (the last pass's output is the decisions), or a
#: generator that yields a batch of steps, is sent back the batch's :class:`Artifact` by
#: pass name, and returns the name of the pass that holds the decisions (None: nothing
#: decided)
Plan = Union[Sequence[Step], Generator[Sequence[Step], Mapping[str, Artifact], Union[str, None]]]


@dataclass(kw_only=True, frozen=True)
class InputFiles:
    """Files a global stage's passes read besides the side files
    (:meth:`datapipe.stage.GlobalStage.inputs`), such as an index an earlier run wrote:
    ``files`` (Parquet files or folders of them), ``rows`` (they count with the side rows
    toward where the passes run) and ``key``, which stands for their contents in the
    passes' resume keys where hashing them would cost too much (an immutable index);
    None: the files' sha256."""

    files: Sequence[str]
    rows: int = 0
    key: str | None = None


def _key_params(params: Mapping[str, Any], keys: Mapping[str, str]) -> dict[str, Any]:
    """``params`` as they enter a resume key: a :class:`Ref` as the pass's key."""
    return {k: ({"$ref": keys.get(v.name, v.name)} if isinstance(v, Ref) else "$storage" if v is STORAGE else v)
            for k, v in params.items()}


def _bind(params: Mapping[str, Any], uris: Mapping[str, str], storage: fs.StorageOptions | None) -> dict[str, Any]:
    """``params`` as the function gets them: a :class:`Ref` as the artifact's URI."""
    return {k: (uris[v.name] if isinstance(v, Ref) else storage if v is STORAGE else v) for k, v in params.items()}


def _maps(batch: pa.Table, *, steps: list[tuple[Callable[..., pa.Table], dict[str, Any]]]) -> pa.Table:
    for fn, kw in steps:
        batch = fn(batch, **kw)
    return batch


def _fn_name(fn: Callable) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def _route(batch: pa.Table, *, column: str, parts: int) -> pa.Table:
    """``batch`` with ``_part`` (see :class:`Hash`) in front."""
    import numpy as np
    import xxhash

    col = batch.column(column)
    if parts == 1:
        part = np.zeros(batch.num_rows, np.int64)
    elif pa.types.is_integer(col.type):
        part = (col.fill_null(0).to_numpy().astype(np.int64) % parts).astype(np.int64)
    else:
        h = xxhash.xxh3_64_intdigest
        vals = col.to_pylist()
        part = np.fromiter((0 if v is None else h(v.encode("utf-8") if isinstance(v, str) else bytes(v)) % parts
                            for v in vals), dtype=np.int64, count=len(vals))
    return batch.add_column(0, PART, pa.array(part))


def _call_group(group: pa.Table, *, fn: Callable[..., pa.Table], params: dict[str, Any], schema: pa.Schema
                ) -> pa.Table:
    if PART in group.column_names:
        group = group.drop_columns([PART])
    return _conform(fn(group, **params), schema)


def _call_block(batch: pa.Table, *, fn: Callable[..., pa.Table], params: dict[str, Any], schema: pa.Schema
                ) -> pa.Table:
    return _conform(fn(batch, **params), schema)


def _conform(t: pa.Table, schema: pa.Schema | None) -> pa.Table:
    return t if schema is None or t.schema.equals(schema) else t.select(schema.names).cast(schema)


def _read_part(files: Sequence[str], part: int, column: str, columns: Sequence[str] | None,
               storage: fs.StorageOptions | None) -> pa.Table | None:
    """Part ``part`` of every file, with ``_input``; None when no file holds a row of it."""
    import numpy as np

    tables = []
    for i, uri in enumerate(files):
        fsys, path = fs.resolve(uri, storage)
        t = pq.read_table(path, filesystem=fsys, filters=[(column, "=", part)],
                          columns=list(columns) if columns is not None else None)
        if t.num_rows:
            tables.append(t.append_column(INPUT, pa.array(np.full(t.num_rows, i, np.int64))))
    return pa.concat_tables(tables) if tables else None


def _part_task(batch: pa.Table, *, files: list[str], column: str, columns: list[str] | None,
               storage: fs.StorageOptions | None, fn: Callable[..., pa.Table], params: dict[str, Any],
               schema: pa.Schema) -> pa.Table:
    out = []
    for p in batch.column("part").to_pylist():
        t = _read_part(files, p, column, columns, storage)
        if t is not None:
            out.append(_conform(fn(t, **params), schema))
    return pa.concat_tables(out) if out else schema.empty_table()


class PassExecutor:
    """Runs a global stage's declared :class:`Pass` list and owns their work files under
    ``root``: each pass's artifact is ``<root>/<name>-<key>/`` (written under a staging
    name, published whole, then committed by ``<name>-<key>.done``), where ``key`` hashes
    the pass's declaration (function, partitioning, output, params, maps) and its inputs'
    contents (an input file's sha256, an earlier pass's key; ``salt``: what else the
    functions' behaviour depends on, such as a format version), so a restarted job reuses
    a committed pass instead of running it again. Each pass's :func:`timing` (with
    ``reused``) is appended to ``timings``. ``inputs``: the named file lists a pass may
    read (a global stage's side files under :data:`SIDE`); ``input_keys``: a key standing
    for an input's contents where hashing them would cost too much (an immutable index).
    ``local``: every pass runs in this process on Arrow tables (small inputs: no Ray Data
    start-up), with the same functions, keys and files. :meth:`run` may be called again
    with passes that read earlier ones (a chain whose shape depends on row counts: see
    :func:`run_passes`, which drives a stage's generator through it)."""

    def __init__(self, root: str, storage: fs.StorageOptions | None, *, inputs: Mapping[str, Sequence[str]],
                 timings: list[dict[str, Any]] | None = None, max_retries: int = 3, local: bool = False,
                 salt: str = "", input_keys: Mapping[str, str] | None = None) -> None:
        self.root, self.storage, self.max_retries, self.local, self.salt = root, storage, max_retries, local, salt
        self.inputs = {name: [f for uri in uris for f in _input_files(name, uri, storage)]
                       for name, uris in inputs.items()}
        self.timings = timings if timings is not None else []
        self._input_keys: dict[str, str] = dict(input_keys or {})
        self.done: dict[str, Artifact] = {}
        self._cache: dict[str, pa.Table] = {}   # local mode: inputs as read and first mapped

    def run(self, steps: Iterable[Step]) -> dict[str, Artifact]:
        """Every step in order: a :class:`Pass` runs (an input names a given input or an
        earlier pass, of this call or an earlier one), a :class:`Discard` deletes an
        earlier pass's artifact, a :class:`Publish` assembles and publishes its folder.
        Returns each pass's :class:`Artifact` by name."""
        out: dict[str, Artifact] = {}
        for p in steps:
            if isinstance(p, Discard):
                self.discard(p.name)
                continue
            if isinstance(p, Publish):
                self.publish(p)
                continue
            unknown = [i.name for i in p.inputs if i.name not in self.done and i.name not in self.inputs]
            unknown += [v.name for v in self._refs(p) if v.name not in self.done]
            if unknown:
                raise ValueError(f"pass {p.name!r} reads {unknown}: neither an input ({sorted(self.inputs)}) "
                                 f"nor an earlier pass ({sorted(self.done)}); order the passes so inputs come first")
            if p.name in out:
                raise ValueError(f"two passes are named {p.name!r}; give each pass its own name")
            out[p.name] = self.done[p.name] = self._one(p)
        return out

    def discard(self, name: str) -> None:
        """Delete an earlier pass's artifact (and its commit) once nothing reads it."""
        art = self.done.pop(name)
        fs.delete(art.uri + ".done", self.storage)
        fs.delete(art.uri, self.storage)

    def publish(self, p: Publish) -> None:
        """Assemble ``p``'s folder under ``<dest>.staging`` (each folder copied, each text
        written, in the order given) and put it in place of ``dest`` whole, so a reader
        sees the old folder or the new one, never a part."""
        t0 = time.perf_counter()
        dest = p.dest.rstrip("/")
        staging = dest + ".staging"
        fs.delete(staging, self.storage)
        fs.makedirs(staging, self.storage)
        for name, src in p.folders.items():
            uri = self.done[src].uri if src in self.done else src
            for f in fs.list_files(uri, self.storage):
                fs.copy_file(f, fs.join(staging, name, fs.relative(f, uri)), self.storage)
        for name, text in p.texts.items():
            fs.write_text(fs.join(staging, name), text, self.storage)
        fs.delete(dest, self.storage)
        publish_dir(staging, dest, self.storage)
        # its rows: those of this run's artifacts in it (a copied folder is not counted)
        self.timings.append(timing(p.name, t0, sum(self.done[s].rows for s in p.folders.values() if s in self.done)))
        log.info("published %s (%s)", dest, p.name)

    # -- one pass -----------------------------------------------------------------
    @staticmethod
    def _refs(p: Pass) -> list[Ref]:
        return [v for params in [p.params, *(kw for i in p.inputs for _, kw in i.maps)]
                for v in params.values() if isinstance(v, Ref)]

    def _input_key(self, name: str) -> str:
        if name in self.done:
            return self.done[name].key
        if name not in self._input_keys:
            h = hashlib.sha256()
            for f in self.inputs[name]:   # in order: a Parts pass sees each file's position
                h.update(fs.sha256(f, self.storage).encode())
            self._input_keys[name] = h.hexdigest()
        return self._input_keys[name]

    def key(self, p: Pass) -> str:
        """The pass's resume key: its declaration and its inputs' contents."""
        keys = {name: art.key for name, art in self.done.items()}
        decl = {"name": p.name, "fn": _fn_name(p.fn), "partitioning": type(p.partitioning).__name__,
                "how": dataclasses.asdict(p.partitioning), "salt": self.salt,
                "schema": p.output.schema.to_string() if p.output.schema is not None else None,
                "sort_by": list(p.output.sort_by), "partition_cols": list(p.output.partition_cols),
                "params": _key_params(p.params, keys),
                "inputs": [{"key": self._input_key(i.name), "columns": list(i.columns) if i.columns else None,
                            "maps": [[_fn_name(fn), _key_params(kw, keys)] for fn, kw in i.maps]} for i in p.inputs]}
        return hashlib.sha256(json.dumps(decl, sort_keys=True).encode()).hexdigest()[:24]

    def _files(self, name: str) -> list[str]:
        return parquet_files(self.done[name].uri, self.storage) if name in self.done else self.inputs[name]

    def _one(self, p: Pass) -> Artifact:
        key = self.key(p)
        out = fs.join(self.root, f"{p.name}-{key}")
        marker = out + ".done"
        t0 = time.perf_counter()
        if fs.is_file(marker, self.storage):
            rows = int(json.loads(fs.read_text(marker, self.storage))["rows"])
            self.timings.append({**timing(p.name, t0, rows), "reused": True})
            log.info("pass %s: reusing %s (%d rows)", p.name, out, rows)
            return Artifact(uri=out, rows=rows, key=key, reused=True)
        tmp = out + ".staging"
        for stale in (out, tmp):
            fs.delete(stale, self.storage)
        fs.makedirs(tmp, self.storage)
        result = self._compute_local(p) if self.local else self._compute(p)
        if p.output.sort_by or isinstance(result, pa.Table):
            table = result if isinstance(result, pa.Table) else _gather(result, p.output.schema)
            if p.output.sort_by:
                table = table.sort_by([(c, "ascending") for c in p.output.sort_by])
            if p.output.partition_cols:
                fsys, path = fs.resolve(tmp, self.storage)
                pq.write_to_dataset(table, path, filesystem=fsys, partition_cols=list(p.output.partition_cols))
            elif table.num_rows or p.output.schema is not None:
                with fs.AtomicFile(fs.join(tmp, "part-00000.parquet"), self.storage) as f:
                    pq.write_table(table, f)
        else:
            fsys, path = fs.resolve(tmp, self.storage)
            kw = {"partition_cols": list(p.output.partition_cols)} if p.output.partition_cols else {}
            result.write_parquet(path, filesystem=fsys, **kw)
        publish_dir(tmp, out, self.storage)
        rows = count_rows(out, self.storage)
        fs.write_text(marker, json.dumps({"rows": rows}), self.storage)   # the commit
        self.timings.append({**timing(p.name, t0, rows), "reused": False})
        log.info("pass %s: %d rows in %.1f s", p.name, rows, time.perf_counter() - t0)
        return Artifact(uri=out, rows=rows, key=key, reused=False)

    def _uris(self) -> dict[str, str]:
        return {name: art.uri for name, art in self.done.items()}

    def _steps(self, i: Input) -> list[tuple[Callable[..., pa.Table], dict[str, Any]]]:
        return [(fn, _bind(kw, self._uris(), self.storage)) for fn, kw in i.maps]

    def _compute(self, p: Pass) -> Any:
        """The pass's result on Ray Data: a dataset, or a table when it ran on the driver."""
        how, schema = p.partitioning, p.output.schema
        params = _bind(p.params, self._uris(), self.storage)
        if isinstance(how, Parts):
            files = [f for i in p.inputs for f in self._files(i.name)]
            columns = p.inputs[0].columns
            if how.parts == 1:   # here, without a task's start-up
                t = _read_part(files, 0, how.column, columns, self.storage)
                return _conform(p.fn(t, **params), schema) if t is not None else _empty_table(schema)
            import ray

            ds = ray.data.from_items([{"part": i} for i in range(how.parts)], override_num_blocks=how.parts)
            kw = {"files": files, "column": how.column, "columns": list(columns) if columns is not None else None,
                  "storage": self.storage, "fn": p.fn, "params": params, "schema": schema}
            with warnings.catch_warnings():   # retries only through ray_remote_args in Ray 2.60
                warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
                return ds.map_batches(_part_task, fn_kwargs=kw, batch_size=1, batch_format="pyarrow", num_cpus=1,
                                      max_retries=self.max_retries)
        dss = []
        for i in p.inputs:
            files = self._files(i.name)
            if not files:
                continue
            ds = read_dataset(files, self.storage, list(i.columns) if i.columns is not None else None)
            if i.maps:
                ds = ds.map_batches(_maps, fn_kwargs={"steps": self._steps(i)}, batch_format="pyarrow")
            dss.append(ds)
        if not dss:
            return _empty_table(schema)
        ds = dss[0].union(*dss[1:]) if len(dss) > 1 else dss[0]
        kw = {"fn": p.fn, "params": params, "schema": schema}
        if isinstance(how, Blocks):
            return ds.map_batches(_call_block, fn_kwargs=kw, batch_format="pyarrow")
        if isinstance(how, Hash):
            ds = ds.map_batches(_route, fn_kwargs={"column": how.column, "parts": how.parts}, batch_format="pyarrow")
        return group(ds, how.parts, _call_group, **kw)

    def _compute_local(self, p: Pass) -> pa.Table:
        """The pass's result in this process: the same functions on whole tables."""
        how, schema = p.partitioning, p.output.schema
        params = _bind(p.params, self._uris(), self.storage)
        if isinstance(how, Parts):
            files = [f for i in p.inputs for f in self._files(i.name)]
            out = []
            for part in range(how.parts):
                t = _read_part(files, part, how.column, p.inputs[0].columns, self.storage)
                if t is not None:
                    out.append(_conform(p.fn(t, **params), schema))
            return pa.concat_tables(out) if out else _empty_table(schema)
        tables = []
        for i in p.inputs:
            files = self._files(i.name)
            if files:
                steps = self._steps(i)
                t = self._local_read(i, files, steps[:1])   # read and first map: shared by the passes
                tables.append(_maps(t, steps=steps[1:]))
        if not tables:
            return _empty_table(schema)
        t = pa.concat_tables(tables, promote_options="permissive").combine_chunks() if len(tables) > 1 else tables[0]
        if isinstance(how, Blocks):
            return _conform(p.fn(t, **params), schema)
        if isinstance(how, Hash):
            t = _route(t, column=how.column, parts=how.parts)
        if how.parts == 1:
            return _call_group(t, fn=p.fn, params=params, schema=schema)
        import numpy as np

        part = t.column(PART).to_numpy()
        out = [_call_group(t.filter(pa.array(part == k)), fn=p.fn, params=params, schema=schema)
               for k in np.unique(part).tolist()]
        return pa.concat_tables(out) if out else _empty_table(schema)


    def _local_read(self, i: Input, files: list[str], steps: list[tuple[Callable[..., pa.Table], dict[str, Any]]]
                    ) -> pa.Table:
        """An input's rows after its first map, kept for the next pass that reads the same
        (local mode only: the inputs are small)."""
        key = json.dumps([i.name, self._input_key(i.name), i.columns, [[_fn_name(fn), _key_params(kw, {})]
                                                                       for fn, kw in i.maps[:1]]], default=str)
        if key not in self._cache:
            cols = list(i.columns) if i.columns is not None else None
            t = pa.concat_tables([pq.read_table(fs.arrow_input(f, self.storage), columns=cols) for f in files])
            self._cache[key] = _maps(t.combine_chunks(), steps=steps)
        return self._cache[key]


def _empty_table(schema: pa.Schema | None) -> pa.Table:
    return schema.empty_table() if schema is not None else pa.table({})


def _input_files(name: str, uri: str, storage: fs.StorageOptions | None) -> list[str]:
    files = parquet_files(uri, storage)
    if not files:   # a Parts pass numbers the files: a missing one would shift the others
        raise AssertionError(f"pass input {name!r}: no Parquet file at {uri}")
    return files


def _gather(ds: Any, schema: pa.Schema) -> pa.Table:
    tables = [t for t in ds.iter_batches(batch_size=None, batch_format="pyarrow") if t.num_rows]
    return pa.concat_tables([_conform(t, schema) for t in tables]) if tables else schema.empty_table()


@dataclass(kw_only=True, frozen=True)
class Preparation:
    """What a batch stage asks the engine to build once per run before its phase
    (:meth:`datapipe.stage.Stage.prepare`): ``passes`` over named Parquet ``inputs`` (the
    stage writes them, e.g. a manifest of its evaluation files, under ``ctx.work_dir``).
    ``input_keys``: a key standing for an input's contents (e.g. the sha256 of the files
    a manifest names rather than of the manifest itself). ``local``: the inputs are
    small, run the passes in the driver's process (no Ray Data start-up)."""

    inputs: Mapping[str, Sequence[str]]
    passes: Sequence[Pass]
    input_keys: Mapping[str, str] = field(default_factory=dict)
    local: bool = False

    def __post_init__(self) -> None:
        if not self.passes:
            raise ValueError("Preparation.passes is empty; declare at least one pass, or return None from prepare()")


@dataclass(kw_only=True)
class Outcome:
    """What :func:`run_passes` ran: every pass's :class:`Artifact` by name (the last run
    of a name: a discarded one is gone), the declarations by name, and the name of the
    pass that holds the decisions (None: nothing decided)."""

    artifacts: dict[str, Artifact]
    declared: dict[str, Pass]
    decisions: str | None


def run_passes(plan: Plan, root: str, storage: fs.StorageOptions | None, *, inputs: Mapping[str, Sequence[str]],
               input_keys: Mapping[str, str] | None = None, local: bool = False, salt: str = "",
               max_retries: int = 3, timings: list[dict[str, Any]] | None = None) -> Outcome:
    """Run ``plan`` with one :class:`PassExecutor` under ``root``: a list of steps in
    order (the last pass holds the decisions), or a generator driven batch by batch (it
    is sent each batch's artifacts by pass name and returns the decisions pass's name,
    or None). The engine's one way into the executor: :func:`run_global` (a global
    stage), :func:`run_prepared` (a batch stage's build) and the duplicate-id check go
    through it."""
    ex = PassExecutor(root, storage, inputs=inputs, timings=timings, max_retries=max_retries, local=local,
                      salt=salt, input_keys=input_keys)
    declared: dict[str, Pass] = {}

    def batch(steps: Sequence[Step]) -> dict[str, Artifact]:
        steps = list(steps)
        declared.update({s.name: s for s in steps if isinstance(s, Pass)})
        return ex.run(steps)

    if inspect.isgenerator(plan):
        sent: Mapping[str, Artifact] | None = None
        try:
            while True:
                sent = batch(plan.send(sent))
        except StopIteration as stop:
            decisions = stop.value
    else:
        steps = list(plan)
        batch(steps)
        names = [s.name for s in steps if isinstance(s, Pass)]
        decisions = names[-1] if names else None
    if decisions is not None and decisions not in ex.done:
        raise ValueError(f"the plan's decisions name {decisions!r}, not a pass it ran ({sorted(ex.done)})")
    return Outcome(artifacts=dict(ex.done), declared=declared, decisions=decisions)


def run_prepared(stage: Any, ctx: Any, *, max_retries: int = 3) -> dict[str, str]:
    """A batch stage's :meth:`~datapipe.stage.Stage.prepare` passes, run by the executor
    under ``ctx.work_dir`` (committed, reused when their key matches); returns every
    pass's artifact URI by name (also set as ``stage.prepared``, then
    :meth:`~datapipe.stage.Stage.after_prepare` fills the report) and adds ``passes`` (each
    pass's timing, with ``reused``) to ``ctx.report``. ``{}`` when the stage prepares
    nothing."""
    prep = stage.prepare(ctx)
    if prep is None:
        return {}
    timings: list[dict[str, Any]] = []
    arts = run_passes(list(prep.passes), ctx.work_dir, ctx.storage, inputs=prep.inputs, input_keys=prep.input_keys,
                      local=prep.local, max_retries=max_retries, timings=timings).artifacts
    ctx.report["passes"] = timings
    ctx.report["artifact_keys"] = {name: art.key for name, art in arts.items()}
    stage.prepared = {name: art.uri for name, art in arts.items()}
    stage.after_prepare(ctx)
    return dict(stage.prepared)


#: side rows (with the stage's other inputs' rows) up to which a stage's passes that run
#: in one process run in the driver itself (~1-5 KB of tables per row for dedup, so
#: <= ~100 MB); above it, and up to the stage's ``local_rows``, in one Ray task on the
#: driver's node, so the driver's memory does not grow with the corpus
DRIVER_ROWS = 20_000


def placement(rows: int, local_rows: int) -> str:
    """Where a global stage's passes run for ``rows`` input rows: ``driver`` or ``task``
    (one process: Arrow tables, no Ray Data start-up; a task only while Ray runs) up to
    the stage's ``local_rows``, ``distributed`` (Ray Data passes) above."""
    if rows > local_rows:
        return "distributed"
    import ray

    return "task" if rows > DRIVER_ROWS and ray.is_initialized() else "driver"


_DECIDED_IN = {"driver": "driver", "task": "one Ray task", "distributed": "Ray Data passes"}


def run_global(stage: Any, side: list[str], ctx: Any, *, max_retries: int = 3) -> str | None:
    """A global stage's passes (:meth:`~datapipe.stage.GlobalStage.passes`, a list or a
    generator) over its side files (and :meth:`~datapipe.stage.GlobalStage.inputs`),
    under ``ctx.work_dir``: the engine's one entry point for every global stage. Chooses
    where they run (:func:`placement`, by the rows against the stage's ``local_rows``;
    the stage sees it as ``ctx.local`` and ``ctx.cpus``), runs them, and returns the
    decisions' URI (None when nothing is decided or the decisions have no row). The
    report gets ``removed`` (the decisions' rows; ``edited`` for decisions with an
    ``edit`` column, ``annotated`` for annotations), ``passes`` (each step's timing),
    ``decided_in``, and whatever the stage adds (its generator, or
    :meth:`~datapipe.stage.GlobalStage.after_passes`)."""
    files = [f for s in side for f in parquet_files(s, ctx.storage)]
    given = dict(stage.inputs(ctx))
    rows = sum(count_rows(f, ctx.storage) for f in files) + sum(g.rows for g in given.values())
    where = "driver" if not files else placement(rows, stage.local_rows)
    ctx.report["decided_in"] = _DECIDED_IN[where]
    if where != "task":
        return _run_stage(stage, files, given, ctx, local=where != "distributed", max_retries=max_retries)
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    # the files it reads are where the driver sees them: the driver's node (soft); the
    # decisions' URI and the report come back (small)
    work = ctx.work_dir if not fs.is_local(ctx.work_dir) else os.path.abspath(ctx.work_dir)
    task_ctx = dataclasses.replace(ctx, work_dir=work, report=dict(ctx.report))
    task = ray.remote(num_cpus=1, max_retries=2)(_stage_task).options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=True))
    uri, report = ray.get(task.remote(stage, files, given, task_ctx, max_retries))
    ctx.report.update(report)
    return uri


def _stage_task(stage: Any, files: list[str], given: dict[str, InputFiles], ctx: Any, max_retries: int
                ) -> tuple[str | None, dict[str, Any]]:
    uri = _run_stage(stage, files, given, ctx, local=True, max_retries=max_retries)
    return uri, ctx.report


def _run_stage(stage: Any, files: list[str], given: Mapping[str, InputFiles], ctx: Any, *, local: bool,
               max_retries: int) -> str | None:
    """The stage's plan, where :func:`run_global` put it; then its report."""
    ctx.side, ctx.local = tuple(files), local
    if not local:
        import ray

        ctx.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    timings: list[dict[str, Any]] = []
    ctx.report["passes"] = timings
    plan = stage.passes(ctx)
    if not inspect.isgenerator(plan):
        plan = list(plan)
        if not any(isinstance(s, Pass) for s in plan):
            raise ValueError(f"global stage {stage.name!r} declares no passes; return at least the decisions pass")
    inputs = {SIDE: files, **{name: list(g.files) for name, g in given.items()}}
    keys = {name: g.key for name, g in given.items() if g.key is not None}
    out = run_passes(plan, ctx.work_dir, ctx.storage, inputs=inputs, input_keys=keys, local=local,
                     salt=stage.salt, max_retries=max_retries, timings=timings)
    last = out.artifacts[out.decisions] if out.decisions is not None else None
    schema = out.declared[out.decisions].output.schema if last is not None else None
    edits = schema is not None and "edit" in schema.names   # rows edited (the drops among them: in the stats)
    if schema is not None and any(c in schema.names for c in stage.adds):   # annotations: reason null
        kept = sum(pq.read_table(fs.arrow_input(f, ctx.storage), columns=["reason"]).column("reason").null_count
                   for f in parquet_files(last.uri, ctx.storage))
        ctx.report.update({"removed": last.rows - kept, "annotated": kept})
    else:
        ctx.report["edited" if edits else "removed"] = last.rows if last is not None else 0
    stage.after_passes(ctx, {name: art.uri for name, art in out.artifacts.items()})
    return last.uri if last is not None and last.rows else None

