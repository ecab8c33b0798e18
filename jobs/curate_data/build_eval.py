"""Builds the small evaluation-set fixture the decontamination tests and jobs/curate.yaml
use: cloze questions formed from real WikiText-2 (raw, test split) sentences, the way
reading-comprehension benchmarks are built from Wikipedia. No real benchmark ships with
the shared data, so this stands in for one. Built at run time from ../shared, never
committed (the shared texts are not copied into the repository).

    .venv/bin/python jobs/curate_data/build_eval.py [--shared ../shared] [--out FILE]

Writes {"id", "question", "answer", "article"} for every 25th sentence of 20-60 words
(deterministic: same input, same file); default jobs/curate_data/built/wikitext_cloze.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent


def sentences(text: str):
    """(article title, sentence) of WikiText raw: articles start at ' = Title = ' lines."""
    title = None
    for line in text.splitlines():
        s = line.strip()
        m = re.fullmatch(r"= ([^=].*[^=]) =", s)
        if m:
            title = m.group(1).strip()
            continue
        if not s or s.startswith("="):
            continue
        for sent in re.split(r"(?<=[.!?]) (?=[A-Z])", s):
            yield title, sent


def build(shared: Path, out: Path) -> int:
    """Write the evaluation set to ``out``; the number of questions."""
    text = (Path(shared) / "corpora" / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    rows = []
    k = 0
    for title, sent in sentences(text):
        n = len(sent.split())
        if not 20 <= n <= 60:
            continue
        k += 1
        if k % 25:
            continue
        words = sent.rstrip(".").split()
        answer = words[-1]
        rows.append({"id": f"wtc-{len(rows):04d}", "question": " ".join(words[:-1]) + " ____ ?",
                     "answer": answer, "article": title})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.environ.get("DATAPIPE_SHARED", str(HERE.parents[2] / "shared")))
    ap.add_argument("--out", default=str(HERE / "built" / "wikitext_cloze.jsonl"))
    args = ap.parse_args()
    n = build(Path(args.shared), Path(args.out))
    print(f"{args.out}: {n} questions")


if __name__ == "__main__":
    main()
