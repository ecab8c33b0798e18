"""The runner end to end on a local Ray: outputs, accounting, corrupt input, re-runs."""

from __future__ import annotations

import gzip
import json
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import zstandard

from datapipe.errors import ConflictError, CorruptInputError
from datapipe.runner import run_job
from datapipe.spec import load_job

pytestmark = pytest.mark.ray

DOCS = [
    {"id": f"d{i}", "text": f"Document number {i} talks about rivers, mountains and the weather in spring.", "url": f"https://example.org/{i}"}
    for i in range(40)
] + [{"id": "short", "text": "tiny"}, {"id": "blank", "text": "   \n  "}, {"id": "ctrl", "text": "\u0000\u0001\u200b"}]


def _corpus(tmp_path: Path, shared_dir: Path) -> Path:
    data = tmp_path / "data"
    (data / "good").mkdir(parents=True)
    (data / "bad").mkdir()
    with open(data / "good" / "a.jsonl", "w") as f:
        for d in DOCS[:20]:
            f.write(json.dumps(d) + "\n")
        f.write(b'{"id": "latin", "text": "caf\xe9 au lait is a drink"}\n'.decode("latin-1"))  # valid UTF-8 after decode
    with gzip.open(data / "good" / "b.jsonl.gz", "wt") as f:
        for d in DOCS[20:]:
            f.write(json.dumps(d) + "\n")
    # invalid UTF-8 line and a broken JSON line among good ones
    with open(data / "bad" / "c.jsonl", "wb") as f:
        f.write(b'{"id": "ok1", "text": "a perfectly fine line of text for the test"}\n')
        f.write(b'{"id": "badutf", "text": "bytes \xff\xfe are not utf-8 here"}\n')
        f.write(b'{"id": "broken", "text": "no closing brace"\n')
        f.write(b'{"id": "ok2", "text": "another perfectly fine line of text for the test"}\n')
    # truncated gzip: first half of a valid stream
    blob = gzip.compress("".join(json.dumps({"id": f"t{i}", "text": "some text " * 50}) + "\n" for i in range(200)).encode())
    (data / "bad" / "trunc.jsonl.gz").write_bytes(blob[: len(blob) // 2])
    # corrupt zstd: valid header, garbage body
    good = zstandard.ZstdCompressor().compress(b'{"id": "z", "text": "zstd text"}\n' * 50)
    (data / "bad" / "corrupt.jsonl.zst").write_bytes(good[:12] + b"\x00garbage" * 20)
    (data / "bad" / "empty.jsonl").write_bytes(b"")
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent("""
        name: runner-test
        output: out
        on_error: skip
        execution: {batch_rows: 8, split_bytes: 1024}
        sources:
          - name: good
            format: jsonl
            paths: [data/good/*]
            options: {id_key: id, url_key: url}
          - name: bad
            format: jsonl
            paths: [data/bad/*]
            options: {id_key: id}
          - name: code
            format: text
            paths: ["{stdlib}/json/*.py"]
        stages:
          - normalize: {}
          - length: {min_chars: 10}
    """))
    return spec


def _read_dir(path: Path):
    files = sorted(path.rglob("*.parquet"))
    rows = []
    for f in files:
        rows.extend(pq.read_table(f).to_pylist())
    return rows


def test_run_outputs_accounting_and_rerun(ray_session, tmp_path, shared_dir):
    spec = _corpus(tmp_path, shared_dir)
    job = load_job(spec)
    result = run_job(job, echo=lambda s: None)
    out = Path(result.output)
    assert (out / "_SUCCESS").is_file() and not out.with_name("out.staging").exists()
    report = json.loads((out / "report.json").read_text())
    assert report["accounting_ok"], report["problems"]
    docs = _read_dir(out / "documents")
    rejects = _read_dir(out / "rejects")
    by_source = {}
    for d in docs:
        by_source.setdefault(d["source"], []).append(d)
    # good: 43 docs + latin line = 44 records; "tiny", the blank and the control-only one are dropped
    assert len(by_source["good"]) == 41
    assert {d["text"] for d in by_source["good"]} >= {DOCS[0]["text"], "café au lait is a drink"}
    assert len(by_source["code"]) == len(list(Path(job.sources[2].root).glob("*.py")))
    reasons = {}
    for r in rejects:
        reasons.setdefault((r["source"], r["reject_reason"]), []).append(r)
    assert len(reasons[("good", "length:too_short")]) == 1
    assert len(reasons[("good", "normalize:empty")]) == 1
    assert len(reasons[("good", "read:empty")]) == 1
    # corrupt input in "bad": every problem is a counted reject naming what went wrong
    bad_reasons = {reason for (src, reason) in reasons if src == "bad"}
    assert {"read:invalid_utf8", "read:invalid_json", "read:empty_file"} <= bad_reasons
    assert any(r.startswith("read:") and "gzip" in r for r in bad_reasons)
    assert any(r.startswith("read:") and "zst" in r for r in bad_reasons)
    assert {d["id"].split("/")[0] for d in by_source["bad"]} == {"bad"}
    assert len([d for d in by_source["bad"] if d["text"].startswith("a perfectly") or d["text"].startswith("another")]) == 2
    # documents read from the truncated gzip before the break are kept, not lost
    assert any(d["text"].startswith("some text") for d in by_source["bad"])
    # report: in == out + dropped per stage
    for st in report["stages"]:
        assert st["docs_in"] == st["docs_out"] + sum(st["dropped"].values())
    assert report["stages"][-1]["docs_out"] == len(docs)
    assert sum(sum(st["dropped"].values()) for st in report["stages"]) == len(rejects)
    assert (out / "report.md").read_text().startswith("# datapipe run")
    assert (out / "drops.png").stat().st_size > 1000

    # re-run: a no-op that says so
    said = []
    again = run_job(load_job(spec), echo=said.append)
    assert again.skipped and "already complete" in said[0]
    # --force runs again and gives byte-identical data files and manifest
    manifest = (out / "manifest.json").read_text()
    run_job(load_job(spec), force=True, echo=lambda s: None)
    assert (out / "manifest.json").read_text() == manifest

    # a changed spec does not silently reuse or overwrite the old output
    spec.write_text(spec.read_text().replace("min_chars: 10", "min_chars: 12"))
    with pytest.raises(ConflictError, match="different run"):
        run_job(load_job(spec), echo=lambda s: None)


def test_on_error_fail_names_the_file(ray_session, tmp_path, shared_dir):
    spec = _corpus(tmp_path, shared_dir)
    for f in (tmp_path / "data" / "bad").iterdir():
        if f.name != "trunc.jsonl.gz":
            f.unlink()
    spec.write_text(spec.read_text().replace("on_error: skip", "on_error: fail"))
    with pytest.raises(CorruptInputError) as e:
        run_job(load_job(spec), echo=lambda s: None)
    assert "trunc.jsonl.gz" in str(e.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("keeps", ["one", "none"])
def test_a_split_run_again_for_a_repeated_id_leaves_no_file_of_its_first_attempt(ray_session, tmp_path, keeps):
    """#29: the split re-run with its extra copy of id X rejected kept the first
    attempt's documents file and token shards in the committed output."""
    from datapipe.cli import main

    data = tmp_path / "data"
    data.mkdir()
    first_x = "the first copy of X talks about rivers. " * 40     # > split_bytes: a split per file
    second = [{"id": "X", "text": "the second copy of X says something else entirely about lakes. " * 30}]
    if keeps == "one":
        second.append({"id": "Y", "text": "a document of its own in the second file, kept"})
    (data / "a.jsonl").write_text(json.dumps({"id": "X", "text": first_x}) + "\n")
    (data / "b.jsonl").write_text("".join(json.dumps(d) + "\n" for d in second))
    tokenizer = Path(__file__).resolve().parents[2] / "models" / "sample" / "tokenizer" / "tokenizer.json"
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: rerun-split
        output: out
        execution: {{split_bytes: 1024}}
        sources:
          - {{name: a, format: jsonl, paths: [data/*.jsonl], options: {{id_key: id}}}}
        stages:
          - tokenize: {{tokenizer: {tokenizer}}}
    """))
    job = load_job(spec)
    assert len(job.sources[0].files) == 2
    run_job(job, echo=lambda s: None)
    out = tmp_path / "out"
    docs = pq.read_table(out / "documents")
    want = ["a document of its own in the second file, kept"] if keeps == "one" else []
    assert sorted(docs.column("text").to_pylist()) == sorted([first_x] + want)
    assert len(set(docs.column("id").to_pylist())) == docs.num_rows
    rejects = pq.read_table(out / "rejects")
    assert rejects.column("reject_reason").to_pylist() == ["read:duplicate_id"]
    on_disk = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.parent.name == "a")
    listed = json.loads((out / "manifest.json").read_text())["files"]
    assert [p for p in on_disk if p.endswith(".parquet")] == sorted(f["path"] for f in listed)
    shard_files = [p for p in on_disk if p.startswith("shards/") and p.endswith((".bin", ".idx"))]
    assert len(shard_files) == 2 * len(want) + 2        # a .bin and .idx per split that kept documents
    assert main(["shards", "verify", str(out / "shards")]) == 0


FULL_DISK_DRIVER = """
import logging, resource, sys
import ray

def limit_file_size():   # every Ray worker: files above 1 MiB cannot be written (EFBIG)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

ray.init(num_cpus=1, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False,
         runtime_env={"worker_process_setup_hook": limit_file_size})
from datapipe.cli import main
sys.exit(main(["run", sys.argv[1]]))
"""


def test_a_full_device_is_one_line_naming_the_file_and_leaves_nothing_behind(tmp_path):
    """#29: a full disk ended in a 60-line Ray traceback and left the staging folder and a
    .tmp file. Made real with RLIMIT_FSIZE in the Ray workers (Python ignores SIGXFSZ, so
    a write past the limit fails with EFBIG, as a full disk fails with ENOSPC)."""
    import base64
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    data = tmp_path / "data"
    data.mkdir()
    rng = __import__("random").Random(7)
    with open(data / "big.jsonl", "w") as f:   # ~3 MiB of text that does not compress below 1 MiB
        for i in range(30):
            f.write(json.dumps({"id": f"d{i}", "text": base64.b64encode(rng.randbytes(75_000)).decode()}) + "\n")
    spec = tmp_path / "job.yaml"
    spec.write_text("name: full\noutput: out\nsources:\n  - {name: docs, format: jsonl, paths: [data/*.jsonl], "
                    "options: {id_key: id}}\nstages:\n  - normalize: {}\n")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run([sys.executable, "-c", FULL_DISK_DRIVER, str(spec)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**env, "PYTHONPATH": str(repo)})
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("datapipe: error:")]
    assert errors == [f"datapipe: error: {tmp_path}/out.staging-{errors[0].split('.staging-')[1].split('/')[0]}"
                      "/documents/docs/part-00000.parquet: File too large"], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if not p.is_relative_to(data))
    assert left == ["data", "data/big.jsonl", "job.yaml"] or left == ["job.yaml"], left
