"""Token shards: Megatron ``MMIDIDX`` v1 ``.bin``/``.idx`` pairs plus a JSON manifest
per source. The byte layout is specified in ``docs/formats.md``; how and why in
``docs/shards.md``.

Writing (:func:`write_shards`)
  Documents (``id``, ``source``, ``tokens`` without EOS) are put in a fixed order per
  source, by ``(order_key(id, seed), id)`` where ``order_key`` is ``xxh3_64`` of the id's
  UTF-8 bytes with ``seed`` as the xxh3 seed. Only then are tokens laid out: each
  document followed by EOS, cut into shards of exactly ``shard_tokens`` tokens (the last
  one shorter), a document that crosses a boundary split in two (or more) sequences.
  Same documents + same seed + same tokenizer => byte-identical shards and manifest,
  whatever the Ray parallelism or block sizes.

  Every file is written under a temporary name, fsync'd, checked (hash, ``.idx`` against
  ``.bin``, EOS after every document) and renamed into place. A final name is never
  overwritten with different bytes: re-running the same job finds identical shards and
  keeps them; anything else is an error. ``manifest.json`` is written last.

Reading back: :func:`verify_shards` (every check above, from the files alone) and
:func:`inspect_shards` (counts, document-length histogram, a decoded excerpt).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import struct
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from datapipe.errors import CorruptInputError, JobError, SpecError
from datapipe.tokenizer import TokenizerInfo

log = logging.getLogger(__name__)

FORMAT = "datapipe-shards"
VERSION = 1
MANIFEST = "manifest.json"
IDX_MAGIC = b"MMIDIDX\x00\x00"
IDX_VERSION = 1
#: Megatron-LM's dtype codes (``DType`` in ``indexed_dataset.py``) for the dtypes we write
DTYPE_CODES = {"uint16": 8, "int32": 4}
CODE_DTYPES = {v: k for k, v in DTYPE_CODES.items()}
UINT16_MAX_VOCAB = 65535
HASH_ALGO = "xxh3-128"
ORDER_COLUMN = "_shard_order"
_SOURCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_READ_CHUNK = 1 << 24


# ---------------------------------------------------------------------------------------
# small pure helpers (shared by writer, verify and inspect)


def shard_dtype(vocab_size: int) -> str:
    """``"uint16"`` when every id fits below 65535, else ``"int32"`` (docs/formats.md)."""
    return "uint16" if vocab_size <= UINT16_MAX_VOCAB else "int32"


def order_keys(ids: Sequence[str] | pa.Array | pa.ChunkedArray, seed: int) -> np.ndarray:
    """The per-document ordering key: ``xxh3_64(id.encode("utf-8"), seed=seed)``."""
    if isinstance(ids, (pa.Array, pa.ChunkedArray)):
        ids = ids.to_pylist()
    h = xxhash.xxh3_64_intdigest
    return np.fromiter((h(i.encode("utf-8", "surrogatepass"), seed) for i in ids), dtype=np.uint64, count=len(ids))


def shard_name(source: str, index: int) -> str:
    return f"{source}-{index:05d}"


def _hash_file(path: Path) -> tuple[str, int]:
    h = xxhash.xxh3_128()
    n = 0
    with open(path, "rb") as f:
        while chunk := f.read(_READ_CHUNK):
            h.update(chunk)
            n += len(chunk)
    return f"{HASH_ALGO}:{h.hexdigest()}", n


def build_idx(lengths: np.ndarray, dtype: str) -> bytes:
    """Megatron ``MMIDIDX`` v1 index bytes for sequences of ``lengths`` tokens, each
    sequence its own document (document index ``0..n``)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    item = np.dtype(dtype).itemsize
    pointers = np.zeros(n, dtype="<i8")
    if n > 1:
        np.cumsum(lengths[:-1] * item, out=pointers[1:])
    doc_idx = np.arange(n + 1, dtype="<i8")
    header = IDX_MAGIC + struct.pack("<Q", IDX_VERSION) + struct.pack("<B", DTYPE_CODES[dtype])
    header += struct.pack("<Q", n) + struct.pack("<Q", n + 1)
    return b"".join([header, lengths.astype("<i4").tobytes(), pointers.tobytes(), doc_idx.tobytes()])


@dataclass
class IdxContents:
    dtype_code: int
    lengths: np.ndarray
    pointers: np.ndarray
    doc_idx: np.ndarray


def read_idx(path: Path) -> IdxContents:
    """Parse an ``MMIDIDX`` v1 file; raises ``ValueError`` saying what is malformed."""
    data = Path(path).read_bytes()
    head = len(IDX_MAGIC) + 8 + 1 + 8 + 8
    if len(data) < head:
        raise ValueError(f"index is {len(data)} bytes, shorter than the {head}-byte header")
    if data[: len(IDX_MAGIC)] != IDX_MAGIC:
        raise ValueError(f"bad magic {data[:len(IDX_MAGIC)]!r}, expected {IDX_MAGIC!r}")
    off = len(IDX_MAGIC)
    (version,) = struct.unpack_from("<Q", data, off)
    (code,) = struct.unpack_from("<B", data, off + 8)
    (n_seq,) = struct.unpack_from("<Q", data, off + 9)
    (n_doc,) = struct.unpack_from("<Q", data, off + 17)
    if version != IDX_VERSION:
        raise ValueError(f"version {version}, expected {IDX_VERSION}")
    need = head + n_seq * 4 + n_seq * 8 + n_doc * 8
    if len(data) != need:
        raise ValueError(f"index is {len(data)} bytes, header ({n_seq} sequences, {n_doc} document entries) implies {need}")
    off = head
    lengths = np.frombuffer(data, dtype="<i4", count=n_seq, offset=off)
    off += n_seq * 4
    pointers = np.frombuffer(data, dtype="<i8", count=n_seq, offset=off)
    off += n_seq * 8
    doc_idx = np.frombuffer(data, dtype="<i8", count=n_doc, offset=off)
    return IdxContents(dtype_code=code, lengths=lengths, pointers=pointers, doc_idx=doc_idx)


def check_shard(
    folder: Path, rec: Mapping[str, Any], *, dtype: str, eos_id: int, vocab_size: int,
    bin_path: Path | None = None, idx_path: Path | None = None,
) -> list[str]:
    """Every check a shard must pass, from its files and its manifest record ``rec``.
    Returns problems as ``"<name>: <what differs>"``; empty means good."""
    name = rec.get("name", "?")
    bin_path = bin_path or folder / rec["bin"]
    idx_path = idx_path or folder / rec["idx"]
    problems: list[str] = []
    for p, what in ((bin_path, "bin"), (idx_path, "idx")):
        if not p.is_file():
            problems.append(f"{name}: {what} file {p.name} is missing")
    if problems:
        return problems
    item = np.dtype(dtype).itemsize
    tokens = int(rec["tokens"])
    bin_size = bin_path.stat().st_size
    if bin_size != rec.get("bin_bytes", tokens * item):
        problems.append(f"{name}: .bin is {bin_size} bytes, manifest says bin_bytes={rec.get('bin_bytes')}")
    if bin_size != tokens * item:
        problems.append(f"{name}: .bin is {bin_size} bytes, {tokens} {dtype} tokens need {tokens * item}")
    # content hash, and token ids within the vocabulary, in one streaming pass
    h = xxhash.xxh3_128()
    lo, hi = None, None
    with open(bin_path, "rb") as f:
        carry = b""
        while chunk := f.read(_READ_CHUNK):
            h.update(chunk)
            buf = carry + chunk
            usable = len(buf) - len(buf) % item
            if usable:
                arr = np.frombuffer(buf[:usable], dtype=np.dtype(dtype).newbyteorder("<"))
                cmin, cmax = int(arr.min()), int(arr.max())
                lo = cmin if lo is None else min(lo, cmin)
                hi = cmax if hi is None else max(hi, cmax)
            carry = buf[usable:]
    got = f"{HASH_ALGO}:{h.hexdigest()}"
    if got != rec.get("bin_hash"):
        problems.append(f"{name}: .bin hash is {got}, manifest says {rec.get('bin_hash')}")
    if lo is not None and (lo < 0 or hi >= vocab_size):
        problems.append(f"{name}: .bin holds token ids in [{lo}, {hi}], outside the vocabulary 0..{vocab_size - 1}")
    idx_hash, _ = _hash_file(idx_path)
    if idx_hash != rec.get("idx_hash"):
        problems.append(f"{name}: .idx hash is {idx_hash}, manifest says {rec.get('idx_hash')}")
    try:
        idx = read_idx(idx_path)
    except ValueError as e:
        problems.append(f"{name}: .idx is malformed: {e}")
        return problems
    if CODE_DTYPES.get(idx.dtype_code) != dtype:
        problems.append(f"{name}: .idx dtype code {idx.dtype_code} is not {dtype} (code {DTYPE_CODES[dtype]})")
    lengths = idx.lengths.astype(np.int64)
    n = len(lengths)
    if int(lengths.sum()) != tokens:
        problems.append(f"{name}: .idx sequence lengths sum to {int(lengths.sum())}, manifest says {tokens} tokens")
    if int(lengths.sum()) * item != bin_size:
        problems.append(f"{name}: .idx sequence lengths cover {int(lengths.sum()) * item} bytes, .bin has {bin_size}")
    if n and int(lengths.min()) < 1:
        problems.append(f"{name}: .idx has a sequence of length {int(lengths.min())}")
    expect_ptr = np.zeros(n, dtype=np.int64)
    if n > 1:
        np.cumsum(lengths[:-1] * item, out=expect_ptr[1:])
    if not np.array_equal(idx.pointers, expect_ptr):
        bad = int(np.flatnonzero(idx.pointers != expect_ptr)[0])
        problems.append(f"{name}: .idx pointer {bad} is {int(idx.pointers[bad])}, sequence lengths imply {int(expect_ptr[bad])}")
    if not np.array_equal(idx.doc_idx, np.arange(n + 1)):
        problems.append(f"{name}: .idx document index is not 0..{n} (one document per sequence)")
    continued = bool(rec.get("first_doc_continued"))
    split = bool(rec.get("last_doc_split"))
    if n != int(rec.get("documents", -1)) + int(continued):
        problems.append(
            f"{name}: .idx has {n} sequences, manifest says {rec.get('documents')} documents"
            f"{' + 1 continued' if continued else ''}"
        )
    # EOS closes every sequence that ends a document (all but a split last one)
    if n and bin_size == tokens * item:
        ends = np.cumsum(lengths) - 1
        if split:
            ends = ends[:-1]
        if len(ends):
            mm = np.memmap(bin_path, dtype=np.dtype(dtype).newbyteorder("<"), mode="r")
            at = np.asarray(mm[ends])
            del mm
            wrong = np.flatnonzero(at != eos_id)
            if len(wrong):
                problems.append(
                    f"{name}: {len(wrong)} document(s) do not end with EOS {eos_id} "
                    f"(first: sequence {int(wrong[0])} ends with {int(at[wrong[0]])})"
                )
    return problems


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
        seed: int, lineage: Mapping[str, Any],
    ) -> None:
        self.folder = Path(folder)
        self.source = source
        self.info = tokenizer_info
        self.shard_tokens = shard_tokens
        self.seed = seed
        self.lineage = dict(lineage)
        self.dtype = shard_dtype(tokenizer_info.vocab_size)
        self._np_dtype = np.dtype(self.dtype).newbyteorder("<")
        self._records: list[dict[str, Any]] = []
        self._open: _OpenShard | None = None
        self._next_continued = False
        self._docs = 0
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
        # the stream: every document followed by EOS
        ends = np.cumsum(lengths)  # positions (in flat) after each document
        stream = np.insert(flat.astype(self._np_dtype, copy=False), ends, self.info.eos_id).astype(self._np_dtype, copy=False)
        doc_ends = ends + np.arange(1, m + 1)  # positions (in stream) after each EOS
        self._docs += m
        L = len(stream)
        i = 0
        while i < L:
            sh = self._open or self._open_shard()
            j = min(L, i + self.shard_tokens - sh.tokens)
            chunk = stream[i:j]
            sh.fh.write(memoryview(chunk).cast("B"))
            sh.hasher.update(chunk)
            # sequences of this chunk: cut after every document ending in (i, j], and at j
            a, b = np.searchsorted(doc_ends, [i, j], side="right")
            cuts = np.concatenate(([i], doc_ends[a:b]))
            ends_on_doc = b > a and int(doc_ends[b - 1]) == j
            if not ends_on_doc:  # only at a full shard: the document goes on in the next one
                cuts = np.append(cuts, j)
            sh.pieces.append(np.diff(cuts).astype(np.int64))
            sh.tokens += j - i
            if sh.tokens == self.shard_tokens:
                sh.last_doc_split = not ends_on_doc
                self._close_shard()
                self._next_continued = sh.last_doc_split
            i = j

    # -- shards --------------------------------------------------------------------
    def _open_shard(self) -> _OpenShard:
        index = len(self._records)
        name = shard_name(self.source, index)
        tmp = self.folder / f".{name}.bin.{self._token}.tmp"
        fh = open(tmp, "wb")
        self._open = _OpenShard(index=index, name=name, bin_tmp=tmp, fh=fh, hasher=xxhash.xxh3_128(),
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
        if len(lengths) and int(lengths.max()) > 2**31 - 1:
            raise AssertionError("sequence longer than int32")
        idx_tmp = self.folder / f".{sh.name}.idx.{self._token}.tmp"
        idx_bytes = build_idx(lengths, self.dtype)
        with open(idx_tmp, "wb") as f:
            f.write(idx_bytes)
            f.flush()
            os.fsync(f.fileno())
        rec = {
            "name": sh.name,
            "bin": f"{sh.name}.bin",
            "idx": f"{sh.name}.idx",
            "tokens": sh.tokens,
            "documents": len(lengths) - int(sh.first_doc_continued),
            "bin_bytes": sh.tokens * self._np_dtype.itemsize,
            "first_doc_continued": sh.first_doc_continued,
            "last_doc_split": sh.last_doc_split,
            "bin_hash": f"{HASH_ALGO}:{sh.hasher.hexdigest()}",
            "idx_hash": f"{HASH_ALGO}:{xxhash.xxh3_128_hexdigest(idx_bytes)}",
        }
        problems = check_shard(self.folder, rec, dtype=self.dtype, eos_id=self.info.eos_id,
                               vocab_size=self.info.vocab_size, bin_path=sh.bin_tmp, idx_path=idx_tmp)
        if problems:
            sh.bin_tmp.unlink(missing_ok=True)
            idx_tmp.unlink(missing_ok=True)
            raise JobError(f"source {self.source}: shard failed verification after writing: " + "; ".join(problems))
        try:
            _commit(sh.bin_tmp, self.folder / rec["bin"], rec["bin_hash"])
            _commit(idx_tmp, self.folder / rec["idx"], rec["idx_hash"])
        finally:
            sh.bin_tmp.unlink(missing_ok=True)
            idx_tmp.unlink(missing_ok=True)
        self._records.append(rec)
        log.debug("shard %s: %d tokens, %d documents", sh.name, sh.tokens, rec["documents"])

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
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "source": self.source,
            "dtype": self.dtype,
            "shard_tokens": self.shard_tokens,
            "tokenizer": self.info.to_manifest(),
            "order": {"key": "xxh3_64(id utf-8, seed), then id", "seed": self.seed},
            "shards": self._records,
            "totals": {
                "tokens": sum(r["tokens"] for r in self._records),
                "documents": self._docs,
                "shards": len(self._records),
            },
            "lineage": self.lineage,
        }
        data = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        path = self.folder / MANIFEST
        tmp = self.folder / f".{MANIFEST}.{self._token}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        _commit(tmp, path, f"{HASH_ALGO}:{xxhash.xxh3_128_hexdigest(data)}")
        _fsync_dir(self.folder)
        log.info("source %s: %d documents, %d tokens in %d shards -> %s", self.source, self._docs,
                 manifest["totals"]["tokens"], len(self._records), path)
        return path


def _commit(tmp: Path, final: Path, content_hash: str) -> None:
    """Rename ``tmp`` to ``final`` unless ``final`` exists: identical bytes are kept (a
    re-run), different bytes are an error (names are write-once)."""
    if final.exists():
        have, _ = _hash_file(final)
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

    ``shard_tokens``: tokens per shard (2^27 = 256 MiB of uint16 by default; the last
    shard is shorter). ``seed``: the document-order seed. ``batch_rows``: documents per
    batch streamed to the writer (its memory bound).
    """

    shard_tokens: int = 1 << 27
    seed: int = 0
    batch_rows: int = 1024

    def __post_init__(self) -> None:
        if not 1 <= self.shard_tokens <= 2**31 - 1:
            raise SpecError(f"shards.shard_tokens must be in 1..{2**31 - 1} (Megatron sequence lengths are "
                            f"int32), got {self.shard_tokens}")
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
) -> dict[str, str]:
    """Write every source's shards and manifest under ``out_dir/<source>/``.

    ``ds``: a Ray Dataset, or an iterable of ``pyarrow.Table``, with columns ``id``,
    ``source``, ``tokens`` (list of ints, EOS excluded) and optionally
    ``_reject_reason`` (rows with a reason are skipped). A Ray Dataset is sorted by Ray
    and streamed to this process one batch (``batch_rows`` documents) at a time, so the
    caller's memory does not grow with the corpus; tables are sorted in memory.

    ``sources`` lists sources that must get a manifest even when none of their
    documents survived (an empty manifest with zero shards). ``lineage`` (job hash,
    inputs) is copied into every manifest as is.

    Returns ``{source: manifest path}``. Raises :class:`JobError` when documents are not
    in order after sorting, when the same id carries different tokens, when token ids
    fall outside the vocabulary, or when an existing shard file differs.
    """
    if not 1 <= shard_tokens <= 2**31 - 1:
        raise SpecError(f"shard_tokens must be in 1..{2**31 - 1} (Megatron sequence lengths are int32), got {shard_tokens}")
    if not 0 <= seed < 2**64:
        raise SpecError(f"seed must be in 0..2**64-1, got {seed}")
    if batch_rows < 1:
        raise SpecError(f"batch_rows must be >= 1, got {batch_rows}")
    try:
        lineage = json.loads(json.dumps(dict(lineage)))
    except (TypeError, ValueError) as e:
        raise SpecError(f"lineage must be JSON-serialisable: {e}") from None
    for s in sources:
        _check_source_name(s)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, str] = {}
    writer: SourceShardWriter | None = None
    prev: tuple[str, int, str] | None = None  # (source, key, id) of the last document written
    prev_tokens: np.ndarray | None = None

    def make_writer(src: str) -> SourceShardWriter:
        _check_source_name(src)
        if src in result:
            raise JobError(f"write_shards: documents of source {src!r} arrived after the source was finished; "
                           "the input was not sorted")
        return SourceShardWriter(out / src, src, tokenizer_info=tokenizer_info, shard_tokens=shard_tokens,
                                 seed=seed, lineage=lineage)

    try:
        for batch in _sorted_batches(ds, seed, batch_rows):
            if batch.num_rows == 0:
                continue
            srcs = batch.column("source").to_pylist()
            keys = batch.column(ORDER_COLUMN).to_numpy(zero_copy_only=False)
            ids = batch.column("id").to_pylist()
            flat, lengths = _flat_tokens(batch.column("tokens"))
            offsets = np.concatenate(([0], np.cumsum(lengths)))
            _check_order(srcs, keys, ids, flat, offsets, prev, prev_tokens)
            # split the batch into runs of one source
            start = 0
            n = len(srcs)
            while start < n:
                src = srcs[start]
                stop = start
                while stop < n and srcs[stop] == src:
                    stop += 1
                if writer is None or writer.source != src:
                    if writer is not None:
                        result[writer.source] = str(writer.finish())
                    writer = make_writer(src)
                writer.add(flat[offsets[start]:offsets[stop]], lengths[start:stop])
                start = stop
            prev = (srcs[-1], int(keys[-1]), ids[-1])
            prev_tokens = flat[offsets[-2]:offsets[-1]].copy()
        if writer is not None:
            result[writer.source] = str(writer.finish())
            writer = None
    finally:
        if writer is not None:
            writer.abort()
    for s in sorted(set(sources) - set(result)):
        result[s] = str(make_writer(s).finish())
    return dict(sorted(result.items()))


def _check_source_name(src: str) -> None:
    if not isinstance(src, str) or not _SOURCE_NAME.match(src):
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


def load_manifest(path: Path) -> dict[str, Any]:
    """Parse a source manifest; :class:`CorruptInputError` if it is not one we can read."""
    try:
        m = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise CorruptInputError(str(path), "unreadable manifest", str(e)) from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise CorruptInputError(str(path), f"not a {FORMAT} manifest")
    if m.get("version") != VERSION:
        raise CorruptInputError(str(path), f"manifest version {m.get('version')}, this datapipe reads {VERSION}")
    return m


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
            m = load_manifest(mp)
        except CorruptInputError as e:
            problems.append(str(e))
            continue
        problems.extend(f"{m.get('source', mp.parent.name)}/{p}" for p in _verify_manifest(mp.parent, m))
    return problems


def _verify_manifest(folder: Path, m: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    try:
        tok = m["tokenizer"]
        vocab, eos = int(tok["vocab_size"]), int(tok["eos_id"])
        dtype, shard_tokens, shards = m["dtype"], int(m["shard_tokens"]), list(m["shards"])
        source = m["source"]
    except (KeyError, TypeError, ValueError) as e:
        return [f"{MANIFEST}: missing or malformed field {e}"]
    if dtype not in DTYPE_CODES:
        return [f"{MANIFEST}: dtype {dtype!r} is not one of {sorted(DTYPE_CODES)}"]
    if dtype != shard_dtype(vocab):
        problems.append(f"{MANIFEST}: dtype {dtype} but a vocabulary of {vocab} needs {shard_dtype(vocab)}")
    listed: set[str] = set()
    for k, rec in enumerate(shards):
        name = rec.get("name", f"#{k}")
        if name != shard_name(source, k):
            problems.append(f"{name}: expected shard {k} to be named {shard_name(source, k)}")
        listed.update({rec.get("bin", ""), rec.get("idx", "")})
        last = k == len(shards) - 1
        if not last and rec.get("tokens") != shard_tokens:
            problems.append(f"{name}: {rec.get('tokens')} tokens, every shard but the last must hold {shard_tokens}")
        if last and not 0 < int(rec.get("tokens", 0)) <= shard_tokens:
            problems.append(f"{name}: last shard holds {rec.get('tokens')} tokens, expected 1..{shard_tokens}")
        prev_split = bool(shards[k - 1].get("last_doc_split")) if k else False
        if bool(rec.get("first_doc_continued")) != prev_split:
            problems.append(f"{name}: first_doc_continued={rec.get('first_doc_continued')} but the previous shard's "
                            f"last_doc_split={prev_split}")
        if last and rec.get("last_doc_split"):
            problems.append(f"{name}: the last shard cannot end inside a document")
        try:
            problems.extend(check_shard(folder, rec, dtype=dtype, eos_id=eos, vocab_size=vocab))
        except (KeyError, TypeError, ValueError) as e:
            problems.append(f"{name}: malformed shard record ({e})")
    totals = m.get("totals", {})
    t_tokens = sum(int(r.get("tokens", 0)) for r in shards)
    t_docs = sum(int(r.get("documents", 0)) for r in shards)
    for key, have in (("tokens", t_tokens), ("documents", t_docs), ("shards", len(shards))):
        if totals.get(key) != have:
            problems.append(f"{MANIFEST}: totals.{key} is {totals.get(key)}, the shards add up to {have}")
    for f in sorted(folder.iterdir()):
        if f.name == MANIFEST:
            continue
        if f.name.endswith(".tmp"):
            problems.append(f"{f.name}: leftover temporary file (an interrupted write)")
        elif f.suffix in (".bin", ".idx") and f.name not in listed:
            problems.append(f"{f.name}: shard file not listed in the manifest")
    return problems


def _doc_lengths(folder: Path, m: dict[str, Any]) -> np.ndarray:
    """Length (EOS included) of every document of a source, split documents rejoined."""
    out: list[np.ndarray] = []
    carry = 0
    for rec in m["shards"]:
        lengths = read_idx(folder / rec["idx"]).lengths.astype(np.int64)
        if rec.get("first_doc_continued") and len(lengths):
            lengths = lengths.copy()
            lengths[0] += carry
            carry = 0
        if rec.get("last_doc_split") and len(lengths):
            carry = int(lengths[-1])
            lengths = lengths[:-1]
        out.append(lengths)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def _first_doc(folder: Path, m: dict[str, Any], limit: int) -> np.ndarray:
    dtype = np.dtype(m["dtype"]).newbyteorder("<")
    for rec in m["shards"]:
        lengths = read_idx(folder / rec["idx"]).lengths
        if len(lengths):
            n = min(int(lengths[0]), limit)
            return np.fromfile(folder / rec["bin"], dtype=dtype, count=n).astype(np.int64)
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
        m = load_manifest(mp)
        folder = mp.parent
        try:
            lengths = _doc_lengths(folder, m)
        except (OSError, ValueError, KeyError) as e:
            raise CorruptInputError(str(mp), "shards unreadable; run `datapipe shards verify`", str(e)) from None
        hist: dict[str, int] = {}
        if len(lengths):
            b = np.floor(np.log2(lengths)).astype(np.int64)
            for k, c in zip(*np.unique(b, return_counts=True)):
                hist[f"{2**int(k)}-{2**(int(k) + 1) - 1}"] = int(c)
        first = _first_doc(folder, m, excerpt_tokens)
        excerpt, note = _decode(first, m, tokenizer)
        report["sources"][m["source"]] = {
            "manifest": str(mp),
            "dtype": m["dtype"],
            "shards": m["totals"]["shards"],
            "documents": m["totals"]["documents"],
            "tokens": m["totals"]["tokens"],
            "split_documents": sum(1 for r in m["shards"] if r.get("last_doc_split")),
            "mean_doc_tokens": float(lengths.mean()) if len(lengths) else 0.0,
            "max_doc_tokens": int(lengths.max()) if len(lengths) else 0,
            "doc_length_histogram": hist,
            "tokenizer": m["tokenizer"].get("fingerprint"),
            "excerpt_ids": first.tolist(),
            "excerpt": excerpt,
            "excerpt_note": note,
        }
    return report


def _decode(ids: np.ndarray, m: dict[str, Any], tokenizer: str | None) -> tuple[str | None, str]:
    from datapipe.tokenizer import fingerprint, load_tokenizer

    path = tokenizer or m["tokenizer"].get("path")
    if not path or not Path(path).exists():
        return None, f"tokenizer {path!r} not found; showing ids only (pass --tokenizer)"
    try:
        tok = load_tokenizer(path)
    except SpecError as e:
        return None, str(e)
    note = ""
    if fingerprint(tok) != m["tokenizer"].get("fingerprint"):
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
