"""Loss-driven upsampling: the mix's ``adaptive:`` policy (``docs/mixes.md``, "Adaptive schedules").

Every ``every`` optimizer steps the trainer hands the per-source losses it already computes
(validation loss per source, or the train loss per source since the previous update) to
:func:`next_weights`, which moves the weights and rounds them onto a grid of ``1/grid``
(integer *units* summing to ``grid``): exact fractions, so the plan's interleave stays exact
integer arithmetic. The new weights take effect at the loader's cursor after that step, as a
new segment of the plan (:meth:`~trainer_bridge.mix.MixPlan.set_history`). The *history*
(per update: the step, the global sample where it takes effect, the units, the losses it
came from) is logged in the metrics and travels in the loader state, so a resume at any step
on any dp size serves exactly the samples the uninterrupted run served: samples are a pure
function of (plan, history).

Rules (``w``: the current weights; ``L``: the per-source losses; both papers' multiplicative
update, normalised over the sources):

* ``exp_gradient`` (online data mixing, Albalak et al. 2023): ``w_i <- w_i exp(eta (L_i - mean L))``;
  sources with a high loss are read more.
* ``excess_loss`` (DoReMi, Xie et al. 2023): ``w_i <- w_i exp(eta max(L_i - ref_i, 0))``, where
  ``ref_i`` is a reference model's loss on source ``i``: the last per-source losses of a
  reference run's metrics file (a run trained to the end on the mix's own weights, as
  DoReMi's reference model), or fixed values. Sources where the run is furthest above what
  the reference reached (the most loss left to learn) are read more.

Then ``w <- (1 - smoothing) w + smoothing w0`` (``w0``: the mix's own weights; the papers
smooth toward uniform, which is ``w0`` of a uniform mix), then the per-source ``floors`` /
``ceilings`` (a projection onto the capped simplex), then the grid. A source with a weight in
the mix keeps at least one unit. Rank 0 computes; the result is broadcast.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from datapipe.errors import SpecError

RULES = ("exp_gradient", "excess_loss")
SIGNALS = ("validation", "train")


@dataclass(kw_only=True, frozen=True)
class AdaptiveSpec:
    """``adaptive:`` of a mix manifest (see the module doc)."""

    every: int                                   # optimizer steps between updates
    rule: Literal["exp_gradient", "excess_loss"] = "exp_gradient"
    signal: Literal["validation", "train"] = "validation"
    eta: float = 1.0                             # step size of the multiplicative update
    smoothing: float = 0.1                       # share of the mix's own weights mixed back in
    floors: dict[str, float] = field(default_factory=dict)     # source -> lowest weight
    ceilings: dict[str, float] = field(default_factory=dict)   # source -> highest weight
    reference: str | dict[str, float] | None = None  # excess_loss: a reference run's metrics.jsonl (its last
                                                     # per-source losses), or {source: loss}
    grid: int = 1000                             # weights are multiples of 1/grid

    def __post_init__(self) -> None:
        if isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 1:
            raise SpecError(f"adaptive: every {self.every!r} must be an integer >= 1 (optimizer steps between "
                            "weight updates, e.g. 8)")
        if self.rule not in RULES:
            raise SpecError(f"adaptive: rule {self.rule!r} must be one of {', '.join(RULES)}")
        if self.signal not in SIGNALS:
            raise SpecError(f"adaptive: signal {self.signal!r} must be validation (the mix's validation: split) "
                            "or train (the per-source train loss since the previous update)")
        if isinstance(self.eta, bool) or not isinstance(self.eta, (int, float)) or not (
                math.isfinite(self.eta) and self.eta > 0):
            raise SpecError(f"adaptive: eta {self.eta!r} must be a finite number > 0 (e.g. 1.0)")
        if not isinstance(self.smoothing, (int, float)) or not 0 <= self.smoothing < 1:
            raise SpecError(f"adaptive: smoothing {self.smoothing!r} must be in [0, 1) (the share of the mix's own "
                            "weights mixed back in at every update, e.g. 0.1)")
        if isinstance(self.grid, bool) or not isinstance(self.grid, int) or not 10 <= self.grid <= 1_000_000:
            raise SpecError(f"adaptive: grid {self.grid!r} must be an integer in [10, 1000000] (weights are "
                            "multiples of 1/grid; e.g. 1000)")
        for key in ("floors", "ceilings"):
            for src, v in getattr(self, key).items():
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                    raise SpecError(f"adaptive: {key}[{src!r}] is {v!r}; it must be a weight in [0, 1]")
        for src, lo in self.floors.items():
            if src in self.ceilings and lo > self.ceilings[src]:
                raise SpecError(f"adaptive: floors[{src!r}] {lo} is above ceilings[{src!r}] "
                                f"{self.ceilings[src]}; lower the floor or raise the ceiling")
        if self.rule == "excess_loss" and self.reference is None:
            raise SpecError("adaptive: rule excess_loss needs reference: a reference run's metrics.jsonl (relative "
                            "to the mix file) or per-source losses {source: loss}; or use rule: exp_gradient")
        if isinstance(self.reference, dict):
            for src, v in self.reference.items():
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                    raise SpecError(f"adaptive: reference[{src!r}] is {v!r}; it must be a loss (a finite number)")

    def check_sources(self, names: Sequence[str], static: Sequence[float], where: str) -> None:
        """Names in floors/ceilings/reference must be the mix's sources; the bounds must leave
        room for weights summing to 1."""
        for key in ("floors", "ceilings") + (("reference",) if isinstance(self.reference, dict) else ()):
            unknown = sorted(set(getattr(self, key)) - set(names))
            if unknown:
                raise SpecError(f"{where}: adaptive: {key} names unknown source(s) {unknown}; the mix's sources "
                                f"are {list(names)}")
        live = [n for n, w in zip(names, static) if w > 0]
        lo = sum(self.floors.get(n, 0.0) for n in live)
        hi = sum(self.ceilings.get(n, 1.0) for n in live)
        if lo > 1 or hi < 1:
            raise SpecError(f"{where}: adaptive: the floors sum to {lo:g} and the ceilings to {hi:g}; weights "
                            "summing to 1 need floors <= 1 <= ceilings: lower the floors or raise the ceilings")

    def key(self) -> dict[str, Any]:
        """What the plan hash covers (the reference by its name/values: its file's content is
        the user's to keep)."""
        return {"every": self.every, "rule": self.rule, "signal": self.signal, "eta": self.eta,
                "smoothing": self.smoothing, "floors": dict(sorted(self.floors.items())),
                "ceilings": dict(sorted(self.ceilings.items())), "grid": self.grid,
                "reference": self.reference if not isinstance(self.reference, dict)
                else dict(sorted(self.reference.items()))}


def _project(w: list[float], lo: list[float], hi: list[float]) -> list[float]:
    """The weights scaled onto the capped simplex: sources outside their bounds are pinned to
    them, the others share what is left in proportion to their weights (repeated until none
    moves; at most one pass per source)."""
    pinned: dict[int, float] = {}
    for _ in range(len(w) + 1):
        free = [i for i in range(len(w)) if i not in pinned]
        left = 1.0 - sum(pinned.values())
        mass = sum(w[i] for i in free)
        out = [pinned.get(i, (w[i] / mass * left) if mass > 0 else left / max(1, len(free))) for i in range(len(w))]
        moved = {i: (lo[i] if out[i] < lo[i] else hi[i]) for i in free if out[i] < lo[i] or out[i] > hi[i]}
        if not moved:
            return out
        pinned.update(moved)
    return out


def to_units(w: Sequence[float], grid: int, live: Sequence[bool]) -> list[int]:
    """Weights (summing to 1) as integers summing to ``grid``: floors first, then the units
    left over go to the largest remainders (ties: the lower source index); each ``live``
    source keeps at least one unit."""
    raw = [x * grid if ok else 0.0 for x, ok in zip(w, live)]
    units = [max(1, math.floor(r)) if ok else 0 for r, ok in zip(raw, live)]
    order = sorted((i for i in range(len(w)) if live[i]), key=lambda i: (-(raw[i] - math.floor(raw[i])), i))
    k = 0
    while sum(units) < grid:
        units[order[k % len(order)]] += 1
        k += 1
    while sum(units) > grid:  # the one-unit minimum overshot: take from the largest
        i = max((i for i in range(len(w)) if units[i] > 1), key=lambda i: (units[i], -i))
        units[i] -= 1
    return units


def next_weights(spec: AdaptiveSpec, names: Sequence[str], units: Sequence[int], static: Sequence[float],
                 losses: Mapping[str, float], reference: Mapping[str, float] | None = None,
                 caps: Sequence[float] | None = None) -> list[int]:
    """The units after one update from ``units`` (the current weights), given the per-source
    ``losses`` (a source missing from them keeps its weight's relative size) and, for
    ``excess_loss``, the reference losses (default: the spec's fixed ``reference``).
    ``caps``: more ceilings (the mix's max_epochs, :meth:`AdaptivePolicy.epoch_caps`)."""
    live = [w > 0 for w in static]
    cur = [u / spec.grid for u in units]
    have = [n in losses and live[i] for i, n in enumerate(names)]
    if spec.rule == "exp_gradient":
        vals = [losses[n] for n, h in zip(names, have) if h]
        mean = sum(vals) / len(vals) if vals else 0.0
        expo = [(losses[n] - mean) if h else 0.0 for n, h in zip(names, have)]
    else:
        ref = reference if reference is not None else spec.reference if isinstance(spec.reference, dict) else {}
        expo = [max(losses[n] - ref[n], 0.0) if h and n in ref else 0.0 for n, h in zip(names, have)]
    top = max((spec.eta * e for e, ok in zip(expo, live) if ok), default=0.0)  # overflow-safe
    moved = [c * math.exp(spec.eta * e - top) if ok else 0.0 for c, e, ok in zip(cur, expo, live)]
    total = sum(moved)
    moved = [m / total for m in moved]
    s0 = sum(static)
    mixed = [(1 - spec.smoothing) * m + spec.smoothing * (w / s0) for m, w in zip(moved, static)]
    lo = [spec.floors.get(n, 0.0) if ok else 0.0 for n, ok in zip(names, live)]
    hi = [spec.ceilings.get(n, 1.0) if ok else 0.0 for n, ok in zip(names, live)]
    if caps is not None:
        capped = [max(lo_, min(h, c)) for lo_, h, c in zip(lo, hi, caps)]
        if sum(capped) >= 1:   # else no weights fit max_epochs to the end of the budget: the bounds alone
            hi = capped
    return to_units(_project(mixed, lo, hi), spec.grid, live)


def read_reference(spec: AdaptiveSpec, base_dir: Path, where: str) -> Reference | None:
    if spec.rule != "excess_loss":
        return None
    if isinstance(spec.reference, dict):
        return Reference(fixed=dict(spec.reference))
    path = Path(spec.reference) if Path(spec.reference).is_absolute() else base_dir / spec.reference
    if not path.is_file():
        raise SpecError(f"{where}: adaptive: reference {spec.reference} not found (looked at {path}); give a "
                        "reference run's metrics.jsonl (the trainer's metrics_path) or per-source losses")
    key = "val_loss" if spec.signal == "validation" else "loss_by_source"
    last: tuple[int, dict[str, float]] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get(key) and (last is None or int(row["step"]) >= last[0]):
            last = (int(row["step"]), row[key])
    if last is None:
        raise SpecError(f"{where}: adaptive: reference {path} has no {key} rows; the reference run needs "
                        + ("eval_every > 0 and a validation: split" if key == "val_loss" else "log_every steps")
                        + f" (signal: {spec.signal})")
    return Reference(fixed=dict(last[1]))


@dataclass
class Reference:
    """The reference model's per-source losses (given, or a reference run's last)."""

    fixed: dict[str, float]

    def at(self, step: int) -> dict[str, float]:
        return self.fixed


def history_entry(*, step: int, at: int, names: Sequence[str], units: Sequence[int], grid: int,
                  losses: Mapping[str, float]) -> dict[str, Any]:
    """One update as logged and checkpointed: the step after which it was computed, the global
    sample ``at`` which it takes effect, the new weights (units of 1/grid) and the losses."""
    return {"step": step, "at": at, "grid": grid, "units": {n: int(u) for n, u in zip(names, units)},
            "losses": {n: float(v) for n, v in losses.items()}}


class AdaptivePolicy:
    """The trainer's side of ``adaptive:``: collects the train signal, and every ``every``
    steps computes the next weights on rank 0, broadcasts them and hands them to the loader.
    Its running sums live in the loader state (``MixLoader.adaptive_acc``): checkpointed."""

    def __init__(self, plan: Any, device: Any) -> None:
        import torch

        self.spec: AdaptiveSpec = plan.spec.adaptive
        self.names = plan.names
        self.static = [float(w) for w in plan.static_segments[0].weights]
        self.grid = self.spec.grid
        where = f"mix {plan.spec.path or plan.spec.name}"
        self.reference = read_reference(self.spec, Path(plan.spec.base_dir), where)
        self._local = torch.zeros(2, len(self.names), dtype=torch.float64, device=device) \
            if self.spec.signal == "train" else None

    def add(self, tok_loss: Any, source: Any) -> None:
        """Per-token losses ``[B, T]`` of rows from ``source`` (the train signal)."""
        if self._local is None:
            return
        src = source.to(tok_loss.device, non_blocking=True)
        row = tok_loss.detach().double().sum(dim=1)
        self._local[0].index_add_(0, src, row)
        self._local[1].index_add_(0, src, row.new_full(row.shape, float(tok_loss.shape[1])))

    def end_step(self, loader: Any, group: Any) -> None:
        """Add this step's train losses, summed over the data-parallel ranks, to the running
        sums (identical on every rank, exact across a resume: float64 through JSON)."""
        if self._local is None:
            return
        import torch.distributed as dist

        acc = self._local.clone()
        self._local.zero_()
        if dist.is_initialized() and dist.get_world_size(group) > 1:
            dist.all_reduce(acc, group=group)
        sums, counts = acc.tolist()
        run = loader.adaptive_acc or {"sum": [0.0] * len(sums), "count": [0.0] * len(sums)}
        loader.adaptive_acc = {"sum": [a + b for a, b in zip(run["sum"], sums)],
                               "count": [a + b for a, b in zip(run["count"], counts)]}

    def due(self, step: int, loader: Any) -> bool:
        return step % self.spec.every == 0 and loader.steps_left > 0

    def signal_losses(self, loader: Any, val_loss: Mapping[str, float] | None) -> dict[str, float]:
        if self.spec.signal == "validation":
            assert val_loss is not None
            return dict(val_loss)
        run = loader.adaptive_acc or {"sum": [], "count": []}
        loader.adaptive_acc = None
        return {n: s / c for n, s, c in zip(self.names, run["sum"], run["count"]) if c > 0}

    def current_units(self, plan: Any) -> list[int]:
        if plan.history:
            last = plan.history[-1]
            return [int(last["units"][n]) for n in self.names]
        return to_units(self.static, self.grid, [w > 0 for w in self.static])

    def epoch_caps(self, loader: Any) -> list[float]:
        """Per source, the highest weight that keeps it within the mix's ``max_epochs`` to the
        end of the token budget, given what it has drawn by the cursor (the check the plan makes
        of a static mix, made at every update)."""
        plan, at = loader.plan, loader.samples_committed
        left = plan.total_samples - at
        if left <= 0:
            return [1.0] * len(self.names)
        drawn = plan.counts_at(at)
        return [max(0.0, plan.spec.max_epochs * nw - c) / left for nw, c in zip(plan.n_windows, drawn)]

    def update(self, step: int, loader: Any, val_loss: Mapping[str, float] | None) -> dict[str, Any]:
        """Compute (rank 0), broadcast and apply one update after ``step``; returns its history entry."""
        import torch.distributed as dist

        losses = self.signal_losses(loader, val_loss)
        units: list[Any] = [None]
        if not dist.is_initialized() or dist.get_rank() == 0:
            ref = self.reference.at(step) if self.reference is not None else None
            units[0] = next_weights(self.spec, self.names, self.current_units(loader.plan), self.static, losses, ref,
                                    caps=self.epoch_caps(loader))
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.broadcast_object_list(units, src=0)
        entry = history_entry(step=step, at=loader.samples_committed, names=self.names, units=units[0],
                              grid=self.grid, losses=losses)
        loader.apply_update(entry)
        return entry


def weights_line(entry: Mapping[str, Any]) -> str:
    g = entry["grid"]
    return "  ".join(f"{n} {u / g:.3f}" for n, u in entry["units"].items())
