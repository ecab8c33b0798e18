"""Builds the inputs jobs/code_model.yaml needs into jobs/code_model_data/built/ (not
committed: third-party code and shared texts are assembled here, never copied into the
repository):

* ``repos/``: the code job's repositories (jobs/code_data/build.py: real package files,
  a GPL tarball, planted credentials) plus ``trees/idna-fork``, a planted fork of
  ``idna`` (one module edited, one file added) for ``repo_dedup``;
* ``arxiv/``: bulk arXiv source tars made from the real RedPajama arXiv sample
  (tests/arxiv_fixture.py; a paper's v2 in a second tar, for ``latest_version``);
* ``eval/code_eval.jsonl``: a HumanEval-format evaluation set (``task_id``, ``prompt``,
  ``canonical_solution``, ``test``): two written problems and one whose prompt and
  solution are a real function of ``idna`` (so ``decontaminate`` has a benchmark item
  to cut out of the idna repository document).

    .venv/bin/python jobs/code_model_data/build.py [--shared ../shared] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests"))

from arxiv_fixture import build as build_arxiv  # noqa: E402

WRITTEN = [
    {"task_id": "CodeModel/0", "entry_point": "running_max",
     "prompt": 'def running_max(xs: list[int]) -> list[int]:\n    """The largest value seen so far at each '
               'position.\n    >>> running_max([1, 3, 2, 5])\n    [1, 3, 3, 5]\n    """\n',
     "canonical_solution": "    out, best = [], None\n    for x in xs:\n        best = x if best is None else "
                           "max(best, x)\n        out.append(best)\n    return out\n",
     "test": "def check(f):\n    assert f([1, 3, 2, 5]) == [1, 3, 3, 5]\n    assert f([]) == []\n"},
    {"task_id": "CodeModel/1", "entry_point": "count_vowels",
     "prompt": 'def count_vowels(word: str) -> int:\n    """How many of the letters of word are vowels '
               '(a, e, i, o, u; either case).\n    >>> count_vowels("Banana")\n    3\n    """\n',
     "canonical_solution": '    return sum(c in "aeiouAEIOU" for c in word)\n',
     "test": 'def check(f):\n    assert f("Banana") == 3\n    assert f("xyz") == 0\n'},
]


def _function(source: str, name: str) -> tuple[str, str]:
    """``(signature and docstring, body)`` of a top-level function in ``source``."""
    import ast

    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name)
    lines = source.splitlines(keepends=True)
    body_start = node.body[1].lineno if ast.get_docstring(node) and len(node.body) > 1 else node.body[0].lineno
    return "".join(lines[node.lineno - 1: body_start - 1]), "".join(lines[body_start - 1: node.end_lineno])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.environ.get("DATAPIPE_SHARED", str(REPO.parent / "shared")))
    ap.add_argument("--out", default=str(HERE / "built"))
    args = ap.parse_args()
    shared, out = Path(args.shared), Path(args.out)
    repos = out / "repos"
    subprocess.run([sys.executable, str(REPO / "jobs" / "code_data" / "build.py"), "--out", str(repos)], check=True,
                   stdout=subprocess.DEVNULL)
    idna, fork = repos / "trees" / "idna", repos / "trees" / "idna-fork"
    shutil.rmtree(fork, ignore_errors=True)
    shutil.copytree(idna, fork)
    core = next(fork.rglob("core.py"))
    core.write_text(core.read_text().replace("def valid_string_length(", "def valid_string_length(  # fork: "
                                             "unchanged rule\n        ", 1))
    (core.parent / "encode_all.py").write_text("import sys\n\nfrom idna.core import encode\n\n\ndef main() -> None:\n"
                                        "    for name in sys.argv[1:]:\n        print(encode(name).decode())\n")
    got = build_arxiv(shared, out / "arxiv", split_versions=True)
    prompt, body = _function(next(idna.rglob("core.py")).read_text(), "check_bidi")
    items = WRITTEN + [{"task_id": "CodeModel/2", "entry_point": "check_bidi", "prompt": prompt,
                        "canonical_solution": body, "test": "def check(f):\n    assert f('abc')\n"}]
    (out / "eval").mkdir(parents=True, exist_ok=True)
    with open(out / "eval" / "code_eval.jsonl", "w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps(item) + "\n")
    print(f"{out}: repositories in {repos}, idna-fork planted; {', '.join(t.name for t in got['tars'])} with "
          f"{len(got['bodies'])} papers; {len(items)} evaluation items")


if __name__ == "__main__":
    main()
