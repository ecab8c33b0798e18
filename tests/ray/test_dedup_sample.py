"""Dedup inside a real job (runner, readers, extraction) on the bundled sample corpus,
checked against its planted duplicate groups (``jobs/sample_data/GROUND_TRUTH.json``):
every exact/near group keeps exactly one member and names it in the others' rejects;
similar and distinct pairs are all kept; nothing else is removed."""

from __future__ import annotations

import gzip
import io
import json
import re
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import zstandard

import stages
from datapipe.runner import run_job
from datapipe.spec import load_job
from stages.dedup import Dedup

pytestmark = pytest.mark.ray


def _lines(path: Path) -> list[str]:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    elif path.suffix == ".zst":
        data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read()
    return data.decode("utf-8").splitlines()


def _member_key(sample: Path, m: dict) -> tuple[str, str | None, str]:
    """(source, url, file name) that identifies a ground-truth member in the output."""
    f = sample / m["file"]
    name = f.name
    if name.endswith((".jsonl", ".jsonl.gz", ".jsonl.zst")):
        return m["source"], json.loads(_lines(f)[m["locator"]])["url"], name
    if name.endswith(".parquet"):
        return m["source"], pq.read_table(f).column("url")[m["locator"]].as_py(), name
    if ".warc" in name:
        return m["source"], m["locator"], name
    return m["source"], None, name           # loose files: no URL, the origin is the file name


def test_sample_job_removes_the_planted_duplicates(ray_session, tmp_path, repo_dir):
    assert stages.REGISTRY["dedup"] is Dedup
    sample = repo_dir / "jobs" / "sample_data"
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: dedup-sample
        output: out
        on_error: skip
        sources:
          - {{name: web, format: warc, paths: ["{sample}/web/*.warc.gz"]}}
          - {{name: wet, format: warc, paths: ["{sample}/wet/*.warc.wet.gz"], options: {{records: conversion}}}}
          - {{name: pages, format: html, paths: ["{sample}/pages/*.html", "{sample}/pages/*.html.gz"]}}
          - {{name: news, format: jsonl, paths: ["{sample}/news/*.jsonl", "{sample}/news/*.jsonl.gz"],
             options: {{id_key: id, url_key: url}}}}
          - {{name: forum, format: jsonl, paths: ["{sample}/forum/*.jsonl.zst"], options: {{id_key: id, url_key: url}}}}
          - {{name: wiki, format: parquet, paths: ["{sample}/wiki/*.parquet"], options: {{id_key: id, url_key: url}}}}
          - {{name: books, format: text, paths: ["{sample}/books/*.txt", "{sample}/books/*.txt.gz"]}}
        stages:
          - extract: {{}}
          - normalize: {{}}
          - length: {{min_chars: 20}}
          - dedup: {{source_priority: [wiki, books, news, forum, web, pages, wet]}}
    """))
    result = run_job(load_job(spec), echo=lambda s: None)
    out = Path(result.output)
    report = json.loads((out / "report.json").read_text())
    assert report["accounting_ok"], report["problems"]
    rows = [r for f in sorted((out / "documents").rglob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    rejects = [r for f in sorted((out / "rejects").rglob("*.parquet")) for r in pq.read_table(f).to_pylist()]

    def ident(r):
        return r["source"], r["url"], re.split(r"[@:#]", Path(str(r["origin"])).name)[0]

    kept = {ident(r): r["id"] for r in rows}
    removed = {ident(r): r for r in rejects if str(r["reject_reason"]).startswith("dedup:")}
    truth = json.loads((sample / "GROUND_TRUTH.json").read_text())
    expected_removed = 0
    for g in truth["duplicate_groups"]:
        members = [_member_key(sample, m) for m in g["members"]]
        if g["relation"] in ("exact", "near"):
            survivors = [m for m in members if m in kept]
            assert len(survivors) == 1, (g["id"], members, survivors)
            for m in members:
                if m in kept:
                    continue
                r = removed[m]
                assert r["reject_detail"] == kept[survivors[0]], g["id"]
                if g["relation"] == "exact":
                    assert r["reject_reason"] == "dedup:exact", g["id"]
                expected_removed += 1
        else:
            assert all(m in kept for m in members), (g["id"], [m for m in members if m not in kept])
    assert len(removed) == expected_removed == 14
    dd = report["stage_reports"]["dedup"]
    assert sum(v["exact"] + v["near"] for v in dd["removed_per_source"].values()) == 14
    assert dd["cluster_sizes"] == {"2": 14}
