"""The ``code`` reader's tree layout on S3 reads the same rows as on local files: the
repository of a file (the nearest folder with a ``.git``, else the source root) and its
license are found the same way whatever the storage."""

from __future__ import annotations

import shutil
from pathlib import Path

import pathspec

from datapipe import fs
from datapipe.readers import READERS
from datapipe.spec import _resolve_files

# a source root with its own license, a package folder without a .git, and a nested
# checkout (its .git a worktree's file) with a license of its own
FILES = {
    "pkg/__init__.py": b"from .core import run\n",
    "pkg/core.py": b"def run():\n    return 1\n",
    "top.py": b"import pkg\n",
    "vendored/.git": b"gitdir: ../.git/worktrees/vendored\n",
    "vendored/lib.py": b"X = 2\n",
}


def _rows(base: str, root_name: str) -> list[tuple]:
    patterns = [f"{base}/{root_name}/pkg/*.py", f"{base}/{root_name}/top.py", f"{base}/{root_name}/vendored/*.py"]
    files, _ = _resolve_files(patterns, base=Path("/"), where="test")
    reader = READERS["code"](source="code", options={"layout": "tree"})
    return sorted((r["id"], r["repo"], r["path"], r["license"], r["text"])
                  for split in reader.plan(files) for t in reader.read(split) for r in t.to_pylist()
                  if r["_reject_reason"] is None)


def test_tree_repository_and_license_on_s3_match_local(bucket, tmp_path):
    lic = next((Path(pathspec.__file__).parent.parent / f"pathspec-{pathspec.__version__}.dist-info").rglob("LICENSE*"))
    root = tmp_path / "proj"
    for rel, data in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    shutil.copy(lic, root / "LICENSE")
    shutil.copy(lic, root / "vendored" / "LICENSE")
    for p in root.rglob("*"):
        if p.is_file():
            fs.write_bytes(f"{bucket}/proj/{p.relative_to(root).as_posix()}", p.read_bytes())

    local = _rows(str(tmp_path), "proj")
    assert sorted((repo, path, license) for _, repo, path, license, _ in local) == sorted([
        ("proj", "pkg/__init__.py", "MPL-2.0"), ("proj", "pkg/core.py", "MPL-2.0"),
        ("proj", "top.py", "MPL-2.0"), ("vendored", "lib.py", "MPL-2.0")])
    # a folder of the source without a .git on S3 is no repository of its own (a key
    # under the roots that names no object is not a file)
    assert _rows(bucket, "proj") == local
