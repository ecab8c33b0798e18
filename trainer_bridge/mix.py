"""Mix manifests (``mixes/*.yaml``) and the mix plan they resolve to.

A mix manifest names source manifests with token-fraction weights (or a ``schedule:`` of
phases by token count, each with its weights and an optional linear transition from the
previous phase), a sequence length, a seed, a token budget and optionally a held-out
``validation:`` tail per source (format: ``docs/formats.md``; math: ``docs/mixes.md``).
:func:`resolve_mix` turns it into a :class:`MixPlan`, whose ``sample(n)`` is a pure function
of the plan and ``n``: sample ``n`` is ``seq_len + 1`` tokens of one source's stream, the
source chosen by :class:`~trainer_bridge.order.Schedule` (divisor sequences per segment), the
window by the keyed permutation in :mod:`trainer_bridge.order`. Nothing per sample or per
window is stored.

The *plan hash* covers what decides the sample sequence (sources' content, weights and
schedule, the validation split, seq_len, seed) and deliberately not the token budget: raising the budget appends samples
and leaves earlier ones alone, so a run may be extended and still resume. Sources' content
enters as the manifests' per-shard counts and content hashes; :meth:`MixPlan.verify_content`
(which the loader runs by default) proves the files still have those hashes, so the plan
hash stands for the bytes actually read.

:meth:`MixPlan.prefix_key` / :meth:`MixPlan.prefix_problem` decide whether an edited mix still
serves a checkpoint's trained samples identically (a mid-run reweight).

``datapipe mix new`` / ``plan`` / ``plot`` live here too (:func:`add_cli`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import sys
import threading
from dataclasses import dataclass, field, fields
from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import yaml

from datapipe import fs
from datapipe.errors import DatapipeError, SpecError
from datapipe.megatron import SourceManifest, load_manifest
from trainer_bridge.adaptive import AdaptiveSpec
from trainer_bridge.fim import FimIds, FimSpec, FimTransform
from trainer_bridge.order import (
    FEISTEL_ROUNDS, Schedule, Segment, epoch_keys, half_bits, permute_many, rational_weights,
)
from trainer_bridge.shards import HashCache, TokenStream, verify_content

log = logging.getLogger(__name__)

PLAN_VERSION = 2  # 2: the key covers each shard's document count and .idx hash too
READ_BLOCK = 4096  # samples located at once by `MixPlan.read` (reads come in consecutive batches)


@dataclass(kw_only=True, frozen=True)
class MixSource:
    """One entry of ``sources:``: a source manifest path (relative to the mix file) and weight
    (left out when the mix has a ``schedule:``, whose phases carry the weights)."""

    manifest: str
    weight: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.manifest, str) or not self.manifest:
            raise SpecError(f"source manifest {self.manifest!r} must be a path to a manifest.json")
        if self.weight is None:
            return
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)):
            raise SpecError(f"source {self.manifest}: weight {self.weight!r} must be a number > 0")
        if not math.isfinite(self.weight):  # YAML's .nan / .inf are floats, but no token fraction
            raise SpecError(f"source {self.manifest}: weight {self.weight!r} is not a finite number; give the "
                            "source a positive token fraction (e.g. 0.3), or remove it from the mix")
        if not self.weight > 0:
            raise SpecError(f"source {self.manifest}: weight {self.weight:g} must be > 0: give the "
                            "source a positive token fraction, or remove it from the mix")


@dataclass(kw_only=True, frozen=True)
class PhaseSpec:
    """One entry of ``schedule:``: ``tokens`` drawn with ``weights`` (source name -> token
    fraction; a source left out gets 0). ``transition``: the first that many tokens of the
    phase move linearly from the previous phase's weights to these. The last phase has no
    ``tokens``: it runs to the end of the budget (and beyond, when the budget is raised)."""

    name: str
    weights: dict[str, float]
    tokens: int | None = None
    transition: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SpecError("phase name must be a non-empty string")
        if not self.weights:
            raise SpecError(f"phase {self.name!r}: weights is empty; give at least one source a weight > 0")
        for src, w in self.weights.items():
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
                raise SpecError(f"phase {self.name!r}: weight of {src!r} is {w!r}; it must be a finite number >= 0 "
                                "(a token fraction, e.g. 0.3; 0 or leaving the source out: not read in this phase)")
        if not any(w > 0 for w in self.weights.values()):
            raise SpecError(f"phase {self.name!r}: every weight is 0; give at least one source a weight > 0")
        if self.tokens is not None and self.tokens < 1:
            raise SpecError(f"phase {self.name!r}: tokens {self.tokens} must be >= 1")
        if self.transition < 0:
            raise SpecError(f"phase {self.name!r}: transition {self.transition} must be >= 0 (tokens)")
        if self.tokens is not None and self.transition > self.tokens:
            raise SpecError(f"phase {self.name!r}: transition {self.transition:,} is longer than the phase "
                            f"({self.tokens:,} tokens); shorten it or lengthen the phase")


@dataclass(kw_only=True, frozen=True)
class ValidationSpec:
    """``validation:``: per source, the last documents holding at least ``tokens`` tokens are
    held out of training and used for validation loss."""

    tokens: int

    def __post_init__(self) -> None:
        if isinstance(self.tokens, bool) or not isinstance(self.tokens, int) or self.tokens < 1:
            raise SpecError(f"validation: tokens {self.tokens!r} must be an integer >= 1 (per source)")


@dataclass(kw_only=True, frozen=True)
class MixSpec:
    """A mix manifest as written; paths are resolved against ``base_dir`` (the file's folder)."""

    name: str
    seq_len: int
    token_budget: int
    sources: tuple[MixSource, ...]
    seed: int = 0
    max_epochs: float = 20.0
    warn_epochs: float = 4.0
    schedule: tuple[PhaseSpec, ...] = ()
    adaptive: AdaptiveSpec | None = None
    validation: ValidationSpec | None = None
    fim: FimSpec | None = None
    base_dir: Path = field(default=Path("."), compare=False)
    path: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        where = f"mix {self.path or self.name}"
        if not isinstance(self.name, str) or not self.name:
            raise SpecError(f"{where}: name must be a non-empty string")
        for key in ("seq_len", "token_budget", "seed"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int):
                raise SpecError(f"{where}: {key} is {v!r}; it must be an integer")
        if self.seq_len < 1:
            raise SpecError(f"{where}: seq_len {self.seq_len} must be >= 1 (e.g. 2048)")
        if self.token_budget < self.seq_len:
            raise SpecError(f"{where}: token_budget {self.token_budget} is below one sample "
                            f"(seq_len {self.seq_len}); raise it")
        if self.seed < 0:
            raise SpecError(f"{where}: seed {self.seed} must be >= 0")
        if not self.max_epochs > 0 or not self.warn_epochs > 0:
            raise SpecError(f"{where}: max_epochs ({self.max_epochs}) and warn_epochs "
                            f"({self.warn_epochs}) must be > 0")
        if self.warn_epochs > self.max_epochs:
            raise SpecError(f"{where}: warn_epochs {self.warn_epochs} is above max_epochs "
                            f"{self.max_epochs}; lower warn_epochs")
        if not self.sources:
            raise SpecError(f"{where}: sources is empty; list at least one source manifest")
        given = [i for i, s in enumerate(self.sources) if s.weight is not None]
        if self.schedule and given:
            raise SpecError(f"{where}: sources[{given[0]}] has a weight, but the mix has a schedule: weights go "
                            "in the phases (schedule[i].weights); remove the sources' weights")
        if not self.schedule and len(given) != len(self.sources):
            missing = [i for i in range(len(self.sources)) if i not in given]
            raise SpecError(f"{where}: sources[{missing[0]}] has no weight; give every source a weight, or "
                            "add a schedule: with phases that carry the weights")
        names = [p.name for p in self.schedule]
        if len(set(names)) != len(names):
            raise SpecError(f"{where}: schedule phase names {names} repeat; give each phase its own name")
        for i, p in enumerate(self.schedule):
            last = i == len(self.schedule) - 1
            if not last and p.tokens is None:
                raise SpecError(f"{where}: schedule[{i}] ({p.name!r}) needs tokens (only the last phase runs "
                                "to the end of the budget)")
            if last and p.tokens is not None:
                raise SpecError(f"{where}: the last phase ({p.name!r}) runs to the end of the token budget: "
                                "remove its tokens, or add a phase after it")
            if i == 0 and p.transition:
                raise SpecError(f"{where}: the first phase ({p.name!r}) has a transition but no phase before it "
                                "to start from; remove its transition")
        if self.validation is not None and self.validation.tokens < self.seq_len + 1:
            raise SpecError(f"{where}: validation tokens {self.validation.tokens} is below one sample "
                            f"(seq_len + 1 = {self.seq_len + 1}); raise it")
        if self.adaptive is not None and self.schedule:
            raise SpecError(f"{where}: adaptive: moves the weights of a mix with sources' weights; this mix has a "
                            "schedule: of phases. Remove the schedule (the sources' weights are where the policy "
                            "starts) or remove adaptive:")
        if self.adaptive is not None and self.adaptive.signal == "validation" and self.validation is None:
            raise SpecError(f"{where}: adaptive: signal validation needs a validation split: add "
                            "`validation: {tokens: N}` to the mix, or use signal: train")

    @property
    def total_samples(self) -> int:
        return self.token_budget // self.seq_len


_MIX_KEYS = {f.name for f in fields(MixSpec)} - {"base_dir", "path"}
PLAN_KEY_VERSION = 1  # the prefix description a loader state carries (see MixPlan.prefix_key)


def load_mix(path: str | os.PathLike) -> MixSpec:
    """Read a mix manifest through :mod:`datapipe.config` (as a job spec is read): a missing
    file, an unknown or missing key, or a wrong type is a :class:`SpecError` naming the file
    and the key."""
    from datapipe.config import build, load_yaml_mapping

    path = Path(path)
    raw = load_yaml_mapping(path, what="mix manifest", keys=_MIX_KEYS, missing="write one with `datapipe mix new`")
    return build(MixSpec, raw, where=f"mix {path}", given={"base_dir": path.parent, "path": path})


def position_ids(tokens: np.ndarray, eos_id: int) -> np.ndarray:
    """Per-document positions for ``tokens`` (``[..., T]``): 0 at the window start and right
    after every EOS, counting up inside a document. Document starts are where it is 0, so
    ``cu_seqlens`` for variable-length attention are ``flatnonzero(pos.ravel() == 0)``."""
    t = tokens.shape[-1]
    flat = tokens.reshape(-1, t)
    start = np.empty(flat.shape, dtype=bool)
    start[:, 0] = True
    np.equal(flat[:, :-1], eos_id, out=start[:, 1:])
    starts = np.flatnonzero(start)  # every row starts a segment, so segments never span rows
    lengths = np.diff(starts, append=flat.size)
    return (np.arange(flat.size, dtype=np.int64) - np.repeat(starts, lengths)).reshape(tokens.shape)


@dataclass(kw_only=True, frozen=True)
class SourcePlan:
    """One row of the plan report (whole run, or one phase of a schedule)."""

    name: str
    manifest: str
    weight: Fraction
    tokens_available: int
    windows: int
    samples: int
    tokens_drawn: int
    epochs: float
    weight_from: Fraction | None = None   # a phase starting with a transition: the weight it starts from
    epochs_total: float | None = None     # a phase: epochs read from the start of the run to its end


@dataclass(kw_only=True, frozen=True)
class PhasePlan:
    """One phase of a schedule in the plan report: samples ``[start, end)`` of the budget."""

    name: str
    start: int
    end: int
    transition_end: int
    rows: tuple[SourcePlan, ...]
    warnings: tuple[str, ...]


@dataclass(kw_only=True, frozen=True)
class PlanReport:
    """What ``datapipe mix plan`` prints: per source, what is there and what the budget draws;
    with a schedule, the same per phase."""

    name: str
    plan_hash: str
    seq_len: int
    seed: int
    token_budget: int
    samples: int
    rows: tuple[SourcePlan, ...]
    warnings: tuple[str, ...]
    phases: tuple[PhasePlan, ...] = ()
    validation: tuple[tuple[str, int, int], ...] = ()   # (source, held-out tokens, documents)
    adaptive: str = ""   # the adaptive: policy in words (the weights above are where it starts)
    fim: str = ""        # the fim: block in words (which sources, rates, sentinel ids)

    @staticmethod
    def _table(head: list[str], body: list[list[str]]) -> list[str]:
        widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]
        fmt = lambda row: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        return [fmt(head), fmt(["-" * w for w in widths])] + [fmt(row) for row in body]

    def format(self) -> str:
        # with a schedule the run's "weight" column is each source's realised share of the budget
        head = ["source", "weight", "tokens available", "windows", "samples", "tokens drawn", "epochs"]
        body = [[r.name, f"{float(r.weight):.4f}", f"{r.tokens_available:,}",
                 f"{r.windows:,}", f"{r.samples:,}", f"{r.tokens_drawn:,}", f"{r.epochs:.3f}"] for r in self.rows]
        body.append(["total", "1.0000", f"{sum(r.tokens_available for r in self.rows):,}",
                     f"{sum(r.windows for r in self.rows):,}", f"{self.samples:,}",
                     f"{self.samples * self.seq_len:,}", ""])
        lines = [f"mix {self.name}: seq_len {self.seq_len}, seed {self.seed}, token budget "
                 f"{self.token_budget:,} = {self.samples:,} samples"]
        lines += self._table(head, body)
        lines += [f"warning: {w}" for w in self.warnings]
        if self.adaptive:
            lines.append(f"adaptive: {self.adaptive}")
        if self.fim:
            lines.append(f"fim: {self.fim}")
        for v_name, v_tokens, v_docs in self.validation:
            lines.append(f"validation: {v_name}: last {v_docs:,} documents ({v_tokens:,} tokens) held out")
        for ph in self.phases:
            T = self.seq_len
            ramp = (f", transition over samples [{ph.start:,}, {ph.transition_end:,})"
                    if ph.transition_end > ph.start else "")
            lines.append("")
            lines.append(f"phase {ph.name}: samples [{ph.start:,}, {ph.end:,}) = tokens [{ph.start * T:,}, "
                         f"{ph.end * T:,}){ramp}")
            phead = ["source", "weight", "samples", "tokens drawn", "epochs", "epochs so far"]
            pbody = [[r.name, (f"{float(r.weight_from):.3f}->" if r.weight_from is not None else "")
                      + f"{float(r.weight):.3f}", f"{r.samples:,}", f"{r.tokens_drawn:,}", f"{r.epochs:.3f}",
                      f"{r.epochs_total:.3f}"] for r in ph.rows]
            lines += self._table(phead, pbody)
            lines += [f"warning: phase {ph.name}: {w}" for w in ph.warnings]
        lines.append(f"plan hash: {self.plan_hash}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        row = lambda r: {"name": r.name, "manifest": r.manifest, "weight": float(r.weight),
                         "tokens_available": r.tokens_available, "windows": r.windows, "samples": r.samples,
                         "tokens_drawn": r.tokens_drawn, "epochs": r.epochs,
                         **({"weight_from": float(r.weight_from)} if r.weight_from is not None else {}),
                         **({"epochs_total": r.epochs_total} if r.epochs_total is not None else {})}
        return {"name": self.name, "plan_hash": self.plan_hash, "seq_len": self.seq_len, "seed": self.seed,
                "token_budget": self.token_budget, "samples": self.samples, "warnings": list(self.warnings),
                "sources": [row(r) for r in self.rows],
                "phases": [{"name": p.name, "start": p.start, "end": p.end, "transition_end": p.transition_end,
                            "warnings": list(p.warnings), "sources": [row(r) for r in p.rows]} for p in self.phases],
                "validation": [{"source": n, "tokens": t, "documents": d} for n, t, d in self.validation],
                **({"adaptive": self.adaptive} if self.adaptive else {}),
                **({"fim": self.fim} if self.fim else {})}


def _segments(spec: MixSpec, names: Sequence[str]) -> list[Segment]:
    """The mix's weights over the run as :class:`~trainer_bridge.order.Segment` s (in samples).

    A phase starts at sample ``floor(tokens before it / seq_len)``; its transition covers
    its first ``floor(transition / seq_len)`` samples."""
    where = f"mix {spec.path or spec.name}"
    if not spec.schedule:
        return [Segment(0, None, tuple(rational_weights([s.weight for s in spec.sources])))]
    segs: list[Segment] = []
    tok, prev = 0, None
    for i, p in enumerate(spec.schedule):
        unknown = sorted(set(p.weights) - set(names))
        if unknown:
            raise SpecError(f"{where}: schedule[{i}] ({p.name!r}) weights name unknown source(s) {unknown}; the "
                            f"mix's sources are {list(names)} (each manifest's source name)")
        raw = [float(p.weights.get(n, 0)) for n in names]
        pos = iter(rational_weights([x for x in raw if x > 0]))
        w = tuple(next(pos) if x > 0 else Fraction(0) for x in raw)
        start = tok // spec.seq_len
        end = None if p.tokens is None else (tok + p.tokens) // spec.seq_len
        if end is not None and end <= start:
            raise SpecError(f"{where}: phase {p.name!r} ({p.tokens:,} tokens) covers no whole sample of seq_len "
                            f"{spec.seq_len}; lengthen it or remove it")
        ramp = p.transition // spec.seq_len
        if p.transition and ramp < 1:
            raise SpecError(f"{where}: phase {p.name!r}: transition {p.transition} tokens is below one sample "
                            f"(seq_len {spec.seq_len}); lengthen it or set it to 0")
        if ramp:
            segs.append(Segment(start, start + ramp, w, ramp_from=prev, phase=p.name))
        if end is None or start + ramp < end:
            segs.append(Segment(start + ramp, end, w, phase=p.name))
        prev, tok = w, tok + (p.tokens or 0)
    return segs


def _fim_transform(spec: MixSpec, manifests: Sequence[SourceManifest], names: Sequence[str],
                   eos_id: int) -> FimTransform | None:
    """The mix's ``fim:`` bound to its sources, or None. Its sources must be the mix's, and
    their shards' tokenizer must record the FIM sentinels (one line saying how to fix it)."""
    if spec.fim is None:
        return None
    where = f"mix {spec.path or spec.name}"
    unknown = sorted(set(spec.fim.sources) - set(names))
    if unknown:
        raise SpecError(f"{where}: fim: sources {unknown} are not sources of the mix; its sources are "
                        f"{list(names)} (each manifest's source name)")
    applies = [m for m in manifests if not spec.fim.sources or m.source in spec.fim.sources]
    ids = {FimIds.from_tokenizer_block(m.tokenizer, where=f"{where}: source {m.source!r}") for m in applies}
    if len(ids) > 1:
        raise SpecError(f"{where}: fim: the sources' manifests record different sentinel ids ({sorted(ids)}); "
                        "re-tokenise them with one tokenizer")
    return FimTransform(spec.fim, seed=spec.seed, names=names, ids=ids.pop(), eos_id=eos_id)


def _adaptive_words(spec: MixSpec) -> str:
    a = spec.adaptive
    if a is None:
        return ""
    bounds = "".join(f"; {k} " + ", ".join(f"{n} {w:g}" for n, w in v.items())
                     for k, v in (("floors", a.floors), ("ceilings", a.ceilings)) if v)
    return (f"every {a.every} steps the weights move by {a.rule} (eta {a.eta:g}, smoothing {a.smoothing:g}{bounds}) "
            f"from the per-source {a.signal} loss, on a grid of 1/{a.grid}; the weights above are where it starts "
            "(docs/mixes.md: Adaptive schedules)")


def _frac(w: Fraction) -> str:
    return f"{w.numerator}/{w.denominator}"


def reserve_tail(stream: TokenStream, eos_id: int, tokens: int) -> tuple[int, int]:
    """Where a source's validation split starts: the start of the last documents that hold
    at least ``tokens`` tokens (a position right after an EOS). Returns ``(cut, documents)``;
    ``cut == 0`` when the whole source would be needed."""
    n = stream.n_tokens
    want = n - tokens  # the cut is the last document start <= want
    if want <= 0:
        return 0, 0
    hi, chunk = want, 1 << 16
    while hi > 0:
        lo = max(0, hi - chunk)
        part = stream.read(lo, hi - lo)   # tokens [lo, hi): an EOS at e means a document starts at e + 1
        ends = np.flatnonzero(part == eos_id)
        if ends.size:
            cut = lo + int(ends[-1]) + 1
            break
        hi, chunk = lo, chunk * 2
    else:
        return 0, 0
    docs = int(np.count_nonzero(stream.read(cut, n - cut) == eos_id))
    return cut, docs


def _first_doc_start(stream: TokenStream, eos_id: int, lo: int, hi: int) -> int | None:
    """The first document start (a position right after an EOS) in ``[lo, hi]``, or None."""
    pos, chunk = max(lo - 1, 0), 1 << 16
    while pos < hi:
        part = stream.read(pos, min(chunk, hi - pos))
        ends = np.flatnonzero(part == eos_id)
        ends = ends[pos + ends + 1 >= lo]
        if ends.size:
            start = pos + int(ends[0]) + 1
            return start if start <= hi else None
        pos, chunk = pos + len(part), chunk * 2
    return None


def _validation_advice(sources: Sequence[tuple[TokenStream, SourceManifest]], seq_len: int) -> str:
    """Which sources a validation split does not fit, and the fix that can work: the split
    holds out whole documents, so a source is splittable only at a document start with a
    sample (``seq_len + 1`` tokens) on each side; ``validation.tokens`` up to ``n - start``
    for the first such start works. A source with no such start (one document) cannot be
    split at any ``tokens``: lowering it would not help."""
    need = seq_len + 1
    fits, stuck = [], []
    for st, m in sources:
        start = _first_doc_start(st, m.eos_id, need, st.n_tokens - need)
        docs = f"{m.total_documents:,} document{'s' if m.total_documents != 1 else ''}"
        if start is None:
            stuck.append(f"{st.source} ({st.n_tokens:,} tokens in {docs})")
        else:
            fits.append((f"{st.source} ({st.n_tokens:,} tokens)", st.n_tokens - start))
    parts = []
    if fits:
        most = min(t for _, t in fits)
        parts.append(f"{', '.join(n for n, _ in fits)}: lower validation.tokens to {most:,} or less "
                     f"(and at least seq_len + 1 = {need}), or add data")
    if stuck:
        parts.append(f"{', '.join(stuck)}: the split holds out whole documents and no document boundary leaves "
                     f"a sample of seq_len + 1 = {need} tokens on both sides, so no validation.tokens helps; "
                     "add documents to it, or lower seq_len, or mix without validation:")
    return "; ".join(parts)


class MixPlan:
    """A resolved mix: ``sample(n)`` for any ``n >= 0``, and batched token reads.

    Holds O(sources + shards + phases) state: the token streams, the schedule's segments,
    window counts. ``total_samples`` is where the token budget ends; ``sample`` itself is
    defined beyond it (that is what makes a larger budget an extension of a smaller one).
    With a validation split, each source's training windows stop at its held-out tail
    (``train_tokens``); the tail is read only by :mod:`trainer_bridge.evaluate`.
    """

    def __init__(self, spec: MixSpec, manifests: Sequence[SourceManifest], streams: Sequence[TokenStream],
                 *, train_tokens: Sequence[int] | None = None, val_documents: Sequence[int] = ()) -> None:
        self.spec = spec
        self.manifests = tuple(manifests)
        self.streams = tuple(streams)
        self.names = tuple(m.source for m in manifests)
        self.seq_len = spec.seq_len
        self.seed = spec.seed
        self.train_tokens = tuple(train_tokens) if train_tokens is not None else tuple(st.n_tokens for st in streams)
        self.val_documents = tuple(val_documents)
        self.segments = tuple(_segments(spec, self.names))
        self.static_segments = self.segments    # the mix's own; set_history appends the adaptive updates
        self.history: tuple[dict[str, Any], ...] = ()
        self.schedule = Schedule(self.segments, len(self.names))
        self.weights = self.segments[0].weights
        self.n_windows = tuple((t - 1) // spec.seq_len for t in self.train_tokens)
        self._nw = np.array(self.n_windows, dtype=np.int64)
        self._half = np.array([half_bits(n) for n in self.n_windows], dtype=np.uint64)
        self._key_cache: dict[tuple[int, int], np.ndarray] = {}
        self._verified: set[tuple[int, int]] = set()
        self._blocks: dict[int, tuple[list[int], list[int], list[bool], np.ndarray]] = {}
        self._blocks_lock = threading.Lock()
        # All shards of all sources in one address space: one vectorised lookup per batch.
        self._base = np.cumsum([0] + [st.n_tokens for st in streams[:-1]]).astype(np.int64)
        self._maps = [m for st in streams for m in st.shard_arrays]
        sizes = np.array([m.shape[0] for m in self._maps], dtype=np.int64)
        self._offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._sizes = sizes
        self.eos_id = manifests[0].eos_id
        self.vocab_size = manifests[0].vocab_size
        self.dtype = np.dtype("<i4") if any(m.dtype == "int32" for m in manifests) else np.dtype("<u2")
        self.total_samples = spec.total_samples
        key: dict[str, Any] = {
            "version": PLAN_VERSION, "seq_len": spec.seq_len, "seed": spec.seed,
            "sources": [{"weight": _frac(w), **m.content_key()} for w, m in zip(self.weights, manifests)]}
        if spec.schedule:  # a plain mix keeps the key (and hash) it always had
            key["schedule"] = [{"phase": g.phase, "start": g.start, "end": g.end,
                                "weights": [_frac(w) for w in g.weights],
                                "from": None if g.ramp_from is None else [_frac(w) for w in g.ramp_from]}
                               for g in self.segments]
        if spec.validation is not None:
            key["validation"] = {"tokens": spec.validation.tokens, "train_tokens": list(self.train_tokens)}
        if spec.adaptive is not None:   # the policy decides samples too; its history travels in the loader state
            key["adaptive"] = spec.adaptive.key()
        self.fim = _fim_transform(spec, self.manifests, self.names, self.eos_id)
        if self.fim is not None:   # a mix without fim: keeps the key (and hash) it always had
            key["fim"] = self._fim_key()
        digest = hashlib.blake2b(json.dumps(key, sort_keys=True).encode(), digest_size=16).hexdigest()
        self.plan_hash = f"plan-v{PLAN_VERSION}:{digest}"

    def __repr__(self) -> str:
        return f"MixPlan({self.spec.name!r}, sources={list(self.names)}, {self.plan_hash})"

    def set_history(self, history: Sequence[dict[str, Any]]) -> None:
        """Serve the mix's own segments up to the first update, then each update's weights from
        the global sample ``at`` which it takes effect (``adaptive:``, :mod:`trainer_bridge.adaptive`).
        An update is a segment whose weights were known only at run time: ``sample(n)`` stays a
        pure function of the plan and the history. Callers must not read concurrently (the
        loader drops its prefetched batches first)."""
        segs = list(self.static_segments)
        for i, e in enumerate(history):
            at, units = int(e["at"]), [int(e["units"].get(n, 0)) for n in self.names]
            if sorted(e["units"]) != sorted(self.names) or min(units) < 0 or not sum(units):
                raise SpecError(f"mix {self.spec.path or self.spec.name}: weight update {i} (step {e.get('step')}) "
                                f"names sources {sorted(e['units'])} with units {units}, but the mix's sources are "
                                f"{list(self.names)}: resume with the mix the checkpoint was trained on")
            if at < 1 or any(g.start >= at for g in segs[1:]) or segs[-1].ramp_from is not None:
                raise SpecError(f"mix {self.spec.path or self.spec.name}: weight update {i} takes effect at "
                                f"sample {at}, not after the previous segment's start: the history is damaged")
            last = segs[-1]
            segs[-1] = Segment(last.start, at, last.weights, last.ramp_from, last.phase)
            segs.append(Segment(at, None, tuple(Fraction(u, sum(units)) for u in units), phase=f"step {e['step']}"))
        self.segments = tuple(segs)
        self.schedule = Schedule(self.segments, len(self.names))
        self.history = tuple(history)
        with self._blocks_lock:
            self._blocks.clear()

    def _fim_words(self) -> str:
        if self.fim is None:
            return ""
        f, ids = self.fim.spec, self.fim.ids
        which = [n for n, on in zip(self.names, self.fim.applies) if on]
        return (f"documents of {', '.join(which)} rewritten fill-in-the-middle at rate {f.rate:g} ({f.spm_rate:g} of "
                f"them SPM, the rest PSM), cut between {f.unit}; sentinel ids <fim_prefix> {ids.prefix}, "
                f"<fim_middle> {ids.middle}, <fim_suffix> {ids.suffix}"
                + (f"; each file of a repository document on its own (cut at <file_sep> {ids.file_sep})"
                   if ids.file_sep >= 0 else ""))

    def _fim_key(self) -> dict[str, Any]:
        ids = self.fim.ids
        return {**self.fim.spec.key(), "ids": [ids.prefix, ids.middle, ids.suffix, ids.file_sep, ids.repo_name]}

    # -- what a checkpoint remembers of the plan, and which edits keep the trained prefix ----
    def prefix_key(self) -> dict[str, Any]:
        """What decides samples: seq_len, seed, each source's content and training tokens, and
        the segments with their exact weights (by source name). A loader state carries it so
        that a resume with an edited mix can prove the samples it already trained on are
        unchanged (:meth:`prefix_problem`)."""
        named = lambda ws: [[n, _frac(w)] for n, w in zip(self.names, ws) if w > 0]
        return {"version": PLAN_KEY_VERSION, "seq_len": self.seq_len, "seed": self.seed,
                **({"fim": self._fim_key()} if self.fim is not None else {}),
                "sources": [{"name": n, "train_tokens": t, "content": hashlib.blake2b(
                    json.dumps(m.content_key(), sort_keys=True).encode(), digest_size=16).hexdigest()}
                    for n, t, m in zip(self.names, self.train_tokens, self.manifests)],
                "segments": [{"phase": g.phase, "start": g.start, "end": g.end, "weights": named(g.weights),
                              "from": None if g.ramp_from is None else named(g.ramp_from)}
                             for g in self.static_segments]}   # an adaptive history travels apart from it

    def prefix_problem(self, old: dict[str, Any], n: int) -> str | None:
        """Why this plan would serve any of samples ``[0, n)`` differently from the plan
        ``old`` (a :meth:`prefix_key`) did, or None when it serves them identically. Sources may
        be appended (with weight 0 before ``n``); a phase running at ``n`` may end at ``n`` or
        later; a transition running at ``n`` cannot change; everything before ``n`` is fixed."""
        T = self.seq_len
        if old.get("version") != PLAN_KEY_VERSION:
            return f"the checkpoint's plan description has version {old.get('version')!r}, not {PLAN_KEY_VERSION}"
        if (old["seq_len"], old["seed"]) != (self.seq_len, self.seed):
            return (f"seq_len or seed changed (seq_len {old['seq_len']} -> {self.seq_len}, seed {old['seed']} -> "
                    f"{self.seed}), which moves every sample")
        new_fim = self._fim_key() if self.fim is not None else None
        if old.get("fim") != new_fim:
            return (f"fim: changed ({old.get('fim')} -> {new_fim}), which changes every sample it applies to; "
                    "keep the checkpoint's fim: block")
        new_sources = self.prefix_key()["sources"]
        for i, src in enumerate(old["sources"]):
            if i >= len(new_sources) or new_sources[i]["name"] != src["name"]:
                return (f"source {src['name']!r} was removed or moved (sources[{i}] is now "
                        f"{new_sources[i]['name'] if i < len(new_sources) else 'missing'}): keep the sources in "
                        "their order and append new ones; to stop reading a source, give it weight 0 in the "
                        "phases after the checkpoint")
            if new_sources[i] != src:
                what = "its training tokens (the validation split) changed" if \
                    new_sources[i]["content"] == src["content"] else "its shards' content changed"
                return f"source {src['name']!r}: {what}"
        new_segs = self.prefix_key()["segments"]
        by_start = {g["start"]: g for g in new_segs}
        for g in old["segments"]:
            if g["start"] >= n:
                break
            label = f"phase {g['phase']!r}" if g["phase"] else "the mix's weights"
            h = by_start.get(g["start"])
            if h is None or h["from"] != g["from"] or (h["from"] is not None and h != g):
                kind = "transition" if g["from"] is not None else "segment"
                return (f"{label}: its {kind} starting at sample {g['start']:,} (token {g['start'] * T:,}) is not "
                        f"in the new mix as it was, but samples from {g['start']:,} up to the checkpoint's cursor "
                        f"{n:,} were trained with it"
                        + (" (a transition cannot change once it has begun)" if g["from"] is not None else ""))
            if h["weights"] != g["weights"]:
                return (f"{label}: its weights changed, but samples [{g['start']:,}, "
                        f"{min(n, g['end']) if g['end'] is not None else n:,}) were trained with {g['weights']}; "
                        f"end the phase at token {n * T:,} (the checkpoint's cursor) and put the new weights in "
                        "a phase after it")
            old_end = g["end"] if g["end"] is not None else None
            if old_end is not None and old_end <= n:
                if h["end"] != old_end:
                    return (f"{label} ended at sample {old_end:,} (token {old_end * T:,}), before the checkpoint's "
                            f"cursor {n:,}, and now ends at {h['end']}: samples after it were trained with the next "
                            "phase; phases that ended before the checkpoint cannot change")
            elif h["end"] is not None and h["end"] < n:
                return (f"{label} now ends at sample {h['end']:,} (token {h['end'] * T:,}), before the checkpoint's "
                        f"cursor {n:,} (token {n * T:,}): samples [{h['end']:,}, {n:,}) were trained with its "
                        f"weights. Make it last at least {(n - g['start']) * T:,} tokens (to token {n * T:,})")
        return None

    def verify_content(self, *, cache: HashCache | None, rank: int = 0, world: int = 1) -> int:
        """Check the content of every ``world``-th shard of the mix, from the ``rank``-th
        (data-parallel ranks share the work; ``world=1``: all of them), skipping shards
        ``cache`` has seen unchanged. Raises naming the first bad shard; returns how many
        shards were read."""
        if (0, 1) in self._verified or (rank, world) in self._verified:
            return 0
        items = [(m, rec) for m in self.manifests for rec in m.shards]
        n = verify_content(items[rank::world], cache=cache)
        self._verified.add((rank, world))
        log.info("mix %s: content of %d shard(s) checked, %d known good from the cache", self.spec.name, n,
                 len(items[rank::world]) - n)
        return n

    def sample(self, n: int) -> tuple[str, int]:
        """``(source name, window index)`` of global sample ``n``; the window covers stream
        tokens ``[window * seq_len, window * seq_len + seq_len + 1)``."""
        src, win = self.locate(n, 1)
        return self.names[int(src[0])], int(win[0])

    def _epoch_keys(self, s: int, epoch: int) -> np.ndarray:
        key = (s, epoch)
        got = self._key_cache.get(key)
        if got is None:
            if len(self._key_cache) > 4 * len(self.names) + 64:  # bounded: a few epochs per source
                self._key_cache.clear()
            got = self._key_cache[key] = epoch_keys(self.seed, self.names[s], epoch)
        return got

    def locate(self, n0: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Source index and window index of samples ``[n0, n0 + count)``."""
        src, k, first, end = self.schedule.run_counts(n0, count)
        nw = self._nw[src]
        epoch, pos = np.divmod(k, nw)
        table = np.zeros((FEISTEL_ROUNDS, len(self.names)), dtype=np.uint64)
        spans = []
        for s, (a, b) in enumerate(zip(first, end)):
            if b > a:  # draws a..b-1 of source s are in this range
                e0, e1 = a // self.n_windows[s], (b - 1) // self.n_windows[s]
                table[:, s] = self._epoch_keys(s, e0)
                if e1 != e0:
                    spans.append((s, e0, e1))
        keys = table[:, src]
        for s, e0, e1 in spans:  # a source crossed an epoch boundary inside this range
            for e in range(e0 + 1, e1 + 1):
                keys[:, (src == s) & (epoch == e)] = self._epoch_keys(s, e)[:, None]
        return src, permute_many(pos, nw, self._half[src], keys)

    def _where(self, n0: int, count: int) -> tuple[list[int], list[int], list[bool], np.ndarray]:
        """Per sample: index into all shards, offset in it, whether the window fits in it,
        and its source index."""
        src, win = self.locate(n0, count)
        gstart = self._base[src] + win * self.seq_len
        shard = np.searchsorted(self._offsets, gstart, side="right") - 1
        local = gstart - self._offsets[shard]
        fits = local + self.seq_len + 1 <= self._sizes[shard]
        return shard.tolist(), local.tolist(), fits.tolist(), src

    def _block(self, b: int) -> tuple[list[int], list[int], list[bool], np.ndarray]:
        """:meth:`_where` of samples ``[b * READ_BLOCK, (b + 1) * READ_BLOCK)``, computed once:
        the per-call cost of :meth:`locate` (a few dozen NumPy calls) is paid per block, not
        per batch. A few blocks are kept (bounded memory), shared by the prefetch threads."""
        with self._blocks_lock:
            got = self._blocks.get(b)
            if got is None:
                if len(self._blocks) >= 4:
                    self._blocks.pop(next(iter(self._blocks)))
                got = self._blocks[b] = self._where(b * READ_BLOCK, READ_BLOCK)
            return got

    def read(self, n0: int, count: int, out: np.ndarray | None = None, sources: np.ndarray | None = None
             ) -> np.ndarray:
        """Tokens of samples ``[n0, n0 + count)`` as a ``[count, seq_len + 1]`` array (``out``
        may have any integer dtype that holds the ids: the copy converts). ``sources``: a
        ``[count]`` integer array to fill with each sample's source index (into ``names``)."""
        if out is None:
            out = np.empty((count, self.seq_len + 1), dtype=self.dtype)
        b0, b1 = n0 // READ_BLOCK, (n0 + count - 1) // READ_BLOCK
        if b1 - b0 > 1:
            shard, local, fits, src = self._where(n0, count)
        else:
            i = n0 - b0 * READ_BLOCK
            shard, local, fits, src = (col[i:i + count] for col in self._block(b0))
            if b1 != b0:  # the rest from the next block
                nxt = self._block(b1)
                shard, local, fits = (a + b[:count - len(a)] for a, b in zip((shard, local, fits), nxt[:3]))
                src = np.concatenate([src, nxt[3][:count - len(src)]])
        if sources is not None:
            sources[:] = src
        width = self.seq_len + 1
        maps = self._maps
        rows = [maps[j][a:a + width] if ok else self._read_across(j, a) for j, a, ok in zip(shard, local, fits)]
        if out.flags.c_contiguous:  # one copy loop in C, converting to out's dtype
            np.concatenate(rows, out=out.reshape(-1))
        else:
            for i, row in enumerate(rows):
                out[i] = row
        return out

    def _read_across(self, j: int, a: int) -> np.ndarray:
        """A window that starts in shard ``j`` and goes on in the next one(s) of its source."""
        parts, need = [], self.seq_len + 1
        while need:
            part = self._maps[j][a:a + need]
            parts.append(part)
            need, j, a = need - len(part), j + 1, 0
        return np.concatenate(parts)

    def counts_at(self, n: int) -> list[int]:
        """Samples drawn from each source among the first ``n``."""
        return self.schedule.counts_at(n)

    def phase_ranges(self) -> list[tuple[str, int, int | None, int]]:
        """``(phase, first sample, end sample or None, end of its transition)`` per phase."""
        out: list[list] = []
        for g in self.segments:
            if out and out[-1][0] == g.phase:
                out[-1][2] = g.end
            else:
                out.append([g.phase, g.start, g.end, g.end if g.ramp_from is not None else g.start])
        return [tuple(x) for x in out]  # type: ignore[misc]

    def report(self, samples: int | None = None) -> PlanReport:
        n = self.total_samples if samples is None else samples
        counts = self.counts_at(n)
        rows, warnings = [], []
        for i, name in enumerate(self.names):
            epochs = counts[i] / self.n_windows[i]
            # with a schedule, the run's weight of a source is its realised share of the budget
            weight = Fraction(counts[i], max(1, n)) if self.spec.schedule else self.weights[i]
            rows.append(SourcePlan(name=name, manifest=self.spec.sources[i].manifest, weight=weight,
                                   tokens_available=self.streams[i].n_tokens, windows=self.n_windows[i],
                                   samples=counts[i], tokens_drawn=counts[i] * self.seq_len, epochs=epochs))
            if epochs > self.spec.warn_epochs:
                warnings.append(f"source {name!r} is read {epochs:.2f} epochs (above warn_epochs "
                                f"{self.spec.warn_epochs:g}): its data is repeated; lower its weight or "
                                "the token budget, or add data")
            if self.spec.schedule and not any(g.weights[i] > 0 for g in self.segments):
                warnings.append(f"source {name!r} has weight 0 in every phase: it is never read")
        phases = []
        if self.spec.schedule:
            warned: set[str] = set()
            for name, a, b, ramp_end in self.phase_ranges():
                a_, b_ = min(a, n), min(n if b is None else b, n)
                c0, c1 = self.counts_at(a_), self.counts_at(b_)
                seg = next(g for g in self.segments if g.phase == name and g.ramp_from is None) \
                    if any(g.phase == name and g.ramp_from is None for g in self.segments) else \
                    next(g for g in self.segments if g.phase == name)
                ramp = next((g for g in self.segments if g.phase == name and g.ramp_from is not None), None)
                prow, pwarn = [], []
                for i, src in enumerate(self.names):
                    drawn = c1[i] - c0[i]
                    total = c1[i] / self.n_windows[i]
                    prow.append(SourcePlan(name=src, manifest=self.spec.sources[i].manifest, weight=seg.weights[i],
                                           weight_from=ramp.ramp_from[i] if ramp is not None else None,
                                           tokens_available=self.streams[i].n_tokens, windows=self.n_windows[i],
                                           samples=drawn, tokens_drawn=drawn * self.seq_len,
                                           epochs=drawn / self.n_windows[i], epochs_total=total))
                    if total > self.spec.warn_epochs and src not in warned:
                        warned.add(src)
                        pwarn.append(f"source {src!r} reaches {total:.2f} epochs by the end of this phase "
                                     f"(above warn_epochs {self.spec.warn_epochs:g})")
                if a >= n:
                    pwarn.append(f"starts at sample {a:,}, at or after the end of the token budget ({n:,} "
                                 "samples): it is never reached")
                elif ramp_end > n:
                    pwarn.append(f"its transition ends at sample {ramp_end:,}, after the end of the token budget "
                                 f"({n:,} samples): the budget stops it part-way")
                phases.append(PhasePlan(name=name, start=a_, end=b_, transition_end=min(ramp_end, n),
                                        rows=tuple(prow), warnings=tuple(pwarn)))
        validation = ()
        if self.spec.validation is not None:
            validation = tuple((nm, self.streams[i].n_tokens - self.train_tokens[i], self.val_documents[i])
                               for i, nm in enumerate(self.names))
        return PlanReport(name=self.spec.name, plan_hash=self.plan_hash, seq_len=self.seq_len, seed=self.seed,
                          token_budget=self.spec.token_budget, samples=n, rows=tuple(rows), warnings=tuple(warnings),
                          phases=tuple(phases), validation=validation, adaptive=_adaptive_words(self.spec),
                          fim=self._fim_words())


def _load_source_manifest(uri: str) -> SourceManifest:
    """A source manifest, trusted only when an enclosing job output is complete
    (``_SUCCESS`` agreeing with its manifest); one on an object store is read from a
    local copy of its folder cached by content (the loader memory-maps shards)."""
    from datapipe.commit import local_for_reading

    return load_manifest(local_for_reading(uri))


def resolve_mix(spec_or_path: MixSpec | str | os.PathLike, *, verify_hashes: bool = False,
                warn: bool = True) -> MixPlan:
    """Open every source of a mix and check that they can be mixed and the budget fits.

    Every shard's structure is checked (cheap); ``verify_hashes`` also checks every
    shard's content now, without the cache (``datapipe mix plan --verify-hashes``). The
    loader checks content itself by default (:class:`~trainer_bridge.loader.LoaderConfig`)."""
    spec = spec_or_path if isinstance(spec_or_path, MixSpec) else load_mix(spec_or_path)
    where = f"mix {spec.path or spec.name}"
    paths = [fs.absolute(str(s.manifest), str(spec.base_dir)) for s in spec.sources]   # URIs as they are
    missing = [f"sources[{i}].manifest {s.manifest} (looked at {p})"
               for i, (s, p) in enumerate(zip(spec.sources, paths)) if not fs.is_file(p)]
    if missing:
        raise SpecError(f"{where}: source manifest(s) not found: " + "; ".join(missing) +
                        ". Run the job that writes them (e.g. `datapipe run jobs/sample.yaml`) or fix the "
                        "paths (they are relative to the mix file)")
    manifests = [_load_source_manifest(p) for p in paths]
    names = [m.source for m in manifests]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SpecError(f"{where}: source(s) {dupes} listed more than once; merge them into one entry")
    prints = {m.fingerprint for m in manifests}
    if len(prints) > 1:
        detail = ", ".join(f"{m.source}: {m.fingerprint}" for m in manifests)
        raise SpecError(f"{where}: sources were tokenised with different tokenizers ({detail}); "
                        "re-tokenise them with one tokenizer or put them in separate mixes")
    streams = [TokenStream(m) for m in manifests]
    short = [f"{st.source} ({st.n_tokens} tokens)" for st in streams if st.n_tokens < spec.seq_len + 1]
    if short:
        raise SpecError(f"{where}: source(s) {', '.join(short)} hold less than one sample of seq_len + 1 = "
                        f"{spec.seq_len + 1} tokens; lower seq_len or drop them")
    train_tokens, val_docs = None, ()
    if spec.validation is not None:
        cuts = [reserve_tail(st, m.eos_id, spec.validation.tokens) for st, m in zip(streams, manifests)]
        small = [i for i, (st, (cut, _)) in enumerate(zip(streams, cuts))
                 if cut < spec.seq_len + 1 or st.n_tokens - cut < spec.seq_len + 1]
        if small:
            raise SpecError(f"{where}: holding out validation tokens {spec.validation.tokens:,} per source leaves "
                            "less than one sample for training or validation in "
                            + _validation_advice([(streams[i], manifests[i]) for i in small], spec.seq_len))
        train_tokens, val_docs = [c for c, _ in cuts], tuple(d for _, d in cuts)
    plan = MixPlan(spec, manifests, streams, train_tokens=train_tokens, val_documents=val_docs)
    if spec.adaptive is not None:
        spec.adaptive.check_sources(plan.names, [float(w) for w in plan.weights], where)
    if verify_hashes:
        plan.verify_content(cache=None)
    report = plan.report()
    over = [r for r in report.rows if r.epochs > spec.max_epochs]
    if over:
        # The largest budget with every source within max_epochs (up to a sample or two).
        lo, hi = 0, plan.total_samples  # counts grow with n: bisect for the last n within max_epochs
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if all(c <= spec.max_epochs * w for c, w in zip(plan.counts_at(mid), plan.n_windows)):
                lo = mid
            else:
                hi = mid - 1
        limit = lo
        detail = "; ".join(f"{r.name} would be read {r.epochs:.2f} epochs ({r.samples:,} samples of "
                           f"{r.windows:,} windows)" for r in over)
        raise SpecError(f"{where}: token_budget {spec.token_budget:,} exceeds max_epochs {spec.max_epochs:g}: "
                        f"{detail}. Lower token_budget to about {int(limit) * spec.seq_len:,} or below, lower "
                        "those sources' weights, add data, or raise max_epochs")
    for w in report.warnings if warn else ():   # warn=False: the caller shows the report's warnings
        log.warning("%s: %s", where, w)
    return plan


def plan_mix(spec_or_path: MixSpec | str | os.PathLike, *, verify_hashes: bool = False) -> PlanReport:
    """Resolve a mix and report it (``datapipe mix plan``); raises :class:`SpecError` when invalid."""
    return resolve_mix(spec_or_path, verify_hashes=verify_hashes, warn=False).report()   # warnings in the report


def new_mix(manifests: Sequence[str | os.PathLike], weights: Sequence[float], *, out: str | os.PathLike,
            name: str | None = None, seq_len: int = 2048, token_budget: int | None = None, seed: int = 0,
            max_epochs: float = 20.0, warn_epochs: float = 4.0, warn: bool = True) -> Path:
    """Write a mix manifest over ``manifests`` (paths stored relative to ``out``'s folder).

    The mix is resolved before anything is written, so a mix that would not plan is never
    written. Without ``token_budget``, the budget is the largest that reads no source more
    than once at these weights (the source that runs out first is read once, the others
    less): every token at most once, never a repeated one.
    """
    out = Path(out)
    if len(manifests) != len(weights):
        raise SpecError(f"mix new: {len(manifests)} manifests but {len(weights)} weights; give one weight each")
    base = out.parent
    base.mkdir(parents=True, exist_ok=True)  # so that relative paths through it resolve
    rel = [os.path.relpath(Path(m).resolve(), base.resolve()) for m in manifests]
    sources = tuple(MixSource(manifest=r, weight=w) for r, w in zip(rel, weights))
    if token_budget is None:
        token_budget = _one_epoch_budget(MixSpec(name=name or out.stem, seq_len=seq_len, token_budget=seq_len,
                                                 seed=seed, max_epochs=max_epochs, warn_epochs=warn_epochs,
                                                 sources=sources, base_dir=base, path=out))
    spec = MixSpec(name=name or out.stem, seq_len=seq_len, token_budget=token_budget, seed=seed,
                   max_epochs=max_epochs, warn_epochs=warn_epochs,
                   sources=tuple(MixSource(manifest=r, weight=w) for r, w in zip(rel, weights)),
                   base_dir=base, path=out)
    resolve_mix(spec, warn=warn)
    doc = {"name": spec.name, "seq_len": seq_len, "token_budget": token_budget, "seed": seed,
           "max_epochs": max_epochs, "warn_epochs": warn_epochs,
           "sources": [{"manifest": r, "weight": w} for r, w in zip(rel, weights)]}
    fs.write_text(str(out), "# written by `datapipe mix new`; manifest paths are relative to this file\n"
                  + yaml.safe_dump(doc, sort_keys=False))
    return out


def _one_epoch_budget(probe: MixSpec) -> int:
    """Tokens of the largest budget whose draws read no source more than one epoch."""
    plan = resolve_mix(probe, warn=False)
    n = max(1, int(min(nw / float(w) for nw, w in zip(plan.n_windows, plan.weights))))
    while n > 1 and any(c > nw for c, nw in zip(plan.counts_at(n), plan.n_windows)):
        n -= 1
    return n * probe.seq_len


# ---------------------------------------------------------------- CLI: datapipe mix new|plan


def _parse_source(arg: str) -> tuple[str, float]:
    path, sep, weight = arg.rpartition("=")
    if not sep or not path:
        raise SpecError(f"mix new: {arg!r} must be MANIFEST=WEIGHT, e.g. runs/x/shards/wiki/manifest.json=0.3")
    try:
        return path, float(weight)
    except ValueError:
        raise SpecError(f"mix new: weight {weight!r} in {arg!r} is not a number") from None


def _cmd_new(args: argparse.Namespace) -> int:
    try:
        pairs = [_parse_source(a) for a in args.sources]
        out = new_mix([p for p, _ in pairs], [w for _, w in pairs], out=args.out, name=args.name,
                      seq_len=args.seq_len, token_budget=args.token_budget, seed=args.seed,
                      max_epochs=args.max_epochs, warn_epochs=args.warn_epochs, warn=False)
        print(f"wrote {out}")   # the report below shows any warning, once
        print(plan_mix(out).format())
    except DatapipeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def _cmd_plan(args: argparse.Namespace) -> int:
    try:
        report = plan_mix(args.mix, verify_hashes=args.verify_hashes)
    except DatapipeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(report.to_json(), indent=2) if args.json else report.format())
    return 0


def _cmd_plot(args: argparse.Namespace) -> int:
    from trainer_bridge.plot import plot_mix, read_metrics

    try:
        plan = resolve_mix(args.mix)
        if args.metrics and not Path(args.metrics).is_file():
            raise SpecError(f"mix plot: metrics file {args.metrics} not found (the trainer's metrics_path)")
        out = plot_mix(plan, args.out, metrics=read_metrics(args.metrics) if args.metrics else None)
    except DatapipeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


def add_cli(subparsers: "argparse._SubParsersAction") -> argparse.ArgumentParser:
    """Add ``mix new``, ``mix plan`` and ``mix plot`` to a CLI; each leaf sets ``func(args) -> exit code``."""
    p = subparsers.add_parser("mix", help="write, resolve and plot mix manifests")
    sub = p.add_subparsers(dest="mix_command", required=True, metavar="{new,plan,plot}")
    n = sub.add_parser("new", help="write a mix manifest from source manifests and weights")
    n.add_argument("sources", nargs="+", metavar="MANIFEST=WEIGHT", help="source manifest.json and its token fraction")
    n.add_argument("-o", "--out", required=True, help="mix YAML to write (e.g. mixes/my.yaml)")
    n.add_argument("--name", help="mix name (default: the file name)")
    n.add_argument("--seq-len", type=int, default=2048)
    n.add_argument("--token-budget", type=int, default=None, help="tokens drawn over the run (default: all tokens of all sources)")
    n.add_argument("--seed", type=int, default=0)
    n.add_argument("--max-epochs", type=float, default=20.0)
    n.add_argument("--warn-epochs", type=float, default=4.0)
    n.set_defaults(func=_cmd_new)
    pl = sub.add_parser("plan", help="resolve a mix: per-source tokens, draws, epochs and the plan hash")
    pl.add_argument("mix", help="mix manifest YAML")
    pl.add_argument("--verify-hashes", action="store_true", help="also recompute every shard's content hash")
    pl.add_argument("--json", action="store_true", help="print the plan as JSON")
    pl.set_defaults(func=_cmd_plan)
    pp = sub.add_parser("plot", help="PNG of the weights over the schedule and, with --metrics, loss per source")
    pp.add_argument("mix", help="mix manifest YAML")
    pp.add_argument("-o", "--out", required=True, help="PNG to write")
    pp.add_argument("--metrics", help="a trainer metrics.jsonl: also plot per-source train/validation loss")
    pp.set_defaults(func=_cmd_plot)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m trainer_bridge.mix {new,plan,plot} ...`` (the same commands as ``datapipe mix``)."""
    parser = argparse.ArgumentParser(prog="python -m trainer_bridge.mix")
    sub = parser.add_subparsers(dest="command", required=True)
    add_cli(sub)
    args = parser.parse_args(["mix", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    raise SystemExit(main())
