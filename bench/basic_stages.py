"""Throughput of the `normalize` and `length` stages beside a plain per-document loop
doing the same work, on real text from ../shared (or $DATAPIPE_SHARED).

    .venv/bin/python bench/basic_stages.py [--docs 4000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from datapipe import schema as S  # noqa: E402
from stages.heuristics.basic import LengthConfig, LengthFilter, Normalize  # noqa: E402


def _texts(shared: Path, n: int) -> list[str]:
    out: list[str] = []
    for f in sorted((shared / "corpora" / "redpajama").glob("*.jsonl")) + sorted((shared / "corpora" / "ccnet").glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            out.append(json.loads(line)["text"])
    wiki = (shared / "corpora" / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8").split("\n = ")
    out.extend(w for w in wiki if w.strip())
    return [out[i % len(out)] for i in range(n)]


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b\ufeff]")
_SPACES = re.compile(r"[ \t\u00a0]+")
_TRAILING = re.compile(r"[ \t]+\n")
_BLANK = re.compile(r"\n{4,}")


def _loop(texts: list[str]) -> tuple[int, int]:
    kept = changed = 0
    for t in texts:
        u = unicodedata.normalize("NFC", t.replace("\r\n", "\n").replace("\r", "\n"))
        u = _BLANK.sub("\n\n\n", _TRAILING.sub("\n", _SPACES.sub(" ", _CONTROL.sub("", u)))).strip()
        changed += u != t
        kept += 50 <= len(u) <= 1_000_000
    return kept, changed


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"docs": 200, "repeat": 1})
    shared = Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared"))
    texts = _texts(shared, args.docs)
    mb = sum(len(t.encode()) for t in texts) / 1e6
    batches = [S.make_batch(source="bench", ids=[str(i) for i in range(j, j + args.batch)][: len(texts[j:j + args.batch])],
                            texts=texts[j:j + args.batch]) for j in range(0, len(texts), args.batch)]
    norm, length = Normalize(), LengthFilter(LengthConfig(min_chars=50))

    def stages() -> None:
        for b in batches:
            out, _ = norm.process(b)
            length.process(out)

    t_stage = _best(stages, args.repeat)
    t_loop = _best(lambda: _loop(texts), args.repeat)
    print(f"{len(texts)} documents, {mb:.1f} MB, batches of {args.batch} (CPU seconds, best of {args.repeat})")
    print(f"{'path':<34} {'docs/s':>10} {'MB/s':>8} {'vs loop':>8}")
    for name, t in (("normalize + length stages", t_stage), ("plain loop, same work (baseline)", t_loop)):
        print(f"{name:<34} {len(texts) / t:>10.0f} {mb / t:>8.1f} {t_loop / t:>7.2f}x")


if __name__ == "__main__":
    main()
