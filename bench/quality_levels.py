"""``quality_levels``' decisions pass (:func:`stages.models.quality_levels.assign_levels`) on
synthetic side rows as the runner writes them (id hash, group, ``_split``, ``_row``, one
or two oriented scores with ties): CPU seconds and peak memory as the corpus grows, beside
a bare ``numpy.argsort`` of the same scores (the floor of any exact quantile) measured in
the same run. Each size runs in a fresh process so its peak is its own.

    .venv/bin/python bench/quality_levels.py [--docs 100000 1000000 4000000] [--scores 1 2]

Prints a table: documents, scores, the side table's bytes, CPU seconds of the pass (and of
the argsort), the process's peak RSS above its start (ru_maxrss: building the side rows and
the pass) and the part of it the pass added above the side rows' build, bytes per document.
CPU seconds are process time (``time.process_time``), so a shared machine slows the wall
clock, not them.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def one(n: int, k: int) -> dict:
    import numpy as np
    import pyarrow as pa

    from stages.models.quality_levels import assign_levels

    base = _peak()
    rng = np.random.default_rng(0)
    split_rows = 10_000
    splits = np.arange(n) // split_rows
    side = pa.table({
        "idh": pa.array(rng.integers(-(1 << 63), (1 << 63) - 1, n, dtype=np.int64)),
        "group": pa.array(["web"] * n, pa.string()).dictionary_encode().cast(pa.string()),
        "_split": pa.array([f"web/{s:05d}" for s in range(int(splits[-1]) + 1)], pa.string()).take(pa.array(splits)),
        "_row": pa.array(np.arange(n) % split_rows, pa.int64()),
        **{f"s{j}": pa.array(np.round(rng.random(n), 3), pa.float64()) for j in range(k)},
    })
    side_bytes = side.nbytes
    built = _peak()
    t0 = time.process_time()
    np.argsort(side.column("s0").to_numpy(), kind="stable")
    floor_s = time.process_time() - t0
    t0 = time.process_time()
    out = assign_levels(side, levels=5, scores=[f"s{j}" for j in range(k)], columns=[f"c{j}" for j in range(k)],
                        weights=[1.0] * k, lower=[False] * k, missing="drop")
    pass_s = time.process_time() - t0
    counts = np.bincount(out.column("quality_level").to_numpy(), minlength=5).tolist()
    return {"docs": n, "scores": k, "side_bytes": side_bytes, "pass_s": pass_s, "argsort_s": floor_s,
            "peak_bytes": _peak() - base,
            "pass_bytes": max(0, _peak() - built), "counts": counts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, nargs="+", default=[100_000, 1_000_000, 4_000_000])
    ap.add_argument("--scores", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--one", nargs=2, type=int, help=argparse.SUPPRESS)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench import _smoke

    args = _smoke.parse(ap, {"docs": [10_000], "scores": [1, 2]})
    if args.one:
        print(json.dumps(one(*args.one)))
        return
    print("| documents | scores | side rows | pass CPU s | argsort CPU s | peak above start | per document "
          "| of which the pass | per document | counts per level |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for n in args.docs:
        for k in args.scores:
            r = json.loads(subprocess.run([sys.executable, __file__, "--one", str(n), str(k)], check=True,
                                          capture_output=True, text=True).stdout)
            print(f"| {n:,} | {k} | {r['side_bytes'] / 2**20:,.0f} MiB | {r['pass_s']:.2f} | {r['argsort_s']:.2f} | "
                  f"{r['peak_bytes'] / 2**20:,.0f} MiB | {r['peak_bytes'] / n:.0f} B | "
                  f"{r['pass_bytes'] / 2**20:,.0f} MiB | {r['pass_bytes'] / n:.0f} B | {r['counts']} |")


if __name__ == "__main__":
    main()
