"""jobs/code_model.yaml end to end through the CLI at its small size: web, code
repositories, arXiv and Stack Exchange into token shards that verify; repository
documents in StarCoder2's format with the separators as single special tokens; the
planted fork dropped for its upstream; the benchmark function cut out of the repository
that holds it; and mixes/code_model.yaml planned over the shards, FIM included.

The code tokenizer is trained by the test (`datapipe tokenizer train --preset code` on
standard-library code, as docs/code.md shows); the inputs come from
jobs/code_model_data/build.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from cli_helper import _datapipe, _env

pytestmark = pytest.mark.e2e

KINDS = ("web", "repos", "arxiv", "qa")


def _rows(folder: Path) -> list[dict]:
    return [r for p in sorted(folder.rglob("*.parquet")) for r in pq.read_table(p).to_pylist()]


@pytest.fixture(scope="module")
def code_model_run(ray_cluster, repo_dir, tmp_path_factory, shared_dir):
    base = tmp_path_factory.mktemp("codemodel")
    (base / "jobs").mkdir()
    (base / "mixes").mkdir()
    shutil.copy(repo_dir / "jobs" / "code_model.yaml", base / "jobs" / "code_model.yaml")
    shutil.copy(repo_dir / "mixes" / "code_model.yaml", base / "mixes" / "code_model.yaml")
    build = subprocess.run([sys.executable, str(repo_dir / "jobs" / "code_model_data" / "build.py"), "--shared",
                            str(shared_dir), "--out", str(base / "jobs" / "code_model_data" / "built")],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    env = _env(ray_cluster, DATAPIPE_MODELS=str(base / "models"), DATAPIPE_SHARED=str(shared_dir))
    stdlib = sysconfig.get_paths()["stdlib"]
    tok = _datapipe(["tokenizer", "train", "--preset", "code", "--source-glob", f"{stdlib}/json/*.py",
                     "--source-glob", f"{stdlib}/email/*.py", "--vocab-size", "2048", "--max-bytes", "1000000",
                     "--out", str(base / "models" / "code" / "tokenizer")], env, cwd=repo_dir, timeout=300)
    assert tok.returncode == 0, tok.stdout[-2000:] + tok.stderr[-3000:]
    proc = _datapipe(["run", str(base / "jobs" / "code_model.yaml")], env, cwd=repo_dir, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return base, env


def test_four_kinds_into_shards_that_verify(code_model_run, repo_dir):
    base, env = code_model_run
    out = base / "runs" / "code_model"
    report = json.loads((out / "report.json").read_text())
    assert report["accounting_ok"]
    verify = _datapipe(["shards", "verify", str(out / "shards")], env, cwd=repo_dir, timeout=300)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    for kind in KINDS:
        manifest = json.loads((out / "shards" / kind / "manifest.json").read_text())
        assert manifest["totals"]["tokens"] > 1000, (kind, manifest["totals"])
    # the code's filters: the GPL tarball's license, a repository of generated stubs, the fork
    rejects = {(r["source"], r["repo"]): (r["reject_reason"], r["reject_detail"])
               for src in ("repos", "archives") for r in _rows(out / "rejects" / src) if r["path"] is None}
    assert rejects[("archives", "gpl-tool")][0] == "license:not_allowed"
    assert rejects[("repos", "otel-proto")][0] == "repo_files:no_files"
    docs = {r["repo"]: r for r in _rows(out / "documents" / "repos")}
    assert rejects[("repos", "idna-fork")] == ("repo_dedup:fork", f"idna ({docs['idna']['id']})")
    # repository documents: StarCoder2's format, files after their imports, generated tables,
    # license text and minified bundles taken out file by file, the benchmark cut
    idna = docs["idna"]["text"]
    assert idna.startswith("<repo_name>idna<file_sep>")
    order = [part.split("\n", 1)[0] for part in idna.split("<file_sep>")[1:]]
    assert order.index("idna/intranges.py") < order.index("idna/core.py") < order.index("idna/codec.py")
    assert not {"LICENSE.md", "idna/idnadata.py", "idna/uts46data.py"} & set(order)
    speedscope = [part.split("\n", 1)[0] for part in docs["speedscope"]["text"].split("<file_sep>")[1:]]
    assert speedscope and not any(p.endswith(".js") for p in speedscope)   # its three minified bundles
    assert "def check_bidi(" not in idna and "def check_label(" in idna
    # the separators are one special token each in the shards
    manifest = json.loads((out / "shards" / "repos" / "manifest.json").read_text())
    sep, name = manifest["tokenizer"]["special"]["<file_sep>"], manifest["tokenizer"]["special"]["<repo_name>"]
    ids = np.concatenate([np.fromfile(out / "shards" / "repos" / s["bin"], dtype=manifest["dtype"])
                          for s in manifest["shards"]])
    assert (ids == name).sum() == len(docs)
    assert (ids == sep).sum() == sum(d["text"].count("<file_sep>") for d in docs.values())
    # no secret of the code job's fixture reaches the shards' documents
    truth = json.loads((base / "jobs" / "code_model_data" / "built" / "repos" / "GROUND_TRUTH.json").read_text())
    for value in truth["secrets"].values():
        assert value not in docs["webapp"]["text"]


def test_the_mix_plans_over_the_job_shards_with_fim(code_model_run, repo_dir):
    base, env = code_model_run
    plan = _datapipe(["mix", "plan", str(base / "mixes" / "code_model.yaml")], env, cwd=repo_dir, timeout=300)
    assert plan.returncode == 0, plan.stdout[-2000:] + plan.stderr[-3000:]
    assert "phase anneal" in plan.stdout and "plan hash" in plan.stdout
