"""The engine core does not import its plugins: nothing under ``datapipe/`` imports
``stages`` or ``trainer_bridge`` (they reach the engine through the ``datapipe.plugins``
entry points, :mod:`datapipe.plugins`)."""

from __future__ import annotations

import ast
from pathlib import Path

import datapipe

PLUGIN_PACKAGES = ("stages", "trainer_bridge")
CORE = Path(datapipe.__file__).parent


def plugin_imports(path: Path, root: Path) -> list[str]:
    """``<file relative to root>:<line> imports <module>`` for every import of a plugin
    package in ``path``, at any depth (inside functions too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [f"{path.relative_to(root)}:{node.lineno} imports {n}" for n in names
                  if n.split(".")[0] in PLUGIN_PACKAGES]
    return found


def test_core_never_imports_stages_or_trainer_bridge():
    files = sorted(CORE.rglob("*.py"))
    assert len(files) > 20, f"expected the datapipe package at {CORE}"
    offenders = [hit for f in files for hit in plugin_imports(f, CORE.parent)]
    assert offenders == [], "datapipe/ must reach plugins through datapipe.plugins:\n  " + "\n  ".join(offenders)


def test_the_check_finds_imports_inside_functions(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import os\n\ndef f():\n    from stages.models.langid import packaged_model_path\n"
                     "    import trainer_bridge.mix\n    from stagesmith import x\n")
    assert plugin_imports(probe, tmp_path) == ["probe.py:4 imports stages.models.langid", "probe.py:5 imports trainer_bridge.mix"]
