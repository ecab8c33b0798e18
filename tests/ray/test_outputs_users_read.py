"""Outputs as users read them (#29), on real corpora through real jobs on the session's
Ray: a JSONL output in Dolma's layout that ``datapipe inspect`` reads, a ``filter_expr``
rule over stage columns and source metadata, and a Hugging Face ``save_to_disk`` source
whose Parquet output ``datasets.load_dataset`` reads as it is."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from datapipe.runner import run_job
from datapipe.spec import load_job

pytestmark = pytest.mark.ray

EXPR = 'source == "se" or metadata.metadata.perplexity < 330'


def _ccnet(shared_dir: Path) -> dict[str, dict]:
    recs = {}
    for p in sorted((shared_dir / "corpora" / "ccnet").glob("cc_en_head-*.jsonl")):
        for line in p.read_text().splitlines():
            d = json.loads(line)
            recs[d["id"]] = d
    return recs


@pytest.fixture(scope="module")
def jsonl_output(ray_session, tmp_path_factory, shared_dir):
    tmp = tmp_path_factory.mktemp("jsonl")
    corpora = shared_dir / "corpora"
    spec = tmp / "job.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: jsonl
        output: out
        output_options: {{format: jsonl, compression: none}}
        sources:
          - name: ccnet
            format: jsonl
            paths: ["{corpora}/ccnet/cc_en_head-*.jsonl"]
            options: {{id_key: id, metadata: [metadata.perplexity, created]}}
          - name: se
            format: jsonl
            paths: ["{corpora}/stackexchange/redpajama-stackexchange.jsonl"]
        stages:
          - langid: {{languages: [en]}}
          - filter_expr: {{keep: '{EXPR}'}}
        """))
    return Path(run_job(load_job(spec), echo=lambda s: None).output)


def _lines(folder: Path) -> list[dict]:
    return [json.loads(line) for f in sorted(folder.rglob("*.jsonl")) for line in f.read_text().splitlines()]


def test_jsonl_layout_is_dolma_with_nested_metadata(jsonl_output, shared_dir):
    recs = _ccnet(shared_dir)
    docs = _lines(jsonl_output / "documents")
    assert docs
    for d in docs:
        assert set(d) == {"id", "text", "source", "metadata"}
        assert isinstance(d["metadata"], dict) and d["metadata"]["language"] == "en"
    ccnet = [d for d in docs if d["source"] == "ccnet"]
    assert ccnet
    for d in ccnet:
        src = recs[d["metadata"]["source_id"]]
        # the kept fields are an object, not a JSON string; the dotted name is nested
        assert d["metadata"]["metadata"] == {"created": src["created"],
                                             "metadata": {"perplexity": src["metadata"]["perplexity"]}}


def test_filter_expr_keeps_exactly_what_the_expression_says(jsonl_output, shared_dir):
    recs = _ccnet(shared_dir)
    docs = _lines(jsonl_output / "documents")
    rejects = _lines(jsonl_output / "rejects")
    by_expr = [r for r in rejects if r["metadata"]["reject_stage"] == "filter_expr"]
    english_ccnet = [r for r in docs + by_expr if r["source"] == "ccnet"]
    expected_drops = sorted(r["id"] for r in english_ccnet
                            if recs[r["metadata"]["source_id"]]["metadata"]["perplexity"] >= 330)
    assert expected_drops and len(expected_drops) < len(english_ccnet)     # the rule bites, not everything
    assert sorted(r["id"] for r in by_expr) == expected_drops
    assert all(r["metadata"]["reject_reason"] == "filter_expr:expr_false" and r["metadata"]["reject_detail"] == EXPR
               for r in by_expr)
    assert any(d["source"] == "se" for d in docs)
    report = json.loads((jsonl_output / "report.json").read_text())
    assert report["accounting_ok"], report["problems"]
    stage = next(st for st in report["stages"] if st["stage"] == "filter_expr")
    assert stage["dropped"] == {"filter_expr:expr_false": len(expected_drops)}


def _inspect(output: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "datapipe", "inspect", str(output), *args],
                          capture_output=True, text=True, timeout=120)


def test_inspect_reads_a_jsonl_output(jsonl_output):
    rejects = _lines(jsonl_output / "rejects")
    lang = [r for r in rejects if r["metadata"]["reject_reason"] == "langid:language"]
    assert lang
    proc = _inspect(jsonl_output, "--reason", "langid:language", "-n", "2")
    assert proc.returncode == 0, proc.stderr
    assert f"langid:language: {len(lang)} rejected; 2 shown" in proc.stdout
    everything = _inspect(jsonl_output)
    assert everything.returncode == 0, everything.stderr
    assert "None" not in everything.stdout
    assert f"{len(lang):>8}  langid:language" in everything.stdout
    # a reason without its rule, or an unknown source: say what exists
    bare = _inspect(jsonl_output, "--reason", "langid")
    assert "every reason of stage 'langid': --reason langid:" in bare.stdout
    assert "langid:language" in bare.stdout and "filter_expr:expr_false" in bare.stdout
    typo = _inspect(jsonl_output, "--source", "stackexchange")
    assert "sources present: " in typo.stdout and "se (" in typo.stdout


def test_hf_source_and_an_output_load_dataset_reads(ray_session, tmp_path, shared_dir):
    datasets = pytest.importorskip("datasets", reason="the dev extra installs datasets")
    lines = (shared_dir / "corpora" / "redpajama" / "the-pile-nih-refined.jsonl").read_text().splitlines()
    texts = [json.loads(line)["text"] for line in lines]
    datasets.Dataset.from_dict({"text": texts, "n": list(range(len(texts)))}).save_to_disk(str(tmp_path / "nih"))
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent("""
        name: hf
        output: out
        sources:
          - name: nih
            format: hf
            paths: [nih]
            options: {metadata: [n]}
        stages:
          - length: {min_chars: 1}
        """))
    out = Path(run_job(load_job(spec), echo=lambda s: None).output)
    ours = [r for f in sorted((out / "documents").rglob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    assert [r["text"] for r in ours] == texts
    loaded = datasets.load_dataset(str(out / "documents"), split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert loaded["text"] == texts and loaded["id"] == [r["id"] for r in ours]
