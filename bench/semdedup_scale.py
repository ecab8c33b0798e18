"""How ``semantic_dedup``'s passes grow with the corpus and with the cluster size: the
stage's declared passes in one process (``PassExecutor(local=True)``, what a job runs up
to ``local_rows``) over side files of synthetic 384-dimension float16 embeddings (the
shape all-MiniLM-L6-v2 gives), seconds per pass and the peak memory above the inputs.

The embeddings: ``--topics`` random directions, each document one of them plus noise
(cosine ~0.5 to its topic, so documents of a topic are alike but not duplicates), and 5%
near-copies of other documents (cosine ~0.97): every copy must go.

Run: ``python bench/semdedup_scale.py [--docs 20000,100000] [--cluster-rows 1000] [--sweep 250,1000,4000]``
(the sweep: ``cluster_rows`` at the largest ``--docs``). Timings on a shared machine
vary; compare rows of one run.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent))
sys.path.insert(0, str(_HERE.parent / "tests"))

import argparse
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DIM = 384


def side_files(n: int, topics: int, folder: Path, seed: int = 0) -> tuple[list[str], int]:
    """Side files (4, like four read splits) of ``n`` documents; returns them and the
    number of planted copies."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((topics, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    n_copies = n // 20
    base = centres[rng.integers(topics, size=n - n_copies)] + \
        rng.standard_normal((n - n_copies, DIM)).astype(np.float32) / np.sqrt(DIM) * 1.7
    src = rng.choice(n - n_copies, size=n_copies, replace=False)
    copies = base[src] + rng.standard_normal((n_copies, DIM)).astype(np.float32) / np.sqrt(DIM) * 0.25
    x = np.concatenate([base, copies])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x16 = x.astype(np.float16)
    folder.mkdir(parents=True)
    files = []
    for k, idx in enumerate(np.array_split(np.arange(n), 4)):
        emb = pa.FixedSizeListArray.from_arrays(pa.array(x16[idx].ravel()), DIM)
        t = pa.table({"id": pa.array([f"s/{i:016x}" for i in idx.tolist()]), "source": pa.array(["s"] * len(idx)),
                      "_emb": emb, "_split": pa.array([f"s/{k:05d}"] * len(idx)),
                      "_row": pa.array(np.arange(len(idx), dtype=np.int64))})
        files.append(str(folder / f"{k}.parquet"))
        pq.write_table(t, files[-1])
    return files, n_copies


def run(files: list[str], work: Path, **cfg) -> tuple[dict[str, float], float, int]:
    from peak_memory import maxrss_mb, rss_mark

    from datapipe.passes import run_global
    from datapipe.stage import StageContext
    from stages.dedup.semantic import SemanticDedup, SemanticDedupConfig

    shutil.rmtree(work, ignore_errors=True)
    stage = SemanticDedup(SemanticDedupConfig(local_rows=10**9, **cfg))
    ctx = StageContext(work_dir=str(work), sources=("s",))
    base = rss_mark()
    run_global(stage, files, ctx)
    peak = maxrss_mb() - base
    return {p["pass"]: p["seconds"] for p in ctx.report["passes"]}, peak, ctx.report["removed"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", default="20000,100000")
    ap.add_argument("--topics", type=int, default=200)
    ap.add_argument("--cluster-rows", type=int, default=1000)
    ap.add_argument("--sweep", default="250,1000,4000")
    ap.add_argument("--out", default=None, help="scratch folder (default: a temporary one)")
    from bench import _smoke

    args = _smoke.parse(ap, {"docs": "2000", "sweep": "500", "topics": 20})
    out = Path(args.out or tempfile.mkdtemp(prefix="semdedup-scale-"))
    sizes = [int(x) for x in args.docs.split(",")]
    print(f"{'documents':>9} {'cluster_rows':>12} {'sample':>7} {'centroids':>9} {'decisions':>9} {'total s':>8} "
          f"{'us/doc':>7} {'peak MB':>8} {'removed':>8} {'copies':>7}")
    runs = [(n, args.cluster_rows) for n in sizes] + [(sizes[-1], int(c)) for c in args.sweep.split(",")
                                                      if int(c) != args.cluster_rows]
    made: dict[int, tuple[list[str], int]] = {}
    for n, cr in runs:
        if n not in made:
            made[n] = side_files(n, args.topics, out / f"side-{n}")
        files, n_copies = made[n]
        t0 = time.perf_counter()
        secs, peak, removed = run(files, out / "work", cluster_rows=cr)
        total = time.perf_counter() - t0
        print(f"{n:>9,} {cr:>12,} {secs['sample']:>7.1f} {secs['centroids']:>9.1f} {secs['decisions']:>9.1f} "
              f"{total:>8.1f} {total / n * 1e6:>7.0f} {peak:>8.0f} {removed:>8,} {n_copies:>7,}")
    if args.out is None:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
