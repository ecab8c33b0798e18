"""How the engine scales with input: the same chain (normalize, length, Gopher
repetition + quality, FineWeb, tokenize) at 1x, 4x and 16x a base corpus of Gutenberg
paragraphs from ../shared. Per size: wall time, busy seconds per stage, the driver's peak
RSS, the object store's peak use (the raylets' store stats, sampled every 0.25 s) and the
CPU seconds of the driver and the Ray processes it started (sampled from /proc: a measure
of work that other jobs' load on a shared machine does not inflate, unlike wall time). Each size runs in its own
process with an embedded Ray; the 1x run is the baseline the others are compared with,
measured in the same invocation.

    .venv/bin/python bench/scale.py [--base-mb 4] [--factors 1 4 16] [--cpus 2]

Expected: wall (beyond Ray's fixed start-up) and CPU seconds near-linear in input size;
driver RSS and object-store peak flat.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

from resume import build_corpus, spec  # noqa: E402


def job_spec(folder: Path, cpus: int, shared: Path) -> Path:
    """resume.py's job with FineWeb and token shards added."""
    return spec(folder, cpus, name="scale-bench", more=f"""\
          - fineweb: {{}}
          - tokenize: {{tokenizer: {shared}/tokenizers/tiny-2k.tokenizer.json}}
        shards: {{shard_tokens: 1048576}}
    """)


def store_stats(state) -> tuple[float, float]:
    """(bytes in the object store now, bytes spilled so far), summed over the cluster's
    nodes, as ``ray memory --stats-only`` reports them. (``ray.available_resources()``'s
    ``object_store_memory`` is a scheduling resource: it does not move when objects are
    stored, so it cannot measure use.)"""
    from ray._private.internal_api import get_memory_info_reply

    stats = get_memory_info_reply(state, timeout_seconds=10).store_stats
    return float(stats.object_store_bytes_used), float(stats.spilled_bytes_total)


def tree_cpu(root: int, seen: dict[int, float]) -> None:
    """Record in ``seen`` (pid -> CPU seconds, user + system) every live process under
    ``root``: the driver and the Ray it started (GCS, raylet, workers). Sampled, so a
    process's last fraction of a sampling interval is missed; other jobs on the machine
    are never counted, which makes this a measure of work that load does not inflate."""
    tick = os.sysconf("SC_CLK_TCK")
    procs = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                f = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            procs[int(d.name)] = (int(f[1]), (int(f[11]) + int(f[12])) / tick)
    for pid, (_, cpu) in procs.items():
        up = pid
        while up > 1 and up != root:
            up = procs.get(up, (0, 0))[0]
        if up == root:
            seen[pid] = max(seen.get(pid, 0.0), cpu)


def measure(job: str) -> None:
    """In a child process: run the job, print wall, stage busy seconds, peak RSS and store
    peak (sampled every 0.25 s)."""
    sys.path.insert(0, str(REPO))
    import ray
    from ray._private.internal_api import get_state_from_address

    from datapipe.runner import ensure_ray, run_job
    from datapipe.spec import load_job

    spec = load_job(job)
    ensure_ray(spec)
    state = get_state_from_address(ray.get_runtime_context().gcs_address)
    peak, spilled, cpu = [0.0], [0.0], {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            used, spilled[0] = store_stats(state)
            peak[0] = max(peak[0], used)
            tree_cpu(os.getpid(), cpu)
            time.sleep(0.25)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    t0 = time.perf_counter()
    result = run_job(spec, echo=lambda s: None)
    wall = time.perf_counter() - t0
    stop.set()
    t.join()
    tree_cpu(os.getpid(), cpu)
    print(json.dumps({"wall": wall, "stages": {s["stage"]: s["busy_seconds"] for s in result.report["stages"]},
                      "docs": result.report["stages"][0]["docs_in"],
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "store_mb": peak[0] / 1e6, "spilled_mb": spilled[0] / 1e6, "cpu_s": sum(cpu.values()),
                      "load": os.getloadavg()[0]}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-mb", type=int, default=4)
    ap.add_argument("--factors", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"base_mb": 1, "factors": [1]})
    if args.measure:
        measure(args.measure)
        return
    shared = Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared"))
    rows = []
    for factor in args.factors:
        work = Path(tempfile.mkdtemp(prefix=f"dp-scale-{factor}x-"))
        try:
            build_corpus(shared, work / "data", args.base_mb * factor)
            job = job_spec(work, args.cpus, shared)
            env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
            env.update(DATAPIPE_PROGRESS="0", PYTHONPATH=str(REPO))
            proc = subprocess.run([sys.executable, __file__, "--measure", str(job)], env=env, cwd=REPO,
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(proc.stdout[-2000:] + proc.stderr[-3000:])
            rows.append((factor, json.loads(proc.stdout.strip().splitlines()[-1])))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    base = rows[0][1]
    stages = list(base["stages"])
    print(f"{args.cpus} CPUs, base corpus {args.base_mb} MB; ratios vs the {rows[0][0]}x run of this invocation; "
          "CPU s: the driver and the Ray it started (work, not inflated by other jobs' load); load: 1-min "
          "load average at the end; stage columns: busy seconds summed over workers (stages run fused per split)")
    print("| input | docs | wall s | wall / base | CPU s | CPU / base | driver peak RSS MB | object store peak MB | "
          "spilled MB | load | " + " | ".join(stages) + " |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(stages))
    for factor, r in rows:
        print(f"| {factor}x | {r['docs']} | {r['wall']:.1f} | {r['wall'] / base['wall']:.2f} | {r['cpu_s']:.0f} | "
              f"{r['cpu_s'] / base['cpu_s']:.2f} | {r['rss_mb']:.0f} | {r['store_mb']:.1f} | {r['spilled_mb']:.0f} | "
              f"{r['load']:.1f} | " + " | ".join(f"{r['stages'].get(s, 0):.1f}" for s in stages) + " |")

if __name__ == "__main__":
    main()
