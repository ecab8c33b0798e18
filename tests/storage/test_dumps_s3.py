"""Compressed dumps read from an object store: a MediaWiki ``.xml.bz2`` and a Stack
Exchange ``Posts.xml.bz2`` on the S3 test server give the same rows as the same files on
local disk (both readers open through the input layer, which decompresses whatever the
storage), and a cut ``.bz2`` on S3 is the file's one ``read:truncated_bz2`` reject
naming it, after the pages read before the cut, as locally (under ``on_error: fail``,
one line naming the object)."""

from __future__ import annotations

import bz2
from collections import Counter
from pathlib import Path

import pytest

from datapipe import fs
from datapipe.errors import CorruptInputError
from datapipe.readers import READERS
from datapipe.spec import _resolve_files

SRC = "src"


def _rows(path: str, reader: str, options: dict | None = None, **kw) -> list[tuple]:
    files, _ = _resolve_files([path], base=Path("/"), where="test")
    r = READERS[reader](source=SRC, options=options or {}, **kw)
    return [(row["id"], row["origin"], row["text"], row["raw"], row["url"], row["source_id"], row["metadata"],
             row["_reject_reason"], row["_reject_detail"])
            for split in r.plan(files) for t in r.read(split) for row in t.to_pylist()]


def _upload(local: Path, uri: str) -> None:
    fs.write_bytes(uri, local.read_bytes())


def test_mediawiki_bz2_dump_on_s3_matches_local(bucket, shared_dir, tmp_path):
    dump = shared_dir / "corpora" / "wiki" / "enwiki-pages-articles-excerpt.xml.bz2"
    local_dir = tmp_path / "wiki"
    local_dir.mkdir()
    (local_dir / dump.name).write_bytes(dump.read_bytes())
    _upload(dump, f"{bucket}/wiki/{dump.name}")

    local = _rows(str(local_dir / dump.name), "mediawiki")
    remote = _rows(f"{bucket}/wiki/{dump.name}", "mediawiki")
    kept = [r for r in local if r[7] is None]
    assert len(kept) > 100 and all(r[2] for r in kept)
    assert remote == local


def test_stackexchange_bz2_posts_on_s3_match_local(bucket, shared_dir, tmp_path):
    posts = shared_dir / "corpora" / "stackexchange" / "coffee.stackexchange" / "Posts.xml"
    site = tmp_path / "coffee.stackexchange"
    site.mkdir()
    (site / "Posts.xml.bz2").write_bytes(bz2.compress(posts.read_bytes()))
    _upload(site / "Posts.xml.bz2", f"{bucket}/coffee.stackexchange/Posts.xml.bz2")

    opts = {"site_url": "https://coffee.stackexchange.com", "metadata": ["Tags"]}
    plain = _rows(str(posts), "stackexchange", opts)
    local = _rows(str(site / "Posts.xml.bz2"), "stackexchange", opts)
    remote = _rows(f"{bucket}/coffee.stackexchange/Posts.xml.bz2", "stackexchange", opts)
    assert sum(r[7] is None for r in local) > 100
    assert remote == local
    # the same documents as the uncompressed file (ids and origins name the file they came from)
    assert [r[2:] for r in local] == [r[2:] for r in plain]


def test_truncated_bz2_dump_on_s3_keeps_pages_and_names_the_file(bucket, shared_dir, tmp_path):
    src = shared_dir / "corpora" / "wiki" / "enwiki-pages-articles-excerpt.xml.bz2"
    cut = tmp_path / "cut.xml.bz2"
    cut.write_bytes(src.read_bytes()[:1_000_000])   # bz2 decodes whole 900 kB blocks: one block is read
    _upload(cut, f"{bucket}/wiki/cut.xml.bz2")

    local = _rows(str(cut), "mediawiki")
    remote = _rows(f"{bucket}/wiki/cut.xml.bz2", "mediawiki")
    assert remote == local
    got = Counter(r[7] for r in remote)
    assert got[None] >= 1 and got["read:truncated_bz2"] == 1
    last = remote[-1]
    assert last[7] == "read:truncated_bz2" and last[1] == "cut.xml.bz2"
    # under on_error: fail the job stops with one line naming the object
    with pytest.raises(CorruptInputError) as exc:
        _rows(f"{bucket}/wiki/cut.xml.bz2", "mediawiki", on_error="fail")
    assert str(exc.value).startswith(f"{bucket}/wiki/cut.xml.bz2: read:truncated_bz2") and "\n" not in str(exc.value)
