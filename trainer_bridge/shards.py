"""Read a source's token shards through its manifest; verify what is read.

The format (``.bin``/``.idx``, the manifest schema, every check) is owned by
:mod:`datapipe.megatron`; this module is the trainer's side of it.

* :class:`TokenStream` memory-maps one source's shards as one token array and reads any
  ``[start, start + length)`` range across shard boundaries. Opening it runs the cheap
  structural checks of every shard (file sizes, the ``.idx`` header and its last entry
  against the ``.bin``, sequence count against the manifest's documents, the shard
  sequence), always: O(1) reads per shard.
* :func:`verify_content` checks content (both hashes, every ``.idx`` entry, EOS at every
  document end), which reads every byte, so its successes are remembered in a
  :class:`HashCache` keyed by each file's identity (path, size, mtime, ctime, inode) and
  the hash the manifest promises: a restart re-checks nothing unchanged, a changed,
  replaced or swapped file is checked again.

Memory held is O(shards) (one memory map and one offset per shard), never O(tokens) or
O(windows): the page cache holds the data, not the process.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Iterable

import numpy as np

from datapipe import fs
from datapipe.megatron import (
    NP_DTYPES, ShardFormatError, ShardRecord, SourceManifest, check_content, check_layout, check_structure,
)

log = logging.getLogger(__name__)

CACHE_FILE = "shard-hashes.json"
CACHE_VERSION = 1


def default_cache_path() -> Path:
    """``$DATAPIPE_CACHE_DIR/shard-hashes.json``, else ``$XDG_CACHE_HOME/datapipe/...``,
    else ``~/.cache/datapipe/shard-hashes.json``."""
    base = os.environ.get("DATAPIPE_CACHE_DIR")
    if not base:
        base = str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "datapipe")
    return Path(base) / CACHE_FILE


def _identity(path: Path) -> list[int] | None:
    """What changes when a file's bytes could have: size, mtime, ctime, inode (a rename
    keeps mtime but changes ctime; a swapped file brings its own inode)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


class HashCache:
    """Shards whose content passed :func:`~datapipe.megatron.check_content`.

    One JSON file, ``{".bin realpath": [bin identity, bin hash, .idx realpath, idx identity,
    idx hash, eos, vocab]}``, about 200 bytes per shard. An entry counts only while every
    part of it still matches, so there is nothing to invalidate by hand. :meth:`save`
    merges under a file lock (ranks and restarts share the file) and drops entries whose
    files are gone. An unreadable cache file is treated as empty.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._entries = self._read()
        self._new: dict[str, list] = {}

    def _read(self) -> dict[str, list]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            log.warning("shard hash cache %s unreadable (%s): checking every shard again", self.path, e)
            return {}
        if not isinstance(raw, dict) or raw.get("version") != CACHE_VERSION or not isinstance(raw.get("shards"), dict):
            return {}
        return raw["shards"]

    @staticmethod
    def _entry(rec: ShardRecord, eos_id: int, vocab_size: int) -> tuple[str, list]:
        bin_path, idx_path = rec.bin_path.resolve(), rec.idx_path.resolve()
        return str(bin_path), [_identity(bin_path), rec.bin_hash, str(idx_path), _identity(idx_path), rec.idx_hash,
                               eos_id, vocab_size]

    def verified(self, rec: ShardRecord, eos_id: int, vocab_size: int) -> bool:
        key, value = self._entry(rec, eos_id, vocab_size)
        return value[0] is not None and self._entries.get(key) == value

    def add(self, rec: ShardRecord, eos_id: int, vocab_size: int) -> None:
        key, value = self._entry(rec, eos_id, vocab_size)
        self._entries[key] = self._new[key] = value

    def save(self) -> None:
        """Merge this process's new entries into the file (atomic replace, under a lock)."""
        if not self._new:
            return
        try:
            with fs.lock(str(self.path.with_name(self.path.name + ".lock"))):
                merged = {**self._read(), **self._new}
                merged = {k: v for k, v in merged.items() if _identity(Path(k)) == v[0]}
                fs.write_text(str(self.path), json.dumps({"version": CACHE_VERSION, "shards": merged}, sort_keys=True))
        except OSError as e:  # a read-only home must not stop training: the next start re-checks
            log.warning("could not write the shard hash cache %s (%s)", self.path, e)
            return
        self._new.clear()


def verify_content(items: Iterable[tuple[SourceManifest, ShardRecord]], *, cache: HashCache | None) -> int:
    """Check the content of each ``(manifest, shard)`` not already in ``cache``; returns how
    many were read. The first failure raises :class:`ShardFormatError` naming the shard's
    file, its source and manifest, and what differs."""
    checked = 0
    try:
        for m, rec in items:
            if cache is not None and cache.verified(rec, m.eos_id, m.vocab_size):
                continue
            problems = check_content(rec, m.dtype, eos_id=m.eos_id, vocab_size=m.vocab_size)
            if problems:
                raise ShardFormatError(str(rec.bin_path), f"shard {rec.name} of source {m.source} fails its content "
                                       f"check (manifest {m.path}); run `datapipe shards verify`",
                                       "; ".join(problems))
            checked += 1
            if cache is not None:
                cache.add(rec, m.eos_id, m.vocab_size)
    finally:
        if cache is not None:
            cache.save()
    return checked


class TokenStream:
    """One source's shards as a single read-only token array.

    ``read(start, length)`` returns a copy of tokens ``[start, start + length)`` of the
    concatenated stream; ``read_into`` fills a caller's buffer (no allocation on the hot
    path). Opening runs :func:`~datapipe.megatron.check_layout` and
    :func:`~datapipe.megatron.check_structure` on every shard and refuses, naming the
    shard, on the first problem.
    """

    def __init__(self, manifest: SourceManifest) -> None:
        self.manifest = manifest
        self.dtype = NP_DTYPES[manifest.dtype]
        layout = check_layout(manifest)
        if layout:
            raise ShardFormatError(str(manifest.path), f"source {manifest.source}: shard layout is inconsistent",
                                   "; ".join(layout))
        maps: list[np.ndarray] = []
        for s in manifest.shards:
            problems = check_structure(s, manifest.dtype)
            if problems:
                raise ShardFormatError(str(s.bin_path), f"shard {s.name} of source {manifest.source} fails its "
                                       f"structure check (manifest {manifest.path})", "; ".join(problems))
            # a plain ndarray view of the map: slicing it skips np.memmap's per-slice overhead
            maps.append(np.memmap(s.bin_path, dtype=self.dtype, mode="r", shape=(s.tokens,)).view(np.ndarray))
        self._maps = maps
        # offsets[i] = first stream position of shard i; offsets[-1] = total tokens.
        self._offsets = np.zeros(len(maps) + 1, dtype=np.int64)
        np.cumsum([m.shape[0] for m in maps], out=self._offsets[1:])
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
        done = 0
        while done < length:
            m = self._maps[i]
            take = min(length - done, m.shape[0] - local)
            out[done:done + take] = m[local:local + take]
            done += take
            i += 1
            local = 0
