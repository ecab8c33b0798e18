"""The quality development set: which documents it holds and how to read them back.

The labels live in ``bench/data/quality_dev/labels.jsonl`` (rubric beside it,
``RUBRIC.md``); the texts do not (they belong to their owners, see
``/work/shared/DATA.md``): each label carries a *pointer* into the shared corpora,

    {"id": "html/0007", "path": "web/html/xyz.html.gz", "format": "html",
     "key": null, "start": 0, "end": null, "sha256": "...", "label": 1, ...}

``path`` (relative to ``corpora/``) and ``format`` name the file and reader
(:mod:`stages.models.training_text`; ``zip`` for a member of a zip archive, named by ``key``);
``key`` picks the document inside a multi-document file (a JSONL line number, a WARC
target URI); ``start``/``end`` cut an excerpt out of a long text (books, web-text
logs). ``sha256`` is the hash of (the letters and digits of) the text the label was given for: a reader or
extractor upgrade that changes a text is an error, not a silent relabelling.

:func:`pool` is how the candidates were drawn (seeded); :data:`DEV_FILES` is every
corpus file the set draws from, which training recipes must leave out
(:func:`excluded`): no document of a labelled file, nor any other part of it, may be
trained on.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import json
import os
import random
import zipfile
from pathlib import Path
from typing import Iterator

from datapipe.readers.iterate import guess_format
from stages.models import training_text as corpus

HERE = Path(__file__).resolve().parent
LABELS = HERE / "data" / "quality_dev" / "labels.jsonl"

#: how many documents the pool draws from each group (web pages dominate on purpose:
#: the classifier is for filtering web crawls)
HTML_PAGES = 170
EXCERPT_CHARS = 3000


def _rel(path: str, corpora: Path) -> str:
    return os.path.relpath(path, corpora)


def _sha(text: str) -> str:
    """sha256 of the text's letters and digits only: trafilatura's charset guess for an
    undeclared page is not stable across processes (the same page sometimes loses its
    typographic quotes and dashes), and a label is about the words, not those."""
    return hashlib.sha256("".join(ch for ch in text if ch.isalnum()).encode("utf-8", "surrogatepass")).hexdigest()


def _html_dev_files(corpora: Path) -> list[str]:
    files = sorted(glob.glob(str(corpora / "web" / "html" / "*.html.gz")))
    return sorted(random.Random(14).sample(files, HTML_PAGES))


def dev_files(corpora: Path) -> list[str]:
    """Every file the development set draws from (absolute paths)."""
    c = corpora
    fixed = [
        "web/warc/crawl2024-0001.warc.gz", "web/warc/cc-main-2020-34-excerpt.warc.gz",
        "ccnet/cc_en_head-0174.jsonl", "ccnet/000.json.gz",
        "redpajama/redpajama-c4-refined.jsonl", "redpajama/redpajama-cc-2023-06-refined.jsonl",
        "redpajama/the-pile-uspto-refined.jsonl", "redpajama/the-pile-nih-refined.jsonl",
        "stackexchange/redpajama-stackexchange.jsonl", "nltk/webtext.zip",
    ]
    wiki = sorted(glob.glob(str(c / "wiki" / "wikitext-markup" / "*.txt")))[::12]
    books = sorted(glob.glob(str(c / "books" / "gutenberg" / "*.txt.gz")))[::18]
    return _html_dev_files(c) + [str(c / f) for f in fixed] + wiki + books


def excluded(paths: list[str], corpora: Path) -> list[str]:
    """``paths`` minus the development set's files."""
    dev = {os.path.realpath(p) for p in dev_files(corpora)}
    return [p for p in paths if os.path.realpath(p) not in dev]


def _excerpt(text: str, rng: random.Random) -> tuple[int, int]:
    if len(text) <= EXCERPT_CHARS:
        return 0, len(text)
    start = text.find("\n", rng.randrange(len(text) // 10, len(text) - EXCERPT_CHARS)) + 1
    end = text.rfind("\n", start, start + EXCERPT_CHARS)
    return start, end if end > start else start + EXCERPT_CHARS


def pool(corpora: Path) -> Iterator[dict]:
    """The candidate documents, pointer + text, in a fixed order."""
    rng = random.Random(14)
    for path in dev_files(corpora):
        rel = _rel(path, corpora)
        if rel.endswith(".zip"):
            with zipfile.ZipFile(path) as z:
                for name in sorted(n for n in z.namelist() if n.endswith(".txt")):
                    text = z.read(name).decode("utf-8", errors="replace")
                    for _ in range(2):
                        s, e = _excerpt(text[:400_000], rng)
                        s, e = s, min(e, s + 1500)
                        yield _rec(rel, "zip", name, s, e, text[s:e])
            continue
        docs = list(corpus.iter_docs([path]))
        if "gutenberg" in rel or "wikitext-markup" in rel:
            for d in docs:
                s, e = _excerpt(d.text, rng)
                yield _rec(rel, guess_format(path), None, s, e, d.text[s:e])
            continue
        if rel.startswith("stackexchange/"):
            docs = docs[::7]
        for d in docs:
            yield _rec(rel, guess_format(path), _label_key(d, guess_format(path)), 0, None, d.text)


def _label_key(doc, fmt: str) -> str | None:
    """The key a label uses for a document: None for a one-document file, the WARC
    target URI, the 1-based JSONL line number (the readers locate by byte offset)."""
    if fmt == "warc":
        return doc.url
    if fmt != "jsonl":
        return None
    sep, loc = doc.key[len(doc.path)], doc.key[len(doc.path) + 1:]
    return loc if sep == ":" else str(_line_starts(doc.path).index(int(loc)) + 1)


@functools.lru_cache(maxsize=8)
def _line_starts(path: str) -> list[int]:
    with open(path, "rb") as f:
        data = f.read()
    return [0] + [i + 1 for i, b in enumerate(data) if b == 10]


def _rec(path: str, fmt: str, key: str | None, start: int, end: int | None, text: str) -> dict:
    return {"path": path, "format": fmt, "key": key, "start": start, "end": end, "sha256": _sha(text),
            "chars": len(text), "text": text}


def resolve(labels: list[dict], corpora: Path) -> tuple[list[str], list[str]]:
    """The text of every labelled document, and the ids whose text no longer matches
    its hash. A drift is reported, not fatal: trafilatura's charset guess for a page
    that declares none differs between processes now and then (a Chinese page read
    as GB18030 once and as mojibake another time), and the labels predate reading pages
    with the job's extract stage (tables kept; a page it finds no text in is an empty
    text here); the label is about the page."""
    by_file: dict[tuple[str, str], dict[str | None, str]] = {}
    out, drifted = [], []
    for rec in labels:
        fk = (rec["path"], rec["format"])
        if fk not in by_file:
            by_file[fk] = _read_file(corpora / rec["path"], rec["format"])
        full = by_file[fk].get(rec["key"])
        if full is None and rec["format"] in ("html", "warc"):
            drifted.append(rec["id"])  # the extract stage finds no main text in it now: a job drops it
            out.append("")
            continue
        if full is None:
            raise ValueError(f"{LABELS}: {rec['id']} points at {rec['path']} key {rec['key']!r}, which "
                             "is not there; the shared corpora changed")
        text = full[rec["start"]:rec["end"]]
        if _sha(text) != rec["sha256"]:
            drifted.append(rec["id"])
        out.append(text)
    return out, drifted


def _read_file(path: Path, fmt: str) -> dict[str | None, str]:
    if fmt == "zip":
        with zipfile.ZipFile(path) as z:
            return {n: z.read(n).decode("utf-8", errors="replace") for n in z.namelist() if n.endswith(".txt")}
    out: dict[str | None, str] = {}
    p = str(path)
    for d in corpus.iter_docs([f"{fmt}:{p}"]):
        out[_label_key(d, fmt)] = d.text
    return out


def load_labels(path: Path = LABELS) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
