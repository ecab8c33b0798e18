"""``datapipe mix plot``: a PNG of a mix's weights over its schedule and, given a trainer
metrics file, per-source train and validation loss over the steps. Drawn with Pillow (a
dependency already; no plotting library).

Top panel: each source's nominal weight against tokens (straight lines: constant phases and
linear transitions), phase starts as vertical lines, and dots for the *realised* share of
each source in consecutive bins of samples (computed from the plan: they sit on the lines,
within a sample or so per bin). Bottom panel (with ``--metrics``): ``loss_by_source`` as
lines and ``val_loss`` as dots joined by thin lines, one colour per source; the steps where
a phase starts are marked the same way.

A mix with ``adaptive:`` draws the weights as they moved: the updates logged in the metrics
(``mix_update`` rows) are served as the plan's history, so the lines step at each update and
the dots are the realised shares under them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

from trainer_bridge.mix import MixPlan

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22"]
W, PANEL_H, LEFT, RIGHT, TOP = 960, 300, 70, 150, 36


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a trainer ``metrics.jsonl`` (a torn last line is ignored)."""
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    span = hi - lo or 1.0
    step = 10 ** math.floor(math.log10(span / n))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if span / (step * m) <= n)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _num(v: float) -> str:
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:g}B"
    if a >= 1e6:
        return f"{v / 1e6:g}M"
    if a >= 1e3:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


class _Panel:
    """Axes in pixel space: data (x, y) -> pixel, with ticks, labels and a frame."""

    def __init__(self, draw: Any, font: Any, top: int, x: tuple[float, float], y: tuple[float, float],
                 title: str, xlabel: str, ylabel: str) -> None:
        self.d, self.font, self.top = draw, font, top
        self.x0, self.x1 = LEFT, W - RIGHT
        self.y0, self.y1 = top + TOP, top + PANEL_H - 40
        self.xr, self.yr = x, y
        d = draw
        d.text((self.x0, top + 8), title, fill="black", font=font)
        d.rectangle([self.x0, self.y0, self.x1, self.y1], outline="#444444")
        for t in _ticks(*x):
            px = self.px(t)
            d.line([px, self.y1, px, self.y1 + 4], fill="#444444")
            d.text((px, self.y1 + 6), _num(t), fill="black", font=font, anchor="mt")
        for t in _ticks(*y):
            py = self.py(t)
            d.line([self.x0 - 4, py, self.x0, py], fill="#444444")
            d.line([self.x0 + 1, py, self.x1 - 1, py], fill="#eeeeee")
            d.text((self.x0 - 6, py), f"{t:g}", fill="black", font=font, anchor="rm")
        d.text(((self.x0 + self.x1) / 2, self.y1 + 22), xlabel, fill="black", font=font, anchor="mt")
        d.text((8, (self.y0 + self.y1) / 2), ylabel, fill="black", font=font, anchor="lm")

    def px(self, x: float) -> float:
        a, b = self.xr
        return self.x0 + (x - a) / ((b - a) or 1) * (self.x1 - self.x0)

    def py(self, y: float) -> float:
        a, b = self.yr
        return self.y1 - (y - a) / ((b - a) or 1) * (self.y1 - self.y0)

    def line(self, pts: Sequence[tuple[float, float]], color: str, width: int = 2) -> None:
        if len(pts) > 1:
            self.d.line([(self.px(x), self.py(y)) for x, y in pts], fill=color, width=width, joint="curve")

    def dots(self, pts: Sequence[tuple[float, float]], color: str, r: float = 2.5) -> None:
        for x, y in pts:
            cx, cy = self.px(x), self.py(y)
            self.d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=color)

    def vline(self, x: float, label: str) -> None:
        px = self.px(x)
        for y in range(int(self.y0), int(self.y1), 8):  # dashed
            self.d.line([px, y, px, min(y + 4, self.y1)], fill="#888888")
        self.d.text((px + 3, self.y0 + 3), label, fill="#555555", font=self.font)


def plot_mix(plan: MixPlan, out: str | Path, *, metrics: Sequence[dict[str, Any]] | None = None,
             bins: int = 64) -> Path:
    """Write the PNG (see the module doc); returns its path."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=13)
    loss_rows = [m for m in metrics or () if m.get("loss_by_source") or m.get("val_loss")]
    history = adaptive_history(metrics or ())
    if history and not plan.history:
        plan.set_history(history)
    height = PANEL_H + (PANEL_H if loss_rows else 0) + 10
    img = Image.new("RGB", (W, height), "white")
    d = ImageDraw.Draw(img)
    names, T, n = plan.names, plan.seq_len, plan.total_samples
    color = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(names)}
    phases = plan.phase_ranges() if plan.spec.schedule else []

    what = f"weights after {len(plan.history)} adaptive updates" if plan.history else "schedule"
    top = _Panel(d, font, 0, (0, n * T), (0, 1), f"mix {plan.spec.name}: weight per source over the token budget "
                 f"(lines: {what}; dots: realised share per bin)", "tokens", "weight")
    # breakpoints of the piecewise-linear weights: segment starts/ends within the budget
    xs = sorted({0, n} | {g.start for g in plan.segments if g.start < n} |
                {g.end for g in plan.segments if g.end is not None and g.end < n})
    edge = [(a, b) for a, b in zip(xs, xs[1:])]
    for i, s in enumerate(names):
        pts = []
        for a, b in edge:
            pts += [(a * T, plan.schedule.weights_at(a)[i]), (b * T, plan.schedule.weights_at(b - 1e-9)[i])]
        top.line(pts, color[s])
    step = max(1, n // bins)
    prev = plan.counts_at(0)
    for b0 in range(0, n - step + 1, step):
        cur = plan.counts_at(b0 + step)
        for i, s in enumerate(names):
            top.dots([((b0 + step / 2) * T, (cur[i] - prev[i]) / step)], color[s], r=2)
        prev = cur
    for name, a, _, _ in phases[1:]:
        if a < n:
            top.vline(a * T, name)
    _legend(d, font, names, color, TOP)

    if loss_rows:
        vals = [v for m in loss_rows for key in ("loss_by_source", "val_loss") for v in (m.get(key) or {}).values()]
        lo, hi = min(vals), max(vals)
        pad = (hi - lo) * 0.05 or 0.1
        steps = [m["step"] for m in loss_rows]
        bottom = _Panel(d, font, PANEL_H, (0, max(steps)), (lo - pad, hi + pad),
                        "loss per source (lines: train, every log step; dots: validation)", "step", "loss")
        for s in names:
            train = [(m["step"], m["loss_by_source"][s]) for m in loss_rows if s in (m.get("loss_by_source") or {})]
            bottom.line(train, color[s], width=2)
            val = [(m["step"], m["val_loss"][s]) for m in loss_rows if s in (m.get("val_loss") or {})]
            bottom.line(val, color[s], width=1)
            bottom.dots(val, color[s], r=3.5)
        G = _global_batch(metrics or ())
        if G:
            for name, a, _, _ in phases[1:]:
                if a / G <= max(steps):
                    bottom.vline(a / G, name)
        _legend(d, font, names, color, PANEL_H + TOP)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    img.save(out, optimize=True)
    return out


def adaptive_history(metrics: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The weight updates of an ``adaptive:`` run, in order, from its metrics rows (the run's
    first row carries the history it resumed with; each update's row its ``mix_update``)."""
    by_step: dict[int, dict[str, Any]] = {}
    for m in metrics:
        for e in (m.get("run") or {}).get("adaptive_history") or ():
            by_step[int(e["step"])] = e
        if m.get("mix_update"):
            by_step[int(m["mix_update"]["step"])] = m["mix_update"]
    return [by_step[s] for s in sorted(by_step)]


def _global_batch(metrics: Sequence[dict[str, Any]]) -> int | None:
    """Samples per step, from the rows' ``samples`` ranges (no skips: the first row's width)."""
    for m in metrics:
        if m.get("samples"):
            lo, hi = m["samples"]
            return (hi - lo) or None
    return None


def _legend(d: Any, font: Any, names: Sequence[str], color: dict[str, str], top: int) -> None:
    x = W - RIGHT + 14
    for i, s in enumerate(names):
        y = top + 4 + i * 18
        d.rectangle([x, y + 3, x + 12, y + 13], fill=color[s])
        d.text((x + 18, y), s, fill="black", font=font)
