"""The dedup stage on real wiki text with planted cross-source duplicates, through the
global-stage contract (side rows per split, its passes once through the engine's
executor): it removes what a brute-force all-pairs Jaccard says it should; the local
(one process) and distributed (Ray Data passes, any partitioning) paths give identical
decisions;
a rerun reuses the committed decisions; incremental runs against a persisted index
remove only new data."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

from datapipe import schema as S
from dedup_driver import run_global, split_tables
from stages.dedup import Dedup, DedupConfig
from stages.dedup.minhash import shingles

pytestmark = pytest.mark.ray

PRIORITY = ("wiki", "books", "web")


def _typo(text: str, rng: random.Random, n: int = 1) -> str:
    words = text.split(" ")
    for _ in range(n):
        i = rng.randrange(len(words))
        w = words[i]
        words[i] = (w[:-1] + "q") if len(w) > 1 else "zq"
    return " ".join(words)


@pytest.fixture(scope="module")
def corpus(shared_dir: Path) -> dict[str, list[tuple[str, str | None, str | None]]]:
    """{source: [(id, text, reject_reason)]} with planted duplicates."""
    raw = (shared_dir / "corpora/wiki/wikitext-2-raw.test.txt").read_text(encoding="utf-8")
    paras = [p.strip() for p in raw.split("\n") if 150 <= len(p.split()) <= 400]
    assert len(paras) >= 60, "wikitext-2 test split should have long paragraphs"
    rng = random.Random(5)
    w = paras[:30]
    b = paras[30:40]
    web_distinct = paras[40:55]
    other = paras[55]
    b_near_w0 = _typo(w[0], rng)
    wiki = [(f"wiki/{i:03d}", t, None) for i, t in enumerate(w)]
    books = [(f"books/{i:03d}", t, None) for i, t in enumerate(b)]
    books += [("books/100", b_near_w0, None),                          # near dup of wiki/000
              ("books/101", w[1].upper().replace(".", " !"), None)]     # exact after normalisation
    web = [(f"web/{i:03d}", t, None) for i, t in enumerate(web_distinct)]
    web += [
        ("web/100", w[2], None),                      # exact copy of wiki/002
        ("web/101", _typo(w[3], rng), None),          # near dup of wiki/003
        ("web/102", _typo(b[0], rng), None),          # near dup of books/000
        ("web/103", b[1], None),                      # exact copy of books/001
        ("web/104", _typo(b_near_w0, rng), None),     # chain: web -> books/100 -> wiki/000
        ("web/105", other, None),                     # web/105 and web/106: a pair in web only
        ("web/106", _typo(other, rng), None),
        ("web/107", w[4], "heuristics:too_short"),    # dropped earlier: passes untouched
        ("web/108", "", None),                        # nothing to shingle
        ("web/109", " ".join(w[5].split()[: len(w[5].split()) // 2]), None),  # half of wiki/005: J ~ 0.5, kept
    ]
    return {"wiki": wiki, "books": books, "web": web}


def _tables(corpus, sources, rows_per_block: int | None = None) -> list[pa.Table]:
    out = []
    for src in sources:
        rows = corpus[src]
        step = rows_per_block or len(rows)
        for i in range(0, len(rows), step):
            part = rows[i:i + step]
            out.append(S.make_batch(source=src, ids=[r[0] for r in part], texts=[r[1] for r in part],
                                    reject_reasons=[r[2] for r in part]))
    return out


def _expected(corpus, sources, old: frozenset[str] = frozenset(), threshold: float = 0.8) -> dict[str, str]:
    """Brute force: all-pairs Jaccard of the shingle sets, connected components,
    survivor = best (priority, id). ``old``: documents kept by an earlier run; they
    always survive and are never reported."""
    rank = {s: i for i, s in enumerate(PRIORITY)}
    docs = {}
    for src in PRIORITY:
        for id_, text, reason in corpus[src]:
            if id_ in old:
                docs[id_] = (-1, set(shingles(text)))
            elif src in sources and reason is None and text and shingles(text):
                docs[id_] = (rank[src], set(shingles(text)))
    order = lambda i: (docs[i][0], i)  # noqa: E731
    ids = sorted(docs, key=order)
    parent = {i: i for i in ids}

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for i, x in enumerate(ids):
        for y in ids[i + 1:]:
            if x in old and y in old:
                continue
            a, b = docs[x][1], docs[y][1]
            if len(a & b) / len(a | b) >= threshold:
                rx, ry = sorted([find(x), find(y)], key=order)
                if rx != ry:
                    parent[ry] = rx
    return {i: find(i) for i in ids if find(i) != i and i not in old}


def _run(tmp_path: Path, name: str, tables, **cfg) -> tuple[dict[str, tuple[str, str]], dict]:
    removed, report, _ = run_global(Dedup(DedupConfig(source_priority=PRIORITY, **cfg)), split_tables(tables),
                                    tmp_path / name, PRIORITY)
    return removed, report


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, corpus):
    """One run over all sources with the defaults (the local path)."""
    return _run(tmp_path_factory.mktemp("dedup_full"), "a", _tables(corpus, PRIORITY))


def test_local_and_distributed_decide_remove_the_same_documents(ray_session, tmp_path, corpus, full_run):
    ra, rep_a = full_run
    ctx = ray_session.data.DataContext.get_current()
    old_limits = ctx.execution_options.resource_limits
    ctx.execution_options.resource_limits = old_limits.copy(cpu=1)   # one CPU instead of two
    try:
        # multi-partition shuffles; components in one task (the star rounds' kernels are
        # tested on arbitrary partitionings in tests/unit/test_dedup.py)
        rb, rep_b = _run(tmp_path, "b", _tables(corpus, PRIORITY, rows_per_block=7), local_rows=0,
                         partition_rows=150, verify_partition_rows=10, min_partition_rows=1)
        # and the components in large-star / small-star rounds of their own passes
        rc, rep_c = _run(tmp_path, "c", _tables(corpus, PRIORITY, rows_per_block=7), local_rows=0,
                         components="distributed", partition_rows=150, min_partition_rows=1)
    finally:
        ctx.execution_options.resource_limits = old_limits
    assert ra == rb == rc
    assert rep_c["components"].startswith("distributed (") and any(p["pass"] == "decisions" for p in rep_c["passes"])
    assert rep_a["path"] == "local" and rep_b["path"] == "distributed"
    want = _expected(corpus, PRIORITY)
    assert {i: d for i, (_, d) in ra.items()} == want
    assert ra["web/100"] == ("dedup:exact", "wiki/002")
    assert ra["books/101"] == ("dedup:exact", "wiki/001")
    assert ra["web/101"] == ("dedup:near", "wiki/003")
    assert ra["web/102"] == ("dedup:near", "books/000")
    assert ra["web/104"] == ("dedup:near", "wiki/000") and ra["books/100"] == ("dedup:near", "wiki/000")
    assert ra["web/106"] == ("dedup:near", "web/105")
    assert "web/109" not in ra and "web/108" not in ra and "web/107" not in ra
    # the report
    assert rep_a["bands"] * rep_a["rows"] <= 128 and set(rep_a["s_curve"]) >= {"0.50", "0.95"}
    assert rep_a["removed_per_source"]["web"] == {"exact": 2, "near": 4}
    assert rep_a["matrix"]["web"] == {"wiki": 3, "books": 2, "web": 1}
    assert rep_a["cluster_sizes"] == {"2": 6, "3": 1}
    assert rep_b["components"] == rep_a["components"] == "local"
    assert any(p["pass"] == "verify_a" for p in rep_b["passes"])     # the two-shuffle join ran
    assert {k: v for k, v in rep_a.items() if k in ("removed_per_source", "matrix", "cluster_sizes")} == \
           {k: v for k, v in rep_b.items() if k in ("removed_per_source", "matrix", "cluster_sizes")}


def test_local_decide_off_the_driver_removes_the_same_documents(ray_session, tmp_path, corpus, full_run,
                                                                 monkeypatch):
    """Above ``DRIVER_ROWS`` side rows the executor runs the one-process path in one Ray
    task (the driver's memory stays flat): the same decisions and report as in the driver."""
    from datapipe import passes

    ra, rep_a = full_run
    monkeypatch.setattr(passes, "DRIVER_ROWS", 0)
    rt, rep_t = _run(tmp_path, "t", _tables(corpus, PRIORITY))
    assert rep_a["decided_in"] == "driver" and rep_t["decided_in"] == "one Ray task" and rep_t["path"] == "local"
    assert rt == ra
    same = ("removed_per_source", "matrix", "cluster_sizes", "counts", "components")
    assert {k: rep_t[k] for k in same} == {k: rep_a[k] for k in same}


def test_rerun_reuses_committed_decisions(tmp_path, corpus):
    tables = _tables(corpus, PRIORITY, rows_per_block=9)
    first, rep1 = _run(tmp_path, "w", tables)
    assert rep1["passes"] and not any(p["reused"] for p in rep1["passes"])
    passes = tmp_path / "w" / "passes"
    stamps = {p.name: p.stat().st_mtime_ns for p in passes.rglob("*.parquet")}
    again, rep2 = _run(tmp_path, "w", tables)
    assert again == first and all(p["reused"] for p in rep2["passes"])    # the executor's commits, reused
    assert [p["pass"] for p in rep2["passes"]] == [p["pass"] for p in rep1["passes"]]
    assert {k: v for k, v in rep2.items() if k not in ("passes", "seconds")} == \
           {k: v for k, v in rep1.items() if k not in ("passes", "seconds")}
    assert {p.name: p.stat().st_mtime_ns for p in passes.rglob("*.parquet")} == stamps   # not recomputed
    # other side data: other decisions, in their own artifacts
    fewer, rep3 = _run(tmp_path, "w", _tables(corpus, ("wiki", "web"), rows_per_block=9))
    assert fewer != first and not any(p["reused"] for p in rep3["passes"])


@pytest.mark.parametrize("local_rows", [200_000, 0], ids=["local", "distributed"])
def test_incremental_run_removes_only_new_documents(ray_session, tmp_path, corpus, full_run, local_rows):
    index = tmp_path / "index1"
    first, rep1 = _run(tmp_path, "first", _tables(corpus, ("wiki", "books")), index_out=str(index),
                       local_rows=local_rows)
    kept_first = {i for src in ("wiki", "books") for i, text, reason in corpus[src]
                  if i not in first and reason is None and text}
    assert rep1["index_out"]["documents"] == len(kept_first)
    removed, rep2 = _run(tmp_path, "second", _tables(corpus, ("web",)), index_in=str(index),
                         index_out=str(tmp_path / "index2"), local_rows=local_rows)
    assert all(i.startswith("web/") for i in removed)
    want = _expected(corpus, ("web",), old=frozenset(kept_first))
    assert {i: d for i, (_, d) in removed.items()} == want
    assert removed["web/100"] == ("dedup:exact", "wiki/002")
    assert removed["web/103"] == ("dedup:exact", "books/001")
    assert removed["web/101"] == ("dedup:near", "wiki/003")
    assert removed["web/106"] == ("dedup:near", "web/105")
    assert rep2["index_in"]["documents"] == len(kept_first)
    assert rep2["index_out"]["documents"] == len(kept_first) + rep2["index_out"]["added"]
    # the same removals as one run over everything (for the new source)
    full, _ = full_run
    assert {i: v for i, v in full.items() if i.startswith("web/")} == removed
