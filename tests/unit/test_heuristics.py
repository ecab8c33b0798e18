"""The heuristic filters: every rule on crafted documents at, just below and just above
its published threshold (each rule tested alone, the others disabled), the rule names
in the reject reasons, C4's line cleaning and counters, config validation, and the
vectorised stages agreeing with the plain per-document reference on real text."""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
import zipfile

import pytest

from datapipe.errors import SpecError
from datapipe.schema import make_batch
import heuristics_reference as R
from stages.heuristics.c4 import C4, C4Config, load_bad_words
from stages.heuristics.fineweb import FineWeb, FineWebConfig
from stages.heuristics.gopher_quality import GopherQuality, GopherQualityConfig
from stages.heuristics.words import CharTable, tokenize
from stages.heuristics.gopher_repetition import GopherRepetition, GopherRepetitionConfig, ngram_char_stats


# -- helpers -------------------------------------------------------------------------

def run(stage, texts):
    """Reasons (``rule`` without the stage prefix, None = kept) and output texts."""
    batch = make_batch(source="t", ids=[f"d{i}" for i in range(len(texts))], texts=list(texts))
    out, stats = stage.process(batch)
    reasons = [None if r is None else r.split(":", 1)[1] for r in out.column("_reject_reason").to_pylist()]
    return reasons, out.column("text").to_pylist(), stats["t"]


def verdicts(stage, texts):
    return run(stage, texts)[0]


GQ_OFF = {f.name: None for f in dataclasses.fields(GopherQualityConfig)
          if f.name not in ("stop_words", "bullet_chars", "default_language", "reference")}
GR_OFF = dict(max_dup_para_frac=None, max_dup_para_char_frac=None, max_dup_line_frac=None,
              max_dup_line_char_frac=None, top_ngram_char_frac={}, dup_ngram_char_frac={})
FW_OFF = dict(min_line_punct_ratio=None, max_short_line_ratio=None, max_char_dup_ratio=None, max_list_ratio=None)


def gq_only(*names: str) -> GopherQuality:
    """Gopher quality with only the named thresholds at their published defaults."""
    defaults = GopherQualityConfig()
    return GopherQuality(GopherQualityConfig(**{**GQ_OFF, **{n: getattr(defaults, n) for n in names}}))


def gr_only(**enabled) -> GopherRepetition:
    return GopherRepetition(GopherRepetitionConfig(**{**GR_OFF, **enabled}))


def fw_only(**enabled) -> FineWeb:
    return FineWeb(FineWebConfig(**{**FW_OFF, **enabled}))


def words(n: int, length: int = 4) -> list[str]:
    """``n`` distinct alphabetic words of ``length`` letters."""
    out = []
    for i in range(n):
        w, k = "", i
        for _ in range(length):
            w += "abcdefghijklmnopqrstuvwxyz"[k % 26]
            k //= 26
        out.append(w)
    return out


def filler(length: int, prefix: str = "z") -> str:
    """Distinct tokens joined by single spaces, exactly ``length`` characters."""
    assert length >= 1
    toks: list[str] = []
    cur = 0
    i = 0
    while True:
        rest = length - cur - (1 if toks else 0)
        if rest <= 10:
            toks.append("y" * rest)
            break
        t = f"{prefix}{i:04d}"
        cur += len(t) + (1 if toks else 0)
        toks.append(t)
        i += 1
    s = " ".join(toks)
    assert len(s) == length
    return s


# -- Gopher quality ------------------------------------------------------------------

def test_gopher_quality_defaults_are_the_papers():
    c = GopherQualityConfig()
    assert (c.min_words, c.max_words, c.min_mean_word_length, c.max_mean_word_length) == (50, 100_000, 3, 10)
    assert (c.max_hash_ratio, c.max_ellipsis_ratio, c.max_bullet_lines, c.max_ellipsis_lines) == (0.1, 0.1, 0.9, 0.3)
    assert (c.min_alpha_words, c.min_stop_words) == (0.8, 2)
    assert set(c.stop_words) == {"the", "be", "to", "of", "and", "that", "have", "with"}


def test_gopher_word_count_bounds():
    st = gq_only("min_words", "max_words")
    docs = [" ".join(words(n)) for n in (49, 50, 51, 100_000, 100_001)]
    assert verdicts(st, docs) == ["word_count", None, None, None, "word_count"]


def test_gopher_symbol_tokens_are_not_words():
    st = gq_only("min_words")
    # 50 words plus punctuation-only tokens: still 50 words; 49 words plus symbols: too few
    assert verdicts(st, [" ".join(words(50)) + " - ... | •", " ".join(words(49)) + " - -- ---"]) == [None, "word_count"]


def test_gopher_mean_word_length_lower_bound():
    st = gq_only("min_mean_word_length")
    base = words(100, 3)                      # mean exactly 3.0
    below = ["ab"] + base[1:]                 # 299 / 100
    above = ["abcd"] + base[1:]
    # surrounding punctuation is not part of a word's length
    punct = [f"({w})," for w in base]
    assert verdicts(st, [" ".join(x) for x in (base, below, above, punct)]) == [None, "mean_word_length", None, None]


def test_gopher_mean_word_length_upper_bound():
    st = gq_only("max_mean_word_length")
    at = words(100, 10)                       # mean exactly 10
    above = words(99, 10) + ["abcdefghijk"]   # 1001 / 100
    below = words(99, 10) + ["abcdefghi"]     # 999 / 100
    assert verdicts(st, [" ".join(x) for x in (at, above, below)]) == [None, "mean_word_length", None]


@pytest.mark.parametrize("symbol,rule", [("#", "hash_ratio"), ("...", "ellipsis_ratio"), ("…", "ellipsis_ratio")])
def test_gopher_symbol_to_word_ratio(symbol, rule):
    st = gq_only("max_hash_ratio" if rule == "hash_ratio" else "max_ellipsis_ratio")
    w = " ".join(words(100))
    docs = [w + f" {symbol}" * k for k in (9, 10, 11)]   # 0.09, 0.10 (at), 0.11
    assert verdicts(st, docs) == [None, None, rule]


@pytest.mark.parametrize("bullet", ["•", "-"])
def test_gopher_bullet_lines(bullet):
    st = gq_only("max_bullet_lines")

    def doc(k):
        return "\n".join((f"  {bullet} item {w}" if i < k else f"plain {w}") for i, w in enumerate(words(100)))

    assert verdicts(st, [doc(89), doc(90), doc(91)]) == [None, None, "bullet_lines"]


def test_gopher_ellipsis_lines():
    st = gq_only("max_ellipsis_lines")

    def doc(k, mark="..."):
        return "\n".join((f"line {w}{mark} " if i < k else f"line {w}.") for i, w in enumerate(words(100)))

    assert verdicts(st, [doc(29), doc(30), doc(31), doc(31, "…")]) == [None, None, "ellipsis_lines", "ellipsis_lines"]


def test_gopher_alpha_words():
    st = gq_only("min_alpha_words")

    def doc(k):  # k alphabetic words out of 100, the rest numbers
        return " ".join(words(k) + [str(1000 + i) for i in range(100 - k)])

    assert verdicts(st, [doc(79), doc(80), doc(81), " ".join(words(80) + ["3.14"] * 20)]) == [
        "alpha_words", None, None, None]


def test_gopher_stop_words():
    st = gq_only("min_stop_words")
    w = words(60)
    docs = [" ".join(w), " ".join(["the"] + w), " ".join(["The,"] + w + ["and"]), " ".join(["of", "with", "to"] + w)]
    assert verdicts(st, docs) == ["stop_words", "stop_words", None, None]


def test_gopher_quality_reports_first_failing_rule_with_value():
    st = GopherQuality()
    batch = make_batch(source="t", ids=["a"], texts=["tiny doc"])
    out, stats = st.process(batch)
    assert out.column("_reject_reason").to_pylist() == ["gopher_quality:word_count"]
    assert out.column("_reject_detail").to_pylist() == ["2"]
    assert stats["t"].dropped == {"gopher_quality:word_count": 1}


# -- Gopher repetition ----------------------------------------------------------------

def test_gopher_repetition_defaults_are_the_papers():
    c = GopherRepetitionConfig()
    assert (c.max_dup_para_frac, c.max_dup_para_char_frac, c.max_dup_line_frac, c.max_dup_line_char_frac) == (
        0.3, 0.2, 0.3, 0.2)
    assert dict(c.top_ngram_char_frac) == {2: 0.20, 3: 0.18, 4: 0.16}
    assert dict(c.dup_ngram_char_frac) == {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}


@pytest.mark.parametrize("sep,field,rule", [("\n\n", "max_dup_para_frac", "dup_para_frac"),
                                            ("\n", "max_dup_line_frac", "dup_line_frac")])
def test_gopher_duplicate_fraction(sep, field, rule):
    st = gr_only(**{field: 0.3})
    uniq = [f"piece {w}" for w in words(100)]

    def doc(k):  # 100 pieces of which k repeat the first one
        return sep.join(uniq[: 100 - k] + [uniq[0]] * k)

    assert verdicts(st, [doc(29), doc(30), doc(31)]) == [None, None, rule]


@pytest.mark.parametrize("sep,field,rule", [("\n\n", "max_dup_para_char_frac", "dup_para_char_frac"),
                                            ("\n", "max_dup_line_char_frac", "dup_line_char_frac")])
def test_gopher_duplicate_char_fraction(sep, field, rule):
    st = gr_only(**{field: 0.2})
    a = "a" * 100

    def doc(b_len):  # A, B, A: 100 repeated characters out of 200 + len(B) + 2 separators
        return sep.join([a, "b" * b_len, a])

    at = 500 - 200 - 2 * len(sep)             # exactly 0.2
    assert verdicts(st, [doc(at + 1), doc(at), doc(at - 1)]) == [None, None, rule]
    assert len(doc(at)) == 500


def test_gopher_blank_lines_are_not_duplicates():
    st = gr_only(max_dup_line_frac=0.3, max_dup_para_frac=0.3)
    doc = "\n \n\n".join(f"line {w}" for w in words(50))
    assert verdicts(st, [doc]) == [None]


@pytest.mark.parametrize("n,limit,count", [(2, 0.20, 10), (3, 0.18, 9), (4, 0.16, 16)])
def test_gopher_top_ngram_char_fraction(n, limit, count):
    st = gr_only(top_ngram_char_frac={n: limit})
    gram = " ".join(words(n, 2))              # n words of 2 letters: 3n - 1 characters
    value = count * len(gram)
    total = round(value / limit)
    assert value / total == limit

    def doc(length):
        units = [f"{gram} u{i:03d}" for i in range(count)]
        body = " ".join(units)
        return body + " " + filler(length - len(body) - 1, prefix="q")

    assert verdicts(st, [doc(total + 1), doc(total), doc(total - 1)]) == [None, None, f"top_{n}gram_char_frac"]


@pytest.mark.parametrize("n,limit,wlen", [(5, 0.15, 3), (6, 0.14, 7), (7, 0.13, 13), (8, 0.12, 3),
                                          (9, 0.11, 11), (10, 0.10, 1)])
def test_gopher_duplicate_ngram_char_fraction(n, limit, wlen):
    st = gr_only(dup_ngram_char_frac={n: limit})
    gram = " ".join(w.upper() for w in words(n, wlen)) if wlen > 1 else " ".join("ABCDEFGHIJ"[:n])
    repeated = n * wlen                       # characters of the second occurrence's words
    total = round(repeated / limit)
    assert repeated / total == limit

    def doc(length):
        fill = length - 2 * len(gram) - 2
        return f"{gram} {filler(fill)} {gram}"

    assert verdicts(st, [doc(total + 1), doc(total), doc(total - 1)]) == [None, None, f"dup_{n}gram_char_frac"]


def test_gopher_overlapping_repeats_count_once():
    # "a b c d e f" twice: the repeated 5-grams at the second copy overlap; its 6 words
    # count once (6 characters), not 2 x 5
    text = "a b c d e f " + filler(25) + " a b c d e f"
    got = ngram_char_stats(tokenize([text], CharTable()), top_ns=[], dup_ns=[5])[("dup", 5)][0]
    assert got == 6
    assert R.gopher_repetition(text, GopherRepetitionConfig(**{**GR_OFF, "dup_ngram_char_frac": {5: 6 / len(text) - 1e-9}}))


# -- C4 ------------------------------------------------------------------------------

GOOD = "This line has enough words to stay."


def c4(**overrides) -> C4:
    return C4(C4Config(**overrides))


def test_c4_defaults_are_the_papers():
    c = C4Config()
    assert (c.min_words_per_line, c.min_sentences, c.max_word_length) == (5, 3, 1000)
    assert c.terminal_punctuation == (".", "?", "!", '"')
    assert c.bad_words_path is None and c.bad_words_dir is None       # no list ships: rule off


def test_c4_terminal_punctuation_lines():
    lines = ["Ends with a period here.", "Ends with a question here?", "Ends with a bang here!",
             'Ends with a closing quote "here"', "No terminal punctuation at all", "Trails off into an ellipsis..."]
    reasons, texts, stats = run(c4(min_sentences=None), ["\n".join(lines)])
    assert reasons == [None]
    assert texts[0].split("\n") == lines[:4]
    assert stats.changes["lines_no_terminal_punct"] == 2
    assert stats.changes["lines_removed"] == 2


def test_c4_words_per_line_threshold():
    four, five, six = "One two three four.", "One two three four five.", "One two three four five six."
    reasons, texts, stats = run(c4(min_sentences=None), ["\n".join([four, five, six])])
    assert texts[0].split("\n") == [five, six]
    assert stats.changes["lines_too_few_words"] == 1


def test_c4_max_word_length():
    ok = "word " * 4 + "x" * 999 + "."       # a 1000-character word
    long_ = "word " * 4 + "x" * 1000 + "."
    reasons, texts, stats = run(c4(min_sentences=None), ["\n".join([ok, long_, GOOD])])
    assert texts[0].split("\n") == [ok, GOOD]
    assert stats.changes["lines_too_long_word"] == 1


def test_c4_javascript_and_policy_lines():
    js = "Please enable JavaScript to view this page."
    pol = [f"By using this site you accept our {p} today." for p in ("Terms of Use", "privacy policy",
                                                                       "cookie policy", "site uses cookies")]
    reasons, texts, stats = run(c4(min_sentences=None), ["\n".join([GOOD, js] + pol)])
    assert texts[0] == GOOD
    assert stats.changes["lines_javascript"] == 1
    assert stats.changes["lines_policy"] == 4


def test_c4_citations_removed_and_counted():
    line = "The river floods every spring[1] and autumn[citation needed] too[edit]."
    reasons, texts, stats = run(c4(min_sentences=None), [line])
    assert texts[0] == "The river floods every spring and autumn too."
    assert stats.changes["citations_removed"] == 3


def test_c4_lorem_ipsum_and_curly_bracket_drop_the_document():
    body = [GOOD] * 3
    docs = ["\n".join(body + ["Lorem ipsum dolor sit amet, consectetur."]),
            "\n".join(body + ["The function body is { return x; } here."]),
            # reference order: a lorem ipsum line removed for its missing end mark does not count
            "\n".join(body + ["Lorem ipsum dolor sit amet consectetur"]),
            # and a curly line removed for mentioning javascript does not count either
            "\n".join(body + ["In javascript you write { and } a lot."])]
    assert verdicts(c4(), docs) == ["lorem_ipsum", "curly_bracket", None, None]


def test_c4_min_sentences_threshold():
    two = "First sentence is here. Second one follows it."
    reasons, _, _ = run(c4(), [two, two + "\n" + GOOD, "Dr. Who went home. " + two])
    assert reasons == ["too_few_sentences", None, None]


def test_c4_bad_words(shared_dir):
    st = c4(min_sentences=None, bad_words_path=str(shared_dir / "lists" / "ldnoobw.txt"))
    docs = ["We had a warm Nudelsuppe for lunch today.", "The painting shows a nude figure in oil.",
            "The painting shows a NUDE figure in oil."]
    batch = make_batch(source="t", ids=["a", "b", "c"], texts=docs)
    out, _ = st.process(batch)
    assert out.column("_reject_reason").to_pylist() == [None, "c4:bad_words", "c4:bad_words"]
    assert out.column("_reject_detail").to_pylist() == [None, "nude", "nude"]


def test_c4_empty_result_is_a_drop():
    assert verdicts(c4(min_sentences=None), ["no punctuation anywhere\nnor here"]) == ["empty"]


# -- FineWeb ---------------------------------------------------------------------------

def test_fineweb_defaults():
    c = FineWebConfig()
    assert (c.min_line_punct_ratio, c.max_short_line_ratio, c.short_line_length) == (0.12, 0.67, 30)
    assert (c.max_char_dup_ratio, c.max_list_ratio) == (0.10, 0.30)


def test_fineweb_line_punct_ratio():
    st = fw_only(min_line_punct_ratio=0.12)

    def doc(k):  # k of 100 lines end in terminal punctuation (trailing spaces ignored)
        return "\n".join((f"line {w}. " if i < k else f"line {w}") for i, w in enumerate(words(100)))

    assert verdicts(st, [doc(11), doc(12), doc(13)]) == ["line_punct_ratio", "line_punct_ratio", None]


def test_fineweb_short_line_ratio():
    st = fw_only(max_short_line_ratio=0.67)
    short = "s" * 30                           # 30 characters is still short
    long_ = "l" * 31

    def doc(k):
        return "\n".join([short] * k + [long_] * (100 - k))

    assert verdicts(st, [doc(66), doc(67), doc(68)]) == [None, "short_line_ratio", "short_line_ratio"]


def test_fineweb_char_dup_ratio():
    st = fw_only(max_char_dup_ratio=0.1)
    a = "a" * 10

    def doc(b_len):  # 10 repeated characters out of 20 + b_len (newlines not counted)
        return "\n".join([a, "b" * b_len, a])

    assert verdicts(st, [doc(81), doc(80), doc(79)]) == [None, "char_dup_ratio", "char_dup_ratio"]


def test_fineweb_list_ratio():
    st = fw_only(max_list_ratio=0.3)
    w = words(100)

    def doc(k):  # k newlines over 100 words
        return "\n".join([" ".join(w[: 100 - k])] + w[100 - k:])

    assert verdicts(st, [doc(29), doc(30), doc(31)]) == [None, None, "list_ratio"]


def test_fineweb_blank_document():
    assert verdicts(FineWeb(), ["\n \n\t\n"]) == ["empty"]


# -- config validation -----------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: GopherQualityConfig(min_words=100, max_words=10),
    lambda: GopherQualityConfig(max_bullet_lines=1.5),
    lambda: GopherRepetitionConfig(top_ngram_char_frac={2: 2.0}),
    lambda: FineWebConfig(terminal_punctuation=("..",)),
    lambda: C4Config(bad_words_path="/nonexistent/list.txt"),
    lambda: C4Config(bad_words_dir="/nonexistent/ldnoobw"),
    lambda: C4Config(min_words_per_line=-1),
])
def test_bad_configs_name_the_field(make):
    with pytest.raises(SpecError) as e:
        make()
    assert re.search(r"(min_words|max_words|max_bullet_lines|top_ngram_char_frac|terminal_punctuation|"
                     r"bad_words_path|bad_words_dir|min_words_per_line)", str(e.value))


# -- vectorised stages == per-document reference on real text --------------------------

def _real_texts(shared_dir) -> list[str]:
    c = shared_dir / "corpora"
    docs = []
    for p in sorted((c / "ccnet").glob("*.jsonl")) + sorted((c / "redpajama").glob("*.jsonl")):
        docs += [json.loads(line)["text"] for line in p.open(encoding="utf-8")]
    with gzip.open(c / "ccnet" / "000.json.gz", "rt", encoding="utf-8") as f:
        docs += [json.loads(line)["text"] for line in f]
    wiki = (c / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    docs += [a for a in re.split(r"\n(?= = [^=].* = \s*\n)", wiki) if a.strip()][:10]
    with zipfile.ZipFile(c / "nltk" / "udhr2.zip") as z:
        names = [n for n in z.namelist() if n.endswith(".txt")][:20]
        docs += [z.read(n).decode("utf-8", "replace") for n in names]
    return docs


def test_stages_agree_with_reference_on_real_text(shared_dir):
    docs = _real_texts(shared_dir)
    assert len(docs) > 100
    bad_words = str(shared_dir / "lists" / "ldnoobw.txt")
    bw_re = R.c4_bad_words_regex(load_bad_words(bad_words))
    cases = [
        (GopherQuality(), lambda d, c: R.gopher_quality(d, c)),
        (GopherRepetition(), lambda d, c: R.gopher_repetition(d, c)),
        (FineWeb(), lambda d, c: R.fineweb(d, c)),
        (C4(C4Config(bad_words_path=bad_words)), lambda d, c: R.c4(d, c, bw_re)[0]),
    ]
    for stage, ref in cases:
        reasons, texts, _ = run(stage, docs)
        expected = [None if (v := ref(d, stage.config)) is None else v[0] for d in docs]
        assert reasons == expected, stage.name
        assert 0 < sum(r is not None for r in reasons) < len(docs), stage.name  # the rules act
    # C4's rewritten text equals the reference's cleaned text
    st = C4(C4Config(bad_words_path=bad_words))
    reasons, texts, _ = run(st, docs)
    for d, r, t in zip(docs, reasons, texts):
        if r is None:
            assert t == R.c4(d, st.config, bw_re)[1]
