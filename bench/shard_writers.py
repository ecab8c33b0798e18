"""Bench-only shard writing: a whole dataset's documents sorted and written in one
process (:func:`write_shards`), as the benchmarks and the writer's unit tests use it.

A job does not go through here: the ``tokenize`` stage's sink
(:mod:`stages.tokenize.shard_sink`) writes each read split's shards in its own task. This
driver-side path sorts every source's documents (Ray sorts a Ray Dataset; tables are
sorted in memory) and feeds :class:`stages.tokenize.writer.SourceShardWriter` one source
at a time, checking on the way that the order holds and that an id never carries two
token sequences.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe import megatron as fmt
from datapipe.errors import JobError, SpecError
from stages.tokenize.identity import TokenizerInfo
from stages.tokenize.writer import ORDER_COLUMN, ShardOptions, SourceShardWriter, add_order_column, flat_tokens


def _prepare(table: pa.Table) -> pa.Table:
    """Kept rows only, columns id/source/tokens; a missing column is an error."""
    missing = [c for c in ("id", "source", "tokens") if c not in table.column_names]
    if missing:
        raise SpecError(f"write_shards: input lacks column(s) {missing}; run the tokenize stage before writing shards")
    if "_reject_reason" in table.column_names:
        table = table.filter(pc.is_null(table.column("_reject_reason")))
    return table.select(["id", "source", "tokens"])


def _ray_order_batch(table: pa.Table, seed: int) -> pa.Table:
    return add_order_column(_prepare(table), seed)


_SORT_KEYS = [("source", "ascending"), (ORDER_COLUMN, "ascending"), ("id", "ascending")]


def _sorted_batches(ds: Any, seed: int, batch_rows: int) -> Iterator[pa.Table]:
    """Yield ``ds``'s kept documents sorted by (source, order key, id) in batches.

    A Ray Dataset is sorted by Ray (distributed; the driver holds one batch at a time).
    An iterable of ``pyarrow.Table`` is concatenated and sorted in memory (for tests,
    benchmarks and small jobs).
    """
    if hasattr(ds, "iter_batches") and hasattr(ds, "sort"):
        ordered = ds.map_batches(_ray_order_batch, fn_kwargs={"seed": seed}, batch_format="pyarrow",
                                 zero_copy_batch=True)
        ordered = ordered.sort([k for k, _ in _SORT_KEYS])
        yield from ordered.iter_batches(batch_size=batch_rows, batch_format="pyarrow", prefetch_batches=1)
        return
    tables = [add_order_column(_prepare(t), seed) for t in ds]
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return
    table = pa.concat_tables(tables, promote_options="default")
    table = table.take(pc.sort_indices(table, sort_keys=_SORT_KEYS))
    for off in range(0, table.num_rows, batch_rows):
        yield table.slice(off, batch_rows)


def write_shards(
    ds: Any,
    out_dir: str | os.PathLike[str],
    *,
    tokenizer_info: TokenizerInfo,
    shard_tokens: int,
    seed: int,
    lineage: Mapping[str, Any],
    sources: Sequence[str] = (),
    batch_rows: int = 1024,
    span_documents: bool = False,
) -> dict[str, str]:
    """Write every source's shards and manifest under ``out_dir/<source>/``.

    ``ds``: a Ray Dataset, or an iterable of ``pyarrow.Table``, with columns ``id``,
    ``source``, ``tokens`` (list of ints, EOS excluded) and optionally
    ``_reject_reason`` (rows with a reason are skipped). A Ray Dataset is sorted by Ray
    and streamed to this process one batch (``batch_rows`` documents) at a time, so the
    caller's memory does not grow with the corpus; tables are sorted in memory.

    ``sources`` lists sources that must get a manifest even when none of their
    documents survived (an empty manifest with zero shards). ``lineage`` (job hash,
    inputs) is copied into every manifest as is. ``shard_tokens``, ``seed``,
    ``batch_rows`` and ``span_documents`` are checked as :class:`ShardOptions` (default:
    documents never span shards).

    Returns ``{source: manifest path}``. Raises :class:`JobError` when documents are not
    in order after sorting, when the same id carries different tokens, when token ids
    fall outside the vocabulary, or when an existing shard file differs.
    """
    try:
        opts = ShardOptions(shard_tokens=shard_tokens, span_documents=span_documents, seed=seed,
                            batch_rows=batch_rows)
    except SpecError as e:
        raise SpecError(f"write_shards: {e}") from None
    try:
        lineage = json.loads(json.dumps(dict(lineage)))
    except (TypeError, ValueError) as e:
        raise SpecError(f"lineage must be JSON-serialisable: {e}") from None
    for s in sources:
        _check_source_name(s)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    writers = _SortedWriters(out, tokenizer_info=tokenizer_info, options=opts, lineage=lineage)
    try:
        for batch in _sorted_batches(ds, opts.seed, opts.batch_rows):
            if batch.num_rows:
                writers.add(batch)
        return writers.finish(sources)
    finally:
        writers.abort()


class _SortedWriters:
    """Feeds batches sorted by (source, order key, id) to one :class:`SourceShardWriter`
    per source in turn, checking on the way that the order holds (:func:`_check_order`)."""

    def __init__(self, out: Path, *, tokenizer_info: TokenizerInfo, options: ShardOptions,
                 lineage: Mapping[str, Any]) -> None:
        self.out = out
        self.info = tokenizer_info
        self.opts = options
        self.lineage = lineage
        self.result: dict[str, str] = {}
        self._writer: SourceShardWriter | None = None
        self._prev: tuple[str, int, str] | None = None  # (source, key, id) of the last document written
        self._prev_tokens: np.ndarray | None = None

    def add(self, batch: pa.Table) -> None:
        srcs = batch.column("source").to_pylist()
        keys = batch.column(ORDER_COLUMN).to_numpy(zero_copy_only=False)
        ids = batch.column("id").to_pylist()
        flat, lengths = flat_tokens(batch.column("tokens"))
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        _check_order(srcs, keys, ids, flat, offsets, self._prev, self._prev_tokens)
        for src, start, stop in _runs(srcs):
            self._writer_for(src).add(flat[offsets[start]:offsets[stop]], lengths[start:stop])
        self._prev = (srcs[-1], int(keys[-1]), ids[-1])
        self._prev_tokens = flat[offsets[-2]:offsets[-1]].copy()

    def finish(self, sources: Sequence[str]) -> dict[str, str]:
        """Close the last source, give every source in ``sources`` without documents an
        empty manifest; ``{source: manifest path}``, sorted."""
        self._finish_current()
        for s in sorted(set(sources) - set(self.result)):
            self.result[s] = str(self._new_writer(s).finish())
        return dict(sorted(self.result.items()))

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.abort()

    def _writer_for(self, src: str) -> SourceShardWriter:
        if self._writer is None or self._writer.source != src:
            self._finish_current()
            self._writer = self._new_writer(src)
        return self._writer

    def _finish_current(self) -> None:
        if self._writer is not None:
            self.result[self._writer.source] = str(self._writer.finish())
            self._writer = None

    def _new_writer(self, src: str) -> SourceShardWriter:
        _check_source_name(src)
        if src in self.result:
            raise JobError(f"write_shards: documents of source {src!r} arrived after the source was finished; "
                           "the input was not sorted")
        o = self.opts
        return SourceShardWriter(self.out / src, src, tokenizer_info=self.info, shard_tokens=o.shard_tokens,
                                 seed=o.seed, lineage=self.lineage, span_documents=o.span_documents)


def _runs(values: Sequence[str]) -> Iterator[tuple[str, int, int]]:
    """``(value, start, stop)`` for each run of equal neighbours in ``values``."""
    start, n = 0, len(values)
    while start < n:
        stop = start
        while stop < n and values[stop] == values[start]:
            stop += 1
        yield values[start], start, stop
        start = stop


def _check_source_name(src: str) -> None:
    if not isinstance(src, str) or not fmt.SOURCE_NAME.match(src):
        raise SpecError(f"source name {src!r} cannot name shard files: use letters, digits, '.', '_' or '-'")


def _check_order(
    srcs: list[str], keys: np.ndarray, ids: list[str], flat: np.ndarray, offsets: np.ndarray,
    prev: tuple[str, int, str] | None, prev_tokens: np.ndarray | None,
) -> None:
    """Guard the determinism contract: rows must arrive sorted by (source, key, id), and
    two rows with the same id must carry the same tokens (else their order, and so the
    bytes, would depend on scheduling)."""
    n = len(srcs)
    same_src = np.fromiter((srcs[i] == srcs[i - 1] for i in range(1, n)), dtype=bool, count=n - 1)
    dk = keys[1:] >= keys[:-1]
    eqk = keys[1:] == keys[:-1]
    bad = same_src & ~dk
    if bad.any():
        i = int(np.flatnonzero(bad)[0]) + 1
        raise JobError(f"write_shards: documents out of order at {ids[i]!r} (the sort did not hold)")
    for i in np.flatnonzero(same_src & eqk) + 1:
        if ids[i] < ids[i - 1]:
            raise JobError(f"write_shards: documents out of order at {ids[i]!r} (the sort did not hold)")
        if ids[i] == ids[i - 1] and not np.array_equal(flat[offsets[i - 1]:offsets[i]], flat[offsets[i]:offsets[i + 1]]):
            raise JobError(f"write_shards: id {ids[i]!r} appears twice with different tokens; ids must be unique")
    if prev is not None:
        psrc, pkey, pid = prev
        cur = (srcs[0], int(keys[0]), ids[0])
        if cur < (psrc, pkey, pid):
            raise JobError(f"write_shards: documents out of order at {ids[0]!r} (the sort did not hold)")
        if cur == prev and prev_tokens is not None and not np.array_equal(prev_tokens, flat[offsets[0]:offsets[1]]):
            raise JobError(f"write_shards: id {ids[0]!r} appears twice with different tokens; ids must be unique")
    # sources themselves must not go backwards inside a batch
    for i in np.flatnonzero(~same_src) + 1:
        if srcs[i] < srcs[i - 1]:
            raise JobError(f"write_shards: source {srcs[i]!r} after {srcs[i - 1]!r}: the input was not sorted")
