"""The Q&A dump readers (``stackexchange``, ``mediawiki``) against hostile inputs (issue #35):
links out of the inputs, cut files and streams, 100 MB bodies, entity bombs, deep
nesting, bad bytes, odd rows and wikitext that makes the parser go quadratic. Every input
is built here; each case asserts what a user sees: no byte from outside the inputs, the
rows read before the damage kept and identical to a clean read, one reject naming the
damage, and bounded time and memory."""

from __future__ import annotations

import bz2
import gzip
import html
import os
import random
import re
import time
import tracemalloc
import zlib
from pathlib import Path

import pytest

from peak_memory import maxrss_mb, rss_mark
from datapipe.errors import CorruptInputError
from datapipe.readers import READERS, InputFile
from datapipe.readers._wikitext import drop_tags
from datapipe.readers.base import read_split
from datapipe.readers.inputs import InputLimits
from datapipe.readers.stackexchange import code_blocks, is_code_only

SECRET = "SECRET-3f9a-not-an-input"
SE, MW = "stackexchange", "mediawiki"

pytestmark = pytest.mark.timeout(120)


# ------------------------------------------------------------------ helpers

def read(fmt: str, path: Path, root: Path, **kw) -> list[dict]:
    """Every row the reader gives for ``path`` (confined to ``root``), through the reader
    boundary, as a job reads it."""
    reader = READERS[fmt](source="src", **kw)
    files = [InputFile(str(path), os.path.relpath(path, root), os.lstat(path).st_size, roots=(os.path.realpath(root),))]
    return [row for split in reader.plan(files) for t in read_split(reader, split) for row in t.to_pylist()]


def text_of(rows: list[dict]) -> str:
    return "\n".join(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                     for r in rows for v in r.values() if v is not None)


def reasons(rows: list[dict]) -> list[str]:
    return [r["_reject_reason"] for r in rows if r["_reject_reason"]]


def docs(rows: list[dict]) -> dict[str, bytes | str]:
    return {r["source_id"]: r["raw"] or r["text"] for r in rows if r["_reject_reason"] is None}


def esc(s: str) -> str:
    return html.escape(s, quote=True)


def posts_xml(n_questions: int = 260, seed: int = 7, body_words: int = 30) -> bytes:
    """A Posts.xml like a real site's: posts by id, most answers right after their
    question, some long after (late answers near the end), tag wikis between, and
    ``AnswerCount`` on every question."""
    rnd = random.Random(seed)
    rows: list[str] = []
    next_id = 1
    late: list[int] = []
    questions = []
    for q in range(n_questions):
        qid = next_id
        next_id += 1
        questions.append(qid)
        rows.append(("Q", qid))
        for _ in range(rnd.choice((0, 1, 1, 2, 3))):
            rows.append(("A", qid, next_id))
            next_id += 1
        if rnd.random() < 0.25:
            late.append(qid)
        if q % 40 == 7:
            rows.append(("W", next_id))
            next_id += 1
    for qid in late:
        rows.append(("A", qid, next_id))
        next_id += 1
    count = {}
    for r in rows:
        if r[0] == "A":
            count[r[1]] = count.get(r[1], 0) + 1
    words = "alpha beta gamma delta coffee grind roast brew water bean".split()
    out = ['<?xml version="1.0" encoding="utf-8"?>', "<posts>"]
    for r in rows:
        body = esc("<p>" + " ".join(rnd.choice(words) for _ in range(body_words)) + "</p>")
        if r[0] == "Q":
            out.append(f'  <row Id="{r[1]}" PostTypeId="1" AnswerCount="{count.get(r[1], 0)}" Score="{rnd.randint(-2, 9)}" '
                       f'Title="Question {r[1]} about {rnd.choice(words)}" Body="{body}" Tags="&lt;coffee&gt;" />')
        elif r[0] == "A":
            out.append(f'  <row Id="{r[2]}" PostTypeId="2" ParentId="{r[1]}" Score="{rnd.randint(-2, 9)}" Body="{body}" />')
        else:
            out.append(f'  <row Id="{r[1]}" PostTypeId="4" Body="{body}" />')
    out.append("</posts>")
    return ("\n".join(out) + "\n").encode()


def complete_threads(prefix: bytes) -> tuple[set[str], set[str]]:
    """Of the questions whose row is whole in ``prefix``: those with every answer
    (``AnswerCount``) whole in it too, and the others. An independent parse (regex)."""
    rows = [dict(re.findall(r'(\w+)="([^"]*)"', m.decode())) for m in re.findall(rb"<row [^>]*/>", prefix)]
    n = {}
    for r in rows:
        if r["PostTypeId"] == "2":
            n[r["ParentId"]] = n.get(r["ParentId"], 0) + 1
    qs = [r for r in rows if r["PostTypeId"] == "1"]
    done = {r["Id"] for r in qs if n.get(r["Id"], 0) >= int(r["AnswerCount"])}
    return done, {r["Id"] for r in qs} - done


def wiki_xml(pages: list[tuple[str, str]], *, ns: str = "0") -> bytes:
    body = "".join(f"<page><title>{esc(t)}</title><ns>{ns}</ns><id>{i + 1}</id><revision><id>{i + 100}</id>"
                   f'<text xml:space="preserve">{esc(w)}</text></revision></page>\n' for i, (t, w) in enumerate(pages))
    return ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" xml:lang="en"><siteinfo>'
            "<sitename>W</sitename><base>https://w.example/wiki/Main_Page</base></siteinfo>\n"
            f"{body}</mediawiki>\n").encode()


def wiki_pages(n: int = 120, seed: int = 3) -> list[tuple[str, str]]:
    rnd = random.Random(seed)
    words = "river town mountain castle bridge valley museum forest".split()
    return [(f"Page {i}", f"'''Page {i}''' is a [[{rnd.choice(words)}]] near the {rnd.choice(words)}.{{{{cite|x}}}}\n\n"
             + " ".join(rnd.choice(words) for _ in range(80)) + "<ref>a source</ref>\n")
            for i in range(n)]


def children() -> list[int]:
    """Live processes whose parent is this one (a reader must leave none behind)."""
    me, out = str(os.getpid()), []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            if re.search(rf"^PPid:\s*{me}$", status, re.M) and not re.search(r"^State:\s*Z", status, re.M):
                out.append(int(pid))
    return out


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    return out


# ------------------------------------------------------------------ side doors

@pytest.mark.parametrize("fmt", [SE, MW])
def test_links_out_of_the_inputs_are_refused_and_bz2_goes_through_the_input_layer(fmt, tmp_path, outside):
    secret = (posts_xml(3).replace(b"Question", SECRET.encode()) if fmt == SE
              else wiki_xml([(SECRET, f"{SECRET} text")]))
    (outside / "dump.xml").write_bytes(secret)
    (outside / "dump.xml.bz2").write_bytes(bz2.compress(secret))
    root = tmp_path / "in"
    root.mkdir()
    for name in ("dump.xml", "dump.xml.bz2"):
        (root / name).symlink_to(outside / name)
        rows = read(fmt, root / name, root)
        assert reasons(rows) == ["read:outside_inputs"] and SECRET not in text_of(rows)
    # inside the roots, a .bz2 (by name or by its magic bytes alone) reads like the plain file
    clean = posts_xml(20) if fmt == SE else wiki_xml(wiki_pages(5))
    (root / "plain.xml").write_bytes(clean)
    (root / "packed.xml.bz2").write_bytes(bz2.compress(clean))
    (root / "packed-no-suffix.xml").write_bytes(bz2.compress(clean))
    want = docs(read(fmt, root / "plain.xml", root))
    assert len(want) >= 5
    assert docs(read(fmt, root / "packed.xml.bz2", root)) == want
    assert docs(read(fmt, root / "packed-no-suffix.xml", root)) == want


# ------------------------------------------------------------------ cuts: the rule

def test_posts_cut_at_92_percent_keeps_the_threads_read_before_the_cut(tmp_path):
    data = posts_xml(260)
    (tmp_path / "Posts.xml").write_bytes(data)
    full = read(SE, tmp_path / "Posts.xml", tmp_path)
    full_docs = docs(full)
    assert len(full_docs) == 260 and reasons(full).count("read:not_a_post") == 7
    cut = data[: int(len(data) * 0.92)]
    (tmp_path / "cut" / "Posts.xml").parent.mkdir()
    (tmp_path / "cut" / "Posts.xml").write_bytes(cut)
    rows = read(SE, tmp_path / "cut" / "Posts.xml", tmp_path / "cut")
    done, partial = complete_threads(cut)
    assert len(done) > 200 and partial   # the late answers beyond the cut leave some threads open
    kept = docs(rows)
    assert set(kept) == done
    assert all(kept[q] == full_docs[q] for q in kept)   # a kept thread is the document a clean read gives
    incomplete = [r for r in rows if r["_reject_reason"] == "read:incomplete_thread"]
    assert {r["source_id"] for r in incomplete} == partial
    assert all(re.match(r"\d+ of the question's \d+ answers", r["_reject_detail"]) for r in incomplete)
    file_rejects = [r for r in rows if r["origin"] == "Posts.xml"]
    assert [r["_reject_reason"] for r in file_rejects] == ["read:truncated"]
    assert reasons(rows).count("read:not_a_post") == cut.count(b'PostTypeId="4"')
    # under on_error: fail, one error naming the file
    reader = READERS[SE](source="src", on_error="fail")
    f = InputFile(str(tmp_path / "cut" / "Posts.xml"), "Posts.xml", len(cut), roots=(str(tmp_path / "cut"),))
    with pytest.raises(CorruptInputError, match="Posts.xml.*read:truncated"):
        for split in reader.plan([f]):
            list(read_split(reader, split))


@pytest.mark.parametrize("ext", ["bz2", "gz"])
def test_posts_in_a_cut_compressed_stream_keep_the_threads_before_the_cut(ext, tmp_path):
    data = posts_xml(2000, body_words=60)
    packed = bz2.compress(data, compresslevel=1) if ext == "bz2" else gzip.compress(data)
    cut = packed[: int(len(packed) * 0.77)]
    (tmp_path / f"Posts.xml.{ext}").write_bytes(cut)
    (tmp_path / "Posts.xml").write_bytes(data)
    rows = read(SE, tmp_path / f"Posts.xml.{ext}", tmp_path)
    readable = (bz2.BZ2Decompressor() if ext == "bz2" else zlib.decompressobj(31)).decompress(cut)
    done, partial = complete_threads(readable)
    kept = docs(rows)
    assert len(kept) > 1000 and set(kept) == done
    full_docs = docs(read(SE, tmp_path / "Posts.xml", tmp_path))
    assert all(kept[q] == full_docs[q] for q in kept)
    assert {r["source_id"] for r in rows if r["_reject_reason"] == "read:incomplete_thread"} == partial
    name = "bz2" if ext == "bz2" else "gzip"
    assert [r["_reject_reason"] for r in rows if r["origin"] == f"Posts.xml.{ext}"] == [f"read:truncated_{name}"]


@pytest.mark.parametrize("ext", ["", "gz", "bz2"])
def test_cut_wiki_dump_keeps_the_pages_read_before_the_cut(ext, tmp_path):
    data = wiki_xml(wiki_pages(400))
    packed = {"": data, "gz": gzip.compress(data), "bz2": bz2.compress(data, compresslevel=1)}[ext]
    cut = packed[: int(len(packed) * 0.6)]
    name = "wiki.xml" + (f".{ext}" if ext else "")
    (tmp_path / name).write_bytes(cut)
    (tmp_path / "full.xml").write_bytes(data)
    rows = read(MW, tmp_path / name, tmp_path)
    readable = {"": lambda b: b, "gz": zlib.decompressobj(31).decompress,
                "bz2": bz2.BZ2Decompressor().decompress}[ext](cut)
    kept = docs(rows)
    assert len(kept) == readable.count(b"</page>") > 100
    full = docs(read(MW, tmp_path / "full.xml", tmp_path))
    assert all(kept[p] == full[p] for p in kept)
    want = {"": "read:truncated", "gz": "read:truncated_gzip", "bz2": "read:truncated_bz2"}[ext]
    assert reasons(rows) == [want] and rows[-1]["origin"] == name


# ------------------------------------------------------------------ size: linear, budgeted

def _timed_read(fmt: str, path: Path, root: Path, **kw) -> tuple[float, list[dict]]:
    best, rows = float("inf"), []
    for _ in range(3):
        t = time.perf_counter()
        rows = read(fmt, path, root, **kw)
        best = min(best, time.perf_counter() - t)
    return best, rows


def _se_with_body(n: int, question: int | None = None) -> bytes:
    """An answer with an ``n``-byte body (escaped HTML), then a question with one of
    ``question`` bytes (default ``n``)."""
    body = lambda k: esc("<p>" + "word " * (k // 5) + "</p>")[:k].encode()
    return (b'<posts>\n  <row Id="1" PostTypeId="1" AnswerCount="1" Title="small" Body="&lt;p&gt;hi&lt;/p&gt;" />\n'
            b'  <row Id="2" PostTypeId="2" ParentId="1" Score="1" Body="' + body(n) + b'" />\n'
            b'  <row Id="3" PostTypeId="1" AnswerCount="0" Title="big" Body="' + body(question or n) + b'" />\n'
            b'  <row Id="4" PostTypeId="1" AnswerCount="0" Title="after" Body="&lt;p&gt;still read&lt;/p&gt;" />\n'
            b"</posts>\n")


def test_a_large_body_costs_linear_time_and_is_too_large_past_the_budget(tmp_path):
    """One 20 MB Body took 55 s (expat re-scanned the open tag at every 16 KiB fed);
    100 MB never finished."""
    times = {}
    for mb in (5, 20):
        (tmp_path / f"P{mb}.xml").write_bytes(_se_with_body(mb << 20))
        times[mb], rows = _timed_read(SE, tmp_path / f"P{mb}.xml", tmp_path, max_doc_bytes=64 << 20)
        assert set(docs(rows)) == {"1", "3", "4"}
    assert times[20] / times[5] < 10, times   # 4x the input: linear ~4x, quadratic ~16x
    # 100 MB, past max_doc_bytes (16 MiB): the answer and the question are too_large rejects
    # of their own, the small question keeps its document without that answer, and the
    # row after is read
    (tmp_path / "P100.xml").write_bytes(_se_with_body(100 << 20, question=17 << 20))
    rss = rss_mark()
    t = time.perf_counter()
    rows = read(SE, tmp_path / "P100.xml", tmp_path)
    took = time.perf_counter() - t
    grew = maxrss_mb() - rss
    assert took < 30 and grew < 1500, (took, grew)
    assert {r["source_id"]: r["_reject_reason"] for r in rows} == {
        "2": "read:too_large", "1": None, "3": "read:too_large", "4": None}
    assert b"<h2>Answer</h2>" not in docs(rows)["1"]


def test_a_row_past_the_token_budget_ends_the_file_with_the_rows_before_kept(tmp_path):
    (tmp_path / "Posts.xml").write_bytes(_se_with_body(12 << 20))
    rows = read(SE, tmp_path / "Posts.xml", tmp_path, max_doc_bytes=1 << 20)   # tokens past 8 MiB refused
    # the question before it was read, but its answer is the refused row: not fully read
    assert [(r["origin"], r["_reject_reason"]) for r in rows] == [
        ("Posts.xml#1", "read:incomplete_thread"), ("Posts.xml", "read:too_large")]
    assert "longer than 8388608 bytes" in rows[-1]["_reject_detail"]


def test_a_large_wiki_page_costs_linear_time_and_memory_stays_inside_the_budget(tmp_path):
    times = {}
    for mb in (5, 20):   # pages outside the articles: the XML and the page tree only
        text = ("lorem ipsum dolor " * 64 + "\n") * ((mb << 20) // 1153)
        redirect = "T" * (mb << 20)
        (tmp_path / f"w{mb}.xml").write_bytes(
            wiki_xml([("Big", text)], ns="1").replace(b"<ns>1</ns>", f'<ns>1</ns><redirect title="{redirect}"/>'.encode()))
        times[mb], rows = _timed_read(MW, tmp_path / f"w{mb}.xml", tmp_path, max_doc_bytes=256 << 20)
        assert reasons(rows) == ["read:namespace"]
    assert times[20] / times[5] < 10, times   # 4x the input: linear ~4x, quadratic ~16x
    # a 64 MiB page in a small .gz under max_doc_bytes 1 MiB: a too_large reject, the page
    # after it read, and memory never holds the page
    big = ("x" * 1023 + "\n") * (64 << 10)
    data = wiki_xml([("Big", big), ("Small", "A '''small''' page about a [[river]].")])
    (tmp_path / "w.xml.gz").write_bytes(gzip.compress(data, compresslevel=1))
    del big, data
    tracemalloc.start()
    try:
        rows = read(MW, tmp_path / "w.xml.gz", tmp_path, max_doc_bytes=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(r["source_id"], r["_reject_reason"]) for r in rows] == [("1", "read:too_large"), ("2", None)]
    assert rows[1]["text"] == "Small\n\nA small page about a river."
    assert peak < 24 << 20, peak


# ------------------------------------------------------------------ expansion and structure

def _laughs(inner: str) -> bytes:
    ents = '<!ENTITY lol "lol">' + "".join(f'<!ENTITY lol{i} "{("&lol%d;" % (i - 1) if i > 1 else "&lol;") * 10}">'
                                           for i in range(1, 10))
    return f'<?xml version="1.0"?><!DOCTYPE r [{ents}]>{inner}'.encode()


@pytest.mark.parametrize("fmt", [SE, MW])
def test_entity_bombs_and_external_entities_are_refused(fmt, tmp_path, outside):
    (outside / "secret.txt").write_text(SECRET)
    root = tmp_path / "in"
    root.mkdir()
    if fmt == SE:
        inner = '<posts><row Id="1" PostTypeId="1" AnswerCount="0" Title="&lol9;" Body="&{e};" /></posts>'
    else:
        inner = ('<mediawiki><page><title>T</title><ns>0</ns><id>1</id><revision><text>&lol9; &{e};</text>'
                 "</revision></page></mediawiki>")
    quadratic = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "' + "x" * 50_000 + '">]>' + inner.replace("&lol9;", "&a;" * 5000)
    external = f'<!DOCTYPE r [<!ENTITY ext SYSTEM "file://{outside}/secret.txt">]>' + inner.replace("&lol9;", "&ext;")
    cases = {"laughs.xml": _laughs(inner.format(e="lol9")), "quadratic.xml": quadratic.format(e="a").encode(),
             "external.xml": external.format(e="ext").encode()}
    for name, data in cases.items():
        (root / name).write_bytes(data)
        t = time.perf_counter()
        rows = read(fmt, root / name, root)
        assert time.perf_counter() - t < 2
        assert reasons(rows) == ["read:xml_dtd"], (name, rows)
        assert SECRET not in text_of(rows) and "lollol" not in text_of(rows)


@pytest.mark.parametrize("fmt", [SE, MW])
def test_deep_nesting_bad_bytes_and_odd_encodings_are_counted(fmt, tmp_path):
    good = posts_xml(30) if fmt == SE else wiki_xml(wiki_pages(10))
    head, tail = good.rsplit(b"</", 1)
    body = good.split(b"?>", 1)[1] if good.startswith(b"<?xml") else good
    clean = docs(read(fmt, *(_write(tmp_path, "clean.xml", good))))
    cases = {
        "deep.xml": (head + b"<a>" * 100_000 + b"x" + b"</a>" * 100_000 + b"</" + tail, "read:invalid_xml"),
        "badbytes.xml": (head + b"<row Id=\"\xff\xfe\" />" + b"</" + tail, "read:invalid_xml"),
        "nul.xml": (head + b"\x00" + b"</" + tail, "read:invalid_xml"),
        "sjis.xml": (b'<?xml version="1.0" encoding="shift_jis"?>' + body, "read:invalid_xml"),
        "bogus.xml": (b'<?xml version="1.0" encoding="no-such-codec"?>' + body, "read:invalid_xml"),
        "garbage-after.xml": (good + b"<more/>", "read:invalid_xml"),
        "comment.xml": (head + b"<!--" + b"x" * (30 << 20), "read:truncated"),
    }
    for name, (data, reason) in cases.items():
        t = time.perf_counter()
        rows = read(fmt, *(_write(tmp_path, name, data)))
        assert time.perf_counter() - t < 10, name
        assert [x for x in reasons(rows) if x != "read:not_a_post"] == [reason], (name, reasons(rows))
        assert rows[-1]["origin"] == name
        got = docs(rows)
        if name in ("deep.xml", "badbytes.xml", "nul.xml", "garbage-after.xml", "comment.xml"):
            # what came before the damage: every clean document whose rows were all before it
            assert got and all(got[k] == clean[k] for k in got), name


def _write(root: Path, name: str, data: bytes) -> tuple[Path, Path]:
    (root / name).write_bytes(data)
    return root / name, root


def test_rows_with_missing_or_odd_attributes_are_counted_rejects(tmp_path):
    rows_xml = "\n".join([
        "<posts>",
        "<row />",                                                       # nothing at all
        '<row PostTypeId="1" />',                                        # a question with no id, title or body
        '<row Id="5" PostTypeId="2" />',                                 # an answer with no parent
        '<row Id="6" PostTypeId="" Body="x" />',
        f'<row Id="7" PostTypeId="{"9" * 5000}" />',                     # a huge type, in the detail cut short
        '<row Id="10" PostTypeId="1" Title="t" Body="b" Score="1e999" AnswerCount="x" AcceptedAnswerId="11" />',
        f'<row Id="11" PostTypeId="2" ParentId="10" Score="{"9" * 5000}" Body="&lt;pre&gt;code&lt;/pre&gt;" />',
        '<row Id="12" PostTypeId="2" ParentId="10" Score="-0" Body="" />',
        '<row Id="13" PostTypeId="1" Title="many attributes" Body="b" ' + " ".join(f'a{i}="{i}"' for i in range(20000)) + " />",
        f'<row Id="{"8" * 3000}" PostTypeId="2" ParentId="{"4" * 3000}" Body="orphan" />',
        "</posts>",
    ])
    (tmp_path / "Posts.xml").write_text(rows_xml)
    for options in ({}, {"answers": "accepted", "min_score": 0, "drop_code_only": True, "metadata": "all"},
                    {"answers": "top", "min_answers": 2}):
        rows = read(SE, tmp_path / "Posts.xml", tmp_path, options=options)
        got = [(r["source_id"], r["_reject_reason"]) for r in rows]
        # the row with no type is not a post; the question with no id, title or body is
        # empty (its answer is the one with no parent: both ids are "")
        assert got[:4] == [("", "read:not_a_post"), ("", "read:empty"), ("6", "read:not_a_post"),
                           ("7", "read:not_a_post")]
        assert [g[0] for g in got[4:]] == ["10", "13", "8" * 3000] and got[6][1] == "read:orphan_answer"
        assert all(len(r["_reject_detail"] or "") < 400 for r in rows)
    assert docs(read(SE, tmp_path / "Posts.xml", tmp_path))["10"].count(b"<h2>Answer</h2>") == 2


# ------------------------------------------------------------------ wikitext and bodies: linear or bounded

def test_wikitext_that_makes_the_parser_quadratic_is_a_timeout_reject_of_that_page_only(tmp_path):
    """mwparserfromhell's C tokenizer takes ~8 s on 20 KB of ``{{a|`` and hours on 1 MB,
    in one C call: the page is parsed in a child process killed at doc_seconds."""
    pages = [("Bomb", "{{a|" * 50_000), ("Tags", "<span a=" * 20_000), ("Fine", "A [[river]] in a ''valley''.")]
    (tmp_path / "w.xml").write_bytes(wiki_xml(pages))
    before = children()
    t = time.perf_counter()
    rows = read(MW, tmp_path / "w.xml", tmp_path, limits=InputLimits(doc_seconds=1.0))
    took = time.perf_counter() - t
    assert [(r["source_id"], r["_reject_reason"]) for r in rows] == [
        ("1", "read:timeout"), ("2", "read:timeout"), ("3", None)]
    assert rows[2]["text"] == "Fine\n\nA river in a valley."
    assert "limits.doc_seconds" in rows[0]["_reject_detail"]
    assert took < 15, took
    assert children() == before   # no parser process left behind


def test_the_markup_scans_are_linear_and_match_the_regexes_they_replace():
    old_drop = re.compile(r"<(ref|references|gallery|math|score|timeline|syntaxhighlight)\b[^>]*/>"
                          r"|<(ref|references|gallery|math|score|timeline|syntaxhighlight)\b[^>]*>.*?</\2\s*>",
                          re.S | re.I)
    old_code = re.compile(r"(?is)<pre\b.*?</pre>|<code\b.*?</code>")
    rnd = random.Random(5)
    toks = ["<ref", "<REF name=x", "<references", "</ref>", "</ref >", "</references>", ">", "/", "/>", " ", "a",
            "<", "<math", "</math>", "<refx", "<pre", "<PRE>", "</pre>", "<code", "</code>", "<p>", "word"]
    for _ in range(50_000):
        s = "".join(rnd.choice(toks) for _ in range(rnd.randint(0, 12)))
        assert drop_tags(s) == old_drop.sub("", s), s
        assert code_blocks(s) == [m.span() for m in old_code.finditer(s)], s
    for bomb in ("<ref>" * 400_000, "<ref " * 400_000, "<pre>" * 400_000, "<" * 2_000_000):
        t = time.perf_counter()
        drop_tags(bomb)
        is_code_only("<pre>x</pre>" + bomb)
        assert time.perf_counter() - t < 3, bomb[:10]


def test_code_only_filter_on_a_hostile_answer_stays_fast(tmp_path):
    body = esc("<p>see</p><pre>x</pre>" + "<pre>" * 500_000)
    (tmp_path / "Posts.xml").write_text(
        '<posts><row Id="1" PostTypeId="1" AnswerCount="1" Title="q" Body="b" />'
        f'<row Id="2" PostTypeId="2" ParentId="1" Score="1" Body="{body}" /></posts>')
    t = time.perf_counter()
    rows = read(SE, tmp_path / "Posts.xml", tmp_path, options={"drop_code_only": True})
    assert time.perf_counter() - t < 10
    assert [(r["source_id"], r["_reject_reason"]) for r in rows] == [("1", "read:no_answer")]
