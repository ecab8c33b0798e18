"""`ray job submit` as docs/cluster.md says, on a small job (#29): same output as
`datapipe run`, token shards that decode to the documents' final (PII-scrubbed) text,
and a console "done:" line that agrees with the report printed under it."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from cli_helper import _data_files, _datapipe, _env, _submit

pytestmark = pytest.mark.e2e


def _spec(tmp_path: Path, repo_dir: Path, shared_dir: Path) -> Path:
    news = repo_dir / "jobs" / "sample_data" / "news"
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: submit
        output: out
        execution: {{split_bytes: 8192, batch_rows: 32}}
        sources:
          - name: news
            format: jsonl
            paths: ["{news}/*.jsonl", "{news}/*.jsonl.gz"]
            options: {{id_key: id, url_key: url}}
          - name: ccnet
            format: jsonl
            paths: ["{shared_dir}/corpora/ccnet/cc_en_head-*.jsonl"]
            options: {{id_key: id}}
        stages:
          - normalize: {{}}
          - dedup: {{}}
          - pii: {{}}
          - tokenize: {{tokenizer: "{shared_dir}/tokenizers/gpt2"}}
        shards: {{shard_tokens: 4096, seed: 1}}
        """))
    return spec


def _shard_texts(out: Path, source: str, tokenizer) -> list[str]:
    from datapipe.megatron import read_idx

    manifest = json.loads((out / "shards" / source / "manifest.json").read_text())
    eos = manifest["tokenizer"]["eos_id"]
    texts = []
    for sh in manifest["shards"]:
        tokens = np.fromfile(out / "shards" / source / sh["bin"], dtype=manifest["dtype"])
        idx = read_idx(out / "shards" / source / sh["idx"])
        for ptr, n in zip(idx.pointers, idx.lengths):
            seq = tokens[ptr // tokens.itemsize: ptr // tokens.itemsize + n]
            assert seq[-1] == eos
            texts.append(tokenizer.decode(seq[:-1].tolist()))
    return texts


def test_ray_job_submit_small_job_as_documented(ray_cluster, repo_dir, tmp_path, shared_dir):
    spec = _spec(tmp_path, repo_dir, shared_dir)
    local = tmp_path / "local"
    run = _datapipe(["run", str(spec), "--output", str(local)], _env(ray_cluster), cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    # the submit path of docs/cluster.md: the dashboard URL, the repo as working dir
    submitted = tmp_path / "submitted"
    env = dict(ray_cluster["env"])          # RAY_AUTH_MODE=disabled: a loopback test head
    env.pop("RAY_ADDRESS", None)
    runtime_env = {"env_vars": {"DATAPIPE_SHARED": str(shared_dir), "DATAPIPE_PROGRESS": "0"}}
    cmd = [str(Path(sys.executable).with_name("ray")), "job", "submit", "--address", ray_cluster["dashboard"],
           "--working-dir", str(repo_dir), "--runtime-env-json", json.dumps(runtime_env),
           "--", "python", "-m", "datapipe", "run", str(spec), "--output", str(submitted)]
    proc = _submit(cmd, env, repo_dir, timeout=600)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    assert "succeeded" in (proc.stdout + proc.stderr).lower()
    assert _data_files(submitted) == _data_files(local)
    for name in ("manifest.json", "shards/news/manifest.json", "shards/ccnet/manifest.json"):
        assert (submitted / name).read_bytes() == (local / name).read_bytes(), name

    # the shards hold the documents' final text: PII scrubbed in both
    from stages.tokenize.identity import load_tokenizer

    tok = load_tokenizer(str(shared_dir / "tokenizers" / "gpt2"))
    docs = [r for f in sorted((local / "documents").rglob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    for source in ("news", "ccnet"):
        expected = sorted(r["text"] for r in docs if r["source"] == source)
        assert sorted(_shard_texts(local, source, tok)) == expected
    assert any("@" not in t and "<EMAIL>" in t for t in (r["text"] for r in docs))

    # the console's last progress line counts what the report under it counts
    report = json.loads((local / "report.json").read_text())
    assert report["splits"]["phases"] == 2
    done = re.search(r"done: (\d+) splits, ([\d,]+) docs in, ([\d,]+) out", run.stdout)
    assert done, run.stdout[-3000:]
    splits, docs_in, docs_out = (int(g.replace(",", "")) for g in done.groups())
    totals = report["totals"]
    assert (splits, docs_in, docs_out) == (report["splits"]["total"], totals["documents"] + totals["rejects"],
                                           totals["documents"])
    assert f"kept {totals['documents']} documents" in run.stdout
