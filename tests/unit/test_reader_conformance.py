"""What a reader promises, checked on every registered reader (built-in and plugin).

"A reader" is defined by this suite: a matrix of hostile inputs, built here at test time,
run against every reader of :func:`datapipe.readers.reader_registry`, asserting for each:

* no byte from outside the declared input roots in any output column;
* every input accounted for: each file gives documents or a reject naming it;
* every reject reason is one docs/readers.md documents ("What a reader promises");
* bounded time (pytest-timeout) and bounded peak memory;
* under ``on_error: fail``, a damaged file is one ``CorruptInputError`` on one line naming it;
* nothing else escapes (tests run with ``DATAPIPE_STRICT_READERS``: a reader's unclassified
  exception is raised, a bug).

A new reader passes this suite unchanged. It is given a valid example of its format from
:data:`EXAMPLES` or, for a format not listed there, from the reader's own
``example()`` classmethod when it has one (``(file name, bytes)``), else a JSONL file
named with its first suffix. Inputs the fuzzing bench (``bench/fuzz_readers.py``) found
are replayed from ``tests/fuzz_cases/<format>/``.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import re
import tarfile
import zipfile
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from peak_memory import maxrss_mb, rss_mark
from datapipe import fs
from datapipe.errors import CorruptInputError
from datapipe.readers import InputFile, reader_registry
from datapipe.readers.base import read_split
from datapipe.readers.inputs import InputLimits

REPO = Path(__file__).resolve().parents[2]
SECRET = "SECRET-8c1f-do-not-read"
REGISTRY = reader_registry()
FORMATS = sorted(REGISTRY)
CASES_DIR = REPO / "tests" / "fuzz_cases"

pytestmark = pytest.mark.timeout(60)


# ------------------------------------------------------------------ examples per format

def _jsonl() -> bytes:
    return b"".join(json.dumps({"id": f"d{i}", "text": f"document number {i} with some words in it"}).encode() + b"\n"
                    for i in range(60))


def _parquet() -> bytes:
    sink = io.BytesIO()
    table = pa.table({"text": [f"row {i} holds a sentence of text" for i in range(200)]})
    pq.write_table(table, sink, row_group_size=50)
    return sink.getvalue()


def _warc() -> bytes:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out = io.BytesIO()
    w = WARCWriter(out, gzip=True)
    for i in range(8):
        body = f"<html><body><p>page {i} " + "words " * 200 + "</p></body></html>"
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        ident = {"WARC-Record-ID": f"<urn:uuid:00000000-0000-0000-0000-{i:012d}>",
                 "WARC-Date": "2026-01-01T00:00:00Z"}   # fixed, so the cuts land where they always do
        w.write_record(w.create_warc_record(f"http://example.com/{i}", "response", warc_headers_dict=ident,
                                            payload=io.BytesIO(body.encode()), http_headers=http))
    return out.getvalue()


def _mediawiki() -> bytes:
    pages = "".join(f"<page><title>Page {i}</title><ns>0</ns><id>{i + 1}</id><revision><id>{100 + i}</id>"
                    f"<text>Article {i} says '''hello''' to the [[world]]. {'More words. ' * 30}</text>"
                    "</revision></page>" for i in range(20))
    return (f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/"><siteinfo><sitename>W</sitename>'
            f"<base>https://w.example/wiki/Main</base></siteinfo>{pages}</mediawiki>").encode()


def _posts() -> bytes:
    rows = []
    for q in range(1, 21):
        rows.append(f'<row Id="{q}" PostTypeId="1" Score="3" Title="Question {q}" '
                    f'Body="&lt;p&gt;How do I do thing {q}? {"context " * 20}&lt;/p&gt;" />')
        rows.append(f'<row Id="{1000 + q}" PostTypeId="2" ParentId="{q}" Score="2" '
                    f'Body="&lt;p&gt;Like this, {q}. {"explanation " * 20}&lt;/p&gt;" />')
    return ('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n' + "\n".join(rows) + "\n</posts>\n").encode()


def _tar(members: dict[str, bytes], mode: str = "w") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode) as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    data = out.getvalue()
    if mode == "w":
        # no record padding after the end-of-archive blocks (as Go's and other writers
        # leave it): a cut anywhere past the last member is then a cut of the archive
        end = len(data.rstrip(b"\0"))
        data = data[: -(-end // 512) * 512 + 1024]
    return data


def _code() -> bytes:
    files = {f"repo-1.0/src/mod{i}.py": (f"def f{i}(x):\n    return x + {i}\n" * 40).encode() for i in range(30)}
    return _tar(files, "w:gz")


def _arxiv() -> bytes:
    members = {}
    for i in range(12):
        tex = ("\\documentclass{article}\n\\begin{document}\n\\section{Intro}\n"
               + f"Paper {i} studies things. " * 80 + "\n\\end{document}\n")
        members[f"1712/1712.{i:05d}v1.gz"] = gzip.compress(tex.encode(), mtime=0)
    return _tar(members)


def _hf() -> bytes:
    return _parquet()


#: format -> (file name relative to the input root, bytes, whether a cut of the file as it
#: is must be noticed: False for formats with no end marker, a plain text file cut anywhere
#: is still a plain text file)
EXAMPLES: dict[str, tuple[str, Callable[[], bytes], bool]] = {
    "jsonl": ("docs.jsonl", _jsonl, False),
    "parquet": ("docs.parquet", _parquet, True),
    "text": ("doc.txt", lambda: ("A plain text document. " * 400).encode(), False),
    "html": ("page.html", lambda: ("<html><body>" + "<p>Paragraph of text.</p>" * 200 + "</body></html>").encode(),
             False),
    "warc": ("crawl.warc.gz", _warc, True),
    "mediawiki": ("wiki.xml", _mediawiki, True),
    "stackexchange": ("Posts.xml", _posts, True),
    "code": ("repo-1.0.tar.gz", _code, True),
    "arxiv": ("arXiv_src_1712_001.tar", _arxiv, True),
    "hf": ("data/train-00000-of-00001.parquet", _hf, True),
}

#: formats whose reader decompresses any file by suffix: each compression's cut is checked too
STREAM_FORMATS = ("jsonl", "text", "html", "mediawiki", "stackexchange")
COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": lambda b: gzip.compress(b, mtime=0),
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
    ".zst": lambda b: zstandard.ZstdCompressor().compress(b),
}


def example(fmt: str) -> tuple[str, bytes, bool]:
    if fmt in EXAMPLES:
        name, make, detect = EXAMPLES[fmt]
        return name, make(), detect
    cls = REGISTRY[fmt]
    own = getattr(cls, "example", None)
    if callable(own):
        name, data = own()
        return name, data, False
    suffix = cls.suffixes[0] if cls.suffixes else ".jsonl"
    return f"docs{suffix}", _jsonl(), False


def documented_reasons() -> set[str]:
    text = "".join((REPO / "docs" / doc).read_text(encoding="utf-8") for doc in ("readers.md", "code.md"))
    return set(re.findall(r"`read:([a-z0-9_]+)`", text))


# ------------------------------------------------------------------ running a reader

def list_inputs(root: Path, paths: list[str] | None = None) -> list[InputFile]:
    """The inputs of ``root`` as a job lists them (links out named, not walked), confined
    to ``root``'s real path."""
    found = fs.expand(str(root), entries=True) if paths is None else paths
    real = os.path.realpath(root)
    out = []
    for p in sorted(found):
        size = os.path.getsize(p) if os.path.isfile(p) else 0
        out.append(InputFile(p, os.path.relpath(p, root), size, roots=(real,)))
    return out


def run(fmt: str, root: Path, *, on_error: str = "skip", limits: InputLimits | None = None,
        options=None) -> list[dict]:
    cls = REGISTRY[fmt]
    reader = cls(source="src", options=options, on_error=on_error, batch_rows=64, max_doc_bytes=1 << 20,
                 limits=limits)
    rows = Rows()
    files = list_inputs(root)
    for split in reader.plan(files, split_bytes=1 << 20):
        rows.planned.update(f.rel for f in split.files)
        for table in read_split(reader, split):
            rows.extend(table.to_pylist())
    rows.listed = {f.rel for f in files}
    return rows


class Rows(list):
    """A reader's rows, with the input files it planned to read (``planned``) among
    those listed (``listed``). A file a reader leaves out of its plan is one its format
    passes over by name (the ``hf`` reader's ``README.md``); every planned file must be
    accounted for."""

    def __init__(self) -> None:
        super().__init__()
        self.planned: set[str] = set()
        self.listed: set[str] = set()

    def accounted(self, name: str) -> bool:
        if not any(name in rel for rel in self.planned):
            return True
        return any(name in (r["origin"] or "") or name in (r["_reject_detail"] or "") for r in self)


def text_of(rows: list[dict]) -> str:
    """Every string and bytes value of every row, joined (what must never hold a secret)."""
    parts = []
    for r in rows:
        for v in r.values():
            if isinstance(v, bytes):
                parts.append(v.decode("utf-8", "replace"))
            elif v is not None:
                parts.append(str(v))
    return "\n".join(parts)


def rejects(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["_reject_reason"] is not None]


def check_promises(rows: list[dict], *, must_name: list[str] = ()) -> None:
    assert SECRET not in text_of(rows), "a byte from outside the inputs reached the output"
    allowed = documented_reasons()
    bad = {r["_reject_reason"] for r in rejects(rows)} - {f"read:{x}" for x in allowed}
    assert not bad, f"reject reasons not documented in docs/readers.md: {sorted(bad)}"
    for name in must_name:
        planned = getattr(rows, "planned", None)
        if planned is not None and not any(name in rel for rel in planned):
            continue   # a name the reader's format passes over (never opened)
        assert any(name in (r["origin"] or "") or name in (r["_reject_detail"] or "") for r in rejects(rows)), \
            f"no reject names {name}: {[(r['origin'], r['_reject_reason']) for r in rejects(rows)]}"


def outside(tmp_path: Path) -> Path:
    """A folder beside the inputs holding secrets (and a .git, as a repository would)."""
    out = tmp_path / "outside"
    (out / ".git").mkdir(parents=True, exist_ok=True)
    for name in ("secret.txt", "secret.jsonl", "secret.tex", "secret.xml", "secret.html", "passwd"):
        (out / name).write_text(json.dumps({"text": SECRET}) + "\n" if name.endswith("jsonl") else SECRET + "\n")
    return out


def with_example(tmp_path: Path, fmt: str) -> tuple[Path, str]:
    root = tmp_path / "in"
    name, data, _ = example(fmt)
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return root, name


# ------------------------------------------------------------------ the matrix

@pytest.mark.parametrize("fmt", FORMATS)
def test_example_reads_cleanly(fmt, tmp_path):
    """The control: the valid example gives documents and no reject."""
    root, _ = with_example(tmp_path, fmt)
    rows = run(fmt, root)
    check_promises(rows)
    assert [r for r in rows if r["_reject_reason"] is None], f"{fmt}: the example gave no document"


@pytest.mark.parametrize("fmt", FORMATS)
def test_links_out_of_the_inputs_are_never_read(fmt, tmp_path):
    root, name = with_example(tmp_path, fmt)
    out = outside(tmp_path)
    suffix = Path(name).name[len(Path(name).name.split(".")[0]):]
    (root / f"leak{suffix}").symlink_to(out / "secret.jsonl")     # a file link named like an input
    (root / "evil").symlink_to(out)                               # a folder link out (repos: folders)
    (root / "abs").symlink_to("/etc")                             # an absolute link out
    (root / f"up{suffix}").symlink_to(Path("..") / "outside" / "passwd")
    rows = run(fmt, root)
    check_promises(rows, must_name=[f"leak{suffix}", "evil", "abs", f"up{suffix}"])
    assert "root:" not in text_of([r for r in rows if r["_reject_reason"] is None])


@pytest.mark.parametrize("fmt", FORMATS)
def test_special_files_are_refused_without_blocking(fmt, tmp_path):
    root, name = with_example(tmp_path, fmt)
    suffix = Path(name).name[len(Path(name).name.split(".")[0]):]
    os.mkfifo(root / f"pipe{suffix}")
    (root / f"dangling{suffix}").symlink_to(tmp_path / "nowhere")
    rows = run(fmt, root)
    check_promises(rows, must_name=[f"pipe{suffix}", f"dangling{suffix}"])
    reasons = {r["_reject_reason"] for r in rejects(rows)}
    assert reasons & {"read:not_regular_file", "read:dangling_link"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_empty_and_garbage_files_are_counted(fmt, tmp_path):
    root, name = with_example(tmp_path, fmt)
    base = Path(name)
    suffix = base.name[len(base.name.split(".")[0]):]
    (root / base.parent / f"empty{suffix}").write_bytes(b"")
    (root / base.parent / f"junk{suffix}").write_bytes(bytes(range(256)) * 40)
    (root / base.parent / f"nul{suffix}").write_bytes(b"\x00" * 5000)
    rows = run(fmt, root)
    check_promises(rows)
    for bad in ("empty", "junk", "nul"):
        assert rows.accounted(f"{bad}{suffix}"), f"{bad}{suffix} is not accounted for"


@pytest.mark.parametrize("fmt", FORMATS)
def test_odd_file_names(fmt, tmp_path):
    root, name = with_example(tmp_path, fmt)
    base = Path(name)
    suffix = base.name[len(base.name.split(".")[0]):]
    data = (root / name).read_bytes()
    odd = os.fsencode(str(root / base.parent)) + b"/caf\xe9-\xff" + suffix.encode()
    with open(odd, "wb") as fh:
        fh.write(data)
    (root / base.parent / ("x" * 200 + suffix)).write_bytes(data)
    rows = run(fmt, root)
    check_promises(rows)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("cut", [0.3, 0.55, 0.77, 0.95])
def test_truncated_file_is_noticed(fmt, cut, tmp_path):
    root, name = with_example(tmp_path, fmt)
    _, data, detect = example(fmt)
    (root / name).write_bytes(data[: int(len(data) * cut)])
    rows = run(fmt, root)
    check_promises(rows)
    if detect:
        assert rejects(rows), f"{fmt}: a file cut at {cut:.0%} passed as complete"
        with pytest.raises(CorruptInputError) as info:
            run(fmt, root, on_error="fail")
        msg = str(info.value)
        assert "\n" not in msg and Path(name).name in msg


@pytest.mark.parametrize("fmt", [f for f in STREAM_FORMATS if f in REGISTRY])
@pytest.mark.parametrize("ext", sorted(COMPRESSORS))
@pytest.mark.parametrize("cut", [0.3, 0.77])
def test_truncated_compressed_stream_is_noticed(fmt, ext, cut, tmp_path):
    root, name = with_example(tmp_path, fmt)
    data = COMPRESSORS[ext]((root / name).read_bytes())
    (root / name).unlink()
    target = root / (name + ext)
    target.write_bytes(data[: int(len(data) * cut)])
    rows = run(fmt, root)
    check_promises(rows, must_name=[target.name])
    assert {r["_reject_reason"] for r in rejects(rows)} & {"read:truncated", f"read:truncated_{_comp(ext)}",
                                                            f"read:corrupt_{_comp(ext)}"}
    with pytest.raises(CorruptInputError) as info:
        run(fmt, root, on_error="fail")
    assert "\n" not in str(info.value) and target.name in str(info.value)


def _comp(ext: str) -> str:
    return {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd"}[ext]


@pytest.mark.parametrize("fmt", FORMATS)
def test_giant_input_stays_inside_the_budget(fmt, tmp_path):
    """A 4 GiB sparse file (and a bomb that decompresses to 256 MiB of zeros) under small
    budgets: refused or cut, in bounded time and memory."""
    root, name = with_example(tmp_path, fmt)
    suffix = Path(name).name[len(Path(name).name.split(".")[0]):]
    with open(root / Path(name).parent / f"giant{suffix}", "wb") as fh:
        fh.truncate(4 << 30)
    zeros = zstandard.ZstdCompressor(level=3).compress(b"\x00" * (256 << 20))
    (root / Path(name).parent / f"bomb{suffix}.zst").write_bytes(zeros)
    before = rss_mark()
    rows = run(fmt, root, limits=InputLimits(file_bytes=64 << 20, member_bytes=8 << 20))
    grew_mb = maxrss_mb() - before
    check_promises(rows, must_name=[f"giant{suffix}"])
    assert grew_mb < 1024, f"peak memory grew by {grew_mb:.0f} MB"


@pytest.mark.parametrize("fmt", FORMATS)
def test_archive_members_that_attack(fmt, tmp_path):
    """Archives handed to every reader (a reader that does not read archives must still
    account for them): ``..`` and absolute names, links, hardlinks, duplicates, non-UTF-8
    names, a zip with an encrypted-flagged member."""
    root, name = with_example(tmp_path, fmt)
    out = outside(tmp_path)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        def add(info_name, data=b"x = 1\n", **kw):
            info = tarfile.TarInfo(info_name)
            for k, v in kw.items():
                setattr(info, k, v)
            info.size = len(data) if info.type == tarfile.REGTYPE else 0
            t.addfile(info, io.BytesIO(data) if info.type == tarfile.REGTYPE else None)
        add("r/../../escape.py")
        add("/abs/path.py")
        add("r/link.py", type=tarfile.SYMTYPE, linkname=str(out / "secret.txt"))
        add("r/hard.py", type=tarfile.LNKTYPE, linkname="/etc/passwd")
        add("r/dup.py")
        add("r/dup.py", b"y = 2\n")
        add("r/caf\udce9.py")
        add("r/fifo", type=tarfile.FIFOTYPE)
    (root / Path(name).parent / "attack.tar.gz").write_bytes(buf.getvalue())
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as z:
        z.writestr("r/ok.py", "print('ok')\n")
        z.writestr("r/../up.py", "print('up')\n")
    raw = bytearray(zbuf.getvalue())
    (root / Path(name).parent / "attack.zip").write_bytes(bytes(raw))
    rows = run(fmt, root)
    check_promises(rows)
    for f in ("attack.tar.gz", "attack.zip"):
        assert rows.accounted(f), f"{f} is not accounted for"


def _replayed() -> list:
    """Stored finds: ``tests/fuzz_cases/<format>/<sha1>__<file name>``."""
    if not CASES_DIR.is_dir():
        return []
    return [pytest.param(d.name, p, id=f"{d.name}/{p.name[:12]}") for d in sorted(CASES_DIR.iterdir())
            if d.name in REGISTRY for p in sorted(d.iterdir()) if "__" in p.name]


@pytest.mark.parametrize("fmt,case", _replayed())
def test_fuzzing_finds_stay_fixed(fmt, case, tmp_path):
    """Inputs that once crashed a reader (stored by bench/fuzz_readers.py), read under the
    promises with the file name the fuzzer gave them."""
    root = tmp_path / "in"
    target = root / case.name.split("__", 1)[1]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(case.read_bytes())
    check_promises(run(fmt, root))


def test_every_registered_reader_is_in_the_matrix():
    """The suite covers what the registry holds (plugins included), nothing less."""
    assert FORMATS == sorted(reader_registry())
    assert set(EXAMPLES) <= set(FORMATS)
