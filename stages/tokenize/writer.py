"""The ``tokenize`` stage's shard writer: one source's documents, in a given order,
into Megatron ``MMIDIDX`` v1 ``.bin``/``.idx`` shards plus a JSON manifest. The format
(byte layout, manifest schema, the checks a shard must pass) is owned by
:mod:`datapipe.megatron`, which the verifier (``datapipe shards verify``) and the loader
share; how and why in ``docs/shards.md``.

Documents are put in a fixed order per split by ``(order_key(id, seed), id)`` where
``order_key`` is ``xxh3_64`` of the id's UTF-8 bytes with ``seed`` as the xxh3 seed
(:func:`order_keys`, :func:`add_order_column`; the sink sorts). Only then are tokens
laid out, each document followed by EOS. By default a document never spans shards: a
shard is closed before the document that would take it past ``shard_tokens`` (a target,
not a cap), and a document longer than ``shard_tokens`` gets a shard of its own. With
``span_documents=True`` shards hold exactly ``shard_tokens`` tokens (the last one
shorter) and a document crossing a boundary is split into one sequence per shard. Same
documents + same seed + same tokenizer + same options => byte-identical shards and
manifest, whatever the Ray parallelism or block sizes.

Every file is written through :class:`datapipe.fs.AtomicFile` (a temporary name beside
the final one), checked there (hash, ``.idx`` against ``.bin``, EOS after every
document), then fsync'd and renamed into place. A final name is never
overwritten with different bytes: re-running the same job finds identical shards and
keeps them; anything else is an error. ``manifest.json`` is written last.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from datapipe import fs
from datapipe import megatron as fmt
from datapipe.errors import JobError, SpecError
from stages.tokenize.identity import TokenizerInfo

log = logging.getLogger(__name__)

MANIFEST = fmt.MANIFEST_NAME
#: the column :func:`add_order_column` appends: a document's place within its split
ORDER_COLUMN = "_shard_order"


def order_keys(ids: Sequence[str] | pa.Array | pa.ChunkedArray, seed: int) -> np.ndarray:
    """The per-document ordering key: ``xxh3_64(id.encode("utf-8"), seed=seed)``."""
    if isinstance(ids, (pa.Array, pa.ChunkedArray)):
        ids = ids.to_pylist()
    h = xxhash.xxh3_64_intdigest
    return np.fromiter((h(i.encode("utf-8", "surrogatepass"), seed) for i in ids), dtype=np.uint64, count=len(ids))

def add_order_column(table: pa.Table, seed: int) -> pa.Table:
    """``table`` with :data:`ORDER_COLUMN` (:func:`order_keys` of its ``id`` column) appended."""
    keys = order_keys(table.column("id"), seed)
    return table.append_column(ORDER_COLUMN, pa.array(keys, pa.uint64()))

def flat_tokens(tokens: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(flat ids, per-document lengths) of a list<int> column; nulls are an error."""
    if isinstance(tokens, pa.ChunkedArray):
        tokens = tokens.combine_chunks() if tokens.num_chunks != 1 else tokens.chunk(0)
    if tokens.null_count:
        raise JobError("shard writer: a kept document has null tokens; run the tokenize stage on every kept document")
    lengths = pc.list_value_length(tokens).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = tokens.flatten().to_numpy(zero_copy_only=False)
    return flat, lengths

# ---------------------------------------------------------------------------------------
# the writer


@dataclass
class _OpenShard:
    index: int
    name: str
    out: fs.AtomicFile   # the .bin being written; out.tmp is its local temporary file
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
        sh.out.write(memoryview(chunk).cast("B"))
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
        out = fs.AtomicFile(str(self.folder / f"{name}.bin"))
        self._open = _OpenShard(index=index, name=name, out=out, hasher=fmt.new_hasher(),
                                first_doc_continued=self._next_continued)
        self._next_continued = False
        return self._open

    def _close_shard(self) -> None:
        sh = self._open
        assert sh is not None
        self._open = None
        idx_out = None
        try:
            sh.out.flush()   # the check below reads the temporary files by path
            lengths = np.concatenate(sh.pieces) if sh.pieces else np.zeros(0, dtype=np.int64)
            idx_bytes = fmt.build_idx(lengths, self.dtype)
            idx_out = fs.AtomicFile(str(self.folder / f"{sh.name}.idx"))
            idx_out.write(idx_bytes)
            idx_out.flush()
            rec = fmt.ShardRecord(
                name=sh.name, bin_path=Path(sh.out.tmp), idx_path=Path(idx_out.tmp), tokens=sh.tokens,
                documents=len(lengths) - int(sh.first_doc_continued), bin_bytes=sh.tokens * self._np_dtype.itemsize,
                first_doc_continued=sh.first_doc_continued, last_doc_split=sh.last_doc_split,
                bin_hash=fmt.digest(sh.hasher), idx_hash=fmt.hash_bytes(idx_bytes),
            )
            problems = fmt.check_shard(rec, self.dtype, eos_id=self.info.eos_id, vocab_size=self.info.vocab_size)
            if problems:
                raise JobError(f"source {self.source}: shard failed verification after writing: " + "; ".join(problems))
            final = dataclasses.replace(rec, bin_path=self.folder / f"{sh.name}.bin",
                                        idx_path=self.folder / f"{sh.name}.idx")
            _commit(sh.out, final.bin_path, rec.bin_hash)
            _commit(idx_out, final.idx_path, rec.idx_hash)
        finally:   # after a commit these do nothing; otherwise no temporary file is left
            sh.out.abort()
            if idx_out is not None:
                idx_out.abort()
        self._records.append(final)
        log.debug("shard %s: %d tokens, %d documents", sh.name, sh.tokens, rec.documents)

    def abort(self) -> None:
        """Remove the open shard's temporary file (after an error)."""
        if self._open is not None:
            self._open.out.abort()
            self._open = None

    # -- manifest ------------------------------------------------------------------
    def finish(self) -> Path:
        """Close the last shard and write ``manifest.json`` (last, write-once)."""
        if self._open is not None:
            self._close_shard()
        self._finished = True
        fs.fsync_dir(str(self.folder))
        data = fmt.make_manifest(
            folder=self.folder, source=self.source, dtype=self.dtype, shard_tokens=self.shard_tokens,
            span_documents=self.span_documents, tokenizer=self.info.to_manifest(),
            order={"key": "xxh3_64(id utf-8, seed), then id", "seed": self.seed},
            shards=self._records, lineage=self.lineage,
        )
        path = self.manifest_path
        out = fs.AtomicFile(str(path))
        try:
            out.write(data)
            _commit(out, path, fmt.hash_bytes(data))
        finally:
            out.abort()
        fs.fsync_dir(str(self.folder))
        log.info("source %s: %d documents, %d tokens in %d shards -> %s", self.source,
                 sum(r.documents for r in self._records), sum(r.tokens for r in self._records),
                 len(self._records), path)
        return path


def _commit(out: fs.AtomicFile, final: Path, content_hash: str) -> None:
    """Commit ``out`` (written for ``final``) unless ``final`` exists: identical bytes are
    kept (a re-run), different bytes are an error (names are write-once)."""
    if final.exists():
        have = fmt.hash_file(final)
        out.abort()
        if have != content_hash:
            raise JobError(
                f"{final} already exists with different content ({have}, new {content_hash}); shard "
                "files are write-once: write to a new output folder or remove the old shards"
            )
        return
    out.commit()


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


