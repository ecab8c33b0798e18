"""Fill-in-the-middle (FIM) as a loader-time transform of token windows.

A mix asks for it with a ``fim:`` block (:class:`FimSpec`; ``docs/code.md``). The loader
applies it to each sample after reading the window from the shards, so one shard set
serves FIM and plain mixes at any rate, and the shards stay what the tokenizer wrote.

Contract:

* A sample (``seq_len + 1`` tokens) is cut at its EOS tokens into *segments*: the pieces of
  documents it holds (the first and last may be fragments of a document that starts before
  or ends after the window). EOS tokens stay where they are. When the tokenizer has
  ``<file_sep>`` (a repository document: ``<repo_name>name<file_sep>path\ncode<file_sep>...``),
  segments are also cut at it, so each *file* is rewritten in its repository context, as
  StarCoder2 applies FIM; the piece that starts with ``<repo_name>`` (the repository's name)
  is never rewritten, and the separators stay where they are.
* Segment ``i`` of global sample ``n`` is transformed with probability ``rate``; the draws
  (whether, PSM or SPM, the two cut points) are a pure function of ``(seed, n, i)``
  (:func:`segment_draws`), so a resumed run, any data-parallel size and any number of
  prefetch threads see the same samples.
* A transformed segment is a permutation of its tokens plus three sentinels
  (:func:`permute_segment`): with cut points ``a <= b`` over its ``L`` tokens, prefix
  ``[0, a)``, middle ``[a, b)``, suffix ``[b, L)``;
  PSM: ``<fim_prefix> prefix <fim_suffix> suffix <fim_middle> middle``,
  SPM (StarCoder's variant): ``<fim_prefix> <fim_suffix> suffix <fim_middle> prefix middle``.
  In both, the model reads the middle last, after what surrounds it.
* The window keeps its length: every transformed segment adds 3 tokens, and the row is cut
  back to ``seq_len + 1`` tokens from its end (the last segment's tail, as Megatron's FIM
  cuts a sample). Nothing is padded, so ``<fim_pad>`` is reserved in the tokenizer but never
  emitted here.
* The split unit is the token (see ``docs/code.md`` for why, not the character).
* Document tokens never equal a sentinel id: the tokenizer encodes a document's text with
  ``encode_special_tokens`` (:mod:`stages.tokenize.identity`), so ``<fim_prefix>`` written in
  a file becomes ordinary text tokens.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from datapipe.errors import SpecError

FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX, FIM_PAD = "<fim_prefix>", "<fim_middle>", "<fim_suffix>", "<fim_pad>"
REPO_NAME, FILE_SEP = "<repo_name>", "<file_sep>"
#: sentinels a code tokenizer reserves (StarCoder2's names); a shard manifest's tokenizer block
#: records the ids of those its tokenizer has under ``special``
SENTINELS = (FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX, FIM_PAD, REPO_NAME, FILE_SEP)
#: the three a FIM mix needs
FIM_REQUIRED = (FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX)
UNITS = ("tokens",)
_SCALE = float(1 << 64)


@dataclass(kw_only=True, frozen=True)
class FimSpec:
    """A mix's ``fim:`` block.

    ``rate``: the probability that a segment (a document, or the fragment of one, inside a
    sample) is transformed. ``spm_rate``: of transformed segments, the share in SPM order
    (the rest PSM). ``sources``: the mix's source names it applies to (empty: all).
    ``unit``: where cut points may fall; only ``tokens`` (cut between tokens of the
    window) exists, because the loader reads token windows and does not decode them.
    """

    rate: float = 0.5
    spm_rate: float = 0.5
    sources: tuple[str, ...] = ()
    unit: str = "tokens"

    def __post_init__(self) -> None:
        for key in ("rate", "spm_rate"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise SpecError(f"fim: {key} {v!r} must be a number in [0, 1] (e.g. 0.5)")
        if self.unit not in UNITS:
            raise SpecError(
                f"fim: unit {self.unit!r} is not supported; use 'tokens' (the loader cuts token windows "
                "without decoding them; character-level cuts would need FIM applied at tokenize time, see "
                "docs/code.md)")
        if len(set(self.sources)) != len(self.sources) or any(not isinstance(s, str) or not s for s in self.sources):
            raise SpecError(f"fim: sources {list(self.sources)} must be distinct source names")

    def key(self) -> dict[str, Any]:
        """What decides the transformed samples (goes into the plan hash)."""
        return {"rate": float(self.rate), "spm_rate": float(self.spm_rate), "sources": list(self.sources),
                "unit": self.unit}


@dataclass(frozen=True, order=True)
class FimIds:
    """The sentinel ids of the shards' tokenizer (``file_sep``/``repo_name``: -1 when it has
    none: documents are not repository documents)."""

    prefix: int
    middle: int
    suffix: int
    file_sep: int = -1
    repo_name: int = -1

    @classmethod
    def from_tokenizer_block(cls, block: Mapping[str, Any], *, where: str) -> FimIds:
        """The ids a shard manifest's ``tokenizer`` block records under ``special``; a
        tokenizer without them is one :class:`SpecError` line saying how to get one."""
        special = block.get("special") or {}
        missing = [t for t in FIM_REQUIRED if not isinstance(special.get(t), int)]
        if missing:
            raise SpecError(
                f"{where}: the mix asks for fim: but the shards' tokenizer ({block.get('fingerprint')}) has no "
                f"{', '.join(missing)} token(s) in the manifest's tokenizer.special; re-tokenise with a tokenizer "
                "that reserves them (`datapipe tokenizer train --preset code`) or remove fim: from the mix")
        return cls(prefix=int(special[FIM_PREFIX]), middle=int(special[FIM_MIDDLE]), suffix=int(special[FIM_SUFFIX]),
                   file_sep=int(special.get(FILE_SEP, -1)), repo_name=int(special.get(REPO_NAME, -1)))


def segment_draws(seed: int, sample: int, segment: int) -> tuple[float, float, int, int]:
    """Four independent draws for segment ``segment`` of global sample ``sample``: two
    uniforms in ``[0, 1)`` (whether to transform; SPM or PSM) and two 64-bit integers (the cut
    points). A keyed hash of the three integers: the same on every machine and thread."""
    h = hashlib.blake2b(struct.pack("<QQQ", seed, sample, segment), digest_size=32, person=b"datapipe-fim")
    x0, x1, x2, x3 = struct.unpack("<4Q", h.digest())
    return x0 / _SCALE, x1 / _SCALE, x2, x3


def permute_segment(seg: np.ndarray, a: int, b: int, *, spm: bool, ids: FimIds) -> np.ndarray:
    """``seg`` cut at ``a <= b`` into prefix, middle and suffix, reordered with the three
    sentinels (module doc): ``len(seg) + 3`` tokens holding exactly ``seg``'s tokens."""
    pre, mid, suf = seg[:a], seg[a:b], seg[b:]
    p, m, s = (np.array([i], dtype=seg.dtype) for i in (ids.prefix, ids.middle, ids.suffix))
    if spm:
        return np.concatenate([p, s, suf, m, pre, mid])
    return np.concatenate([p, pre, s, suf, m, mid])


class FimTransform:
    """:class:`FimSpec` bound to a plan: its seed, the sources it applies to, the sentinel
    ids and EOS. :meth:`apply` rewrites a block of sample rows in place."""

    def __init__(self, spec: FimSpec, *, seed: int, names: Sequence[str], ids: FimIds, eos_id: int) -> None:
        self.spec = spec
        self.seed = seed
        self.ids = ids
        self.eos_id = eos_id
        wanted = set(spec.sources) if spec.sources else set(names)
        self.applies = np.array([n in wanted for n in names], dtype=bool)

    def row(self, row: np.ndarray, sample: int) -> np.ndarray:
        """Global sample ``sample``'s window transformed (same length and dtype)."""
        width = row.shape[0]
        cut = row == self.eos_id
        if self.ids.file_sep >= 0:
            cut |= row == self.ids.file_sep
        ends = np.flatnonzero(cut)
        starts = np.concatenate([[0], ends + 1])
        stops = np.concatenate([ends, [width]])
        pieces, changed = [], False
        for i, (a0, a1) in enumerate(zip(starts.tolist(), stops.tolist())):
            seg = row[a0:a1]
            L = a1 - a0
            if L and seg[0] != self.ids.repo_name:
                u, v, c1, c2 = segment_draws(self.seed, sample, i)
                if u < self.spec.rate:
                    x, y = sorted((c1 % (L + 1), c2 % (L + 1)))
                    seg = permute_segment(seg, x, y, spm=v < self.spec.spm_rate, ids=self.ids)
                    changed = True
            pieces.append(seg)
            if a1 < width:
                pieces.append(row[a1:a1 + 1])  # the EOS or <file_sep>
        if not changed:
            return row
        return np.concatenate(pieces)[:width]

    def apply(self, tokens: np.ndarray, first_sample: int, sources: np.ndarray) -> None:
        """Transform rows ``tokens[k]`` (global samples ``first_sample + k``) in place, those
        whose source (``sources[k]``, an index into the plan's names) FIM applies to."""
        if self.spec.rate <= 0:
            return
        for k in np.flatnonzero(self.applies[sources]).tolist():
            tokens[k] = self.row(tokens[k], first_sample + k)
