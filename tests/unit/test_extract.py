"""``extract`` on real pages and on the pages that break extractors: non-HTML payloads,
undeclared legacy encodings, invalid bytes, giant and pathological pages, and the
per-document time limit (main thread and worker thread)."""

from __future__ import annotations

import gzip
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import trafilatura

from datapipe.errors import SpecError
from datapipe.schema import make_batch
from stages.extract import html as _html
from datapipe.deadline import DocumentTimeout, deadline
from stages.extract import Extract, ExtractConfig


def pages(shared_dir, n: int | None = None) -> list[tuple[str, bytes]]:
    files = sorted((shared_dir / "corpora" / "web" / "html").glob("*.html.gz"))
    assert files, f"no HTML pages under {shared_dir}/corpora/web/html"
    return [(p.name, gzip.decompress(p.read_bytes())) for p in files[:n]]


def run(stage: Extract, raws, *, urls=None, texts=None):
    n = len(raws)
    batch = make_batch(source="web", ids=[f"p{i}" for i in range(n)], raws=list(raws),
                       urls=urls, texts=texts)
    out, stats = stage.process(batch)
    return out, stats.get("web")


def reasons(out):
    return out.column("_reject_reason").to_pylist()


def big_page(shared_dir, n_pages: int = 40) -> bytes:
    """A real-content page of a few MB: the bodies of many real pages, scripts removed.
    Extraction spends about a second on 120 pages' bodies with ``cascade`` (4x that with
    ``trafilatura``; pure Python, so the time limit can stop it), unless
    an earlier test in this process extracted the same pages: its caches (the paragraph
    de-duplication LRU) then make it fast, so they are emptied here first."""
    from trafilatura.meta import reset_caches

    reset_caches()
    bodies = []
    for _, raw in pages(shared_dir, n_pages):
        s = raw.decode("utf-8", "replace")
        m = re.search(r"<body[^>]*>(.*)</body>", s, re.S | re.I)
        if m:
            bodies.append(re.sub(r"<script.*?</script>", "", m.group(1), flags=re.S | re.I))
    return ("<html><head><title>big</title></head><body>" + "".join(bodies) + "</body></html>").encode()


# -- real pages ------------------------------------------------------------------------

def test_real_pages_extract_like_trafilatura(shared_dir):
    """With trafilatura's default settings the stage gives trafilatura's own output on
    UTF-8 pages; titles come from <title>."""
    sample = [(n, r) for n, r in pages(shared_dir, 20) if _is_utf8(r)][:12]
    stage = Extract(ExtractConfig(extractor="trafilatura", favor_precision=False, include_comments=True))
    out, stats = run(stage, [r for _, r in sample], urls=[f"https://example.org/{n}" for n, _ in sample])
    texts = out.column("text").to_pylist()
    kept = [i for i, r in enumerate(reasons(out)) if r is None]
    assert len(kept) >= 10
    for i in kept:
        direct = trafilatura.extract(sample[i][1], url=f"https://example.org/{sample[i][0]}")
        assert texts[i] == direct, sample[i][0]
    titles = out.column("title").to_pylist()
    assert sum(bool(t) for t in titles) >= 10
    assert stats.docs_in == len(sample) and stats.docs_out == len(kept)
    assert stats.changes["pages_extracted"] == len(sample)


def test_precision_default_extracts_less_or_equal(shared_dir):
    sample = pages(shared_dir, 8)
    raws = [r for _, r in sample]
    prec, _ = run(Extract(), raws)
    default, _ = run(Extract(ExtractConfig(favor_precision=False, include_comments=True)), raws)
    lp = sum(len(t or "") for t in prec.column("text").to_pylist())
    ld = sum(len(t or "") for t in default.column("text").to_pylist())
    assert 0 < lp <= ld


def token_f1(a: str | None, b: str | None) -> float:
    """F1 over the multisets of whitespace tokens (bench/extract_eval.py's agreement metric)."""
    from collections import Counter

    ta, tb = (a or "").split(), (b or "").split()
    if not ta and not tb:
        return 1.0
    return 2 * sum((Counter(ta) & Counter(tb)).values()) / (len(ta) + len(tb))


def test_cascade_agrees_with_trafilatura_on_real_pages(shared_dir):
    """``extractor: cascade`` keeps the pages the reference keeps and gives text close to
    it (token F1, bench/extract_eval.py's metric); pages whose fast pass is short are
    extracted again in full, and the report counts them."""
    raws = [r for _, r in pages(shared_dir, 16)]
    ref, _ = run(Extract(), raws)
    cas, stats = run(Extract(ExtractConfig(extractor="cascade")), raws)
    ref_t, cas_t = ref.column("text").to_pylist(), cas.column("text").to_pylist()
    assert reasons(cas) == reasons(ref)
    f1 = [token_f1(a, b) for a, b in zip(cas_t, ref_t)]
    assert min(f1) >= 0.8 and sum(f1) / len(f1) >= 0.95, f1
    assert 1 <= stats.changes["cascade_fallbacks"] <= len(raws) // 2, stats.changes   # short pages only
    # every page through the full second pass: the counter says so
    _, all_fb = run(Extract(ExtractConfig(extractor="cascade", cascade_min_chars=10**9)), raws)
    assert all_fb.changes["cascade_fallbacks"] == len(raws)


def _cascade_kwargs(**over):
    from stages.extract.extractors import trafilatura_kwargs

    return trafilatura_kwargs(ExtractConfig(extractor="cascade", **over))


def test_cascade_selectors_select_what_trafilaturas_xpath_selects(shared_dir):
    """The Python stand-ins for trafilatura's slow XPath selectors pick the same elements
    in the same order, on the raw trees and on the cleaned, converted trees they run on
    (the content selectors: the first element, all ``_extract`` uses)."""
    from copy import copy

    from trafilatura import xpaths
    from trafilatura.htmlprocessing import convert_tags, tree_cleaning

    from stages.extract import cascade

    ours = cascade._matchers()
    opts = cascade.options(_cascade_kwargs(), None)
    hits = {name: 0 for name in ours}
    for _, raw in pages(shared_dir, 60):
        tree = cascade._load(cascade.prestrip(_html.decode_html(raw)[0])[0])
        for t in (tree, convert_tags(tree_cleaning(copy(tree), opts), opts)):
            for name, matchers in ours.items():
                for theirs, mine in zip(getattr(xpaths, name), matchers):
                    if mine is theirs:   # an XPath kept as it is
                        continue
                    want = theirs(t)
                    if name == "BODY_XPATH":
                        want = [e for e in want if e is not None][:1]
                    assert mine(t) == want, (name, theirs.path if hasattr(theirs, "path") else theirs)
                    hits[name] += bool(want)
    assert all(n >= 20 for n in hits.values()), hits   # the selectors did select, on many trees


def test_cascade_one_pass_is_trafilatura_on_the_stripped_page(shared_dir):
    """With the comparison on, cascade's single pass (trafilatura's steps, its selectors in
    Python) gives exactly ``trafilatura.extract`` on the pre-stripped page, in text and in
    Markdown; with it off, the text of pages whose main text is long stays the same."""
    import trafilatura

    from stages.extract import cascade

    kept = 0
    for fmt, n in (("txt", 24), ("markdown", 6)):
        kwargs = _cascade_kwargs(output_format=fmt)
        opts = cascade.options(kwargs, None)
        for name, raw in pages(shared_dir, n):
            small, forum = cascade.prestrip(_html.decode_html(raw)[0])
            text, main_len = cascade.one_pass(small, opts, is_forum=forum, compare=lambda n: True)
            assert text == trafilatura.extract(small, **kwargs), (fmt, name)
            kept += bool(text)
            alone, _ = cascade.one_pass(small, opts, is_forum=forum, compare=lambda n: False)
            if main_len > 3000:
                assert alone == text, name
    assert kept >= 26


def test_cascade_keeps_form_wrapped_pages_and_falls_back_on_empty_main_text(shared_dir):
    """Real pages that a cruder prestrip loses: one with all its content inside an
    ASP.NET <form> (trafilatura keeps a form holding most of the text), and two whose
    text only readability finds, in <noscript> and in <aside> (which the prestrip
    removes): their main text is empty, so the full reference runs on the original page,
    and the report counts those two. All three give the reference's text."""
    folder = shared_dir / "corpora" / "web" / "html"
    names = ["d43f330cbaf74e92b9aec85e937cb904.html.gz", "parcoabruzzo.it.58354.html.gz", "rnz.de.witzel.html.gz"]
    raws = [gzip.decompress((folder / n).read_bytes()) for n in names]
    ref, _ = run(Extract(), raws)
    cas, stats = run(Extract(ExtractConfig(extractor="cascade")), raws)
    ref_t = ref.column("text").to_pylist()
    assert all(t and len(t) > 500 for t in ref_t), [len(t or "") for t in ref_t]
    assert cas.column("text").to_pylist() == ref_t
    assert stats.changes["cascade_fallbacks"] == 2


def test_cascade_with_trafilaturas_own_defaults_takes_the_public_path(shared_dir):
    """Settings outside the single pass (no precision, comments on) still extract: fast
    mode on the stripped page, the full reference for short texts; the same pages kept
    as the reference with those settings, and close text."""
    raws = [r for _, r in pages(shared_dir, 10)]
    cfg = dict(favor_precision=False, include_comments=True)
    ref, _ = run(Extract(ExtractConfig(**cfg)), raws)
    cas, stats = run(Extract(ExtractConfig(extractor="cascade", **cfg)), raws)
    assert reasons(cas) == reasons(ref) and sum(r is None for r in reasons(ref)) >= 9
    f1 = [token_f1(a, b) for a, b in zip(cas.column("text").to_pylist(), ref.column("text").to_pylist())]
    assert sum(f1) / len(f1) >= 0.9, f1
    assert stats.changes["pages_extracted"] == len(raws)


def test_cascade_needs_the_pinned_trafilatura(monkeypatch):
    from stages.extract import cascade

    monkeypatch.setattr(cascade, "TRAFILATURA_VERSION", "0.0.1")
    with pytest.raises(SpecError, match=r"runs trafilatura 0.0.1's own steps, but trafilatura .* is installed: "
                                        r"pip install trafilatura==0.0.1"):
        ExtractConfig(extractor="cascade")
    assert ExtractConfig(extractor="trafilatura").extractor == "trafilatura"


def test_resiliparse_extractor_finds_the_main_text(shared_dir):
    raws = [r for _, r in pages(shared_dir, 8)]
    ref, _ = run(Extract(), raws)
    res, stats = run(Extract(ExtractConfig(extractor="resiliparse")), raws)
    kept = [i for i, r in enumerate(reasons(res)) if r is None]
    assert len(kept) >= 7 and stats.changes["pages_extracted"] == len(raws)
    f1 = [token_f1(a, b) for a, b in zip(res.column("text").to_pylist(), ref.column("text").to_pylist())]
    assert sum(f1) / len(f1) >= 0.5, f1   # another algorithm: same content, different borders


def test_extractor_config_errors():
    with pytest.raises(SpecError, match=r"unknown extractor 'trafiltura'; use one of cascade, resiliparse, trafilatura"):
        ExtractConfig(extractor="trafiltura")
    with pytest.raises(SpecError, match="does not apply to extractor: cascade"):
        ExtractConfig(extractor="cascade", fast=True)
    with pytest.raises(SpecError, match="cascade_min_chars must be >= 0, got -1"):
        ExtractConfig(extractor="cascade", cascade_min_chars=-1)
    assert ExtractConfig(extractor="trafilatura_fast").extractor == "trafilatura_fast"


def test_text_rows_pass_through_untouched():
    stage = Extract()
    out, stats = run(stage, [None, None, b"<html><body><article><p>" + b"Some real words here. " * 20
                             + b"</p></article></body></html>"],
                     texts=["already text", None, None])
    assert out.column("text").to_pylist()[0] == "already text"
    assert reasons(out) == [None, "extract:empty", None]
    assert "Some real words here." in out.column("text").to_pylist()[2]


# -- encodings and bad bytes -----------------------------------------------------------

def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _latin1_page(shared_dir) -> tuple[str, bytes, bytes]:
    """A real German UTF-8 page and the same page in windows-1252 without any charset."""
    for name, raw in pages(shared_dir, 200):
        if not _is_utf8(raw):
            continue
        s = raw.decode("utf-8")
        if s.count("ä") < 5 or "charset" not in s[:4096].lower():
            continue
        stripped = re.sub(r"<meta[^>]*charset[^>]*>", "", s, flags=re.I)
        try:
            legacy = stripped.encode("cp1252")
        except UnicodeEncodeError:
            continue
        return name, stripped.encode("utf-8"), legacy
    pytest.fail("no German page encodable as windows-1252 in the shared HTML pages")


def test_latin1_page_without_charset_decodes_right(shared_dir):
    name, utf8, legacy = _latin1_page(shared_dir)
    assert _html.declared_encoding(legacy) is None and not _is_utf8(legacy)
    stage = Extract()
    out, _ = run(stage, [utf8, legacy])
    a, b = out.column("text").to_pylist()
    assert a and a == b, name
    assert "ä" in b and "\ufffd" not in b
    # without <html lang> the statistical guess has to do it; umlauts still come out right
    no_lang = re.sub(rb"<html[^>]*>", b"<html>", legacy, count=1)
    text, how = _html.decode_html(no_lang)
    assert how.split(":")[0] in ("guess", "fallback", "lang")
    assert "ä" in text and "\ufffd" not in text


def test_declared_legacy_encodings(shared_dir):
    for name, raw in pages(shared_dir):
        declared = _html.declared_encoding(raw)
        if declared in ("cp1250", "iso8859-2", "cp1252", "gb18030"):
            text, how = _html.decode_html(raw)
            assert how.startswith("declared:") or how == "utf-8", (name, how)
            assert text.count("\ufffd") < 5, name


def test_invalid_bytes_never_crash(shared_dir):
    name, raw = next((n, r) for n, r in pages(shared_dir, 50) if _is_utf8(r) and len(r) > 20000)
    mid = len(raw) // 2
    broken = raw[:mid] + b"\xff\xfe\xc3\x28\xa0\xe2\x82" + raw[mid:]
    broken_nometa = re.sub(rb"<meta[^>]*charset[^>]*>", b"", broken, flags=re.I)
    out, stats = run(Extract(ExtractConfig(favor_precision=False, include_comments=True)),
                     [raw, broken, broken_nometa, b"<html>\x80\x81\xfe\xff<body><p>x</p></html>"])
    r = reasons(out)
    assert r[0] is None and r[1] is None and r[2] is None, name
    texts = out.column("text").to_pylist()
    assert len(texts[1]) > 0.8 * len(texts[0])
    assert r[3] in (None, "extract:empty")


def test_utf16_with_bom():
    html = "<html><head><title>Grüße</title></head><body><article><p>" + "Ein Satz über Grüße und Wörter. " * 30 + "</p></article></body></html>"
    out, _ = run(Extract(), [("\ufeff" + html).encode("utf-16-le")])
    assert reasons(out) == [None]
    assert "Grüße" in out.column("text").to_pylist()[0]
    assert out.column("title").to_pylist() == ["Grüße"]


# -- not HTML --------------------------------------------------------------------------

def test_non_html_payloads(shared_dir):
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 20
    pdf = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n" + bytes(range(256)) * 10
    gz = gzip.compress(pages(shared_dir, 1)[0][1])      # a compressed page served as .html
    random_bytes = bytes((i * 7919) % 256 for i in range(20000))
    plain = ("Just some plain text without any markup at all. " * 40).encode()
    json_doc = b'{"items": [' + b'{"a": 1, "b": "text"},' * 200 + b'{}]}'
    out, stats = run(Extract(), [png, pdf, gz, random_bytes, plain, json_doc, b"", b"   \n "])
    assert reasons(out) == ["extract:not_html"] * 6 + ["extract:empty"] * 2
    assert out.column("_reject_detail").to_pylist()[:6] == ["png", "pdf", "gzip", "binary", "no markup", "no markup"]
    assert stats.dropped == {"extract:not_html": 6, "extract:empty": 2}


# -- guard rails -----------------------------------------------------------------------

def test_too_large_is_rejected_before_parsing():
    page = b"<html><body>" + b"<p>lots of words here</p>" * 400_000 + b"</body></html>"   # ~10 MB
    t0 = time.perf_counter()
    out, _ = run(Extract(ExtractConfig(max_bytes=1 << 20)), [page])
    assert reasons(out) == ["extract:too_large"]
    assert time.perf_counter() - t0 < 1.0


def test_timeout_in_main_thread_and_the_batch_goes_on(shared_dir):
    assert threading.current_thread() is threading.main_thread()
    big = big_page(shared_dir, 120)
    small = pages(shared_dir, 1)[0][1]
    stage = Extract(ExtractConfig(timeout_s=0.25, max_bytes=16 << 20))
    t0 = time.perf_counter()
    out, stats = run(stage, [big, small])
    elapsed = time.perf_counter() - t0
    assert reasons(out)[0] == "extract:timeout"
    assert reasons(out)[1] is None and out.column("text").to_pylist()[1]
    assert elapsed < 5.0, elapsed          # the big page alone takes 5-15 s unbounded
    assert stats.dropped == {"extract:timeout": 1}


def test_timeout_in_worker_thread(shared_dir):
    """Ray Data runs actor UDFs in a worker thread: the watchdog path must stop it too."""
    big = big_page(shared_dir, 120)
    small = pages(shared_dir, 1)[0][1]
    stage = Extract(ExtractConfig(timeout_s=0.25, max_bytes=16 << 20))
    with ThreadPoolExecutor(1) as pool:
        t0 = time.perf_counter()
        out, _ = pool.submit(run, stage, [big, small]).result()
        elapsed = time.perf_counter() - t0
    assert reasons(out) == ["extract:timeout", None]
    assert elapsed < 5.0, elapsed


def test_pathological_pages_are_rejected_in_time(shared_dir):
    """A 50 MB page, 200k nested tags, a binary file named .html and a page in an
    undeclared legacy encoding, in one batch with a normal page: each gets a verdict
    within the time limit and the normal page still comes out."""
    huge = b"<html><body>" + b"<p>filler words in a paragraph</p>" * 1_500_000 + b"</body></html>"
    assert len(huge) > 50_000_000
    nested = b"<html><body>" + b"<div>" * 200_000 + b"deep text" + b"</div>" * 200_000 + b"</body></html>"
    binary = bytes((i * 2654435761) % 256 for i in range(100_000))
    _, _, legacy = _latin1_page(shared_dir)
    normal = pages(shared_dir, 1)[0][1]
    stage = Extract(ExtractConfig(timeout_s=2.0))
    t0 = time.perf_counter()
    out, _ = run(stage, [huge, nested, binary, legacy, normal])
    elapsed = time.perf_counter() - t0
    r = reasons(out)
    assert r[0] == "extract:too_large"
    assert r[1] in ("extract:empty", "extract:timeout", "extract:failed")
    assert r[2] == "extract:not_html"
    assert r[3] is None and "ä" in out.column("text").to_pylist()[3]
    assert r[4] is None
    assert elapsed < 5 * 2.0, elapsed


@pytest.mark.parametrize("extractor", ["cascade", "trafilatura"])
def test_a_tag_with_tens_of_thousands_of_attributes_is_rejected_before_parsing(extractor, shared_dir):
    """lxml and lexbor check each new attribute against the tag's earlier ones: one tag
    with 80,000 took 76 s in lxml, in one C call the time limit cannot stop. The page is
    rejected as too_many_attributes before any parser sees it, also when the tag hides
    its ">" in quoted values or is a script's own start tag; a script's content (a "<"
    there starts no tag) and real pages are not counted against the bound."""
    from stages.extract import html as _h

    names = [f"a{i}" for i in range(80_000)]
    hostile = [
        ("<html><body><div " + " ".join(f"{n}=1" for n in names) + ">x</div></body></html>").encode(),
        ("<html><body><div " + " ".join(f'{n}=">"' for n in names) + ">x</div></body></html>").encode(),
        ("<html><body><script " + "/".join(names) + "></script><p>x</p></body></html>").encode(),
    ]
    script = "<html><body><script>" + "if(a<b " + " ".join(names) + ")</script><p>" + "A sentence of text. " * 50 + "</p></body></html>"
    normal = pages(shared_dir, 1)[0][1]
    t0 = time.perf_counter()
    out, stats = run(Extract(ExtractConfig(extractor=extractor)), hostile + [script.encode(), normal])
    elapsed = time.perf_counter() - t0
    assert reasons(out)[:3] == ["extract:too_many_attributes"] * 3, reasons(out)
    assert reasons(out)[3:] == [None, None], reasons(out)
    assert stats.dropped == {"extract:too_many_attributes": 3}
    assert elapsed < 10.0, elapsed
    assert max(_h.most_attributes(_h.decode_html(raw)[0]) for _, raw in pages(shared_dir)) <= _h.MAX_ATTRIBUTES


@pytest.mark.parametrize("extractor", ["cascade", "resiliparse"])
def test_pages_that_make_html5_parsing_quadratic_get_a_verdict_in_time(extractor, shared_dir):
    """lexbor (the HTML5 parser of cascade's prestrip and of resiliparse) scans its open
    elements per token, in one C call the time limit cannot stop: 200,000 nested <div>
    took 100 s in it, 100,000 unclosed <option><optgroup> 78 s in resiliparse's. Such a
    page goes to trafilatura under cascade (counted as a fallback) and is rejected as
    too_deep under resiliparse; real pages are far below the bound."""
    from stages.extract import html as _h

    hostile = [
        b"<html><body>" + b"<div>" * 200_000 + b"deep text" + b"</div>" * 200_000 + b"</body></html>",
        b"<html><body><select>" + b"<option>x<optgroup>" * 100_000 + b"</body></html>",
        b"<html><body>" + b"".join(b"<b id=%d>" % i for i in range(50_000)) + b"<p>x</p>" * 50_000 + b"</body></html>",
        b"<html><body>" + b"<div>" * 9_000 + b"</p>" * 1_000_000 + b"</body></html>",
    ]
    normal = pages(shared_dir, 1)[0][1]
    t0 = time.perf_counter()
    out, stats = run(Extract(ExtractConfig(extractor=extractor, timeout_s=2.0)), hostile + [normal])
    elapsed = time.perf_counter() - t0
    r = reasons(out)
    if extractor == "cascade":
        assert r[:4] == ["extract:empty"] * 4 and stats.changes["cascade_fallbacks"] >= 4, (r, stats.changes)
    else:
        assert r[:4] == ["extract:too_deep"] * 4, r
    assert r[4] is None
    assert elapsed < 10.0, elapsed
    real = [_h.decode_html(raw)[0] for _, raw in pages(shared_dir, 10_000)]
    assert max(_h.tree_work(p) for p in real) <= _h.LEXBOR_MAX_WORK


def test_config_validation():
    with pytest.raises(SpecError, match="favor_precision"):
        ExtractConfig(favor_precision=True, favor_recall=True)
    with pytest.raises(SpecError, match="max_bytes"):
        ExtractConfig(max_bytes=0)
    with pytest.raises(SpecError, match="timeout_s"):
        ExtractConfig(timeout_s=-1)


# -- the deadline itself ---------------------------------------------------------------

def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _limited(limit: float, work: float, swallow_once: bool = False) -> tuple[bool, float]:
    t0 = time.monotonic()
    try:
        with deadline(limit):
            if swallow_once:
                try:
                    _spin(work)
                except BaseException:  # noqa: BLE001 - a library that swallows everything
                    pass
            _spin(work)
        return False, time.monotonic() - t0
    except DocumentTimeout:
        return True, time.monotonic() - t0


@pytest.mark.parametrize("in_thread", [False, True])
def test_deadline_fires_and_disarms(in_thread):
    def check():
        fired, took = _limited(0.1, 5.0)
        assert fired and took < 1.0
        fired, took = _limited(0.1, 5.0, swallow_once=True)   # fires again after being swallowed
        assert fired and took < 1.0
        fired, _ = _limited(0.5, 0.05)
        assert not fired
        _spin(0.3)                                              # nothing fires after the block
        return True

    if in_thread:
        with ThreadPoolExecutor(1) as pool:
            assert pool.submit(check).result()
    else:
        assert check()


def test_deadline_restores_an_outer_alarm():
    import signal

    hits = []
    previous = signal.signal(signal.SIGALRM, lambda *a: hits.append(1))
    outer = signal.setitimer(signal.ITIMER_REAL, 0.4)
    try:
        with deadline(1.0):
            pass
        assert signal.getsignal(signal.SIGALRM) is not None
        remaining = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 0 < remaining <= 0.4
        _spin(0.6)
        assert hits == [1]
    finally:
        signal.setitimer(signal.ITIMER_REAL, *outer)
        signal.signal(signal.SIGALRM, previous)
