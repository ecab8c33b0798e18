"""Dedup at three corpus sizes (10x apart): time and peak memory of every pass and of
the driver, plus signature throughput per core beside datasketch's update loop.

The corpora are synthetic but made of real words: documents of 150-250 words drawn
from WikiText-2's vocabulary with its word frequencies, across three sources, with
planted exact copies (5%) and typo'd near copies (10%) of earlier documents. They
are written to Parquet first and deduplicated by the engine (``run_job`` on a job whose
one stage is ``dedup``), as a user's job would be.

Each size runs in a fresh process with its own local Ray (``--cpus``); a sampler
thread records the driver's RSS and every Ray worker's private memory (USS) four
times a second, and each sample is attributed to the pass running at that moment.
A last table measures the one global step, union-find over duplicate edges in one
task, against the number of edges.

Run: ``python bench/dedup_scale.py [--sizes 2000 20000 200000] [--cpus 2]``
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import collections  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

SOURCES = ("wiki", "books", "web")


def shared_dir() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", _HERE.parents[1] / "shared"))


def generate(n_docs: int, out: Path, seed: int = 0, chunk: int = 10_000) -> int:
    """Write ``n_docs`` synthetic documents (``id``, ``text``) to ``out/<source>-<k>.parquet``;
    returns bytes of text."""
    raw = (shared_dir() / "corpora/wiki/wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    counts = collections.Counter(w for w in raw.split() if w.isalpha())
    vocab = np.array(list(counts))
    p = np.array(list(counts.values()), dtype=np.float64)
    p /= p.sum()
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    total = 0
    recent: list[str] = []
    for k, start in enumerate(range(0, n_docs, chunk)):
        n = min(chunk, n_docs - start)
        lens = rng.integers(150, 250, n)
        words = rng.choice(vocab, size=int(lens.sum()), p=p)
        cuts = np.concatenate([[0], np.cumsum(lens)])
        texts = [" ".join(words[cuts[i]:cuts[i + 1]]) for i in range(n)]
        kind = rng.random(n)
        for i in range(n):
            pool = len(recent) + i                  # earlier documents: other chunks, then this one
            if pool == 0 or kind[i] >= 0.15:
                continue
            j = int(rng.integers(pool))
            src_text = recent[j] if j < len(recent) else texts[j - len(recent)]
            if kind[i] < 0.05:                      # exact copy of an earlier document
                texts[i] = src_text
            else:                                   # near copy: 1-5 typos
                w = src_text.split(" ")
                for _ in range(int(rng.integers(1, 6))):
                    k2 = int(rng.integers(len(w)))
                    w[k2] = w[k2][:-1] + "x"
                texts[i] = " ".join(w)
        recent = (recent + texts[:: max(1, n // 500)])[-2000:]
        src = np.array(SOURCES)[rng.integers(0, len(SOURCES), n)]
        for s in SOURCES:
            sel = np.flatnonzero(src == s)
            if len(sel):
                t = pa.table({"id": [f"{s}/{start + int(i):09d}" for i in sel], "text": [texts[i] for i in sel]})
                pq.write_table(t, out / f"{s}-{k:05d}.parquet")
        total += sum(len(t.encode("utf-8")) for t in texts)
    return total


class Sampler(threading.Thread):
    """RSS of this process (the driver) and the private memory (USS: RSS without the
    shared object-store pages a worker maps) of every Ray worker, every 0.25 s."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[tuple[float, int, int, int]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self.stop.is_set():
            workers = []
            for proc in psutil.process_iter(["cmdline"]):
                try:
                    cmd = proc.info["cmdline"] or []
                    if cmd and cmd[0].startswith("ray::"):
                        workers.append(proc.memory_full_info().uss)
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            self.samples.append((time.time(), me.memory_info().rss, max(workers, default=0), sum(workers)))
            time.sleep(0.25)

    def peak(self, t0: float, t1: float) -> tuple[int, int, int]:
        s = [x for x in self.samples if t0 <= x[0] <= t1] or [min(self.samples, key=lambda x: abs(x[0] - t0))]
        return max(x[1] for x in s), max(x[2] for x in s), max(x[3] for x in s)


def job_spec(data: Path, output: Path) -> dict:
    """A job that reads ``data`` (one source per file prefix) and runs only dedup."""
    return {"name": "dedup-scale", "output": str(output),
            "sources": [{"name": s, "format": "parquet", "paths": [str(data / f"{s}-*.parquet")],
                         "options": {"id_key": "id"}} for s in SOURCES],
            "stages": [{"dedup": {"source_priority": list(SOURCES)}}]}


def run_one(data: Path, work: Path, cpus: int) -> dict:
    """Dedup ``data`` with the engine (``run_job``: read, side rows, decide, decisions
    applied where the text is, outputs written; this process is the driver) and measure
    it."""
    import logging

    import ray

    from datapipe.runner import run_job
    from datapipe.spec import load_job

    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    ray.data.DataContext.get_current().enable_progress_bars = False
    sampler = Sampler()
    sampler.start()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    spec = work / "job.yaml"
    spec.write_text(json.dumps(job_spec(data.resolve(), (work / "out").resolve())))   # JSON is YAML
    t0 = time.time()
    result = run_job(load_job(spec), force=True, echo=lambda line: None)
    t1 = time.time()
    sampler.stop.set()
    sampler.join()
    rep = result.report["stage_reports"]["dedup"]
    removed = rep["counts"]["removed"]
    passes = []
    for p in rep["passes"] + [{"pass": "whole job (read, side, decide, apply, write)", "seconds": t1 - t0,
                               "rows": removed, "t_start": t0, "t_end": t1}]:
        d, wmax, wsum = sampler.peak(p["t_start"], p["t_end"])
        passes.append({"pass": p["pass"], "seconds": p["seconds"], "rows": p["rows"], "driver_rss": d,
                       "worker_rss_max": wmax, "workers_rss_sum": wsum})
    d, wmax, wsum = sampler.peak(t0, t1)
    ray.shutdown()
    return {"passes": passes, "seconds": t1 - t0, "removed": removed, "driver_rss": d, "worker_rss_max": wmax,
            "workers_rss_sum": wsum, "bands": rep["bands"], "rows": rep["rows"], "counts": rep["counts"],
            "components": rep["components"]}


def components_memory(n_edges: int) -> dict:
    """Peak memory of the local components kernel on ``n_edges`` random edges between
    keys shaped like the stage's (~60 bytes), in this process."""
    import resource

    from stages.dedup.graph import local_components

    rng = np.random.default_rng(1)
    n_nodes = int(n_edges * 1.3)
    names = pa.array([f"10002\x1fweb\x1fweb/{int(i):016x}\x1f{int(i) * 7919 % 2**64:016x}\x1f0000000000000000"
                      for i in rng.permutation(n_nodes)])
    a, b = rng.integers(0, n_nodes, n_edges), rng.integers(0, n_nodes, n_edges)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keep = lo != hi
    edges = pa.table({"a": names.take(pa.array(lo[keep])), "b": names.take(pa.array(hi[keep]))})
    del names
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    out = local_components(edges)
    secs = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"edges": edges.num_rows, "input_bytes": edges.nbytes, "extra_peak": max(0, peak - base),
            "seconds": secs, "removed": out.num_rows}


def mb(x: int) -> str:
    return f"{x / 2**20:.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000, 200000])
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--out", default="runs/bench/dedup_scale")
    ap.add_argument("--edges", type=int, nargs="*", default=[100_000, 1_000_000, 2_000_000],
                    help="edge counts for the components memory table")
    ap.add_argument("--one", nargs=2, metavar=("DATA", "WORK"), help=argparse.SUPPRESS)
    ap.add_argument("--cc", type=int, help=argparse.SUPPRESS)
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"sizes": [400], "edges": [20_000], "out": "<tmp>"})
    if args.one:   # child process: one size
        print(json.dumps(run_one(Path(args.one[0]), Path(args.one[1]), args.cpus)))
        return
    if args.cc:    # child process: components memory
        print(json.dumps(components_memory(args.cc)))
        return
    out = Path(args.out)
    results = []
    for n in args.sizes:
        data = out / f"data_{n}"
        shutil.rmtree(data, ignore_errors=True)
        nbytes = generate(n, data)
        proc = subprocess.run([sys.executable, __file__, "--cpus", str(args.cpus), "--one", str(data),
                               str(out / f"work_{n}")], capture_output=True, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr[-5000:])
            raise SystemExit(f"size {n} failed")
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        r.update({"docs": n, "mb": nbytes / 1e6})
        results.append(r)
        print(f"\n== {n:,} documents, {nbytes / 1e6:.1f} MB of text, {args.cpus} CPUs: {r['seconds']:.1f} s, "
              f"{r['removed']:,} removed, bands x rows {r['bands']}x{r['rows']}, components {r['components']}")
        print(f"{'pass':<34} {'s':>7} {'rows':>10} {'driver MB':>10} {'max worker MB':>14} {'all workers MB':>15}")
        for p in r["passes"]:
            print(f"{p['pass']:<34} {p['seconds']:>7.1f} {p['rows']:>10,} {mb(p['driver_rss']):>10} "
                  f"{mb(p['worker_rss_max']):>14} {mb(p['workers_rss_sum']):>15}")
    print("\nsummary")
    print(f"{'docs':>9} {'MB':>7} {'s':>8} {'us/doc':>8} {'driver peak MB':>15} {'max worker MB':>14}")
    for r in results:
        print(f"{r['docs']:>9,} {r['mb']:>7.1f} {r['seconds']:>8.1f} {r['seconds'] / r['docs'] * 1e6:>8.0f} "
              f"{mb(r['driver_rss']):>15} {mb(r['worker_rss_max']):>14}")
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    if args.edges:
        print("\nlocal components (union-find in one task) vs duplicate edges")
        print(f"{'edges':>10} {'input MB':>9} {'extra peak MB':>14} {'bytes/edge (in+extra)':>22} {'s':>6}")
        for e in args.edges:
            proc = subprocess.run([sys.executable, __file__, "--cc", str(e)], capture_output=True, text=True)
            if proc.returncode != 0:
                sys.stderr.write(proc.stderr[-3000:])
                raise SystemExit("components memory run failed")
            c = json.loads(proc.stdout.strip().splitlines()[-1])
            per = (c["input_bytes"] + c["extra_peak"]) / c["edges"]
            print(f"{c['edges']:>10,} {mb(c['input_bytes']):>9} {mb(c['extra_peak']):>14} {per:>22.0f} "
                  f"{c['seconds']:>6.1f}")
    print("\nsignatures per core (one process)")
    import importlib.util

    spec = importlib.util.spec_from_file_location("dedup_signatures", _HERE / "dedup_signatures.py")
    sigs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sigs)
    sigs.print_table(sigs.measure(0.05, 0.02, 128) if args.smoke else sigs.measure(4.0, 1.0, 128))


if __name__ == "__main__":
    main()
