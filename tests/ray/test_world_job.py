"""A job over corpora people have, run on the session's Ray: a WikiText file cut into
articles, CCNet JSONL with its native ids and metadata, one stage kind run twice under
two instance names, and ``datapipe inspect`` on the rejects it wrote."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from datapipe.errors import SpecError
from datapipe.runner import run_job
from datapipe.spec import load_job

pytestmark = pytest.mark.ray


def _spec(tmp_path: Path, shared_dir: Path, stages: str) -> Path:
    spec = tmp_path / "job.yaml"
    corpora = shared_dir / "corpora"
    spec.write_text(textwrap.dedent(f"""
        name: world
        output: out
        execution: {{batch_rows: 16}}
        sources:
          - name: wiki
            format: text
            paths: ["{corpora}/wiki/wikitext-2-raw.test.txt"]
            options: {{split: regex, pattern: '^ = [^=].* = $', max_chars: 20000}}
          - name: ccnet
            format: jsonl
            paths: ["{corpora}/ccnet/cc_en_head-*.jsonl", "{corpora}/redpajama/redpajama-c4-refined.jsonl"]
            options: {{id_key: id, metadata: [source, metadata.perplexity]}}
        stages:
    """) + textwrap.indent(textwrap.dedent(stages), "  "))
    return spec


STAGES = """
- normalize: {}
- {stage: length, name: length_wiki, sources: [wiki], config: {min_chars: 8000}}
- {stage: length, name: length_web, sources: [ccnet], config: {min_chars: 600}}
- gopher_quality: {}
"""


@pytest.fixture(scope="module")
def world_output(ray_session, tmp_path_factory, shared_dir):
    tmp = tmp_path_factory.mktemp("world")
    job = load_job(_spec(tmp, shared_dir, STAGES))
    result = run_job(job, echo=lambda s: None)
    return Path(result.output)


def _rows(folder: Path) -> list[dict]:
    return [r for f in sorted(folder.rglob("*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_named_instances_in_rejects_and_report(world_output, shared_dir):
    report = json.loads((world_output / "report.json").read_text())
    assert report["accounting_ok"], report["problems"]
    by_name = {st["stage"]: st for st in report["stages"]}
    assert {"length_wiki", "length_web"} <= set(by_name)
    # each instance counts only its own source, with its own threshold
    assert by_name["length_wiki"]["per_source"]["ccnet"]["docs_in"] == 0
    assert by_name["length_web"]["per_source"]["wiki"]["docs_in"] == 0
    rejects = _rows(world_output / "rejects")
    wiki_short = [r for r in rejects if r["reject_reason"] == "length_wiki:too_short"]
    web_short = [r for r in rejects if r["reject_reason"] == "length_web:too_short"]
    assert wiki_short and web_short
    assert all(r["source"] == "wiki" and len(r["text"]) < 8000 for r in wiki_short)
    assert all(r["source"] == "ccnet" and len(r["text"]) < 600 for r in web_short)
    assert by_name["length_wiki"]["dropped"] == {"length_wiki:too_short": len(wiki_short)}


def test_native_ids_and_metadata_reach_the_outputs(world_output, shared_dir):
    records = {}
    for p in sorted((shared_dir / "corpora" / "ccnet").glob("cc_en_head-*.jsonl")):
        for line in p.read_text().splitlines():
            d = json.loads(line)
            records[d["id"]] = d
    rows = [r for r in _rows(world_output / "documents") + _rows(world_output / "rejects") if r["source"] == "ccnet"]
    ccnet = [r for r in rows if r["source_id"] in records]
    assert len(ccnet) == len(records)                     # every CCNet record, kept or rejected
    for r in ccnet:
        meta = json.loads(r["metadata"])
        assert meta == {"source": "common-crawl", "metadata": {"perplexity": records[r["source_id"]]["metadata"]["perplexity"]}}
    wiki = [r for r in _rows(world_output / "documents") if r["source"] == "wiki"]
    assert wiki and all(r["source_id"] is None and r["metadata"] is None for r in wiki)


def test_two_unnamed_instances_of_one_kind_is_an_error(tmp_path, shared_dir):
    twice = """
    - {stage: length, sources: [wiki], config: {min_chars: 10}}
    - {stage: length, sources: [ccnet], config: {min_chars: 10}}
    """
    with pytest.raises(SpecError, match="name: quality_web"):
        load_job(_spec(tmp_path, shared_dir, twice))
    with pytest.raises(SpecError, match="lower-case"):
        load_job(_spec(tmp_path, shared_dir, "- {stage: length, name: Bad-Name, config: {}}\n"))


def test_inspect_shows_what_triggered_the_rule(world_output, repo_dir):
    rejects = _rows(world_output / "rejects")
    expected = [r for r in rejects if r["reject_reason"] == "length_web:too_short"]
    proc = subprocess.run([sys.executable, "-m", "datapipe", "inspect", str(world_output),
                           "--reason", "length_web:too_short", "-n", "2"],
                          capture_output=True, text=True, cwd=repo_dir, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"length_web:too_short: {len(expected)} rejected" in out
    shown = [r for r in expected if r["id"] in out]
    assert len(shown) == 2                               # two samples, by id
    assert all(r["reject_detail"] in out for r in shown)  # with the value that failed


def test_report_has_examples_of_top_drop_reasons(world_output):
    report = json.loads((world_output / "report.json").read_text())
    rejects = {r["id"]: r for r in _rows(world_output / "rejects")}
    examples = report["drop_examples"]
    assert examples and len(examples) <= 5
    for reason, exs in examples.items():
        assert 1 <= len(exs) <= 2
        for ex in exs:
            assert rejects[ex["id"]]["reject_reason"] == reason and ex["detail"] == rejects[ex["id"]]["reject_detail"]
    md = (world_output / "report.md").read_text()
    assert "## Examples of dropped documents" in md and f"### {next(iter(examples))}" in md
