"""jobs/code.yaml end to end through the CLI, on its inputs as jobs/code_data/build.py
assembles them from installed packages (36 files in 5 repositories): the code filters'
rejects with their reasons, the GPL tarball excluded, the AWS credentials scrubbed in the
documents and in the decoded token shards, and the drop reasons per language in the report."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer

from cli_helper import _datapipe, _env

pytestmark = pytest.mark.e2e


def _rows(folder: Path) -> list[dict]:
    return [r for p in sorted(folder.rglob("*.parquet")) for r in pq.read_table(p).to_pylist()]


def _decoded_shards(folder: Path) -> str:
    manifest = json.loads((folder / "manifest.json").read_text())
    tok = Tokenizer.from_file(str(folder / manifest["tokenizer"]["path"]))
    ids = np.concatenate([np.fromfile(folder / s["bin"], dtype=manifest["dtype"]) for s in manifest["shards"]])
    return tok.decode(ids.tolist(), skip_special_tokens=False)


@pytest.fixture(scope="module")
def code_run(ray_cluster, repo_dir, tmp_path_factory, shared_dir):
    """The repo's jobs/code.yaml, copied beside freshly built inputs; the tokenizer is a
    real HF one from the shared data (``{models}`` pointed at it: no `make models`)."""
    base = tmp_path_factory.mktemp("codejob")
    jobs = base / "jobs"
    jobs.mkdir()
    shutil.copy(repo_dir / "jobs" / "code.yaml", jobs / "code.yaml")
    build = subprocess.run([sys.executable, str(repo_dir / "jobs" / "code_data" / "build.py"), "--out",
                            str(jobs / "code_data" / "repos")], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    models = base / "models"
    (models / "sample" / "tokenizer").mkdir(parents=True)
    shutil.copy(shared_dir / "tokenizers" / "gpt-neox-20b.tokenizer.json",
                models / "sample" / "tokenizer" / "tokenizer.json")
    out = base / "out"
    proc = _datapipe(["run", str(jobs / "code.yaml"), "--output", str(out)],
                     _env(ray_cluster, DATAPIPE_MODELS=str(models)), cwd=repo_dir, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    truth = json.loads((jobs / "code_data" / "repos" / "GROUND_TRUTH.json").read_text())
    return out, proc.stdout, truth


def test_code_job_filters_licenses_and_secrets(code_run):
    out, stdout, truth = code_run
    report = json.loads((out / "report.json").read_text())
    assert report["accounting_ok"]
    rejects = {(r["repo"], r["path"]): (r["reject_reason"], r["reject_detail"]) for r in _rows(out / "rejects")}
    docs = {(r["repo"], r["path"]): r for r in _rows(out / "documents")}
    reason = {k: v[0] for k, v in rejects.items()}
    # minified builds, protobuf stubs, the vendored tree: rejected by the code filter with their reasons
    minified = [k for k in reason if k[0] == "speedscope" and k[1].endswith(".js")]
    assert len(minified) == 3 and {reason[k] for k in minified} == {"code_filter:minified"}
    stubs = [k for k in list(reason) + list(docs) if k[1] and k[1].endswith("_pb2.py")]
    assert len(stubs) == 3 and {reason.get(k) for k in stubs} == {"code_filter:generated"}
    assert reason[("webapp", "node_modules/werkzeug-debugger/debugger.js")] == "code_filter:vendored"
    # the GPL tarball: every file excluded, though its COPYING is the tarball's last member
    gpl = {k: v for k, v in rejects.items() if k[0] == "gpl-tool"}
    assert len(gpl) == 4 and gpl.pop(("gpl-tool", "COPYING")) == ("code_filter:trivial", "license_text COPYING")
    assert set(gpl.values()) == {("license:not_allowed", "GPL-3.0-only")}
    # license texts are read for the license, not kept as documents (issue #36)
    assert {reason[(r, "LICENSE")] for r in ("otel-proto", "speedscope", "webapp")} == {"code_filter:trivial"}
    assert reason[("idna", "LICENSE.md")] == "code_filter:trivial"
    # kept files carry their repository's license, from its root license file
    assert docs[("idna", "idna/core.py")]["license"] == "BSD-3-Clause"
    assert {d["license"] for d in docs.values()} <= {"BSD-3-Clause", "Apache-2.0", "MIT"}
    # the AWS key id, secret key and GitHub token: replaced in the documents and the shards
    settings = docs[("webapp", "settings.py")]["text"]
    assert settings.count("<API_KEY>") == 3 and "AWS_SECRET_ACCESS_KEY" in settings
    decoded = _decoded_shards(out / "shards" / "trees")
    assert "AWS_SECRET_ACCESS_KEY" in decoded and "def object_key" in decoded
    for value in truth["secrets"].values():
        assert value not in settings and value not in decoded
    # drop reasons per language, in report.json and report.md
    by_lang = report["drops_by"]["per_source"]
    assert report["drops_by"]["column"] == "language"
    assert by_lang["trees"]["JavaScript"] == {"code_filter:minified": 3, "code_filter:vendored": 1}
    assert by_lang["trees"]["Python"]["code_filter:generated"] >= 3
    assert by_lang["archives"]["Python"] == {"license:not_allowed": 3}
    assert "Drop reasons by language (trees):" in (out / "report.md").read_text()
