"""Byte-level BPE tokenizers: train one, load one, and pin it by content.

Everything here works offline: a tokenizer is a local ``tokenizer.json`` (HF
``tokenizers`` format) or a GPT-2 style folder with ``vocab.json`` + ``merges.txt``;
nothing is fetched at run time.

A tokenizer is identified by its **fingerprint**, ``blake2b-256:<hex>`` of its canonical
serialisation (the ``tokenizer.json`` text with sorted keys and no whitespace), never by
its path: shards record it, and a mix refuses sources whose fingerprints differ. Two
files that differ only in JSON formatting get the same fingerprint; any change to the
vocabulary, merges, pre-tokenizer or added tokens changes it.

The end-of-document token (EOS) is resolved once, by :func:`resolve_eos`: the configured
token, else the folder's ``special_tokens_map.json`` ``eos_token``, else the first of
``<|endoftext|>``, ``</s>``, ``<eos>``, ``<|end_of_text|>`` the vocabulary has.

Encoding contract (what the ``tokenize`` stage relies on): :func:`load_tokenizer`
returns a tokenizer with ``encode_special_tokens = True``, so a document whose *text*
contains ``<|endoftext|>`` is encoded as ordinary text and never yields a stray EOS id;
the shard writer alone puts EOS after each document.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import hashlib
import io
import json
import logging
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from datapipe.errors import SpecError

log = logging.getLogger(__name__)

DEFAULT_EOS = "<|endoftext|>"
EOS_CANDIDATES = ("<|endoftext|>", "</s>", "<eos>", "<|end_of_text|>")
FINGERPRINT_ALGO = "blake2b-256"
TOKENIZER_FILE = "tokenizer.json"
META_FILE = "tokenizer.meta.json"


@dataclass(kw_only=True, frozen=True)
class TokenizerInfo:
    """What shards need to know about the tokenizer that made them.

    ``vocab_size`` is one more than the largest id the tokenizer can emit (added tokens
    included); it decides the shard dtype.
    """

    path: str
    fingerprint: str
    vocab_size: int
    eos_id: int
    eos_token: str

    def __post_init__(self) -> None:
        if not self.fingerprint.startswith(f"{FINGERPRINT_ALGO}:"):
            raise SpecError(f"tokenizer fingerprint must start with '{FINGERPRINT_ALGO}:', got {self.fingerprint!r}")
        if self.vocab_size < 1:
            raise SpecError(f"tokenizer vocab_size must be >= 1, got {self.vocab_size}")
        if not 0 <= self.eos_id < self.vocab_size:
            raise SpecError(f"tokenizer eos_id {self.eos_id} is outside the vocabulary (size {self.vocab_size})")

    def to_manifest(self) -> dict[str, Any]:
        """The ``tokenizer`` block of a shard manifest."""
        return {
            "fingerprint": self.fingerprint,
            "vocab_size": self.vocab_size,
            "eos_id": self.eos_id,
            "eos_token": self.eos_token,
            "path": self.path,
        }


# ---------------------------------------------------------------------------------------
# loading


def _tokenizer_file(path: Path) -> Path | None:
    if path.is_file():
        return path
    cand = path / TOKENIZER_FILE
    return cand if cand.is_file() else None


def load_tokenizer(path: str | os.PathLike[str]) -> Any:
    """Load a ``tokenizers.Tokenizer`` from a ``tokenizer.json`` file, a folder holding
    one, or a GPT-2 folder with ``vocab.json`` + ``merges.txt`` (byte-level BPE; the
    tokens in ``special_tokens_map.json`` become special tokens).

    The returned tokenizer has ``encode_special_tokens = True`` (see the module doc).
    Raises :class:`SpecError` naming the path when nothing loadable is there.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    p = Path(path)
    if not p.exists():
        raise SpecError(
            f"tokenizer {str(p)!r} does not exist: give a tokenizer.json file or a folder with "
            "tokenizer.json or vocab.json + merges.txt (e.g. {shared}/tokenizers/gpt2)"
        )
    tf = _tokenizer_file(p)
    if tf is not None:
        try:
            tok = Tokenizer.from_file(str(tf))
        except Exception as e:  # tokenizers raises a bare Exception on bad JSON
            raise SpecError(f"tokenizer {str(tf)!r} is not a valid tokenizer.json: {e}") from None
    else:
        vocab, merges = p / "vocab.json", p / "merges.txt"
        if not (vocab.is_file() and merges.is_file()):
            raise SpecError(
                f"tokenizer folder {str(p)!r} has neither tokenizer.json nor vocab.json + merges.txt"
            )
        try:
            model = models.BPE.from_file(str(vocab), str(merges))
        except Exception as e:
            raise SpecError(f"tokenizer folder {str(p)!r}: cannot read vocab.json/merges.txt: {e}") from None
        tok = Tokenizer(model)
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        specials = _special_tokens_from_map(p)
        present = [t for t in specials if tok.token_to_id(t) is not None]
        if present:
            tok.add_special_tokens(present)
    tok.encode_special_tokens = True
    return tok


def _special_tokens_from_map(folder: Path) -> list[str]:
    f = folder / "special_tokens_map.json"
    if not f.is_file():
        return []
    try:
        data = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise SpecError(f"{f}: not valid JSON ({e})") from None
    out: list[str] = []
    for v in data.values():
        tok = v.get("content") if isinstance(v, dict) else v
        if isinstance(tok, str) and tok not in out:
            out.append(tok)
    return out


def _configured_eos(folder: Path) -> str | None:
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        f = folder / name
        if f.is_file():
            try:
                v = json.loads(f.read_text(encoding="utf-8")).get("eos_token")
            except (OSError, ValueError):
                continue
            v = v.get("content") if isinstance(v, dict) else v
            if isinstance(v, str):
                return v
    return None


def vocab_size(tok: Any) -> int:
    """One more than the largest id ``tok`` can produce (added tokens included)."""
    ids = tok.get_vocab(with_added_tokens=True).values()
    return max(ids) + 1 if ids else 0


def resolve_eos(tok: Any, eos: str | None = None, *, path: str | os.PathLike[str] | None = None) -> tuple[str, int]:
    """Return ``(eos_token, eos_id)``.

    ``eos`` given: it must be in the vocabulary. Otherwise the folder's
    ``special_tokens_map.json``/``tokenizer_config.json`` ``eos_token``, then the first of
    :data:`EOS_CANDIDATES` present. Raises :class:`SpecError` saying how to fix it.
    """
    where = f"tokenizer {str(path)!r}" if path is not None else "tokenizer"
    if eos is not None:
        tid = tok.token_to_id(eos)
        if tid is None:
            raise SpecError(f"{where}: eos token {eos!r} is not in its vocabulary; set eos: to a token it has")
        return eos, int(tid)
    candidates: list[str] = []
    if path is not None:
        p = Path(path)
        folder = p if p.is_dir() else p.parent
        configured = _configured_eos(folder)
        if configured:
            candidates.append(configured)
    candidates.extend(c for c in EOS_CANDIDATES if c not in candidates)
    for c in candidates:
        tid = tok.token_to_id(c)
        if tid is not None:
            return c, int(tid)
    raise SpecError(
        f"{where}: no end-of-document token found (looked for {', '.join(candidates)}); "
        "set eos: to the token this tokenizer uses to end a document"
    )


def fingerprint(tok: Any) -> str:
    """``blake2b-256:<hex>`` of the tokenizer's canonical serialisation."""
    canonical = json.dumps(json.loads(tok.to_str()), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{FINGERPRINT_ALGO}:" + hashlib.blake2b(canonical.encode("utf-8"), digest_size=32).hexdigest()


def tokenizer_info(path: str | os.PathLike[str], *, eos: str | None = None) -> TokenizerInfo:
    """Load the tokenizer at ``path`` and describe it for shard manifests."""
    tok = load_tokenizer(path)
    eos_token, eos_id = resolve_eos(tok, eos, path=path)
    return TokenizerInfo(
        path=str(path), fingerprint=fingerprint(tok), vocab_size=vocab_size(tok),
        eos_id=eos_id, eos_token=eos_token,
    )


# ---------------------------------------------------------------------------------------
# training


@dataclass(kw_only=True, frozen=True)
class TrainConfig:
    """Byte-level BPE training options.

    ``vocab_size`` counts the 256 byte symbols and the special tokens; special tokens get
    the first ids (0, 1, ...) in the order given, so the default EOS is id 0.
    """

    vocab_size: int
    special_tokens: tuple[str, ...] = (DEFAULT_EOS,)
    eos: str | None = None
    min_frequency: int = 2

    def __post_init__(self) -> None:
        floor = 256 + len(self.special_tokens)
        if self.vocab_size < floor:
            raise SpecError(
                f"vocab_size must be at least {floor} (256 byte symbols + {len(self.special_tokens)} "
                f"special tokens), got {self.vocab_size}"
            )
        if self.vocab_size > 2**31 - 1:
            raise SpecError(f"vocab_size must fit int32, got {self.vocab_size}")
        if len(set(self.special_tokens)) != len(self.special_tokens) or any(not t for t in self.special_tokens):
            raise SpecError(f"special_tokens must be distinct non-empty strings, got {list(self.special_tokens)}")
        if self.eos is not None and self.eos not in self.special_tokens:
            raise SpecError(f"eos {self.eos!r} must be one of special_tokens {list(self.special_tokens)}")
        if self.eos is None and not any(t in self.special_tokens for t in EOS_CANDIDATES):
            raise SpecError(
                f"none of special_tokens {list(self.special_tokens)} is a known EOS token "
                f"({', '.join(EOS_CANDIDATES)}); set eos: to the one that ends documents"
            )
        if self.min_frequency < 1:
            raise SpecError(f"min_frequency must be >= 1, got {self.min_frequency}")


def train_tokenizer(
    texts: Iterable[str], out_dir: str | os.PathLike[str], *, config: TrainConfig,
    trained_on: dict[str, Any] | None = None,
) -> TokenizerInfo:
    """Train a byte-level BPE tokenizer on ``texts`` and write ``out_dir/tokenizer.json``
    plus ``out_dir/tokenizer.meta.json`` (fingerprint, EOS, options, ``trained_on``).

    Same texts in the same order and same config give the same fingerprint. Files are
    written under a temporary name and renamed, so a reader never sees half a file.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=config.vocab_size,
        min_frequency=config.min_frequency,
        special_tokens=list(config.special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    counter = _CountingIter(texts)
    tok.train_from_iterator(counter, trainer=trainer)
    if counter.documents == 0:
        raise SpecError("tokenizer training got no text: check the input paths/globs")
    tok.encode_special_tokens = True
    eos_token, eos_id = resolve_eos(tok, config.eos)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tf = out / TOKENIZER_FILE
    _atomic_write(tf, tok.to_str(pretty=True).encode("utf-8") + b"\n")
    info = TokenizerInfo(
        path=str(tf), fingerprint=fingerprint(tok), vocab_size=vocab_size(tok),
        eos_id=eos_id, eos_token=eos_token,
    )
    meta = {
        "fingerprint": info.fingerprint,
        "vocab_size": info.vocab_size,
        "eos_token": eos_token,
        "eos_id": eos_id,
        "special_tokens": list(config.special_tokens),
        "min_frequency": config.min_frequency,
        "trained_on": {"documents": counter.documents, "bytes": counter.bytes, **(trained_on or {})},
    }
    _atomic_write(out / META_FILE, (json.dumps(meta, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    log.info("trained tokenizer %s (vocab %d) on %d texts, %d bytes", info.fingerprint, info.vocab_size,
             counter.documents, counter.bytes)
    return info


class _CountingIter:
    """Pass texts through while counting them (training reports what it saw)."""

    def __init__(self, texts: Iterable[str]) -> None:
        self._it = iter(texts)
        self.documents = 0
        self.bytes = 0

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        t = next(self._it)
        self.documents += 1
        self.bytes += len(t.encode("utf-8", "surrogatepass"))
        return t


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------------------
# training input: text files, JSONL, a job's Parquet documents

_CHUNK_CHARS = 1 << 16


def _open_text(path: Path) -> io.TextIOBase:
    name = path.name.lower()
    if name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    if name.endswith(".zst"):
        import zstandard

        raw = zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
        return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def _kind(path: Path) -> str:
    name = path.name.lower()
    for suffix in (".gz", ".zst"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(".jsonl") or name.endswith(".json") or name.endswith(".ndjson"):
        return "jsonl"
    return "text"


def _text_chunks(path: Path) -> Iterator[str]:
    """Plain text in paragraph-aligned chunks of about 64 K characters."""
    buf: list[str] = []
    size = 0
    with _open_text(path) as f:
        for line in f:
            buf.append(line)
            size += len(line)
            if size >= _CHUNK_CHARS and not line.strip():
                yield "".join(buf)
                buf, size = [], 0
    if buf:
        yield "".join(buf)


def _jsonl_texts(path: Path, text_key: str) -> Iterator[str]:
    with _open_text(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                v = json.loads(line).get(text_key)
            except (ValueError, AttributeError):
                log.warning("%s:%d: not a JSON object, skipped", path, n)
                continue
            if isinstance(v, str) and v:
                yield v


def _parquet_texts(path: Path, text_key: str, sources: Sequence[str]) -> Iterator[str]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    names = set(pf.schema_arrow.names)
    if text_key not in names:
        raise SpecError(f"{path}: no {text_key!r} column (columns: {', '.join(sorted(names))})")
    cols = [text_key] + [c for c in ("source", "_reject_reason") if c in names]
    for batch in pf.iter_batches(columns=cols, batch_size=1024):
        mask = pc.is_valid(batch.column(text_key))
        if "_reject_reason" in names:  # a job's output: train on kept documents only
            mask = pc.and_(mask, pc.is_null(batch.column("_reject_reason")))
        if sources and "source" in names:
            mask = pc.and_(mask, pc.is_in(batch.column("source"), value_set=pa.array(list(sources), pa.string())))
        for t in batch.filter(mask).column(text_key).to_pylist():
            if t:
                yield t


def expand_globs(patterns: Sequence[str]) -> list[Path]:
    """Files matching ``patterns`` (``**`` allowed), sorted and de-duplicated; a pattern
    matching nothing is a :class:`SpecError`."""
    out: set[Path] = set()
    for pat in patterns:
        hits = [Path(h) for h in glob.glob(os.path.expanduser(pat), recursive=True)]
        hits = [h for h in hits if h.is_file()]
        if not hits:
            raise SpecError(f"--source-glob {pat!r} matches no files")
        out.update(hits)
    return sorted(out)


def training_texts(
    paths: Sequence[Path], *, max_bytes: int | None = None, text_key: str = "text",
    sources: Sequence[str] = (),
) -> Iterator[str]:
    """Texts from ``paths`` in path order until ``max_bytes`` of UTF-8 (a prefix sample,
    so the same files give the same sample). Plain text (``.txt``, ``.gz``, ``.zst``) in
    paragraph chunks; JSONL/JSON-lines by ``text_key``; Parquet (a job's documents) by
    ``text_key``, kept rows only, optionally only ``sources``."""
    seen = 0
    for p in paths:
        kind = _kind(p)
        it = (_parquet_texts(p, text_key, sources) if kind == "parquet"
              else _jsonl_texts(p, text_key) if kind == "jsonl" else _text_chunks(p))
        for t in it:
            if max_bytes is not None and seen >= max_bytes:
                return
            seen += len(t.encode("utf-8", "surrogatepass"))
            yield t


# ---------------------------------------------------------------------------------------
# CLI


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    """Register ``datapipe tokenizer train``. Handlers return the exit code (``args.func(args)``)."""
    p = subparsers.add_parser("tokenizer", help="train or describe a byte-level BPE tokenizer")
    sp = p.add_subparsers(dest="tokenizer_command", required=True)
    t = sp.add_parser("train", help="train a byte-level BPE tokenizer on text files or a job's documents")
    t.add_argument("--source-glob", action="append", required=True, metavar="GLOB",
                   help="input files (.txt/.gz/.zst text, .jsonl, or a job's .parquet documents); repeatable")
    t.add_argument("--vocab-size", type=int, required=True, help="total vocabulary incl. 256 bytes and specials")
    t.add_argument("--out", required=True, metavar="DIR", help="writes DIR/tokenizer.json and DIR/tokenizer.meta.json")
    t.add_argument("--special-token", action="append", metavar="TOKEN",
                   help=f"special token (repeatable; default {DEFAULT_EOS})")
    t.add_argument("--eos", default=None, help="which special token ends documents (default: auto)")
    t.add_argument("--min-frequency", type=int, default=2)
    t.add_argument("--max-bytes", type=int, default=None, help="train on at most this many bytes of text")
    t.add_argument("--text-key", default="text", help="field/column holding text in JSONL/Parquet inputs")
    t.add_argument("--source", action="append", default=[], metavar="NAME",
                   help="Parquet inputs: only documents of this source (repeatable)")
    t.set_defaults(func=_cli_train)
    d = sp.add_parser("info", help="print a tokenizer's fingerprint, vocabulary size and EOS")
    d.add_argument("path")
    d.add_argument("--eos", default=None)
    d.set_defaults(func=_cli_info)


def _cli_train(args: argparse.Namespace) -> int:
    cfg = TrainConfig(
        vocab_size=args.vocab_size,
        special_tokens=tuple(args.special_token or (DEFAULT_EOS,)),
        eos=args.eos,
        min_frequency=args.min_frequency,
    )
    paths = expand_globs(args.source_glob)
    texts = training_texts(paths, max_bytes=args.max_bytes, text_key=args.text_key, sources=args.source)
    trained_on = {
        "inputs": [{"path": str(p), "bytes": p.stat().st_size} for p in paths],
        "max_bytes": args.max_bytes,
        "sources": list(args.source),
    }
    info = train_tokenizer(texts, args.out, config=cfg, trained_on=trained_on)
    print(json.dumps(info.to_manifest(), indent=2))
    return 0


def _cli_info(args: argparse.Namespace) -> int:
    info = tokenizer_info(args.path, eos=args.eos)
    print(json.dumps(info.to_manifest(), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - thin wrapper for local use
    ap = argparse.ArgumentParser(prog="datapipe")
    add_cli(ap.add_subparsers(dest="command", required=True))
    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
