"""The one owner of the token-shard format: Megatron-LM ``MMIDIDX`` v1 ``.bin``/``.idx``
pairs and the datapipe source manifest (``manifest.json``) that lists them.

Byte layout: ``docs/formats.md``; why: ``docs/shards.md``. The ``tokenize`` stage's
writer (``stages/tokenize/writer.py``), the verifier (:mod:`datapipe.shards`) and the
trainer's reader (:mod:`trainer_bridge.shards`) all use this module, so the magic bytes, dtype codes, manifest schema and the checks a shard must
pass are defined once. Everything here is pure file I/O (no Ray, no torch).

Checks come in two costs:

* :func:`check_structure`: O(1) reads per shard (file sizes, the ``.idx`` header, its last
  pointer and length, the manifest's counts). Cheap enough to run on every open.
* :func:`check_content`: reads every byte (content hashes, every ``.idx`` entry against
  the ``.bin``, EOS at every document end, token ids inside the vocabulary).

Every problem found with a manifest or a shard is a :class:`ShardFormatError` (or, from
the ``check_*`` functions, a message) naming the manifest or the shard.
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import xxhash

from datapipe.errors import CorruptInputError

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "datapipe-shards"
MANIFEST_VERSION = 1
IDX_MAGIC = b"MMIDIDX\x00\x00"
IDX_VERSION = 1
#: magic, version, dtype code, sequence count, document-index length
IDX_HEADER = struct.Struct("<9sQBQQ")
#: Megatron-LM's dtype codes (``DType`` in ``indexed_dataset.py``) for the dtypes we write
DTYPE_CODES = {"uint16": 8, "int32": 4}
CODE_DTYPES = {v: k for k, v in DTYPE_CODES.items()}
NP_DTYPES = {"uint16": np.dtype("<u2"), "int32": np.dtype("<i4")}
UINT16_MAX_VOCAB = 65535
MAX_SEQUENCE_TOKENS = 2**31 - 1  # .idx lengths are int32
HASH_ALGO = "xxh3-128"
#: a shard set's name: a source's, or ``<source>@q<level>`` for one quality level of a
#: source (``tokenize`` with ``by_level``); ``@`` is in no other name the writer makes
SOURCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(@q[0-9]+)?$")
LEVEL_SEP = "@q"


def level_set(source: str, level: int) -> str:
    """The shard set of ``source``'s documents at quality ``level``: ``web@q4``."""
    return f"{source}{LEVEL_SEP}{int(level)}"


_CHUNK = 1 << 24


class ShardFormatError(CorruptInputError):
    """A manifest or shard is not what the format promises; ``path`` names the file."""


# ---------------------------------------------------------------------------------------
# names, dtypes, hashes


def shard_dtype(vocab_size: int) -> str:
    """``"uint16"`` when every id fits below 65535, else ``"int32"``."""
    return "uint16" if vocab_size <= UINT16_MAX_VOCAB else "int32"


def shard_name(source: str, index: int) -> str:
    return f"{source}-{index:05d}"


def new_hasher() -> Any:
    """A streaming hasher of :data:`HASH_ALGO`; finish it with :func:`digest`."""
    return xxhash.xxh3_128()


def digest(hasher: Any) -> str:
    return f"{HASH_ALGO}:{hasher.hexdigest()}"


def hash_bytes(data: bytes) -> str:
    return f"{HASH_ALGO}:{xxhash.xxh3_128_hexdigest(data)}"


def hash_file(path: str | os.PathLike[str]) -> str:
    """``xxh3-128:<hex>`` of a file's bytes, streamed through one reused buffer."""
    h = new_hasher()
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            h.update(view[:n])
    return digest(h)


# ---------------------------------------------------------------------------------------
# the .idx


def build_idx(lengths: np.ndarray, dtype: str) -> bytes:
    """``MMIDIDX`` v1 bytes for sequences of ``lengths`` tokens, each its own document."""
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    pointers = np.zeros(n, dtype="<i8")
    if n > 1:
        np.cumsum(lengths[:-1] * NP_DTYPES[dtype].itemsize, out=pointers[1:])
    header = IDX_HEADER.pack(IDX_MAGIC, IDX_VERSION, DTYPE_CODES[dtype], n, n + 1)
    return b"".join([header, lengths.astype("<i4").tobytes(), pointers.tobytes(),
                     np.arange(n + 1, dtype="<i8").tobytes()])


@dataclass(kw_only=True, frozen=True)
class IdxHeader:
    dtype_code: int
    sequences: int
    doc_entries: int

    @property
    def size(self) -> int:
        """The file size this header implies."""
        return IDX_HEADER.size + self.sequences * 12 + self.doc_entries * 8


@dataclass(kw_only=True, frozen=True)
class IdxContents:
    dtype_code: int
    lengths: np.ndarray
    pointers: np.ndarray
    doc_idx: np.ndarray


def parse_idx_header(head: bytes) -> IdxHeader:
    """The fixed header; ``ValueError`` saying what is malformed."""
    if len(head) < IDX_HEADER.size:
        raise ValueError(f"index is {len(head)} bytes, shorter than the {IDX_HEADER.size}-byte header")
    magic, version, code, n_seq, n_doc = IDX_HEADER.unpack_from(head)
    if magic != IDX_MAGIC:
        raise ValueError(f"bad magic {magic!r}, expected {IDX_MAGIC!r}")
    if version != IDX_VERSION:
        raise ValueError(f"version {version}, expected {IDX_VERSION}")
    return IdxHeader(dtype_code=code, sequences=n_seq, doc_entries=n_doc)


def read_idx(path: str | os.PathLike[str]) -> IdxContents:
    """Parse a whole ``MMIDIDX`` v1 file; ``ValueError`` saying what is malformed."""
    data = Path(path).read_bytes()
    h = parse_idx_header(data[:IDX_HEADER.size])
    if len(data) != h.size:
        raise ValueError(f"index is {len(data)} bytes, header ({h.sequences} sequences, {h.doc_entries} "
                         f"document entries) implies {h.size}")
    off = IDX_HEADER.size
    lengths = np.frombuffer(data, dtype="<i4", count=h.sequences, offset=off)
    off += h.sequences * 4
    pointers = np.frombuffer(data, dtype="<i8", count=h.sequences, offset=off)
    off += h.sequences * 8
    doc_idx = np.frombuffer(data, dtype="<i8", count=h.doc_entries, offset=off)
    return IdxContents(dtype_code=h.dtype_code, lengths=lengths, pointers=pointers, doc_idx=doc_idx)


# ---------------------------------------------------------------------------------------
# the manifest


@dataclass(kw_only=True, frozen=True)
class ShardRecord:
    """One shard as a manifest lists it; ``bin_path``/``idx_path`` are resolved against the
    manifest's folder (the writer points them at its temporary files while checking)."""

    name: str
    bin_path: Path
    idx_path: Path
    tokens: int
    documents: int
    bin_bytes: int
    first_doc_continued: bool
    last_doc_split: bool
    bin_hash: str
    idx_hash: str

    @property
    def sequences(self) -> int:
        """``.idx`` sequences: every document starting here, plus a continued one."""
        return self.documents + int(self.first_doc_continued)

    def to_json(self, folder: Path) -> dict[str, Any]:
        """The manifest entry, file paths relative to ``folder`` (the manifest's)."""
        return {"name": self.name, "bin": self.bin_path.relative_to(folder).as_posix(),
                "idx": self.idx_path.relative_to(folder).as_posix(), "tokens": self.tokens,
                "documents": self.documents, "bin_bytes": self.bin_bytes,
                "first_doc_continued": self.first_doc_continued, "last_doc_split": self.last_doc_split,
                "bin_hash": self.bin_hash, "idx_hash": self.idx_hash}


@dataclass(kw_only=True, frozen=True)
class SourceManifest:
    """A parsed and schema-checked ``manifest.json``: what the writer promises about one source.

    ``span_documents`` is false when every document lies inside one shard (the default
    layout); manifests written before the field existed are spanning ones.
    """

    path: Path
    source: str
    dtype: str
    shard_tokens: int
    span_documents: bool
    tokenizer: dict[str, Any]
    shards: tuple[ShardRecord, ...]
    total_tokens: int
    total_documents: int
    raw: dict[str, Any]

    @property
    def eos_id(self) -> int:
        return int(self.tokenizer["eos_id"])

    @property
    def vocab_size(self) -> int:
        return int(self.tokenizer["vocab_size"])

    @property
    def fingerprint(self) -> str:
        return str(self.tokenizer["fingerprint"])

    def content_key(self) -> dict[str, Any]:
        """What identifies this source's token stream: per shard its name, counts and both
        content hashes. Keyed by content, not path: moving shards keeps it, rewriting them
        changes it."""
        return {"source": self.source, "dtype": self.dtype, "tokenizer": self.fingerprint,
                "shards": [[s.name, s.tokens, s.documents, s.bin_hash, s.idx_hash] for s in self.shards]}


def make_manifest(
    *, folder: Path, source: str, dtype: str, shard_tokens: int, span_documents: bool, tokenizer: Mapping[str, Any],
    order: Mapping[str, Any], shards: Sequence[ShardRecord | Mapping[str, Any]], lineage: Mapping[str, Any],
) -> bytes:
    """The bytes of ``folder/manifest.json`` (deterministic: no timestamps, fixed key order).
    ``shards``: records, or entries already in manifest form (merged split manifests)."""
    records = [s.to_json(folder) if isinstance(s, ShardRecord) else dict(s) for s in shards]
    doc = {
        "format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "source": source, "dtype": dtype,
        "shard_tokens": shard_tokens, "span_documents": span_documents, "tokenizer": dict(tokenizer),
        "order": dict(order), "shards": records,
        "totals": {"tokens": sum(r["tokens"] for r in records), "documents": sum(r["documents"] for r in records),
                   "shards": len(records)},
        "lineage": dict(lineage),
    }
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _field(obj: Mapping[str, Any], key: str, where: str, path: Path, kind: type | tuple[type, ...]) -> Any:
    if key not in obj:
        raise ShardFormatError(str(path), f"{where}missing field {key!r}", "see docs/formats.md")
    value = obj[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = "/".join(k.__name__ for k in kinds)
        raise ShardFormatError(str(path), f"{where}field {key!r} is {value!r}, expected {names}")
    return value


def _file_name(obj: Mapping[str, Any], key: str, where: str, path: Path) -> str:
    """A relative path inside the manifest's folder (no absolute paths, no ``..``)."""
    name = _field(obj, key, where, path, str)
    parts = name.split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in name:
        raise ShardFormatError(str(path), f"{where}{key} {name!r} must be a relative path inside the manifest's "
                               "folder")
    return name


def load_manifest(path: str | os.PathLike[str]) -> SourceManifest:
    """Parse ``manifest.json`` and check its schema and its own counts (shard names,
    ``bin_bytes`` against ``tokens``, totals against the shards). Reads no shard file."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ShardFormatError(str(path), "source manifest not found",
                               "run the job that writes these shards or fix the path") from None
    except (OSError, ValueError) as e:
        raise ShardFormatError(str(path), "unreadable source manifest", str(e)) from None
    if not isinstance(raw, dict) or raw.get("format") != MANIFEST_FORMAT:
        raise ShardFormatError(str(path), f"not a {MANIFEST_FORMAT} manifest")
    if raw.get("version") != MANIFEST_VERSION:
        raise ShardFormatError(str(path), f"manifest version {raw.get('version')!r}, this datapipe reads "
                               f"{MANIFEST_VERSION}")
    source = _field(raw, "source", "", path, str)
    if not SOURCE_NAME.match(source):
        raise ShardFormatError(str(path), f"source {source!r} is not a valid source name")
    dtype = _field(raw, "dtype", "", path, str)
    if dtype not in DTYPE_CODES:
        raise ShardFormatError(str(path), f"dtype {dtype!r} is not one of {sorted(DTYPE_CODES)}")
    shard_tokens = _field(raw, "shard_tokens", "", path, int)
    tok = _field(raw, "tokenizer", "", path, dict)
    _field(tok, "fingerprint", "tokenizer: ", path, str)
    vocab = _field(tok, "vocab_size", "tokenizer: ", path, int)
    _field(tok, "eos_id", "tokenizer: ", path, int)
    if dtype == "uint16" and vocab > UINT16_MAX_VOCAB:
        raise ShardFormatError(str(path), f"dtype uint16 cannot hold a vocabulary of {vocab} ids; it needs int32")
    shards: list[ShardRecord] = []
    seen: set[Any] = set()
    for k, s in enumerate(_field(raw, "shards", "", path, list)):
        shards.append(_shard_record(s, f"shards[{k}]: ", path, dtype, seen))
    totals = _field(raw, "totals", "", path, dict)
    have = {"tokens": sum(s.tokens for s in shards), "documents": sum(s.documents for s in shards),
            "shards": len(shards)}
    for key, n in have.items():
        if totals.get(key) != n:
            raise ShardFormatError(str(path), f"totals.{key} is {totals.get(key)!r}, the shards add up to {n}")
    return SourceManifest(path=path, source=source, dtype=dtype, shard_tokens=shard_tokens,
                          span_documents=bool(raw.get("span_documents", True)), tokenizer=dict(tok),
                          shards=tuple(shards), total_tokens=have["tokens"], total_documents=have["documents"],
                          raw=raw)


def _shard_record(s: Any, w: str, path: Path, dtype: str, seen: set[Any]) -> ShardRecord:
    """One entry of a manifest's ``shards`` (``w`` names it): name and files not ``seen``
    in an earlier entry (added to it), counts agreeing with each other for ``dtype``."""
    if not isinstance(s, dict):
        raise ShardFormatError(str(path), f"{w}is {s!r}, expected an object")
    rec = ShardRecord(
        name=_field(s, "name", w, path, str), bin_path=path.parent / _file_name(s, "bin", w, path),
        idx_path=path.parent / _file_name(s, "idx", w, path), tokens=_field(s, "tokens", w, path, int),
        documents=_field(s, "documents", w, path, int), bin_bytes=_field(s, "bin_bytes", w, path, int),
        first_doc_continued=bool(s.get("first_doc_continued", False)),
        last_doc_split=bool(s.get("last_doc_split", False)),
        bin_hash=str(s.get("bin_hash", "")), idx_hash=str(s.get("idx_hash", "")),
    )
    if not rec.name or rec.name in seen or rec.bin_path in seen or rec.idx_path in seen:
        raise ShardFormatError(str(path), f"{w}shard {rec.name!r}: its name or files are empty or listed twice")
    seen.update((rec.name, rec.bin_path, rec.idx_path))
    item = NP_DTYPES[dtype].itemsize
    if rec.tokens < 0 or rec.documents < 0 or rec.bin_bytes != rec.tokens * item:
        raise ShardFormatError(str(path), f"shard {rec.name}: tokens {rec.tokens}, documents {rec.documents}, "
                               f"bin_bytes {rec.bin_bytes} do not agree ({dtype} is {item} bytes a token)")
    return rec


def check_layout(m: SourceManifest) -> list[str]:
    """The shard sequence's own rules (no file read): sizes for the layout, split flags
    matching across neighbours. Problems as ``"<shard>: <what>"``."""
    problems: list[str] = []
    n = len(m.shards)
    for k, rec in enumerate(m.shards):
        last = k == n - 1
        if m.span_documents:  # a document goes on in the next shard only out of a full one
            if rec.last_doc_split and rec.tokens != m.shard_tokens:
                problems.append(f"{rec.name}: ends inside a document but holds {rec.tokens} tokens, not {m.shard_tokens}")
            prev_split = m.shards[k - 1].last_doc_split if k else False
            if rec.first_doc_continued != prev_split:
                problems.append(f"{rec.name}: first_doc_continued={rec.first_doc_continued} but the previous "
                                f"shard's last_doc_split={prev_split}")
            if last and rec.last_doc_split:
                problems.append(f"{rec.name}: the last shard cannot end inside a document")
        else:
            if rec.first_doc_continued or rec.last_doc_split:
                problems.append(f"{rec.name}: a document spans shards, but the manifest says span_documents: false")
            if rec.tokens > m.shard_tokens and rec.documents != 1:
                problems.append(f"{rec.name}: {rec.tokens} tokens in {rec.documents} documents exceed shard_tokens "
                                f"{m.shard_tokens} (only a single long document may)")
        if rec.tokens < 1:
            problems.append(f"{rec.name}: holds no tokens")
    return problems


# ---------------------------------------------------------------------------------------
# shard checks


def check_structure(rec: ShardRecord, dtype: str) -> list[str]:
    """Cheap checks of one shard against its record: both files exist, ``.bin`` size,
    ``.idx`` header (magic, version, dtype code), size, sequence count against the
    record's documents, and that its last sequence ends exactly at the end of the
    ``.bin``. O(1) reads."""
    item = NP_DTYPES[dtype].itemsize
    try:
        bin_size = rec.bin_path.stat().st_size
    except OSError:
        return [f"{rec.name}: bin file {rec.bin_path.name} is missing"]
    problems = []
    if bin_size != rec.tokens * item:
        problems.append(f"{rec.name}: .bin is {bin_size} bytes, the manifest's {rec.tokens} {dtype} tokens "
                        f"need {rec.tokens * item}")
    try:
        with open(rec.idx_path, "rb") as f:
            h = parse_idx_header(f.read(IDX_HEADER.size))
            idx_size = os.fstat(f.fileno()).st_size
            if idx_size != h.size:
                return problems + [f"{rec.name}: .idx is {idx_size} bytes, its header ({h.sequences} sequences) "
                                   f"implies {h.size}"]
            last = None
            if h.sequences:
                f.seek(IDX_HEADER.size + (h.sequences - 1) * 4)
                (length,) = struct.unpack("<i", f.read(4))
                f.seek(IDX_HEADER.size + h.sequences * 4 + (h.sequences - 1) * 8)
                (pointer,) = struct.unpack("<q", f.read(8))
                last = pointer + length * item
            f.seek(h.size - 8)
            (doc_end,) = struct.unpack("<q", f.read(8)) if h.doc_entries else (h.sequences,)
    except FileNotFoundError:
        return problems + [f"{rec.name}: idx file {rec.idx_path.name} is missing"]
    except (OSError, ValueError, struct.error) as e:
        return problems + [f"{rec.name}: .idx is malformed: {e}"]
    if CODE_DTYPES.get(h.dtype_code) != dtype:
        problems.append(f"{rec.name}: .idx dtype code {h.dtype_code} is not {dtype} (code {DTYPE_CODES[dtype]})")
    if h.sequences != rec.sequences:
        problems.append(f"{rec.name}: .idx has {h.sequences} sequences, the manifest says {rec.documents} documents"
                        f"{' + 1 continued' if rec.first_doc_continued else ''}")
    if h.doc_entries != h.sequences + 1 or doc_end != h.sequences:
        problems.append(f"{rec.name}: .idx document index does not end at {h.sequences} (one document per sequence)")
    if last is not None and last != bin_size:
        problems.append(f"{rec.name}: .idx's last sequence ends at byte {last}, the .bin has {bin_size}")
    return problems


def check_content(rec: ShardRecord, dtype: str, *, eos_id: int, vocab_size: int) -> list[str]:
    """Every byte: both content hashes, token ids inside the vocabulary, every ``.idx``
    entry against the ``.bin`` (lengths, pointers, document index) and EOS closing every
    document. Assumes :func:`check_structure` passed."""
    problems = _bin_problems(rec, dtype, vocab_size)
    idx_hash = hash_file(rec.idx_path)
    if idx_hash != rec.idx_hash:
        problems.append(f"{rec.name}: .idx hash is {idx_hash}, manifest says {rec.idx_hash or 'nothing'}")
    try:
        idx = read_idx(rec.idx_path)
    except ValueError as e:
        return problems + [f"{rec.name}: .idx is malformed: {e}"]
    problems += _idx_problems(rec, idx, NP_DTYPES[dtype].itemsize)
    if not problems:
        problems += _eos_problems(rec, idx, dtype, eos_id)
    return problems


def _bin_problems(rec: ShardRecord, dtype: str, vocab_size: int) -> list[str]:
    """One streaming read of the ``.bin``: its hash, and its token ids against the vocabulary."""
    np_dtype = NP_DTYPES[dtype]
    item = np_dtype.itemsize
    problems: list[str] = []
    h = new_hasher()
    lo = hi = None
    buf = bytearray(_CHUNK)  # a multiple of both itemsizes
    with open(rec.bin_path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            h.update(memoryview(buf)[:n])
            arr = np.frombuffer(buf, dtype=np_dtype, count=n // item)
            if arr.size:
                lo = int(arr.min()) if lo is None else min(lo, int(arr.min()))
                hi = int(arr.max()) if hi is None else max(hi, int(arr.max()))
    if digest(h) != rec.bin_hash:
        problems.append(f"{rec.name}: .bin hash is {digest(h)}, manifest says {rec.bin_hash or 'nothing'}")
    if lo is not None and (lo < 0 or hi >= vocab_size):
        problems.append(f"{rec.name}: .bin holds token ids in [{lo}, {hi}], outside the vocabulary 0..{vocab_size - 1}")
    return problems


def _idx_problems(rec: ShardRecord, idx: IdxContents, item: int) -> list[str]:
    """The ``.idx`` entries against the record and each other: lengths sum to the tokens,
    none empty, pointers are the running byte offsets, one document per sequence."""
    problems: list[str] = []
    lengths = idx.lengths.astype(np.int64)
    n = len(lengths)
    if int(lengths.sum()) != rec.tokens:
        problems.append(f"{rec.name}: .idx sequence lengths sum to {int(lengths.sum())}, manifest says {rec.tokens} tokens")
    if n and int(lengths.min()) < 1:
        problems.append(f"{rec.name}: .idx has a sequence of length {int(lengths.min())}")
    expect = np.zeros(n, dtype=np.int64)
    if n > 1:
        np.cumsum(lengths[:-1] * item, out=expect[1:])
    if not np.array_equal(idx.pointers, expect):
        bad = int(np.flatnonzero(idx.pointers != expect)[0])
        problems.append(f"{rec.name}: .idx pointer {bad} is {int(idx.pointers[bad])}, sequence lengths imply "
                        f"{int(expect[bad])}")
    if not np.array_equal(idx.doc_idx, np.arange(n + 1)):
        problems.append(f"{rec.name}: .idx document index is not 0..{n} (one document per sequence)")
    return problems


def _eos_problems(rec: ShardRecord, idx: IdxContents, dtype: str, eos_id: int) -> list[str]:
    """EOS at the end of every document (but a document the shard's end cuts)."""
    ends = np.cumsum(idx.lengths.astype(np.int64)) - 1
    if rec.last_doc_split:
        ends = ends[:-1]
    if not len(ends):
        return []
    mm = np.memmap(rec.bin_path, dtype=NP_DTYPES[dtype], mode="r")
    at = np.asarray(mm[ends])
    del mm
    wrong = np.flatnonzero(at != eos_id)
    if len(wrong):
        return [f"{rec.name}: {len(wrong)} document(s) do not end with EOS {eos_id} "
                f"(first: sequence {int(wrong[0])} ends with {int(at[wrong[0]])})"]
    return []


def check_shard(rec: ShardRecord, dtype: str, *, eos_id: int, vocab_size: int) -> list[str]:
    """:func:`check_structure`, then (when that passed) :func:`check_content`."""
    return check_structure(rec, dtype) or check_content(rec, dtype, eos_id=eos_id, vocab_size=vocab_size)
