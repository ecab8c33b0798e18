"""Token shards: Megatron ``MMIDIDX`` v1 ``.bin``/``.idx`` pairs plus a JSON manifest
per source. The format (byte layout, manifest schema, the checks a shard must pass) is
owned by :mod:`datapipe.megatron`; how and why in ``docs/shards.md``.

Writing (:func:`write_shards`, :class:`SourceShardWriter`)
  Documents (``id``, ``source``, ``tokens`` without EOS) are put in a fixed order per
  source, by ``(order_key(id, seed), id)`` where ``order_key`` is ``xxh3_64`` of the id's
  UTF-8 bytes with ``seed`` as the xxh3 seed. Only then are tokens laid out, each
  document followed by EOS. By default a document never spans shards: a shard is closed
  before the document that would take it past ``shard_tokens`` (a target, not a cap), and
  a document longer than ``shard_tokens`` gets a shard of its own. With
  ``span_documents=True`` shards hold exactly ``shard_tokens`` tokens (the last one
  shorter) and a document crossing a boundary is split into one sequence per shard.
  Same documents + same seed + same tokenizer + same options => byte-identical shards
  and manifest, whatever the Ray parallelism or block sizes.

  Every file is written under a temporary name, fsync'd, checked (hash, ``.idx`` against
  ``.bin``, EOS after every document) and renamed into place. A final name is never
  overwritten with different bytes: re-running the same job finds identical shards and
  keeps them; anything else is an error. ``manifest.json`` is written last.

Reading back: :func:`verify_shards` (every check above, from the files alone) and
:func:`inspect_shards` (counts, document-length histogram, a decoded excerpt).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from datapipe import megatron as fmt
from datapipe.errors import JobError, SpecError
from datapipe.tokenizer import TokenizerInfo

log = logging.getLogger(__name__)

MANIFEST = fmt.MANIFEST_NAME
ORDER_COLUMN = "_shard_order"


def order_keys(ids: Sequence[str] | pa.Array | pa.ChunkedArray, seed: int) -> np.ndarray:
    """The per-document ordering key: ``xxh3_64(id.encode("utf-8"), seed=seed)``."""
    if isinstance(ids, (pa.Array, pa.ChunkedArray)):
        ids = ids.to_pylist()
    h = xxhash.xxh3_64_intdigest
    return np.fromiter((h(i.encode("utf-8", "surrogatepass"), seed) for i in ids), dtype=np.uint64, count=len(ids))


# ---------------------------------------------------------------------------------------
# the writer


@dataclass
class _OpenShard:
    index: int
    name: str
    bin_tmp: Path
    fh: Any
    hasher: Any
    first_doc_continued: bool
    tokens: int = 0
    pieces: list[np.ndarray] = field(default_factory=list)
    last_doc_split: bool = False


class SourceShardWriter:
    """Lays out one source's documents, in the order given, into shards.

    Feed it whole documents with :meth:`add` (flat ids and per-document lengths, EOS not
    included) and call :meth:`finish`, which writes ``manifest.json`` and returns its
    path. Memory: one open shard's sequence lengths (12 bytes per sequence) plus the
    caller's batch; token data goes straight to the file.
    """

    def __init__(
        self, folder: Path, source: str, *, tokenizer_info: TokenizerInfo, shard_tokens: int,
        seed: int, lineage: Mapping[str, Any], span_documents: bool = False, stem: str | None = None,
        manifest_path: Path | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.source = source
        #: shard files are ``<stem>-NNNNN``; the runner passes ``<source>-<split>`` so
        #: every read split writes its own shards, and merges the manifests afterwards
        self.stem = stem or source
        self.manifest_path = Path(manifest_path) if manifest_path is not None else self.folder / MANIFEST
        self.info = tokenizer_info
        self.shard_tokens = shard_tokens
        self.span_documents = span_documents
        self.seed = seed
        self.lineage = dict(lineage)
        self.dtype = fmt.shard_dtype(tokenizer_info.vocab_size)
        self._np_dtype = fmt.NP_DTYPES[self.dtype]
        self._records: list[fmt.ShardRecord] = []
        self._open: _OpenShard | None = None
        self._next_continued = False
        self._finished = False
        self._token = uuid.uuid4().hex[:12]
        self.folder.mkdir(parents=True, exist_ok=True)

    # -- feeding -------------------------------------------------------------------
    def add(self, flat: np.ndarray, lengths: np.ndarray) -> None:
        """Append documents (``flat`` ids concatenated, ``lengths`` per document)."""
        if self._finished:
            raise AssertionError("SourceShardWriter.add after finish")
        lengths = np.asarray(lengths, dtype=np.int64)
        m = len(lengths)
        if m == 0:
            return
        flat = np.asarray(flat)
        if len(flat) != int(lengths.sum()):
            raise AssertionError(f"{len(flat)} token ids for documents totalling {int(lengths.sum())}")
        if len(flat):
            lo, hi = int(flat.min()), int(flat.max())
            if lo < 0 or hi >= self.info.vocab_size:
                raise JobError(
                    f"source {self.source}: token id {lo if lo < 0 else hi} is outside the vocabulary of "
                    f"{self.info.vocab_size} ids: documents were tokenized with a different tokenizer"
                )
        if not self.span_documents and int(lengths.max()) + 1 > fmt.MAX_SEQUENCE_TOKENS:
            raise JobError(f"source {self.source}: a document of {int(lengths.max())} tokens does not fit one "
                           f"Megatron sequence (int32 lengths)")
        # the stream: every document followed by EOS
        ends = np.cumsum(lengths)  # positions (in flat) after each document
        stream = np.insert(flat.astype(self._np_dtype, copy=False), ends, self.info.eos_id).astype(self._np_dtype, copy=False)
        doc_ends = ends + np.arange(1, m + 1)  # positions (in stream) after each EOS
        if self.span_documents:
            self._add_spanning(stream, doc_ends)
        else:
            self._add_whole(stream, doc_ends)

    def _write(self, sh: _OpenShard, chunk: np.ndarray, seq_lengths: np.ndarray) -> None:
        sh.fh.write(memoryview(chunk).cast("B"))
        sh.hasher.update(chunk)
        sh.pieces.append(seq_lengths)
        sh.tokens += len(chunk)

    def _add_whole(self, stream: np.ndarray, doc_ends: np.ndarray) -> None:
        """Whole documents only: fill a shard with the documents that fit in
        ``shard_tokens``; the next one opens a new shard; one longer than a shard gets a
        shard of its own. One loop turn per shard, not per document."""
        i, d, m = 0, 0, len(doc_ends)
        while d < m:
            sh = self._open or self._open_shard()
            k = int(np.searchsorted(doc_ends, i + self.shard_tokens - sh.tokens, side="right"))
            if k == d:  # the next document does not fit
                if sh.tokens:
                    self._close_shard()
                    continue
                k = d + 1  # longer than a shard: a shard of its own
            j = int(doc_ends[k - 1])
            self._write(sh, stream[i:j], np.diff(doc_ends[d:k], prepend=i).astype(np.int64))
            i, d = j, k
            if sh.tokens >= self.shard_tokens:
                self._close_shard()

    def _add_spanning(self, stream: np.ndarray, doc_ends: np.ndarray) -> None:
        """Exactly ``shard_tokens`` per shard; a document crossing a boundary is cut."""
        L, i = len(stream), 0
        while i < L:
            sh = self._open or self._open_shard()
            j = min(L, i + self.shard_tokens - sh.tokens)
            # sequences of this chunk: cut after every document ending in (i, j], and at j
            a, b = np.searchsorted(doc_ends, [i, j], side="right")
            cuts = np.concatenate(([i], doc_ends[a:b]))
            ends_on_doc = b > a and int(doc_ends[b - 1]) == j
            if not ends_on_doc:  # only at a full shard: the document goes on in the next one
                cuts = np.append(cuts, j)
            self._write(sh, stream[i:j], np.diff(cuts).astype(np.int64))
            if sh.tokens == self.shard_tokens:
                sh.last_doc_split = not ends_on_doc
                self._close_shard()
                self._next_continued = sh.last_doc_split
            i = j

    # -- shards --------------------------------------------------------------------
    def _open_shard(self) -> _OpenShard:
        index = len(self._records)
        name = fmt.shard_name(self.stem, index)
        tmp = self.folder / f".{name}.bin.{self._token}.tmp"
        fh = open(tmp, "wb")
        self._open = _OpenShard(index=index, name=name, bin_tmp=tmp, fh=fh, hasher=fmt.new_hasher(),
                                first_doc_continued=self._next_continued)
        self._next_continued = False
        return self._open

    def _close_shard(self) -> None:
        sh = self._open
        assert sh is not None
        self._open = None
        try:
            sh.fh.flush()
            os.fsync(sh.fh.fileno())
        finally:
            sh.fh.close()
        lengths = np.concatenate(sh.pieces) if sh.pieces else np.zeros(0, dtype=np.int64)
        idx_tmp = self.folder / f".{sh.name}.idx.{self._token}.tmp"
        idx_bytes = fmt.build_idx(lengths, self.dtype)
        with open(idx_tmp, "wb") as f:
            f.write(idx_bytes)
            f.flush()
            os.fsync(f.fileno())
        rec = fmt.ShardRecord(
            name=sh.name, bin_path=sh.bin_tmp, idx_path=idx_tmp, tokens=sh.tokens,
            documents=len(lengths) - int(sh.first_doc_continued), bin_bytes=sh.tokens * self._np_dtype.itemsize,
            first_doc_continued=sh.first_doc_continued, last_doc_split=sh.last_doc_split,
            bin_hash=fmt.digest(sh.hasher), idx_hash=fmt.hash_bytes(idx_bytes),
        )
        problems = fmt.check_shard(rec, self.dtype, eos_id=self.info.eos_id, vocab_size=self.info.vocab_size)
        if problems:
            sh.bin_tmp.unlink(missing_ok=True)
            idx_tmp.unlink(missing_ok=True)
            raise JobError(f"source {self.source}: shard failed verification after writing: " + "; ".join(problems))
        final = dataclasses.replace(rec, bin_path=self.folder / f"{sh.name}.bin",
                                    idx_path=self.folder / f"{sh.name}.idx")
        try:
            _commit(sh.bin_tmp, final.bin_path, rec.bin_hash)
            _commit(idx_tmp, final.idx_path, rec.idx_hash)
        finally:
            sh.bin_tmp.unlink(missing_ok=True)
            idx_tmp.unlink(missing_ok=True)
        self._records.append(final)
        log.debug("shard %s: %d tokens, %d documents", sh.name, sh.tokens, rec.documents)

    def abort(self) -> None:
        """Remove the open shard's temporary file (after an error)."""
        if self._open is not None:
            self._open.fh.close()
            self._open.bin_tmp.unlink(missing_ok=True)
            self._open = None

    # -- manifest ------------------------------------------------------------------
    def finish(self) -> Path:
        """Close the last shard and write ``manifest.json`` (last, write-once)."""
        if self._open is not None:
            self._close_shard()
        self._finished = True
        _fsync_dir(self.folder)
        data = fmt.make_manifest(
            folder=self.folder, source=self.source, dtype=self.dtype, shard_tokens=self.shard_tokens,
            span_documents=self.span_documents, tokenizer=self.info.to_manifest(),
            order={"key": "xxh3_64(id utf-8, seed), then id", "seed": self.seed},
            shards=self._records, lineage=self.lineage,
        )
        path = self.manifest_path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{self._token}.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        _commit(tmp, path, fmt.hash_bytes(data))
        _fsync_dir(self.folder)
        log.info("source %s: %d documents, %d tokens in %d shards -> %s", self.source,
                 sum(r.documents for r in self._records), sum(r.tokens for r in self._records),
                 len(self._records), path)
        return path


def _commit(tmp: Path, final: Path, content_hash: str) -> None:
    """Rename ``tmp`` to ``final`` unless ``final`` exists: identical bytes are kept (a
    re-run), different bytes are an error (names are write-once)."""
    if final.exists():
        have = fmt.hash_file(final)
        tmp.unlink(missing_ok=True)
        if have != content_hash:
            raise JobError(
                f"{final} already exists with different content ({have}, new {content_hash}); shard "
                "files are write-once: write to a new output folder or remove the old shards"
            )
        return
    os.replace(tmp, final)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------
# job options and the accounting check the runner reports


@dataclass(kw_only=True, frozen=True)
class ShardOptions:
    """The job spec's ``shards:`` block.

    ``shard_tokens``: the target tokens per shard (2^27 = 256 MiB of uint16 by default).
    Documents never span shards unless ``span_documents: true``: a shard ends before the
    document that would take it past the target, and a longer document gets a shard of
    its own. With ``span_documents: true`` every shard but the last holds exactly
    ``shard_tokens`` and boundary documents are split (see docs/shards.md for what that
    means to a Megatron train/valid split). ``seed``: the document-order seed.
    ``batch_rows``: documents per batch streamed to the writer (its memory bound).
    """

    shard_tokens: int = 1 << 27
    span_documents: bool = False
    seed: int = 0
    batch_rows: int = 1024

    def __post_init__(self) -> None:
        if not 1 <= self.shard_tokens <= fmt.MAX_SEQUENCE_TOKENS:
            raise SpecError(f"shards.shard_tokens must be in 1..{fmt.MAX_SEQUENCE_TOKENS} (Megatron sequence "
                            f"lengths are int32), got {self.shard_tokens}")
        if not isinstance(self.span_documents, bool):
            raise SpecError(f"shards.span_documents must be true or false, got {self.span_documents!r}")
        if not 0 <= self.seed < 2**64:
            raise SpecError(f"shards.seed must be in 0..2**64-1, got {self.seed}")
        if self.batch_rows < 1:
            raise SpecError(f"shards.batch_rows must be >= 1, got {self.batch_rows}")


def conservation_problems(expected: Mapping[str, tuple[int, int]], manifests: Mapping[str, str | os.PathLike[str]]) -> list[str]:
    """Compare what the shards hold with what the job kept.

    ``expected[source] = (kept documents, sum of their num_tokens)``. Every source's
    manifest must say ``documents == kept`` and ``tokens == sum + kept`` (one EOS per
    document). Returns one line per disagreement; empty means conserved.
    """
    problems: list[str] = []
    for src in sorted(set(expected) | set(manifests)):
        docs, doc_tokens = expected.get(src, (0, 0))
        if src not in manifests:
            if docs:
                problems.append(f"source {src}: {docs} kept documents but no shard manifest")
            continue
        totals = json.loads(Path(manifests[src]).read_text(encoding="utf-8"))["totals"]
        if totals["documents"] != docs:
            problems.append(f"source {src}: shards hold {totals['documents']} documents, the job kept {docs}")
        if totals["tokens"] != doc_tokens + docs:
            problems.append(f"source {src}: shards hold {totals['tokens']} tokens, kept documents have "
                            f"{doc_tokens} + {docs} EOS = {doc_tokens + docs}")
    return problems


# ---------------------------------------------------------------------------------------
# ordering and the public entry point


def _add_order_column(table: pa.Table, seed: int) -> pa.Table:
    keys = order_keys(table.column("id"), seed)
    return table.append_column(ORDER_COLUMN, pa.array(keys, pa.uint64()))


def _prepare(table: pa.Table) -> pa.Table:
    """Kept rows only, columns id/source/tokens; a missing column is an error."""
    missing = [c for c in ("id", "source", "tokens") if c not in table.column_names]
    if missing:
        raise SpecError(f"write_shards: input lacks column(s) {missing}; run the tokenize stage before writing shards")
    if "_reject_reason" in table.column_names:
        table = table.filter(pc.is_null(table.column("_reject_reason")))
    return table.select(["id", "source", "tokens"])


def _ray_order_batch(table: pa.Table, seed: int) -> pa.Table:
    return _add_order_column(_prepare(table), seed)


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
    tables = [_add_order_column(_prepare(t), seed) for t in ds]
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return
    table = pa.concat_tables(tables, promote_options="default")
    table = table.take(pc.sort_indices(table, sort_keys=_SORT_KEYS))
    for off in range(0, table.num_rows, batch_rows):
        yield table.slice(off, batch_rows)


def _flat_tokens(tokens: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(flat ids, per-document lengths) of a list<int> column; nulls are an error."""
    if isinstance(tokens, pa.ChunkedArray):
        tokens = tokens.combine_chunks() if tokens.num_chunks != 1 else tokens.chunk(0)
    if tokens.null_count:
        raise JobError("write_shards: a kept document has null tokens; run the tokenize stage on every kept document")
    lengths = pc.list_value_length(tokens).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = tokens.flatten().to_numpy(zero_copy_only=False)
    return flat, lengths


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
        flat, lengths = _flat_tokens(batch.column("tokens"))
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




# ---------------------------------------------------------------------------------------
# verify and inspect


def manifest_paths(path: str | os.PathLike[str]) -> list[Path]:
    """``path/manifest.json`` if it exists, else every ``path/*/manifest.json`` (sorted)."""
    p = Path(path)
    if p.is_file() and p.name == MANIFEST:
        return [p]
    if (p / MANIFEST).is_file():
        return [p / MANIFEST]
    return sorted(p.glob(f"*/{MANIFEST}"))


def verify_shards(path: str | os.PathLike[str]) -> list[str]:
    """Recompute every hash and count of the shards under ``path`` (a source folder or a
    folder of source folders) and check each ``.idx`` against its ``.bin`` and the
    manifest. Returns problems naming the shard and what differs; empty means good."""
    paths = manifest_paths(path)
    if not paths:
        return [f"{path}: no {MANIFEST} here or in its subfolders"]
    problems: list[str] = []
    for mp in paths:
        try:
            m = fmt.load_manifest(mp)
        except fmt.ShardFormatError as e:
            problems.append(str(e))
            continue
        problems.extend(f"{m.source}/{p}" for p in _verify_manifest(m))
    return problems


def _verify_manifest(m: fmt.SourceManifest) -> list[str]:
    problems = fmt.check_layout(m)
    for rec in m.shards:
        problems.extend(fmt.check_shard(rec, m.dtype, eos_id=m.eos_id, vocab_size=m.vocab_size))
    listed = {p.name for rec in m.shards for p in (rec.bin_path, rec.idx_path)}
    for f in sorted(m.path.parent.iterdir()):
        if f.name.endswith(".tmp"):
            problems.append(f"{f.name}: leftover temporary file (an interrupted write)")
        elif f.suffix in (".bin", ".idx") and f.name not in listed:
            problems.append(f"{f.name}: shard file not listed in the manifest")
    return problems


def _doc_lengths(m: fmt.SourceManifest) -> np.ndarray:
    """Length (EOS included) of every document of a source, split documents rejoined."""
    out: list[np.ndarray] = []
    carry = 0
    for rec in m.shards:
        lengths = fmt.read_idx(rec.idx_path).lengths.astype(np.int64)
        if rec.first_doc_continued and len(lengths):
            lengths = lengths.copy()
            lengths[0] += carry
            carry = 0
        if rec.last_doc_split and len(lengths):
            carry = int(lengths[-1])
            lengths = lengths[:-1]
        out.append(lengths)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def _first_doc(m: fmt.SourceManifest, limit: int) -> np.ndarray:
    for rec in m.shards:
        lengths = fmt.read_idx(rec.idx_path).lengths
        if len(lengths):
            n = min(int(lengths[0]), limit)
            return np.fromfile(rec.bin_path, dtype=fmt.NP_DTYPES[m.dtype], count=n).astype(np.int64)
    return np.zeros(0, dtype=np.int64)


def inspect_shards(
    path: str | os.PathLike[str], *, tokenizer: str | None = None, excerpt_tokens: int = 64,
) -> dict[str, Any]:
    """Per source: shard/document/token counts, split documents, a power-of-two histogram
    of document lengths (EOS included), and the first document's first tokens decoded
    with ``tokenizer`` (default: the manifest's tokenizer path, when it still has the
    recorded fingerprint)."""
    report: dict[str, Any] = {"sources": {}}
    for mp in manifest_paths(path):
        m = fmt.load_manifest(mp)
        try:
            lengths = _doc_lengths(m)
        except (OSError, ValueError) as e:
            raise fmt.ShardFormatError(str(mp), "shards unreadable; run `datapipe shards verify`", str(e)) from None
        hist: dict[str, int] = {}
        if len(lengths):
            b = np.floor(np.log2(lengths)).astype(np.int64)
            for k, c in zip(*np.unique(b, return_counts=True)):
                hist[f"{2**int(k)}-{2**(int(k) + 1) - 1}"] = int(c)
        first = _first_doc(m, excerpt_tokens)
        excerpt, note = _decode(first, m, tokenizer, m.path.parent)
        report["sources"][m.source] = {
            "manifest": str(mp),
            "dtype": m.dtype,
            "shards": len(m.shards),
            "documents": m.total_documents,
            "tokens": m.total_tokens,
            "span_documents": m.span_documents,
            "split_documents": sum(1 for r in m.shards if r.last_doc_split),
            "mean_doc_tokens": float(lengths.mean()) if len(lengths) else 0.0,
            "max_doc_tokens": int(lengths.max()) if len(lengths) else 0,
            "doc_length_histogram": hist,
            "tokenizer": m.fingerprint,
            "excerpt_ids": first.tolist(),
            "excerpt": excerpt,
            "excerpt_note": note,
        }
    return report


def _decode(ids: np.ndarray, m: fmt.SourceManifest, tokenizer: str | None, folder: Path) -> tuple[str | None, str]:
    from datapipe.tokenizer import fingerprint, load_tokenizer

    path = tokenizer or m.tokenizer.get("path")
    if not tokenizer and path and (folder / path).is_file():  # a copy kept beside the shards
        path = str(folder / path)
    if not path or not Path(path).exists():
        return None, f"tokenizer {path!r} not found; showing ids only (pass --tokenizer)"
    try:
        tok = load_tokenizer(path)
    except SpecError as e:
        return None, str(e)
    note = ""
    if fingerprint(tok) != m.fingerprint:
        note = f"warning: {path} is not the tokenizer these shards were written with (fingerprint differs)"
    return tok.decode([int(i) for i in ids], skip_special_tokens=False), note


def format_inspect(report: Mapping[str, Any]) -> str:
    """A human summary of :func:`inspect_shards`'s report."""
    lines: list[str] = []
    for src, r in report["sources"].items():
        lines.append(f"source {src}  ({r['manifest']})")
        lines.append(f"  {r['shards']} shard(s), {r['documents']} documents, {r['tokens']} tokens ({r['dtype']}), "
                     f"{r['split_documents']} split across shards")
        lines.append(f"  document tokens incl. EOS: mean {r['mean_doc_tokens']:.1f}, max {r['max_doc_tokens']}")
        hist = r["doc_length_histogram"]
        if hist:
            top = max(hist.values())
            width = max(len(k) for k in hist)
            for k, c in hist.items():
                bar = "#" * max(1, round(40 * c / top))
                lines.append(f"    {k:>{width}} | {bar} {c}")
        if r["excerpt"] is not None:
            lines.append("  first document: " + json.dumps(r["excerpt"], ensure_ascii=False))
        else:
            lines.append(f"  first document ids: {r['excerpt_ids']}")
        if r["excerpt_note"]:
            lines.append(f"  {r['excerpt_note']}")
    return "\n".join(lines) if lines else "no shard manifests found"


# ---------------------------------------------------------------------------------------
# CLI


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``datapipe shards verify|inspect``. Handlers return the exit code
    (``sys.exit(args.func(args))``)."""
    p = subparsers.add_parser("shards", help="check or describe token shards")
    sp = p.add_subparsers(dest="shards_command", required=True)
    v = sp.add_parser("verify", help="recompute hashes and counts; exit 1 on any problem")
    v.add_argument("dir", help="a source's shard folder, or a folder of them (<job output>/shards)")
    v.set_defaults(func=_cli_verify)
    i = sp.add_parser("inspect", help="counts per source, document-length histogram, a decoded excerpt")
    i.add_argument("dir")
    i.add_argument("--tokenizer", default=None, help="tokenizer for the excerpt (default: the manifest's)")
    i.add_argument("--excerpt-tokens", type=int, default=64)
    i.add_argument("--json", action="store_true", help="print the report as JSON")
    i.set_defaults(func=_cli_inspect)


def _cli_verify(args: argparse.Namespace) -> int:
    from datapipe.commit import local_for_reading

    local = local_for_reading(args.dir)   # URIs: checked for _SUCCESS, then cached locally
    problems = verify_shards(local)
    n = len(manifest_paths(local))
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) in {args.dir}")
        return 1
    print(f"ok: {n} source manifest(s) under {args.dir} verified")
    return 0


def _cli_inspect(args: argparse.Namespace) -> int:
    from datapipe.commit import local_for_reading

    local = local_for_reading(args.dir)
    if not manifest_paths(local):
        print(f"{args.dir}: no {MANIFEST} here or in its subfolders")
        return 1
    report = inspect_shards(local, tokenizer=args.tokenizer, excerpt_tokens=args.excerpt_tokens)
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else format_inspect(report))
    return 0
