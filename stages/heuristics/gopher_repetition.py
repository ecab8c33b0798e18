"""Gopher repetition filter (Rae et al. 2021, appendix A and table A1): documents
that repeat themselves — the same lines, paragraphs or phrases over and over — are
mostly boilerplate, spam or generated text.

Rules, checked in this order (``gopher_repetition:<rule>``, detail = measured value):

======================  =====================================================  =======
rule                    drops a document when                                  default
======================  =====================================================  =======
dup_para_frac           repeated paragraphs / paragraphs > max                 0.30
dup_para_char_frac      characters in repeated paragraphs / characters > max   0.20
dup_line_frac           repeated lines / lines > max                           0.30
dup_line_char_frac      characters in repeated lines / characters > max        0.20
top_{n}gram_char_frac   characters of the most frequent n-gram (times its      0.20, 0.18,
                        count) / characters > max, n = 2, 3, 4                 0.16
dup_{n}gram_char_frac   characters covered by repeated n-grams / characters    0.15 .. 0.10
                        > max, n = 5 .. 10
======================  =====================================================  =======

Exact semantics (they follow datatrove's ``GopherRepetitionFilter``):

* a *repeat* is an occurrence after the first one in the same document; the first
  occurrence never counts;
* lines are ``str.splitlines()`` lines compared after stripping surrounding whitespace;
  blank lines are ignored; a paragraph is a run of non-blank lines (paragraphs are
  separated by blank lines) and is compared and measured as its stripped lines joined
  by newlines;
* n-grams are over whitespace tokens; a top n-gram's characters are its words joined by
  single spaces (times its count; ties go to the n-gram seen first); repeated n-gram
  characters are the characters of the words covered by at least one repeated n-gram,
  each word counted once however many repeated n-grams overlap it (datatrove instead
  skips ahead after each repeat, which can count slightly less);
* "characters" in every denominator is the length of the whole text;
* languages written without spaces (``language`` column, else ``default_language``;
  :mod:`stages.heuristics.languages`) form n-grams over characters instead of whitespace tokens.

``reference: datatrove`` reproduces datatrove's ``GopherRepetitionFilter`` instead
(:mod:`stages.heuristics.datatrove_mode`; differences in ``docs/filters.md``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from datapipe.errors import SpecError
from datapipe.stage import Compute, FilterStage, StageConfig
from stages.heuristics import datatrove_mode as DT
from stages.heuristics import languages as L
from stages.heuristics.columns import lengths, py_counts, text_list
from stages.heuristics.grouping import codes, first_seen, mix64, repeats
from stages.heuristics.pieces import positions_in_doc
from stages.heuristics.verdicts import first_failure
from stages.heuristics.words import char_table, CharTable, tokenize, Tokens
from stages.heuristics.config_checks import check_fractions, check_reference

log = logging.getLogger(__name__)

GOPHER_TOP_NGRAMS = {2: 0.20, 3: 0.18, 4: 0.16}
GOPHER_DUP_NGRAMS = {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}


@dataclass(kw_only=True, frozen=True)
class GopherRepetitionConfig(StageConfig):
    max_dup_para_frac: float | None = 0.30
    max_dup_para_char_frac: float | None = 0.20
    max_dup_line_frac: float | None = 0.30
    max_dup_line_char_frac: float | None = 0.20
    #: n -> max fraction of characters in the most frequent n-gram
    top_ngram_char_frac: dict[int, float] = field(default_factory=lambda: dict(GOPHER_TOP_NGRAMS))
    #: n -> max fraction of characters covered by repeated n-grams
    dup_ngram_char_frac: dict[int, float] = field(default_factory=lambda: dict(GOPHER_DUP_NGRAMS))
    #: language of documents when the batch has no ``language`` column (null: unknown)
    default_language: str | None = "en"
    #: "paper" (the published rules) or "datatrove" (datatrove's implementation)
    reference: str = "paper"

    def __post_init__(self) -> None:
        s = "gopher_repetition"
        check_reference(s, self.reference)
        check_fractions(s, self, ("max_dup_para_frac", "max_dup_para_char_frac", "max_dup_line_frac",
                                  "max_dup_line_char_frac"))
        for name in ("top_ngram_char_frac", "dup_ngram_char_frac"):
            for n, v in dict(getattr(self, name)).items():
                if not isinstance(n, int) or not 1 <= n <= 64:
                    raise SpecError(f"{s}: {name} keys are n-gram sizes between 1 and 64, got {n!r}")
                if not 0.0 <= float(v) <= 1.0:
                    raise SpecError(f"{s}: {name}[{n}] must be a fraction between 0 and 1, got {v}")


class GopherRepetition(FilterStage):
    """Gopher's repetition heuristics on ``text``; see the module docstring."""

    name = "gopher_repetition"
    Config = GopherRepetitionConfig
    compute = Compute(kind="actor")   # setup() loads state once per actor

    _chars: CharTable | None = None          # set in setup()

    def setup(self) -> None:
        self._chars = char_table()

    def keep(self, batch: pa.Table):
        cfg: GopherRepetitionConfig = self.config
        self.ensure_setup()
        texts = text_list(batch)
        langs = L.languages_of(L.document_languages(batch, cfg.default_language))
        if cfg.reference == "datatrove":
            if getattr(self, "_words", None) is None:
                self._words = DT.Words()
            return DT.run_per_document(texts, langs,
                                       lambda t, lang: DT.gopher_repetition(t, self._words.words(t, lang), cfg))
        by_chars = np.array([x is not None and x.by_chars for x in langs], dtype=bool)
        n = len(texts)
        total_chars = np.maximum(py_counts(texts, len), 1).astype(np.float64)
        fails: list[tuple[str, np.ndarray, np.ndarray]] = []

        lines = None
        for unit, duplicates, max_frac, max_char_frac in (
                ("para", _paragraph_duplicates, cfg.max_dup_para_frac, cfg.max_dup_para_char_frac),
                ("line", _line_duplicates, cfg.max_dup_line_frac, cfg.max_dup_line_char_frac)):
            if max_frac is None and max_char_frac is None:
                continue
            lines = _stripped_lines(texts) if lines is None else lines
            dup_count, dup_chars, count = duplicates(lines)
            if max_frac is not None:
                r = dup_count / np.maximum(count, 1)
                fails.append((f"dup_{unit}_frac", r > max_frac, r))
            if max_char_frac is not None:
                r = dup_chars / total_chars
                fails.append((f"dup_{unit}_char_frac", r > max_char_frac, r))

        top = dict(cfg.top_ngram_char_frac)
        dup = dict(cfg.dup_ngram_char_frac)
        if top or dup:
            stats = ngram_char_stats(tokenize(texts, self._chars, by_chars), top_ns=sorted(top), dup_ns=sorted(dup))
            for k in sorted(top):
                r = stats[("top", k)] / total_chars
                fails.append((f"top_{k}gram_char_frac", r > top[k], r))
            for k in sorted(dup):
                r = stats[("dup", k)] / total_chars
                fails.append((f"dup_{k}gram_char_frac", r > dup[k], r))

        return first_failure(fails, n)


@dataclass
class _Lines:
    """Every line of every document, stripped (blank lines included), with per-line
    dictionary codes and lengths."""

    parent: np.ndarray
    code: np.ndarray
    length: np.ndarray
    n_docs: int


def _stripped_lines(texts: list[str]) -> _Lines:
    per_doc = [[x.strip() for x in t.splitlines()] for t in texts]
    counts = np.fromiter((len(x) for x in per_doc), dtype=np.int64, count=len(per_doc))
    arr = pa.array([x for lines in per_doc for x in lines], pa.string())
    parent = np.repeat(np.arange(len(per_doc), dtype=np.int64), counts)
    return _Lines(parent, codes(arr), lengths(arr), len(per_doc))


def _line_duplicates(lines: _Lines) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per document: repeated non-blank lines, their characters, all non-blank lines."""
    nb = lines.length > 0
    parent = lines.parent[nb]
    rep = repeats(lines.code[nb], parent)
    n = lines.n_docs
    return (np.bincount(parent[rep], minlength=n), np.bincount(parent[rep], weights=lines.length[nb][rep], minlength=n),
            np.bincount(parent, minlength=n))


def _paragraph_duplicates(lines: _Lines) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per document: repeated paragraphs, their characters, all paragraphs. A paragraph
    is a run of non-blank lines; its text is those stripped lines joined by newlines."""
    n = lines.n_docs
    nb = lines.length > 0
    idx = np.flatnonzero(nb)
    if len(idx) == 0:
        z = np.zeros(n, dtype=np.int64)
        return z, z.astype(np.float64), z
    parent = lines.parent
    prev_same = np.zeros(len(nb), dtype=bool)
    prev_same[1:] = nb[:-1] & (parent[1:] == parent[:-1])
    head = (nb & ~prev_same)[idx]                 # per non-blank line: starts a paragraph
    starts = np.flatnonzero(head)
    sizes = np.diff(np.r_[starts, len(idx)])
    pos = np.arange(len(idx), dtype=np.int64) - np.repeat(starts, sizes)
    with np.errstate(over="ignore"):
        v = mix64(lines.code[idx].astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + pos.astype(np.uint64))
    key = np.bitwise_xor.reduceat(v, starts) ^ mix64(sizes.astype(np.uint64))
    chars = np.add.reduceat(lines.length[idx], starts) + sizes - 1
    pdoc = parent[idx][starts]
    rep = repeats(key, pdoc)
    return (np.bincount(pdoc[rep], minlength=n), np.bincount(pdoc[rep], weights=chars[rep], minlength=n),
            np.bincount(pdoc, minlength=n))


def ngram_char_stats(toks: Tokens, *, top_ns: list[int], dup_ns: list[int]) -> dict[tuple[str, int], np.ndarray]:
    """Per document, for each ``n`` in ``top_ns`` the characters of its most frequent
    word n-gram times that n-gram's count, and for each ``n`` in ``dup_ns`` the characters
    of words covered by repeated n-grams (see the module docstring).

    An n-gram can only occur twice if its (n-1)-word prefix does, so n-grams are only
    formed at positions whose (n-1)-gram repeats: each size works on the survivors of
    the previous one, and only the first (single words) sorts the whole batch."""
    n_docs = toks.n_docs
    out = {("top", k): np.zeros(n_docs) for k in top_ns}
    out.update({("dup", k): np.zeros(n_docs) for k in dup_ns})
    m = len(toks)
    wanted = set(top_ns) | set(dup_ns)
    if m == 0 or not wanted:
        return out
    wlen = toks.length
    cum = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(wlen, out=cum[1:])
    pos, doc_words = positions_in_doc(toks.doc, n_docs)
    doc_first = np.zeros(n_docs, dtype=np.int64)
    np.cumsum(np.bincount(toks.doc, minlength=n_docs)[:-1], out=doc_first[1:])
    n_doc_words = np.bincount(toks.doc, minlength=n_docs)
    salt = mix64(toks.doc.astype(np.uint64) + np.uint64(0x632BE59BD9B4E019))
    wcode = toks.hashes()

    cand = np.arange(m, dtype=np.int64)   # positions whose (k-1)-gram repeats, in text order
    h = np.zeros(m, dtype=np.uint64)      # running k-gram hash at each position
    with np.errstate(over="ignore"):
        for k in range(1, max(wanted) + 1):
            cand = cand[pos[cand] + k <= doc_words[cand]]
            if len(cand) == 0:
                break
            h[cand] = mix64(h[cand] * np.uint64(0x9E3779B97F4A7C15) + wcode[cand + k - 1] + np.uint64(k))
            group, is_first, sizes = first_seen(h[cand] ^ salt[cand])
            if k in top_ns:
                res = np.zeros(n_docs)
                # a k-gram occurring once: the document's first k-gram wins the tie
                d0 = np.flatnonzero(n_doc_words >= k)
                f0 = doc_first[d0]
                res[d0] = cum[f0 + k] - cum[f0] + (k - 1)
                multi = sizes >= 2
                if multi.any():
                    g_first, g_size = cand[is_first][multi], sizes[multi]   # earliest occurrence, count
                    g_doc = toks.doc[g_first]
                    pick = np.lexsort((g_first, -g_size, g_doc))
                    lead = pick[np.r_[True, g_doc[pick][1:] != g_doc[pick][:-1]]]
                    res[g_doc[lead]] = g_size[lead] * (cum[g_first[lead] + k] - cum[g_first[lead]] + (k - 1))
                out[("top", k)] = res
            if k in dup_ns:
                rep_pos = cand[~is_first]                         # later occurrences only
                if len(rep_pos):
                    delta = np.bincount(rep_pos, minlength=m + 1) - np.bincount(rep_pos + k, minlength=m + 1)
                    covered = np.cumsum(delta[:m]) > 0
                    out[("dup", k)] = toks.total(wlen.astype(np.float64), covered)
            cand = cand[sizes[group] >= 2]
    return out
