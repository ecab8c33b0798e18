"""Coverage-guided fuzzing of every reader, for a set time each.

Each reader gets the valid example of its format from the conformance suite
(``tests/unit/test_reader_conformance.py``) as its seed; atheris (libFuzzer, coverage
of the readers, the input layer and the standard library's archive and compression
modules) mutates it, and each input is written under the example's file name and read
with the reader exactly as a job reads a split (``read_split``), with
``DATAPIPE_STRICT_READERS`` set: any exception that is not a classified reject is a
crash. A crash is counted, not fatal: the input is stored as
``tests/fuzz_cases/<format>/<sha1>__<file name>`` (``--store``), which the conformance
suite replays from then on, and fuzzing goes on.

    python bench/fuzz_readers.py [--seconds 600] [--readers jsonl,code] [--store]

Each reader runs in its own process (libFuzzer owns the process it runs in). The table:
executions per second beside the baseline, the same reader on its unmutated seed in the
same process (how much of the speed is the reader's own), coverage features found, and
crashes. Without atheris (``pip install atheris``) ``--engine random`` mutates blindly.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "unit"))
sys.path.insert(0, str(REPO / "tests"))   # the suite's helpers (peak_memory)

from bench import _smoke  # noqa: E402


def _worker(fmt: str, seconds: float, out: Path, store: bool, engine: str) -> None:
    os.environ["DATAPIPE_STRICT_READERS"] = "1"
    import logging

    logging.disable(logging.CRITICAL)
    if engine == "atheris":
        import atheris

        with atheris.instrument_imports(include=["datapipe", "tarfile", "zipfile", "gzip", "bz2", "lzma", "warcio",
                                                 "xml", "json"]):
            import test_reader_conformance as conf
    else:
        import test_reader_conformance as conf
    from datapipe.errors import CorruptInputError

    name, seed, _ = conf.example(fmt)
    work = Path(tempfile.mkdtemp(prefix=f"fuzz-{fmt}-"))
    root = work / "in"
    target = root / name
    target.parent.mkdir(parents=True, exist_ok=True)
    cases = REPO / "tests" / "fuzz_cases" / fmt
    seen_kinds: set[str] = set()
    stats = {"format": fmt, "execs": 0, "crashes": 0, "kinds": {}, "seconds": 0.0, "baseline_execs_s": 0.0}

    def one(data: bytes) -> None:
        target.write_bytes(data)
        try:
            conf.run(fmt, root)
        except CorruptInputError:
            pass
        except Exception as exc:   # a reader bug: store the input, count it, go on
            # one kind per exception type and the line that raised it (messages vary with the input)
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            kind = f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno}: {str(exc)[:80]}"
            kind_key = f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno}"
            stats["crashes"] += 1
            first = kind_key not in seen_kinds
            seen_kinds.add(kind_key)
            if first:
                stats["kinds"][kind] = 0
            key = next(k for k in stats["kinds"] if k.startswith(kind_key + ":"))
            stats["kinds"][key] += 1
            if store and first:
                cases.mkdir(parents=True, exist_ok=True)
                (cases / f"{hashlib.sha1(data).hexdigest()}__{name.replace('/', '_')}").write_bytes(data)

    # baseline: the unmutated seed, same process, same reader
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < min(2.0, seconds / 5) or n < 3:
        one(seed)
        n += 1
    stats["baseline_execs_s"] = n / (time.perf_counter() - t0)
    start = time.perf_counter()
    last_write = [0.0]

    def record() -> None:
        stats["seconds"] = time.perf_counter() - start
        out.write_text(json.dumps(stats))

    def test_one(data: bytes) -> None:
        stats["execs"] += 1
        one(data)
        if time.perf_counter() - last_write[0] > 1.0:
            last_write[0] = time.perf_counter()
            record()

    if engine == "atheris":
        import atheris

        corpus = work / "corpus"
        corpus.mkdir()
        (corpus / "seed").write_bytes(seed)
        record()
        # a hang (one input past 60 s) or a blow-up (4 GB) ends the worker; libFuzzer saves the
        # input beside the stats as <format>-timeout-<sha1> / <format>-oom-<sha1>
        atheris.Setup([sys.argv[0], f"-max_total_time={int(seconds)}", "-rss_limit_mb=4096", "-timeout=60",
                       f"-artifact_prefix={out.parent / (fmt + '-')}",
                       "-max_len=" + str(max(4096, 2 * len(seed))), "-print_final_stats=0", str(corpus)],
                      test_one)
        atheris.Fuzz()   # exits the process when the time is up
    rng = random.Random(0)
    while time.perf_counter() - start < seconds:
        data = bytearray(seed)
        for _ in range(rng.randint(1, 8)):
            op, i = rng.random(), rng.randrange(max(1, len(data)))
            if op < 0.4:
                data[i % len(data)] = rng.randrange(256)
            elif op < 0.6:
                del data[i:]
            elif op < 0.8:
                data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
            else:
                data[i:i] = data[i:i + rng.randint(1, 512)]
        test_one(bytes(data))
    record()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=600, help="fuzzing time per reader (default 600)")
    ap.add_argument("--readers", default="", help="comma-separated formats (default: every registered reader)")
    ap.add_argument("--store", action="store_true", help="store crashing inputs under tests/fuzz_cases/")
    ap.add_argument("--parallel", type=int, default=1, help="readers fuzzed at once (one process each)")
    ap.add_argument("--engine", choices=("atheris", "random"), default=None,
                    help="atheris (coverage-guided; default when installed) or random mutations")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = _smoke.parse(ap, {"seconds": 3, "readers": "jsonl,code"})
    if args.engine is None:
        try:
            import atheris  # noqa: F401

            args.engine = "atheris"
        except ImportError:
            args.engine = "random"
    if args.worker:
        _worker(args.worker, args.seconds, Path(args.out), args.store, args.engine)
        return
    from datapipe.readers import reader_registry

    formats = [f for f in args.readers.split(",") if f] or sorted(reader_registry())
    outdir = Path(tempfile.mkdtemp(prefix="fuzz-stats-"))
    todo, running, results = list(formats), [], {}
    while todo or running:
        while todo and len(running) < args.parallel:
            fmt = todo.pop(0)
            out = outdir / f"{fmt}.json"
            cmd = [sys.executable, __file__, "--worker", fmt, "--seconds", str(args.seconds), "--out", str(out),
                   "--engine", args.engine] + (["--store"] if args.store else [])
            log = open(outdir / f"{fmt}.log", "wb")   # libFuzzer's status lines: a pipe would fill and block it
            running.append((fmt, out, subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)))
            log.close()
        time.sleep(0.5)
        for item in list(running):
            fmt, out, proc = item
            if proc.poll() is None:
                continue
            running.remove(item)
            err = (outdir / f"{fmt}.log").read_text(errors="replace")
            results[fmt] = json.loads(out.read_text()) if out.exists() else {"error": err[-500:]}
            artifacts = sorted(p.name for p in outdir.glob(f"{fmt}-*-*"))
            if artifacts:   # libFuzzer stopped on a hang or a memory blow-up
                results[fmt].setdefault("kinds", {})
                for a in artifacts:
                    results[fmt]["kinds"][f"libFuzzer {a.split('-')[1]} (input in {outdir / a})"] = 1
                results[fmt]["crashes"] = results[fmt].get("crashes", 0) + len(artifacts)
            feats = [ln for ln in err.splitlines() if " ft: " in ln]
            results[fmt]["features"] = feats[-1].split(" ft: ")[1].split()[0] if feats else "-"
    print(f"engine: {args.engine}; {args.seconds:.0f} s per reader; crashes stored: {args.store}")
    print(f"{'reader':14} {'seconds':>8} {'execs':>9} {'execs/s':>9} {'seed execs/s':>13} {'features':>9} "
          f"{'crashes':>8}  kinds")
    for fmt in formats:
        r = results.get(fmt, {})
        if "error" in r and "execs" not in r:
            print(f"{fmt:14} worker failed: {r['error']}")
            continue
        rate = r["execs"] / r["seconds"] if r.get("seconds") else 0.0
        kinds = "; ".join(f"{k} (x{v})" for k, v in r.get("kinds", {}).items()) or "-"
        print(f"{fmt:14} {r.get('seconds', 0):8.0f} {r.get('execs', 0):9d} {rate:9.1f} "
              f"{r.get('baseline_execs_s', 0):13.1f} {r.get('features', '-'):>9} {r.get('crashes', 0):8d}  {kinds}")


if __name__ == "__main__":
    main()
