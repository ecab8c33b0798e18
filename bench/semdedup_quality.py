"""Semantic dedup quality on a labelled paraphrase set built here from real text: the
``semantic_dedup`` stage (MiniLM embeddings from ``stages.models.embed.encode_texts``) at
its default threshold and a sweep, beside the repository's MinHash dedup (``dedup``,
datasketch-compatible) on the same documents.

The set, built deterministically (``--seed``) with no download:

* **originals**: pairs of *adjacent* passages of one work - two paragraphs of one
  Wikipedia article (WikiText-2) or two ~120-word passages of one Project Gutenberg
  book. Each pair is a **hard negative**: same topic, same names, different content;
  both must be kept.
* **variants** of the first passage of a pair (source ``web``, lower priority), one
  kind each, all meaning the same as the original (positives: must be removed):

  - ``copy``: near-copy edits (typos, a boilerplate line, one dropped word);
  - ``light``: a quarter of the words that have a synonym swapped, two sentences
    swapped;
  - ``heavy``: every word with a synonym swapped, clause rewrites (``however`` moved,
    ``because`` -> ``since``, ``in order to`` -> ``to``, ...), sentences in another order;
  - ``reorder``: sentences shuffled, nothing else.

Ground truth (``truth.jsonl``: each variant's original and kind; each hard-negative
pair) and the corpus (``corpus.jsonl``) are written to ``--out``.

Scores, per system: precision = removed variants / removed documents; recall = removed
variants / variants; hard negatives merged = pairs of which one passage was removed;
and recall per kind.

The default threshold's row is repeated with 1, 16 and 64 k-means clusters (the default
is ``ceil(documents / cluster_rows)``, 2 here): what cutting the corpus finer costs in
recall (a paraphrase assigned to another cluster than its original is never compared).

Run: ``python bench/semdedup_quality.py [--out runs/bench/semdedup_quality] [--pairs 400]``
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent))

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import shutil
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

PRIORITY = ("wiki", "books", "web")
KINDS = ("copy", "light", "heavy", "reorder")
SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
WORD = re.compile(r"[A-Za-z]+")

#: word -> a word that means the same in most contexts (lower case; the case of the
#: replaced word is kept)
SYNONYMS = {
    "about": "regarding", "above": "over", "accept": "take", "achieve": "attain", "additional": "extra",
    "after": "following", "afterwards": "later", "again": "once more", "almost": "nearly", "also": "too",
    "although": "though", "always": "ever", "among": "amongst", "appear": "seem", "appeared": "seemed",
    "approximately": "roughly", "area": "region", "arrived": "came", "ask": "inquire", "asked": "inquired",
    "assist": "help", "attempt": "try", "attempted": "tried", "became": "grew", "before": "prior to",
    "began": "started", "begin": "start", "beginning": "start", "believe": "think", "big": "large",
    "build": "construct", "built": "constructed", "buy": "purchase", "called": "named", "city": "town",
    "close": "near", "completed": "finished", "consider": "regard", "considered": "regarded",
    "construction": "building", "continue": "carry on", "continued": "went on", "country": "nation",
    "create": "make", "created": "made", "currently": "presently", "decided": "chose", "described": "depicted",
    "despite": "in spite of", "destroyed": "ruined", "difficult": "hard", "during": "throughout",
    "each": "every", "early": "initial", "end": "close", "ended": "finished", "enough": "sufficient",
    "entire": "whole", "especially": "particularly", "establish": "found", "established": "founded",
    "eventually": "finally", "example": "instance", "fast": "quick", "father": "dad", "few": "several",
    "film": "movie", "finally": "at last", "find": "discover", "found": "discovered", "frequently": "often",
    "gave": "handed", "get": "obtain", "give": "hand", "going": "heading", "great": "large", "happy": "glad",
    "help": "aid", "however": "nevertheless", "huge": "enormous", "important": "significant",
    "include": "contain", "included": "contained", "including": "among them", "increase": "rise",
    "increased": "rose", "initially": "at first", "large": "big", "largely": "mostly", "later": "subsequently",
    "leave": "depart", "left": "departed", "little": "small", "located": "situated", "look": "glance",
    "looked": "glanced", "main": "principal", "major": "chief", "many": "numerous", "mostly": "mainly",
    "move": "shift", "moved": "relocated", "near": "close to", "need": "require", "needed": "required",
    "new": "fresh", "noted": "remarked", "now": "today", "number": "count", "often": "frequently",
    "old": "aged", "only": "merely", "part": "portion", "people": "persons", "perhaps": "maybe",
    "place": "spot", "placed": "put", "possible": "feasible", "primary": "main", "probably": "likely",
    "quickly": "rapidly", "rather": "quite", "received": "got", "region": "area", "released": "issued",
    "remain": "stay", "remained": "stayed", "replaced": "substituted", "reported": "stated",
    "required": "needed", "result": "outcome", "returned": "came back", "said": "stated", "saw": "observed",
    "see": "observe", "seen": "observed", "several": "a few", "shortly": "soon", "show": "display",
    "showed": "displayed", "significant": "notable", "similar": "alike", "since": "as", "small": "little",
    "soon": "shortly", "start": "begin", "started": "began", "still": "yet", "strong": "powerful",
    "suggested": "proposed", "take": "seize", "taken": "seized", "thought": "believed", "told": "informed",
    "took": "seized", "total": "overall", "towards": "toward", "travel": "journey", "tried": "attempted",
    "try": "attempt", "under": "beneath", "until": "till", "use": "employ", "used": "employed",
    "usually": "generally", "various": "diverse", "very": "highly", "wanted": "wished", "war": "conflict",
    "went": "travelled", "whole": "entire", "wife": "spouse", "without": "lacking", "woman": "lady",
    "women": "ladies", "work": "labour", "worked": "laboured", "world": "globe", "wrote": "penned",
    "young": "youthful", "answered": "replied", "beautiful": "lovely",
    "cried": "exclaimed", "dear": "beloved", "door": "doorway", "eyes": "gaze",
    "face": "countenance", "friend": "companion", "heard": "overheard", "house": "home", "knew": "understood",
    "know": "understand", "man": "fellow", "men": "fellows", "morning": "dawn", "mother": "mum",
    "night": "evening", "poor": "wretched", "replied": "answered", "room": "chamber", "round": "around",
    "seemed": "appeared", "speak": "talk", "spoke": "talked", "sure": "certain",
    "turned": "rotated", "walked": "strolled", "way": "manner", "whether": "if", "whilst": "while",
}
CLAUSES = [
    (re.compile(r"\bin order to\b"), "to"), (re.compile(r"\bbecause\b"), "since"),
    (re.compile(r"\ba number of\b"), "several"), (re.compile(r"\ba lot of\b"), "plenty of"),
    (re.compile(r"\bwas able to\b"), "could"), (re.compile(r"\bwere able to\b"), "could"),
    (re.compile(r"\bat the same time\b"), "simultaneously"), (re.compile(r"\bas well as\b"), "and also"),
    (re.compile(r"\bdue to\b"), "owing to"), (re.compile(r"\bin addition\b"), "moreover"),
    (re.compile(r"\bit is\b"), "it's"), (re.compile(r"\bdid not\b"), "didn't"),
    (re.compile(r"\bdo not\b"), "don't"), (re.compile(r"\bwas not\b"), "wasn't"),
    (re.compile(r"^However, (.+?)([.!?])$"), r"\1, however\2"),
    (re.compile(r"^In (\d{4}), (.+?)([.!?])$"), r"\2 in \1\3"),
]
BOILERPLATE = ["Share this article.", "Read more:", "Advertisement", "All rights reserved.",
               "Click here to subscribe to our newsletter."]


def shared_dir() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", _HERE.parents[1] / "shared"))


# -- real passages, in adjacent pairs -----------------------------------------------------

def _detok(p: str) -> str:
    """WikiText's tokenised spacing back to prose."""
    p = p.replace(" @-@ ", "-").replace(" @,@ ", ",").replace(" @.@ ", ".")
    p = re.sub(r" ([,.;:!?)\]'])", r"\1", p).replace("( ", "(").replace(" n't", "n't")
    p = re.sub(r'" (.*?) "', r'"\1"', p)
    return " ".join(p.split())


def wiki_pairs(sh: Path) -> list[tuple[str, str, str]]:
    """(article, paragraph, next paragraph): an article's 60-220 word paragraphs in
    pairs (the first and second, the third and fourth; at most four pairs an article)."""
    raw = (sh / "corpora/wiki/wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    out, title, paras = [], None, []
    for line in raw.split("\n") + [" = END = "]:
        s = line.strip()
        if re.fullmatch(r"= [^=].* =", s):
            good = [p for p in paras if 60 <= len(p.split()) <= 220]
            for k in range(0, min(len(good), 8) - 1, 2) if title else ():
                out.append((f"wiki:{title}", _detok(good[k]), _detok(good[k + 1])))
            title, paras = s.strip("= ").strip(), []
        elif s and not s.startswith("="):
            paras.append(s)
    return out


def book_pairs(sh: Path) -> list[tuple[str, str, str]]:
    """(book, passage, next passage): up to three pairs of consecutive ~120-word passages
    of prose from the middle of each Gutenberg book."""
    out = []
    for f in sorted((sh / "corpora/books/gutenberg").glob("*.txt.gz")):
        text = gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
        s, e = text.find("*** START OF"), text.find("*** END OF")
        if s < 0 or e < 0:
            continue
        body = text[text.find("\n", s) + 1:e]
        paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", body)]
        paras = [p for p in paras[len(paras) // 3:] if len(p.split()) >= 20 and p[:1].isalpha()]
        chunks, cur = [], []
        for p in paras:
            cur.append(p)
            if sum(len(c.split()) for c in cur) >= 120:
                chunks.append(" ".join(cur))
                cur = []
                if len(chunks) == 6:
                    break
        for k in range(0, len(chunks) - 1, 2):
            if all(len(c.split()) <= 300 for c in chunks[k:k + 2]):
                out.append((f"book:{f.name.split('.')[0]}", chunks[k], chunks[k + 1]))
    return out


# -- controlled edits ---------------------------------------------------------------------

def _case_like(src: str, new: str) -> str:
    return new[:1].upper() + new[1:] if src[:1].isupper() else new


def synonym_swap(text: str, rate: float, rng: random.Random) -> str:
    def sub(m: re.Match) -> str:
        w = m.group(0)
        new = SYNONYMS.get(w.lower())
        return _case_like(w, new) if new is not None and rng.random() < rate else w
    return WORD.sub(sub, text)


def sentences(text: str) -> list[str]:
    return [s for s in SENT.split(text) if s]


def clause_rewrite(text: str) -> str:
    out = []
    for s in sentences(text):
        for rx, rep in CLAUSES:
            s = rx.sub(rep, s)
        out.append(s[:1].upper() + s[1:])
    return " ".join(out)


def reorder(text: str, rng: random.Random, swaps: int | None = None) -> str:
    ss = sentences(text)
    if len(ss) < 2:
        return text
    if swaps is None:
        first = ss[0]
        rest = ss[1:]
        rng.shuffle(rest)
        ss = rest[:1] + [first] + rest[1:] if len(rest) else ss
    else:
        for _ in range(swaps):
            i, j = rng.sample(range(len(ss)), 2)
            ss[i], ss[j] = ss[j], ss[i]
    return " ".join(ss)


def near_copy(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    for _ in range(3):
        i = rng.randrange(len(words))
        w = words[i]
        if len(w) > 3:
            j = rng.randrange(len(w) - 1)
            words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
    del words[rng.randrange(len(words))]
    ss = sentences(" ".join(words))
    ss.insert(rng.randrange(len(ss) + 1), rng.choice(BOILERPLATE))
    return " ".join(ss)


def variant(text: str, kind: str, rng: random.Random) -> str:
    if kind == "copy":
        return near_copy(text, rng)
    if kind == "light":
        return reorder(synonym_swap(text, 0.25, rng), rng, swaps=1)
    if kind == "heavy":
        return reorder(clause_rewrite(synonym_swap(text, 1.0, rng)), rng)
    return reorder(text, rng)


def build(n_pairs: int, seed: int) -> tuple[list[dict], list[dict]]:
    sh = shared_dir()
    rng = random.Random(seed)
    pools = {"wiki": wiki_pairs(sh), "books": book_pairs(sh)}
    n_books = min(len(pools["books"]), n_pairs // 4)
    want = {"books": n_books, "wiki": min(len(pools["wiki"]), n_pairs - n_books)}
    docs, truth = [], []
    vid = 0
    for src in ("wiki", "books"):
        pool = list(pools[src])
        rng.shuffle(pool)
        for i, (work, a, b) in enumerate(pool[:want[src]]):
            ida, idb = f"{src}/{i:04d}a", f"{src}/{i:04d}b"
            docs += [{"id": ida, "source": src, "text": a}, {"id": idb, "source": src, "text": b}]
            truth.append({"pair": [ida, idb], "label": "hard_negative", "work": work})
            for kind in rng.sample(KINDS, rng.choice([1, 1, 2])):
                v = {"id": f"web/{vid:05d}", "source": "web", "text": variant(a, kind, rng)}
                vid += 1
                if v["text"] == a:
                    continue
                docs.append(v)
                truth.append({"pair": [ida, v["id"]], "label": "duplicate", "kind": kind})
    return docs, truth


# -- the two systems ------------------------------------------------------------------------

def _side_files(stage, docs: list[dict], work: Path, emb: np.ndarray | None) -> tuple[list[str], dict]:
    from datapipe import schema as S

    (work / "side").mkdir(parents=True)
    files, ids = [], {}
    for src in PRIORITY:
        idx = [k for k, d in enumerate(docs) if d["source"] == src]
        if not idx:
            continue
        ids[src] = [docs[k]["id"] for k in idx]
        batch = S.make_batch(source=src, ids=ids[src], texts=[docs[k]["text"] for k in idx])
        if emb is not None:
            e = emb[idx].astype(np.float16)
            batch = batch.append_column("embedding", pa.FixedSizeListArray.from_arrays(pa.array(e.ravel()), e.shape[1]))
        side = stage.side(batch)
        side = side.append_column("_split", pa.array([src] * len(idx))).append_column(
            "_row", pa.array(range(len(idx)), pa.int64()))
        files.append(str(work / "side" / f"{src}.parquet"))
        pq.write_table(side, files[-1])
    return files, ids


def _removed(uri: str | None, ids: dict) -> set[str]:
    if uri is None:
        return set()
    dec = pq.read_table(uri)
    return {ids[s][r] for s, r in zip(dec["_split"].to_pylist(), dec["_row"].to_pylist())}


def run_semantic(docs: list[dict], emb: np.ndarray, work: Path, **cfg) -> tuple[set[str], float]:
    """``semantic_dedup`` as the runner drives it: side files per source, then its
    declared passes (in this process at this size)."""
    from datapipe.passes import run_global
    from datapipe.stage import StageContext
    from stages.dedup.semantic import SemanticDedup, SemanticDedupConfig

    shutil.rmtree(work, ignore_errors=True)
    stage = SemanticDedup(SemanticDedupConfig(source_priority=PRIORITY, **cfg))
    t0 = time.perf_counter()
    files, ids = _side_files(stage, docs, work, emb)
    uri = run_global(stage, files, StageContext(work_dir=str(work / "work"), sources=PRIORITY))
    return _removed(uri, ids), time.perf_counter() - t0


def run_minhash(docs: list[dict], work: Path, **cfg) -> tuple[set[str], float]:
    from datapipe.passes import run_global
    from datapipe.stage import StageContext
    from stages.dedup import Dedup, DedupConfig

    shutil.rmtree(work, ignore_errors=True)
    stage = Dedup(DedupConfig(source_priority=PRIORITY, **cfg))
    t0 = time.perf_counter()
    files, ids = _side_files(stage, docs, work, None)
    uri = run_global(stage, files, StageContext(work_dir=str(work / "work"), sources=PRIORITY))
    return _removed(uri, ids), time.perf_counter() - t0


def score(removed: set[str], truth: list[dict]) -> dict:
    dups = [t for t in truth if t["label"] == "duplicate"]
    pos = {t["pair"][1] for t in dups}
    tp = len(removed & pos)
    p = tp / len(removed) if removed else 1.0
    r = tp / len(pos) if pos else 1.0
    hard = [t for t in truth if t["label"] == "hard_negative"]
    out = {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0, "removed": len(removed),
           "false_positives": len(removed - pos),
           "hard_negatives_merged": sum(bool(set(t["pair"]) & removed) for t in hard), "hard_negatives": len(hard)}
    for kind in KINDS:
        ks = [t["pair"][1] for t in dups if t["kind"] == kind]
        out[f"recall_{kind}"] = sum(v in removed for v in ks) / len(ks) if ks else float("nan")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/bench/semdedup_quality", help="where the corpus and ground truth go")
    ap.add_argument("--pairs", type=int, default=400, help="hard-negative pairs (originals: twice as many)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sweep", default="0.80,0.85,0.88,0.90,0.92,0.94,0.96,0.98")
    from bench import _smoke

    args = _smoke.parse(ap, {"pairs": 12, "out": "<tmp>", "sweep": "0.9"})
    from stages.models.embed import encode_texts
    from stages.dedup.semantic import SemanticDedupConfig
    from tests.minilm import minilm_dir

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    docs, truth = build(args.pairs, args.seed)
    with open(out / "corpus.jsonl", "w") as f:
        f.writelines(json.dumps(d) + "\n" for d in docs)
    with open(out / "truth.jsonl", "w") as f:
        f.writelines(json.dumps(t) + "\n" for t in truth)
    kinds = [t.get("kind") for t in truth if t["label"] == "duplicate"]
    print(f"set: {len(docs)} documents; {sum(t['label'] == 'hard_negative' for t in truth)} hard-negative pairs "
          f"(adjacent passages of one article or book), {len(kinds)} paraphrases "
          f"({', '.join(f'{k} {kinds.count(k)}' for k in KINDS)}); built in {time.perf_counter() - t0:.1f} s, "
          f"written to {out}/")

    t0 = time.perf_counter()
    digest = hashlib.sha256((out / "corpus.jsonl").read_bytes()).hexdigest()[:16]
    cached = out / f"embeddings-{digest}.npy"    # the same corpus embeds the same: reuse
    if cached.exists():
        emb = np.load(cached)
    else:
        emb = encode_texts(str(minilm_dir()), [d["text"] for d in docs], device=args.device)
        np.save(cached, emb)
    print(f"embeddings: all-MiniLM-L6-v2, {len(docs)} documents in {time.perf_counter() - t0:.1f} s on {args.device}"
          f"{' (cached)' if cached.exists() and time.perf_counter() - t0 < 1 else ''}")

    default = SemanticDedupConfig().threshold
    rows = []
    for th in sorted({float(x) for x in args.sweep.split(",")} | {default}):
        removed, secs = run_semantic(docs, emb, out / "work_sem", threshold=th)
        rows.append((f"semantic_dedup{' (default)' if th == default else ''}", f"cosine {th:.2f}", score(removed, truth),
                     secs))
    for k in (1, 16, 64):   # more clusters: less work each; a pair split over two is missed
        removed, secs = run_semantic(docs, emb, out / "work_sem", clusters=k)
        rows.append((f"semantic_dedup, {k} cluster{'s' if k > 1 else ''}", f"cosine {default:.2f}",
                     score(removed, truth), secs))
    for th in (0.8, 0.5, 0.3):
        removed, secs = run_minhash(docs, out / "work_minhash", threshold=th)
        rows.append((f"dedup (MinHash){' (default)' if th == 0.8 else ''}", f"Jaccard {th:.2f}", score(removed, truth),
                     secs))
    print("\nprecision = removed paraphrases / removed; recall = removed paraphrases / paraphrases; "
          "hard neg = hard-negative pairs with a passage removed")
    head = (f"{'system':<28} {'threshold':<13} {'precision':>9} {'recall':>7} {'F1':>6} {'removed':>7} {'FP':>4} "
            f"{'hard neg':>9} " + " ".join(f"{'r_' + k:>9}" for k in KINDS) + f" {'s':>6}")
    print(head)
    for name, th, sc, secs in rows:
        print(f"{name:<28} {th:<13} {sc['precision']:>9.4f} {sc['recall']:>7.4f} {sc['f1']:>6.3f} {sc['removed']:>7} "
              f"{sc['false_positives']:>4} {sc['hard_negatives_merged']:>4}/{sc['hard_negatives']:<4} "
              + " ".join(f"{sc['recall_' + k]:>9.3f}" for k in KINDS) + f" {secs:>6.1f}")
    (out / "results.json").write_text(json.dumps([{"system": n, "threshold": th, **sc, "seconds": s}
                                                  for n, th, sc, s in rows], indent=2) + "\n")


if __name__ == "__main__":
    main()
