"""``latest_version`` keeps the newest version of an arXiv paper across input files: two
bulk tars built from the real RedPajama arXiv sample (tests/arxiv_fixture.py), v1 of a
multi-file paper in the first, v2 in the second, each tar its own read split."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from arxiv_fixture import build  # noqa: E402

pytestmark = pytest.mark.ray


def _run(tmp_path: Path, data: Path, out: str):
    from datapipe.runner import run_job
    from datapipe.spec import load_job

    spec = tmp_path / f"{out}.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: arxiv-versions
        output: {out}
        execution: {{split_bytes: 4096}}
        sources:
          - {{name: arxiv, format: arxiv, paths: ["{data}/*.tar"], options: {{versions: latest}}}}
        stages:
          - latest_version: {{parts: 2}}
    """))
    return run_job(load_job(spec), echo=lambda line: None)


def test_only_the_newest_version_stays_across_input_files(ray_session, shared_dir, tmp_path):
    fx = build(shared_dir, tmp_path / "data", split_versions=True)
    v1, v2 = f"{fx['multi']}v1", f"{fx['multi']}v2"
    result = _run(tmp_path, tmp_path / "data", "out")
    kept = pq.read_table(tmp_path / "out" / "documents")
    ids = kept.column("source_id").to_pylist()
    assert v2 in ids and v1 not in ids                       # the reader alone keeps both (one per file)
    assert len(ids) == len(fx["bodies"])                      # every paper once
    rejects = pq.read_table(tmp_path / "out" / "rejects").to_pylist()
    mine = [r for r in rejects if r["reject_reason"] == "latest_version:older"]
    kept_id = kept.column("id")[ids.index(v2)].as_py()
    assert [(r["source_id"], r["reject_detail"]) for r in mine] == [(v1, kept_id)]
    assert {r["source_id"]: r["reject_reason"] for r in rejects if r["reject_stage"] == "read"} == {
        k: f"read:{v}" for k, v in fx["broken"].items()}
    report = result.report["stage_reports"]["latest_version"]
    assert report["removed"] == 1
    # a re-run writes the same bytes
    _run(tmp_path, tmp_path / "data", "again")
    for part in ("documents", "rejects"):
        a = sorted(p.relative_to(tmp_path / "out") for p in (tmp_path / "out" / part).rglob("*.parquet"))
        b = sorted(p.relative_to(tmp_path / "again") for p in (tmp_path / "again" / part).rglob("*.parquet"))
        assert a == b and a
        assert all((tmp_path / "out" / p).read_bytes() == (tmp_path / "again" / p).read_bytes() for p in a)


def test_config_errors_name_the_field():
    from stages.dedup.latest_version import LatestVersionConfig

    with pytest.raises(ValueError, match="key and version"):
        LatestVersionConfig(key="version")
    with pytest.raises(ValueError, match="parts"):
        LatestVersionConfig(parts=0)
    assert LatestVersionConfig(key="url").reads == ("id", "url", "metadata")
