"""The n-gram estimator against a brute-force modified Kneser-Ney written the slow,
obvious way, and against KenLM reading our ARPA files."""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict

import kenlm
import numpy as np
import pytest

from stages.models.perplexity.arpa import write_arpa
from stages.models.perplexity.kneser_ney import FALLBACK_DISCOUNTS, check_normalisation, estimate
from stages.models.textnorm import TextNorm


# -- the reference: dictionaries of tuples, no vectorisation ------------------------------

class BruteForceKN:
    """Interpolated modified Kneser-Ney, straight from the definitions (Chen & Goodman),
    with lmplz's conventions: ``<s> .. </s>`` per sentence, raw counts for the highest
    order and for n-grams starting with ``<s>``, continuation counts otherwise, unigrams
    interpolated with the uniform distribution over the vocabulary minus ``<s>``."""

    def __init__(self, sentences: list[list[str]], order: int) -> None:
        self.N = order
        raw = [Counter() for _ in range(order + 1)]
        for s in sentences:
            toks = ["<s>"] + s + ["</s>"]
            for n in range(1, order + 1):
                for i in range(len(toks) - n + 1):
                    raw[n][tuple(toks[i:i + n])] += 1
        self.adj: list[dict] = [None] * (order + 1)
        self.adj[order] = dict(raw[order])
        for n in range(order - 1, 0, -1):
            left = Counter(g[1:] for g in raw[n + 1])
            self.adj[n] = {g: (c if g[0] == "<s>" else left[g]) for g, c in raw[n].items()}
        self.D = [None]
        for n in range(1, order + 1):
            counts = [c for g, c in self.adj[n].items() if not (n == 1 and g == ("<s>",))]
            t = [sum(1 for c in counts if c == k) for k in range(1, 5)]
            d = None
            if all(t):
                y = t[0] / (t[0] + 2 * t[1])
                d = [k - (k + 1) * y * t[k] / t[k - 1] for k in (1, 2, 3)]
                if not all(0 < d[k - 1] < k for k in (1, 2, 3)):
                    d = None
            self.D.append(d or list(FALLBACK_DISCOUNTS))
        self.vocab = {g[0] for g in raw[1]} - {"<s>"} | {"<unk>"}
        # per-context sums over children: total adjusted count and total discount
        self.ctx_total = [None] + [defaultdict(float) for _ in range(order)]
        self.ctx_disc = [None] + [defaultdict(float) for _ in range(order)]
        for n in range(1, order + 1):
            for g, a in self.adj[n].items():
                if n == 1 and g == ("<s>",):
                    continue
                self.ctx_total[n][g[:-1]] += a
                self.ctx_disc[n][g[:-1]] += self.disc(n, a)

    def disc(self, n: int, a: int) -> float:
        return 0.0 if a == 0 else self.D[n][min(a, 3) - 1]

    def prob(self, w: str, h: tuple[str, ...]) -> float:
        n = len(h) + 1
        if n == 1:
            a = self.adj[1].get((w,), 0)
            total = self.ctx_total[1][()]
            gamma = self.ctx_disc[1][()] / total
            return (a - self.disc(1, a)) / total + gamma / len(self.vocab)
        if h not in self.ctx_total[n]:  # never seen as a context: back off with weight 1
            return self.prob(w, h[1:])
        total = self.ctx_total[n][h]
        a = self.adj[n].get(h + (w,), 0)
        gamma = self.ctx_disc[n][h] / total
        return (a - self.disc(n, a)) / total + gamma * self.prob(w, h[1:])

    def sentence_log10(self, words: list[str]) -> float:
        hist = ["<s>"]
        total = 0.0
        for w in words + ["</s>"]:
            w = w if w in self.vocab else "<unk>"
            total += math.log10(self.prob(w, tuple(hist[-(self.N - 1):])))
            hist.append(w)
        return total


# -- fixtures ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def wiki_lines(shared_dir) -> list[str]:
    text = (shared_dir / "corpora" / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    return TextNorm().lines(text)


def _kenlm(model, tmp_path, name="m.arpa"):
    path = tmp_path / name
    write_arpa(model, path)
    return kenlm.Model(str(path)), path


# -- tests -------------------------------------------------------------------------------

@pytest.mark.parametrize("order", [3, 5])
def test_kenlm_scores_match_brute_force(wiki_lines, tmp_path, order):
    train, test = wiki_lines[:1500], wiki_lines[1500:1540]
    model = estimate(train, order=order)
    assert not any(model.discount_fallback), "corpus chosen so that real discounts apply"
    lm, _ = _kenlm(model, tmp_path)
    ref = BruteForceKN([s.split() for s in train], order)
    # held-out sentences (with OOV words), training sentences, a made-up one
    sentences = test + train[:20] + ["zzzqx unseenword the , of", "the"]
    for s in sentences:
        ours = lm.score(s, bos=True, eos=True)
        want = ref.sentence_log10(s.split())
        assert ours == pytest.approx(want, rel=1e-5, abs=1e-4), s
    # and so do the perplexities of a held-out document
    toks = sum(len(s.split()) + 1 for s in test)
    ppl_kenlm = 10 ** (-sum(lm.score(s) for s in test) / toks)
    ppl_ref = 10 ** (-sum(ref.sentence_log10(s.split()) for s in test) / toks)
    assert ppl_kenlm == pytest.approx(ppl_ref, rel=1e-4)


def _all_contexts(model):
    """Every context of the model as a word tuple: () and each n-gram with children."""
    ctxs = [()]
    for n in range(1, model.order):
        words = model.words(n)
        child = model.orders[n]  # order n + 1
        has_children = np.bincount(child.prefix, minlength=len(words)) > 0
        for row in words[has_children]:
            ctxs.append(tuple(model.vocab[i] for i in row))
    return ctxs


@pytest.mark.parametrize("order", [3, 4])
def test_every_context_sums_to_one_in_kenlm(wiki_lines, tmp_path, order):
    model = estimate(wiki_lines[:25], order=order)
    lm, _ = _kenlm(model, tmp_path)
    predictable = [w for w in model.vocab if w != "<s>"]
    ctxs = _all_contexts(model)
    assert len(ctxs) > 500
    state, tmp, out = kenlm.State(), kenlm.State(), kenlm.State()
    worst = 0.0
    for ctx in ctxs:
        if ctx and ctx[0] == "<s>":
            lm.BeginSentenceWrite(state)
            rest = ctx[1:]
        else:
            lm.NullContextWrite(state)
            rest = ctx
        for w in rest:
            lm.BaseScore(state, w, tmp)
            state, tmp = tmp, state
        total = sum(10.0 ** lm.BaseScore(state, w, out) for w in predictable)
        worst = max(worst, abs(total - 1.0))
    assert worst < 1e-4  # float32 storage in the ARPA / KenLM
    assert check_normalisation(model) < 1e-9


def test_fallback_discounts_on_a_tiny_corpus_stay_normalised(tmp_path):
    model = estimate(["a b c", "a b d", "b c a"], order=3)
    assert any(model.discount_fallback)
    assert check_normalisation(model) < 1e-9
    lm, _ = _kenlm(model, tmp_path)
    ref = BruteForceKN([s.split() for s in ["a b c", "a b d", "b c a"]], 3)
    for s in ["a b c", "c b a d", "x a b"]:
        assert lm.score(s) == pytest.approx(ref.sentence_log10(s.split()), abs=1e-4)


def test_arpa_header_matches_counts_and_loads(wiki_lines, tmp_path):
    model = estimate(wiki_lines[:300], order=4)
    lm, path = _kenlm(model, tmp_path)
    assert lm.order == 4
    header = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("ngram "):
                n, c = line[6:].strip().split("=")
                header[int(n)] = int(c)
            elif line.startswith("\\1-grams"):
                break
    assert header == {n + 1: len(o) for n, o in enumerate(model.orders)}
    # the body has exactly that many lines per order
    body = path.read_text(encoding="utf-8").split("\n\\")
    for n in range(1, 5):
        section = next(s for s in body if s.startswith(f"{n}-grams:"))
        assert len([ln for ln in section.split("\n")[1:] if ln]) == header[n]


def test_counts_are_exact(tmp_path):
    model = estimate(["the cat sat", "the cat ran", "a cat sat"], order=3)
    vocab = model.vocab
    trigrams = {tuple(vocab[i] for i in row): int(c) for row, c in zip(model.words(3), model.orders[2].raw)}
    assert trigrams[("the", "cat", "sat")] == 1
    assert trigrams[("<s>", "the", "cat")] == 2
    assert trigrams[("cat", "sat", "</s>")] == 2
    bigrams = {tuple(vocab[i] for i in row): int(a) for row, a in zip(model.words(2), model.orders[1].adjusted)}
    assert bigrams[("cat", "sat")] == 2       # continuation count: 'the cat sat', 'a cat sat'
    assert bigrams[("<s>", "the")] == 2       # <s>-initial: raw count
    unigrams = {vocab[i]: int(a) for i, a in enumerate(model.orders[0].adjusted)}
    assert unigrams["cat"] == 2               # left contexts 'the', 'a'


def test_reserved_tokens_become_unk(tmp_path):
    model = estimate(["a <unk> b", "a </s> b c"], order=2)
    assert model.vocab.count("<unk>") == 1 and model.vocab.count("</s>") == 1
    lm, _ = _kenlm(model, tmp_path)
    assert math.isfinite(lm.score("a b c"))


def test_vectorised_estimate_handles_megabytes_quickly(shared_dir):
    """A size check, not a timing assert: 1.3 MB of wiki at order 5 must estimate
    (the benchmark numbers for 20 MB are in docs/quality.md)."""
    text = (shared_dir / "corpora" / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    lines = TextNorm().lines(text)
    random.Random(0).shuffle(lines)
    model = estimate(lines, order=5)
    assert model.tokens > 200_000
    assert [len(o) for o in model.orders][4] > 150_000
    assert check_normalisation(model) < 1e-9
