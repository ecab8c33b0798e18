"""line_dedup benchmark: the stage's work without a job around it, against a plain
in-memory Python set with the same semantics, on the same documents, in this run.

Documents: the Project Gutenberg books of ``$DATAPIPE_SHARED/corpora/books/gutenberg``
(licence header and footer lines repeat across books), each cut into documents of
``--doc-lines`` lines, in file order; one read split per ``--split-docs`` documents.

* ours: ``side()`` per split (what each split's task does), the stage's declared passes
  run by the engine's :class:`~datapipe.passes.PassExecutor` over the side files (in this
  process, as the stage runs them up to ``local_rows`` documents; ``--ray``: on Ray Data,
  the distributed path), then ``apply_edits()`` on the edited documents;
* baseline: one Python ``set`` of normalised lines over every document in read order.

Both must remove the same lines from the same documents (checked); the table gives
documents per second and lines removed for each.
Run: ``python bench/line_dedup.py [--books 60] [--unit line|paragraph] [--ray]``
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import _smoke  # noqa: E402


def load_docs(books: int, doc_lines: int) -> list[str]:
    import os

    shared = Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared"))
    files = sorted((shared / "corpora" / "books" / "gutenberg").glob("*.txt.gz"))[:books]
    docs = []
    for f in files:
        lines = gzip.decompress(f.read_bytes()).decode("utf-8", errors="replace").split("\n")
        docs += ["\n".join(lines[i:i + doc_lines]) for i in range(0, len(lines), doc_lines)]
    return docs


def baseline(docs: list[str], cfg) -> dict[int, list[int]]:
    """Read order, one set: the unit indices each document loses."""
    from stages.dedup.lines import normalise, split_units

    seen: set[str] = set()
    removed: dict[int, list[int]] = {}
    for d, text in enumerate(docs):
        for i, u in enumerate(split_units(text, cfg.unit)[0]):
            n = normalise(u, lowercase=cfg.lowercase, digits=cfg.digits)
            if len(n) < cfg.min_chars:
                continue
            if n in seen:
                removed.setdefault(d, []).append(i)
            else:
                seen.add(n)
    return removed


def ours(docs: list[str], cfg, split_docs: int, work: Path, on_ray: bool) -> tuple[dict[int, list[int]], list]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from datapipe import schema as S
    from datapipe.passes import SIDE, PassExecutor
    from stages.dedup.lines import LineDedup

    stage = LineDedup(cfg)
    files = []
    (work / "side").mkdir(parents=True)
    for s, lo in enumerate(range(0, len(docs), split_docs)):
        chunk = docs[lo:lo + split_docs]
        batch = S.make_batch(source="books", ids=[str(lo + i) for i in range(len(chunk))], texts=chunk)
        side = stage.side(batch)
        side = side.append_column("_split", pa.array([f"books/{s:05d}"] * len(chunk), pa.string()))
        side = side.append_column("_row", pa.array(range(len(chunk)), pa.int64()))
        files.append(str(work / "side" / f"{s:05d}.parquet"))
        pq.write_table(side, files[-1])
    plan = stage.passes(None)
    arts = PassExecutor(str(work / "passes"), None, inputs={SIDE: files}, local=not on_ray).run(plan)
    dec = pq.read_table(arts[plan[-1].name].uri)
    removed = {int(sp.split("/")[1]) * split_docs + r: e for sp, r, e in
               zip(dec.column("_split").to_pylist(), dec.column("_row").to_pylist(), dec.column("edit").to_pylist())}
    texts, _ = stage.apply_edits([docs[d] for d in sorted(removed)], [removed[d] for d in sorted(removed)])
    return removed, texts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--books", type=int, default=60)
    ap.add_argument("--doc-lines", type=int, default=200)
    ap.add_argument("--split-docs", type=int, default=500)
    ap.add_argument("--unit", choices=("line", "paragraph"), default="line")
    ap.add_argument("--min-chars", type=int, default=10)
    ap.add_argument("--ray", action="store_true", help="run the passes on Ray Data (the distributed path)")
    ap.add_argument("--parts", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    args = _smoke.parse(ap, {"books": 3, "repeat": 1, "split_docs": 5})
    from stages.dedup.lines import LineDedupConfig

    cfg = LineDedupConfig(unit=args.unit, min_chars=args.min_chars, parts=args.parts)
    docs = load_docs(args.books, args.doc_lines)
    from stages.dedup.lines import split_units

    units = sum(len(split_units(d, args.unit)[0]) for d in docs)
    if args.ray:
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    rows = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        want = baseline(docs, cfg)
        t_base = time.perf_counter() - t0
        work = Path(tempfile.mkdtemp(prefix="bench-line-dedup-"))
        try:
            t0 = time.perf_counter()
            got, _ = ours(docs, cfg, args.split_docs, work, args.ray)
            t_ours = time.perf_counter() - t0
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if got != want:
            diff = sorted(set(got.items()) ^ set((k, tuple(v)) for k, v in want.items()))[:3]
            raise SystemExit(f"ours and the baseline disagree on what to remove (first: {diff})")
        rows.append((t_base, t_ours, sum(map(len, want.values())), len(want)))
    t_base, t_ours = min(r[0] for r in rows), min(r[1] for r in rows)
    removed, edited = rows[0][2], rows[0][3]
    print(f"line_dedup ({args.unit}, min_chars {args.min_chars}): {len(docs)} documents, {units} {args.unit}s, "
          f"{-(-len(docs) // args.split_docs)} splits, passes {'on Ray Data' if args.ray else 'in process'}; "
          f"best of {args.repeat}")
    print(f"{'impl':<26}{'seconds':>10}{'docs/s':>12}{f'{args.unit}s removed':>20}{'docs edited':>14}")
    print(f"{'baseline (python set)':<26}{t_base:>10.3f}{len(docs) / t_base:>12.0f}{removed:>20}{edited:>14}")
    print(f"{'ours (side+passes+edit)':<26}{t_ours:>10.3f}{len(docs) / t_ours:>12.0f}{removed:>20}{edited:>14}")
    print("agree: yes (same units removed from the same documents)")
    if not args.ray:   # the passes ran here: Arrow's peak is theirs (the baseline holds no Arrow data)
        import pyarrow as pa

        peak = pa.default_memory_pool().max_memory()
        print(f"ours, peak Arrow memory in this process: {peak / 2**20:.1f} MB for {units} {args.unit}s "
              f"({peak / max(1, units):.0f} bytes per {args.unit})")


if __name__ == "__main__":
    main()
