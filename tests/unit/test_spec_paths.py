"""Job specs a new user writes: every relative path resolves against the spec file, the
token shards cannot fall out of step with the documents, and mistakes name the fix."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from datapipe.errors import SpecError
from datapipe.spec import load_job

REPO = Path(__file__).resolve().parents[2]


def _spec(tmp_path: Path, stages: str) -> Path:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "a.jsonl").write_text('{"text": "mail me at jane.doe@example.com today", "id": 1}\n')
    spec = tmp_path / "jobs" / "job.yaml"
    spec.parent.mkdir(exist_ok=True)
    spec.write_text(textwrap.dedent("""
        name: t
        output: ../out
        sources:
          - name: docs
            format: jsonl
            paths: [../data/*.jsonl]
            options: {text_key: text, id_key: id}
        stages:
        """) + textwrap.indent(textwrap.dedent(stages), "  "))
    return spec


def _validate(spec: Path, cwd: Path, **env) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "datapipe", "validate", str(spec)], cwd=cwd, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(REPO), **env}, timeout=120)


def test_a_text_rewriting_stage_after_tokenize_is_refused_naming_both(tmp_path, shared_dir):
    tok = shared_dir / "tokenizers" / "tiny-2k.tokenizer.json"
    spec = _spec(tmp_path, f"""
        - tokenize: {{tokenizer: "{tok}"}}
        - pii: {{}}
        """)
    proc = _validate(spec, tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = proc.stderr
    assert "stages[1] (pii) rewrites text after stages[0] (tokenize)" in err
    assert "Move 'tokenize' after every stage that rewrites text" in err
    # the order that keeps shards and documents in step validates
    good = _spec(tmp_path, f"""
        - pii: {{}}
        - tokenize: {{tokenizer: "{tok}"}}
        """)
    assert _validate(good, tmp_path).returncode == 0
    # a filter after tokenize only drops documents (the sink writes kept ones): allowed
    ok = _spec(tmp_path, f"""
        - tokenize: {{tokenizer: "{tok}"}}
        - length: {{min_chars: 5}}
        """)
    assert _validate(ok, tmp_path).returncode == 0


def test_model_and_tokenizer_paths_resolve_against_the_spec_file(tmp_path, shared_dir):
    models = tmp_path / "jobs" / "m"
    models.mkdir(parents=True)
    shutil.copy(shared_dir / "tokenizers" / "tiny-2k.tokenizer.json", models / "tok.json")
    shutil.copy(shared_dir / "models" / "lid.176.ftz", models / "lid.ftz")
    spec = _spec(tmp_path, """
        - langid: {model: m/lid.ftz}
        - tokenize: {tokenizer: m/tok.json}
        """)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for cwd in (elsewhere, spec.parent):
        proc = _validate(spec, cwd)
        assert proc.returncode == 0, f"from {cwd}: {proc.stderr}"
    job = load_job(spec)
    assert job.stages[0].config.model == str(models / "lid.ftz")
    assert job.stages[1].config.tokenizer == str(models / "tok.json")


def test_eval_sets_and_url_lists_resolve_against_the_spec_file(tmp_path):
    lists = tmp_path / "jobs" / "lists"
    lists.mkdir(parents=True)
    (lists / "humaneval.jsonl").write_text('{"prompt": "def add(a, b): return the sum of the two numbers a and b"}\n')
    (lists / "block.txt").write_text("bad.example\n")
    spec = _spec(tmp_path, """
        - url_filter: {block_files: [lists/block.txt], tag_files: {t: [lists/block.txt]}}
        - decontaminate: {eval_sets: {humaneval: [lists/humaneval.jsonl]}}
        """)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = _validate(spec, elsewhere)
    assert proc.returncode == 0, proc.stderr
    job = load_job(spec)
    assert job.stages[0].config.block_files == (str(lists / "block.txt"),)
    assert job.stages[1].config.eval_sets == {"humaneval": (str(lists / "humaneval.jsonl"),)}


def test_unset_models_placeholder_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("DATAPIPE_MODELS", raising=False)
    spec = _spec(tmp_path, """
        - tokenize: {tokenizer: "{models}/sample/tokenizer/tokenizer.json"}
        """)
    with pytest.raises(SpecError) as err:
        load_job(spec)
    msg = str(err.value)
    assert f"{{models}} = {tmp_path / 'models'} (that folder does not exist)" in msg
    assert "set DATAPIPE_MODELS" in msg
    monkeypatch.setenv("DATAPIPE_MODELS", str(tmp_path / "nowhere"))
    with pytest.raises(SpecError, match=r"from \$DATAPIPE_MODELS"):
        load_job(spec)
