"""User data is reached only through the storage layer (:mod:`datapipe.fs`): no module of
the engine, its stages or the trainer calls ``open()``, ``os.replace``/``os.rename`` or
uses ``pyarrow.fs`` itself, so a backend or an option (an S3 endpoint) added to
``datapipe.fs`` reaches every path. The few modules that work on local-only files
(models a library loads by path, memory-mapped shards, checkpoints) are listed below,
each with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

import datapipe

REPO = Path(datapipe.__file__).parent.parent
PACKAGES = ("datapipe", "stages", "trainer_bridge")

#: module -> why it may touch files itself
ALLOWED = {
    "datapipe/fs.py": "the storage layer",
    "datapipe/megatron.py": "reads shards through a local path (the loader's local copy, memory-mapped)",
    "stages/_card.py": "model cards beside local model files",
    "stages/_bylang.py": "per-language training input in a private local work folder, for local model training",
    "stages/_datatrove.py": "a peer's local word lists, loaded by path",
    "stages/c4.py": "bad-words lists: local model data loaded by path",
    "stages/perplexity/arpa.py": "KenLM models: local files the library loads by path",
    "stages/perplexity/train.py": "trains a local KenLM model",
    "stages/quality/train.py": "trains a local fastText model",
    "stages/tokenize/train.py": "trains a local tokenizer",
    "stages/tokenize/writer.py": "writes .bin/.idx into a task-local folder that the sink uploads (sink.local_dir)",
    "trainer_bridge/memory.py": "reads /proc/meminfo (host facts, not user data)",
    "trainer_bridge/checkpoint.py": "DCP checkpoints on the trainer's local disk",
    "trainer_bridge/shards.py": "the loader's local hash cache (under a file lock)",
    "trainer_bridge/train.py": "the trainer's local metrics log",
    "trainer_bridge/mix.py": "`mix new` writes the mix file the user names on the command line",
}


def direct_storage_uses(path: Path, root: Path) -> list[str]:
    """``<file>:<line> <what>`` for every ``open(...)`` call, ``os.replace``/``os.rename``
    and ``pyarrow.fs`` import in ``path``, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        what = None
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "open":
                what = "open()"
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
    offenders = [hit for f in files if str(f.relative_to(REPO)) not in ALLOWED
                 for hit in direct_storage_uses(f, REPO)]
    assert offenders == [], ("reach files through datapipe.fs (fs.Location, fs.AtomicFile, fs.resolve), or add "
                             "the module to ALLOWED with its reason:\n  " + "\n  ".join(offenders))


def test_the_check_finds_each_kind_of_direct_use(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import os\nimport pyarrow.fs\nfrom pyarrow import fs as pafs\n\ndef f(p):\n"
                     "    with open(p) as fh:\n        os.replace(p, p + '.x')\n    os.rename(p, p)\n"
                     "    obj.open(p)\n    os.path.join(p)\n")
    assert direct_storage_uses(probe, tmp_path) == [
        "probe.py:2 import pyarrow.fs", "probe.py:3 pyarrow.fs", "probe.py:6 open()", "probe.py:7 os.replace()",
        "probe.py:8 os.rename()"]
