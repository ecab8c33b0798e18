"""Licenses of code on real license texts: the installed packages' ``*.dist-info``
license files against their own METADATA, Debian's ``/usr/share/common-licenses``,
SPDX headers of installed sources; the repository join within a batch, the allow-list
filter and the repository metadata filter."""

from __future__ import annotations

import email
import re
from pathlib import Path

import pyarrow as pa
import pytest

from datapipe import schema as S
from datapipe.errors import SpecError
from stages import REGISTRY
from stages.code.license import (LicenseConfig, LicenseFilter, RepoMetaConfig, RepoMetaFilter, allowed,
                                 header_license, license_of_text, normalize)

import attr

SITE = Path(attr.__file__).parent.parent
COMMON = Path("/usr/share/common-licenses")


def code_batch(rows: list[dict]) -> pa.Table:
    n = len(rows)
    b = S.make_batch(source="code", ids=[f"code/{i}" for i in range(n)], texts=[r["text"] for r in rows])
    for col, typ in (("repo", pa.string()), ("path", pa.string()), ("language", pa.string()),
                     ("license", pa.string()), ("stars", pa.int64()), ("forks", pa.int64()),
                     ("archived", pa.bool_())):
        b = b.append_column(col, pa.array([r.get(col) for r in rows], typ))
    return b


def dist_info_labels() -> list[tuple[str, str, Path]]:
    """(package, SPDX id from its METADATA's License-Expression, its license file) for
    every installed package declaring a single license."""
    out = []
    for d in sorted(SITE.glob("*.dist-info")):
        meta = email.message_from_string((d / "METADATA").read_text(encoding="utf-8", errors="replace"))
        label = normalize(meta.get("License-Expression") or "")
        if not label or " " in label:
            continue
        files = sorted(p for p in d.rglob("*") if p.is_file() and re.match(r"(?i)(licen[cs]e|copying)", p.name))
        if files:
            out.append((d.name, label, files[0]))
    return out


def test_registered():
    assert REGISTRY["license"] is LicenseFilter and REGISTRY["repo_meta"] is RepoMetaFilter


def test_installed_packages_license_files_match_their_metadata():
    labelled = dist_info_labels()
    assert len(labelled) >= 20
    got = {name: license_of_text(f.read_text(encoding="utf-8", errors="replace")) for name, _, f in labelled}
    right = [name for name, label, _ in labelled if got[name] == label]
    assert len({label for _, label, _ in labelled}) >= 4  # several licenses, not one
    assert len(right) / len(labelled) >= 0.95, [(n, lab, got[n]) for n, lab, _ in labelled if got[n] != lab]


@pytest.mark.skipif(not COMMON.is_dir(), reason="no /usr/share/common-licenses (Debian base-files) here")
def test_common_license_texts():
    expect = {"Apache-2.0": "Apache-2.0", "GPL-3": "GPL-3.0-only", "GPL-2": "GPL-2.0-only",
              "LGPL-2.1": "LGPL-2.1-only", "LGPL-3": "LGPL-3.0-only", "MPL-2.0": "MPL-2.0", "BSD": "BSD-3-Clause",
              "CC0-1.0": "CC0-1.0"}
    got = {name: license_of_text((COMMON / name).read_text(encoding="utf-8", errors="replace"))
           for name in expect if (COMMON / name).is_file()}
    assert len(got) >= 6
    assert got == {k: expect[k] for k in got}


def test_spdx_headers_and_metadata_names():
    # attrs' sources carry "# SPDX-License-Identifier: MIT"
    src = (SITE / "attr" / "filters.py").read_text(encoding="utf-8")
    assert header_license(src) == "MIT"
    assert header_license("/* SPDX-License-Identifier: GPL-2.0+ */\nint x;") == "GPL-2.0-or-later"
    assert header_license("x = 1\n") is None
    assert [normalize(x) for x in ("apache-2.0", "MIT License", "bsd-3-clause", "mit OR apache-2.0", "no such",
                                   "unknown", None)] == ["Apache-2.0", "MIT", "BSD-3-Clause", "MIT OR Apache-2.0",
                                                         None, None, None]
    allow = frozenset({"MIT", "Apache-2.0"})
    assert allowed("MIT OR GPL-3.0-only", allow) and not allowed("MIT AND GPL-3.0-only", allow)
    assert allowed("Apache-2.0 WITH LLVM-exception", allow)


@pytest.mark.skipif(not (COMMON / "GPL-3").is_file(), reason="no /usr/share/common-licenses/GPL-3 here")
def test_repository_license_joined_to_its_files_and_filtered():
    gpl = (COMMON / "GPL-3").read_text(encoding="utf-8")
    attrs_files = sorted((SITE / "attr").glob("*.py"))[:3]
    plain = (SITE / "attr" / "__init__.py").read_text(encoding="utf-8")
    rows = [
        # a GPL repository: its LICENSE row and a file without a header
        {"repo": "a/gpl", "path": "LICENSE", "text": gpl},
        {"repo": "a/gpl", "path": "src/mod.py", "text": "def f():\n    return 1\n"},
        # attrs: files with SPDX MIT headers, no license file in the batch
        *[{"repo": "b/attrs", "path": f"src/attr/{p.name}", "text": p.read_text(encoding="utf-8")} for p in attrs_files],
        # metadata says Apache-2.0 (The Stack's license column), whatever the text
        {"repo": "c/meta", "path": "x.py", "text": plain, "license": "apache-2.0"},
        {"repo": "c/dual", "path": "y.py", "text": plain, "license": "MIT OR GPL-3.0"},
        # no license anywhere
        {"repo": "d/none", "path": "z.py", "text": "print(1)\n"},
    ]
    out, stats = LicenseFilter().process(code_batch(rows))
    lic = out.column("license").to_pylist()
    src = out.column("license_source").to_pylist()
    reason = out.column(S.REJECT_REASON).to_pylist()
    assert lic[:2] == ["GPL-3.0-only"] * 2 and src[:2] == ["license_file", "repository_file"]
    assert reason[:2] == ["license:not_allowed"] * 2
    k = 2 + len(attrs_files)
    assert [r for r in lic[2:k] if r != "MIT"] == [] and set(src[2:k]) <= {"header", "repository_file"}
    assert reason[2:k] == [None] * len(attrs_files)
    assert (lic[k], src[k], reason[k]) == ("Apache-2.0", "metadata", None)
    assert (lic[k + 1], reason[k + 1]) == ("MIT OR GPL-3.0-only", None)
    assert (lic[k + 2], src[k + 2], reason[k + 2]) == ("unknown", "none", "license:unknown")
    assert stats["code"].dropped == {"license:not_allowed": 2, "license:unknown": 1}
    # unknown is kept only when the user says so
    out, _ = LicenseFilter(LicenseConfig(allow_unknown=True)).process(code_batch(rows))
    assert out.column(S.REJECT_REASON).to_pylist()[k + 2] is None


def test_dual_licensed_repository_is_either_license(tmp_path):
    """Root license files each named for its license (orjson's ``LICENSE-APACHE`` +
    ``LICENSE-MIT``; packaging's ``LICENSE`` pointer + ``LICENSE.APACHE`` + ``LICENSE.BSD``)
    make the repository's license their ``OR`` (what packaging's METADATA declares too), in
    a tree, a tarball and the ``license`` stage's own join; a ``LICENSE-THIRD-PARTY``
    beside a ``LICENSE`` does not (issue #36)."""
    import io
    import sysconfig
    import tarfile

    from datapipe.readers import READERS, InputFile

    orjson = SITE / "orjson-3.13.0.dist-info" / "licenses"
    packaging = SITE / "packaging-26.4.dist-info" / "licenses"
    code = (Path(sysconfig.get_paths()["stdlib"]) / "bisect.py").read_bytes()   # no SPDX header
    trees = tmp_path / "trees"
    repos = {"orjson": {"LICENSE-APACHE": (orjson / "LICENSE-APACHE").read_bytes(),
                        "LICENSE-MIT": (orjson / "LICENSE-MIT").read_bytes()},
             "packaging": {p.name: p.read_bytes() for p in sorted(packaging.iterdir())},
             "bundles": {"LICENSE": (orjson / "LICENSE-MIT").read_bytes(),
                         "LICENSE-THIRD-PARTY": (orjson / "LICENSE-APACHE").read_bytes()}}
    assert sorted(repos["packaging"]) == ["LICENSE", "LICENSE.APACHE", "LICENSE.BSD"]
    for repo, files in repos.items():
        for name, data in {**files, "src/mod.py": code}.items():
            (trees / repo / name).parent.mkdir(parents=True, exist_ok=True)
            (trees / repo / name).write_bytes(data)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in {"src/mod.py": code, **repos["orjson"]}.items():   # license files last
            info = tarfile.TarInfo(f"orjson-3.13.0/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    (tmp_path / "orjson-3.13.0.tar.gz").write_bytes(buf.getvalue())

    def licenses(files, root, **options):
        reader = READERS["code"](source="code", options=options or None, on_error="skip")
        inputs = [InputFile(str(p), str(p.relative_to(root)), p.stat().st_size) for p in files]
        rows = [r for split in reader.plan(inputs, split_bytes=1 << 20) for t in reader.read(split)
                for r in t.to_pylist()]
        return {r["repo"]: r["license"] for r in rows if r["path"] == "src/mod.py"}

    tree_files = sorted(p for p in trees.rglob("*") if p.is_file())
    expect = {"orjson": "Apache-2.0 OR MIT", "packaging": "Apache-2.0 OR BSD-2-Clause", "bundles": "MIT"}
    assert licenses(tree_files, trees, layout="tree", repos="folders") == expect
    assert licenses([tmp_path / "orjson-3.13.0.tar.gz"], tmp_path) == {"orjson-3.13.0": "Apache-2.0 OR MIT"}
    # a table without a license column: the license stage joins the license files of the batch
    rows = [{"repo": repo, "path": name, "text": data.decode()} for repo, files in repos.items()
            for name, data in files.items()] + [{"repo": repo, "path": "src/mod.py", "text": code.decode()}
                                                for repo in repos]
    out, _ = LicenseFilter().process(code_batch(rows))
    got = {r: lic for r, p, lic in zip(out.column("repo").to_pylist(), out.column("path").to_pylist(),
                                       out.column("license").to_pylist()) if p == "src/mod.py"}
    assert got == expect and out.column(S.REJECT_REASON).null_count == out.num_rows


def test_repo_meta_filter():
    rows = [{"repo": "a", "path": "a.py", "text": "x", "stars": 3, "forks": 1, "archived": False},
            {"repo": "b", "path": "b.py", "text": "x", "stars": 50, "forks": 0, "archived": False},
            {"repo": "c", "path": "c.py", "text": "x", "stars": 50, "forks": 9, "archived": True},
            {"repo": "d", "path": "d.py", "text": "x"},
            {"repo": "e", "path": "e.py", "text": "x", "stars": 50, "forks": 9, "archived": False}]
    stage = RepoMetaFilter(RepoMetaConfig(min_stars=10, min_forks=1, drop_archived=True))
    out, stats = stage.process(code_batch(rows))
    assert out.column(S.REJECT_REASON).to_pylist() == ["repo_meta:stars", "repo_meta:forks", "repo_meta:archived",
                                                       None, None]
    assert out.column(S.REJECT_DETAIL).to_pylist()[:2] == ["3", "0"]
    strict = RepoMetaFilter(RepoMetaConfig(min_stars=10, keep_missing=False))
    assert strict.process(code_batch(rows))[0].column(S.REJECT_REASON).to_pylist()[3] == "repo_meta:missing"


def test_config_errors():
    with pytest.raises(SpecError, match="not SPDX ids"):
        LicenseConfig(allow=("Apache 2.0",))
    with pytest.raises(SpecError, match="non-empty list"):
        LicenseConfig(allow=())
    with pytest.raises(SpecError, match="min_stars must be >= 0"):
        RepoMetaConfig(min_stars=-1)
