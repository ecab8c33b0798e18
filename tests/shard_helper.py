"""A tiny, independent writer of token shards + source manifests for loader/trainer tests.

Follows ``docs/formats.md`` (Megatron ``.bin``/``.idx`` + ``manifest.json``) so the reader is
tested against the documented format, not against a writer it shares code with. The real
writer is ``stages.tokenize.writer``; this one exists so trainer tests can run before and apart
from it.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import xxhash

TINY_TOKENIZER = "tokenizers/tiny-2k.tokenizer.json"


def _xxh(path: Path) -> str:
    return "xxh3-128:" + xxhash.xxh3_128_hexdigest(path.read_bytes())


def write_source(folder: Path, source: str, docs: Iterable[Sequence[int]], *, eos_id: int, vocab_size: int,
                 shard_tokens: int, fingerprint: str = "blake2b-256:test", dtype: str | None = None) -> Path:
    """Write ``docs`` (token id lists, EOS not included) as shards of ``source``; returns the manifest path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    dtype = dtype or ("uint16" if vocab_size <= 65535 else "int32")
    np_dtype = {"uint16": np.dtype("<u2"), "int32": np.dtype("<i4")}[dtype]
    code = {"uint16": 8, "int32": 4}[dtype]
    # (doc number, token array incl. EOS) split into shard-sized parts.
    shards: list[list[tuple[np.ndarray, bool, bool]]] = [[]]  # parts: (tokens, starts_doc, ends_doc)
    room = shard_tokens
    for doc in docs:
        toks = np.append(np.asarray(doc, dtype=np.int64), eos_id)
        first = True
        while toks.size:
            if room == 0:
                shards.append([])
                room = shard_tokens
            take = min(room, toks.size)
            shards[-1].append((toks[:take], first, take == toks.size))
            toks, first, room = toks[take:], False, room - take
    entries = []
    for i, parts in enumerate(shards):
        name = f"{source}-{i:05d}"
        data = np.concatenate([p[0] for p in parts]).astype(np_dtype) if parts else np.empty(0, np_dtype)
        (folder / f"{name}.bin").write_bytes(data.tobytes())
        lengths = np.array([p[0].size for p in parts], dtype=np.int32)
        pointers = np.concatenate([[0], np.cumsum(lengths[:-1], dtype=np.int64) * np_dtype.itemsize]).astype(np.int64) \
            if parts else np.empty(0, np.int64)
        doc_idx = np.arange(len(parts) + 1, dtype=np.int64)
        with open(folder / f"{name}.idx", "wb") as f:
            f.write(struct.pack("<9sQBQQ", b"MMIDIDX\x00\x00", 1, code, len(parts), len(doc_idx)))
            f.write(lengths.tobytes() + pointers.tobytes() + doc_idx.tobytes())
        entries.append({
            "name": name, "bin": f"{name}.bin", "idx": f"{name}.idx", "tokens": int(data.size),
            "documents": sum(1 for p in parts if p[1]), "bin_bytes": int(data.nbytes),
            "first_doc_continued": bool(parts) and not parts[0][1],
            "last_doc_split": bool(parts) and not parts[-1][2],
            "bin_hash": _xxh(folder / f"{name}.bin"), "idx_hash": _xxh(folder / f"{name}.idx"),
        })
    manifest = {
        "format": "datapipe-shards", "version": 1, "source": source, "dtype": dtype,
        "shard_tokens": shard_tokens,
        "tokenizer": {"fingerprint": fingerprint, "vocab_size": vocab_size, "eos_id": eos_id, "path": "test"},
        "shards": entries,
        "totals": {"tokens": sum(e["tokens"] for e in entries), "documents": sum(e["documents"] for e in entries),
                   "shards": len(entries)},
        "lineage": {"job_hash": "test", "inputs": []},
    }
    path = folder / "manifest.json"
    path.write_text(json.dumps(manifest, indent=1))
    return path


def write_sparse_source(folder: Path, source: str, tokens: int, *, shard_tokens: int, eos_id: int = 2,
                        vocab_size: int = 50257) -> Path:
    """A source of ``tokens`` zero tokens as sparse files (instant, no disk use): for tests that
    need a huge window count but never read most of it. Hashes are left empty."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    entries, left, i = [], tokens, 0
    while left > 0:
        n = min(shard_tokens, left)
        name = f"{source}-{i:05d}"
        with open(folder / f"{name}.bin", "wb") as f:
            f.truncate(n * 2)
        with open(folder / f"{name}.idx", "wb") as f:
            f.write(struct.pack("<9sQBQQ", b"MMIDIDX\x00\x00", 1, 8, 1, 2))
            f.write(np.array([n], np.int32).tobytes() + np.array([0], np.int64).tobytes()
                    + np.array([0, 1], np.int64).tobytes())
        entries.append({"name": name, "bin": f"{name}.bin", "idx": f"{name}.idx", "tokens": n, "documents": 1,
                        "bin_bytes": n * 2, "bin_hash": "", "idx_hash": ""})
        left -= n
        i += 1
    manifest = {"format": "datapipe-shards", "version": 1, "source": source, "dtype": "uint16",
                "shard_tokens": shard_tokens,
                "tokenizer": {"fingerprint": "blake2b-256:sparse", "vocab_size": vocab_size, "eos_id": eos_id},
                "shards": entries, "totals": {"tokens": tokens, "documents": len(entries), "shards": len(entries)}}
    path = folder / "manifest.json"
    path.write_text(json.dumps(manifest))
    return path


# Real text for real shards: (source name, shared-data file, how to split it into documents).
TEXT_SOURCES = {
    "wiki": ("corpora/wiki/wikitext-2-raw.test.txt", r"\n(?= = [^=])"),
    "books": ("corpora/books/tinyshakespeare.txt", r"\n\n"),
    "news": ("corpora/misc/lee_background.cor", r"\n"),
}


def tiny_tokenizer(shared_dir: Path):
    """The shared 2,020-token BPE plus one EOS id (2020): ``(tokenizer, eos_id, vocab, fingerprint)``."""
    from tokenizers import Tokenizer

    path = Path(shared_dir) / TINY_TOKENIZER
    tok = Tokenizer.from_file(str(path))
    eos = tok.get_vocab_size()
    fp = "blake2b-256:" + hashlib.blake2b(path.read_bytes() + b"|eos", digest_size=32).hexdigest()
    return tok, eos, eos + 1, fp


def write_text_sources(shared_dir: Path, out: Path, *, max_bytes: int = 60_000, shard_tokens: int = 4096,
                       sources: Sequence[str] = ("wiki", "books", "news")) -> dict[str, Path]:
    """Tokenise the head of real shared corpora into shards; returns ``{source: manifest path}``."""
    tok, eos, vocab, fp = tiny_tokenizer(shared_dir)
    paths = {}
    for name in sources:
        rel, sep = TEXT_SOURCES[name]
        f = Path(shared_dir) / rel
        if not f.is_file():
            raise FileNotFoundError(f"shared corpus {f} missing (DATAPIPE_SHARED?)")
        text = f.read_text(encoding="utf-8", errors="replace")[:max_bytes]
        docs = [d.strip() for d in re.split(sep, text) if d.strip()]
        ids = [e.ids for e in tok.encode_batch(docs)]
        paths[name] = write_source(out / name, name, ids, eos_id=eos, vocab_size=vocab,
                                   shard_tokens=shard_tokens, fingerprint=fp)
    return paths


def write_mix(path: Path, manifests: dict[str, Path], weights: dict[str, float], *, seq_len: int,
              token_budget: int, seed: int = 1234, max_epochs: float = 50, warn_epochs: float = 10) -> Path:
    """A mix YAML over ``manifests`` (relative paths, as users write them)."""
    import os

    import yaml

    doc = {"name": path.stem, "seq_len": seq_len, "token_budget": token_budget, "seed": seed,
           "max_epochs": max_epochs, "warn_epochs": warn_epochs,
           "sources": [{"manifest": os.path.relpath(manifests[s], path.parent), "weight": weights[s]}
                       for s in manifests]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
