"""The ``tokenize`` stage: byte-level BPE ids for every kept document.

Adds ``tokens`` (``list<int32>``: the document's ids, *without* EOS; the shard sink,
:mod:`stages.tokenize.shard_sink`, appends EOS when it lays documents out) and ``num_tokens`` (``int64``, the length of
``tokens``, EOS excluded). A null text encodes as zero tokens.

The tokenizer is loaded once per actor in :meth:`Tokenize.setup` and encodes a whole
batch with one ``encode_batch_fast`` call (no special tokens added, no offsets
computed). Inside a Ray worker the stage turns off the tokenizer's own thread pool: Ray
already runs one actor per CPU, and a second pool per actor would oversubscribe the node.

Config (YAML)::

    - tokenize: {tokenizer: "{shared}/tokenizers/gpt2", eos: "<|endoftext|>"}

``by_level: true`` (after a ``quality_levels`` stage) writes one shard set per source and
quality level, ``shards/<source>@q<level>/`` (docs/mixes.md "Quality levels").

``structure`` (optional, per source) names special tokens that are the *structure* of that
source's documents: ``{repos: ["<repo_name>", "<file_sep>"]}`` for the ``code`` reader's
``format: starcoder2`` repository documents. Where they appear in such a document's text
they are encoded as their special-token ids (the text between them as text); everywhere
else, and in every other source, a special token's name in a text is ordinary text (see
:mod:`stages.tokenize.identity`). The reader makes that safe: a file holding a separator is
a ``read:separator`` reject, so in its documents they are only ever structure.

``fingerprint`` (optional) pins the tokenizer's content: an actor whose file hashes
differently fails at setup instead of writing shards in another vocabulary.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pyarrow as pa

from datapipe import schema as S
from datapipe.errors import JobError, SpecError
from stages.tokenize.writer import ShardOptions
from datapipe.stage import AnnotatorStage, Compute, StageConfig

log = logging.getLogger(__name__)

TOKENS, NUM_TOKENS = "tokens", "num_tokens"
TOKENS_TYPE = pa.list_(pa.int32())


@dataclass(kw_only=True, frozen=True)
class TokenizeConfig(StageConfig):
    """``tokenizer``: a ``tokenizer.json`` file or a folder with one or with GPT-2
    ``vocab.json`` + ``merges.txt``. ``eos``: the end-of-document token (default: the
    tokenizer's own, see :func:`stages.tokenize.identity.resolve_eos`)."""

    tokenizer: str
    eos: str | None = None
    fingerprint: str | None = None
    #: one shard set per (source, quality level): a document of ``web`` at ``quality_level``
    #: 4 goes to ``shards/web@q4/`` (its own manifest); one without a level to ``shards/web/``
    #: (a ``quality_levels`` stage must come first; the sources it skips keep one set each)
    by_level: bool = False
    #: per source, the special tokens that are its documents' structure (encoded as their ids)
    structure: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.structure, Mapping) or not all(
                isinstance(k, str) and isinstance(v, (list, tuple)) and v and all(isinstance(t, str) and t for t in v)
                for k, v in self.structure.items()):
            raise SpecError(f"tokenize: structure={self.structure!r}; give a mapping from source to a list of "
                            "special tokens, e.g. {repos: ['<repo_name>', '<file_sep>']}")
        object.__setattr__(self, "structure", {k: tuple(v) for k, v in self.structure.items()})
        if not self.tokenizer:
            raise SpecError(
                "tokenize: set tokenizer: to a tokenizer.json file or a folder with vocab.json + "
                "merges.txt, e.g. '{shared}/tokenizers/gpt2'"
            )
        if not Path(self.tokenizer).exists():
            raise SpecError(
                f"tokenize: tokenizer {self.tokenizer!r} does not exist (in a job spec a relative path is "
                "relative to the spec file's folder; '{shared}/tokenizers/...' names the shared tokenizers)"
            )
        if self.eos is not None and not self.eos:
            raise SpecError("tokenize: eos must be a non-empty token string or left out")
        if not isinstance(self.by_level, bool):
            raise SpecError(f"tokenize: by_level={self.by_level!r}; use true (one shard set per source and "
                            "quality level, after a quality_levels stage) or false")


def _in_ray_worker() -> bool:
    try:
        import ray

        return ray.is_initialized() and ray.get_runtime_context().worker.mode == ray.WORKER_MODE
    except Exception:  # no Ray, or an API change: behave like a plain process
        return False


class Tokenize(AnnotatorStage):
    """Encode ``text`` into ``tokens`` + ``num_tokens`` (EOS excluded)."""

    name = "tokenize"
    Config = TokenizeConfig
    reads = (S.TEXT,)
    adds: Mapping[str, pa.DataType] = {TOKENS: TOKENS_TYPE, NUM_TOKENS: pa.int64()}
    compute = Compute(kind="actor")
    #: the job spec's ``shards:`` mapping configures the token shards this stage writes
    SinkOptions = ShardOptions

    def sink(self, options: ShardOptions, *, lineage: Mapping[str, Any]):
        from stages.tokenize.shard_sink import ShardSink

        cfg: TokenizeConfig = self.config  # type: ignore[assignment]
        return ShardSink(tokenizer=cfg.tokenizer, eos=cfg.eos, options=options, lineage=lineage, by_level=cfg.by_level)

    def setup(self) -> None:
        from stages.tokenize.identity import fingerprint, load_tokenizer, resolve_eos, vocab_size

        if _in_ray_worker():
            os.environ["TOKENIZERS_PARALLELISM"] = "false"
        cfg: TokenizeConfig = self.config  # type: ignore[assignment]
        tok = load_tokenizer(cfg.tokenizer)
        if cfg.fingerprint is not None:
            got = fingerprint(tok)
            if got != cfg.fingerprint:
                raise JobError(
                    f"tokenize: tokenizer {cfg.tokenizer!r} has fingerprint {got}, the job expects "
                    f"{cfg.fingerprint}: the file changed since the job was planned"
                )
        self.eos_token, self.eos_id = resolve_eos(tok, cfg.eos, path=cfg.tokenizer)
        self.vocab_size = vocab_size(tok)
        if self.vocab_size > 2**31 - 1:
            raise SpecError(f"tokenize: vocabulary of {self.vocab_size} ids does not fit int32 tokens")
        self._tok = tok
        self._encode = getattr(tok, "encode_batch_fast", tok.encode_batch)
        self._structure: dict[str, tuple[re.Pattern, dict[str, int]]] = {}
        specials = {t.content for t in tok.get_added_tokens_decoder().values() if t.special}
        for source, tokens in cfg.structure.items():
            missing = [t for t in tokens if t not in specials]
            if missing:
                raise SpecError(f"tokenize: structure of {source!r}: {missing} are not special tokens of "
                                f"{cfg.tokenizer!r}; use a code tokenizer that reserves them (`datapipe tokenizer "
                                "train --preset code`)")
            pattern = re.compile("|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True)))
            self._structure[source] = (pattern, {t: tok.token_to_id(t) for t in tokens})

    def annotate(self, batch: pa.Table) -> dict[str, Any]:
        texts = [t if t is not None else "" for t in batch.column(S.TEXT).to_pylist()]
        if self._structure and S.SOURCE in batch.column_names:
            ids = self._encode_structured(texts, batch.column(S.SOURCE).to_pylist())
        else:
            ids = [e.ids for e in self._encode(texts, add_special_tokens=False)]
        n = len(ids)
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=n)
        total = int(lengths.sum())
        if total > 2**31 - 1:  # list<int32> offsets; Ray batches are far smaller
            raise JobError(f"tokenize: one batch produced {total} tokens; lower execution.batch_rows")
        flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int32, count=total)
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        tokens = pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, pa.int32()))
        return {TOKENS: tokens, NUM_TOKENS: pa.array(lengths, pa.int64())}

    def _encode_structured(self, texts: list[str], sources: list[str | None]) -> list[list[int]]:
        """Each text's ids; in a source with ``structure``, its structure tokens as their
        ids and the pieces between them encoded as text (one encode call for the batch)."""
        pieces: list[str] = []
        plan: list[list[int | str]] = []   # per row: piece indexes (int) and structure ids (str tag)
        for text, source in zip(texts, sources):
            rule = self._structure.get(source)
            if rule is None:
                plan.append([len(pieces)])
                pieces.append(text)
                continue
            pattern, ids = rule
            row: list[int | str] = []
            pos = 0
            for m in pattern.finditer(text):
                if m.start() > pos:
                    row.append(len(pieces))
                    pieces.append(text[pos:m.start()])
                row.append(f"{ids[m.group(0)]}")
                pos = m.end()
            if pos < len(text):
                row.append(len(pieces))
                pieces.append(text[pos:])
            plan.append(row)
        encoded = [e.ids for e in self._encode(pieces, add_special_tokens=False)] if pieces else []
        return [list(itertools.chain.from_iterable(encoded[p] if isinstance(p, int) else (int(p),) for p in row))
                for row in plan]
