"""``decontaminate`` throughput, index memory and recall on planted contamination, beside
a plain-Python baseline (the datatrove / GPT-3 procedure written directly: regex
normalisation, word 13-grams as strings in a Python ``set``) measured in the same run.

Evaluation set: real text (WikiText-2 test, tiny-shakespeare, then Gutenberg books) cut
into ~60-word items until the index holds ``--ngrams`` (1M) 13-grams. Documents: other
Gutenberg books and the RedPajama/CCNet samples (never in the evaluation set), cut into
~20 KB documents; 300 of them get an evaluation item planted verbatim, 300 with case
edits and 300 with punctuation edits. CPU seconds (``time.process_time``), one core.

Two index kinds are measured on the same documents: ``exact`` (sorted uint64 hashes,
radix lookup; what ``index_kind: exact`` ships) and ``bloom`` (Bloom filters at
``--fpr`` per n-gram, ``index_kind: bloom``). Its false-positive rate is measured on the
documents' own n-grams: those the Bloom filter holds but the exact index does not (per
n-gram, and as clean documents it would drop that the exact index keeps).

    .venv/bin/python bench/decontam.py [--ngrams 1000000] [--mb 40] [--fpr 1e-8] [--benchmarks 1]
    .venv/bin/python bench/decontam.py --ngrams 7000000 --eval-share 0.75 --mb 20 --planted 200
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from stages.decontam.ngrams import (BloomIndex, index_from_hashes, match, ngram_hashes, normalize,  # noqa: E402
                                    text_ngram_hashes, words)

N = 13


def _shared() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared"))


def _books(shared: Path) -> list[Path]:
    return sorted((shared / "corpora" / "books" / "gutenberg").glob("*.txt.gz"))


def _eval_items(shared: Path, want: int, share: float = 1.0) -> tuple[list[str], int]:
    """60-word items up to ``want`` n-grams; of each Gutenberg book only its first
    ``share`` of the text (the rest may become documents)."""
    sources = [(shared / "corpora" / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8"),
               (shared / "corpora" / "books" / "tinyshakespeare.txt").read_text(encoding="utf-8")]
    items: list[str] = []
    total = 0
    books = iter(_books(shared))
    used_books = 0
    while total < want:
        if sources:
            text = sources.pop(0)
        else:
            book = next(books, None)
            if book is None:
                raise SystemExit(f"--ngrams {want}: the shared text gives only {total:,} n-grams; "
                                 "lower --ngrams or raise --eval-share")
            text = gzip.decompress(book.read_bytes()).decode("utf-8", "replace")
            text = text[: int(len(text) * share)]
            used_books += 1
        words = text.split()
        for i in range(0, len(words) - 60, 60):
            items.append(" ".join(words[i:i + 60]))
            total += 60 - N + 1
            if total >= want:
                break
    return items, used_books


def _docs(shared: Path, used_books: int, mb: float, share: float = 1.0) -> list[str]:
    texts = [json.loads(line)["text"] for f in sorted((shared / "corpora" / "redpajama").glob("*.jsonl"))
             for line in f.read_text(encoding="utf-8").splitlines()]
    texts += [json.loads(line)["text"] for f in sorted((shared / "corpora" / "ccnet").glob("*.jsonl"))
              for line in f.read_text(encoding="utf-8").splitlines()]
    books = _books(shared)
    # the unused books, then the unused tails of the books the evaluation set took from
    parts = [(b, 0.0) for b in books[used_books:]] + ([(b, share) for b in books[:used_books]] if share < 1 else [])
    for b, start in parts:
        t = gzip.decompress(b.read_bytes()).decode("utf-8", "replace")
        t = t[int(len(t) * start):]
        texts += [t[i:i + 20_000] for i in range(0, len(t), 20_000)]
        if sum(map(len, texts)) > mb * 1e6:
            break
    return texts


def _case_edit(s: str) -> str:
    """Every third ASCII letter upper-cased, the rest lower-cased."""
    return "".join((c.upper() if i % 3 == 0 else c.lower()) if c.isascii() else c for i, c in enumerate(s))


def _punct_edit(s: str) -> str:
    """Punctuation added, removed and changed around the words; the words stay."""
    words = s.replace(" , ", ", ").replace(" . ", ". ").replace(" @-@ ", "-").split()
    marks = ("", ",", ";", " --", ":", "", "!", " (", ")")
    return '"' + " ".join(w + marks[i % len(marks)] for i, w in enumerate(words)) + '..."' 


_WORD = re.compile(r"[^\W_]+")


def _snippet(tokens: list[str], words: int) -> str:
    """Leading tokens of an item holding ``words`` words (WikiText has punctuation tokens
    such as ``=`` and ``@-@``, which are not words)."""
    out, k = [], 0
    for t in tokens:
        out.append(t)
        k += len(_WORD.findall(t))
        if k >= words:
            break
    return " ".join(out)


def _baseline_set(items: list[str]) -> set[str]:
    out: set[str] = set()
    for it in items:
        w = _WORD.findall(it.lower())
        out.update(" ".join(w[i:i + N]) for i in range(len(w) - N + 1))
    return out


def _baseline(docs: list[str], grams: set[str]) -> np.ndarray:
    hit = np.zeros(len(docs), dtype=bool)
    for j, d in enumerate(docs):
        w = _WORD.findall(d.lower())
        hit[j] = any(" ".join(w[i:i + N]) in grams for i in range(len(w) - N + 1))
    return hit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ngrams", type=int, default=1_000_000)
    ap.add_argument("--mb", type=float, default=40.0, help="MB of documents to scan")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--planted", type=int, default=300, help="documents planted per kind of edit")
    ap.add_argument("--fpr", type=float, default=1e-8, help="the Bloom filters' false-positive rate per n-gram")
    ap.add_argument("--eval-share", type=float, default=1.0,
                    help="share of each Gutenberg book the evaluation set takes (its tail may become documents): "
                         "0.75 lets --ngrams reach ~7.7M and still leave documents")
    ap.add_argument("--benchmarks", type=int, default=1,
                    help="split the evaluation items into this many benchmarks (Bloom: one filter each, too)")
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"ngrams": 20_000, "mb": 0.5, "planted": 20})
    shared = _shared()
    items, used_books = _eval_items(shared, args.ngrams, args.eval_share)
    docs = _docs(shared, used_books, args.mb, args.eval_share)
    rnd = random.Random(0)
    if 3 * args.planted > len(docs):
        ap.error(f"--planted {args.planted} needs {3 * args.planted} documents; --mb {args.mb} gives {len(docs)}")
    planted = {}
    planted_text = {}
    for kind, edit in (("verbatim", lambda s: s), ("case", _case_edit), ("punctuation", _punct_edit)):
        for _ in range(args.planted):
            j = rnd.randrange(len(docs))
            while j in planted:
                j = rnd.randrange(len(docs))
            item = _snippet(rnd.choice(items).split()[rnd.randrange(20):], N + 3)
            d = docs[j]
            cut = rnd.randrange(len(d) + 1)
            docs[j] = d[:cut] + " " + edit(item) + " " + d[cut:]
            planted[j] = kind
            planted_text[j] = edit(item)
    mb = sum(len(d.encode()) for d in docs) / 1e6

    t0 = time.process_time()
    hs = []
    for i in range(0, len(items), 4096):
        h, _ = text_ngram_hashes(items[i:i + 4096], N)
        hs.append(h)
    names = [f"bench{b}" for b in range(args.benchmarks)]
    bench_of = np.concatenate([np.full(len(h), (i * args.benchmarks) // len(hs), np.uint16) for i, h in enumerate(hs)])
    index = index_from_hashes(np.concatenate(hs), bench_of, n=N, names=names)
    t_index = time.process_time() - t0
    t0 = time.process_time()
    bloom = BloomIndex.from_index(index, args.fpr)
    t_bloom_build = time.process_time() - t0

    batches = [pa.array(docs[i:i + args.batch], pa.string()) for i in range(0, len(docs), args.batch)]
    t0 = time.process_time()
    hit = np.concatenate([match(b, index).first_bench >= 0 for b in batches])
    t_ours = time.process_time() - t0
    t0 = time.process_time()
    bhit_bloom = np.concatenate([match(b, bloom).first_bench >= 0 for b in batches])
    t_bloom = time.process_time() - t0
    queried = false_pos = 0
    for b in batches:   # the Bloom filters' false positives on the documents' own n-grams
        h, _ = ngram_hashes(words(normalize(b)), N)
        in_bloom = bloom.benchmarks(h) >= 0
        queried += len(h)
        false_pos += int((in_bloom & (index.benchmarks(h) < 0)).sum())

    t0 = time.process_time()
    grams = _baseline_set(items)
    t_bset = time.process_time() - t0
    sub = min(len(docs), max(200, len(docs) // 4))
    t0 = time.process_time()
    bhit = _baseline(docs[:sub], grams)
    t_base = (time.process_time() - t0) * len(docs) / sub
    set_mb = (sys.getsizeof(grams) + sum(sys.getsizeof(g) for g in grams)) / 1e6

    print(f"evaluation set: {len(items):,} items, {len(index):,} distinct {N}-grams; documents: {len(docs):,}, "
          f"{mb:.1f} MB; CPU seconds on one core, measured under whatever load the machine has")
    print(f"{'':44} {'index s':>8} {'index MB':>9} {'scan s':>8} {'docs/s':>9} {'MB/s':>7}")
    print(f"{'decontaminate (numpy hashes, radix index)':44} {t_index:8.1f} {index.nbytes / 1e6:9.1f} {t_ours:8.2f} "
          f"{len(docs) / t_ours:9,.0f} {mb / t_ours:7.2f}")
    print(f"{f'decontaminate bloom (fpr {args.fpr:g}, k={bloom.all.k})':44} {t_index + t_bloom_build:8.1f} "
          f"{bloom.nbytes / 1e6:9.1f} {t_bloom:8.2f} {len(docs) / t_bloom:9,.0f} {mb / t_bloom:7.2f}   "
          f"({bloom.nbytes * 8 / max(1, len(index)):.1f} bits/n-gram vs exact {index.nbytes * 8 / max(1, len(index)):.0f})")
    print(f"{'baseline: Python regex + set of 13-gram str':44} {t_bset:8.1f} {set_mb:9.1f} {t_base:8.2f} "
          f"{len(docs) / t_base:9,.0f} {mb / t_base:7.2f}   (scan timed on {sub:,} docs, scaled)")
    for kind in ("verbatim", "case", "punctuation"):
        rows = [j for j, k in planted.items() if k == kind]
        print(f"recall {kind:12}: exact {hit[rows].mean():.3f} ({int(hit[rows].sum())}/{len(rows)}), "
              f"bloom {bhit_bloom[rows].mean():.3f} ({int(bhit_bloom[rows].sum())}/{len(rows)})")
        if os.environ.get("DEBUG_MISSES"):
            for j in rows:
                if not hit[j]:
                    print("  missed:", repr(planted_text[j]))
    clean = np.array([j not in planted for j in range(len(docs))])
    print(f"clean documents flagged: {int(hit[clean].sum())} of {int(clean.sum())} "
          "(real 13-gram overlaps, e.g. the Project Gutenberg licence text every book carries; see the baseline agreement below)")
    print(f"bloom false positives: {false_pos} of {queried:,} document n-grams ({false_pos / max(1, queried):.2e}, "
          f"configured {args.fpr:g}); clean documents bloom flags and exact keeps: "
          f"{int((bhit_bloom & ~hit)[clean].sum())} of {int(clean.sum())}")
    agree = (hit[:sub] == bhit).mean()
    print(f"decisions equal to the baseline's on the timed subset: {agree:.4f}")


if __name__ == "__main__":
    main()
