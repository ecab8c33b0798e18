"""False positives of the PII detectors on real text nobody planted anything in.

Precision measured on templates says little about tables, code, version numbers and
ids (issue 29: a row of the ASCII control-code table became ``001 <PHONE> NAK``). This
module reads real text from the machine and the shared corpora:

* ``code``: the Python standard library of the running interpreter, tests included
  (numeric tables, version strings, hashes, test vectors);
* ``wiki``: WikiText-2 raw test split (Wikipedia articles with their numeric lists) and
  the raw MediaWiki markup of 71 articles (``{| ... |}`` tables, infoboxes, dates);
* ``news``: the Lee news corpus (``lee*.cor``);
* ``redpajama``: the RedPajama/Pile samples (C4, CommonCrawl, StackExchange, NIH, USPTO).

and reports every phone and IP detection per million characters. These texts are
*clean* in the sense that they are not contact pages; a detection there is read by a
person (``--misses`` lists each in context) and counted as a false positive unless it
is a real address or number, which the report's ``real`` list names by its text.

    python bench/pii_clean.py [--types phone,ip] [--list]
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # run as a script: keep bench/ off sys.path (see pii_quality.py)
    _HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    sys.path.insert(0, os.path.dirname(_HERE))

import argparse  # noqa: E402
import json  # noqa: E402
import sysconfig  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    d = Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared")).resolve()
    if not (d / "corpora").is_dir():
        raise FileNotFoundError(f"shared data not found at {d}: set DATAPIPE_SHARED to the shared/ folder")
    return d


def load(shared: Path | None = None, *, code_limit: int | None = None) -> dict[str, list[tuple[str, str]]]:
    """``{corpus: [(name, text), ...]}`` in a fixed order (same machine, same bytes)."""
    corp = (shared or shared_dir()) / "corpora"
    out: dict[str, list[tuple[str, str]]] = {}
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    code = []
    for f in sorted(stdlib.rglob("*.py")):
        if "site-packages" in f.parts:
            continue
        try:
            code.append((str(f.relative_to(stdlib)), f.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
        if code_limit and len(code) >= code_limit:
            break
    out["code"] = code
    wiki = [("wikitext-2-raw.test.txt", (corp / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8"))]
    for f in sorted((corp / "wiki" / "wikitext-markup").glob("*.txt")):
        wiki.append((f.name, f.read_text(encoding="utf-8", errors="replace")))
    out["wiki"] = wiki
    out["news"] = [(f.name, f.read_text(encoding="utf-8", errors="replace"))
                   for f in sorted((corp / "misc").glob("lee*.cor"))]
    rp = []
    for f in sorted((corp / "redpajama").glob("*.jsonl")):
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines()):
            if line.strip():
                rp.append((f"{f.name}:{i}", json.loads(line)["text"]))
    out["redpajama"] = rp
    return out


#: Detections in these corpora that are real PII (checked by reading them): they do not
#: count as false positives. Keyed by corpus and the detected text.
REAL: dict[str, frozenset[str]] = {
    # ``tel:`` URIs in urllib's tests: phone numbers written as phone numbers
    "code": frozenset({"+31-641044153", "+31641044153", "+1-201-555-0123", "863-1234"}),
    # a StackExchange question about formatting Spanish mobile numbers: its examples
    # are written as phone numbers (a scrubber should replace them)
    "redpajama": frozenset({"+34 666 111 222", "+34666555444", "0034666555444", "+34 666 444 555",
                            "+34 666 555 444"}),
}


def scan(detector, corpora: dict[str, list[tuple[str, str]]], types: tuple[str, ...] = ("phone", "ip")):
    """Per corpus: characters, detections per type, and the detections in context."""
    rows = {}
    for name, docs in corpora.items():
        chars = 0
        counts: Counter[str] = Counter()
        seen: list[str] = []
        for doc_name, text in docs:
            chars += len(text)
            for s in detector.find(text):
                if s.type not in types:
                    continue
                value = text[s.start:s.end]
                if value in REAL.get(name, ()):
                    continue
                counts[s.type] += 1
                ctx = text[max(0, s.start - 40):s.end + 15].replace("\n", "⏎")
                seen.append(f"{name} {doc_name} {s.type} {value!r}  …{ctx}…")
        rows[name] = (chars, counts, seen)
    return rows


def format_rows(rows, types: tuple[str, ...] = ("phone", "ip")) -> str:
    head = f"{'corpus':<10} {'Mchars':>7} " + " ".join(f"{t + ' fp':>9} {t + '/M':>8}" for t in types)
    lines = [head]
    total_chars, total = 0, Counter()
    for name, (chars, counts, _) in rows.items():
        total_chars += chars
        total.update(counts)
        lines.append(f"{name:<10} {chars / 1e6:>7.2f} " + " ".join(
            f"{counts[t]:>9} {counts[t] / chars * 1e6:>8.2f}" for t in types))
    lines.append(f"{'all':<10} {total_chars / 1e6:>7.2f} " + " ".join(
        f"{total[t]:>9} {total[t] / total_chars * 1e6:>8.2f}" for t in types))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from stages.pii import Detector
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--types", default="phone,ip")
    ap.add_argument("--list", action="store_true", help="print every detection in context")
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {}, argv)   # the scan is the smallest size already (a few seconds)
    types = tuple(args.types.split(","))
    rows = scan(Detector(), load(), types)
    print(format_rows(rows, types))
    if args.list:
        for _, (_, _, seen) in rows.items():
            for s in seen:
                print("  " + s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
