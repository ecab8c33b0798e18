"""Resume per split: wall time of a full run beside a restart after the driver was
killed (SIGTERM) at about 70% of the splits, on a >= 50 MB JSONL corpus built from the
Project Gutenberg books in ../shared (or $DATAPIPE_SHARED). Each run is the CLI with an
embedded Ray, one after the other; the baseline (the full run) is measured in the same
invocation, so the ratio stays meaningful on a loaded machine.

    .venv/bin/python bench/resume.py [--mb 50] [--cpus 2] [--kill-at 0.7]

Target: restart < 45% of the full run (it redoes ~30% of the splits plus start-up and
the verification of the reused splits' files). A restart with less work left than
starting Ray costs runs it in the driver (docs/engine.md "Faults, retries, resume");
the table says which path the restart took.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build_corpus(shared: Path, folder: Path, mb: int) -> int:
    """Paragraph groups of ~4 KB from the Gutenberg books, as JSONL files of ~4 MB."""
    folder.mkdir(parents=True, exist_ok=True)
    books = sorted((shared / "corpora" / "books" / "gutenberg").rglob("*.txt.gz"))
    if not books:
        sys.exit(f"no Gutenberg books (*.txt.gz) under {shared}/corpora/books/gutenberg: set DATAPIPE_SHARED")
    total, n, k, fh = 0, 0, 0, None
    rounds = 0
    while total < mb * 1_000_000:
        for book in books:
            text = gzip.decompress(book.read_bytes()).decode("utf-8", errors="replace").replace("\r\n", "\n")
            paras = [p for p in text.split("\n\n") if p.strip()]
            for i in range(0, len(paras), 8):
                if fh is None or fh.tell() > 4_000_000:
                    if fh is not None:
                        fh.close()
                    fh = open(folder / f"part-{k:04d}.jsonl", "w", encoding="utf-8")
                    k += 1
                line = json.dumps({"id": f"{rounds}:{book.stem}:{i}", "text": "\n\n".join(paras[i:i + 8])}) + "\n"
                fh.write(line)
                total += len(line)
                n += 1
            if total >= mb * 1_000_000:
                break
        rounds += 1
    fh.close()
    return n


def spec(folder: Path, cpus: int, *, name: str = "resume-bench", more: str = "") -> Path:
    """The benches' job over ``folder/data``: the heuristic chain, plus ``more`` (YAML
    lines appended after the stages, e.g. further stages and a ``shards:`` key)."""
    path = folder / "job.yaml"
    path.write_text(textwrap.dedent(f"""
        name: {name}
        output: out
        execution: {{num_cpus: {cpus}, split_bytes: 2000000, batch_rows: 512}}
        sources:
          - {{name: books, format: jsonl, paths: [data/*.jsonl], options: {{id_key: id}}}}
        stages:
          - normalize: {{}}
          - length: {{min_chars: 200}}
          - gopher_repetition: {{}}
          - gopher_quality: {{}}
    """) + textwrap.dedent(more))
    return path


def run(job: Path, *, kill_at: float | None = None, total: int = 0) -> float:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(DATAPIPE_PROGRESS="0", PYTHONPATH=str(REPO))
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "datapipe", "run", str(job)], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if kill_at is not None:
        while proc.poll() is None:   # staging: out.staging-<job hash[:16]>
            if len(list(job.parent.glob("out.staging-*/work/done/**/*.json"))) >= kill_at * total:
                proc.send_signal(signal.SIGTERM)
                break
            time.sleep(0.05)
    out, _ = proc.communicate()
    wall = time.perf_counter() - t0
    want = 130 if kill_at is not None else 0
    if proc.returncode != want:
        sys.exit(f"run exited {proc.returncode} (expected {want}):\n{out[-3000:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--kill-at", type=float, default=0.7)
    sys.path.insert(0, str(REPO))
    from bench import _smoke

    args = _smoke.parse(ap, {"mb": 2})
    from datapipe.plan import split_refs
    from datapipe.spec import load_job

    shared = Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared"))
    work = Path(tempfile.mkdtemp(prefix="dp-resume-"))
    try:
        docs = build_corpus(shared, work / "data", args.mb)
        mb = sum(f.stat().st_size for f in (work / "data").iterdir()) / 1e6
        job = spec(work, args.cpus)
        total = len(split_refs(load_job(job)))
        full = run(job)
        shutil.rmtree(work / "out")
        killed = run(job, kill_at=args.kill_at, total=total)
        restart = run(job)
        report = json.loads((work / "out" / "report.json").read_text())
        reused = report["splits"]["reused"]
        where = "in the driver, no Ray" if report["splits"].get("in_driver") else "on Ray Data"
        print(f"corpus: {docs} documents, {mb:.1f} MB JSONL, {total} splits, {args.cpus} CPUs")
        print("| run | wall s | splits reused |")
        print("|---|---:|---:|")
        print(f"| full run (baseline) | {full:.1f} | 0 |")
        print(f"| killed at {args.kill_at:.0%} of splits | {killed:.1f} | - |")
        print(f"| restart ({where}) | {restart:.1f} | {reused} |")
        print(f"restart / full = {restart / full:.2f} (target < 0.45)")
        print(f"restart: {report['wall_seconds']:.1f} s of its {restart:.1f} s in the splits, checks and report "
              f"(the rest: interpreter, imports, planning, verification{'' if where.startswith('in') else ', Ray start-up'}, commit)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
