"""Read a source's token shards through its manifest (format: ``docs/formats.md``).

A *source* is one token stream: its shards' ``.bin`` files concatenated in manifest order.
:class:`TokenStream` memory-maps them and reads any ``[start, start + length)`` range,
across shard boundaries. What it opens it verifies: file sizes (and the ``.idx`` header)
always, because that is cheap and catches truncated or swapped files; content hashes only
on request (``verify_hashes=True``), because that reads every byte.

Memory held is O(shards) (one memory map and one offset per shard), never O(tokens) or
O(windows): the page cache holds the data, not the process.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from datapipe.errors import CorruptInputError, SpecError

log = logging.getLogger(__name__)

MANIFEST_FORMAT = "datapipe-shards"
MANIFEST_VERSION = 1
DTYPES = {"uint16": np.dtype("<u2"), "int32": np.dtype("<i4")}
# Megatron-LM indexed dataset dtype codes (``.idx`` header byte).
IDX_MAGIC = b"MMIDIDX\x00\x00"
IDX_DTYPE_CODES = {"uint16": 8, "int32": 4}
IDX_HEADER = struct.Struct("<9sQBQQ")  # magic, version, dtype code, sequences, documents
_HASH_CHUNK = 8 << 20


@dataclass(kw_only=True, frozen=True)
class ShardEntry:
    """One shard as the manifest lists it (paths already resolved against the manifest)."""

    name: str
    bin_path: Path
    idx_path: Path
    tokens: int
    documents: int
    bin_bytes: int
    bin_hash: str
    idx_hash: str
    first_doc_continued: bool
    last_doc_split: bool


@dataclass(kw_only=True, frozen=True)
class SourceManifest:
    """A parsed ``manifest.json``: what the shard writer promises about one source."""

    path: Path
    source: str
    dtype: str
    shard_tokens: int
    tokenizer: dict[str, Any]
    shards: tuple[ShardEntry, ...]
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
        """What identifies this source's token stream: names, sizes and hashes of its shards.

        Keyed by content, not by path: moving the shards keeps the key, re-tokenising in
        place changes it.
        """
        return {
            "source": self.source,
            "dtype": self.dtype,
            "tokenizer": self.fingerprint,
            "shards": [[s.name, s.tokens, s.bin_hash] for s in self.shards],
        }


def _need(obj: dict, key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if key not in obj:
        raise SpecError(f"{where}: missing field {key!r}; the shard writer must write it "
                        "(see docs/formats.md)")
    value = obj[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise SpecError(f"{where}: field {key!r} is {value!r}, expected {getattr(kind, '__name__', kind)}")
    return value


def load_manifest(path: str | os.PathLike) -> SourceManifest:
    """Parse and check a source manifest; errors name the file and the field. A manifest
    on an object store (``s3://...``) is read from a local copy of its folder, cached by
    content (the loader memory-maps shards); either way an enclosing job output must be
    complete (``_SUCCESS`` agreeing with its manifest)."""
    from datapipe.commit import local_for_reading
    from datapipe.fs import exists

    if exists(str(path)):
        path = local_for_reading(str(path))
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"source manifest {path} not found: run the job that writes these "
                        "shards (e.g. `datapipe run jobs/sample.yaml`) or fix the path")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise CorruptInputError(str(path), "unreadable source manifest", str(e)) from e
    where = str(path)
    if raw.get("format") != MANIFEST_FORMAT or raw.get("version") != MANIFEST_VERSION:
        raise SpecError(f"{where}: format/version is {raw.get('format')!r}/{raw.get('version')!r}, "
                        f"this reader reads {MANIFEST_FORMAT!r} version {MANIFEST_VERSION}")
    dtype = _need(raw, "dtype", where, str)
    if dtype not in DTYPES:
        raise SpecError(f"{where}: dtype {dtype!r} is not one of {sorted(DTYPES)}")
    tok = _need(raw, "tokenizer", where, dict)
    for key in ("fingerprint", "vocab_size", "eos_id"):
        _need(tok, key, f"{where}: tokenizer", (str,) if key == "fingerprint" else (int,))
    folder = path.parent
    shards = []
    for i, s in enumerate(_need(raw, "shards", where, list)):
        w = f"{where}: shards[{i}]"
        shards.append(ShardEntry(
            name=_need(s, "name", w, str),
            bin_path=folder / _need(s, "bin", w, str),
            idx_path=folder / _need(s, "idx", w, str),
            tokens=_need(s, "tokens", w, int),
            documents=_need(s, "documents", w, int),
            bin_bytes=_need(s, "bin_bytes", w, int),
            bin_hash=str(s.get("bin_hash", "")),
            idx_hash=str(s.get("idx_hash", "")),
            first_doc_continued=bool(s.get("first_doc_continued", False)),
            last_doc_split=bool(s.get("last_doc_split", False)),
        ))
    if not shards:
        raise SpecError(f"{where}: lists no shards; a source needs at least one")
    totals = _need(raw, "totals", where, dict)
    total_tokens = sum(s.tokens for s in shards)
    if totals.get("tokens") != total_tokens:
        raise CorruptInputError(where, "totals.tokens disagrees with the shards",
                                f"totals say {totals.get('tokens')}, shards sum to {total_tokens}")
    return SourceManifest(
        path=path, source=_need(raw, "source", where, str), dtype=dtype,
        shard_tokens=int(raw.get("shard_tokens", 0)), tokenizer=dict(tok), shards=tuple(shards),
        total_tokens=total_tokens, total_documents=int(totals.get("documents", 0)), raw=raw,
    )


def file_hash(path: Path, algo: str) -> str:
    """``<algo>:<hex>`` of a file's bytes, streamed; algo is ``xxh3-128`` or ``blake2b-256``."""
    if algo == "xxh3-128":
        h = xxhash.xxh3_128()
    elif algo == "blake2b-256":
        h = hashlib.blake2b(digest_size=32)
    else:
        raise SpecError(f"{path}: hash algorithm {algo!r} is unknown; use xxh3-128 or blake2b-256")
    with open(path, "rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            h.update(chunk)
    return f"{algo}:{h.hexdigest()}"


def _check_hash(path: Path, expected: str, where: str) -> None:
    if not expected:
        raise CorruptInputError(str(path), "hash verification requested but the manifest has no hash",
                                where)
    algo = expected.split(":", 1)[0]
    got = file_hash(path, algo)
    if got != expected:
        raise CorruptInputError(str(path), "content hash mismatch", f"manifest {expected}, file {got}")


def _check_idx(entry: ShardEntry, dtype: str) -> None:
    """Megatron ``.idx`` header and size: catches a missing, truncated or mismatched index."""
    p = entry.idx_path
    try:
        size = p.stat().st_size
        with open(p, "rb") as f:
            head = f.read(IDX_HEADER.size)
    except OSError as e:
        raise CorruptInputError(str(p), "index file missing or unreadable", str(e)) from e
    if len(head) < IDX_HEADER.size:
        raise CorruptInputError(str(p), "index truncated", f"{size} bytes, header needs {IDX_HEADER.size}")
    magic, version, code, n_seq, n_doc = IDX_HEADER.unpack(head)
    if magic != IDX_MAGIC or version != 1:
        raise CorruptInputError(str(p), "not a Megatron MMIDIDX v1 index", f"magic {magic!r}, version {version}")
    if code != IDX_DTYPE_CODES[dtype]:
        raise CorruptInputError(str(p), "index dtype disagrees with the manifest",
                                f"code {code}, manifest dtype {dtype}")
    want = IDX_HEADER.size + n_seq * 4 + n_seq * 8 + n_doc * 8
    if size != want:
        raise CorruptInputError(str(p), "index size disagrees with its header",
                                f"{size} bytes, header implies {want}")


class TokenStream:
    """One source's shards as a single read-only token array.

    ``read(start, length)`` returns a copy of tokens ``[start, start + length)`` of the
    concatenated stream; ``read_into`` fills a caller's buffer (no allocation on the hot path).
    Opening checks that every ``.bin`` has exactly ``tokens * itemsize`` bytes as the manifest
    says, and that every ``.idx`` is a well-formed index of the right dtype.
    """

    def __init__(self, manifest: SourceManifest, *, verify_hashes: bool = False) -> None:
        self.manifest = manifest
        self.dtype = DTYPES[manifest.dtype]
        maps: list[np.ndarray] = []
        for s in manifest.shards:
            want = s.tokens * self.dtype.itemsize
            if s.bin_bytes != want:
                raise CorruptInputError(str(manifest.path), f"shard {s.name}: bin_bytes {s.bin_bytes} "
                                        f"!= tokens {s.tokens} x {self.dtype.itemsize}")
            try:
                size = s.bin_path.stat().st_size
            except OSError as e:
                raise CorruptInputError(str(s.bin_path), "shard listed in the manifest is missing",
                                        f"manifest {manifest.path}") from e
            if size != want:
                raise CorruptInputError(str(s.bin_path), "shard size disagrees with the manifest",
                                        f"{size} bytes on disk, manifest says {want}")
            _check_idx(s, manifest.dtype)
            if verify_hashes:
                _check_hash(s.bin_path, s.bin_hash, f"shard {s.name} (.bin)")
                _check_hash(s.idx_path, s.idx_hash, f"shard {s.name} (.idx)")
            if s.tokens:  # a plain ndarray view of the map: slicing it skips np.memmap's per-slice overhead
                maps.append(np.memmap(s.bin_path, dtype=self.dtype, mode="r", shape=(s.tokens,)).view(np.ndarray))
            else:
                maps.append(np.empty(0, dtype=self.dtype))
        self._maps = maps
        # offsets[i] = first stream position of shard i; offsets[-1] = total tokens.
        self._offsets = np.zeros(len(maps) + 1, dtype=np.int64)
        np.cumsum([m.shape[0] for m in maps], out=self._offsets[1:])
        self._sizes = np.diff(self._offsets)
        self.n_tokens = int(self._offsets[-1])
        log.debug("opened %s: %d shards, %d tokens", manifest.source, len(maps), self.n_tokens)

    @property
    def source(self) -> str:
        return self.manifest.source

    @property
    def shard_arrays(self) -> tuple[np.ndarray, ...]:
        """The shards' memory-mapped tokens, in stream order (read-only views)."""
        return tuple(self._maps)

    def read(self, start: int, length: int) -> np.ndarray:
        out = np.empty(length, dtype=self.dtype)
        self.read_into(out, start)
        return out

    def read_into(self, out: np.ndarray, start: int) -> None:
        """Copy ``len(out)`` tokens from stream position ``start`` into ``out``."""
        length = out.shape[0]
        if start < 0 or start + length > self.n_tokens:
            raise IndexError(f"{self.source}: read [{start}, {start + length}) outside [0, {self.n_tokens})")
        i = int(np.searchsorted(self._offsets, start, side="right")) - 1
        local = start - int(self._offsets[i])
        m = self._maps[i]
        if local + length <= m.shape[0]:  # the common case: one shard
            out[:] = m[local:local + length]
            return
        done = 0
        while done < length:
            m = self._maps[i]
            take = min(length - done, m.shape[0] - local)
            out[done:done + take] = m[local:local + take]
            done += take
            i += 1
            local = 0
