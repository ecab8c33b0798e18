"""Build the code sample of docs/tokenizer.md, train ``tokenizer train --preset code`` on it and
print the fertility table beside GPT-2's and the prose tokenizer's (issue 39).

Real code present on the machine, whole files, one JSONL record each (``text``,
``language``, ``path``):

* ``train.jsonl``: Python: the interpreter's standard library; C: numpy's headers, the
  standard library's ``.c`` files and the system's C headers (``/usr/include``, not ``c++``); C++: torch's ``c10`` headers; JavaScript: npm's own
  ``node_modules`` when Node is installed (``/usr/lib/node_modules/npm``; no JavaScript is
  trained on otherwise). Files are taken in a keyed-hash order of their paths up to a budget
  per language, so the same machine gives the same sample.
* ``eval.jsonl`` (held out: other projects than the training code where the machine has
  them): Python: packages of the venv (``HELDOUT_PACKAGES``); C: CPython's own headers;
  C++: torch's ``ATen/core`` headers (same project as ``c10``, other files); JavaScript: the
  unminified ``.js`` files that venv packages ship (matplotlib, werkzeug, scikit-learn, torch).

    python bench/code_tokenizer.py OUT_DIR [--train models/code/tokenizer] [--vocab-size 16384]

With ``--train DIR`` it trains the code tokenizer into DIR (``datapipe tokenizer train
--preset code``) and writes ``OUT_DIR/eval/fertility.{md,json,png}`` for GPT-2
(``{shared}/tokenizers/gpt2``), GPT-NeoX-20B (whose vocabulary has runs of spaces), the prose
tokenizer (``models/sample/tokenizer``) and it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: bytes of training text per language (JavaScript: what npm ships, up to this)
TRAIN_BYTES = {"python": 12_000_000, "c": 3_000_000, "c++": 2_500_000, "javascript": 4_000_000}
#: bytes of held-out text per language
EVAL_BYTES = 400_000
#: venv packages whose Python is held out (none of them is in the training sample)
HELDOUT_PACKAGES = ("click", "yaml", "attr", "certifi", "charset_normalizer", "dateutil", "jinja2", "markupsafe")
MAX_FILE_BYTES = 400_000   # larger files are generated tables, not code people write
NPM = Path("/usr/lib/node_modules/npm/node_modules")
USR_INCLUDE = Path("/usr/include")   # the system's C headers (glibc, Linux, ...), where there are any


def _order(paths: list[Path]) -> list[Path]:
    return sorted(paths, key=lambda p: hashlib.blake2b(str(p).encode(), digest_size=8).digest())


def _take(paths: list[Path], budget: int, *, root: Path) -> list[dict]:
    out, size = [], 0
    for p in _order(paths):
        if size >= budget:
            break
        try:
            data = p.read_bytes()
        except OSError:
            continue
        if not data.strip() or len(data) > MAX_FILE_BYTES:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if "min.js" in p.name or (p.suffix == ".js" and max(map(len, text.splitlines() or [""])) > 1000):
            continue   # minified bundles: not what the table is about
        out.append({"text": text, "path": os.path.relpath(p, root)})
        size += len(data)
    return out


def _glob(root: Path, *patterns: str) -> list[Path]:
    """Files under ``root``; a stdlib's own ``site-packages`` (installed packages) is not in it."""
    if not root.is_dir():
        return []
    return [p for pat in patterns for p in root.glob(pat)
            if p.is_file() and "site-packages" not in p.relative_to(root).parts]


def sources(scale: float = 1.0) -> dict[str, tuple[list[dict], list[dict]]]:
    """Per language: (training records, held-out records); ``scale`` multiplies the budgets."""
    budget = {k: int(v * scale) for k, v in TRAIN_BYTES.items()}
    held = int(EVAL_BYTES * scale)
    paths = sysconfig.get_paths()
    stdlib, site, include = Path(paths["stdlib"]), Path(paths["purelib"]), Path(paths["include"])
    held_py = [p for pkg in HELDOUT_PACKAGES for p in _glob(site / pkg, "**/*.py")]
    out = {
        "python": (_take(_glob(stdlib, "**/*.py"), budget["python"], root=stdlib.parent),
                   _take(held_py, held, root=site)),
        "c": (_take(_glob(site / "numpy", "**/*.h") + _glob(stdlib, "**/*.c")
                    + [p for p in _glob(USR_INCLUDE, "**/*.h") if "c++" not in p.parts], budget["c"], root=Path("/")),
              _take(_glob(include, "**/*.h"), held, root=include.parent)),
        "c++": (_take(_glob(site / "torch/include/c10", "**/*.h"), budget["c++"], root=site),
                _take(_glob(site / "torch/include/ATen/core", "**/*.h"), held, root=site)),
        "javascript": (_take(_glob(NPM, "**/*.js"), budget["javascript"], root=NPM.parent),
                       _take([p for p in _glob(site, "*/**/*.js") if "/build/" not in str(p)
                              and "node_modules" not in str(p)], held, root=site)),
    }
    return {lang: (tr, ev) for lang, (tr, ev) in out.items() if ev}


def build(out: Path, scale: float = 1.0) -> dict[str, dict[str, int]]:
    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    with open(out / "train.jsonl", "w", encoding="utf-8") as ft, open(out / "eval.jsonl", "w", encoding="utf-8") as fe:
        for lang, (train, held) in sources(scale).items():
            for fh, rows in ((ft, train), (fe, held)):
                for r in rows:
                    fh.write(json.dumps({"text": r["text"], "language": lang, "path": r["path"]},
                                        ensure_ascii=False) + "\n")
            summary[lang] = {"train_files": len(train), "train_bytes": sum(len(r["text"].encode()) for r in train),
                             "eval_files": len(held), "eval_bytes": sum(len(r["text"].encode()) for r in held)}
    return summary


def shared_dir() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared")).resolve()


if __name__ == "__main__":
    import argparse

    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "bench"))
    import _smoke

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", help="folder for train.jsonl, eval.jsonl and eval/")
    ap.add_argument("--train", metavar="DIR", help="train the code tokenizer into DIR and evaluate it")
    ap.add_argument("--vocab-size", type=int, default=16384)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the per-language byte budgets")
    args = _smoke.parse(ap, {"out": "<tmp>", "train": "<tmp>", "vocab_size": 512, "scale": 0.01})
    if not args.out:
        ap.error("give the output folder")
    out = Path(args.out)
    print(json.dumps(build(out, args.scale), indent=1))
    if args.train:
        from datapipe.cli import main as datapipe

        rc = datapipe(["tokenizer", "train", "--preset", "code", "--source-glob", str(out / "train.jsonl"),
                       "--vocab-size", str(args.vocab_size), "--out", args.train])
        if rc:
            raise SystemExit(rc)
        rc = datapipe(["tokenizer", "eval", "--input", str(out / "eval.jsonl"), "--lang-key", "language",
                       "--tokenizer", str(shared_dir() / "tokenizers/gpt2"), "--name", "gpt2",
                       "--tokenizer", str(shared_dir() / "tokenizers/gpt-neox-20b.tokenizer.json"),
                       "--name", "gpt-neox-20b",
                       "--tokenizer", str(REPO / "models/sample/tokenizer"), "--name", "sample (prose)",
                       "--tokenizer", args.train, "--name", "code", "--out", str(out / "eval")])
        print((out / "eval" / "fertility.md").read_text(encoding="utf-8"))
        raise SystemExit(rc)
