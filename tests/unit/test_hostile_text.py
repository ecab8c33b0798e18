"""The text reader's split modes on input with no line or paragraph ends: memory stays
bounded by ``max_doc_bytes``, not by the file (a 256 MiB line, a 256 MiB paragraph)."""

from __future__ import annotations


import pytest

from peak_memory import maxrss_mb, rss_mark
from datapipe.readers import InputFile, READERS
from datapipe.readers.base import read_split


def _rows(path, **options):
    reader = READERS["text"](source="s", options=options, max_doc_bytes=1 << 20)
    f = InputFile(str(path), path.name, path.stat().st_size, roots=(str(path.parent),))
    rows = []
    for split in reader.plan([f]):
        for table in read_split(reader, split):
            rows.extend(table.to_pylist())
    return rows


@pytest.mark.parametrize("split", ["lines", "paragraphs", "regex"])
def test_a_giant_line_or_section_is_too_large_in_bounded_memory(tmp_path, split):
    path = tmp_path / "big.txt"
    with open(path, "wb") as fh:
        fh.write(b"= Title =\nshort first document\n\n")
        fh.write(b"a" * (256 << 20))            # one line of 256 MiB, no newline in it
        fh.write(b"\n\n= Next =\nthe document after it\n")
    before = rss_mark()
    rows = _rows(path, split=split, **({"pattern": "^= "} if split == "regex" else {}))
    grew_mb = maxrss_mb() - before
    kept = [r["text"] for r in rows if r["_reject_reason"] is None]
    assert [r["_reject_reason"] for r in rows if r["_reject_reason"]] == ["read:too_large"]
    assert any("the document after it" in t for t in kept)
    # regex: the giant line belongs to the first section (no title line between them)
    assert any("short first document" in t for t in kept) == (split != "regex")
    assert grew_mb < 200, f"peak memory grew by {grew_mb:.0f} MB for a 256 MiB line"


def test_a_long_section_with_max_chars_is_still_cut_into_pieces(tmp_path):
    path = tmp_path / "long.txt"
    path.write_text("".join(f"line {i} of one long paragraph\n" for i in range(100_000)))
    rows = _rows(path, split="paragraphs", max_chars=10_000)
    kept = [r["text"] for r in rows if r["_reject_reason"] is None]
    assert not [r for r in rows if r["_reject_reason"]]
    assert all(len(t) <= 10_000 for t in kept)
    assert "".join(t.replace("\n", "") for t in kept) == "".join(
        f"line {i} of one long paragraph" for i in range(100_000))
