"""How the engine scales with input: the same chain (normalize, length, Gopher
repetition + quality, FineWeb, tokenize) at 1x, 4x and 16x a base corpus of Gutenberg
paragraphs from ../shared. Per size: wall time, busy seconds per stage, the driver's peak
RSS, the object store's peak use (the raylets' store stats, sampled every 0.25 s) and the
CPU seconds of the driver and the Ray processes it started (sampled from /proc: a measure
of work that other jobs' load on a shared machine does not inflate, unlike wall time). Each size runs in its own
process with an embedded Ray; the 1x run is the baseline the others are compared with,
measured in the same invocation.

    .venv/bin/python bench/scale.py [--base-mb 4] [--factors 1 4 16] [--cpus 2] [--estimate]

Expected: wall (beyond Ray's fixed start-up) and CPU seconds near-linear in input size;
driver RSS and object-store peak flat. ``--estimate``: `datapipe estimate` from the 1x
run's report for each larger size, beside what it measured.

    .venv/bin/python bench/scale.py --docs 10000 [--exact 0.05 --near 0.05 --repeat-ids 0.01]
        [--population 1000000] [--estimate | --estimate-docs 10000] [--save DIR]

One run of the full chain (normalize, length, langid, Gopher, C4, FineWeb, quality,
perplexity, dedup, PII, tokenize; the models of ``make models``) over N documents of real
text (Gutenberg, WikiText-2, Lee news) with known exact and near copies across sources and
re-issued ids: wall, CPU seconds per stage, peak RSS of the driver and of the largest Ray
worker (``VmHWM``, and the private ``RssAnon`` peak), object-store peak, spilled bytes,
bytes written to disk (``/proc/<pid>/io``), dedup's path and removals against the known
copies, the duplicate-id check's cost and catches, and `datapipe estimate`'s projection for
``--project-docs`` (default 1,000,000) from this run's report. ``--population``: the N
documents are a uniform sample of that many (give the full run's size to the 1% run);
``--estimate-docs``: a run of that size first, and the estimate from it beside this one.

    .venv/bin/python bench/scale.py --warc-pages 549 --project-bytes 394TiB --project-nodes 64 \
        --project-cores 32 --project-mem 256GB

The full chain with ``extract`` first over real HTML pages in WARC files, and `datapipe
estimate` from it for a crawl's size on a cluster (docs/engine.md "Scale").
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
import textwrap
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


def docs_corpus(shared: Path, folder: Path, n: int, *, exact: float, near: float, repeat: float = 0.0,
                population: int | None = None, seed: int = 0) -> dict:
    """``n`` JSONL documents in three sources (``books``: Gutenberg paragraph groups,
    ``wiki``: WikiText-2 articles' sections, ``web``: Lee news background texts plus
    copies), of which ``exact`` and ``near`` shares are copies of another document put in
    a *different* source: exact copies byte for byte, near copies with ~1% of the words
    edited (a letter swapped, a word dropped or doubled: a Jaccard similarity of ~0.9 on
    word 5-grams, above dedup's 0.8). Returns the ground truth
    ``{"exact": [(orig, copy)], "near": [...], "unique": k, "pool": size}`` (ids as
    ``source_id`` in the output). ``repeat``: share of documents re-issued under an id
    already used in their source (the record again, as when a file is listed twice or two
    dumps overlap), written to each source's last files (``part-reissue-*``, after the
    originals in plan order), so the job-wide id check must reject exactly these as
    ``read:duplicate_id`` (``truth["repeat"]``: their ids) and re-run only the splits that
    hold them. Unique documents are groups of the corpora's real paragraphs (4 for books,
    2 for wiki and web): round ``d`` (1, 2, ...) groups each source's paragraph list with
    stride ``d`` (paragraphs ``i, i+d, i+2d, ...`` within a block of ``k*d``, so every round
    uses every paragraph once, round 1 is the text as written, and two groups of different
    rounds share at most a couple of paragraphs: similar far below dedup's threshold).
    ``population``: the corpus the ``n`` documents are a uniform sample of (default ``n``):
    the rounds are those that make ``population`` documents, so a 1% run with
    ``population`` = the full run's size is a representative sample of the full run (the
    premise of ``datapipe estimate``)."""
    import gzip
    import random

    rng = random.Random(seed)
    paras: dict[str, list[str]] = {"books": [], "wiki": [], "web": []}
    for book in sorted((shared / "corpora" / "books" / "gutenberg").rglob("*.txt.gz")):
        text = gzip.decompress(book.read_bytes()).decode("utf-8", errors="replace").replace("\r\n", "\n")
        paras["books"] += [p.strip() for p in text.split("\n\n") if len(p.strip()) > 40]
    wiki = (shared / "corpora" / "wiki" / "wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    paras["wiki"] = [p.strip() for p in wiki.split("\n") if len(p.strip()) > 200]
    lee = (shared / "corpora" / "misc" / "lee_background.cor").read_text(encoding="utf-8", errors="replace")
    paras["web"] = [p.strip() for p in lee.split("\n") if len(p.strip()) > 100]
    group = {"books": 4, "wiki": 2, "web": 2}
    n_exact, n_near = int(n * exact), int(n * near)
    n_repeat = int(n * repeat)
    n_unique = n - n_exact - n_near - n_repeat
    want = max(n_unique, int((population or n) * n_unique / n))
    pool = sum(len(p) // group[src] for src, p in paras.items())
    groups: list[tuple[str, int, int]] = []   # (source, stride, first paragraph)
    d = 0
    while len(groups) < want:
        d += 1
        for src, ps in paras.items():
            k = group[src]
            groups += [(src, d, b + j) for b in range(0, len(ps) - k * d + 1, k * d) for j in range(d)]
    unique: list[tuple[str, str, str]] = []   # (source, id, text)
    for g in rng.sample(range(len(groups)), n_unique):
        src, stride, i = groups[g]
        unique.append((src, f"{src}:{stride}:{i}", "\n\n".join(paras[src][i:i + group[src] * stride:stride])))
    del groups
    truth: dict = {"exact": [], "near": [], "repeat": [], "unique": n_unique, "pool": pool, "rounds": d}
    docs = list(unique)
    others = {"books": ("wiki", "web"), "wiki": ("books", "web"), "web": ("books", "wiki")}
    for kind, count in (("exact", n_exact), ("near", n_near)):
        for j, (src, did, text) in enumerate(rng.sample(unique, count)):
            where = rng.choice(others[src])
            cid = f"{kind}:{j}:{did}"
            if kind == "near":
                words = text.split(" ")
                for w in rng.sample(range(len(words)), max(1, len(words) // 100)):
                    op = rng.randrange(3)
                    if op == 0 and len(words[w]) > 2:
                        i = rng.randrange(len(words[w]) - 1)
                        words[w] = words[w][:i] + words[w][i + 1] + words[w][i] + words[w][i + 2:]
                    elif op == 1:
                        words[w] = ""
                    else:
                        words[w] = words[w] + " " + words[w]
                text = " ".join(x for x in words if x)
            docs.append((where, cid, text))
            truth[kind].append((did, cid))
    rng.shuffle(docs)
    reissued = [(src, did, text, "reissue-") for src, did, text in rng.sample(docs, n_repeat)]
    truth["repeat"] = [did for _, did, _, _ in reissued]
    for src in paras:
        (folder / src).mkdir(parents=True, exist_ok=True)
    handles: dict[tuple[str, str], list] = {}
    for src, did, text, kind in [(s, d, t, "") for s, d, t in docs] + reissued:
        h = handles.setdefault((src, kind), [None, 0])
        if h[0] is None or h[0].tell() > 4_000_000:
            if h[0] is not None:
                h[0].close()
            h[0] = open(folder / src / f"part-{kind}{h[1]:04d}.jsonl", "w", encoding="utf-8")
            h[1] += 1
        h[0].write(json.dumps({"id": did, "text": text}) + "\n")
    for h in handles.values():
        if h[0] is not None:
            h[0].close()
    return truth


def chain_spec(folder: Path, cpus: int, *, warc: bool = False) -> Path:
    """The full chain over ``docs_corpus``'s three sources (normalize, length, langid,
    Gopher, C4, FineWeb, quality, perplexity, dedup, PII, tokenize; the sample job's
    models from ``make models``); ``warc``: over ``data/*.warc.gz`` instead, with
    ``extract`` first."""
    path = folder / "job.yaml"
    sources = ("""
          - {name: web, format: warc, paths: [data/*.warc.gz]}""" if warc else """
          - {name: books, format: jsonl, paths: [data/books/*.jsonl], options: {id_key: id}}
          - {name: wiki, format: jsonl, paths: [data/wiki/*.jsonl], options: {id_key: id}}
          - {name: web, format: jsonl, paths: [data/web/*.jsonl], options: {id_key: id}}""")
    extract = """
          - extract: {}""" if warc else ""
    path.write_text(textwrap.dedent(f"""
        name: scale-docs
        output: out
        execution: {{num_cpus: {cpus}, batch_rows: 512}}
        sources:{sources}
        stages:{extract}
          - normalize: {{}}
          - length: {{min_chars: 100}}
          - langid: {{model: null, languages: [en, fr, es, de], min_score: 0.5}}
          - gopher_repetition: {{}}
          - gopher_quality: {{}}
          - c4: {{}}
          - fineweb: {{}}
          - quality: {{model: "{REPO}/models/sample/quality.bin", threshold: 0.01}}
          - perplexity: {{model: "{REPO}/models/sample/lm/en.arpa", cutoffs: "{REPO}/models/sample/lm/cutoffs.csv",
                          max_perplexity: 3000}}
          - dedup: {{source_priority: [wiki, books, web]}}
          - pii: {{policy: placeholder, key: scale-bench-key}}
          - tokenize: {{tokenizer: "{REPO}/models/sample/tokenizer/tokenizer.json"}}
        shards: {{shard_tokens: 1048576}}
    """))
    return path


def against_truth(out: Path, truth: dict) -> dict:
    """Dedup's removals against the known copies: a pair counts where both documents
    reached dedup (no earlier stage rejected either); it is caught where dedup removed one
    of the two. Other removals: dedup's removals outside every known pair (the corpora's
    own duplicates, e.g. Gutenberg licence paragraphs, or regrouped rounds). ``repeat``:
    (re-issued copies rejected as ``read:duplicate_id`` from a ``part-reissue`` file,
    planted, all ``read:duplicate_id`` rejects)."""
    import pyarrow.parquet as pq

    rejected: dict[str, str] = {}
    dup_ids: list[tuple[str, str]] = []
    for f in sorted((out / "rejects").rglob("*.parquet")):
        t = pq.read_table(f, columns=["source_id", "reject_stage", "reject_reason", "origin"])
        for sid, stage, reason, origin in zip(*(t.column(c).to_pylist() for c in t.column_names)):
            if reason == "read:duplicate_id":
                dup_ids.append((sid, origin or ""))
            else:
                rejected[sid] = stage
    res = {}
    in_pairs = set()
    for kind in ("exact", "near"):
        eligible = caught = 0
        for a, b in truth[kind]:
            in_pairs.update((a, b))
            if any(rejected.get(x) not in (None, "dedup") for x in (a, b)):
                continue
            eligible += 1
            caught += any(rejected.get(x) == "dedup" for x in (a, b))
        res[kind] = (caught, eligible)
    res["other"] = sum(1 for i, st in rejected.items() if st == "dedup" and i not in in_pairs)
    planted = set(truth.get("repeat", []))
    res["repeat"] = (sum(1 for sid, origin in dup_ids if sid in planted and "part-reissue-" in origin),
                     len(planted), len(dup_ids))
    return res


def store_stats(state) -> tuple[float, float]:
    """(bytes in the object store now, bytes spilled so far), summed over the cluster's
    nodes, as ``ray memory --stats-only`` reports them. (``ray.available_resources()``'s
    ``object_store_memory`` is a scheduling resource: it does not move when objects are
    stored, so it cannot measure use.)"""
    from ray._private.internal_api import get_memory_info_reply

    stats = get_memory_info_reply(state, timeout_seconds=10).store_stats
    return float(stats.object_store_bytes_used), float(stats.spilled_bytes_total)


def tree_cpu(root: int, seen: dict[int, float], hwm: dict[int, float] | None = None,
             written: dict[int, float] | None = None, anon: dict[int, tuple[float, str]] | None = None) -> None:
    """Record in ``seen`` (pid -> CPU seconds, user + system) every live process under
    ``root``: the driver and the Ray it started (GCS, raylet, workers). Sampled, so a
    process's last fraction of a sampling interval is missed; other jobs on the machine
    are never counted, which makes this a measure of work that load does not inflate.
    With ``hwm``: each Ray worker's (``ray::*``) peak RSS (``VmHWM``, bytes); with
    ``written``: each process's bytes written to storage (``/proc/<pid>/io``); with
    ``anon``: the driver's (``root``) and each Ray worker's peak private memory as sampled
    (``RssAnon``: what the process allocated itself, without the object store's shared
    pages it mapped, which ``VmHWM`` counts) and the process's name at that peak (a Ray
    worker is named after the task it runs)."""
    tick = os.sysconf("SC_CLK_TCK")
    procs = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                head, tail = (d / "stat").read_text().rsplit(")", 1)
            except OSError:
                continue
            f = tail.split()
            procs[int(d.name)] = (int(f[1]), (int(f[11]) + int(f[12])) / tick, head.split("(", 1)[1])
    for pid, (_, cpu, comm) in procs.items():
        up = pid
        while up > 1 and up != root:
            up = procs.get(up, (0, 0, ""))[0]
        if up != root:
            continue
        seen[pid] = max(seen.get(pid, 0.0), cpu)
        try:
            if hwm is not None and (comm.startswith("ray::") or pid == root):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:") and pid != root:
                        hwm[pid] = max(hwm.get(pid, 0.0), float(line.split()[1]) * 1024)
                    elif line.startswith("RssAnon:") and anon is not None:
                        v = float(line.split()[1]) * 1024
                        if v > anon.get(pid, (0.0, ""))[0]:
                            name = comm if pid == root else Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
                            anon[pid] = (v, name if isinstance(name, str) else name.decode(errors="replace"))
            if written is not None:
                for line in Path(f"/proc/{pid}/io").read_text().splitlines():
                    if line.startswith("write_bytes:"):
                        written[pid] = max(written.get(pid, 0.0), float(line.split()[1]))
        except OSError:
            pass


def measure(job: str) -> None:
    """In a child process: run the job, print wall, stage busy seconds, peak RSS and store
    peak (sampled every 0.25 s)."""
    sys.path.insert(0, str(REPO))
    import ray
    from ray._private.internal_api import get_state_from_address

    from datapipe.ray_session import ensure_ray
    from datapipe.runner import run_job
    from datapipe.spec import load_job

    import datapipe.phases as phases

    ids_check: dict[str, float] = {"check_s": 0.0, "total_s": 0.0, "rerun_splits": 0}
    unique_ids, find_duplicates = phases._unique_ids, phases.find_duplicates

    def timed_check(*a, **k):   # the id check's pass (the driver's wall time)
        t0 = time.perf_counter()
        uri, keys = find_duplicates(*a, **k)
        ids_check["check_s"] += time.perf_counter() - t0
        ids_check["rerun_splits"] += len(keys)
        return uri, keys

    def timed_unique(*a, **k):   # the pass plus the re-runs of the splits holding extra copies
        t0 = time.perf_counter()
        recs = unique_ids(*a, **k)
        ids_check["total_s"] += time.perf_counter() - t0
        return recs

    phases._unique_ids, phases.find_duplicates = timed_unique, timed_check
    spec = load_job(job)
    ensure_ray(spec)
    state = get_state_from_address(ray.get_runtime_context().gcs_address)
    peak, spilled, cpu, hwm, written, anon = [0.0], [0.0], {}, {}, {}, {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            used, spilled[0] = store_stats(state)
            peak[0] = max(peak[0], used)
            tree_cpu(os.getpid(), cpu, hwm, written, anon)
            time.sleep(0.25)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    load_start = [round(x, 2) for x in os.getloadavg()]
    t0 = time.perf_counter()
    result = run_job(spec, echo=lambda s: None)
    wall = time.perf_counter() - t0
    stop.set()
    t.join()
    tree_cpu(os.getpid(), cpu, hwm, written, anon)
    rep = result.report
    me = os.getpid()
    workers = sorted(((v, name) for pid, (v, name) in anon.items() if pid != me), reverse=True)
    print(json.dumps({"wall": wall, "stages": {s["stage"]: s.get("task_seconds", s["busy_seconds"])
                                               + s.get("driver_seconds", 0.0) for s in rep["stages"]},
                      "docs": rep["stages"][0]["docs_in"],
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "worker_rss_mb": max(hwm.values(), default=0.0) / 1e6,
                      "driver_anon_mb": anon.get(me, (0.0, ""))[0] / 1e6,
                      "worker_anon_mb": workers[0][0] / 1e6 if workers else 0.0,
                      "worker_anon_top": [(round(v / 1e6), name[:80]) for v, name in workers[:5]],
                      "store_mb": peak[0] / 1e6, "spilled_mb": spilled[0] / 1e6, "cpu_s": sum(cpu.values()),
                      "written_mb": sum(written.values()) / 1e6,
                      "load": os.getloadavg()[0], "ids_check": ids_check, "load_start": load_start,
                      "load_end": [round(x, 2) for x in os.getloadavg()],
                      "report": {k: v for k, v in rep.items() if k not in ("summary_text", "console_text")}}))


def run_measured(job: Path) -> dict:
    """``measure(job)`` in a child process with its own embedded Ray."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(DATAPIPE_PROGRESS="0", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, __file__, "--measure", str(job)], env=env, cwd=REPO,
                          capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith('{"wall"')]
    if proc.returncode != 0 or not lines:
        sys.exit(f"the measured run failed (exit {proc.returncode}):\n" + proc.stdout[-3000:] + proc.stderr[-5000:])
    return json.loads(lines[-1])


def factors_table(args: argparse.Namespace, shared: Path) -> None:
    rows = []
    for factor in args.factors:
        work = Path(tempfile.mkdtemp(prefix=f"dp-scale-{factor}x-"))
        try:
            build_corpus(shared, work / "data", args.base_mb * factor)
            rows.append((f"{factor}x", run_measured(job_spec(work, args.cpus, shared))))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    base = rows[0][1]
    stages = list(base["stages"])
    print(f"{args.cpus} CPUs, base corpus {args.base_mb} MB; ratios vs the {rows[0][0]} run of this invocation; "
          "CPU s: the driver and the Ray it started (work, not inflated by other jobs' load); load: 1-min "
          "load average at the end; stage columns: busy seconds summed over workers (stages run fused per split)")
    print("| input | docs | wall s | wall / base | CPU s | CPU / base | driver peak RSS MB | largest worker MB | "
          "object store peak MB | spilled MB | load | " + " | ".join(stages) + " |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(stages))
    for factor, r in rows:
        print(f"| {factor} | {r['docs']} | {r['wall']:.1f} | {r['wall'] / base['wall']:.2f} | {r['cpu_s']:.0f} | "
              f"{r['cpu_s'] / base['cpu_s']:.2f} | {r['rss_mb']:.0f} | {r['worker_rss_mb']:.0f} | {r['store_mb']:.1f} | "
              f"{r['spilled_mb']:.0f} | {r['load']:.1f} | "
              + " | ".join(f"{r['stages'].get(s, 0):.1f}" for s in stages) + " |")
    if args.estimate:
        estimate_table(rows, args.cpus)


def estimate_table(rows: list[tuple[str, dict]], cpus: int) -> None:
    """``datapipe estimate`` from the first run's report for every larger run's input,
    beside what that run measured."""
    from datapipe.estimate import Target, estimate

    base = rows[0][1]["report"]
    print(f"\n`datapipe estimate` from the {rows[0][0]} run's report (its input bytes -> each run's input bytes, "
          f"{cpus} cores) vs measured; stage CPU s = busy seconds of all stages; wall = the report's wall time")
    b = rows[0][1]
    print(f"source run: wall {base['wall_seconds']:.1f} s, stage CPU {sum(b['stages'].values()):.1f} s, process CPU "
          f"{b['cpu_s']:.0f} s, load {b['load']:.1f}. Process CPU (/proc, not inflated by load) measured / source "
          "beside the input ratio shows how much of a miss is load: busy seconds are wall time inside the stages")
    print("| input | input / source | wall est | wall measured | est / measured | stage CPU s est | measured | "
          "est / measured | process CPU / source | load | tokens est | measured | kept text MB est | measured |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for factor, r in rows[1:]:
        rep = r["report"]
        est = estimate(base, Target(input_bytes=rep["input"]["bytes"], cores_per_node=cpus), source=rows[0][0])
        cpu = sum(r["stages"].values())
        tokens = sum(s["tokens"] for s in rep["shards"].values())
        out = sum(s["text_bytes"] for s in rep["totals"]["per_source"].values())
        print(f"| {factor} | {est.scale:.2f} | {est.wall_seconds:.1f} | {rep['wall_seconds']:.1f} | "
              f"{est.wall_seconds / rep['wall_seconds']:.2f} | {est.cpu_hours * 3600:.1f} | {cpu:.1f} | "
              f"{est.cpu_hours * 3600 / cpu:.2f} | {r['cpu_s'] / b['cpu_s']:.2f} | {r['load']:.1f} | {est.tokens:,.0f} | {tokens:,} | {est.output_bytes / 1e6:.1f} | "
              f"{out / 1e6:.1f} |")


def build_docs(shared: Path, folder: Path, n: int, args: argparse.Namespace) -> dict:
    """``docs_corpus`` in a child process, so the corpus's strings (GBs at 1M documents)
    do not stay in this process while the job runs; returns the ground truth."""
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(1) as pool:
        return pool.apply(docs_corpus, (shared, folder, n), dict(
            exact=args.exact, near=args.near, repeat=args.repeat_ids, population=args.population or args.docs))


def docs_one(n: int, args: argparse.Namespace, shared: Path) -> dict:
    """Build ``n`` documents, run the chain over them, print what it measured; returns
    the measurement."""
    work = Path(tempfile.mkdtemp(prefix=f"dp-scale-docs-{n}-"))
    try:
        t0 = time.perf_counter()
        truth = build_docs(shared, work / "data", n, args)
        built = time.perf_counter() - t0
        mb = sum(f.stat().st_size for f in (work / "data").rglob("*.jsonl")) / 1e6
        r = run_measured(chain_spec(work, args.cpus))
        rep = r["report"]
        out_mb = sum(f.stat().st_size for f in (work / "out").rglob("*") if f.is_file()) / 1e6
        found = against_truth(work / "out", truth)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    dedup = next((st for st in rep["stages"] if st["stage"] == "dedup"), {})
    print(f"\n{n:,} documents ({truth['unique']:,} unique from a pool of {truth['pool']:,} real text groups, "
          f"{len(truth['exact']):,} exact and {len(truth['near']):,} near copies across sources, "
          f"{len(truth['repeat']):,} re-issued ids), {mb:.1f} MB JSONL, built in {built:.1f} s, text groups from "
          f"{truth['rounds']} stride rounds (a sample of {args.population or args.docs:,}); {args.cpus} CPUs; load "
          f"average (1, 5, 15 min) at the start {r['load_start']}, at the end {r['load_end']}")
    print("| wall s | CPU s (driver + Ray) | stage CPU s | driver peak RSS MB (private) | largest worker peak RSS MB "
          "(private) | object store peak MB | spilled MB | disk written MB | output MB | kept docs | tokens |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {r['wall']:.1f} | {r['cpu_s']:.0f} | {sum(r['stages'].values()):.1f} | {r['rss_mb']:.0f} "
          f"({r.get('driver_anon_mb', 0):.0f}) | {r['worker_rss_mb']:.0f} ({r.get('worker_anon_mb', 0):.0f}) | "
          f"{r['store_mb']:.1f} | {r['spilled_mb']:.0f} | {r['written_mb']:.0f} | "
          f"{out_mb:.1f} | {rep['totals']['documents']:,} | {sum(s['tokens'] for s in rep['shards'].values()):,} |")
    print("peak RSS: VmHWM, which counts the object store's shared pages a process mapped; private: the largest "
          "RssAnon sampled every 0.25 s. Largest workers by private memory (MB, task at the peak): "
          + "; ".join(f"{mb} {name}" for mb, name in r.get("worker_anon_top", [])))
    print("\n| stage | docs in | dropped | CPU s |")
    print("|---|---:|---:|---:|")
    for st in rep["stages"]:
        print(f"| {st['stage']} | {st['docs_in']:,} | {sum(st['dropped'].values()):,} | "
              f"{r['stages'][st['stage']]:.1f} |")
    (ce, ne), (cn, nn) = found["exact"], found["near"]
    dedup_rep = rep.get("stage_reports", {}).get("dedup", {})
    print(f"\ndedup removed {sum(dedup.get('dropped', {}).values()):,} ({dedup.get('dropped')}); known copies "
          f"whose pair reached dedup: exact {ce:,}/{ne:,} caught, near {cn:,}/{nn:,} caught; other removals "
          f"{found['other']:,}; dedup path: {dedup_rep.get('path', '?')} ({dedup.get('docs_in', 0):,} documents "
          f"reached dedup; local_rows 200,000), {dedup_rep.get('seconds', 0):.1f} s in its passes: "
          + ", ".join(f"{p.get('pass', p.get('name'))} {p.get('seconds', 0):.1f} s"
                      for p in dedup_rep.get("passes", [])))
    ok, planted, dups = found["repeat"]
    ic = r.get("ids_check", {})
    print(f"duplicate-id check: {ok:,}/{planted:,} planted re-issued ids rejected as read:duplicate_id "
          f"({dups:,} such rejects in all); check pass {ic.get('check_s', 0):.1f} s on the driver's clock, "
          f"{ic.get('rerun_splits', 0)} of {rep.get('splits', {}).get('total', '?')} read splits run again, "
          f"check + re-runs {ic.get('total_s', 0):.1f} s wall ({100 * ic.get('total_s', 0) / r['wall']:.1f}% of "
          f"the run; the hashing itself is inside the read stage's time)")
    if args.save:
        Path(args.save).mkdir(parents=True, exist_ok=True)
        (Path(args.save) / f"docs-{n}.json").write_text(json.dumps(
            {**r, "truth": {"found": found, "rounds": truth["rounds"], "pool": truth["pool"]}, "input_mb": mb,
             "output_mb": out_mb, "built_s": built}, indent=1))
    return r


def docs_run(args: argparse.Namespace, shared: Path) -> None:
    base = None
    if args.estimate or args.estimate_docs:   # a smaller run first (a sample of the same population)
        base = docs_one(args.estimate_docs or args.docs // 4, args, shared)
    r = docs_one(args.docs, args, shared)
    if base is not None:
        estimate_table([(f"{base['docs']:,} docs", base), (f"{args.docs:,} docs", r)], args.cpus)
    if args.project_docs or args.project_bytes:
        project(r, args, f"this {args.docs:,}-document run")


def warc_run(args: argparse.Namespace, shared: Path) -> dict:
    """The full chain with ``extract`` first over ``--warc-pages`` HTML responses (the
    shared real pages, in WARC files as Common Crawl writes them): the source run for a
    projection by input bytes of a crawl's WARC files."""
    from peers import build_warc

    work = Path(tempfile.mkdtemp(prefix="dp-scale-warc-"))
    try:
        build_warc(shared, args.warc_pages, work / "data")
        r = run_measured(chain_spec(work, args.cpus, warc=True))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rep = r["report"]
    print(f"\n{args.warc_pages:,} WARC responses ({rep['input']['bytes'] / 1e6:.1f} MB read, decompressed), "
          f"full chain with extract; {args.cpus} CPUs; load {r['load_start']} -> {r['load_end']}")
    print(f"wall {r['wall']:.1f} s, CPU {r['cpu_s']:.0f} s (driver + Ray), stage CPU {sum(r['stages'].values()):.1f} s "
          f"(extract {r['stages'].get('extract', 0):.1f} s), driver peak {r['rss_mb']:.0f} MB, largest worker "
          f"{r['worker_rss_mb']:.0f} MB, kept {rep['totals']['documents']:,}")
    if args.save:
        Path(args.save).mkdir(parents=True, exist_ok=True)
        (Path(args.save) / f"warc-{args.warc_pages}.json").write_text(json.dumps(r, indent=1))
    return r


def project(r: dict, args: argparse.Namespace, what: str) -> None:
    """`datapipe estimate` from run ``r``'s report for ``--project-bytes`` or
    ``--project-docs`` on ``--project-nodes`` x ``--project-cores``."""
    from datapipe.estimate import Target, estimate

    size = {"input_bytes": args.project_bytes} if args.project_bytes else {"docs": args.project_docs}
    target = Target(**size, nodes=args.project_nodes, cores_per_node=args.project_cores or args.cpus,
                    mem_per_node=args.project_mem, worker_mem=int(r["worker_rss_mb"] * 1e6) or None)
    est = estimate(r["report"], target, source=what)
    print(f"\nProjection ({', '.join(f'{k} {v:,}' for k, v in size.items())}) on {target.nodes} node(s) x "
          f"{target.cores_per_node} cores:\n")
    print(est.text())


def main() -> None:
    sys.path.insert(0, str(REPO))
    from datapipe.estimate import parse_size

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-mb", type=int, default=4)
    ap.add_argument("--factors", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--estimate", action="store_true",
                    help="also print `datapipe estimate` from the first size's report beside each larger size "
                         "(with --docs: from a run at a quarter of --docs, measured first)")
    ap.add_argument("--docs", type=int, help="instead of the factors: one run of the full chain over this many "
                                             "documents with known copies")
    ap.add_argument("--estimate-docs", type=int,
                    help="with --docs: the size of the source run for the estimate (implies --estimate; e.g. 1%%)")
    ap.add_argument("--population", type=int, help="with --docs: the corpus the documents are a uniform sample of "
                                                   "(default --docs; give the full run's size to make a small run a "
                                                   "representative sample of it)")
    ap.add_argument("--exact", type=float, default=0.05, help="with --docs: share of exact copies")
    ap.add_argument("--near", type=float, default=0.05, help="with --docs: share of near copies")
    ap.add_argument("--repeat-ids", type=float, default=0.01,
                    help="with --docs: share of documents re-issued under an id already used in their source")
    ap.add_argument("--project-docs", type=int, default=1_000_000,
                    help="with --docs: print `datapipe estimate` for this many documents (0: none)")
    ap.add_argument("--project-bytes", type=parse_size, help="with --docs or --warc-pages: print `datapipe "
                                                                 "estimate` for this much input (e.g. 394TiB)")
    ap.add_argument("--project-nodes", type=int, default=1, help="the projection's nodes")
    ap.add_argument("--project-cores", type=int, help="the projection's cores per node (default --cpus)")
    ap.add_argument("--project-mem", type=parse_size, help="the projection's memory per node (e.g. 256GB)")
    ap.add_argument("--warc-pages", type=int, help="instead: the full chain with extract over this many WARC "
                                                   "responses of real pages (a source run for --project-bytes)")
    ap.add_argument("--save", help="with --docs: write each run's measurement (JSON) into this folder")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    from bench import _smoke  # the repository is on sys.path (above)

    args = _smoke.parse(ap, {"base_mb": 1, "factors": [1]})
    if args.measure:
        measure(args.measure)
        return
    sys.path.insert(0, str(REPO))
    shared = Path(os.environ.get("DATAPIPE_SHARED", REPO.parent / "shared"))
    if args.warc_pages:
        r = warc_run(args, shared)
        if args.project_docs or args.project_bytes:
            project(r, args, f"this {args.warc_pages:,}-page WARC run")
    elif args.docs:
        docs_run(args, shared)
    else:
        factors_table(args, shared)


if __name__ == "__main__":
    main()
