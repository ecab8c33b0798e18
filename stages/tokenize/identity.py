"""Tokenizer identity for the ``tokenize`` stage: load a byte-level BPE tokenizer, and
pin it by content.

Shards record the tokenizer by fingerprint (the manifest's ``tokenizer`` block,
:meth:`TokenizerInfo.to_manifest`); the loader and mixes compare the recorded strings and
never load a tokenizer, so loading and fingerprinting live with the stage that uses them.
Training one is beside it too (``stages/tokenize/train.py``, ``datapipe tokenizer train``).

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

import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datapipe.errors import SpecError

log = logging.getLogger(__name__)

DEFAULT_EOS = "<|endoftext|>"
EOS_CANDIDATES = ("<|endoftext|>", "</s>", "<eos>", "<|end_of_text|>")
FINGERPRINT_ALGO = "blake2b-256"
#: sentinels of code models (StarCoder2's names: fill-in-the-middle and repository context);
#: the ids of those a tokenizer has go into the shard manifest (``tokenizer.special``) so a
#: trainer can check for them without loading the tokenizer (:mod:`trainer_bridge.fim`)
SENTINEL_TOKENS = ("<fim_prefix>", "<fim_middle>", "<fim_suffix>", "<fim_pad>", "<repo_name>", "<file_sep>")
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
    special: dict[str, int] = field(default_factory=dict)   # SENTINEL_TOKENS it has -> id

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
            **({"special": dict(self.special)} if self.special else {}),   # absent: no sentinels (older manifests)
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


def sentinel_ids(tok: Any) -> dict[str, int]:
    """The :data:`SENTINEL_TOKENS` ``tok`` has as special (added) tokens, with their ids. A
    sentinel that is only an ordinary vocabulary entry does not count: a document's text
    could produce it."""
    added = {t.content for t in tok.get_added_tokens_decoder().values() if t.special}
    return {t: int(tok.token_to_id(t)) for t in SENTINEL_TOKENS if t in added}


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
        eos_id=eos_id, eos_token=eos_token, special=sentinel_ids(tok),
    )


def load_for_decoding(path: str | os.PathLike[str]) -> tuple[Any, str]:
    """``(tokenizer, fingerprint)`` of ``path``: what ``datapipe shards inspect`` needs
    to decode an excerpt and check it has the shards' tokenizer."""
    tok = load_tokenizer(path)
    return tok, fingerprint(tok)
