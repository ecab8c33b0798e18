"""bench/extract_eval.py's articlebench metric: article-extraction-benchmark's shingle
P/R/F1 (their evaluate.py), checked on texts small enough to count by hand."""

from __future__ import annotations

import gzip
import json

import pytest

from bench.extract_eval import articlebench_scores, load_articlebench, shingle_match


def test_shingle_match_counts_four_token_shingles_scaled_to_one():
    # truth: (a b c d), (b c d e); the prediction finds the first only
    assert shingle_match("a b c d e", "a b c d") == (0.5, 0.0, 0.5)
    # punctuation and spacing are not tokens; case is
    assert shingle_match("The cat, sat on the mat.", "The cat sat  on the mat") == (1.0, 0.0, 0.0)
    assert shingle_match("Hello, world!", "hello world") == (0.0, 0.5, 0.5)
    # fewer than four tokens make one shorter shingle; nothing at all makes none
    assert shingle_match("x y", "") == (0.0, 0.0, 1.0)
    assert shingle_match("", "x y") == (0.0, 1.0, 0.0)
    assert shingle_match("", "") == (0.0, 0.0, 0.0)
    # a repeated shingle counts as often as it occurs: (a b c d) twice, (b c d a), (c d a b), (d a b c)
    assert shingle_match("a b c d", "a b c d a b c d") == pytest.approx((0.2, 0.8, 0.0))


def test_scores_average_per_page_and_skip_undefined_pages():
    truth = {"half": "a b c d e", "missed": "x y", "both_empty": "", "exact": "one two three four five",
             "junk": "p q r s"}
    outs = {"half": "a b c d", "missed": None, "both_empty": "", "exact": "one two three four five",
            "junk": "u v w z"}
    names = list(truth)
    p, r, f1, pages = articlebench_scores(names, [outs[k] for k in names], truth)
    # precision over pages with output: half 1.0, exact 1.0, junk 0.0
    assert p == pytest.approx(2 / 3)
    # recall over pages with a truth: half 0.5, missed 0.0, exact 1.0, junk 0.0
    assert r == pytest.approx(1.5 / 4)
    assert f1 == pytest.approx(2 * p * r / (p + r))
    assert pages == 5


def test_load_articlebench_keys_pages_by_ground_truth_key(tmp_path):
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "abc.html.gz").write_bytes(gzip.compress(b"<html><p>hi</p></html>"))
    (tmp_path / "ground-truth.json").write_text(json.dumps({"abc": {"articleBody": "hi", "url": "u"}}))
    pages, truth = load_articlebench(tmp_path, None)
    assert pages == [("abc", b"<html><p>hi</p></html>")]
    assert truth == {"abc": "hi"}
    (tmp_path / "html" / "def.html.gz").write_bytes(gzip.compress(b"<p>x</p>"))
    with pytest.raises(SystemExit, match="no ground-truth.json entry"):
        load_articlebench(tmp_path, None)
