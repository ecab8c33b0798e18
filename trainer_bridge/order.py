"""The two pure functions behind the mix plan: which source sample ``n`` comes from, and
which window of that source it reads. Both are O(sources) per sample with no per-sample or
per-window arrays, so memory and start-up do not grow with the corpus.

**Source choice** (:class:`Interleave`). Source ``s`` has a normalised weight
``w_s = a_s / A`` (exact rationals). Its ``k``-th draw is placed at the ideal time
``t_s(k) = (k + 1/2) / a_s``; the run visits all draws of all sources in order of
``(t, s)`` (ties go to the lower source index). This is the divisor ("Sainte-Laguë" /
stride-scheduling) sequence: after ``n`` samples every source has ``round(n w_s)`` give or
take about one, at *every* prefix, and the sequence is infinite, so a larger token budget
only appends samples. Random access to sample ``n``: the counts at time ``n / A`` have a
closed form, ``c_s = floor(n a_s / A + 1/2)``; they sum to within ``sources / 2`` of ``n``,
and a few O(sources) steps forward or back land exactly on ``n``. All arithmetic is on
Python integers (times scaled by ``L = lcm(2 a_s)``), so results are exact on every
machine.

**Window order** (:func:`permute`). Within a source, draw ``k`` is epoch ``k // N`` and
position ``k % N`` of that epoch, where ``N`` is the source's window count. The position
goes through a keyed Feistel network over the smallest even bit-width that covers ``N``
(a bijection on ``[0, 2^b)``, ``2^b < 4N``), cycle-walking until the value lands inside
``[0, N)``; the result is a bijection on ``[0, N)``, so no window repeats inside an epoch.
Round keys come from ``blake2b(seed, source name, epoch)``: a new order every epoch.
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

FEISTEL_ROUNDS = 6
_M64 = (1 << 64) - 1
_C0 = np.uint64(0x9E3779B97F4A7C15)
_C1 = np.uint64(0xBF58476D1CE4E5B9)
_S32, _S29 = np.uint64(32), np.uint64(29)


def rational_weights(weights: Sequence[float | int | str | Fraction], *, max_denominator: int = 1_000_000
                     ) -> list[Fraction]:
    """Weights as exact fractions summing to 1 (decimal strings of floats, so 0.4 is 2/5)."""
    fr = [Fraction(str(w)) if not isinstance(w, Fraction) else w for w in weights]
    if any(f <= 0 for f in fr):
        raise ValueError("weights must be positive")
    # 0.3333333333333333 -> 1/3; a weight too small for that stays exact.
    fr = [f.limit_denominator(max_denominator) or f for f in fr]
    total = sum(fr)
    return [f / total for f in fr]


class Interleave:
    """Source index of every global sample, as a pure function of the weights."""

    def __init__(self, weights: Sequence[Fraction]) -> None:
        if not weights:
            raise ValueError("need at least one source")
        denom = math.lcm(*(w.denominator for w in weights))
        self.a = [int(w * denom) for w in weights]  # integer weights a_s
        if any(a <= 0 for a in self.a):
            raise ValueError("weights must be positive")
        self.A = sum(self.a)
        self.L = math.lcm(*(2 * a for a in self.a))
        self.M = [self.L // (2 * a) for a in self.a]  # key of draw k of s = (2k+1) * M_s
        self.S = len(self.a)

    def counts_at(self, n: int) -> list[int]:
        """Draws of each source among samples ``[0, n)``; sums to ``n``."""
        if n < 0:
            raise ValueError("n must be >= 0")
        x0 = (n * self.L) // self.A
        c = [(x0 // m + 1) // 2 for m in self.M]
        total = sum(c)
        while total > n:  # drop the last event of the prefix
            s = max((s for s in range(self.S) if c[s] > 0), key=lambda s: ((2 * c[s] - 1) * self.M[s], s))
            c[s] -= 1
            total -= 1
        while total < n:  # take the next event
            s = min(range(self.S), key=lambda s: ((2 * c[s] + 1) * self.M[s], s))
            c[s] += 1
            total += 1
        return c

    def at(self, n: int) -> tuple[int, int]:
        """``(source, k)``: sample ``n`` is the ``k``-th draw (0-based) of ``source``."""
        c = self.counts_at(n)
        s = min(range(self.S), key=lambda s: ((2 * c[s] + 1) * self.M[s], s))
        return s, c[s]

    def run(self, n0: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Samples ``[n0, n0 + count)``: arrays of source index and per-source draw index."""
        src, k, _, _ = self.run_counts(n0, count)
        return src, k

    def run_counts(self, n0: int, count: int) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
        """``run`` plus each source's draw count before and after the range.

        The draws in the range are, per source, ``k`` from its count at ``n0`` to its count at
        ``n0 + count``; sorting them by ``(key, source)`` is the run. Vectorised when every
        key fits in int64 (any weights with modest denominators); exact Python integers in a
        heap merge otherwise."""
        start, end = self.counts_at(n0), self.counts_at(n0 + count)
        if max((2 * e + 1) * m for e, m in zip(end, self.M)) >= 1 << 62:
            return self._run_heap(n0, count)
        per = [e - b for b, e in zip(start, end)]
        src = np.repeat(np.arange(self.S, dtype=np.int64), per)
        first = np.cumsum([0] + per[:-1], dtype=np.int64)  # where each source's draws begin in `src`
        k = np.arange(count, dtype=np.int64) - np.repeat(first - np.array(start, dtype=np.int64), per)
        key = (2 * k + 1) * np.array(self.M, dtype=np.int64)[src]
        order = np.lexsort((src, key))
        return src[order], k[order], start, end

    def _run_heap(self, n0: int, count: int) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
        c = self.counts_at(n0)
        start = list(c)
        heap = [((2 * c[s] + 1) * self.M[s], s) for s in range(self.S)]
        heapq.heapify(heap)
        src = np.empty(count, dtype=np.int64)
        k = np.empty(count, dtype=np.int64)
        M = self.M
        for i in range(count):
            key, s = heap[0]
            src[i] = s
            k[i] = c[s]
            c[s] += 1
            heapq.heapreplace(heap, (key + 2 * M[s], s))
        return src, k, start, c


def epoch_keys(seed: int, source: str, epoch: int, rounds: int = FEISTEL_ROUNDS) -> np.ndarray:
    """Feistel round keys for one (seed, source, epoch): a fresh order every epoch."""
    h = hashlib.blake2b(f"datapipe-window-order/v1|{seed}|{source}|{epoch}".encode(), digest_size=8 * rounds)
    return np.frombuffer(h.digest(), dtype="<u8").astype(np.uint64)


def _mix(z: np.ndarray) -> np.ndarray:
    """A 64-bit finaliser (multiply / xor-shift), in place; wraps modulo 2^64."""
    z *= _C0
    z ^= z >> _S32
    z *= _C1
    z ^= z >> _S29
    return z


def _feistel(x: np.ndarray, half: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """One pass of the balanced Feistel network over ``2 * half`` bits (``half`` and the
    ``[rounds, len(x)]`` keys may differ per element: several sources in one call)."""
    mask = (np.uint64(1) << half) - np.uint64(1)
    left, right = x >> half, x & mask
    for key in keys:
        t = _mix(right ^ key)
        t &= mask
        t ^= left
        left, right = right, t
    left <<= half
    left |= right
    return left


def _feistel_scalar(x: int, half: int, keys: list[int]) -> int:
    """``_feistel`` for one element in Python integers (bit-identical; cheaper for stragglers)."""
    mask = (1 << half) - 1
    left, right = x >> half, x & mask
    for key in keys:
        z = ((right ^ key) * 0x9E3779B97F4A7C15) & _M64
        z ^= z >> 32
        z = (z * 0xBF58476D1CE4E5B9) & _M64
        z ^= z >> 29
        left, right = right, left ^ (z & mask)
    return (left << half) | right


def permute_many(positions: np.ndarray, n: np.ndarray, half: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Element ``i``: ``positions[i]`` through the bijection of ``[0, n[i])`` keyed by ``keys[:, i]``
    (``half[i] = half_bits(n[i])``). Vectorised over elements of different sources and epochs;
    no permutation array is ever built."""
    pos = np.asarray(positions, dtype=np.uint64)
    if pos.size == 0:
        return np.zeros(0, dtype=np.int64)
    bound = np.asarray(n, dtype=np.uint64)
    half = np.asarray(half, dtype=np.uint64)
    out = _feistel(pos, half, keys)
    todo = np.flatnonzero(out >= bound)
    while todo.size > 8:  # cycle-walking: expected < 4 passes since 2^(2*half) < 4n
        out[todo] = _feistel(out[todo], half[todo], keys[:, todo])
        todo = todo[out[todo] >= bound[todo]]
    for i in todo.tolist():  # the last few stragglers: cheaper one by one
        x, h, nb, ks = int(out[i]), int(half[i]), int(bound[i]), [int(k) for k in keys[:, i]]
        while x >= nb:
            x = _feistel_scalar(x, h, ks)
        out[i] = x
    return out.astype(np.int64)


def half_bits(n: int) -> int:
    """Half the bit width of the Feistel domain for ``n`` windows: ``n <= 2^(2*half) < 4n``."""
    if not 1 <= n <= 1 << 62:
        raise ValueError(f"window count {n} must be in [1, 2^62]")
    return (max(2, (n - 1).bit_length()) + 1) // 2


def permute(positions: np.ndarray, n: int, keys: np.ndarray) -> np.ndarray:
    """Bijection of ``[0, n)`` applied to ``positions`` (one source, one epoch)."""
    pos = np.asarray(positions, dtype=np.uint64)
    h = half_bits(n)
    keys = np.broadcast_to(np.asarray(keys, dtype=np.uint64)[:, None], (len(keys), pos.size))
    return permute_many(pos, np.full(pos.shape, n, dtype=np.uint64), np.full(pos.shape, h, dtype=np.uint64), keys)


class SkipRanges:
    """Global-sample ranges a run jumps over (half-open ``[start, end)``), merged and sorted.

    The plan still defines every sample; a skip list only changes which of them a run is
    served: global batch ``t`` after cursor ``c`` is the next ``G`` samples at or after ``c``
    that lie in no range. Everything here is a function of (ranges, position), O(ranges) per
    call, so the loader state stays "cursor + skip list" and any data-parallel size cuts the
    same global batches.
    """

    def __init__(self, ranges: Sequence[Sequence[int]] = ()) -> None:
        merged: list[list[int]] = []
        for pair in sorted(_check_range(r) for r in ranges):
            if merged and pair[0] <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], pair[1])
            else:
                merged.append(list(pair))
        self.ranges: tuple[tuple[int, int], ...] = tuple((a, b) for a, b in merged)

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SkipRanges) and self.ranges == other.ranges

    def __repr__(self) -> str:
        return f"SkipRanges({self.as_list()})"

    def as_list(self) -> list[list[int]]:
        return [[a, b] for a, b in self.ranges]

    def union(self, other: "SkipRanges") -> "SkipRanges":
        return SkipRanges(self.ranges + other.ranges)

    def skipped_before(self, n: int) -> int:
        """How many samples of ``[0, n)`` are skipped."""
        return sum(max(0, min(b, n) - a) for a, b in self.ranges if a < n)

    def kept_between(self, lo: int, hi: int) -> int:
        """How many samples of ``[lo, hi)`` are served."""
        return max(0, hi - lo) - (self.skipped_before(hi) - self.skipped_before(lo)) if hi > lo else 0

    def runs(self, pos: int, count: int) -> list[tuple[int, int]]:
        """The next ``count`` served samples at or after ``pos``, as contiguous ``(start, length)`` runs."""
        out: list[tuple[int, int]] = []
        for a, b in self.ranges:
            if count == 0:
                break
            if b <= pos:
                continue
            if pos < a:
                take = min(count, a - pos)
                out.append((pos, take))
                count -= take
                pos += take
            if count and pos >= a:
                pos = max(pos, b)
        if count:
            out.append((pos, count))
        return out

    def advance(self, pos: int, count: int) -> int:
        """The position just after the next ``count`` served samples at or after ``pos``
        (``pos`` itself when ``count`` is 0)."""
        runs = self.runs(pos, count)
        return runs[-1][0] + runs[-1][1] if runs else pos


def _check_range(r: Sequence[int]) -> tuple[int, int]:
    try:
        a, b = r
    except (TypeError, ValueError):
        raise ValueError(f"skip range {r!r} must be a pair [start, end) of global sample indices") from None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (a, b)) or not 0 <= a < b:
        raise ValueError(f"skip range {list(r)!r} must be two integers with 0 <= start < end "
                         "(global sample indices, end exclusive)")
    return a, b


# ------------------------------------------------------------------ schedules (mixes over time)


def ramp_new(m: int | np.ndarray, T: int) -> int | np.ndarray:
    """Draws taken from the *new* weights among the first ``m`` samples (``0 <= m <= T``) of a
    linear transition of ``T`` samples: ``floor(m^2 / 2T + 1/2)``, the running sum of the
    ramp ``λ_i = (i + 1/2) / T`` rounded to the nearest integer. It grows by 0 or 1 per sample
    (its slope ``(2m + 1) / 2T`` stays below 1), so sample ``i`` is a new-weights draw exactly
    when ``ramp_new(i + 1) > ramp_new(i)``."""
    return (m * m + T) // (2 * T)


def _ramp_new_array(m: np.ndarray, T: int) -> np.ndarray:
    if T < 1 << 31:  # m^2 + T fits int64
        return ramp_new(m.astype(np.int64), T)
    return np.array([ramp_new(int(x), T) for x in m.tolist()], dtype=np.int64)


@dataclass(frozen=True)
class Segment:
    """Samples ``[start, end)`` (``end`` None: open, the last segment) drawn with ``weights``
    (one exact fraction per source, zeros allowed, summing to 1); with ``ramp_from`` the
    weights move linearly from ``ramp_from`` to ``weights`` over the segment (a transition)."""

    start: int
    end: int | None
    weights: tuple[Fraction, ...]
    ramp_from: tuple[Fraction, ...] | None = None
    phase: str = ""


class _Part:
    """One interleave over the sources with positive weight, in source order."""

    def __init__(self, weights: Sequence[Fraction]) -> None:
        self.active = np.array([i for i, w in enumerate(weights) if w > 0], dtype=np.int64)
        if self.active.size == 0:
            raise ValueError("a segment needs at least one positive weight")
        self.il = Interleave([weights[i] for i in self.active.tolist()])

    def counts(self, m: int, S: int) -> list[int]:
        out = [0] * S
        for i, c in zip(self.active.tolist(), self.il.counts_at(m)):
            out[i] = c
        return out


class Schedule:
    """Source index and per-source draw number of every global sample, for weights that
    change over the run: a list of :class:`Segment` covering ``[0, ∞)``.

    Inside a constant segment sample ``start + m`` is sample ``m`` of that segment's own
    :class:`Interleave` (so each source stays within about one sample of its share at every
    prefix of the segment). Inside a transition of ``T`` samples, :func:`ramp_new` decides
    whether sample ``m`` is a draw of the old or the new weights; old-weight draws follow the
    old weights' interleave, new-weight draws the new one's, each from its start. A source's
    draw numbers continue across segments (its windows' epochs do not restart at a phase).
    Everything is a function of ``n`` in O(segments + sources²) integer work per call."""

    def __init__(self, segments: Sequence[Segment], n_sources: int) -> None:
        if not segments or segments[0].start != 0 or segments[-1].end is not None:
            raise ValueError("segments must start at sample 0 and the last one must be open")
        for a, b in zip(segments, segments[1:]):
            if a.end != b.start or not a.start < a.end:
                raise ValueError(f"segments must be contiguous and non-empty: {a} then {b}")
        self.S = n_sources
        self.segments = tuple(segments)
        self.starts = [s.start for s in segments]
        self._parts: list[tuple[_Part, _Part | None]] = []
        for seg in segments:
            if len(seg.weights) != n_sources or (seg.ramp_from is not None and len(seg.ramp_from) != n_sources):
                raise ValueError("one weight per source")
            new = _Part(seg.weights)
            old = _Part(seg.ramp_from) if seg.ramp_from is not None else None
            self._parts.append((new, old))
        self._base: list[np.ndarray] = [np.zeros(n_sources, dtype=np.int64)]
        for i, seg in enumerate(segments[:-1]):
            local = self._local_counts(i, seg.end - seg.start)
            self._base.append(self._base[-1] + np.array(local, dtype=np.int64))

    def _local_counts(self, i: int, m: int) -> list[int]:
        new, old = self._parts[i]
        if old is None:
            return new.counts(m, self.S)
        T = self.segments[i].end - self.segments[i].start
        c = ramp_new(m, T)
        return [a + b for a, b in zip(old.counts(m - c, self.S), new.counts(c, self.S))]

    def segment_of(self, n: int) -> int:
        return bisect.bisect_right(self.starts, n) - 1

    def counts_at(self, n: int) -> list[int]:
        """Draws of each source among samples ``[0, n)``."""
        if n < 0:
            raise ValueError("n must be >= 0")
        i = self.segment_of(n)
        local = self._local_counts(i, n - self.segments[i].start)
        return [int(b) + c for b, c in zip(self._base[i].tolist(), local)]

    def run_counts(self, n0: int, count: int) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
        """Samples ``[n0, n0 + count)``: source index, per-source draw index, and each
        source's draw count before and after the range (as :meth:`Interleave.run_counts`)."""
        srcs, ks = [], []
        n, end = n0, n0 + count
        while n < end:
            i = self.segment_of(n)
            seg = self.segments[i]
            stop = end if seg.end is None else min(end, seg.end)
            s, k = self._run_segment(i, n - seg.start, stop - n)
            srcs.append(s)
            ks.append(k)
            n = stop
        if len(srcs) == 1:
            src, k = srcs[0], ks[0]
        else:
            src = np.concatenate(srcs) if srcs else np.zeros(0, np.int64)
            k = np.concatenate(ks) if ks else np.zeros(0, np.int64)
        return src, k, self.counts_at(n0), self.counts_at(end)

    def _run_segment(self, i: int, m0: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        new, old = self._parts[i]
        base = self._base[i]
        if old is None:
            s, k, _, _ = new.il.run_counts(m0, count)
            src = new.active[s]
            return src, base[src] + k
        T = self.segments[i].end - self.segments[i].start
        c = _ramp_new_array(np.arange(m0, m0 + count + 1, dtype=np.int64), T)
        is_new = np.diff(c).astype(bool)
        c0, c1 = int(c[0]), int(c[-1])
        o0, o1 = m0 - c0, m0 + count - c1
        src = np.empty(count, dtype=np.int64)
        src[is_new] = new.active[new.il.run(c0, c1 - c0)[0]]
        src[~is_new] = old.active[old.il.run(o0, o1 - o0)[0]]
        start = base + np.array(self._local_counts(i, m0), dtype=np.int64)
        # the j-th occurrence of a source in this range is its draw start[s] + j
        order = np.argsort(src, kind="stable")
        ranked = src[order]
        occ = np.empty(count, dtype=np.int64)
        occ[order] = np.arange(count, dtype=np.int64) - np.searchsorted(ranked, ranked, side="left")
        return src, start[src] + occ

    def weights_at(self, n: float) -> list[float]:
        """The nominal weights at (possibly fractional) sample position ``n`` (for plots)."""
        i = self.segment_of(int(n))
        seg = self.segments[i]
        if seg.ramp_from is None:
            return [float(w) for w in seg.weights]
        lam = min(1.0, max(0.0, (n - seg.start) / (seg.end - seg.start)))
        return [float(a) * (1 - lam) + float(b) * lam for a, b in zip(seg.ramp_from, seg.weights)]
