"""The per-split engine on a local Ray: global stages on the side/decide contract,
byte-identical outputs across batch sizes and CPU counts, actors on one CPU, zero-record
inputs, duplicate ids, token shards per split, and resume after a killed driver."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from datapipe.plan import split_refs
from datapipe.runner import run_job
from datapipe.shards import verify_shards
from datapipe.spec import load_job

sys.path.insert(0, str(Path(__file__).parent))
import engine_stages  # noqa: E402

pytestmark = pytest.mark.ray
HELPER = Path(__file__).parent / "engine_stages.py"
TEXTS = [f"Paragraph {i} describes the valley, its rivers and the old mill by the bridge." for i in range(30)]


@pytest.fixture(scope="module", autouse=True)
def _stages():
    engine_stages.register()


def _corpus(tmp_path: Path, *, extra_stages: str = "", execution: str = "batch_rows: 4, split_bytes: 1024",
            tokenize: Path | None = None) -> Path:
    data = tmp_path / "data"
    data.mkdir(parents=True, exist_ok=True)
    for f in range(4):  # every file repeats texts of the previous one: exact duplicates across splits
        with open(data / f"part{f}.jsonl", "w") as fh:
            for i in range(12):
                fh.write(json.dumps({"id": f"f{f}-{i}", "text": TEXTS[(i + 5 * f) % len(TEXTS)]}) + "\n")
    (data / "blank.jsonl").write_text("\n\n   \n")        # yields zero records
    with open(data / "dups.jsonl", "w") as fh:          # one native id twice, different text
        fh.write(json.dumps({"id": "same", "text": "The first copy of a document with a reused id."}) + "\n")
        fh.write(json.dumps({"id": "same", "text": "A second, different document under the same id."}) + "\n")
    (tmp_path / "empty").mkdir(exist_ok=True)
    (tmp_path / "empty" / "short.jsonl").write_text(json.dumps({"id": "s", "text": "tiny"}) + "\n")
    tok = f"\n  - tokenize: {{tokenizer: {tokenize}}}\nshards: {{shard_tokens: 256, seed: 7}}" if tokenize else ""
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: engine-test
        output: out
        execution: {{{execution}}}
        sources:
          - name: main
            format: jsonl
            paths: [data/*.jsonl]
            options: {{id_key: id}}
          - name: nothing_left
            format: jsonl
            paths: [empty/*.jsonl]
            options: {{id_key: id}}
        stages:
          - normalize: {{}}EXTRA
          - exact_dup: {{}}
          - length: {{min_chars: 10}}""").replace("EXTRA", extra_stages) + tok + "\n")
    return spec


def _outputs(out: Path) -> dict[str, bytes]:
    skip = {"report.json", "report.md", "drops.png", "_SUCCESS", "ray.log"}  # run records, not data
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file() and p.name not in skip}


def _rows(folder: Path) -> list[dict]:
    return [r for f in sorted(folder.rglob("*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_global_stage_zero_records_duplicate_ids_and_shards(ray_session, tmp_path, shared_dir):
    spec = _corpus(tmp_path, tokenize=shared_dir / "tokenizers" / "tiny-2k.tokenizer.json")
    result = run_job(load_job(spec), echo=lambda s: None)
    out = Path(result.output)
    report = result.report
    assert report["accounting_ok"], report["problems"]
    docs, rejects = _rows(out / "documents"), _rows(out / "rejects")
    # 48 records, 27 distinct texts: 21 exact duplicates found across splits by the global stage
    by_reason: dict[str, list] = {}
    for r in rejects:
        by_reason.setdefault(r["reject_reason"], []).append(r)
    assert len(by_reason["exact_dup:exact"]) == 21
    assert sorted(d["text"] for d in docs if "valley" in d["text"]) == sorted(TEXTS[:27])
    # the reused id: the second copy is a counted reject naming the first copy's origin
    [dup] = by_reason["read:duplicate_id"]
    assert dup["text"].startswith("A second") and dup["reject_detail"] == "first copy at dups.jsonl@0"
    # the blank file and the source with nothing left complete with an honest report
    assert report["totals"]["per_source"]["nothing_left"] == {"documents": 0, "rejects": 1, "text_bytes": 0}
    assert not (out / "documents" / "nothing_left").exists()
    # files are named by read split; pyarrow reads the folder (no source= key clash)
    assert all(p.name.startswith("part-") for p in (out / "documents" / "main").iterdir())
    assert pq.read_table(out / "documents").num_rows == len(docs)
    import pandas as pd   # what users try first: the folder, no options

    import duckdb
    import polars as pl

    frame = pd.read_parquet(out / "documents")
    assert len(frame) == len(docs) and set(frame["source"]) == {d["source"] for d in docs}
    assert pl.read_parquet(out / "documents").height == len(docs)
    assert duckdb.sql(f"select count(*) from read_parquet('{out / 'documents'}/**/*.parquet')").fetchall() == [(len(docs),)]
    # token shards: per split, merged into one manifest per source; verify passes
    assert verify_shards(out / "shards") == []
    m = json.loads((out / "shards" / "main" / "manifest.json").read_text())
    assert m["totals"]["documents"] == len(docs) and len({s["split"] for s in m["shards"]}) > 1
    empty = json.loads((out / "shards" / "nothing_left" / "manifest.json").read_text())
    assert empty["totals"] == {"tokens": 0, "documents": 0, "shards": 0}
    assert (out / "shards" / "main" / "tokenizer.json").is_file()


def test_same_bytes_across_batch_sizes(ray_session, tmp_path):
    outs = []
    for k, execution in enumerate(["batch_rows: 3, split_bytes: 1024", "batch_rows: 50, split_bytes: 1024"]):
        spec = _corpus(tmp_path / str(k), execution=execution, extra_stages="\n  - tagger: {}")
        outs.append(_outputs(Path(run_job(load_job(spec), echo=lambda s: None).output)))
    assert outs[0] == outs[1]
    assert any(k.startswith("documents/main/part-") for k in outs[0])


def _cli(args, env, **kw):
    return subprocess.run([sys.executable, str(HELPER), *args], env=env, capture_output=True, text=True, **kw)


def test_one_cpu_with_actor_stages_matches_two(ray_session, ray_cluster, tmp_path):
    """An embedded Ray with num_cpus 1 and a stage with setup(): read is fused into the
    one actor, so the job neither hangs nor changes a byte."""
    ref = _corpus(tmp_path / "two", extra_stages="\n  - tagger: {}")
    want = _outputs(Path(run_job(load_job(ref), echo=lambda s: None).output))
    one = _corpus(tmp_path / "one", extra_stages="\n  - tagger: {}",
                  execution="batch_rows: 4, split_bytes: 1024, num_cpus: 1")
    env = {k: v for k, v in ray_cluster["env"].items() if k != "RAY_ADDRESS"}
    env.update(DATAPIPE_PROGRESS="0", PYTHONPATH=str(Path(__file__).parents[2]))
    proc = _cli(["run", str(one)], env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "1 actor(s)" in proc.stdout
    got = _outputs(tmp_path / "one" / "out")
    assert got == want


def _cluster_env(ray_cluster) -> dict[str, str]:
    return dict(ray_cluster["env"], RAY_ADDRESS=ray_cluster["address"], DATAPIPE_PROGRESS="0",
                PYTHONPATH=str(Path(__file__).parents[2]))


def _interrupted(spec: Path, ray_cluster, share: float) -> tuple[str, int, int]:
    """``datapipe run spec`` in a subprocess, SIGTERMed once ``share`` of its first
    phase's splits are done: (its output, its exit code, the job's split count)."""
    proc = subprocess.Popen([sys.executable, str(HELPER), "run", str(spec)], env=_cluster_env(ray_cluster), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    total = len(split_refs(load_job(spec)))
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:   # staging: out.staging-<job hash[:16]>
        if len(list(spec.parent.glob("out.staging-*/work/done/p0/**/*.json"))) >= share * total:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the job finished before it could be interrupted"
    os.kill(proc.pid, signal.SIGTERM)
    said, _ = proc.communicate(timeout=120)
    return said, proc.returncode, total


def test_sigterm_then_restart_reuses_splits_and_matches(ray_session, ray_cluster, tmp_path):
    ref = _corpus(tmp_path / "ref", extra_stages="\n  - slow: {seconds: 0.4}")
    want = _outputs(Path(run_job(load_job(ref), echo=lambda s: None).output))
    spec = _corpus(tmp_path / "cut", extra_stages="\n  - slow: {seconds: 0.4}")
    said, rc, _ = _interrupted(spec, ray_cluster, 0.7)
    assert rc == 130 and "Run the same command again to resume" in said, said[-3000:]
    assert not (tmp_path / "cut" / "out").exists()
    again = _cli(["run", str(spec)], _cluster_env(ray_cluster), timeout=600)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "resuming the interrupted run" in again.stdout
    assert not list((tmp_path / "cut").glob("out.staging*")) and not (tmp_path / "cut" / "out.lock").exists()
    report = json.loads((tmp_path / "cut" / "out" / "report.json").read_text())
    assert report["splits"]["reused"] >= 1
    assert _outputs(tmp_path / "cut" / "out") == want


def test_small_restart_runs_in_the_driver_with_the_same_bytes(ray_session, ray_cluster, tmp_path):
    """One phase (no global stage): a restart with little work left runs the remaining
    splits (and the duplicate-id re-run) in the driver, and writes what Ray writes."""
    def one_phase(folder: Path) -> Path:
        spec = _corpus(folder, extra_stages="\n  - slow: {seconds: 0.2}")
        spec.write_text(spec.read_text().replace("  - exact_dup: {}\n", ""))
        return spec

    ref = one_phase(tmp_path / "ref")
    done = run_job(load_job(ref), echo=lambda s: None)
    assert not done.report["splits"]["in_driver"]
    want = _outputs(Path(done.output))
    spec = one_phase(tmp_path / "cut")
    said, rc, total = _interrupted(spec, ray_cluster, 0.6)
    assert rc == 130, said[-3000:]
    assert "RAY_ADDRESS" not in os.environ   # this process: an embedded Ray's rules apply
    again = run_job(load_job(spec), echo=lambda s: None)
    assert again.report["splits"]["in_driver"] and 1 <= again.report["splits"]["reused"] < total
    assert _outputs(tmp_path / "cut" / "out") == want
