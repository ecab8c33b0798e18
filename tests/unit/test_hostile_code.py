"""The ``code`` reader on inputs an attacker builds (issue #35): links out of the inputs
in every place the reader reaches through (files, folders, ``.git``, ``.gitignore``,
``LICENSE``), special files, cut and damaged archives, zip members it cannot read, a zip
bomb, ``.gitignore`` files that do not parse or would make a backtracking matcher run
for hours, Stack-layout rows of the wrong types, and hostile archive members.

What is asserted is what a user sees: no byte from outside the inputs in any output,
every input accounted for (a document or a reject naming it), the reject reason, the
rows around a bad one kept, a time bound, and for the bomb the peak memory."""

from __future__ import annotations

import io
import json
import lzma
import os
import struct
import subprocess
import sys
import tarfile
import textwrap
import time
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datapipe import fs
from datapipe.errors import CorruptInputError
from datapipe.readers import READERS, InputFile
from datapipe.readers import code as code_reader
from datapipe.readers.base import read_split
from datapipe.readers.inputs import InputLimits

SECRET = "SECRET-code-7d2e-never-read"
MIT = ("MIT License\n\nCopyright (c) 2024 x\n\nPermission is hereby granted, free of charge, to any person "
       "obtaining a copy of this software and associated documentation files (the \"Software\"), to deal in the "
       "Software without restriction. The above copyright notice and this permission notice shall be included in "
       "all copies or substantial portions of the Software.\n")

pytestmark = pytest.mark.timeout(120)


def listed(root: Path) -> list[InputFile]:
    """``root``'s files as a job lists them (a folder link out of the inputs is one
    entry, not walked), confined to ``root``'s real path."""
    real = os.path.realpath(root)
    return [InputFile(p, os.path.relpath(p, root), os.path.getsize(p) if os.path.isfile(p) else 0, roots=(real,))
            for p in fs.expand(str(root), entries=True)]


def walked(root: Path, *extra: str) -> list[InputFile]:
    """A listing that did walk into links (an older lister, or a hand-made file list):
    the reader must refuse what lies behind them itself."""
    real = os.path.realpath(root)
    out = listed(root) + [InputFile(str(root / e), e, 0, roots=(real,)) for e in extra]
    return sorted(out, key=lambda f: f.rel)


def read(files: list[InputFile], *, on_error: str = "skip", max_doc_bytes: int = 16 << 20,
         limits: InputLimits | None = None, **options) -> list[dict]:
    reader = READERS["code"](source="code", options=options or None, on_error=on_error, batch_rows=50,
                             max_doc_bytes=max_doc_bytes, limits=limits)
    return [r for sp in reader.plan(files, split_bytes=1 << 20) for t in read_split(reader, sp) for r in t.to_pylist()]


def docs(rows: list[dict]) -> dict[str, dict]:
    return {r["path"]: r for r in rows if r["_reject_reason"] is None}


def reasons(rows: list[dict]) -> dict[str, str]:
    return {r["origin"]: r["_reject_reason"] for r in rows if r["_reject_reason"] is not None}


def leaked(rows: list[dict], *needles: str) -> bool:
    blob = json.dumps(rows, default=str)
    return any(n in blob for n in (SECRET, *needles))


def outside(tmp_path: Path) -> Path:
    """A folder beside the inputs holding secrets, a repository's .git and a license."""
    out = tmp_path / "outside"
    (out / ".git").mkdir(parents=True)
    (out / "secret.txt").write_text(SECRET + "\n")
    (out / "secret.py").write_text(f"KEY = '{SECRET}'\n")
    (out / "ignore-all").write_text("*.py\n")
    (out / "LICENSE").write_text(MIT)
    return out


def repo(path: Path, files: dict[str, str], *, git: bool = True) -> Path:
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    if git:
        (path / ".git").mkdir(exist_ok=True)
        (path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return path


# ------------------------------------------------------------------ confinement

def test_folder_repositories_beside_a_link_to_etc_read_nothing_of_it(tmp_path):
    """``layout: tree, repos: folders`` (jobs/code.yaml) with ``trees/evil -> /etc`` and
    ``trees/out -> ../outside`` beside a real repository: the links are one reject each
    naming them, whatever lister walked into them, and never opened."""
    outside(tmp_path)
    trees = tmp_path / "trees"
    repo(trees / "real", {"main.py": "print('real')\n", "LICENSE": MIT})
    (trees / "evil").symlink_to("/etc")
    (trees / "out").symlink_to(Path("..") / "outside")
    passwd = Path("/etc/passwd").read_text().splitlines()[0]
    opts = {"layout": "tree", "repos": "folders"}
    t0 = time.perf_counter()
    rows = read(listed(trees), **opts)
    assert reasons(rows) == {"evil": "read:outside_inputs", "out": "read:outside_inputs"}
    assert {r["origin"]: r["_reject_detail"] for r in rows if r["_reject_reason"]}["evil"].startswith("evil ")
    assert docs(rows)["main.py"]["license"] == "MIT" and docs(rows)["main.py"]["repo"] == "real"
    # a listing that went through the links: every file behind them refused by the input layer
    behind = ["evil/passwd", "evil/shadow", "evil/hostname", "out/secret.txt", "out/secret.py", "out/LICENSE"]
    rows = read(walked(trees, *behind), **opts)
    got = reasons(rows)
    assert all(got[b] == "read:outside_inputs" for b in behind), got
    assert not leaked(rows, passwd) and docs(rows)["main.py"]["text"] == "print('real')\n"
    # the repository "out" (a link to a folder with .git and a LICENSE) gets no license from it
    assert {r["license"] for r in rows if r["repo"] == "out"} == {None}
    assert time.perf_counter() - t0 < 20


def test_a_linked_folder_with_git_outside_the_inputs_decides_nothing(tmp_path):
    """Default options, ``tree/link -> ../outside`` where ``outside/`` holds a ``.git``:
    before, ``link`` became a repository whose real path contained the secret, and
    ``outside/secret.txt`` was committed."""
    out = outside(tmp_path)
    tree = repo(tmp_path / "tree", {"a.py": "x = 1\n"}, git=False)
    (tree / "link").symlink_to(Path("..") / out.name)
    for files in (listed(tree), walked(tree, "link/secret.txt", "link/secret.py", "link/.git/HEAD")):
        rows = read(files)
        assert not leaked(rows)
        assert {o for o, r in reasons(rows).items() if r == "read:outside_inputs"} == \
            {f.rel for f in files if f.rel.startswith("link") and not f.rel.startswith("link/.git")}
        assert {r["repo"] for r in rows} == {"tree"}   # not "link": its .git lies outside the inputs


def test_gitignore_and_license_links_out_of_the_inputs_are_not_read(tmp_path):
    out = outside(tmp_path)
    tree = repo(tmp_path / "tree", {"a.py": "x = 1\n", "sub/b.py": "y = 2\n"})
    (tree / ".gitignore").symlink_to(out / "ignore-all")          # would ignore every .py
    (tree / "sub" / ".gitignore").symlink_to("/etc/passwd")
    (tree / "LICENSE").symlink_to(out / "LICENSE")                # would make every file MIT
    rows = read(listed(tree))
    assert set(docs(rows)) == {"a.py", "sub/b.py"}                # nothing applied from outside
    assert {r["license"] for r in rows} == {None}
    assert reasons(rows) == {".gitignore": "read:outside_inputs", "sub/.gitignore": "read:outside_inputs",
                             "LICENSE": "read:outside_inputs"}
    assert not leaked(rows)


def test_a_link_inside_the_inputs_to_another_repository_is_symlink_outside(tmp_path):
    """Inside the declared inputs but out of its own repository: ``read:symlink_outside``
    (the input layer lets it through: it is inside the roots; the reader does not)."""
    root = tmp_path / "repos"
    repo(root / "a", {"a.py": "a = 1\n"})
    repo(root / "b", {"b.py": "b = 2\n", "LICENSE": MIT})
    (root / "a" / "borrowed.py").symlink_to(root / "b" / "b.py")
    (root / "a" / "LICENSE").symlink_to(root / "b" / "LICENSE")
    # every file, links included (a job's listing keeps one path per real file)
    real = os.path.realpath(root)
    files = [InputFile(str(p), p.relative_to(root).as_posix(), p.lstat().st_size, roots=(real,))
             for p in sorted(root.rglob("*")) if p.is_file()]
    rows = read(files, repos="folders")
    got = {r["origin"]: r for r in rows}
    assert got["a/borrowed.py"]["_reject_reason"] == "read:symlink_outside"
    assert got["a/LICENSE"]["_reject_reason"] == "read:symlink_outside"
    assert got["a/a.py"]["license"] is None and got["b/b.py"]["license"] == "MIT"
    assert got["b/b.py"]["_reject_reason"] is None


def test_special_files_in_a_tree_are_refused_without_blocking(tmp_path):
    tree = repo(tmp_path / "tree", {"a.py": "x = 1\n"})
    os.mkfifo(tree / "pipe.py")
    os.mkfifo(tree / ".gitignore")
    (tree / "dangling.py").symlink_to(tree / "gone.py")
    t0 = time.perf_counter()
    rows = read(listed(tree))
    assert time.perf_counter() - t0 < 10
    assert reasons(rows) == {"pipe.py": "read:not_regular_file", ".gitignore": "read:not_regular_file",
                             "dangling.py": "read:dangling_link"}
    assert set(docs(rows)) == {"a.py"}
    with pytest.raises(CorruptInputError, match=r"\.gitignore.*read:not_regular_file"):
        read(listed(tree), on_error="fail")


# ------------------------------------------------------------------ archives cut short

def _files(n: int) -> dict[str, bytes]:
    return {f"proj-1.0/src/m{i:04d}.py": f"def f{i}():\n    return {i}\n".encode() * 20 for i in range(n)}


def _tar(members: dict[str, bytes], mode: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture(params=["one pass", "two passes"])
def passes(request, monkeypatch):
    """A tar up to 32 MiB is read once (its members held while the top folder and license
    are found); a larger one twice. Both ways, on small archives: nothing held."""
    if request.param == "two passes":
        monkeypatch.setattr(code_reader, "_HELD_BYTES", 0)
    return request.param


@pytest.mark.parametrize("suffix,mode,cut", [(".tar.gz", "w:gz", 0.3), (".tar", "w", 0.3), (".tar", "w", 0.77),
                                             (".tar.xz", "w:xz", 0.77), (".tar.bz2", "w:bz2", 0.5)])
def test_a_cut_archive_is_truncated_and_keeps_the_members_before_the_cut(tmp_path, suffix, mode, cut, passes):
    """Before: a .tar.gz of 2,000 files cut at 30% read as 593 documents and no reject,
    even under ``on_error: fail``."""
    members = _files(2000)
    data = _tar(members, mode)
    path = tmp_path / f"proj-1.0{suffix}"
    path.write_bytes(data[: int(len(data) * cut)])
    rows = read(listed(tmp_path))
    kept = docs(rows)
    assert reasons(rows) == {path.name: "read:truncated"}
    assert 0 < len(kept) < 2000 or (suffix == ".tar.bz2" and not kept)   # bz2 gives nothing of a cut block
    for p, r in kept.items():   # every document kept is a whole member
        assert r["text"].encode() == members[f"proj-1.0/{p}"]
    assert len(rows) == len(kept) + 1
    with pytest.raises(CorruptInputError, match=path.name) as info:
        read(listed(tmp_path), on_error="fail")
    assert "read:truncated" in str(info.value) and "\n" not in str(info.value)


def test_a_damaged_compressed_archive_is_a_reject_naming_it(tmp_path):
    data = bytearray(_tar(_files(300), "w:xz"))
    data[len(data) // 2: len(data) // 2 + 64] = b"\xff" * 64
    (tmp_path / "proj.tar.xz").write_bytes(bytes(data))
    rows = read(listed(tmp_path))
    assert reasons(rows)["proj.tar.xz"] in ("read:corrupt_xz", "read:corrupt_archive")


# ------------------------------------------------------------------ zip members

def _patch_zip(data: bytes, name: str, *, flags: int = 0, method: int | None = None) -> bytes:
    """``data`` with member ``name``'s flag bits or compression method rewritten in both
    its local header and its central-directory entry."""
    out = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = z.getinfo(name)
    local = info.header_offset
    # the central entry of `name`: its signature, then its name at +46
    cd = next(i for i in range(len(out)) if out[i:i + 4] == b"PK\x01\x02" and out[i + 46:i + 46 + len(name)] == name.encode())
    for off, flag_at, method_at in ((local, 6, 8), (cd, 8, 10)):
        if flags:
            struct.pack_into("<H", out, off + flag_at, struct.unpack_from("<H", out, off + flag_at)[0] | flags)
        if method is not None:
            struct.pack_into("<H", out, off + method_at, method)
    return bytes(out)


def test_encrypted_and_deflate64_zip_members_are_rejects_and_the_rest_is_read(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name in ("r/a.py", "r/secret.py", "r/d64.py", "r/z.py"):
            z.writestr(name, f"# {name}\nx = 1\n")
    data = _patch_zip(buf.getvalue(), "r/secret.py", flags=0x1)
    data = _patch_zip(data, "r/d64.py", method=9)
    (tmp_path / "r.zip").write_bytes(data)
    rows = read(listed(tmp_path))
    assert reasons(rows) == {"r.zip!r/secret.py": "read:encrypted", "r.zip!r/d64.py": "read:unsupported_compression"}
    assert set(docs(rows)) == {"a.py", "z.py"}


BOMB_READ = textwrap.dedent("""
    import json, os, resource, sys, time
    from datapipe.readers import READERS, InputFile
    from datapipe.readers.base import read_split
    path, group = sys.argv[1], sys.argv[2]
    t0 = time.perf_counter()
    reader = READERS["code"](source="s", options={"group": group})
    f = InputFile(path, os.path.basename(path), os.path.getsize(path), roots=(os.path.dirname(path),))
    n_docs, text_bytes, most_rows, why = 0, 0, 0, []
    for split in reader.plan([f]):
        for table in read_split(reader, split):
            most_rows = max(most_rows, table.num_rows)
            for reason, text in zip(table.column("_reject_reason").to_pylist(), table.column("text").to_pylist()):
                if reason is None:
                    n_docs += 1
                    text_bytes += len(text)
                else:
                    why.append(reason)
    print(json.dumps({"docs": n_docs, "text_bytes": text_bytes, "rejects": why, "most_rows": most_rows,
                      # VmHWM: this process image's own peak (ru_maxrss keeps the forking
                      # parent's high-water mark across exec)
                      "rss_mb": next(int(l.split()[1]) for l in open("/proc/self/status")
                                     if l.startswith("VmHWM")) / 1024,
                      "seconds": time.perf_counter() - t0}))
""")


def test_a_zip_bomb_is_read_in_bounded_memory(tmp_path):
    """A ~1 MB zip of 64 x 15 MB members (before: ~13 GB RSS): batches are cut at 64 MiB
    of text and a grouped repository at its expansion budget. Measured in a fresh
    process, so the peak is the read's own."""
    bomb = tmp_path / "bomb.zip"
    data = b"0" * (15 << 20)
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for i in range(64):
            z.writestr(f"bomb/f{i:02d}.py", data)
    assert bomb.stat().st_size < 1_500_000
    script = tmp_path / "read_bomb.py"
    script.write_text(BOMB_READ)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    for group in ("file", "repository"):
        out = subprocess.run([sys.executable, str(script), str(bomb), group], capture_output=True, text=True, check=False,
                             env=env, timeout=100)
        assert out.returncode == 0, out.stderr[-2000:]
        got = json.loads(out.stdout.strip().splitlines()[-1])
        print(group, got)
        assert got["rss_mb"] < 1024, got
        if group == "file":
            assert got["docs"] == 64 and got["text_bytes"] == 64 * len(data) and got["rejects"] == []
            assert got["most_rows"] <= 5   # 64 MiB of text a batch, not 64 x 15 MB
        else:   # one repository of 960 MB > max_doc_bytes: one reject, its texts let go on the way
            assert got["docs"] == 0 and got["rejects"] == ["read:too_large"]


def test_a_grouped_repository_past_the_expansion_budget_is_one_reject(tmp_path):
    root = tmp_path / "repos"
    repo(root / "big", {f"m{i}.py": "x = 1\n" * 1000 for i in range(10)})   # 60 KB
    repo(root / "small", {"a.py": "a = 1\n"})
    rows = read(listed(root), repos="folders", group="repository", limits=InputLimits(expanded_bytes=20_000))
    by_repo = {r["repo"]: r for r in rows}
    assert by_repo["big"]["_reject_reason"] == "read:expansion_limit" and by_repo["big"]["text"] is None
    assert "10 files" in by_repo["big"]["_reject_detail"]
    assert by_repo["small"]["_reject_reason"] is None and by_repo["small"]["text"] == "a = 1\n"
    rows = read(listed(root), repos="folders", group="repository", max_doc_bytes=20_000)
    assert {r["repo"]: r["_reject_reason"] for r in rows} == {"big": "read:too_large", "small": None}


# ------------------------------------------------------------------ .gitignore

def test_gitignore_that_does_not_parse_or_would_backtrack_is_never_a_crash(tmp_path):
    """``!``, ``\\``, ``[z-a]`` and a 0xFF byte crashed the job; a pattern like
    ``*a*a*a...b`` makes Python's backtracking matcher (the one pathspec uses) run for
    hours on a long name. Bad lines are skipped, the good ones still apply, in linear time."""
    tree = repo(tmp_path / "tree", {"keep.py": "k = 1\n", "debug.log": "log\n", "sub/x.tmp": "t\n"})
    long_name = "a" * 200 + ".py"
    (tree / "deep").mkdir()
    (tree / "deep" / long_name).write_text("deep = 1\n")
    (tree / ".gitignore").write_bytes(b"!\n\\\n[z-a]\n\xff\xfe*.nothing\n*.log\n" + b"*a" * 30 + b"b\n"
                                      + b"**/" + b"*a" * 30 + b"/**\n")
    (tree / "sub" / ".gitignore").write_bytes(b"\xff\n*.tmp\n!\n")
    t0 = time.perf_counter()
    rows = read(listed(tree))
    assert time.perf_counter() - t0 < 10
    # the .gitignore files themselves hold a 0xFF byte: binary, as any such file
    assert reasons(rows) == {"debug.log": "read:gitignored", "sub/x.tmp": "read:gitignored",
                             ".gitignore": "read:binary", "sub/.gitignore": "read:binary"}
    assert set(docs(rows)) == {"keep.py", f"deep/{long_name}"}


def test_gitignore_decisions_match_pathspec_on_ordinary_patterns(tmp_path):
    """The linear-time matcher gives pathspec's own answers (GitIgnoreSpec.check_file)
    on the patterns real repositories use, nested files included."""
    import pathspec

    top = ["*.py[cod]", "build/", "!build/keep.txt", "/dist", "**/node_modules/**", "docs/**/*.tmp", "*.log",
           "!important.log", "foo/bar", "\\#hash", "a?c", "[!x]y.z", "*~", "logs/", "!logs/.gitkeep", "sp ace",
           "*.egg-info/", ".env*", "x/**/y", "**/cache"]
    nested = ["!*.log", "local/", "*.txt"]
    paths = ["m.pyc", "src/m.pyo", "build/x.o", "build/keep.txt", "dist/a", "src/dist/a", "a/node_modules/b/c.js",
             "docs/a/b/c.tmp", "docs/c.tmp", "x.log", "important.log", "sub/x.log", "foo/bar", "a/foo/bar",
             "#hash", "abc", "ay.z", "xy.z", "f.py~", "logs/a", "logs/.gitkeep", "sp ace", "p.egg-info/PKG",
             ".env.local", "x/y", "x/a/b/y", "q/cache/z", "sub/local/f.py", "sub/n.txt", "sub/ok.py", "ok.py"]
    tree = tmp_path / "t"
    repo(tree, {p: "z = 0\n" for p in paths})
    (tree / ".gitignore").write_text("\n".join(top) + "\n")
    (tree / "sub" / ".gitignore").write_text("\n".join(nested) + "\n")
    rows = read(listed(tree))
    got = {r["path"] for r in rows if r["_reject_reason"] == "read:gitignored"}
    spec_top, spec_sub = pathspec.GitIgnoreSpec.from_lines(top), pathspec.GitIgnoreSpec.from_lines(nested)

    def ignored(p: str) -> bool:
        verdict = spec_top.check_file(p).include
        if p.startswith("sub/"):
            v = spec_sub.check_file(p[4:]).include
            verdict = v if v is not None else verdict
        return bool(verdict)

    want = {p for p in paths if ignored(p)} | {p for p in (".gitignore", "sub/.gitignore") if ignored(p)}
    assert got == want and len(want) > 15


# ------------------------------------------------------------------ Stack-layout rows

def test_stack_jsonl_rows_of_the_wrong_shape_are_rejects_and_their_neighbours_kept(tmp_path):
    good = {"content": "print(1)\n", "max_stars_repo_name": "o/r", "max_stars_repo_path": "a.py",
            "max_stars_repo_licenses": ["MIT"], "max_stars_count": 3}
    lines = [json.dumps(good),
             json.dumps(dict(good, content=123, max_stars_repo_path="b.py")),
             json.dumps(dict(good, max_stars_repo_path="c.py", max_stars_count=float("inf"))),   # Infinity
             json.dumps(dict(good, max_stars_repo_path="d.py", max_stars_count=1e23)),
             json.dumps([good]),
             '{"content": "broken',
             json.dumps(dict(good, max_stars_repo_path="e.py", max_stars_repo_licenses=[None, 3, {"a": 1}])),
             json.dumps(dict(good, max_stars_repo_path="f.py", max_stars_repo_name={"a": 1})),
             "[" * 100_000,
             "\udcff\udcfe not utf-8",
             json.dumps(dict(good, max_stars_repo_path="g.py", max_stars_count=float("nan"))),   # NaN: missing
             "",
             json.dumps(dict(good, max_stars_repo_path="z.py"))]
    assert "Infinity" in lines[2]
    (tmp_path / "stack.jsonl").write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
    rows = read(listed(tmp_path))
    got = {r["origin"]: r["_reject_reason"] for r in rows}
    assert got == {"stack.jsonl#0": None, "stack.jsonl#1": "read:bad_row", "stack.jsonl#2": "read:bad_row",
                   "stack.jsonl#3": "read:bad_row", "stack.jsonl#4": "read:bad_row",
                   "stack.jsonl#5": "read:invalid_json", "stack.jsonl#6": "read:bad_license",
                   "stack.jsonl#7": "read:bad_row", "stack.jsonl#8": "read:invalid_json",
                   "stack.jsonl#9": "read:invalid_json", "stack.jsonl#10": None, "stack.jsonl#11": None}
    kept = docs(rows)
    assert kept["a.py"]["license"] == "MIT" and kept["a.py"]["stars"] == 3 and kept["g.py"]["stars"] is None
    details = {r["origin"]: r["_reject_detail"] for r in rows if r["_reject_reason"]}
    assert "int" in details["stack.jsonl#1"] and "does not fit" in details["stack.jsonl#3"]
    assert "NoneType" in details["stack.jsonl#6"] and "None AND 3" not in json.dumps(rows)


def test_a_cut_stack_jsonl_keeps_the_rows_before_the_cut(tmp_path):
    body = "".join(json.dumps({"content": f"x = {i}\n", "repo": "r", "path": f"m{i}.py"}) + "\n" for i in range(500))
    data = lzma.compress(body.encode())
    (tmp_path / "s.jsonl.xz").write_bytes(data[: len(data) * 3 // 4])
    rows = read(listed(tmp_path))
    assert [r["_reject_reason"] for r in rows if r["_reject_reason"]] == ["read:truncated"]
    assert 0 < len(docs(rows)) < 500


def test_stack_parquet_of_the_wrong_types_or_columns(tmp_path):
    pq.write_table(pa.table({"content": [1, 2], "repo": ["r", "r"], "path": ["a.py", "b.py"]}), tmp_path / "ints.parquet")
    pq.write_table(pa.table({"body": ["x"], "repo": ["r"], "path": ["a.py"]}), tmp_path / "nocontent.parquet")
    pq.write_table(pa.table({"content": ["x = 1\n"], "repo": ["r"], "path": ["c.py"],
                             "stars": pa.array([2 ** 62], pa.int64())}), tmp_path / "ok.parquet")
    (tmp_path / "junk.parquet").write_bytes(b"PAR1" + os.urandom(200) + b"PAR1")
    rows = read(listed(tmp_path))
    got = reasons(rows)
    assert got["ints.parquet#0"] == got["ints.parquet#1"] == "read:bad_row"
    assert got["nocontent.parquet"] == "read:missing_column" and got["junk.parquet"] == "read:corrupt_table"
    assert docs(rows)["c.py"]["stars"] == 2 ** 62


# ------------------------------------------------------------------ archive members

def test_hostile_archive_members_are_counted_rejects(tmp_path, passes):
    """Hardlinks, ``..`` and absolute names, duplicates, non-UTF-8 and giant names,
    zero-byte and giant members, a FIFO member: each a counted reject (or an empty file
    one), the good member a document, no traceback."""
    out = outside(tmp_path)
    buf = io.BytesIO()
    big = b"y = 2\n" * 200_000   # 1.2 MB, over max_doc_bytes below
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        def add(name, data=b"x = 1\n", **kw):
            info = tarfile.TarInfo(name)
            for k, v in kw.items():
                setattr(info, k, v)
            info.size = len(data) if info.type == tarfile.REGTYPE else 0
            t.addfile(info, io.BytesIO(data) if info.type == tarfile.REGTYPE else None)
        add("r/ok.py")
        add("r/../../escape.py")
        add("/etc/abs.py")
        add("r/link.py", type=tarfile.SYMTYPE, linkname=str(out / "secret.txt"))
        add("r/hard.py", type=tarfile.LNKTYPE, linkname="/etc/passwd")
        add("r/dup.py", b"first = 1\n")
        add("r/./dup.py", b"second = 2\n")
        add("r/caf\udce9.py", b"cafe = 1\n")
        add("r/fifo", type=tarfile.FIFOTYPE)
        add("r/dev", type=tarfile.CHRTYPE)
        add("r/empty.py", b"")
        add("r/big.py", big)
        add("r/" + "n" * 5000 + ".py")
        add("LICENSE", MIT.encode())   # at the top: no folder is shared by every member
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "attack.tar.gz").write_bytes(buf.getvalue())
    t0 = time.perf_counter()
    rows = read(listed(tmp_path / "in"), max_doc_bytes=1 << 20)
    assert time.perf_counter() - t0 < 10
    by = {r["origin"][:40]: r["_reject_reason"] for r in rows}
    assert len(rows) == 14 and not leaked(rows)
    assert {r["license"] for r in rows} == {"MIT"}   # the license member is found on the first pass
    assert by == {"attack.tar.gz!r/ok.py": None, "attack.tar.gz!r/../../escape.py": "read:unsafe_path",
                  "attack.tar.gz!/etc/abs.py": "read:unsafe_path", "attack.tar.gz!r/link.py": "read:symlink",
                  "attack.tar.gz!r/hard.py": "read:symlink", "attack.tar.gz!r/dup.py": None,
                  "attack.tar.gz!r/./dup.py": "read:duplicate_member", "attack.tar.gz!r/caf%E9.py": None,
                  "attack.tar.gz!r/fifo": "read:not_a_file", "attack.tar.gz!r/dev": "read:not_a_file",
                  "attack.tar.gz!r/empty.py": "read:empty", "attack.tar.gz!r/big.py": "read:too_large",
                  "attack.tar.gz!r/" + "n" * 24: "read:unsafe_path", "attack.tar.gz!LICENSE": None}
    assert docs(rows)["r/dup.py"]["text"] == "first = 1\n"
    assert max(len(r["origin"]) for r in rows) < 400   # a 5,000-character name is shown shortened
