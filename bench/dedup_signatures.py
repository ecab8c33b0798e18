"""MinHash signature throughput per core: ours (vectorised over a batch) beside
datasketch on the same real documents, in one process (= one core).

Baselines, all producing identical signatures (checked here):

* ``datasketch update loop``   - per document: normalise, shingle, ``MinHash.update``
  per shingle (what a user writes with datasketch; the issue's baseline)
* ``... shingles given``        - the same loop, shingles precomputed (update only)
* ``datasketch update_batch``  - shingles precomputed, one ``update_batch`` per document

Run: ``python bench/dedup_signatures.py [--mb 4] [--num-perm 128]``
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import gzip  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from stages.dedup.minhash import Normalisation, Shingling, batch_signatures, permutations, shingles  # noqa: E402


def shared_dir() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def real_documents(mb: float) -> list[str]:
    """Wiki paragraphs and Gutenberg book chunks (~2 KB), about ``mb`` MB of text."""
    sh = shared_dir()
    wiki = (sh / "corpora/wiki/wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    docs = [p.strip() for p in wiki.split("\n") if len(p.split()) >= 20]
    for f in sorted((sh / "corpora/books/gutenberg").glob("*.txt.gz")):
        text = gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
        docs += [text[i:i + 2000] for i in range(0, len(text), 2000)]
        if sum(len(d) for d in docs) > mb * 1.2e6:
            break
    out, total = [], 0
    for d in docs:
        out.append(d)
        total += len(d.encode("utf-8"))
        if total >= mb * 1e6:
            break
    return out


def ours(docs: list[str], num_perm: int, batch: int = 1024) -> tuple[float, np.ndarray]:
    a, b = permutations(num_perm, 1)
    t0 = time.perf_counter()
    sigs = [batch_signatures(pa.array(docs[i:i + batch]), norm=Normalisation(), shingling=Shingling(), a=a, b=b).sig
            for i in range(0, len(docs), batch)]
    return time.perf_counter() - t0, np.concatenate(sigs)


def datasketch_loop(docs: list[str], num_perm: int) -> tuple[float, np.ndarray]:
    from datasketch import MinHash

    t0 = time.perf_counter()
    out = []
    for d in docs:
        m = MinHash(num_perm=num_perm, seed=1)
        for s in shingles(d):
            m.update(s)
        out.append(m.hashvalues)
    return time.perf_counter() - t0, np.array(out)


def datasketch_given(shs: list[list[bytes]], num_perm: int, batch: bool) -> tuple[float, np.ndarray]:
    from datasketch import MinHash

    t0 = time.perf_counter()
    out = []
    for s in shs:
        m = MinHash(num_perm=num_perm, seed=1)
        if batch:
            m.update_batch(s)
        else:
            for x in s:
                m.update(x)
        out.append(m.hashvalues)
    return time.perf_counter() - t0, np.array(out)


def measure(mb: float = 4.0, baseline_mb: float = 1.0, num_perm: int = 128) -> list[dict]:
    docs = real_documents(mb)
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    sub = real_documents(baseline_mb)
    sub_bytes = sum(len(d.encode("utf-8")) for d in sub)
    rows = []
    t, sig = ours(docs, num_perm)
    rows.append({"method": "ours (batch of 1024 docs)", "mb": nbytes / 1e6, "seconds": t, "mbps": nbytes / 1e6 / t})
    t_sub, sig_sub = ours(sub, num_perm)
    t, ref = datasketch_loop(sub, num_perm)
    assert np.array_equal(ref.astype(np.uint64), sig_sub.astype(np.uint64)), "signatures differ from datasketch"
    rows.append({"method": "datasketch update loop", "mb": sub_bytes / 1e6, "seconds": t, "mbps": sub_bytes / 1e6 / t})
    shs = [shingles(d) for d in sub]
    t, _ = datasketch_given(shs, num_perm, batch=False)
    rows.append({"method": "datasketch update loop, shingles given", "mb": sub_bytes / 1e6, "seconds": t,
                 "mbps": sub_bytes / 1e6 / t})
    t, _ = datasketch_given(shs, num_perm, batch=True)
    rows.append({"method": "datasketch update_batch, shingles given", "mb": sub_bytes / 1e6, "seconds": t,
                 "mbps": sub_bytes / 1e6 / t})
    ours_mbps = rows[0]["mbps"]
    for r in rows:
        r["ours_x"] = ours_mbps / r["mbps"]
    return rows


def print_table(rows: list[dict]) -> None:
    print(f"{'method':<42} {'MB':>7} {'s':>8} {'MB/s/core':>10} {'ours is x':>10}")
    for r in rows:
        print(f"{r['method']:<42} {r['mb']:>7.2f} {r['seconds']:>8.2f} {r['mbps']:>10.2f} {r['ours_x']:>10.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=4.0, help="MB of text for ours")
    ap.add_argument("--baseline-mb", type=float, default=1.0, help="MB of text for the datasketch baselines")
    ap.add_argument("--num-perm", type=int, default=128)
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"mb": 0.05, "baseline_mb": 0.02})
    print(f"MinHash signatures, num_perm={args.num_perm}, word 5-grams, one process; identical outputs checked")
    print_table(measure(args.mb, args.baseline_mb, args.num_perm))


if __name__ == "__main__":
    main()
