"""Build the multilingual sample of docs/tokenizer.md from the shared corpora (issue 27).

* ``eval.jsonl``: the second half (by paragraphs) of the Universal Declaration of Human
  Rights in each language of ``LANGUAGES`` (``corpora/nltk/udhr2.zip``): the same text in
  every language, so fertilities compare like for like; held out from training.
* ``train.jsonl``: the first half of each UDHR, plus English Gutenberg books, three French
  Gutenberg books and the German MediaWiki articles – an English-heavy mix
  like the web, which ``tokenizer train --balance language`` evens out.

Each record has ``text`` and ``language`` (ISO 639-1, as lid.176 names languages).

    python bench/tokenizer_fertility.py OUT_DIR
"""

from __future__ import annotations

import gzip
import json
import os
import zipfile
from pathlib import Path

#: UDHR file (ISO 639-3 name in udhr2.zip) per language code
LANGUAGES = {
    "en": "eng", "de": "deu", "fr": "fra", "es": "spa", "pt": "por_BR", "it": "ita", "nl": "nld", "pl": "pol",
    "ru": "rus", "uk": "ukr", "el": "ell_monotonic", "tr": "tur", "ar": "arb", "he": "heb", "hi": "hin",
    "bn": "ben", "zh": "cmn_hans", "ja": "jpn", "ko": "kor", "th": "tha", "vi": "vie", "id": "ind", "sw": "swh",
}
GERMAN_ARTICLES = ("Keilwelle.txt", "Liste-der-argentinischen-Botschafter-in-Chile.txt", "Maurische-Netzwuhle.txt")


def shared_dir() -> Path:
    d = Path(os.environ.get("DATAPIPE_SHARED", Path(__file__).resolve().parents[2] / "shared")).resolve()
    if not (d / "corpora").is_dir():
        raise SystemExit(f"shared data not found at {d}: set DATAPIPE_SHARED to the shared/ folder")
    return d


def build(out: Path, shared: Path, *, english_books: int = 6) -> dict[str, int]:
    out.mkdir(parents=True, exist_ok=True)
    corp = shared / "corpora"
    train, held = [], []
    with zipfile.ZipFile(corp / "nltk" / "udhr2.zip") as z:
        for lang, name in LANGUAGES.items():
            text = z.read(f"udhr2/{name}.txt").decode("utf-8")
            paras = [p.strip() for p in text.split("\n") if p.strip()]
            half = len(paras) // 2
            train += [{"text": p, "language": lang} for p in paras[:half]]
            held += [{"text": p, "language": lang} for p in paras[half:]]
    books = corp / "books" / "gutenberg"

    def paras(f: Path) -> list[str]:
        with gzip.open(f, "rt", encoding="utf-8", errors="replace") as fh:
            return [p for p in fh.read().split("\n\n") if p.strip()]

    for f in sorted(books.glob("*.txt.gz"))[:english_books]:
        train += [{"text": p, "language": "en"} for p in paras(f)]
    for f in sorted((books / "French").glob("*.txt.gz"))[:3]:
        train += [{"text": p, "language": "fr"} for p in paras(f)]
    for name in GERMAN_ARTICLES:
        f = corp / "wiki" / "wikitext-markup" / name
        if f.is_file():
            train += [{"text": p, "language": "de"} for p in f.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    for fname, rows in (("train.jsonl", train), ("eval.jsonl", held)):
        with open(out / fname, "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    sizes: dict[str, int] = {}
    for r in train:
        sizes[r["language"]] = sizes.get(r["language"], 0) + len(r["text"].encode("utf-8"))
    return sizes


if __name__ == "__main__":
    import argparse

    import _smoke  # bench/ is sys.path[0] when this file runs as a script

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", help="folder for train.jsonl and eval.jsonl")
    args = _smoke.parse(ap, {"out": "<tmp>"})
    if not args.out:
        ap.error("give the output folder")
    print(json.dumps(build(Path(args.out), shared_dir()), indent=1))
