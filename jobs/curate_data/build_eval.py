"""Builds the small evaluation-set fixture the decontamination tests and jobs/curate.yaml
use: cloze questions formed from real WikiText-2 (raw, test split) sentences, the way
reading-comprehension benchmarks are built from Wikipedia. No real benchmark ships with
the shared data, so this stands in for one.

    .venv/bin/python jobs/curate_data/build_eval.py [--shared ../shared]

Writes jobs/curate_data/eval/wikitext_cloze.jsonl: {"id", "question", "answer", "article"}
for every 25th sentence of 20-60 words (deterministic: same input, same file).
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.environ.get("DATAPIPE_SHARED", str(HERE.parents[2] / "shared")))
    args = ap.parse_args()
    text = (Path(args.shared) / "corpora" / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
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
    out = HERE / "eval" / "wikitext_cloze.jsonl"
    out.parent.mkdir(exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"{out}: {len(rows)} questions")


if __name__ == "__main__":
    main()
