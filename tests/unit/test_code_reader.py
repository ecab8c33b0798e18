"""The ``code`` reader on real code: an installed package's source tree as a git
checkout, the same files as a tarball, a zip and a Stack-layout Parquet read to the same
documents; binary files, ignored files, links out of the repository and broken archives
become counted rejects naming the file."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import pathspec
import xxhash

from datapipe.errors import CorruptInputError, SpecError
from datapipe.plan import compile_plan
from datapipe.readers import READERS, InputFile
from datapipe.readers.code_lang import detect_language
from datapipe.spec import load_job

SRC = "code"
REPO = "pathspec"


def _inputs(paths, root: Path) -> list[InputFile]:
    return [InputFile(str(p), str(Path(p).relative_to(root)), Path(p).stat().st_size) for p in sorted(paths)]


def _read(files, **options) -> list[dict]:
    on_error = options.pop("on_error", "skip")
    reader = READERS["code"](source=SRC, options=options or None, on_error=on_error)
    return [row for split in reader.plan(files, split_bytes=64 << 10) for t in reader.read(split) for row in t.to_pylist()]


def _docs(rows) -> list[tuple]:
    return sorted((r["id"], r["repo"], r["path"], r["language"], r["size"], r["text"]) for r in rows
                  if r["_reject_reason"] is None)


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, object]:
    """The installed ``pathspec`` package (real Python, several folders) plus a real
    binary (xxhash's compiled module) and its license file: as a tree, a tarball, a zip
    and a Stack-layout Parquet, all from the same bytes."""
    base = tmp_path_factory.mktemp("code")
    tree = base / "tree" / REPO
    shutil.copytree(Path(pathspec.__file__).parent, tree, ignore=shutil.ignore_patterns("__pycache__"))
    binary = next(p for p in Path(xxhash.__file__).parent.iterdir() if p.suffix in (".so", ".pyd"))
    shutil.copy(binary, tree / binary.name)
    lic = next((Path(pathspec.__file__).parent.parent / f"pathspec-{pathspec.__version__}.dist-info").rglob("LICENSE*"))
    shutil.copy(lic, tree / "LICENSE")
    files = sorted(p for p in tree.rglob("*") if p.is_file())
    rels = [p.relative_to(tree).as_posix() for p in files]
    archives = base / "archives"
    archives.mkdir()
    with tarfile.open(archives / f"{REPO}.tar.gz", "w:gz") as tar:
        for p, rel in zip(files, rels):
            tar.add(p, arcname=f"{REPO}/{rel}")
    with zipfile.ZipFile(archives / f"{REPO}.zip", "w") as z:
        for p, rel in zip(files, rels):
            z.write(p, arcname=f"{REPO}/{rel}")
    stack = base / "stack"
    stack.mkdir()
    texts = [p.read_bytes().decode("utf-8", "replace") for p in files]
    pq.write_table(pa.table({
        "content": texts, "max_stars_repo_name": [REPO] * len(files), "max_stars_repo_path": rels,
        "max_stars_repo_licenses": [["MPL-2.0"]] * len(files), "max_stars_count": [1200] * len(files),
        "max_forks_count": [100] * len(files), "lang": ["Python"] * len(files)}), stack / "part-0.parquet")
    return {"tree": tree, "files": files, "rels": rels, "binary": binary.name, "archives": archives, "stack": stack}


def test_tree_tarball_zip_and_stack_parquet_read_to_the_same_documents(sources):
    tree = sources["tree"]
    from_tree = _read(_inputs(sources["files"], tree))
    archives = sources["archives"]
    from_tar = _read(_inputs([archives / f"{REPO}.tar.gz"], archives))
    from_zip = _read(_inputs([archives / f"{REPO}.zip"], archives))
    stack = _read(_inputs([sources["stack"] / "part-0.parquet"], sources["stack"]))
    # the binary file is a counted reject naming the file (the Stack row holds it decoded
    # with replacement characters, so it is kept there: not compared)
    empty = {rel for p, rel in zip(sources["files"], sources["rels"]) if not p.read_bytes().strip()}
    assert empty   # the package has empty __init__.py files: counted, not silently gone
    for rows in (from_tree, from_tar, from_zip):
        [bad] = [r for r in rows if r["_reject_reason"] == "read:binary"]
        assert sources["binary"] in bad["_reject_detail"]
        assert {r["path"] for r in rows if r["_reject_reason"] == "read:empty"} == empty
        assert len(rows) == len(sources["files"])
    want = _docs(from_tree)
    assert len(want) == len(sources["files"]) - 1 - len(empty) > 10
    assert _docs(from_tar) == want and _docs(from_zip) == want
    assert [d for d in _docs(stack) if d[2] != sources["binary"]] == want
    by_path = {r["path"]: r for r in from_tree}
    init = by_path["__init__.py"]
    # the repository's license (pathspec's LICENSE: MPL-2.0) on every file, from every layout
    assert init["repo"] == REPO and init["language"] == "Python" and init["license"] == "MPL-2.0"
    for rows in (from_tree, from_tar, from_zip):
        assert {r["license"] for r in rows} == {"MPL-2.0"}
    assert init["text"] == (tree / "__init__.py").read_text(encoding="utf-8")
    assert init["size"] == (tree / "__init__.py").stat().st_size
    assert by_path["LICENSE"]["language"] == "Text"
    assert any("/" in p for p in by_path)                       # nested folders keep their paths
    s = next(r for r in stack if r["path"] == "__init__.py")    # the Stack layout's metadata is kept
    assert (s["license"], s["stars"], s["forks"], s["archived"]) == ("MPL-2.0", 1200, 100, None)


def test_git_checkout_skips_git_and_ignored_files_and_links_out(sources, tmp_path):
    repo = tmp_path / "work" / REPO
    shutil.copytree(sources["tree"], repo)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("*.so\nbuild/\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.py").write_text("x = 1\n")
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "real files"], check=True)
    secret = tmp_path / "outside.txt"
    secret.write_text("never read\n")
    os.symlink(secret, repo / "leak.txt")
    files = [p for p in sorted((tmp_path / "work").rglob("*")) if p.is_file()]
    assert any(".git" in p.parts for p in files)
    rows = _read(_inputs(files, tmp_path / "work" / REPO))
    reasons = {r["path"]: r["_reject_reason"] for r in rows}
    assert not any(".git/" in (r["path"] or "") for r in rows)
    assert reasons[sources["binary"]] == "read:gitignored" and reasons["build/out.py"] == "read:gitignored"
    leak = next(r for r in rows if r["path"] == "leak.txt")
    # a link out of the declared inputs: the input layer refuses it, naming the link
    assert leak["_reject_reason"] == "read:outside_inputs" and "leak.txt" in leak["_reject_detail"]
    assert "never read" not in json.dumps(rows, default=str)
    assert reasons["__init__.py"] is None and {r["repo"] for r in rows} == {REPO}
    without = {r["path"]: r["_reject_reason"] for r in _read(_inputs(files, tmp_path / "work" / REPO),
                                                              gitignore=False)}
    assert without["build/out.py"] is None


def test_group_repository_and_language_allow_list(sources):
    files = _inputs(sources["files"], sources["tree"])
    [doc, *rejects] = _read(files, group="repository", order="path", header="# file: {path}\n")
    assert {r["_reject_reason"] for r in rejects} == {"read:binary", "read:empty"}
    kept = sorted(set(sources["rels"]) - {r["path"] for r in rejects})
    assert doc["repo"] == REPO and doc["path"] is None and doc["language"] == "Python"
    assert [line[len("# file: "):] for line in doc["text"].splitlines() if line.startswith("# file: ")] == kept
    # a Stack table of two repositories: one document each, the same text as the tree's
    two = pq.read_table(sources["stack"] / "part-0.parquet").to_pylist()
    two = two + [dict(r, max_stars_repo_name="fork") for r in two]
    (sources["stack"].parent / "two").mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_pylist(two), sources["stack"].parent / "two" / "t.parquet")
    docs = [r for r in _read(_inputs([sources["stack"].parent / "two" / "t.parquet"], sources["stack"].parent / "two"),
                                group="repository", order="path", header="# file: {path}\n")
            if r["_reject_reason"] is None]
    assert [d["repo"] for d in docs] == [REPO, "fork"] and docs[0]["text"] == docs[1]["text"]
    assert docs[0]["text"] == doc["text"] and docs[0]["license"] == "MPL-2.0"
    py = _read(files, languages=["Python"])
    assert {r["_reject_reason"] for r in py if r["path"] == "LICENSE"} == {"read:language"}
    assert all(r["language"] == "Python" for r in py if r["_reject_reason"] is None)
    with pytest.raises(SpecError, match="unknown language.*Pyhton"):
        READERS["code"](source=SRC, options={"languages": ["Pyhton"]})


def test_broken_archives_are_rejects_or_errors_naming_the_file(sources, tmp_path):
    data = (sources["archives"] / f"{REPO}.tar.gz").read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: len(data) // 2])
    bad_zip = tmp_path / "bad.zip"
    bad_zip.write_bytes(b"PK\x03\x04 not a zip")
    rows = _read(_inputs([cut, bad_zip], tmp_path))
    reasons = {r["origin"]: r["_reject_reason"] for r in rows if r["origin"] in ("cut.tar.gz", "bad.zip")}
    assert reasons == {"cut.tar.gz": "read:truncated", "bad.zip": "read:corrupt_archive"}
    with pytest.raises(CorruptInputError, match="cut.tar.gz"):
        _read(_inputs([cut], tmp_path), on_error="fail")


def test_unsafe_members_are_rejects(tmp_path):
    buf = tmp_path / "evil.tar"
    with tarfile.open(buf, "w") as tar:
        for name, data in (("repo/ok.py", b"print('ok')\n"), ("repo/../../etc/passwd", b"root\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("repo/link")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    rows = {r["origin"]: r for r in _read(_inputs([buf], tmp_path))}
    assert rows["evil.tar!repo/ok.py"]["_reject_reason"] is None
    assert rows["evil.tar!repo/../../etc/passwd"]["_reject_reason"] == "read:unsafe_path"
    assert rows["evil.tar!repo/link"]["_reject_reason"] == "read:symlink"


def test_language_of_real_files():
    include = Path(sysconfig.get_paths()["include"])
    arrow = Path(pa.__file__).parent / "include" / "parquet" / "file_writer.h"
    assert detect_language(str(include / "Python.h"), (include / "Python.h").read_text()) == "C"
    assert detect_language(str(arrow), arrow.read_text()) == "C++"
    assert detect_language("a/Makefile") == "Makefile" and detect_language("x/CMakeLists.txt") == "CMake"
    assert detect_language("tool", "#!/usr/bin/env python3\nprint(1)\n") == "Python"
    assert detect_language("Foo.h", "#import <Foundation/Foundation.h>\n@interface Foo\n@end\n") == "Objective-C"
    assert detect_language("f.m", "function y = f(x)\n  y = x + 1;\nend\n") == "MATLAB"
    assert detect_language("f.pl", "parent(tom, bob).\nancestor(X, Y) :- parent(X, Y).\n") == "Prolog"
    assert detect_language("f.pl", "use strict;\nmy $x = 1;\n") == "Perl"
    assert detect_language("blob.bin") is None


def test_a_job_source_carries_the_code_columns(sources, tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(f"name: c\noutput: {tmp_path / 'out'}\nsources:\n  - name: code\n    format: code\n"
                   f"    paths: [{sources['archives'] / (REPO + '.tar.gz')}]\n    options: {{languages: [Python]}}\n"
                   "stages: [{normalize: {}}]\n")
    plan = compile_plan(load_job(job))
    names = plan.phases[0].input_schema.names
    assert {"repo", "path", "language", "size", "license", "stars", "forks", "archived"} <= set(names)
    assert plan.readers["code"].options.languages == ("Python",)


def test_a_tree_split_holding_only_data_files_is_still_read_as_a_tree(sources, tmp_path):
    repo = tmp_path / REPO
    shutil.copytree(sources["tree"], repo)
    (repo / "fixtures").mkdir()
    (repo / "fixtures" / "cases.jsonl").write_text('{"pattern": "*.py"}\n')
    files = _inputs([p for p in repo.rglob("*") if p.is_file()], repo)
    reader = READERS["code"](source=SRC)
    splits = reader.plan(files, split_bytes=1024)
    assert any(all(f.rel.endswith(".jsonl") for f in s.files) for s in splits)
    rows = [r for s in splits for t in reader.read(s) for r in t.to_pylist()]
    [case] = [r for r in rows if r["path"] == "fixtures/cases.jsonl"]
    assert case["repo"] == REPO and case["language"] == "JSON" and case["text"] == '{"pattern": "*.py"}\n'


def test_repository_license_reaches_files_in_other_splits_and_batches(sources, tmp_path):
    """A repository's root LICENSE and its other files read in different splits and
    batches: every file still gets the license, and the ``license`` stage, fed one
    batch at a time, keeps the MIT repository's files and drops the MPL one's as
    ``not_allowed`` (none as ``unknown``)."""
    import attr

    from datapipe import schema as S
    from stages.code.license import LicenseFilter

    root = tmp_path / "repos"
    shutil.copytree(sources["tree"], root / REPO)   # MPL-2.0
    attrs_src = Path(attr.__file__).parent
    shutil.copytree(attrs_src, root / "attrs" / "src" / "attr", ignore=shutil.ignore_patterns("__pycache__"))
    mit = next((attrs_src.parent / f"attrs-{attr.__version__}.dist-info").rglob("LICENSE*"))
    shutil.copy(mit, root / "attrs" / "LICENSE")
    (root / REPO / sources["binary"]).unlink()
    files = _inputs([p for p in root.rglob("*") if p.is_file()], root)
    reader = READERS["code"](source=SRC, options={"repos": "folders"}, batch_rows=4)
    splits = reader.plan(files, split_bytes=8 << 10)
    split_of = {f.rel: k for k, sp in enumerate(splits) for f in sp.files}
    for repo in ("attrs", REPO):   # the license file and most files of each repository: other splits
        others = [k for rel, k in split_of.items() if rel.startswith(repo + "/") and rel != f"{repo}/LICENSE"]
        assert sum(k != split_of[f"{repo}/LICENSE"] for k in others) > len(others) / 2
    want = {"attrs": "MIT", REPO: "MPL-2.0"}
    stage = LicenseFilter()
    seen = 0
    for sp in splits:
        for batch in reader.read(sp):
            assert batch.num_rows <= 4
            out, _ = stage.process(batch)
            for r in out.to_pylist():
                if r[S.REJECT_REASON] is not None and r[S.REJECT_REASON].startswith("read:"):
                    continue
                seen += 1
                assert r["license"] == want[r["repo"]], r["path"]
                if r["repo"] == "attrs":
                    assert r[S.REJECT_REASON] is None
                else:
                    assert (r[S.REJECT_REASON], r[S.REJECT_DETAIL]) == ("license:not_allowed", "MPL-2.0")
    assert seen == len(files) - sum(1 for f in files if Path(f.path).stat().st_size == 0)
    # a tarball whose LICENSE is its last member, read 4 rows a batch
    tar_path = tmp_path / "attrs-src.tar.gz"
    with tarfile.open(tar_path, "w:gz") as tar:
        for p in sorted((root / "attrs" / "src").rglob("*.py")):
            tar.add(p, arcname=f"attrs-src/{p.relative_to(root / 'attrs').as_posix()}")
        tar.add(root / "attrs" / "LICENSE", arcname="attrs-src/LICENSE")
    reader = READERS["code"](source=SRC, batch_rows=4)
    rows = [r for sp in reader.plan(_inputs([tar_path], tmp_path)) for t in reader.read(sp) for r in t.to_pylist()]
    assert len(rows) > 8 and {r["license"] for r in rows} == {"MIT"}
