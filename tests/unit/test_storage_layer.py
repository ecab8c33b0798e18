"""User data is reached only through the storage layer (:mod:`datapipe.fs`): no module of
the engine, its stages or the trainer calls ``open()``, ``os.replace``/``os.rename`` or
uses ``pyarrow.fs`` itself, so a backend or an option (an S3 endpoint) added to
``datapipe.fs`` reaches every path.

Writes have no exception: every file written whole goes through ``fs.AtomicFile``
(``fs.write_bytes``/``write_text``, ``fs.move_into_place`` for a file a library wrote
by path), every file written as it goes (a log) through ``fs.open_stream``, so the
fsync, the file mode and the clean-up after a failure are decided once. The few
modules that *read* local-only files by path (models a library loads, memory-mapped
shards, host facts under /proc) are listed below, each with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

import datapipe

REPO = Path(datapipe.__file__).parent.parent
PACKAGES = ("datapipe", "stages", "trainer_bridge")

#: module -> why it may read local files by path itself (never write: see the module docstring)
READS = {
    "datapipe/megatron.py": "reads shards through a local path (the loader's local copy, memory-mapped)",
    "stages/heuristics/datatrove_mode.py": "a peer's local word lists, loaded by path",
    "stages/heuristics/c4.py": "bad-words lists: local model data loaded by path",
    "trainer_bridge/memory.py": "reads /proc/meminfo (host facts, not user data)",
    "stages/models/perplexity/train.py": "perplexity cut-offs: a local CSV beside the model, read by path",
    "datapipe/reaper.py": "reads /proc/<pid>/stat to find the Ray processes a driver started (host facts, not user data)",
}


def _open_mode(call: ast.Call) -> str | None:
    """The mode of an ``open(...)`` call: ``"r"`` when none is given, None when it is
    not a constant (then it counts as a write)."""
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None:
        return "r"
    return mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else None


def _is_write(hit: str) -> bool:
    return hit.endswith((" os.replace()", " os.rename()", " write"))


def direct_storage_uses(path: Path, root: Path) -> list[str]:
    """``<file>:<line> <what>`` for every ``open(...)`` call (``open() read`` or
    ``open(<mode>) write``), ``os.replace``/``os.rename`` and ``pyarrow.fs`` import in
    ``path``, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        what = None
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "open":
                mode = _open_mode(node)
                what = "open() read" if mode is not None and not set(mode) & set("wax+") else f"open({mode}) write"
            elif (isinstance(f, ast.Attribute) and f.attr in ("replace", "rename") and isinstance(f.value, ast.Name)
                  and f.value.id == "os"):
                what = f"os.{f.attr}()"
        elif isinstance(node, ast.Import):
            if any(a.name == "pyarrow.fs" or a.name.startswith("pyarrow.fs.") for a in node.names):
                what = "import pyarrow.fs"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "pyarrow.fs" or (node.module == "pyarrow" and any(a.name == "fs" for a in node.names)):
                what = "pyarrow.fs"
        if what is not None:
            found.append((node.lineno, f"{path.relative_to(root)}:{node.lineno} {what}"))
    return [hit for _, hit in sorted(found)]


def test_user_data_goes_through_the_storage_layer():
    files = sorted(f for pkg in PACKAGES for f in (REPO / pkg).rglob("*.py"))
    assert len(files) > 50, f"expected the packages under {REPO}"
    uses = {str(f.relative_to(REPO)): direct_storage_uses(f, REPO) for f in files}
    uses.pop("datapipe/fs.py")
    writes = [hit for m, hits in uses.items() for hit in hits if _is_write(hit)]
    assert writes == [], ("write files through datapipe.fs (fs.AtomicFile, fs.write_bytes/write_text, "
                          "fs.move_into_place, fs.open_stream):\n  " + "\n  ".join(writes))
    reads = [hit for m, hits in uses.items() if m not in READS for hit in hits
             if not _is_write(hit)]
    assert reads == [], ("read files through datapipe.fs (fs.open_input, fs.read_bytes, fs.resolve), or add "
                         "a module that reads local-only files by path to READS with its reason:\n  "
                         + "\n  ".join(reads))
    stale = sorted(m for m in READS if m in uses and not uses[m])
    assert stale == [], f"these modules no longer read files by path; remove them from READS: {stale}"


def test_the_check_finds_each_kind_of_direct_use(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import os\nimport pyarrow.fs\nfrom pyarrow import fs as pafs\n\ndef f(p, m):\n"
                     "    with open(p) as fh:\n        os.replace(p, p + '.x')\n    os.rename(p, p)\n"
                     "    obj.open(p)\n    os.path.join(p)\n    open(p, 'rb')\n    open(p, mode='a')\n"
                     "    open(p, 'r+b')\n    open(p, m)\n")
    hits = direct_storage_uses(probe, tmp_path)
    assert hits == [
        "probe.py:2 import pyarrow.fs", "probe.py:3 pyarrow.fs", "probe.py:6 open() read", "probe.py:7 os.replace()",
        "probe.py:8 os.rename()", "probe.py:11 open() read", "probe.py:12 open(a) write", "probe.py:13 open(r+b) write",
        "probe.py:14 open(None) write"]
    assert [h for h in hits if _is_write(h)] == [
        "probe.py:7 os.replace()", "probe.py:8 os.rename()", "probe.py:12 open(a) write", "probe.py:13 open(r+b) write",
        "probe.py:14 open(None) write"]


#: the input layer itself: the only reader modules that open input bytes
INPUT_LAYER = {"datapipe/readers/inputs.py", "datapipe/readers/_streams.py"}
#: calls that open or list input bytes without the input layer's checks (confinement,
#: regular files only, budgets, integrity)
SIDE_DOORS = {("fs", "open_input"), ("fs", "read_bytes"), ("fs", "read_text"), ("fs", "arrow_input"),
              ("fs", "iter_chunks"), ("fs", "local_copy"), ("fs", "sha256"), ("gzip", "open"),
              ("gzip", "GzipFile"), ("bz2", "open"), ("bz2", "BZ2File"), ("lzma", "open"), ("lzma", "LZMAFile"),
              ("tarfile", "open"), ("zipfile", "ZipFile"), ("os", "open"), ("io", "open")}


def reader_side_doors(path: Path, root: Path) -> list[str]:
    """``<file>:<line> <module>.<name>()`` for every call in ``path`` that opens input
    bytes around the input layer (and every ``open_binary``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (f.value.id, f.attr) in SIDE_DOORS:
            if f.value.id in ("gzip", "bz2", "lzma") and any(k.arg == "fileobj" for k in node.keywords):
                continue   # decompressing bytes already in hand (an archive member), not opening a file
            found.append((node.lineno, f"{path.relative_to(root)}:{node.lineno} {f.value.id}.{f.attr}()"))
        elif isinstance(f, ast.Name) and f.id == "open_binary":
            found.append((node.lineno, f"{path.relative_to(root)}:{node.lineno} open_binary()"))
    return [hit for _, hit in sorted(found)]


def test_readers_reach_input_bytes_only_through_the_input_layer():
    """A reader opens nothing itself: every byte comes through ``reader.input(f)``
    (datapipe/readers/inputs.py), so what a link, an include or a sibling may reach, and
    what it may cost, is decided in one place."""
    files = sorted((REPO / "datapipe" / "readers").glob("*.py"))
    offenders = [hit for f in files if str(f.relative_to(REPO)) not in INPUT_LAYER
                 for hit in reader_side_doors(f, REPO)]
    assert offenders == [], ("open inputs through reader.input(f) (datapipe.readers.inputs.Input):\n  "
                             + "\n  ".join(offenders))


def test_the_reader_check_finds_side_doors(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import bz2, tarfile\nfrom datapipe import fs\n\ndef f(p):\n    bz2.open(p)\n"
                     "    fs.open_input(p)\n    tarfile.open(p)\n    open_binary(p, None)\n    src.open()\n")
    assert reader_side_doors(probe, tmp_path) == [
        "probe.py:5 bz2.open()", "probe.py:6 fs.open_input()", "probe.py:7 tarfile.open()",
        "probe.py:8 open_binary()"]
