"""The sample job with every input and the output on a real S3 API server (moto, on
loopback): same bytes as a local run, verifiable, readable by the loader, and a run
killed midway never looks complete."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from cli_helper import _datapipe, _env
from datapipe import commit, fs

pytestmark = pytest.mark.e2e

NOT_COMPARED = {"report.json", "report.md", "drops.png", "_SUCCESS", "ray.log"}   # timings; job hash has mtimes
CODE = ["json/*.py", "textwrap.py", "heapq.py", "bisect.py", "LICENSE.txt"]   # the license file names the repo


def _s3_spec(repo_dir: Path, tmp_path: Path, bucket: str) -> Path:
    """jobs/sample.yaml with its inputs uploaded to ``bucket`` and its output there too."""
    data = repo_dir / "jobs" / "sample_data"
    for f in sorted(p for p in data.rglob("*") if p.is_file()):
        fs.write_bytes(f"{bucket}/sample_data/{f.relative_to(data)}", f.read_bytes())
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for pat in CODE:
        for f in stdlib.glob(pat):
            # under the stdlib folder's own name: the code reader names the repository after it
            fs.write_bytes(f"{bucket}/{stdlib.name}/{f.relative_to(stdlib)}", f.read_bytes())
    text = (repo_dir / "jobs" / "sample.yaml").read_text()
    text = text.replace("[sample_data/", f"[{bucket}/sample_data/").replace(", sample_data/", f", {bucket}/sample_data/")
    text = text.replace('"{stdlib}/', f'"{bucket}/{stdlib.name}/').replace("output: ../runs/sample", f"output: {bucket}/out")
    body = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    assert "sample_data/" not in body.replace(f"{bucket}/sample_data/", "") and "{stdlib}" not in body
    spec = tmp_path / "jobs" / "sample.yaml"
    spec.parent.mkdir()
    spec.write_text(text)
    return spec


def _local_files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name not in NOT_COMPARED}


def _s3_files(out: str) -> dict[str, bytes]:
    return {fs.relative(u, out): fs.read_bytes(u) for u in fs.list_files(out) if fs.basename(u) not in NOT_COMPARED}


def _mix(path: Path, manifests: dict[str, str]) -> Path:
    path.write_text(yaml.safe_dump({
        "name": "s3-check", "seq_len": 64, "token_budget": 64 * 64, "seed": 7, "max_epochs": 1000,
        "warn_epochs": 1000, "sources": [{"manifest": m, "weight": 1.0} for m in manifests.values()]}))
    return path


def test_sample_job_on_s3_matches_local_run(ray_cluster, repo_dir, tmp_path, sample_output, bucket, s3_server,
                                            shared_dir, monkeypatch):
    reference, _ = sample_output
    spec = _s3_spec(repo_dir, tmp_path, bucket)
    env = _env(ray_cluster, **s3_server["env"], DATAPIPE_MODELS=str(repo_dir / "models"),
               DATAPIPE_SHARED=str(shared_dir), DATAPIPE_CACHE=str(tmp_path / "cache"))
    proc = _datapipe(["run", str(spec)], env, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    out = f"{bucket}/out"
    assert f"output committed: {out}" in proc.stdout
    # byte-identical to the local run, manifest.json and token shards included
    local, remote = _local_files(reference), _s3_files(out)
    assert sorted(remote) == sorted(local) and "manifest.json" in remote
    assert [k for k in local if local[k] != remote[k]] == []
    assert commit.trusted_status(out)["run_id"]
    assert not fs.exists(commit.lock_uri(out)) and [e for e in fs.list_dir(bucket) if "staging" in e] == []
    # a second run is a no-op: the committed output is trusted
    again = _datapipe(["run", str(spec)], env, cwd=tmp_path, timeout=600)
    assert again.returncode == 0 and "already complete" in again.stdout, again.stderr[-3000:]

    verify = _datapipe(["shards", "verify", f"{out}/shards"], env, cwd=tmp_path, timeout=300)
    assert verify.returncode == 0 and verify.stdout.startswith("ok:"), verify.stdout + verify.stderr[-3000:]

    # the loader gives the same batches from S3 as from local disk
    from trainer_bridge.loader import LoaderConfig, MixLoader
    from trainer_bridge.mix import resolve_mix

    monkeypatch.setenv("DATAPIPE_CACHE", str(tmp_path / "cache"))
    srcs = json.loads((reference / "manifest.json").read_text())["shards"]
    local_mix = _mix(tmp_path / "local.yaml", {s: str(reference / v["manifest"]) for s, v in srcs.items()})
    s3_mix = _mix(tmp_path / "s3.yaml", {s: f"{out}/{v['manifest']}" for s, v in srcs.items()})
    batches = []
    for mix in (local_mix, s3_mix):
        with MixLoader(resolve_mix(mix, verify_hashes=True), LoaderConfig(global_batch=8)) as ld:
            batches.append([b["input_ids"].numpy() for b in ld])
    assert len(batches[0]) == 8 and all(np.array_equal(a, b) for a, b in zip(*batches))


def test_killed_s3_run_is_not_complete_and_rerun_commits(ray_cluster, repo_dir, tmp_path, bucket, s3_server,
                                                         shared_dir):
    spec = _s3_spec(repo_dir, tmp_path, bucket)
    env = _env(ray_cluster, **s3_server["env"], DATAPIPE_MODELS=str(repo_dir / "models"),
               DATAPIPE_SHARED=str(shared_dir))
    proc = subprocess.Popen([sys.executable, "-m", "datapipe", "run", str(spec)], env=env, cwd=tmp_path,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = f"{bucket}/out"
    deadline = time.time() + 300
    while not [e for e in fs.list_dir(bucket) if e.startswith("out.staging-")] and time.time() < deadline:
        time.sleep(0.2)
    # the run holds the lock: a second run refuses, naming it
    second = _datapipe(["run", str(spec)], env, cwd=tmp_path, timeout=300)
    assert second.returncode != 0 and "is being written by run" in second.stderr and f"pid {proc.pid}" in second.stderr
    time.sleep(2.0)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert commit.read_status(out) is None and not fs.exists(f"{out}/_SUCCESS")
    rerun = _datapipe(["run", str(spec)], env, cwd=tmp_path, timeout=900)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-5000:]
    assert "resuming the interrupted run" in rerun.stdout   # same job: its staging (keyed by the job hash) is reused
    assert commit.trusted_status(out) and [e for e in fs.list_dir(bucket) if "staging" in e or e.endswith(".lock")] == []


def _aws_in_workers() -> list[str]:
    import ray

    @ray.remote(num_cpus=0)
    def aws_vars() -> list[str]:   # what reaches a store: credentials, endpoint, region, profile
        return sorted(k for k in os.environ if k.startswith("AWS_") and any(
            w in k for w in ("KEY", "SECRET", "TOKEN", "ENDPOINT", "REGION", "PROFILE")))

    return ray.get(aws_vars.remote())


def test_dedup_on_s3_with_the_endpoint_only_in_the_spec_and_an_incremental_index(
        ray_session, tmp_path, bucket, s3_server, shared_dir, monkeypatch):
    """Dedup's work files, its Ray Data passes (distributed path) and index_in/index_out
    reach the store through the spec's ``storage:`` section alone: the endpoint is only
    there, and the workers' environment holds no AWS_* at all (the driver's credentials
    travel inside the storage options, as the spec refuses secrets)."""
    from datapipe.runner import run_job
    from datapipe.spec import load_job

    assert _aws_in_workers() == []
    for key in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(key, raising=False)
    lines = (shared_dir / "corpora/wiki/wikitext-2-raw.test.txt").read_text(encoding="utf-8").splitlines()
    paras = [p.strip() for p in lines if len(p.strip()) > 400 and not p.strip().startswith("=")][:30]
    assert len(paras) == 30
    near = paras[1].replace(" the ", " a ", 1)
    batches = {"one": [(f"p{i}", paras[i]) for i in range(20)] + [("copy0", paras[0]), ("near1", near)],
               "two": [(f"p{i}", paras[i]) for i in range(20, 30)] + [("copy5", paras[5]), ("copy25", paras[25])]}
    rejected = {}
    for run, docs in batches.items():
        data = tmp_path / run
        data.mkdir()
        (data / "docs.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in docs))
        index_in = f", index_in: {bucket}/index-one" if run == "two" else ""
        spec = tmp_path / f"{run}.yaml"
        spec.write_text(f"name: dedup-{run}\noutput: {bucket}/out-{run}\n"
                        f"storage: {{s3: {{endpoint_url: {s3_server['endpoint']}, region: us-east-1}}}}\n"
                        f"sources:\n  - {{name: {run}, format: jsonl, paths: [{run}/*.jsonl], options: {{id_key: id}}}}\n"
                        f"stages:\n  - dedup: {{local_rows: 0, index_out: {bucket}/index-{run}{index_in}}}\n")
        job = load_job(spec)
        run_job(job, echo=lambda line: None)
        st = job.storage
        rejects = pq.read_table(fs.resolve(f"{bucket}/out-{run}/rejects", st)[1], filesystem=fs.resolve(bucket, st)[0])
        rejected[run] = sorted(zip(rejects.column("reject_reason").to_pylist(), rejects.column("text").to_pylist()))
        assert fs.is_file(f"{bucket}/index-{run}/meta.json", st)
    # of a near pair either copy may be the one kept (the survival order is the stage's)
    assert rejected["one"] in (sorted([("dedup:exact", paras[0]), ("dedup:near", near)]),
                               sorted([("dedup:exact", paras[0]), ("dedup:near", paras[1])]))
    assert rejected["two"] == sorted([("dedup:exact", paras[5]), ("dedup:exact", paras[25])])
    meta = json.loads(fs.read_text(f"{bucket}/index-two/meta.json", st))
    assert meta["documents"] == 20 + 10 and len(meta["segments"]) == 2
    assert _aws_in_workers() == []
