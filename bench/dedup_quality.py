"""Near-duplicate quality on real text with known similarities: our dedup stage
(``side()`` per source, its passes once) beside datasketch's ``MinHashLSH`` queried with the same parameters.

The benchmark is built here, deterministically, from real documents: Wikipedia
paragraphs (WikiText-2), CCNet / Dolma web pages and Project Gutenberg book passages.
Originals that already resemble each other are dropped (Jaccard >= 0.5). Each
original then gets 0-3 variants in the lower-priority ``web`` source, edited the way
copies drift on the web - typos, inserted boilerplate, reordered sentences,
truncation, dropped and inserted words - until a target Jaccard similarity (uniform in
[0.5, 1]) is reached; some are formatting-only copies (exact after normalisation).
The true Jaccard of every variant to its original and to its siblings is computed on
the stage's own shingle sets and written beside the corpus (``truth.jsonl``).

Labels (per variant; originals must all survive):

* positive: Jaccard to its original >= 0.85 (must be removed)
* negative: Jaccard to every other document < threshold (must be kept)
* grey: the rest (0.8 <= J < 0.85, or linked only through a sibling): not scored

precision = removed positives / (removed positives + removed negatives and originals),
recall = removed positives / positives. Targets: both >= 0.95 at threshold 0.8.

Run: ``python bench/dedup_quality.py [--out runs/bench/dedup_quality] [--originals 1500]``
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import time  # noqa: E402

import pyarrow as pa  # noqa: E402

from stages.dedup.minhash import shingles  # noqa: E402

BOILERPLATE = [
    "Click here to subscribe to our newsletter.",
    "All rights reserved.",
    "Share this article on Facebook, Twitter and LinkedIn.",
    "Advertisement",
    "We use cookies to improve your experience on our site. By continuing you agree to our use of cookies.",
    "Read more:",
    "Posted by admin in Uncategorized | Leave a comment",
    "Copyright 2020. Terms of use | Privacy policy",
    "Sign up for free to get the latest news delivered to your inbox.",
    "Related articles",
]
SOURCES = ("wiki", "books", "ccnet", "web")
SENT = re.compile(r"(?<=[.!?])\s+")


def shared_dir() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", _HERE.parents[1] / "shared"))


# -- real originals --------------------------------------------------------------------

def wiki_paragraphs(sh: Path) -> list[str]:
    raw = (sh / "corpora/wiki/wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    return [p.strip() for p in raw.split("\n") if 80 <= len(p.split()) <= 500 and not p.strip().startswith("=")]


def ccnet_pages(sh: Path) -> list[str]:
    docs = []
    for f in sorted((sh / "corpora/ccnet").glob("cc_en_head-*.jsonl")):
        docs += [json.loads(line)["text"] for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    with gzip.open(sh / "corpora/ccnet/000.json.gz", "rt", encoding="utf-8") as f:
        docs += [json.loads(line)["text"] for line in f if line.strip()]
    for f in sorted((sh / "corpora/redpajama").glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                d = json.loads(line)
                docs.append(d.get("text") or "")
    out = []
    for d in docs:   # long pages in ~300-word passages
        words = d.split()
        for i in range(0, len(words), 300):
            if len(words[i:i + 300]) >= 80:
                out.append(" ".join(words[i:i + 300]))
    return out


def book_passages(sh: Path, per_book: int = 12) -> list[str]:
    out = []
    for f in sorted((sh / "corpora/books/gutenberg").glob("*.txt.gz")):
        text = gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
        s, e = text.find("*** START OF"), text.find("*** END OF")
        if s < 0 or e < 0:
            continue
        body = text[text.find("\n", s) + 1:e]
        paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", body)]
        chunk: list[str] = []
        got = 0
        for p in paras[len(paras) // 10:]:      # skip the front matter
            chunk.append(p)
            if sum(len(c.split()) for c in chunk) >= 150:
                out.append(" ".join(chunk))
                chunk = []
                got += 1
                if got >= per_book:
                    break
    return out


# -- edits -----------------------------------------------------------------------------

def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if (a or b) else 1.0


def edit_once(text: str, rng: random.Random, truncated: list[bool]) -> tuple[str, str]:
    op = rng.choices(["typo", "boilerplate", "reorder", "truncate", "delete", "insert"],
                     weights=[4, 2, 2, 1, 2, 1])[0]
    words = text.split(" ")
    if op == "typo":
        i = rng.randrange(len(words))
        w = words[i]
        if len(w) >= 3:
            j = rng.randrange(len(w) - 1)
            kind = rng.randrange(3)
            w = (w[:j] + w[j + 1] + w[j] + w[j + 2:]) if kind == 0 else (w[:j] + w[j + 1:]) if kind == 1 else \
                (w[:j] + rng.choice("etaoinshr") + w[j + 1:])
        else:
            w = w + rng.choice("aeiou")
        words[i] = w
        return " ".join(words), op
    if op == "boilerplate":
        sents = SENT.split(text)
        sents.insert(rng.randrange(len(sents) + 1), rng.choice(BOILERPLATE))
        return " ".join(sents), op
    if op == "reorder":
        sents = SENT.split(text)
        if len(sents) < 2:
            return edit_once(text, rng, truncated)
        i, j = rng.sample(range(len(sents)), 2)
        sents[i], sents[j] = sents[j], sents[i]
        return " ".join(sents), op
    if op == "truncate":
        if truncated[0]:
            return edit_once(text, rng, truncated)
        truncated[0] = True
        cut = max(1, int(len(words) * rng.uniform(0.03, 0.12)))
        return " ".join(words[:-cut]), op
    if op == "delete":
        del words[rng.randrange(len(words))]
        return " ".join(words), op
    words.insert(rng.randrange(len(words) + 1), rng.choice(["the", "and", "very", "also", "really", "new"]))
    return " ".join(words), op


def make_variant(orig: str, target: float, rng: random.Random) -> tuple[str, float, list[str]]:
    """Edit ``orig`` until its Jaccard to the original drops to ``target`` (or below)."""
    base = set(shingles(orig))
    text, ops, truncated = " ".join(orig.split()), [], [False]
    j = 1.0
    for attempt in range(400):
        if j <= target:
            break
        new, op = edit_once(text, rng, truncated)
        jn = jaccard(base, set(shingles(new)))
        if jn < target - 0.03 and attempt < 30:     # overshoot: try a milder edit first
            continue
        text, j = new, jn
        ops.append(op)
    return text, j, ops


def formatting_copy(orig: str, rng: random.Random) -> str:
    """Exact after normalisation: case, punctuation and spacing changes only."""
    t = orig.upper() if rng.random() < 0.5 else orig.lower()
    return "  " + t.replace(", ", " , ").replace(". ", ".\n\n") + " ...\n"


# -- the benchmark set -------------------------------------------------------------------

def build(n_originals: int, seed: int = 7) -> tuple[list[dict], list[dict]]:
    from datasketch import MinHash, MinHashLSH

    sh = shared_dir()
    rng = random.Random(seed)
    pools = {"wiki": wiki_paragraphs(sh), "books": book_passages(sh), "ccnet": ccnet_pages(sh)}
    want = {"ccnet": min(len(pools["ccnet"]), n_originals // 10)}
    want["books"] = min(len(pools["books"]), (n_originals - want["ccnet"]) // 2)
    want["wiki"] = n_originals - want["ccnet"] - want["books"]
    originals = []
    for src in ("wiki", "books", "ccnet"):
        pool = list(pools[src])
        rng.shuffle(pool)
        for i, t in enumerate(pool[:want[src]]):
            originals.append({"id": f"{src}/{i:05d}", "source": src, "text": t})
    # drop originals that already resemble another one (true Jaccard >= 0.5)
    sets = {d["id"]: set(shingles(d["text"])) for d in originals}
    originals = [d for d in originals if sets[d["id"]]]
    lsh = MinHashLSH(threshold=0.4, num_perm=64)
    drop = set()
    for d in originals:
        m = MinHash(num_perm=64)
        m.update_batch(list(sets[d["id"]]))
        for other in lsh.query(m):
            if jaccard(sets[d["id"]], sets[other]) >= 0.5:
                drop.add(d["id"])
                break
        else:
            lsh.insert(d["id"], m)
    originals = [d for d in originals if d["id"] not in drop]
    # variants
    docs = list(originals)
    truth = []
    vid = 0
    for d in originals:
        k = rng.choices([0, 1, 2, 3], weights=[2, 5, 2, 1])[0]
        fam = []
        for _ in range(k):
            if rng.random() < 0.08:
                text, ops = formatting_copy(d["text"], rng), ["format"]
            else:
                text, _, ops = make_variant(d["text"], rng.uniform(0.5, 1.0), rng)
            v = {"id": f"web/{vid:05d}", "source": "web", "text": text}
            vid += 1
            docs.append(v)
            fam.append((v, ops))
        fam_sets = [set(shingles(v["text"])) for v, _ in fam]
        for i, (v, ops) in enumerate(fam):
            j_orig = jaccard(fam_sets[i], sets[d["id"]])
            j_sib = max([jaccard(fam_sets[i], fam_sets[x]) for x in range(len(fam)) if x != i], default=0.0)
            truth.append({"id": v["id"], "original": d["id"], "jaccard": round(j_orig, 4),
                          "max_sibling_jaccard": round(j_sib, 4), "edits": ops})
    return docs, truth


def label(t: dict, threshold: float) -> str:
    if t["jaccard"] >= 0.85:
        return "positive"
    if max(t["jaccard"], t["max_sibling_jaccard"]) < threshold:
        return "negative"
    return "grey"


def score(removed: set[str], truth: list[dict], originals: set[str], threshold: float) -> dict:
    lab = {t["id"]: label(t, threshold) for t in truth}
    pos = {i for i, v in lab.items() if v == "positive"}
    neg = {i for i, v in lab.items() if v == "negative"} | originals
    tp, fp = len(removed & pos), len(removed & neg)
    return {"precision": tp / (tp + fp) if tp + fp else 1.0, "recall": tp / len(pos) if pos else 1.0,
            "removed": len(removed), "tp": tp, "fp": fp, "positives": len(pos)}


def by_bin(removed: set[str], truth: list[dict]) -> dict[str, tuple[int, int]]:
    bins: dict[str, list[int]] = {}
    for t in truth:
        b = min(int(t["jaccard"] * 20) / 20, 0.95)
        key = f"{b:.2f}" if b >= 0.5 else "<0.50"
        bins.setdefault(key, [0, 0])
        bins[key][0] += t["id"] in removed
        bins[key][1] += 1
    return {k: tuple(v) for k, v in sorted(bins.items())}


# -- the two systems ---------------------------------------------------------------------

PRIORITY = ("wiki", "books", "ccnet", "web")


def run_ours(docs: list[dict], work: Path, **cfg) -> tuple[set[str], float, dict]:
    """The stage as a runner drives it: ``side()`` per split (one per source here),
    then its passes once (``run_global``; the one-process path at this size)."""
    import pyarrow.parquet as pq

    from datapipe import schema as S
    from datapipe.passes import run_global
    from datapipe.stage import StageContext
    from stages.dedup import Dedup, DedupConfig

    shutil.rmtree(work, ignore_errors=True)
    (work / "side").mkdir(parents=True)
    stage = Dedup(DedupConfig(source_priority=PRIORITY, **cfg))
    ids: dict[str, list[str]] = {}
    files = []
    t0 = time.perf_counter()
    for src in SOURCES:
        part = [d for d in docs if d["source"] == src]
        if not part:
            continue
        ids[src] = [d["id"] for d in part]
        side = stage.side(S.make_batch(source=src, ids=ids[src], texts=[d["text"] for d in part]))
        side = side.append_column("_split", pa.array([src] * len(part))).append_column(
            "_row", pa.array(range(len(part)), pa.int64()))
        files.append(str(work / "side" / f"{src}.parquet"))
        pq.write_table(side, files[-1])
    ctx = StageContext(work_dir=str(work), sources=SOURCES)
    uri = run_global(stage, files, ctx)
    secs = time.perf_counter() - t0
    removed = set()
    if uri is not None:
        dec = pq.read_table(uri)
        removed = {ids[s][r] for s, r in zip(dec["_split"].to_pylist(), dec["_row"].to_pylist())}
    return removed, secs, ctx.report


def run_datasketch(docs: list[dict], bands: int, rows: int, verify: str, threshold: float) -> tuple[set[str], float]:
    """The usual datasketch dedup loop: documents in survival order; query, drop the
    document if a (verified) candidate was kept before it, else insert it."""
    from datasketch import MinHash, MinHashLSH

    order = sorted(docs, key=lambda d: (PRIORITY.index(d["source"]), d["id"]))
    t0 = time.perf_counter()
    lsh = MinHashLSH(num_perm=128, params=(bands, rows))
    kept_sets: dict[str, set] = {}
    kept_sigs: dict[str, MinHash] = {}
    removed = set()
    for d in order:
        sh = shingles(d["text"])
        if not sh:
            continue
        m = MinHash(num_perm=128, seed=1)
        m.update_batch(sh)
        cands = lsh.query(m)
        s = set(sh)
        if verify == "jaccard":
            cands = [c for c in cands if jaccard(s, kept_sets[c]) >= threshold]
        elif verify == "signature":
            cands = [c for c in cands if m.jaccard(kept_sigs[c]) >= threshold]
        if cands:
            removed.add(d["id"])
        else:
            lsh.insert(d["id"], m)
            kept_sets[d["id"]] = s
            kept_sigs[d["id"]] = m
    return removed, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/bench/dedup_quality", help="where the corpus and ground truth go")
    ap.add_argument("--originals", type=int, default=1500)
    ap.add_argument("--threshold", type=float, default=0.8)
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"originals": 40, "out": "<tmp>"})
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    built = out / f"built-{args.originals}.json"
    if built.exists():    # the build is deterministic: reuse it
        docs = [json.loads(line) for line in open(out / "corpus.jsonl")]
        truth = [json.loads(line) for line in open(out / "truth.jsonl")]
    else:
        docs, truth = build(args.originals)
        with open(out / "corpus.jsonl", "w") as f:
            for d in docs:
                f.write(json.dumps(d) + "\n")
        with open(out / "truth.jsonl", "w") as f:
            for t in truth:
                f.write(json.dumps(t) + "\n")
        built.write_text("{}\n")
    originals = {d["id"] for d in docs if d["source"] != "web"}
    labels = [label(t, args.threshold) for t in truth]
    print(f"benchmark: {len(originals)} originals (wiki/books/ccnet), {len(truth)} web variants "
          f"({labels.count('positive')} positive >= 0.85, {labels.count('negative')} negative < {args.threshold}, "
          f"{labels.count('grey')} grey); built in {time.perf_counter() - t0:.0f} s; written to {out}/")

    results = []
    for verify in ("jaccard", "signature", "none"):
        removed, secs, rep = run_ours(docs, out / f"work_{verify}", verify=verify, threshold=args.threshold)
        b, r = rep["bands"], rep["rows"]
        results.append(("ours (side + decide)", verify, b, r, score(removed, truth, originals, args.threshold), secs,
                        by_bin(removed, truth)))
        removed_ds, secs_ds = run_datasketch(docs, b, r, verify, args.threshold)
        results.append(("datasketch MinHashLSH", verify, b, r, score(removed_ds, truth, originals, args.threshold),
                        secs_ds, by_bin(removed_ds, truth)))
        agree = len(removed & removed_ds) / max(1, len(removed | removed_ds))
        results[-1][4]["agreement_with_ours"] = agree
    print(f"\nthreshold {args.threshold}, num_perm 128, word 5-grams; precision/recall over positives (J >= 0.85)")
    print(f"{'system':<24} {'verify':<10} {'b x r':>7} {'precision':>9} {'recall':>7} {'removed':>8} {'FP':>4} "
          f"{'s':>7}  same removals as ours")
    for name, verify, b, r, sc, secs, _ in results:
        same = f"{sc['agreement_with_ours']:.4f}" if "agreement_with_ours" in sc else ""
        print(f"{name:<24} {verify:<10} {f'{b}x{r}':>7} {sc['precision']:>9.4f} {sc['recall']:>7.4f} "
              f"{sc['removed']:>8} {sc['fp']:>4} {secs:>7.1f}  {same}")
    print("\nremoved / variants by true Jaccard to the original (empirical S-curve, after verification)")
    bins = sorted(results[0][6], key=lambda b: -1.0 if b.startswith("<") else float(b))
    print(f"{'system':<24} {'verify':<10} " + " ".join(f"{b:>8}" for b in bins))
    for name, verify, _, _, _, _, hist in results:
        print(f"{name:<24} {verify:<10} " + " ".join(f"{hist.get(b, (0, 0))[0]:>3}/{hist.get(b, (0, 0))[1]:<4}"
                                                     for b in bins))
    summary = [{"system": n, "verify": v, "bands": b, "rows": r, **sc, "seconds": s} for n, v, b, r, sc, s, _ in results]
    (out / "results.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
