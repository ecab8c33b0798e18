"""The arxiv reader on inputs an attacker writes (issue #35), each built here in tmp_path.

What a user must see: no byte from outside the declared inputs in any output, every input
(file and bulk-tar member) accounted for as documents or counted rejects with a reason,
time and memory bounded by the budgets, never a traceback (tests run with
DATAPIPE_STRICT_READERS: an unclassified exception fails the test).
"""

from __future__ import annotations

import gzip
import io
import json
import logging
import os
import tarfile
import time
from pathlib import Path

import pytest

from peak_memory import maxrss_mb, rss_mark
from datapipe.errors import CorruptInputError, SpecError
from datapipe.readers import READERS, InputFile
from datapipe.readers.arxiv import MAX_VERSION, BadName, parse_id
from datapipe.readers.base import read_split
from datapipe.readers.inputs import InputLimits

SECRET = "SECRET-arxiv-7d2e-do-not-read"
PAPER = ("\\documentclass{article}\n\\begin{document}\n\\section{Intro}\n"
         "Paper {i} studies things in some detail.\n\\end{document}\n")

pytestmark = pytest.mark.timeout(120)


# ------------------------------------------------------------------ helpers

def _tar(members: list[tuple[str, bytes]] | dict[str, bytes], *, end: bool = True) -> bytes:
    """A plain tar of ``members`` (a list keeps duplicates); ``end=False``: without its
    end-of-archive blocks (a tar cut at a member boundary)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        for name, data in (members.items() if isinstance(members, dict) else members):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            t.addfile(info, io.BytesIO(data))
        body = buf.getvalue()   # headers and data; leaving the block adds the end-of-archive blocks
    return buf.getvalue() if end else body


def _gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def _paper(i: int) -> bytes:
    return PAPER.replace("{i}", str(i)).encode()


def _inputs(root: Path, paths: list[Path] | None = None) -> list[InputFile]:
    """Files as a job lists them: every entry of ``root`` (links and FIFOs included),
    confined to ``root``'s real path."""
    found = paths if paths is not None else sorted(p for p in root.rglob("*") if not p.is_dir() or p.is_symlink())
    real = os.path.realpath(root)
    return [InputFile(str(p), os.path.relpath(p, root), os.path.getsize(p) if p.is_file() else 0, roots=(real,))
            for p in found]


def _read(root: Path, paths: list[Path] | None = None, *, on_error: str = "skip", limits: InputLimits | None = None,
          max_doc_bytes: int = 16 << 20, **options) -> list[dict]:
    reader = READERS["arxiv"](source="arxiv", options=options or None, on_error=on_error,
                              max_doc_bytes=max_doc_bytes, limits=limits)
    return [row for split in reader.plan(_inputs(root, paths)) for t in read_split(reader, split)
            for row in t.to_pylist()]


def _docs(rows: list[dict]) -> dict[str, dict]:
    return {r["source_id"]: r for r in rows if r["_reject_reason"] is None}


def _rejects(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["_reject_reason"] is not None]


def _everything(rows: list[dict]) -> str:
    return "\n".join(str(v) for r in rows for v in r.values() if v is not None)


def _outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.tex").write_text(f"\\section{{Leaked}}\n{SECRET}\n")
    return out


# ------------------------------------------------------------------ 1. a .tex folder

def test_folder_includes_never_leave_the_inputs_nor_block(tmp_path):
    """A sibling linked out of the inputs, a FIFO, absolute and ../ names: none is read or
    waited on; each refused \\input is listed in missing_inputs with the reason, and the
    links/FIFO given as inputs are counted rejects."""
    out = _outside(tmp_path)
    root = tmp_path / "in"
    paper = root / "1712.01076v2"
    paper.mkdir(parents=True)
    (paper / "main.tex").write_text(
        "\\documentclass{article}\n\\begin{document}\n\\section{Intro}\nOwn words.\n"
        "\\input{leak}\n\\input{pipe}\n\\include{ok}\n\\input{dangling}\n"
        f"\\input{{{out}/secret}}\n\\input{{../../outside/secret}}\n\\input{{up}}\n\\end{{document}}\n")
    (paper / "ok.tex").write_text("Included words.\n")
    (paper / "leak.tex").symlink_to(out / "secret.tex")
    (paper / "up.tex").symlink_to(Path("..") / ".." / "outside" / "secret.tex")
    (paper / "dangling.tex").symlink_to(paper / "nowhere.tex")    # inside the inputs, to nothing
    os.mkfifo(paper / "pipe.tex")
    if os.path.exists("/etc/passwd"):
        (paper / "passwd.tex").symlink_to("/etc/passwd")
    t0 = time.perf_counter()
    rows = _read(root)
    assert time.perf_counter() - t0 < 10
    assert SECRET not in _everything(rows) and "root:x:" not in _everything(rows)
    docs = _docs(rows)
    assert list(docs) == ["1712.01076v2"]
    doc = docs["1712.01076v2"]
    assert "Own words." in doc["text"] and "Included words." in doc["text"]
    missing = json.loads(doc["metadata"])["missing_inputs"]
    assert "leak (outside_inputs)" in missing and "up (outside_inputs)" in missing
    assert "pipe (not_regular_file)" in missing and "dangling (dangling_link)" in missing
    assert f"{out}/secret" in missing and "../../outside/secret" in missing   # not paper files: not opened
    by_file = {r["origin"]: r["_reject_reason"] for r in _rejects(rows)}
    assert by_file["1712.01076v2/leak.tex"] == "read:outside_inputs"
    assert by_file["1712.01076v2/up.tex"] == "read:outside_inputs"
    assert by_file["1712.01076v2/pipe.tex"] == "read:not_regular_file"
    assert by_file["1712.01076v2/dangling.tex"] == "read:dangling_link"
    assert by_file["1712.01076v2/ok.tex"] == "read:included_file"
    assert len(rows) == len(_inputs(root))          # every input accounted, once


def test_folder_main_file_alone_still_confined(tmp_path):
    """Given only the main file (a job naming one path), its \\input is still confined:
    the input root is the declared one, not wherever the link leads."""
    out = _outside(tmp_path)
    root = tmp_path / "in"
    root.mkdir()
    (root / "main.tex").write_text("\\documentclass{article}\n\\section{A}\nText.\n\\input{leak}\n")
    (root / "leak.tex").symlink_to(out / "secret.tex")
    rows = _read(root, [root / "main.tex"])
    assert SECRET not in _everything(rows)
    assert json.loads(_docs(rows)["main"]["metadata"])["missing_inputs"] == ["leak (outside_inputs)"]


def test_giant_sibling_is_read_only_up_to_the_budget(tmp_path):
    """A 1 GiB (sparse) sibling named by \\input: read no further than the expansion
    budget; the paper is read:expansion_limit, the giant file itself read:too_large."""
    root = tmp_path / "in"
    root.mkdir()
    (root / "main.tex").write_text("\\documentclass{article}\n\\section{A}\nText.\n\\input{big}\n")
    with open(root / "big.tex", "wb") as fh:
        fh.truncate(1 << 30)
    before = rss_mark()
    t0 = time.perf_counter()
    rows = _read(root)
    took = time.perf_counter() - t0
    grew = maxrss_mb() - before
    reasons = {r["origin"]: r["_reject_reason"] for r in rows}
    assert reasons == {"main.tex": "read:expansion_limit", "big.tex": "read:too_large"}
    assert grew < 200, f"peak RSS grew by {grew:.0f} MB"
    assert took < 10


# ------------------------------------------------------------------ 2. truncated bulk tars

def _bulk(n: int = 12) -> tuple[bytes, list[tarfile.TarInfo]]:
    data = _tar({f"1712/1712.{i:05d}v1.gz": _gz(_paper(i) + os.urandom(600).hex().encode()) for i in range(n)})
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        return data, t.getmembers()


@pytest.mark.parametrize("cut", [0.3, 0.5, 0.77])
def test_truncated_bulk_tar_keeps_what_was_read_and_says_so(cut, tmp_path):
    data, members = _bulk()
    root = tmp_path / "in"
    root.mkdir()
    whole = root / "arXiv_src_1712_001.tar"
    whole.write_bytes(data)
    full = _docs(_read(root))
    assert len(full) == len(members) and not _rejects(_read(root))
    n = int(len(data) * cut)
    whole.write_bytes(data[:n])
    rows = _read(root)
    docs = _docs(rows)
    expect = [m for m in members if m.offset_data + m.size <= n]
    assert len(docs) == len(expect) and all(full[k]["text"] == d["text"] for k, d in docs.items())
    bad = _rejects(rows)
    assert [(r["origin"], r["_reject_reason"]) for r in bad] == [("arXiv_src_1712_001.tar", "read:truncated")]
    with pytest.raises(CorruptInputError) as info:
        _read(root, on_error="fail")
    assert "arXiv_src_1712_001.tar" in str(info.value) and "\n" not in str(info.value)


def test_gzipped_bulk_tar_cut_is_noticed(tmp_path):
    """A bulk tar that is really gzip: the gzip trailer is checked too."""
    data, _ = _bulk(6)
    root = tmp_path / "in"
    root.mkdir()
    gz = _gz(data)
    (root / "arXiv_src_1712_002.tar").write_bytes(gz[: len(gz) * 3 // 4])
    rows = _read(root)
    # the decompressor's early end inside tar_members reads as corrupt_archive
    assert [(r["origin"], r["_reject_reason"]) for r in _rejects(rows)] in (
        [("arXiv_src_1712_002.tar", f"read:{x}")] for x in ("truncated", "truncated_gzip", "corrupt_archive"))
    assert len(_docs(rows)) < 6


def test_per_paper_archives_are_integrity_checked(tmp_path):
    """A paper's .gz holding a tar cut at a member boundary (no end blocks), a gzip with a
    bad CRC, a cut gzip: each that paper's read:bad_archive; the others are read."""
    inner = {"main.tex": _paper(1), "sec.tex": b"more\n"}
    bad_crc = bytearray(_gz(_paper(2)))
    bad_crc[-8] ^= 0xFF
    root = tmp_path / "in"
    root.mkdir()
    (root / "arXiv_src_1712_003.tar").write_bytes(_tar({
        "1712/1712.00001v1.gz": _gz(_tar(inner, end=False)),
        "1712/1712.00002v1.gz": bytes(bad_crc),
        "1712/1712.00003v1.gz": _gz(_paper(3))[:-6],
        "1712/1712.00004v1.gz": _gz(_tar(inner)),
    }))
    rows = _read(root)
    reasons = {r["source_id"]: r["_reject_reason"] for r in rows}
    assert reasons == {"1712.00001v1": "read:bad_archive", "1712.00002v1": "read:bad_archive",
                       "1712.00003v1": "read:bad_archive", "1712.00004v1": None}
    assert "truncated" in next(r for r in rows if r["source_id"] == "1712.00001v1")["_reject_detail"]


# ------------------------------------------------------------------ 3. metadata_file

def test_metadata_file_bad_lines_are_skipped_and_counted(tmp_path, caplog):
    root = tmp_path / "in"
    root.mkdir()
    (root / "arXiv_src_1712_004.tar").write_bytes(_tar({f"1712/1712.{i:05d}v1.gz": _gz(_paper(i)) for i in range(3)}))
    side = tmp_path / "side"          # a side input outside the inputs: read through its own folder
    side.mkdir()
    meta = side / "meta.jsonl"
    meta.write_bytes(b"\n".join([
        json.dumps({"id": "1712.00000", "categories": "cs.LG"}).encode(),
        b"this is not json",
        b"[1, 2, 3]",
        json.dumps({"id": 1712.00001, "categories": "x"}).encode(),
        json.dumps({"id": "1712.00001", "categories": ["a", "b"]}).encode(),
        b"[" * 100_000,
        b"\xff\xfe not utf-8",
        json.dumps({"id": "1712.00002", "categories": "math.AG"}).encode(),
    ]) + b"\n")
    with caplog.at_level(logging.WARNING, logger="datapipe.readers.arxiv"):
        rows = _read(root, metadata_file=str(meta))
    cats = {k: json.loads(d["metadata"])["categories"] for k, d in _docs(rows).items()}
    assert cats == {"1712.00000v1": "cs.LG", "1712.00001v1": None, "1712.00002v1": "math.AG"}
    assert any("6 line(s) skipped" in r.getMessage() and "line 2" in r.getMessage() for r in caplog.records)


def test_metadata_file_link_out_or_fifo_is_a_spec_error(tmp_path):
    out = _outside(tmp_path)
    side = tmp_path / "side"
    side.mkdir()
    (side / "meta.jsonl").symlink_to(out / "secret.tex")
    with pytest.raises(SpecError, match="outside the declared inputs"):
        READERS["arxiv"](source="arxiv", options={"metadata_file": str(side / "meta.jsonl")})
    os.mkfifo(side / "pipe.jsonl")
    t0 = time.perf_counter()
    with pytest.raises(SpecError, match="not a regular file"):
        READERS["arxiv"](source="arxiv", options={"metadata_file": str(side / "pipe.jsonl")})
    assert time.perf_counter() - t0 < 5


def test_metadata_file_swapped_for_a_link_after_validation_is_not_read(tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    (root / "arXiv_src_1712_005.tar").write_bytes(_tar({"1712/1712.00001v1.gz": _gz(_paper(1))}))
    out = _outside(tmp_path)
    side = tmp_path / "side"
    side.mkdir()
    meta = side / "meta.jsonl"
    meta.write_text(json.dumps({"id": "1712.00001", "categories": "cs"}) + "\n")
    reader = READERS["arxiv"](source="arxiv", options={"metadata_file": str(meta)})
    meta.unlink()
    meta.symlink_to(out / "secret.tex")
    rows = [row for split in reader.plan(_inputs(root)) for t in read_split(reader, split) for row in t.to_pylist()]
    assert SECRET not in _everything(rows)
    assert [r["_reject_reason"] for r in rows] == ["read:outside_inputs"]
    assert "metadata_file" in rows[0]["_reject_detail"]


# ------------------------------------------------------------------ 4. names

def test_version_past_int32_is_a_bad_name(tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    (root / "arXiv_src_1712_006.tar").write_bytes(_tar({
        "1712/1712.01076v99999999999999999999.gz": _gz(_paper(1)),
        f"1712/1712.01077v{MAX_VERSION + 1}.gz": _gz(_paper(2)),
        f"1712/1712.01078v{MAX_VERSION}.gz": _gz(_paper(3)),
    }))
    (root / "1712.01079v99999999999999999999.gz").write_bytes(_gz(_paper(4)))
    rows = _read(root)
    reasons = sorted((r["origin"], r["_reject_reason"]) for r in rows)
    assert reasons == [("1712.01079v99999999999999999999.gz", "read:bad_name"),
                       ("arXiv_src_1712_006.tar!1712/1712.01076v99999999999999999999.gz", "read:bad_name"),
                       ("arXiv_src_1712_006.tar!1712/1712.01077v2147483648.gz", "read:bad_name"),
                       ("arXiv_src_1712_006.tar!1712/1712.01078v2147483647.gz", None)]
    assert all(json.loads(d["metadata"])["version"] <= MAX_VERSION for d in _docs(rows).values())
    with pytest.raises(BadName):
        parse_id("1712.01076v99999999999999999999.gz")


@pytest.mark.parametrize("name", ["a" * 40_000, "1" * 40_000, "a-" * 20_000, "hep-ex" * 6_000 + "0408102",
                                  "1712.0" * 7_000, "x/" * 20_000 + "1712.01076v2.gz", "v1" * 20_000,
                                  "a" * 39_990 + "0408102v3.gz"])
def test_long_names_parse_in_linear_time(name):
    t0 = time.perf_counter()
    parse_id(name)
    assert time.perf_counter() - t0 < 0.1


def test_long_member_names_in_a_bulk_tar(tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    long_id = "x" * 20_000 + "1712.00009v1.gz"
    (root / "arXiv_src_1712_007.tar").write_bytes(_tar({"a" * 20_000: b"junk", long_id: _gz(_paper(9)),
                                                        "1712/1712.00001v1.gz": _gz(_paper(1))}))
    t0 = time.perf_counter()
    rows = _read(root)
    assert time.perf_counter() - t0 < 2
    assert set(_docs(rows)) == {"1712.00009v1", "1712.00001v1"}
    assert [r["_reject_reason"] for r in _rejects(rows)] == ["read:not_a_paper"]
    assert max(len(r["origin"]) for r in rows) < 1200                       # a long name's locator is bounded
    assert len({r["origin"] for r in rows}) == 3


# ------------------------------------------------------------------ 5. expansion bombs

def _fanout(depth: int = 10, ways: int = 5) -> dict[str, bytes]:
    """a0 includes a1 ``ways`` times, a1 includes a2 ... (no cycle): ways**depth copies."""
    files = {"main.tex": b"\\documentclass{article}\n\\begin{document}\n\\section{A}\n\\input{a0}\n\\end{document}\n"}
    for k in range(depth):
        files[f"a{k}.tex"] = f"\\input{{a{k + 1}}}".encode() * ways
    files[f"a{depth}.tex"] = b"leaf words here "
    return files


SELF_BOMB = (b"\\documentclass{article}\\begin{document}\\section{A}x"
             + b"\\input{m}" * 5 + b"\\end{document}")
DEF_BOMB = (b"\\documentclass{article}\n\\def\\a{" + b"\\a" * 350 + b"}\n\\begin{document}\n\\section{A}\n\\a\n"
            b"\\end{document}\n")


@pytest.mark.parametrize("limits", [None, InputLimits(expanded_bytes=20_000)], ids=["defaults", "small_budget"])
def test_include_bombs_stop_at_the_budget(limits, tmp_path):
    root = tmp_path / "in"
    folder = root / "1712.00001v1"
    folder.mkdir(parents=True)
    (folder / "m.tex").write_bytes(SELF_BOMB)            # \input of itself, five ways
    bulk = {"1712/1712.00002v1.gz": _gz(_tar(_fanout())),            # five ways, ten deep, no cycle
            "1712/1712.00003v1.gz": _gz(_tar(_fanout(depth=6, ways=4) | {"a6.tex": b"L" * 5000}))}
    (root / "arXiv_src_1712_008.tar").write_bytes(_tar(bulk))
    t0 = time.perf_counter()
    rows = _read(root, limits=limits)
    took = time.perf_counter() - t0
    assert took < 2, f"{took:.2f} s"
    by_id = {r["source_id"]: r for r in rows}
    selfref = by_id["1712.00001v1"]
    assert selfref["_reject_reason"] is None and len(selfref["text"]) < 100
    assert json.loads(selfref["metadata"])["missing_inputs"] == ["m (cycle)"] * 5
    assert by_id["1712.00002v1"]["_reject_reason"] == "read:expansion_limit"
    assert by_id["1712.00003v1"]["_reject_reason"] == "read:expansion_limit"   # 4**6 * 5000 bytes
    assert max(len(r["text"] or "") for r in rows) <= (limits.expanded_bytes if limits else 16 << 20)


@pytest.mark.parametrize("limits", [None, InputLimits(expanded_bytes=20_000)], ids=["defaults", "small_budget"])
def test_macro_bomb_stops_at_the_budget(limits, tmp_path):
    assert len(DEF_BOMB) < 800
    root = tmp_path / "in"
    root.mkdir()
    (root / "arXiv_src_1712_009.tar").write_bytes(_tar({"1712/1712.00001v1.gz": _gz(DEF_BOMB),
                                                        "1712/1712.00002v1.gz": _gz(_paper(2))}))
    before = rss_mark()
    t0 = time.perf_counter()
    rows = _read(root, limits=limits)
    took = time.perf_counter() - t0
    assert took < 2, f"{took:.2f} s"
    assert maxrss_mb() - before < 300
    reasons = {r["source_id"]: r["_reject_reason"] for r in rows}
    assert reasons == {"1712.00001v1": "read:expansion_limit", "1712.00002v1": None}


def test_long_missing_input_names_are_bounded(tmp_path):
    """A long \\input name reached 4**6 times through a fan-out: 1 KB each is listed cut to
    300 characters; 100 KB each is scanned text past the budget (read:expansion_limit)."""
    root = tmp_path / "in"
    root.mkdir()
    for n, size in ((1, 1000), (2, 100_000)):
        files = _fanout(depth=6, ways=4) | {"a6.tex": b"\\input{" + b"n" * size + b"}"}
        (root / f"1712.0000{n}v1.gz").write_bytes(_gz(_tar(files)))
    before = rss_mark()
    t0 = time.perf_counter()
    rows = _read(root)
    assert time.perf_counter() - t0 < 2
    missing = json.loads(_docs(rows)["1712.00001v1"]["metadata"])["missing_inputs"]
    assert len(missing) == 4**6 and max(map(len, missing)) <= 303
    assert {r["source_id"]: r["_reject_reason"] for r in rows}["1712.00002v1"] == "read:expansion_limit"
    assert maxrss_mb() - before < 100


def test_macro_argument_bomb_is_checked_before_it_is_built(tmp_path):
    """\\f{<30 KB>} with a body holding #1 a thousand times: 30 MB, refused before the
    string is made."""
    tex = (b"\\documentclass{article}\n\\newcommand{\\f}[1]{" + b"#1" * 1000 + b"}\n\\begin{document}\n"
           b"\\section{A}\n\\f{" + b"y" * 30_000 + b"}\n\\end{document}\n")
    root = tmp_path / "in"
    root.mkdir()
    (root / "1712.00001v1.gz").write_bytes(_gz(tex))
    before = rss_mark()
    rows = _read(root, limits=InputLimits(expanded_bytes=1 << 20))
    assert [r["_reject_reason"] for r in rows] == ["read:expansion_limit"]
    assert maxrss_mb() - before < 25


def test_pathological_cleaning_is_a_timeout(tmp_path):
    """Macro uses whose argument never closes: each scans to the end (quadratic); the
    per-document time budget ends it as read:timeout and the next paper is read."""
    tex = (b"\\documentclass{article}\n\\newcommand{\\f}[1]{x}\n\\begin{document}\n\\section{A}\n"
           + b"\\f{" * 60_000 + b"\n")
    root = tmp_path / "in"
    root.mkdir()
    (root / "arXiv_src_1712_010.tar").write_bytes(_tar({"1712/1712.00001v1.gz": _gz(tex),
                                                        "1712/1712.00002v1.gz": _gz(_paper(2))}))
    t0 = time.perf_counter()
    rows = _read(root, limits=InputLimits(doc_seconds=0.5))
    assert time.perf_counter() - t0 < 5
    reasons = {r["source_id"]: r["_reject_reason"] for r in rows}
    assert reasons == {"1712.00001v1": "read:timeout", "1712.00002v1": None}


# ------------------------------------------------------------------ 6. members that attack

def test_bulk_members_that_attack_are_each_accounted(tmp_path):
    out = _outside(tmp_path)
    latin = ("\\documentclass{article}\n\\begin{document}\n\\section{R\xe9sum\xe9}\nCaf\xe9 na\xefve.\n"
             "\\end{document}\n").encode("latin-1")
    inner_links = io.BytesIO()
    with tarfile.open(fileobj=inner_links, mode="w") as t:
        main = b"\\documentclass{article}\n\\section{A}\nBody.\n\\input{leak}\n\\input{../../x}\n"
        info = tarfile.TarInfo("main.tex")
        info.size = len(main)
        t.addfile(info, io.BytesIO(main))
        link = tarfile.TarInfo("leak.tex")
        link.type, link.linkname = tarfile.SYMTYPE, str(out / "secret.tex")
        t.addfile(link)
        hard = tarfile.TarInfo("x.tex")
        hard.type, hard.linkname = tarfile.LNKTYPE, "/etc/passwd"
        t.addfile(hard)
    members = [
        ("1712/1712.00001v1.gz", b"this is not gzip at all"),             # not gzip
        ("1712/1712.00002v1.gz", b""),                                     # empty member
        ("1712/1712.00003v1.gz", _gz(b"")),                                # gzip of nothing
        ("../../1712.00004v1.gz", _gz(_paper(4))),                         # .. in the name
        ("/abs/1712.00005v1.gz", _gz(_paper(5))),                          # absolute name
        ("1712/1712.00006v1.gz", _gz(_paper(6))),                          # duplicate members
        ("1712/1712.00006v1.gz", _gz(_paper(66))),
        ("1712/1712.00007v1.gz", _gz(latin)),                              # non-UTF-8 LaTeX
        ("1712/1712.00008v1.gz", _gz(inner_links.getvalue())),             # links inside the paper
        ("1712/1712.00009v1.gz", _gz(os.urandom(3000))),                   # gzip of noise
        ("1712/caf\udce9-1712.00010v1.gz", _gz(_paper(10))),               # non-UTF-8 name
        ("1712/notes.txt", b"hello"),                                      # no id
    ]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        sym = tarfile.TarInfo("1712/1712.00011v1.gz")
        sym.type, sym.linkname = tarfile.SYMTYPE, str(out / "secret.tex")
        t.addfile(sym)
        fifo = tarfile.TarInfo("1712/1712.00012v1.gz")
        fifo.type = tarfile.FIFOTYPE
        t.addfile(fifo)
    root = tmp_path / "in"
    root.mkdir()
    (root / "arXiv_src_1712_011.tar").write_bytes(buf.getvalue())
    rows = _read(root)
    assert SECRET not in _everything(rows) and "root:x:" not in _everything(rows)
    assert len(rows) == len(members) + 2                                  # every member accounted, once
    assert len({r["id"] for r in rows}) == len(rows)
    got = {(r["source_id"] or r["origin"].rsplit("!", 1)[-1]): r["_reject_reason"] for r in rows}
    dup = [r for r in rows if r["source_id"] == "1712.00006v1"]
    assert sorted(r["_reject_reason"] or "" for r in dup) == ["", "read:duplicate"]
    assert "Paper 6 " in next(r for r in dup if r["_reject_reason"] is None)["text"]
    assert got["1712.00001v1"] == "read:bad_archive"
    assert got["1712.00002v1"] == "read:empty" and got["1712.00003v1"] == "read:empty"
    assert got["1712.00004v1"] is None and got["1712.00005v1"] is None
    assert got["1712.00007v1"] is None and "Caf\xe9 na\xefve." in _docs(rows)["1712.00007v1"]["text"]
    assert got["1712.00008v1"] is None
    assert json.loads(_docs(rows)["1712.00008v1"]["metadata"])["missing_inputs"] == ["leak", "../../x"]
    assert got["1712.00009v1"] == "read:no_main_file"
    assert got["1712.00010v1"] is None
    assert got["1712/notes.txt"] == "read:not_a_paper"
    assert got["1712/1712.00011v1.gz"] == "read:not_a_paper" and got["1712/1712.00012v1.gz"] == "read:not_a_paper"


def test_empty_and_garbage_bulk_tars(tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    (root / "zeros.tar").write_bytes(b"\x00" * 10240)
    (root / "junk.tar").write_bytes(bytes(range(256)) * 40)
    rows = _read(root)
    assert sorted((r["origin"], r["_reject_reason"]) for r in rows) == [
        ("junk.tar", "read:corrupt_archive"), ("zeros.tar", "read:empty_file")]
