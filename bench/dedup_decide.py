"""Dedup micro benchmark: the global part of the stage at 20k and 80k documents (real
passages + edited near-copies, built by ``bench/peers.py``), new against old.

* new: ``side()`` over the documents in 1,024-row batches (what the split tasks do),
  then the stage's passes on the side files (``datapipe.passes.run_global``, the engine's
  entry point), once on the one-process path and once on the
  distributed path (Ray Data passes, ``local_rows: 0``);
* old: the chain of Ray Data passes the stage ran before the global-stage contract
  (signatures, exact, candidates, verification, components, decisions, mark) from
  commit ``--old`` (default: the last commit before it), run on the same documents.

All in this run, on the same machine, so the ratios hold even when timings are noisy.
Run: ``python bench/dedup_decide.py [--sizes 20000,80000] [--old COMMIT]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import io
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

OLD = "6960814"


def load_docs(folder: Path):
    import pyarrow as pa

    from datapipe import schema as S

    tables = []
    for f in sorted(folder.glob("*.jsonl")):
        rows = [json.loads(line) for line in f.read_text().splitlines()]
        tables.append(S.make_batch(source="docs", ids=[r["id"] for r in rows], texts=[r["text"] for r in rows]))
    return pa.concat_tables(tables).combine_chunks()


def run_new(t, work: Path, **cfg) -> tuple[float, float, int, dict]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from datapipe.passes import run_global
    from datapipe.stage import StageContext
    from stages.dedup import Dedup, DedupConfig

    shutil.rmtree(work, ignore_errors=True)
    (work / "side").mkdir(parents=True)
    stage = Dedup(DedupConfig(**cfg))
    t0 = time.perf_counter()
    files = []
    for i in range(0, t.num_rows, 1024):
        side = stage.side(t.slice(i, 1024))
        side = side.append_column("_split", pa.array([f"s{i // 8192:04d}"] * side.num_rows))
        side = side.append_column("_row", pa.array(range(i % 8192, i % 8192 + side.num_rows), pa.int64()))
        files.append(str(work / "side" / f"{i:08d}.parquet"))
        pq.write_table(side, files[-1])
    t_side = time.perf_counter() - t0
    ctx = StageContext(work_dir=str(work), sources=("docs",))
    t0 = time.perf_counter()
    uri = run_global(stage, files, ctx)
    t_decide = time.perf_counter() - t0
    removed = pq.read_table(uri, columns=["_row"]).num_rows if uri else 0   # a file or a folder
    return t_side, t_decide, removed, ctx.report


OLD_SCRIPT = """
import sys, time, json, logging
import pyarrow as pa, pyarrow.parquet as pq, pyarrow.compute as pc, ray
from datapipe.stage import StageContext
from stages.dedup import Dedup, DedupConfig
t = pq.read_table(sys.argv[1])
ray.init(num_cpus=int(sys.argv[3]), include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
ray.data.DataContext.get_current().enable_progress_bars = False
ds = ray.data.from_arrow([t.slice(i, 8192) for i in range(0, t.num_rows, 8192)])
ctx = StageContext(work_dir=sys.argv[2], sources=("docs",))
t0 = time.perf_counter()
out = Dedup(DedupConfig()).run(ds, ctx).materialize()
secs = time.perf_counter() - t0
removed = sum(ray.get(out.map_batches(lambda b: pa.table({"n": [pc.sum(pc.equal(b["_reject_stage"], "dedup")).as_py() or 0]}),
                                      batch_format="pyarrow").to_arrow_refs())[i]["n"][0].as_py()
              for i in range(out.num_blocks()))
print(json.dumps({"seconds": secs, "removed": removed, "passes": ctx.report.get("passes", [])}))
"""


def run_old(t, work: Path, commit: str, cpus: int) -> tuple[float, int]:
    import pyarrow.parquet as pq

    src = work / "old_src"
    shutil.rmtree(work, ignore_errors=True)
    src.mkdir(parents=True)
    blob = subprocess.run(["git", "-C", str(REPO), "archive", commit, "datapipe", "stages"], check=True,
                          capture_output=True).stdout
    tarfile.open(fileobj=io.BytesIO(blob)).extractall(src, filter="data")
    pq.write_table(t, work / "docs.parquet")
    env = {**os.environ, "PYTHONPATH": str(src)}
    p = subprocess.run([sys.executable, "-c", OLD_SCRIPT, str(work / "docs.parquet"), str(work / "w"), str(cpus)],
                       env=env, capture_output=True, text=True)
    if p.returncode:   # the old chain's commit no longer runs against this Ray/Python: the row says so
        print(f"old chain at {commit} did not run: {p.stderr.strip().splitlines()[-1]}", file=sys.stderr, flush=True)
        return float("nan"), -1
    res = json.loads(p.stdout.strip().splitlines()[-1])
    return res["seconds"], res["removed"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="20000,80000")
    ap.add_argument("--work", default=str(REPO / "runs/bench/dedup_decide"))
    ap.add_argument("--old", default=OLD, help="commit with the old pass chain")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--only-local", action="store_true", help="skip the distributed path and the old chain")
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"sizes": "400", "work": "<tmp>", "only_local": True})
    import logging

    import peers
    import ray

    sh = peers.shared_dir()
    if not args.only_local:
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
        ray.data.DataContext.get_current().enable_progress_bars = False
    print(f"{'docs':>7} {'side s':>7} {'decide local s':>14} {'decide dist s':>13} {'old chain s':>11} "
          f"{'removed new/old':>16} {'old / (side+local)':>18}", flush=True)
    for n in (int(x) for x in args.sizes.split(",")):
        work = Path(args.work) / str(n)
        data = work / "input"
        if not (work / "built.json").exists():
            shutil.rmtree(work, ignore_errors=True)
            peers.build_dedup(sh, n, data)
            (work / "built.json").write_text("{}")
        t = load_docs(data)
        t_side, t_local, rem, rep = run_new(t, work / "new_local")
        nan = float("nan")
        t_dist, rem_d, t_old, rem_old = nan, rem, nan, -1
        if not args.only_local:
            _, t_dist, rem_d, _ = run_new(t, work / "new_dist", local_rows=0)
            t_old, rem_old = run_old(t, work / "old", args.old, args.cpus)
        assert rem == rem_d, (rem, rem_d)
        print(f"{t.num_rows:>7} {t_side:>7.1f} {t_local:>14.2f} {t_dist:>13.1f} {t_old:>11.1f} "
              f"{f'{rem}/{rem_old}':>16} {t_old / (t_side + t_local):>17.1f}x", flush=True)
        print("   local passes: " + ", ".join(f"{p['pass']} {p['seconds']:.2f}s" for p in rep["passes"]), flush=True)
    if ray.is_initialized():
        ray.shutdown()


if __name__ == "__main__":
    main()
