"""Corpora people have, read as they are: MediaWiki XML dumps, StackExchange Posts.xml,
long text files cut into documents, and native ids and metadata kept. Counts are
checked against an independent parse of the same files (``xml.etree``, ``re``)."""

from __future__ import annotations

import bz2
import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

import pyarrow as pa

from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.readers import READERS, InputFile, Reader
from stages.extract import Extract

SRC = "src"


def read_all(reader: Reader, files: list[InputFile]) -> list[dict]:
    return [row for split in reader.plan(files) for t in reader.read(split) for row in t.to_pylist()]


def one_file(path: Path, root: Path) -> list[InputFile]:
    return [InputFile(str(path), str(path.relative_to(root)), path.stat().st_size)]


def reasons(rows) -> Counter:
    return Counter(r["_reject_reason"] for r in rows)


def _pages(path: Path) -> list[dict]:
    """Every <page> of a dump, parsed independently: ns, id, redirect, title."""
    out = []
    with bz2.open(path) as fh:
        for _, el in ET.iterparse(fh):
            if el.tag.endswith("}page"):
                get = lambda name: el.find(f"{{*}}{name}")
                out.append({"ns": get("ns").text, "id": get("id").text, "title": get("title").text,
                            "redirect": get("redirect") is not None})
                el.clear()
    return out


def test_mediawiki_dump_pages_redirects_and_namespaces(shared_dir):
    wiki = shared_dir / "corpora" / "wiki"
    path = wiki / "enwiki-pages-articles-excerpt.xml.bz2"
    pages = _pages(path)
    rows = read_all(READERS["mediawiki"](source=SRC), one_file(path, wiki))
    assert len(rows) == len(pages)                      # every page is a document or a counted reject
    articles = [p for p in pages if p["ns"] == "0" and not p["redirect"]]
    got = reasons(rows)
    assert got[None] == len(articles) > 100
    assert got["read:redirect"] == sum(p["ns"] == "0" and p["redirect"] for p in pages) > 0
    assert got["read:namespace"] == sum(p["ns"] != "0" for p in pages) > 0
    kept = [r for r in rows if r["_reject_reason"] is None]
    assert [r["source_id"] for r in kept] == [p["id"] for p in articles]
    first = kept[0]
    assert first["url"] == "https://en.wikipedia.org/wiki/" + articles[0]["title"].replace(" ", "_")
    assert first["text"].startswith(articles[0]["title"] + "\n\n")
    for r in kept:                                      # plain text: no wiki markup left
        assert "[[" not in r["text"] and "{{" not in r["text"] and "<ref" not in r["text"], r["source_id"]
        assert "Category:" not in r["text"]
    # the page title: in the document's metadata, and the `title` column a chain with
    # `extract` has (issue #29: it was null for MediaWiki pages)
    assert [json.loads(r["metadata"])["title"] for r in kept] == [p["title"] for p in articles]
    table = pa.Table.from_pylist(kept[:20], schema=S.BASE_SCHEMA)
    out, _ = Extract().process(table)
    assert out.column("title").to_pylist() == [p["title"] for p in articles[:20]]


def test_mediawiki_utf16_dump(shared_dir):
    wiki = shared_dir / "corpora" / "wiki"
    path = wiki / "bgwiki-pages-articles-excerpt-utf16.xml.bz2"
    pages = _pages(path)
    rows = read_all(READERS["mediawiki"](source=SRC), one_file(path, wiki))
    kept = [r for r in rows if r["_reject_reason"] is None]
    assert len(rows) == len(pages) and len(kept) == sum(p["ns"] == "0" and not p["redirect"] for p in pages) >= 1
    assert re.search("[а-я]{5}", kept[0]["text"])       # Bulgarian text decoded from UTF-16


@pytest.mark.parametrize("site", ["coffee.stackexchange", "cstheory.meta.stackexchange"])
def test_stackexchange_question_with_answers(shared_dir, site):
    root = shared_dir / "corpora" / "stackexchange"
    path = root / site / "Posts.xml"
    posts = [el.attrib for _, el in ET.iterparse(path) if el.tag == "row"]
    questions = {p["Id"] for p in posts if p["PostTypeId"] == "1"}
    answers = Counter(p["ParentId"] for p in posts if p["PostTypeId"] == "2")
    others = sum(p["PostTypeId"] not in ("1", "2") for p in posts)
    reader = READERS["stackexchange"](source=SRC, options={"site_url": f"https://{site}.com", "metadata": ["Tags"]})
    rows = read_all(reader, one_file(path, root))
    kept = [r for r in rows if r["_reject_reason"] is None]
    assert {r["source_id"] for r in kept} == questions and len(kept) == len(questions)
    assert reasons(rows)["read:not_a_post"] == others
    assert reasons(rows)["read:orphan_answer"] == sum(n for q, n in answers.items() if q not in questions)
    for r in kept:    # each document holds its question's answers, as HTML for extract
        assert r["raw"].decode().count("<h2>Answer</h2>") == answers.get(r["source_id"], 0)
        assert r["url"] == f"https://{site}.com/questions/{r['source_id']}"
        assert json.loads(r["metadata"])["Tags"].startswith("<")


def test_stackexchange_page_extracts_to_question_and_answers(shared_dir):
    from stages.extract import Extract

    root = shared_dir / "corpora" / "stackexchange"
    reader = READERS["stackexchange"](source=SRC)
    batch = next(reader.read(reader.plan(one_file(root / "coffee.stackexchange" / "Posts.xml", root))[0]))
    out, stats = Extract().process(batch)
    assert stats[SRC].docs_out == batch.num_rows - sum(1 for r in batch.column("_reject_reason").to_pylist() if r)
    posts = {el.attrib["Id"]: el.attrib for _, el in ET.iterparse(root / "coffee.stackexchange" / "Posts.xml")
             if el.tag == "row"}
    row = next(r for r in out.to_pylist() if r["_reject_reason"] is None)
    assert row["text"].startswith(posts[row["source_id"]]["Title"])


def test_text_split_wikitext_into_articles(shared_dir):
    wiki = shared_dir / "corpora" / "wiki"
    path = wiki / "wikitext-2-raw.test.txt"
    raw = path.read_text(encoding="utf-8")
    titles = re.findall(r"(?m)^ = [^=].* = $", raw)
    pattern = r"^ = [^=].* = $"
    rows = read_all(READERS["text"](source=SRC, options={"split": "regex", "pattern": pattern}), one_file(path, wiki))
    assert raw.strip("\n").startswith(titles[0])
    assert [r["text"].splitlines()[0] for r in rows] == titles
    # capped: no document over the limit, cut at paragraph boundaries, no text lost
    capped = read_all(READERS["text"](source=SRC, options={"split": "regex", "pattern": pattern, "max_chars": 4000}),
                      one_file(path, wiki))
    assert len(capped) > len(rows) and max(len(r["text"]) for r in capped) <= 4000
    words = lambda texts: [w for t in texts for w in t.split()]
    assert words(r["text"] for r in capped) == words(raw.splitlines())
    assert len({r["id"] for r in capped}) == len(capped)


def test_text_split_paragraphs_and_lines(shared_dir, tmp_path):
    books = shared_dir / "corpora" / "books"
    path = books / "tinyshakespeare.txt"
    raw = path.read_text(encoding="utf-8")
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", raw) if p.strip()]
    rows = read_all(READERS["text"](source=SRC, options={"split": "paragraphs"}), one_file(path, books))
    assert [r["text"] for r in rows] == paragraphs
    limit = 4000   # above the longest paragraph (3,080 chars): pure packing, no cuts
    packed = read_all(READERS["text"](source=SRC, options={"split": "paragraphs", "max_chars": limit}),
                      one_file(path, books))
    assert max(len(r["text"]) for r in packed) <= limit and len(packed) < len(rows) / 5
    assert "\n\n".join(r["text"] for r in packed) == "\n\n".join(paragraphs)   # whole paragraphs, in order
    lines = read_all(READERS["text"](source=SRC, options={"split": "lines"}), one_file(path, books))
    assert [r["text"] for r in lines] == [x for x in raw.splitlines() if x.strip()]
    with pytest.raises(SpecError, match="pattern"):
        READERS["text"](source=SRC, options={"split": "regex"})
    with pytest.raises(SpecError, match="split must be one of"):
        READERS["text"](source=SRC, options={"split": "sentences"})


def test_native_ids_and_metadata(shared_dir):
    root = shared_dir / "corpora" / "ccnet"
    path = root / "cc_en_head-0091.jsonl"
    records = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    named = read_all(READERS["jsonl"](source=SRC, options={"id_key": "id", "metadata": ["metadata.perplexity", "source"]}),
                     one_file(path, root))
    assert [r["source_id"] for r in named] == [x["id"] for x in records]
    assert [json.loads(r["metadata"]) for r in named] == [
        {"metadata": {"perplexity": x["metadata"]["perplexity"]}, "source": x["source"]} for x in records]
    everything = read_all(READERS["jsonl"](source=SRC, options={"metadata": "all"}), one_file(path, root))
    assert [json.loads(r["metadata"]) for r in everything] == [{k: v for k, v in x.items() if k != "text"} for x in records]
    assert all(r["source_id"] is None for r in everything)   # no id_key: no native id
    with pytest.raises(SpecError, match="metadata"):
        READERS["jsonl"](source=SRC, options={"metadata": 3})


def test_truncated_dump_keeps_pages_read_and_counts_the_rest(shared_dir, tmp_path):
    src = shared_dir / "corpora" / "wiki" / "enwiki-pages-articles-excerpt.xml.bz2"
    cut = tmp_path / "cut.xml.bz2"
    cut.write_bytes(src.read_bytes()[: src.stat().st_size // 2])   # bz2 decodes whole 900 kB blocks
    rows = read_all(READERS["mediawiki"](source=SRC), one_file(cut, tmp_path))
    got = reasons(rows)
    assert got[None] >= 1 and got["read:truncated_bz2"] == 1
    assert rows[-1]["origin"] == "cut.xml.bz2"


@pytest.mark.parametrize("split", ["lines", "paragraphs"])
def test_pieces_of_an_over_long_line_have_their_own_ids(shared_dir, split):
    """WikiText-2 lines longer than max_chars are cut into pieces; each piece is its own
    document (issue #29: they shared the line's id and all but the first were rejected
    as duplicates), and the pieces hold the whole line."""
    path = shared_dir / "corpora" / "wiki" / "wikitext-2-raw.test.txt"
    limit = 2000
    rows = read_all(READERS["text"](source=SRC, options={"split": split, "max_chars": limit}),
                    one_file(path, path.parent))
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    assert all(r["_reject_reason"] is None and len(r["text"]) <= limit for r in rows)
    long_lines = [(no, line) for no, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1)
                  if len(line) > limit]
    assert len(long_lines) >= 5
    by_origin = {r["origin"]: r["text"] for r in rows}
    squash = lambda s: "".join(s.split())
    for no, line in long_lines:
        pieces = [t for o, t in by_origin.items() if o == f"{path.name}:{no}" or o.startswith(f"{path.name}:{no}+")]
        assert len(pieces) >= 2 and squash(line) in squash("".join(pieces))
