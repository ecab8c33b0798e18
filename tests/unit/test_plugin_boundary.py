"""Plugins use the engine's public names only: nothing under ``stages/`` or
``trainer_bridge/`` imports a ``_private`` name or module of ``datapipe`` (what a plugin
needs, the engine makes public where it belongs)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLUGINS = ("stages", "trainer_bridge")


def private_imports(path: Path, root: Path = REPO) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "datapipe":
            private_module = any(part.startswith("_") for part in node.module.split("."))
            names = [a.name for a in node.names if a.name.startswith("_")]
            if private_module or names:
                found.append(f"{path.relative_to(root)}:{node.lineno} from {node.module} import "
                             f"{', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Import):
            found += [f"{path.relative_to(root)}:{node.lineno} import {a.name}" for a in node.names
                      if a.name.split(".")[0] == "datapipe" and any(p.startswith("_") for p in a.name.split("."))]
    return found


def test_plugins_import_no_private_engine_names():
    files = [f for pkg in PLUGINS for f in sorted((REPO / pkg).rglob("*.py"))]
    assert len(files) > 20
    offenders = [hit for f in files for hit in private_imports(f)]
    assert offenders == [], "plugins must use datapipe's public names:\n  " + "\n  ".join(offenders)


def test_the_check_finds_private_names(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from datapipe.shards import verify_shards\nfrom datapipe.x import (\n    a,\n    _b,\n)\n"
                     "import datapipe.readers._streams\n")
    assert private_imports(probe, tmp_path) == ["probe.py:2 from datapipe.x import a, _b",
                                                "probe.py:6 import datapipe.readers._streams"]
