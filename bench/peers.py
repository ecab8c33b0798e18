"""datapipe beside datatrove on the same inputs, built here from real text in
``../shared/corpora``: wall time of the whole job, documents/s and the ratio, for the four
workloads of issue 13 at two sizes 4x apart (the issue's size and 4x it; dedup at its two).

=========  ==============================================================================
workload   what both engines run
=========  ==============================================================================
heuristic  JSONL of real documents (Wikipedia paragraphs, CCNet / RedPajama / StackExchange
           documents, Gutenberg passages) -> Gopher repetition, Gopher quality, C4,
           FineWeb rules (each engine's defaults) -> JSONL / Parquet
dedup      real passages plus edited near-copies (typos, dropped / inserted words,
           truncation; ``truth.jsonl`` beside the corpus holds each copy's original and
           true Jaccard) -> MinHash dedup (5-gram words, 128 hashes, threshold-like bands)
warc       a WARC written here from the shared real HTML pages -> extraction (each engine's
           default: our ``cascade``, trafilatura's own steps made cheaper, and
           datatrove's ``Trafilatura`` step; the same settings and per-page time limit;
           ``--extractor trafilatura`` runs the library's call on our side too) -> the four rule sets ->
           MinHash dedup (14 bands x 8 rows on both sides) -> tokenization with the sample
           tokenizer (``models/sample/tokenizer/tokenizer.json``) into token shards
=========  ==============================================================================

datapipe runs as a user runs it, ``python -m datapipe run <spec>`` (embedded Ray, every
CPU); datatrove with its ``LocalPipelineExecutor`` (workers = CPUs), the MinHash dedup as
its four documented stages. Each engine runs alone, one after the other, each in its
own process; the wall time includes interpreter start-up on both sides.

Run: ``python bench/peers.py [--quick] [--workloads heuristic,dedup,warc] [--sizes N,...] [--cpus 2]``
(``--quick``: sizes 4x smaller, for a smoke run; ``--split-mb 4``: datapipe's read splits
of ~4 MB, one per input file here, as datatrove's tasks are; ``--extractor trafilatura``: our
``extract`` stage's extractor in the warc workload (default: the stage's, ``cascade``),
datatrove keeps its trafilatura;
``--background-load N``: each pair runs twice, without and then with N busy processes
spinning beside each engine's run, and each engine's slowdown is printed: how each copes
with a shared machine, measured in one run). Needs the ``bench`` extra
(datatrove, psutil). Besides wall time, each row has the CPU seconds of the engine's process
tree (sampled from /proc, :func:`run_measured`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# each workload at the size and 4x that (the heuristic chain and the WARC at 4x the
# issue's: a ratio of whole-job wall times at the smaller size is mostly start-up cost)
SIZES = {"heuristic": (12_800, 51_200), "dedup": (20_000, 80_000), "warc": (3_300, 13_200)}
COPIES = 9          # dedup: edited copies per original passage (10 documents per group)
FILES = 8           # input files per corpus, so both engines can split the work
# warc: the same work on both sides. trafilatura (our side: the stage's default extractor,
# cascade, which runs trafilatura's steps) with our extract stage's defaults (precision
# over recall, tables kept, no in-page dedup, plain text) and one per-page time limit; MinHash
# with datatrove's default LSH shape (14 bands x 8 rows, 5-gram words); the sample tokenizer.
EXTRACT_TIMEOUT_S = 5.0
BANDS, ROWS = 14, 8
TOKENIZER = REPO / "models/sample/tokenizer/tokenizer.json"


def shared_dir() -> Path:
    return Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared")).resolve()


# -- inputs ---------------------------------------------------------------------------------

def real_texts(sh: Path) -> list[str]:
    """Real documents of several kinds, in a fixed order."""
    c = sh / "corpora"
    wiki = (c / "wiki/wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    out = [p.strip() for p in wiki.split("\n") if len(p.split()) >= 40]
    for f in sorted((c / "ccnet").glob("cc_en_head-*.jsonl")) + sorted((c / "redpajama").glob("*.jsonl")) + \
            [c / "stackexchange/redpajama-stackexchange.jsonl"]:
        out += [json.loads(line)["text"] for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    for f in sorted((c / "books/gutenberg").glob("*.txt.gz"))[:40]:
        book = gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
        out += [book[i:i + 4000] for i in range(0, min(len(book), 200_000), 4000)]
    return out


def passages(sh: Path, n: int) -> list[str]:
    """``n`` distinct real passages of 150-300 words (Gutenberg books, then Wikipedia)."""
    c = sh / "corpora"
    out: list[str] = []
    seen: set[str] = set()
    for f in sorted((c / "books/gutenberg").glob("**/*.txt.gz")):
        words = gzip.decompress(f.read_bytes()).decode("utf-8", "replace").split()
        for i in range(2000, len(words) - 300, 250):   # skip the licence header
            p = " ".join(words[i:i + 220])
            if p not in seen:
                seen.add(p)
                out.append(p)
            if len(out) >= n:
                return out
    raise SystemExit(f"only {len(out)} distinct passages in the shared books; ask for fewer documents")


def edit(text: str, rng: random.Random) -> str:
    """A near-copy the way copies drift on the web: typos, dropped and inserted words,
    sometimes a truncated tail."""
    words = text.split()
    for _ in range(rng.randint(1, 6)):
        op, i = rng.random(), rng.randrange(len(words))
        if op < 0.4:
            words[i] = words[i][:-1] + "q" if len(words[i]) > 1 else "zq"
        elif op < 0.7 and len(words) > 50:
            del words[i]
        else:
            words.insert(i, rng.choice(("the", "new", "read", "more", "click", "here")))
    if rng.random() < 0.2:
        words = words[: int(len(words) * rng.uniform(0.9, 1.0))]
    return " ".join(words)


def write_jsonl(docs: list[dict], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    per = -(-len(docs) // FILES)
    for k in range(FILES):
        with open(folder / f"part-{k:02d}.jsonl", "w", encoding="utf-8") as f:
            for d in docs[k * per:(k + 1) * per]:
                f.write(json.dumps(d, ensure_ascii=False) + "\n")


def build_heuristic(sh: Path, n: int, folder: Path) -> int:
    texts = real_texts(sh)
    write_jsonl([{"id": f"doc-{i:06d}", "text": texts[i % len(texts)]} for i in range(n)], folder)
    return n


def build_dedup(sh: Path, n: int, folder: Path) -> int:
    from stages.dedup.minhash import shingles

    rng = random.Random(13)
    docs, truth = [], []
    for g, orig in enumerate(passages(sh, n // (COPIES + 1))):
        docs.append({"id": f"g{g:05d}-0", "text": orig})
        base = set(shingles(orig))
        for k in range(1, COPIES + 1):
            copy = edit(orig, rng)
            s = set(shingles(copy))
            docs.append({"id": f"g{g:05d}-{k}", "text": copy})
            truth.append({"id": f"g{g:05d}-{k}", "original": f"g{g:05d}-0",
                          "jaccard": round(len(base & s) / max(1, len(base | s)), 4)})
    random.Random(5).shuffle(docs)
    write_jsonl(docs, folder)
    with open(folder.parent / "truth.jsonl", "w") as f:
        f.writelines(json.dumps(t) + "\n" for t in truth)
    return len(docs)


def build_warc(sh: Path, n: int, folder: Path) -> int:
    """``n`` HTML responses (the shared pages, cycled, each under its own URL) in
    ``FILES`` gzipped WARC files."""
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    pages = [gzip.decompress(p.read_bytes()) for p in sorted((sh / "corpora/web/html").glob("*.html.gz"))]
    if not pages:
        raise SystemExit(f"no pages in {sh / 'corpora/web/html'}: set DATAPIPE_SHARED to the shared folder")
    folder.mkdir(parents=True, exist_ok=True)
    per = -(-n // FILES)
    for k in range(FILES):
        with open(folder / f"part-{k:02d}.warc.gz", "wb") as f:
            w = WARCWriter(f, gzip=True)
            for i in range(k * per, min(n, (k + 1) * per)):
                body = pages[i % len(pages)]
                headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                                      ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
                # the payload type Common Crawl writes; without it datatrove sniffs each page with
                # libmagic and skips those it does not call text/html (~10% of these pages)
                rec = w.create_warc_record(f"http://site{i % 97}.example/page/{i}", "response",
                                           payload=BytesIO(body), http_headers=headers,
                                           warc_headers_dict={"WARC-Identified-Payload-Type": "text/html"})
                w.write_record(rec)
    return n


BUILDERS = {"heuristic": build_heuristic, "dedup": build_dedup, "warc": build_warc}


# -- datapipe -------------------------------------------------------------------------------

def datapipe_spec(workload: str, data: Path, out: Path, sh: Path, split_mb: float | None = None,
                  extractor: str | None = None) -> str:
    """The job; ``split_mb`` sets ``execution.split_bytes`` (None: the engine's default);
    ``extractor`` the extract stage's extractor (None: the stage's default)."""
    rules = """
      - gopher_repetition: {}
      - gopher_quality: {}
      - c4: {}
      - fineweb: {}"""
    if workload == "heuristic":
        src = f'{{name: docs, format: jsonl, paths: ["{data}/*.jsonl"], options: {{id_key: id}}}}'
        stages, shards = rules, ""
    elif workload == "dedup":
        src = f'{{name: docs, format: jsonl, paths: ["{data}/*.jsonl"], options: {{id_key: id}}}}'
        stages, shards = "\n      - dedup: {}", ""
    else:
        src = f'{{name: web, format: warc, paths: ["{data}/*.warc.gz"]}}'
        ex = "" if extractor is None else f", extractor: {extractor}"
        stages = (f"\n      - extract: {{timeout_s: {EXTRACT_TIMEOUT_S}{ex}}}" + rules
                  + f"\n      - dedup: {{num_perm: {BANDS * ROWS}, bands: {BANDS}, rows: {ROWS}}}"
                  + f'\n      - tokenize: {{tokenizer: "{TOKENIZER}"}}')
        shards = "shards: {shard_tokens: 1048576, seed: 1}"
    return textwrap.dedent(f"""\
    name: peers-{workload}
    output: {out}
    on_error: skip
    {"" if split_mb is None else f"execution: {{split_bytes: {int(split_mb * 1e6)}}}"}
    sources:
      - {src}
    stages:{stages}
    {shards}
    """)


def run_measured(cmd: list[str], **kw) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run ``cmd``; (the completed process, wall seconds, CPU seconds of its process tree).
    CPU is user + system of the command and every process below it (Ray's daemons and
    workers, datatrove's pool), sampled from /proc every 0.25 s (psutil), each process's
    last sample kept: what a process spends after its last sample (at most 0.25 s of
    its life) is missed."""
    import psutil

    seen: dict[tuple[int, float], float] = {}
    t0 = time.perf_counter()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw) as proc:
        import threading

        out: dict[str, str] = {}
        readers = [threading.Thread(target=lambda k=k, f=f: out.__setitem__(k, f.read()), daemon=True)
                   for k, f in (("stdout", proc.stdout), ("stderr", proc.stderr))]
        for r in readers:
            r.start()
        root = psutil.Process(proc.pid)
        while proc.poll() is None:
            try:
                tree = [root, *root.children(recursive=True)]
            except psutil.Error:
                tree = []
            for p in tree:
                try:
                    with p.oneshot():
                        c = p.cpu_times()
                        seen[(p.pid, p.create_time())] = c.user + c.system   # not children_*: they are sampled themselves
                except psutil.Error:
                    pass
            time.sleep(0.25)
        for r in readers:
            r.join()
    secs = time.perf_counter() - t0
    return subprocess.CompletedProcess(cmd, proc.returncode, out.get("stdout", ""), out.get("stderr", "")), secs, sum(seen.values())


def background_load(n: int) -> list[subprocess.Popen]:
    """``n`` processes that spin on the CPU until killed (or until this process is gone):
    a fixed load beside a run."""
    spin = f"import os\nwhile os.getppid() == {os.getpid()}:\n    sum(range(100000))"
    return [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(n)]


def stop_load(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def run_datapipe(workload: str, data: Path, work: Path, sh: Path, split_mb: float | None,
                 extractor: str | None = None) -> tuple[float, int, float]:
    """Wall seconds, documents kept and CPU seconds of the job's process tree."""
    out = work / "datapipe_out"
    shutil.rmtree(out, ignore_errors=True)
    spec = work / "job.yaml"
    spec.write_text(datapipe_spec(workload, data, out, sh, split_mb, extractor))
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    p, secs, cpu = run_measured([sys.executable, "-m", "datapipe", "run", str(spec)], cwd=work, env=env)
    if p.returncode:
        raise SystemExit(f"datapipe failed on {workload}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return secs, json.loads((out / "report.json").read_text())["totals"]["documents"], cpu


# -- datatrove (runs in a child process: ``peers.py --datatrove WORKLOAD DATA WORK``) -----------

def datatrove_job(workload: str, data: str, work: str, cpus: int) -> None:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import (MinhashDedupBuckets, MinhashDedupCluster, MinhashDedupFilter,
                                          MinhashDedupSignature)
    from datatrove.pipeline.dedup.minhash import MinhashConfig
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                            GopherRepetitionFilter)
    from datatrove.pipeline.readers import JsonlReader, WarcReader
    from datatrove.pipeline.tokens import DocumentTokenizer
    from datatrove.pipeline.writers import JsonlWriter
    from datatrove.utils.hashing import HashConfig

    w = Path(work)

    def run(pipeline, tasks, name):
        LocalPipelineExecutor(pipeline=pipeline, tasks=tasks, workers=min(cpus, tasks),
                              logging_dir=str(w / "logs" / name)).run()

    rules = lambda: [GopherRepetitionFilter(), GopherQualityFilter(), C4QualityFilter(), FineWebQualityFilter()]  # noqa: E731

    def minhash(reader, final) -> None:
        # sha1 shingle hashes: datatrove's default xxhash path hashes str, which the xxhash 4
        # installed here refuses ("Strings must be encoded before hashing")
        cfg = MinhashConfig(num_buckets=BANDS, hashes_per_bucket=ROWS,
                            hash_config=HashConfig(precision=64, hash_fc="sha1"))
        run([reader(), MinhashDedupSignature(output_folder=str(w / "sigs"), config=cfg)], FILES, "sigs")
        run([MinhashDedupBuckets(input_folder=str(w / "sigs"), output_folder=str(w / "buckets"), config=cfg)],
            cfg.num_buckets, "buckets")
        run([MinhashDedupCluster(input_folder=str(w / "buckets"), output_folder=str(w / "remove"), config=cfg)],
            1, "cluster")
        run([reader(), MinhashDedupFilter(input_folder=str(w / "remove")), final], FILES, "filter")

    if workload == "heuristic":
        run([JsonlReader(data), *rules(), JsonlWriter(str(w / "out"))], FILES, "heuristic")
    elif workload == "dedup":
        minhash(lambda: JsonlReader(data), JsonlWriter(str(w / "out")))
    else:
        extractor = Trafilatura(favour_precision=True, deduplicate=False, timeout=EXTRACT_TIMEOUT_S,
                                favor_recall=False, include_tables=True, include_formatting=False,
                                include_links=False, include_images=False, fast=False, output_format="txt",
                                with_metadata=False)
        run([WarcReader(data, glob_pattern="*.warc.gz"), extractor, *rules(), JsonlWriter(str(w / "text"))],
            FILES, "extract")
        minhash(lambda: JsonlReader(str(w / "text")),
                DocumentTokenizer(str(w / "tokens"), tokenizer_name_or_path=str(TOKENIZER), eos_token="<|endoftext|>"))


def run_datatrove(workload: str, data: Path, work: Path, cpus: int) -> tuple[float, int, float]:
    """Wall seconds, documents kept and CPU seconds of the job's process tree."""
    out = work / "datatrove_out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    p, secs, cpu = run_measured([sys.executable, __file__, "--datatrove", workload, str(data), str(out), "--cpus", str(cpus)])
    if p.returncode:
        raise SystemExit(f"datatrove failed on {workload}:\n{p.stderr[-3000:]}")
    return secs, datatrove_kept(out / "logs" / ("heuristic" if workload == "heuristic" else "filter")), cpu


def datatrove_kept(logs: Path) -> int:
    """Documents that left the last pipeline step that counts them (a writer's total, or
    the dedup filter's forwarded when the tokenizer is last)."""
    steps = [st["stats"] for st in json.loads((logs / "stats.json").read_text()) if "total" in st["stats"]]
    return steps[-1].get("forwarded", steps[-1]["total"])


# -- main -----------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=str(REPO / "runs/bench/peers"))
    ap.add_argument("--workloads", default="heuristic,dedup,warc")
    ap.add_argument("--quick", action="store_true", help="sizes 4x smaller (smoke run)")
    ap.add_argument("--sizes", help="document counts to run instead of each workload's two (comma-separated)")
    ap.add_argument("--cpus", type=int, default=os.cpu_count() or 2, help="datatrove workers")
    ap.add_argument("--split-mb", type=float, help="datapipe's execution.split_bytes in MB (default: the engine's); "
                    "datatrove always gets one task per input file")
    ap.add_argument("--extractor", help="our extract stage's extractor in the warc workload (default: the stage's)")
    ap.add_argument("--background-load", type=int, default=0, metavar="N",
                    help="run each pair without and then with N busy processes beside each engine; print the slowdowns")
    ap.add_argument("--datatrove", nargs=3, metavar=("WORKLOAD", "DATA", "WORK"), help=argparse.SUPPRESS)
    sys.path.insert(0, str(REPO))
    from bench import _smoke

    args = _smoke.parse(ap, {"workloads": "warc", "sizes": "60", "work": "<tmp>", "cpus": 2})
    if args.datatrove:
        datatrove_job(*args.datatrove, cpus=args.cpus)
        return
    sys.path.insert(0, str(REPO))
    sh = shared_dir()
    rows = []
    print(f"{'workload':<10} {'docs':>7} {'datapipe s':>10} {'cpu s':>7} {'docs/s':>8} {'kept':>6} {'datatrove s':>11} "
          f"{'cpu s':>7} {'docs/s':>8} {'kept':>6} {'ratio':>6}", flush=True)
    for workload in args.workloads.split(","):
        for n in ([int(x) for x in args.sizes.split(",")] if args.sizes else SIZES[workload]):
            n = n // 4 if args.quick else n
            work = Path(args.work).resolve() / f"{workload}-{n}"
            data = work / "input"
            if not (work / "built.json").exists():
                shutil.rmtree(work, ignore_errors=True)
                docs = BUILDERS[workload](sh, n, data)
                (work / "built.json").write_text(json.dumps({"docs": docs}))
            docs = json.loads((work / "built.json").read_text())["docs"]
            # with a background load: each engine first without it, then with it, so each
            # row's slowdown (loaded / unloaded wall) is measured in this run
            for spinners in ([0, args.background_load] if args.background_load else [0]):
                load = os.getloadavg()[0]
                spin = background_load(spinners)
                try:
                    ours, our_kept, our_cpu = run_datapipe(workload, data, work, sh, args.split_mb, args.extractor)
                finally:
                    stop_load(spin)
                spin = background_load(spinners)
                try:
                    theirs, their_kept, their_cpu = run_datatrove(workload, data, work, args.cpus)
                finally:
                    stop_load(spin)
                row = {"workload": workload, "docs": docs, "datapipe_s": round(ours, 2), "datapipe_cpu_s": round(our_cpu, 2),
                       "datapipe_kept": our_kept, "datatrove_s": round(theirs, 2), "datatrove_cpu_s": round(their_cpu, 2),
                       "datatrove_kept": their_kept, "ratio": round(theirs / ours, 2),
                       "extractor": args.extractor, "background_load": spinners,
                       "load_before": load, "load_after": os.getloadavg()[0]}
                slow = ""
                if spinners:
                    base = rows[-1]
                    row["datapipe_slowdown"] = round(ours / base["datapipe_s"], 2)
                    row["datatrove_slowdown"] = round(theirs / base["datatrove_s"], 2)
                    slow = (f"   slowdown with +{spinners} busy: datapipe {row['datapipe_slowdown']:.2f}x, "
                            f"datatrove {row['datatrove_slowdown']:.2f}x")
                rows.append(row)
                print(f"{workload:<10} {docs:>7} {ours:>10.1f} {our_cpu:>7.1f} {docs / ours:>8.0f} {our_kept:>6} {theirs:>11.1f} "
                      f"{their_cpu:>7.1f} {docs / theirs:>8.0f} {their_kept:>6} {theirs / ours:>5.2f}x   "
                      f"(load {load:.1f} -> {os.getloadavg()[0]:.1f}){slow}", flush=True)
    (Path(args.work) / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("ratio = datatrove wall / datapipe wall (> 1: datapipe faster); both measured in this run; kept: "
          "documents each engine let through (the rule sets are each engine's own implementations); "
          "cpu s: CPU seconds of each engine's process tree; load: 1-minute load average before -> after the pair"
          + (f"; each size ran without and then with {args.background_load} busy processes beside each engine"
             if args.background_load else ""))


if __name__ == "__main__":
    main()
