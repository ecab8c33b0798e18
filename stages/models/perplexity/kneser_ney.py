"""Interpolated modified Kneser-Ney n-gram estimation, vectorised with NumPy.

The kenlm Python package only *queries* models, so we estimate them ourselves, the
way ``lmplz`` does (Chen & Goodman 1998; Heafield et al. 2013), and write ARPA
(:mod:`stages.models.perplexity.arpa`) that ``kenlm.Model`` loads.

Counting without Python loops over tokens
-----------------------------------------
Sentences (normalised lines) are split and dictionary-encoded by Arrow, then laid out
as one int stream ``<s> w1 .. wk </s> <s> ...`` with ``rem[i]`` = tokens left in the
sentence from position ``i``. An n-gram is identified *hierarchically*: the n-gram at
position ``i`` has key ``id_{n-1}[i] * V + stream[i + n - 1]`` (its (n-1)-gram
prefix's id, then its last word), which fits an int64 for any realistic corpus
(checked). One sort per order gives the distinct n-grams (sorted by context, which is
what the per-context sums need), their raw counts, and each position's n-gram id for
the next order. The suffix (n-1)-gram of a distinct n-gram is the (n-1)-gram id at its
first occurrence + 1. Every later step is a ``bincount`` or a gather over those
arrays: memory is O(tokens x order) int64 and time a few sorts of the token stream.

The model (what it estimates, exactly)
--------------------------------------
* Each sentence is ``<s> w1 .. wk </s>``; ``<s>`` is a context, never predicted.
* Counts: highest order and n-grams starting with ``<s>`` use raw counts; every other
  lower-order n-gram uses its *adjusted* (continuation) count, the number of distinct
  words seen to its left.
* Discounts per order from the count-of-counts ``t_k`` of those counts:
  ``Y = t1 / (t1 + 2 t2)``, ``D_k = k - (k + 1) Y t_{k+1} / t_k`` for k = 1, 2, 3+.
  When a ``t_k`` is zero or a ``D_k`` falls outside ``(0, k)`` (tiny corpora) the order
  uses lmplz's fallback ``(0.5, 1.0, 1.5)`` and the card says so.
* ``p(w | h) = (a(hw) - D(a(hw))) / sum_x a(hx) + gamma(h) p(w | h')`` with
  ``gamma(h) = (D1 N1(h.) + D2 N2(h.) + D3+ N3+(h.)) / sum_x a(hx)``; unigrams
  interpolate with the uniform distribution over the vocabulary minus ``<s>`` (``<unk>``
  included), so ``p(<unk>) = gamma() / |V|``.
* ARPA stores ``log10 p`` of every seen n-gram (interpolation baked in) and
  ``log10 gamma(h)`` as the backoff of every n-gram that is a context; ARPA's backoff
  rule then reproduces the interpolated model exactly, unpruned.

:func:`check_normalisation` verifies that every context's distribution sums to one.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe.errors import SpecError
from stages.models.textnorm import RESERVED_TOKENS

log = logging.getLogger(__name__)

UNK, BOS, EOS = 0, 1, 2
SPECIALS = ("<unk>", "<s>", "</s>")
FALLBACK_DISCOUNTS = (0.5, 1.0, 1.5)
MIN_ORDER, MAX_ORDER = 2, 6


@dataclass
class Order:
    """The distinct n-grams of one order, sorted by (context id, last word).

    ``prefix``/``suffix`` are ids into the previous order's arrays (absent for
    unigrams, whose id is the word id)."""

    n: int
    last: np.ndarray                 # int64 word id of the last word
    prefix: np.ndarray | None        # int64 id of the (n-1)-gram context
    suffix: np.ndarray | None        # int64 id of the (n-1)-gram without the first word
    raw: np.ndarray                  # int64 raw counts
    bos: np.ndarray                  # bool: starts with <s>
    adjusted: np.ndarray | None = None
    logprob: np.ndarray | None = None   # log10 p, float64
    backoff: np.ndarray | None = None   # log10 gamma, float64; NaN where not a context

    def __len__(self) -> int:
        return len(self.last)


@dataclass
class NgramModel:
    """An estimated model: vocabulary, one :class:`Order` per n, and its statistics."""

    order: int
    vocab: list[str]
    orders: list[Order]                       # orders[0] is unigrams
    discounts: list[tuple[float, float, float]] = field(default_factory=list)
    discount_fallback: list[bool] = field(default_factory=list)
    count_of_counts: list[list[int]] = field(default_factory=list)
    sentences: int = 0
    tokens: int = 0                            # words, without <s>/</s>
    timings: dict[str, float] = field(default_factory=dict)

    def words(self, n: int) -> np.ndarray:
        """``(K_n, n)`` word ids of the order-``n`` n-grams, row-aligned with its arrays."""
        cols = [self.orders[n - 1].last]
        ids = None
        for k in range(n, 1, -1):
            o = self.orders[k - 1]
            ids = o.prefix if ids is None else o.prefix[ids]
            cols.append(self.orders[k - 2].last[ids])
        return np.stack(cols[::-1], axis=1)

    def stats(self) -> dict:
        """The part of a model card that describes the estimate."""
        return {
            "order": self.order,
            "vocab_size": len(self.vocab),
            "sentences": self.sentences,
            "tokens": self.tokens,
            "ngrams": [len(o) for o in self.orders],
            "discounts": [list(map(float, d)) for d in self.discounts],
            "discount_fallback": self.discount_fallback,
            "count_of_counts": self.count_of_counts,
            "seconds": {k: round(v, 3) for k, v in self.timings.items()},
        }


def _encode(lines: Sequence[str] | pa.Array) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Word ids per token (specials first in the vocabulary), words per sentence."""
    arr = lines if isinstance(lines, pa.Array) else pa.array(lines, pa.large_string())
    split = pc.utf8_split_whitespace(arr)
    lengths = pc.fill_null(pc.list_value_length(split), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    words = pc.list_flatten(split)
    if len(words) == 0:
        raise SpecError("lm train: the corpus has no words after normalisation")
    enc = pc.dictionary_encode(words)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    dictionary = enc.dictionary.to_pylist()
    reserved = np.array([w in RESERVED_TOKENS for w in dictionary], dtype=bool)
    remap = np.empty(len(dictionary), dtype=np.int64)
    remap[~reserved] = len(SPECIALS) + np.arange(int((~reserved).sum()))
    remap[reserved] = UNK  # a literal <unk>/<s>/</s> in the text is the unknown word
    if reserved.any():
        log.warning("corpus contains reserved tokens %s; counted as <unk>",
                    [w for w, r in zip(dictionary, reserved) if r])
    vocab = list(SPECIALS) + [w for w, r in zip(dictionary, reserved) if not r]
    return remap[idx], lengths[lengths > 0], vocab


def _layout(word_ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Token stream with ``<s>``/``</s>`` per sentence, and tokens left per position."""
    sent_len = lengths + 2
    total = int(sent_len.sum())
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(sent_len[:-1], out=starts[1:])
    ends = starts + lengths + 1
    stream = np.empty(total, dtype=np.int64)
    is_word = np.ones(total, dtype=bool)
    is_word[starts] = False
    is_word[ends] = False
    stream[starts] = BOS
    stream[ends] = EOS
    stream[is_word] = word_ids
    rem = np.repeat(ends + 1, sent_len) - np.arange(total, dtype=np.int64)
    return stream, rem


def _group(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct keys (sorted), one position of each, inverse ids, counts."""
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    new = np.empty(len(sk), dtype=bool)
    new[0] = True
    np.not_equal(sk[1:], sk[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    inverse = np.empty(len(keys), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    counts = np.diff(np.append(starts, len(sk)))
    return sk[starts], order[starts], inverse, counts


def count_ngrams(lines: Sequence[str] | pa.Array, order: int) -> NgramModel:
    """Raw counts of every order with prefix/suffix links (see the module docstring)."""
    if not MIN_ORDER <= order <= MAX_ORDER:
        raise SpecError(f"lm train: order must be in {MIN_ORDER}..{MAX_ORDER}, got {order}")
    t0 = time.perf_counter()
    word_ids, lengths, vocab = _encode(lines)
    stream, rem = _layout(word_ids, lengths)
    V = len(vocab)
    t1 = time.perf_counter()

    raw1 = np.bincount(stream, minlength=V).astype(np.int64)
    uni = Order(n=1, last=np.arange(V, dtype=np.int64), prefix=None, suffix=None, raw=raw1,
                bos=np.arange(V) == BOS)
    orders = [uni]
    ids_prev = stream  # unigram id == word id
    for n in range(2, order + 1):
        pos = np.flatnonzero(rem >= n)
        if len(pos) == 0:
            raise SpecError(f"lm train: no sentence has {n - 2} words, so there are no {n}-grams; "
                            f"lower --order or give more text")
        K_prev = len(orders[-1])
        if K_prev * V >= 2**62:
            raise SpecError(f"lm train: {K_prev} {n - 1}-grams x {V} words overflows the int64 n-gram key; "
                            "split the corpus or lower --order")
        keys = ids_prev[pos] * V + stream[pos + n - 1]
        uniq, first, inverse, counts = _group(keys)
        rep = pos[first]
        ids_n = np.full(len(stream), -1, dtype=np.int64)
        ids_n[pos] = inverse
        orders.append(Order(
            n=n, last=uniq % V, prefix=uniq // V, suffix=ids_prev[rep + 1], raw=counts.astype(np.int64),
            bos=stream[rep] == BOS,
        ))
        ids_prev = ids_n
    model = NgramModel(order=order, vocab=vocab, orders=orders, sentences=len(lengths), tokens=int(lengths.sum()))
    model.timings["encode"] = t1 - t0
    model.timings["count"] = time.perf_counter() - t1
    return model


def _discounts(counts: np.ndarray) -> tuple[tuple[float, float, float], bool, list[int]]:
    t = [int(np.count_nonzero(counts == k)) for k in range(1, 5)]
    if all(t):
        y = t[0] / (t[0] + 2 * t[1])
        d = tuple(k - (k + 1) * y * t[k] / t[k - 1] for k in (1, 2, 3))
        if all(0.0 < d[k - 1] < k for k in (1, 2, 3)):
            return d, False, t
    return FALLBACK_DISCOUNTS, True, t


def _discount_of(adj: np.ndarray, d: tuple[float, float, float]) -> np.ndarray:
    out = np.where(adj >= 3, d[2], np.where(adj == 2, d[1], d[0]))
    out[adj == 0] = 0.0
    return out


def estimate_probabilities(model: NgramModel) -> NgramModel:
    """Adjusted counts, discounts, interpolated probabilities and backoffs, in place."""
    t0 = time.perf_counter()
    N = model.order
    O = model.orders
    for n in range(1, N + 1):
        o = O[n - 1]
        if n == N:
            o.adjusted = o.raw.copy()
        else:
            adj = np.bincount(O[n].suffix, minlength=len(o)).astype(np.int64)
            adj[o.bos] = o.raw[o.bos]
            o.adjusted = adj
    model.discounts, model.discount_fallback, model.count_of_counts = [], [], []
    for n in range(1, N + 1):
        o = O[n - 1]
        considered = o.adjusted[(o.adjusted > 0) & ~(o.bos if n == 1 else np.zeros(len(o), bool))]
        d, fb, t = _discounts(considered)
        if fb:
            log.warning("order %d: count-of-counts %s do not give valid discounts; using fallback %s",
                        n, t, FALLBACK_DISCOUNTS)
        model.discounts.append(d)
        model.discount_fallback.append(fb)
        model.count_of_counts.append(t)

    # unigrams: interpolate with the uniform distribution over V minus <s>
    u = O[0]
    a = u.adjusted.astype(np.float64)
    a[BOS] = 0.0
    total = a.sum()
    disc = _discount_of(u.adjusted, model.discounts[0])
    disc[BOS] = 0.0
    gamma0 = disc.sum() / total
    p = np.where(a > 0, (a - disc) / total, 0.0) + gamma0 / (len(model.vocab) - 1)
    p[BOS] = 0.0
    probs_prev = p
    with np.errstate(divide="ignore"):
        u.logprob = np.log10(p)
    u.logprob[BOS] = -99.0
    for n in range(2, N + 1):
        o = O[n - 1]
        prev = O[n - 2]
        a = o.adjusted.astype(np.float64)
        disc = _discount_of(o.adjusted, model.discounts[n - 1])
        S = np.bincount(o.prefix, weights=a, minlength=len(prev))
        Dsum = np.bincount(o.prefix, weights=disc, minlength=len(prev))
        is_ctx = S > 0
        gamma = np.zeros(len(prev))
        gamma[is_ctx] = Dsum[is_ctx] / S[is_ctx]
        prev.backoff = np.full(len(prev), np.nan)
        with np.errstate(divide="ignore"):
            prev.backoff[is_ctx] = np.log10(gamma[is_ctx])
        # gamma == 0 only if every child has D == 0, impossible with D in (0, k); guard anyway
        prev.backoff[is_ctx & (gamma == 0)] = -99.0
        p = (a - disc) / S[o.prefix] + gamma[o.prefix] * probs_prev[o.suffix]
        o.logprob = np.log10(p)
        probs_prev = p
    model.timings["estimate"] = time.perf_counter() - t0
    return model


def estimate(lines: Sequence[str] | pa.Array, order: int = 5) -> NgramModel:
    """Count and estimate an interpolated modified Kneser-Ney model of ``order`` from
    normalised sentences (one per item, words separated by spaces)."""
    return estimate_probabilities(count_ngrams(lines, order))


def check_normalisation(model: NgramModel) -> float:
    """Largest ``|sum_w p(w | h) - 1|`` over every context ``h`` of every order, computed
    from the stored (ARPA) log-probabilities and backoffs with ARPA's backoff rule:
    ``sum_w p(w|h) = sum_{seen w} p(hw) + b(h) (1 - sum_{seen w} p(w|h'))``, the lower
    order being checked in turn (unigrams directly)."""
    u = model.orders[0]
    p1 = 10.0 ** u.logprob
    p1[BOS] = 0.0
    worst = abs(p1.sum() - 1.0)
    for n in range(2, model.order + 1):
        o = model.orders[n - 1]
        prev = model.orders[n - 2]
        K = len(prev)
        seen = np.bincount(o.prefix, weights=10.0 ** o.logprob, minlength=K)
        # p(w | h') for a seen hw is the stored (n-1)-gram h'w, which the suffix id points at
        lower_seen = np.bincount(o.prefix, weights=10.0 ** prev.logprob[o.suffix], minlength=K)
        is_ctx = np.bincount(o.prefix, minlength=K) > 0
        b = 10.0 ** np.nan_to_num(prev.backoff, nan=0.0)
        total = seen + b * (1.0 - lower_seen)
        if is_ctx.any():
            worst = max(worst, float(np.max(np.abs(total[is_ctx] - 1.0))))
    return worst


def lines_from_texts(texts: Iterable[str], norm) -> list[str]:
    """Normalised sentences (lines) of every text, for :func:`estimate`."""
    out: list[str] = []
    for t in texts:
        out.extend(norm.lines(t))
    return out
