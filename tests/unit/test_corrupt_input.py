"""Corrupt input: bad records become counted rejects; a broken file becomes one reject
(after the documents read before the damage) under on_error=skip, and a
CorruptInputError naming the file under on_error=fail."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from warcio.archiveiterator import ArchiveIterator

from datapipe.errors import CorruptInputError
from datapipe.readers import READERS, InputFile, Reader

SRC = "src"


def inputs(paths, root: Path) -> list[InputFile]:
    return [InputFile(str(p), str(Path(p).relative_to(root)), Path(p).stat().st_size) for p in paths]


def read_all(reader: Reader, files, split_bytes: int = 64 << 20) -> list[dict]:
    rows = []
    for split in reader.plan(files, split_bytes=split_bytes):
        for table in reader.read(split):
            rows.extend(table.to_pylist())
    return rows


def reasons(rows) -> Counter:
    return Counter(r["_reject_reason"] for r in rows if r["_reject_reason"])


def docs(rows):
    return [r for r in rows if r["_reject_reason"] is None]


def assert_fails(fmt: str, files, reason: str, options=None) -> None:
    reader = READERS[fmt](source=SRC, options=options, on_error="fail")
    with pytest.raises(CorruptInputError) as info:
        read_all(reader, files)
    assert info.value.path == files[0].path and info.value.reason == reason
    assert files[0].path in str(info.value)


def check_reject_rows(rows) -> None:
    for r in rows:
        if r["_reject_reason"]:
            assert r["_reject_stage"] == "read" and r["_reject_reason"].startswith("read:")
            assert r["_reject_detail"] and r["origin"] and r["text"] is None and r["raw"] is None


@pytest.fixture()
def jsonl_data(shared_dir) -> bytes:
    """~200 real JSONL documents (~600 kB), so compressed files span many blocks."""
    c = shared_dir / "corpora"
    paths = sorted(c.glob("*/*.jsonl"))
    assert len(paths) >= 8
    return b"".join(p.read_bytes() for p in paths)


def _texts(data: bytes) -> list[str]:
    return [json.loads(l)["text"] for l in data.splitlines() if l.strip()]


# ---------------------------------------------------------------------------- compression


def test_truncated_gzip(jsonl_data, tmp_path):
    blob = gzip.compress(jsonl_data)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(blob[: len(blob) // 2])
    files = inputs([path], tmp_path)
    rows = read_all(READERS["jsonl"](source=SRC), files)
    check_reject_rows(rows)
    assert reasons(rows) == {"read:truncated_gzip": 1}
    assert rows[-1]["_reject_reason"] == "read:truncated_gzip" and rows[-1]["origin"] == "cut.jsonl.gz"
    got = [r["text"] for r in docs(rows)]
    assert 30 < len(got) < len(_texts(jsonl_data))
    assert got == _texts(jsonl_data)[: len(got)]  # what was read before the cut is intact
    assert_fails("jsonl", files, "read:truncated_gzip")


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_corrupt_zstd(jsonl_data, tmp_path, damage):
    blob = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(jsonl_data))
    if damage == "flip":
        for i in range(len(blob) // 2, len(blob) // 2 + 8):
            blob[i] ^= 0xA5
    else:
        del blob[len(blob) * 2 // 3:]
    path = tmp_path / "bad.jsonl.zst"
    path.write_bytes(bytes(blob))
    files = inputs([path], tmp_path)
    rows = read_all(READERS["jsonl"](source=SRC), files)
    check_reject_rows(rows)
    want = "read:corrupt_zstd" if damage == "flip" else "read:truncated_zstd"
    assert reasons(rows)[want] == 1 and rows[-1]["_reject_reason"] == want
    got = [r["text"] for r in docs(rows)]
    assert len(got) > 20 and got == _texts(jsonl_data)[: len(got)]
    assert_fails("jsonl", files, want)


# ---------------------------------------------------------------------------- records


def test_invalid_utf8_and_bad_lines_are_counted_rejects(tmp_path):
    lines = [
        b'{"text": "caf\xc3\xa9 ok"}',
        b'{"text": "latin-1 caf\xe9"}',  # invalid UTF-8
        b'{"text": "cut \xe2\x82"}',  # truncated multibyte sequence
        b'{"text": "lone \\udc80 escape"}',  # valid JSON, not valid Unicode
        b"{not json",
        b'"a string"',
        b'{"title": "no text"}',
        b'{"text": null}',
        b'{"text": ["a", "list"]}',
        b'{"text": "   "}',
        b"",
        b'{"text": "' + b"y" * 5000 + b'"}',
        b'{"text": "last, no newline"}',
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\r\n".join(lines))
    files = inputs([path], tmp_path)
    for on_error in ("skip", "fail"):  # record-level problems never raise
        reader = READERS["jsonl"](source=SRC, on_error=on_error, max_doc_bytes=4096)
        for split_bytes in (1 << 20, 7):
            rows = read_all(reader, files, split_bytes)
            check_reject_rows(rows)
            assert [r["text"] for r in docs(rows)] == ["café ok", "last, no newline"]
            assert reasons(rows) == {
                "read:invalid_utf8": 3, "read:invalid_json": 1, "read:not_object": 1,
                "read:missing_text": 2, "read:bad_text": 1, "read:empty": 1, "read:too_large": 1,
            }
            assert len(rows) == 12  # every line but the blank one is accounted for


def test_invalid_utf8_text_file_and_too_large(tmp_path):
    (tmp_path / "good.txt").write_text("plain text\n")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    (tmp_path / "big.txt").write_text("z" * 3000)
    (tmp_path / "blank.txt").write_text(" \n\n")
    files = inputs(sorted(tmp_path.iterdir()), tmp_path)
    rows = read_all(READERS["text"](source=SRC, on_error="fail", max_doc_bytes=1000), files)
    check_reject_rows(rows)
    assert [(r["origin"], r["_reject_reason"]) for r in rows] == [
        ("big.txt", "read:too_large"), ("blank.txt", "read:empty"),
        ("good.txt", None), ("latin1.txt", "read:invalid_utf8")]
    latin = READERS["text"](source=SRC, options={"encoding": "latin-1"})
    assert read_all(latin, inputs([tmp_path / "latin1.txt"], tmp_path))[0]["text"] == "café au lait\n"


# ---------------------------------------------------------------------------- WARC


@pytest.fixture()
def broken(shared_dir) -> Path:
    return shared_dir / "corpora/web/broken"


def test_warc_with_a_bad_record(broken):
    """warcio-example-trunc.warc: the response's Content-Length does not meet the record
    separator; that record is rejected and reading goes on."""
    files = inputs([broken / "warcio-example-trunc.warc"], broken)
    for on_error in ("skip", "fail"):
        rows = read_all(READERS["warc"](source=SRC, on_error=on_error), files)
        check_reject_rows(rows)
        assert [(r["origin"], r["_reject_reason"]) for r in rows] == [
            ("warcio-example-trunc.warc@1197", "read:corrupt_record")]
        assert rows[0]["url"] == "http://example.com/"


@pytest.mark.parametrize("name, reason", [
    ("resiliparse-clipped.warc.gz", "read:truncated_gzip"),
    ("warcio-example-wrong-chunks.warc.gz", "read:corrupt_warc"),
    ("ia-2008-truncated.arc", "read:corrupt_warc"),
])
def test_broken_archives(broken, name, reason):
    files = inputs([broken / name], broken)
    rows = read_all(READERS["warc"](source=SRC), files)
    check_reject_rows(rows)
    assert [(r["origin"], r["_reject_reason"]) for r in rows] == [(name, reason)]
    assert_fails("warc", files, reason)


def test_single_stream_gzip_warc_is_recovered(broken):
    """A .warc.gz compressed as one gzip stream (not member per record) is valid data:
    it is read through, not rejected."""
    for name in ("warcio-example-bad-non-chunked.warc.gz", "warcio-example-bad.warc.gz.bad"):
        files = inputs([broken / name], broken)
        rows = read_all(READERS["warc"](source=SRC, on_error="fail"), files)
        with gzip.open(files[0].path) as stream:
            ref = [r.content_stream().read() for r in ArchiveIterator(stream)
                   if r.rec_type == "response" and r.http_headers.get_statuscode() == "200"]
        assert [r["raw"] for r in docs(rows)] == ref and len(ref) == 1


def _members(path) -> list[int]:
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        return [it.offset for _ in it]


def _pages(path) -> dict[int, bytes]:
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        return {it.offset: r.content_stream().read() for r in it if r.rec_type == "response"}


def test_damaged_member_mid_warc(shared_dir, tmp_path):
    """Real WARC with one response member overwritten by garbage: the other 15 pages are
    read (also by splits starting after the damage), the damage is one reject."""
    src = shared_dir / "corpora/web/warc/cc-main-2020-34-excerpt.warc.gz"
    data = src.read_bytes()
    offs = _members(src)
    pages = _pages(src)
    hit = sorted(pages)[5]
    nxt = offs[offs.index(hit) + 1]
    path = tmp_path / "damaged.warc.gz"
    path.write_bytes(data[:hit] + bytes((b * 7 + 3) % 256 for b in data[hit:nxt]) + data[nxt:])
    files = inputs([path], tmp_path)
    reader = READERS["warc"](source=SRC)
    rows = read_all(reader, files)
    check_reject_rows(rows)
    assert reasons(rows) == {"read:corrupt_warc": 1}
    assert [r["raw"] for r in docs(rows)] == [pages[o] for o in sorted(pages) if o != hit]
    for split_bytes in (3000, 20_000):
        again = read_all(reader, files, split_bytes)
        assert [(r["id"], r["_reject_reason"]) for r in again] == [(r["id"], r["_reject_reason"]) for r in rows]
    assert_fails("warc", files, "read:corrupt_warc")


def test_truncated_warc_gz(shared_dir, tmp_path):
    src = shared_dir / "corpora/web/warc/crawl2024-0000.warc.gz"
    data = src.read_bytes()
    path = tmp_path / "cut.warc.gz"
    path.write_bytes(data[: len(data) // 2])
    files = inputs([path], tmp_path)
    rows = read_all(READERS["warc"](source=SRC), files)
    check_reject_rows(rows)
    assert reasons(rows)["read:truncated_gzip"] == 1 and rows[-1]["_reject_reason"] == "read:truncated_gzip"
    pages = _pages(src)
    got = docs(rows)
    assert 3 < len(got) < 22
    assert [r["raw"] for r in got] == [pages[o] for o in sorted(pages)][: len(got)]
    assert_fails("warc", files, "read:truncated_gzip")


def test_damaged_plain_warc_resumes_at_next_record(shared_dir, tmp_path):
    src = shared_dir / "corpora/web/warc/html-lang-attribute.warc"
    data = src.read_bytes()
    offs = _members(src)
    cut = offs[2] + 3  # garble the third record's header line
    path = tmp_path / "garbled.warc"
    path.write_bytes(data[:cut] + b"\x00\xff garbage \x00" + data[cut + 12:])
    files = inputs([path], tmp_path)
    reader = READERS["warc"](source=SRC)
    rows = read_all(reader, files)
    check_reject_rows(rows)
    assert reasons(rows) == {"read:corrupt_warc": 1}
    assert len(docs(rows)) == 4  # the 5 pages but the garbled one
    assert [r["id"] for r in read_all(reader, files, split_bytes=200)] == [r["id"] for r in rows]


# ---------------------------------------------------------------------------- empty and unreadable files


@pytest.mark.parametrize("fmt, name", [
    ("jsonl", "e.jsonl"), ("jsonl", "e.jsonl.gz"), ("text", "e.txt"), ("text", "e.txt.gz"),
    ("html", "e.html"), ("warc", "e.warc.gz"), ("parquet", "e.parquet"),
])
def test_empty_file(tmp_path, fmt, name):
    path = tmp_path / name
    path.write_bytes(gzip.compress(b"") if name.endswith(".txt.gz") or name.endswith(".jsonl.gz") else b"")
    files = inputs([path], tmp_path)
    rows = read_all(READERS[fmt](source=SRC), files)
    check_reject_rows(rows)
    assert [(r["origin"], r["_reject_reason"]) for r in rows] == [(name, "read:empty_file")]
    assert_fails(fmt, files, "read:empty_file")


def test_corrupt_parquet(tmp_path):
    pq.write_table(pa.table({"text": ["a", "b"] * 500}), tmp_path / "whole.parquet")
    data = (tmp_path / "whole.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    (tmp_path / "notext.parquet").write_bytes(data)
    files = inputs([tmp_path / "cut.parquet"], tmp_path)
    rows = read_all(READERS["parquet"](source=SRC), files)
    assert [(r["origin"], r["_reject_reason"]) for r in rows] == [("cut.parquet", "read:corrupt_parquet")]
    assert_fails("parquet", files, "read:corrupt_parquet")
    files = inputs([tmp_path / "notext.parquet"], tmp_path)
    rows = read_all(READERS["parquet"](source=SRC, options={"text_key": "body"}), files)
    assert [r["_reject_reason"] for r in rows] == ["read:missing_column"]


def test_one_bad_file_does_not_stop_the_split(shared_dir, tmp_path):
    """Several small files in one split: the corrupt one in the middle is one reject, the
    others are read in full; a file deleted after planning is `unreadable`."""
    html = shared_dir / "corpora/web/html"
    good = sorted(html.iterdir())[:4]
    for p in good:
        shutil.copy(p, tmp_path / p.name)
    bad = tmp_path / "0-bad.html.gz"
    bad.write_bytes(gzip.compress(b"<html>" + good[0].read_bytes() * 3)[:5000])
    gone = tmp_path / "1-gone.html"
    gone.write_bytes(b"<html>soon gone</html>")
    files = inputs(sorted(tmp_path.iterdir()), tmp_path)
    reader = READERS["html"](source=SRC)
    splits = reader.plan(files)
    assert len(splits) == 1
    os.remove(gone)
    rows = read_all(reader, files)
    check_reject_rows(rows)
    expect = {"0-bad.html.gz": "read:truncated_gzip", "1-gone.html": "read:unreadable"}
    assert [(r["origin"], r["_reject_reason"]) for r in rows] == [
        (f.rel, expect.get(f.rel)) for f in files]
    assert [r["raw"] for r in docs(rows)] == [gzip.decompress(p.read_bytes()) for p in good]
