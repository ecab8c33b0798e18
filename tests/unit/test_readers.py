"""Readers on real files: document counts, texts and bytes against independent reads,
and the same documents whatever the split size."""

from __future__ import annotations

import gzip
import os
import json
import pickle
import sysconfig
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from warcio.archiveiterator import ArchiveIterator

from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.readers import READERS, InputFile, Reader, reader_for
from datapipe.readers.jsonl import JsonlOptions
from datapipe.readers.warc import WarcOptions
from datapipe.spec import load_job

SRC = "src"


def inputs(paths, root: Path) -> list[InputFile]:
    return [InputFile(str(p), str(Path(p).relative_to(root)), Path(p).stat().st_size) for p in sorted(paths)]


def read_all(reader: Reader, files: list[InputFile], split_bytes: int = 64 << 20) -> list[dict]:
    """Every row of every split, checking the batch contract on the way."""
    rows = []
    for split in reader.plan(files, split_bytes=split_bytes):
        for table in reader.read(split):
            assert table.schema == S.BASE_SCHEMA
            assert 0 < table.num_rows <= reader.batch_rows
            rows.extend(table.to_pylist())
    return rows


def docs(rows):
    return [r for r in rows if r["_reject_reason"] is None]


def same_rows(a, b) -> bool:
    key = lambda r: (r["id"], r["text"], r["raw"], r["url"], r["origin"], r["_reject_reason"])
    return [key(r) for r in a] == [key(r) for r in b]


# ---------------------------------------------------------------------------- registry


def test_wrong_type_in_a_reader_option_names_file_and_option(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "hello"}\n')
    job = tmp_path / "job.yaml"
    job.write_text("name: t\noutput: out\nsources:\n  - {name: docs, format: jsonl, paths: [a.jsonl], "
                   "options: {id_key: 3}}\nstages: [{normalize: {}}]\n")
    with pytest.raises(SpecError, match=r"job.yaml: source 'docs': options: key 'id_key' must be str or null, got 3"):
        load_job(job)
    with pytest.raises(SpecError, match=r"format 'jsonl': options: key 'id_key' must be str or null, got 3"):
        READERS["jsonl"](source=SRC, options={"id_key": 3})
    with pytest.raises(SpecError, match=r"format 'text': options: key 'max_chars' must be int, got '4k'"):
        READERS["text"](source=SRC, options={"max_chars": "4k"})


def test_registry_and_unknown_format():
    assert set(READERS) == {"jsonl", "parquet", "text", "html", "warc", "mediawiki", "stackexchange", "code", "arxiv",
                            "hf"}
    assert reader_for("warc") is READERS["warc"]
    with pytest.raises(SpecError, match="valid formats: .*html.*jsonl.*parquet.*text.*warc"):
        reader_for("csv")


def test_options_are_checked():
    with pytest.raises(TypeError):
        JsonlOptions(txt_key="body")  # what the job spec turns into a SpecError
    with pytest.raises(SpecError, match="options: unknown key 'txt_key'; did you mean 'text_key'"):
        READERS["jsonl"](source=SRC, options={"txt_key": "body"})
    with pytest.raises(SpecError, match="records"):
        WarcOptions(records="request")
    with pytest.raises(SpecError, match="on_error"):
        READERS["text"](source=SRC, on_error="ignore")
    with pytest.raises(SpecError, match="split_bytes"):
        READERS["text"](source=SRC).plan([], split_bytes=0)


def test_provides_text_or_markup():
    assert READERS["jsonl"](source=SRC).provides() == S.TEXT_SOURCE_COLUMNS
    assert READERS["text"](source=SRC).provides() == S.TEXT_SOURCE_COLUMNS
    assert READERS["html"](source=SRC).provides() == S.MARKUP_SOURCE_COLUMNS
    assert READERS["warc"](source=SRC).provides() == S.MARKUP_SOURCE_COLUMNS
    assert READERS["warc"](source=SRC, options={"records": "conversion"}).provides() == S.TEXT_SOURCE_COLUMNS


# ---------------------------------------------------------------------------- WARC


def _warcio_pages(path: str, rel: str = "") -> tuple[list[tuple[str, str, bytes]], int]:
    """Reference read: (id key, url, payload) of 2xx HTML responses, and the number of
    response records, straight from warcio. The id key is the WARC-Record-ID, or
    ``rel@offset`` for a record without one."""
    pages, responses = [], 0
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        for rec in it:
            if rec.rec_type != "response":
                continue
            responses += 1
            http = rec.http_headers
            ctype = (http.get_header("Content-Type") or "").split(";")[0].strip().lower()
            if ctype in ("text/html", "application/xhtml+xml") and http.get_statuscode().startswith("2"):
                pages.append((rec.rec_headers.get_header("WARC-Record-ID") or f"{rel}@{it.offset}",
                              rec.rec_headers.get_header("WARC-Target-URI"),
                              rec.content_stream().read()))
    return pages, responses


def test_warc_responses_match_warcio(shared_dir):
    root = shared_dir / "corpora/web/warc"
    files = inputs([p for p in root.iterdir() if p.name.endswith((".warc", ".warc.gz"))], root)
    assert len(files) >= 9
    reader = READERS["warc"](source=SRC, batch_rows=7)
    rows = read_all(reader, files)
    total_pages = 0
    for f in files:
        pages, responses = _warcio_pages(f.path, f.rel)
        mine = [r for r in rows if r["origin"].startswith(f.rel + "@")]
        assert len(mine) == responses, f.rel  # every response record: a document or a reject
        got = [(r["id"], r["source_id"], r["url"], r["raw"]) for r in docs(mine)]
        # source_id: the WARC-Record-ID users join results back to the crawl by (issue #29)
        want = [(S.make_id(SRC, rid), None if rid.startswith(f"{f.rel}@") else rid, url, payload)
                for rid, url, payload in pages if payload.strip()]
        assert got == want, f.rel
        total_pages += len(got)
    assert total_pages >= 60
    assert all(r["text"] is None for r in rows)
    assert {r["_reject_reason"] for r in rows} <= {None, "read:content_type", "read:http_status"}
    assert len({r["id"] for r in rows}) == len(rows)


def test_warc_split_by_byte_range_reads_the_same(shared_dir):
    root = shared_dir / "corpora/web/warc"
    files = inputs([root / "books-toscrape.warc", root / "cc-main-2020-34-excerpt.warc.gz",
                    root / "crawl2024-0000.warc.gz"], root)
    reader = READERS["warc"](source=SRC)
    whole = read_all(reader, files)
    splits = reader.plan(files, split_bytes=4096)
    assert len(splits) > 200  # large files really split, by byte range
    assert all(len(s.files) == 1 for s in splits)
    for split_bytes in (4096, 50_000):
        assert same_rows(read_all(reader, files, split_bytes), whole)
    assert len(docs(whole)) == 1 + 16 + 22


def test_wet_conversion_matches_its_warc(shared_dir):
    root = shared_dir / "corpora/web/warc"
    wet = inputs([root / "whirlwind.warc.wet.gz"], root)
    warc = inputs([root / "whirlwind.warc.gz"], root)
    text_rows = docs(read_all(READERS["warc"](source=SRC, options={"records": "conversion"}), wet))
    page_rows = docs(read_all(READERS["warc"](source=SRC), warc))
    assert len(text_rows) == len(page_rows) == 1
    with open(wet[0].path, "rb") as fh:
        conv = [(r.content_stream().read().decode("utf-8"), r.rec_headers.get_header("WARC-Refers-To"),
                 r.rec_headers.get_header("WARC-Record-ID")) for r in ArchiveIterator(fh) if r.rec_type == "conversion"]
    [(ref_text, refers_to, record_id)] = conv
    t, p = text_rows[0], page_rows[0]
    assert t["text"] == ref_text and t["raw"] is None
    assert t["source_id"] == record_id and p["source_id"] == refers_to
    assert t["url"] == p["url"] == "https://an.wikipedia.org/wiki/Escopete"
    assert p["id"] == S.make_id(SRC, refers_to)  # the WET record points at this response
    title = ref_text.splitlines()[0]
    assert f"<title>{title}</title>".encode() in p["raw"]


def test_wet_file_under_records_response_is_a_spec_error(shared_dir):
    root = shared_dir / "corpora/web/warc"
    with pytest.raises(SpecError, match="records: conversion"):
        READERS["warc"](source=SRC).plan(inputs([root / "whirlwind.warc.wet.gz"], root))


def test_arc_reads_with_stable_locator_ids(shared_dir):
    root = shared_dir / "corpora/web/warc"
    files = inputs([root / "warcio-example.arc.gz"], root)
    reader = READERS["warc"](source=SRC)
    first, again = read_all(reader, files), read_all(reader, files)
    assert same_rows(first, again)  # warcio invents random ids for ARC; ours do not depend on them
    with open(files[0].path, "rb") as fh:
        it = ArchiveIterator(fh, arc2warc=True)
        ref = [(it.offset, r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
               for r in it if r.rec_type == "response"]
    assert [(r["origin"], r["url"], r["raw"]) for r in docs(first)] == [
        (f"{files[0].rel}@{off}", url, payload) for off, url, payload in ref]
    assert docs(first)[0]["id"] == S.make_id(SRC, f"{files[0].rel}@{ref[0][0]}")


def test_eucjp_pages_keep_their_bytes(shared_dir):
    root = shared_dir / "corpora/web/broken"
    files = inputs([root / "clueweb-quirk-eucjp.warc.gz"], root)
    got = docs(read_all(READERS["warc"](source=SRC), files))
    pages, _ = _warcio_pages(files[0].path)
    assert [r["raw"] for r in got] == [p for _, _, p in pages] and len(got) == 29


# ---------------------------------------------------------------------------- HTML


def test_html_pages_are_raw_bytes(shared_dir):
    root = shared_dir / "corpora/web/html"
    files = inputs(root.iterdir(), root)
    assert len(files) == 549
    reader = READERS["html"](source=SRC, batch_rows=100)
    rows = read_all(reader, files)
    assert len(rows) == 549 and not [r for r in rows if r["_reject_reason"]]
    for r, f in zip(rows, files):
        assert r["raw"] == gzip.decompress(Path(f.path).read_bytes())
        assert r["origin"] == f.rel and r["id"] == S.make_id(SRC, f.rel)
        assert r["text"] is None and r["url"] is None
    splits = reader.plan(files, split_bytes=1 << 20)
    assert 1 < len(splits) < 549  # small files are grouped
    assert sum(len(s.files) for s in splits) == 549


# ---------------------------------------------------------------------------- JSONL


def _jsonl_files(shared_dir) -> list[Path]:
    c = shared_dir / "corpora"
    return sorted((c / "redpajama").glob("*.jsonl")) + sorted((c / "ccnet").glob("*.jsonl"))


def test_jsonl_texts_match_json_loads(shared_dir):
    root = shared_dir / "corpora"
    paths = _jsonl_files(shared_dir)
    files = inputs(paths, root)
    ref = [(f.rel, off, json.loads(line)) for f in files for off, line in _lines(f.path)]
    reader = READERS["jsonl"](source=SRC, batch_rows=8)
    rows = read_all(reader, files)
    assert len(rows) == len(ref) == 70
    assert [r["text"] for r in rows] == [obj["text"] for _, _, obj in ref]
    assert [r["origin"] for r in rows] == [f"{rel}@{off}" for rel, off, _ in ref]
    assert [r["id"] for r in rows] == [S.make_id(SRC, f"{rel}@{off}") for rel, off, _ in ref]
    # byte-range splits: lines cut anywhere, same documents
    splits = reader.plan(files, split_bytes=997)
    assert len(splits) > 200
    assert same_rows(read_all(reader, files, split_bytes=997), rows)
    # every byte its own split: each line is still read once, by the split it starts in
    c4 = [f for f in files if f.rel.endswith("c4-refined.jsonl")]
    assert same_rows(read_all(reader, c4, split_bytes=1), [r for r in rows if r["origin"].startswith(c4[0].rel)])


def _lines(path):
    off = 0
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                yield off, line
            off += len(line)


def test_jsonl_native_ids_and_url(shared_dir):
    root = shared_dir / "corpora"
    files = inputs(sorted((root / "ccnet").glob("*.jsonl")), root)
    reader = READERS["jsonl"](source=SRC, options={"id_key": "id", "url_key": "metadata.url"})
    rows = read_all(reader, files)
    ref = [json.loads(line) for f in files for _, line in _lines(f.path)]
    assert [r["id"] for r in rows] == [S.make_id(SRC, o["id"]) for o in ref]
    assert [r["url"] for r in rows] == [o["metadata"].get("url") for o in ref]
    assert same_rows(read_all(reader, files, split_bytes=5000), rows)


def test_jsonl_gz_and_zst_copies_read_the_same(shared_dir, tmp_path):
    root = shared_dir / "corpora"
    plain = inputs(_jsonl_files(shared_dir), root)
    for i, f in enumerate(plain):
        data = Path(f.path).read_bytes()
        name = f"{i:02d}-{Path(f.rel).name}"  # keeps the order of `plain`
        (tmp_path / f"{name}.gz").write_bytes(gzip.compress(data))
        # several frames, as a streaming compressor writes them
        cctx = zstandard.ZstdCompressor(write_checksum=True)
        half = len(data) // 2
        (tmp_path / f"{name}.zst").write_bytes(cctx.compress(data[:half]) + cctx.compress(data[half:]))
    reader = READERS["jsonl"](source=SRC)
    want = [r["text"] for r in read_all(reader, plain)]
    for ext in ("gz", "zst"):
        files = inputs(tmp_path.glob(f"*.{ext}"), tmp_path)
        assert all(len(s.files) == 1 and s.end is None for s in reader.plan(files, split_bytes=100))
        rows = read_all(reader, files, split_bytes=100)
        assert [r["text"] for r in rows] == want
        assert rows[0]["origin"] == f"{files[0].rel}:1"  # compressed: line numbers
    dolma = inputs([root / "ccnet/000.json.gz"], root)
    got = read_all(reader, dolma)
    with gzip.open(dolma[0].path, "rt", encoding="utf-8") as fh:
        assert [r["text"] for r in got] == [json.loads(line)["text"] for line in fh if line.strip()]


# ---------------------------------------------------------------------------- Parquet


def _parquet(shared_dir, tmp_path, **kw) -> tuple[Path, pa.Table]:
    texts = [json.loads(l)["text"] for p in _jsonl_files(shared_dir) for _, l in _lines(p)]
    table = pa.table({"doc_id": [f"d{i}" for i in range(len(texts))], "body": texts,
                      "link": [f"https://example.org/{i}" for i in range(len(texts))]})
    path = tmp_path / "docs.parquet"
    pq.write_table(table, path, row_group_size=7, **kw)
    return path, table


def test_parquet_rows_by_row_group(shared_dir, tmp_path):
    path, table = _parquet(shared_dir, tmp_path)
    files = inputs([path], tmp_path)
    opts = {"text_key": "body", "id_key": "doc_id", "url_key": "link"}
    reader = READERS["parquet"](source=SRC, options=opts, batch_rows=5)
    rows = read_all(reader, files)
    ref = pq.read_table(path)
    assert [r["text"] for r in rows] == ref.column("body").to_pylist()
    assert [r["id"] for r in rows] == [S.make_id(SRC, i) for i in ref.column("doc_id").to_pylist()]
    assert [r["url"] for r in rows] == ref.column("link").to_pylist()
    assert [r["origin"] for r in rows] == [f"docs.parquet#{i}" for i in range(len(rows))]
    splits = reader.plan(files, split_bytes=10_000)
    assert len(splits) > 2 and splits[0].end - splits[0].start >= 1  # row-group ranges
    assert [(s.start, s.end) for s in splits][-1][1] == pq.ParquetFile(path).num_row_groups
    assert same_rows(read_all(reader, files, split_bytes=10_000), rows)
    assert same_rows(read_all(reader, files, split_bytes=1), rows)
    # without id_key: locator ids, still split-independent
    plain = READERS["parquet"](source=SRC, options={"text_key": "body"})
    a, b = read_all(plain, files), read_all(plain, files, split_bytes=1)
    assert same_rows(a, b) and a[3]["id"] == S.make_id(SRC, "docs.parquet#3")


def test_parquet_bad_rows_are_rejects(tmp_path):
    table = pa.table({"text": pa.array(["good", None, "   ", "x" * 50, "fine"], pa.large_string())})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=2)
    bin_table = pa.table({"text": pa.array([b"ok", b"\xff\xfe", None], pa.binary())})
    pq.write_table(bin_table, tmp_path / "b.parquet")
    files = inputs([tmp_path / "t.parquet", tmp_path / "b.parquet"], tmp_path)
    rows = read_all(READERS["parquet"](source=SRC, max_doc_bytes=20), files)
    assert [(r["origin"], r["text"], r["_reject_reason"]) for r in rows] == [
        ("b.parquet#0", "ok", None), ("b.parquet#1", None, "read:invalid_utf8"),
        ("b.parquet#2", None, "read:missing_text"),
        ("t.parquet#0", "good", None), ("t.parquet#1", None, "read:missing_text"),
        ("t.parquet#2", None, "read:empty"), ("t.parquet#3", None, "read:too_large"),
        ("t.parquet#4", "fine", None)]
    assert all(r["_reject_stage"] == "read" for r in rows if r["_reject_reason"])


# ---------------------------------------------------------------------------- text


def test_text_files_books_and_code(shared_dir):
    root = shared_dir / "corpora/books/gutenberg"
    books = inputs(sorted(root.glob("*.txt.gz"))[:12], root)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    code = inputs(sorted((stdlib / "json").glob("*.py")), stdlib)
    files = books + code
    reader = READERS["text"](source=SRC)
    rows = read_all(reader, files)
    assert len(docs(rows)) == len(files)
    for r, f in zip(rows, files):
        data = Path(f.path).read_bytes()
        if f.path.endswith(".gz"):
            data = gzip.decompress(data)
        assert r["text"] == data.decode("utf-8").removeprefix("\ufeff")
        assert r["id"] == S.make_id(SRC, f.rel) and r["origin"] == f.rel
    assert len(reader.plan(files)) == 1
    assert len(reader.plan(files, split_bytes=1)) == len(files)
    assert same_rows(read_all(reader, files, split_bytes=300_000), rows)


def test_split_sizes_cover_the_files(shared_dir):
    root = shared_dir / "corpora/web/warc"
    files = inputs(root.glob("*.warc*"), root)
    for split_bytes in (1000, 100_000, 64 << 20):
        splits = READERS["warc"](source=SRC, options={"records": "conversion"}).plan(files, split_bytes=split_bytes)
        assert sum(s.num_bytes for s in splits) == sum(f.size for f in files)
        assert all(s.num_bytes <= split_bytes for s in splits if len(s.files) > 1)


def test_readers_and_splits_pickle(shared_dir):
    """Ray ships the reader and each split to a worker."""
    root = shared_dir / "corpora/redpajama"
    files = inputs(root.glob("*.jsonl"), root)
    reader = READERS["jsonl"](source=SRC, options={"id_key": "id"})
    splits = reader.plan(files, split_bytes=10_000)
    reader2, splits2 = pickle.loads(pickle.dumps((reader, splits)))
    assert splits2 == splits
    assert same_rows([r for s in splits2 for t in reader2.read(s) for r in t.to_pylist()], read_all(reader, files))


def test_file_names_that_are_not_utf8_keep_recoverable_origins(tmp_path):
    """Issue #29: `\\xff\\xfe.jsonl` and `\\xfe\\xff.jsonl` both became U+FFFD x 6; origins
    percent-encode the undecodable bytes (and `%`), so each names its own file."""
    from urllib.parse import unquote_to_bytes

    from datapipe.spec import reader_for_source

    data = tmp_path / "data"
    data.mkdir()
    names = [b"\xff\xfe.jsonl", b"\xfe\xff.jsonl", b"100% \xe9t\xe9.jsonl", "caf\u00e9.jsonl".encode()]
    for i, name in enumerate(names):
        (data / os.fsdecode(name)).write_text(f'{{"text": "document {i}"}}\n')
    with open(os.path.join(os.fsencode(data), b"\xff.parquet"), "wb") as fh:
        pq.write_table(pa.table({"text": ["a parquet row"]}), fh)
    job = tmp_path / "job.yaml"
    job.write_text("name: t\noutput: out\nsources:\n  - {name: docs, format: jsonl, paths: [data/*.jsonl]}\n"
                   "  - {name: table, format: parquet, paths: [data/*.parquet]}\n"
                   "stages: [{normalize: {}}]\n")
    spec = load_job(job)
    reader = reader_for_source(spec, spec.sources[0])
    rows = [r for split in reader.plan(list(spec.sources[0].files)) for t in reader.read(split) for r in t.to_pylist()]
    by_text = {r["text"]: r["origin"] for r in rows}
    assert len(set(by_text.values())) == 4
    for i, name in enumerate(names):
        origin = by_text[f"document {i}"]
        assert origin.endswith("@0")
        if i == 3:
            assert origin == "caf\u00e9.jsonl@0"            # valid UTF-8 names stay as they are
        else:
            assert unquote_to_bytes(origin[:-2]) == name     # the bytes, recovered
    table = reader_for_source(spec, spec.sources[1])
    [row] = [r for split in table.plan(list(spec.sources[1].files)) for t in table.read(split) for r in t.to_pylist()]
    assert row["origin"] == "%FF.parquet#0"
