"""Malformed job specs fail at load time, before any data moves, naming the problem."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from datapipe.errors import SpecError
from datapipe.spec import load_job


def _write(tmp_path: Path, body: str) -> Path:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "a.jsonl").write_text('{"text": "hello world", "id": 1}\n')
    (data / "p.html").write_text("<html><body><p>hi</p></body></html>")
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent(body))
    return spec


GOOD = """
name: t
output: out
sources:
  - name: docs
    format: jsonl
    paths: [data/*.jsonl]
    options: {text_key: text, id_key: id}
stages:
  - normalize: {}
  - length: {min_chars: 5}
"""


def test_good_spec_loads_with_typed_configs(tmp_path):
    job = load_job(_write(tmp_path, GOOD))
    assert [s.name for s in job.stages] == ["normalize", "length"]
    assert job.stages[1].config.min_chars == 5
    assert job.output == str((tmp_path / "out").resolve())
    src = job.sources[0]
    assert [f.rel for f in src.files] == ["a.jsonl"]
    assert len(job.spec_hash()) == 32


@pytest.mark.parametrize(
    "old,new,expected",
    [
        ("  - length: {min_chars: 5}", "  - lenght: {min_chars: 5}", "unknown stage 'lenght'; did you mean 'length'? valid stages:"),
        ("{min_chars: 5}", "{min_char: 5}", "unknown key 'min_char'; did you mean 'min_chars'?"),
        ("{min_chars: 5}", "{min_chars: five}", "key 'min_chars' must be int, got 'five'"),
        ("{min_chars: 5}", "{min_chars: 5, max_chars: 2}", "min_chars <= max_chars"),
        ("paths: [data/*.jsonl]", "paths: [data/missing.jsonl]", "input file not found:"),
        ("paths: [data/*.jsonl]", "paths: [data/*.parquet]", "matches no files"),
        ("format: jsonl", "format: csv", "unknown format 'csv'; valid formats:"),
        ("{text_key: text, id_key: id}", "{text_field: text}", "source 'docs': options: unknown key 'text_field'"),
        ("name: t\n", "name: t\nbogus: 1\n", "unknown top-level key(s) ['bogus']"),
        ("output: out\n", "output: out\non_error: ignore\n", "'on_error' must be 'skip' or 'fail'"),
    ],
)
def test_malformed_spec_names_the_problem(tmp_path, old, new, expected):
    body = GOOD.replace(old, new)
    assert body != GOOD
    spec = _write(tmp_path, body)
    with pytest.raises(SpecError) as e:
        load_job(spec)
    assert expected in str(e.value)
    assert str(spec) in str(e.value)


def test_impossible_column_chain_names_stage_column_and_source(tmp_path):
    body = GOOD.replace(
        "sources:\n",
        "sources:\n  - name: pages\n    format: html\n    paths: [data/*.html]\n",
    )
    spec = _write(tmp_path, body)
    with pytest.raises(SpecError) as e:
        load_job(spec)
    msg = str(e.value)
    assert "stages[0] (normalize) reads column 'text'" in msg
    assert "source 'pages' (format html)" in msg


def test_validate_cli_prints_plan_or_error(tmp_path):
    spec = _write(tmp_path, GOOD)
    ok = subprocess.run([sys.executable, "-m", "datapipe", "validate", str(spec)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "normalize" in ok.stdout and "spec OK" in ok.stdout
    bad = _write(tmp_path, GOOD.replace("normalize", "normalise"))
    err = subprocess.run([sys.executable, "-m", "datapipe", "validate", str(bad)], capture_output=True, text=True)
    assert err.returncode == 2
    assert "unknown stage 'normalise'" in err.stderr


@pytest.mark.parametrize(
    "old,new,expected",
    [
        ("  - length: {min_chars: 5}", "  - length: 50", "expected a mapping of keys to values, got 50"),
        ("format: jsonl", "format: [jsonl]", "unknown format ['jsonl']"),
        ("  - length: {min_chars: 5}", "  - {stage: [length], sources: [docs]}", "'stage' must be a stage name"),
        ("output: out\n", "output: out\nexecution: {actors_per_stage: 0}\n", "actors_per_stage must be >= 1"),
        ("output: out\n", "output: data\n", "contains"),
    ],
)
def test_more_malformed_specs_are_spec_errors(tmp_path, old, new, expected):
    body = GOOD.replace(old, new)
    assert body != GOOD
    with pytest.raises(SpecError) as e:
        load_job(_write(tmp_path, body))
    assert expected in str(e.value)


def test_spec_hash_follows_content_not_paths_and_hides_secrets(tmp_path):
    spec = _write(tmp_path, GOOD)
    base = load_job(spec)
    # same logic, different option that changes which documents are read -> different hash
    bigger = load_job(_write(tmp_path, GOOD.replace("output: out\n", "output: out\nexecution: {max_doc_bytes: 10}\n")))
    assert bigger.spec_hash() != base.spec_hash()
    from datapipe.spec import _portable

    f = tmp_path / "words.txt"
    f.write_text("alpha\n")
    h1 = _portable({"bad_words_path": str(f)}, "")
    f.write_text("omega\n")  # same size, new content
    assert _portable({"bad_words_path": str(f)}, "")["bad_words_path"] != h1["bad_words_path"]
    redacted = _portable({"key": "my-secret-pseudonym-key"}, "")["key"]
    assert "my-secret" not in redacted and redacted.startswith("blake2b:")
    # a path-valued key whose name merely contains "token" is hashed by content, not redacted
    assert _portable({"tokenizer": str(f)}, "")["tokenizer"].startswith("words.txt#")


def test_cli_output_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    spec = _write(tmp_path, GOOD)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_job(spec, output="runs/x").output == str(elsewhere / "runs" / "x")


def test_missing_shared_file_names_the_placeholder_and_the_variable(tmp_path, monkeypatch):
    empty = tmp_path / "empty-shared"
    empty.mkdir()
    monkeypatch.setenv("DATAPIPE_SHARED", str(empty))
    spec = _write(tmp_path, GOOD.replace("  - length: {min_chars: 5}",
                                         '  - c4: {bad_words_path: "{shared}/lists/ldnoobw.txt"}'))
    with pytest.raises(SpecError, match=r"\{shared\} = .*empty-shared, from \$DATAPIPE_SHARED") as err:
        load_job(spec)
    assert "bad_words_path" in str(err.value)
    spec = _write(tmp_path, GOOD.replace("paths: [data/*.jsonl]", 'paths: ["{shared}/corpora/*.jsonl"]'))
    monkeypatch.setenv("DATAPIPE_SHARED", str(tmp_path / "nowhere"))
    with pytest.raises(SpecError, match="that folder does not exist"):
        load_job(spec)


GROUPS = """
name: t
output: out
sources:
  - {name: code, format: jsonl, paths: [data/a.jsonl]}
  - {name: forks, format: jsonl, paths: [data/a.jsonl]}
  - {name: wiki, format: jsonl, paths: [data/a.jsonl]}
stages:
  - {stage: dedup, name: dedup_code, sources: [code, forks], config: {shingle: token, lowercase: false}}
  - {stage: dedup, name: dedup_prose, sources: [wiki], config: {ngram: 3}}
  - dedup: {}
"""


def test_dedup_groups_load_and_overlapping_groups_are_refused(tmp_path):
    """Per-domain dedup (docs/dedup.md "Dedup per group of sources"): several ``dedup``
    entries, each over its own sources with its own config, and one over every source;
    a source in two groups is an error naming both entries, the source and the fix."""
    from datapipe.plan import compile_plan, describe_plan

    job = load_job(_write(tmp_path, GROUPS))
    assert [(s.name, s.kind, s.sources) for s in job.stages] == [
        ("dedup_code", "dedup", frozenset({"code", "forks"})), ("dedup_prose", "dedup", frozenset({"wiki"})),
        ("dedup", "dedup", None)]
    assert job.stages[0].config.shingle == "token" and job.stages[1].config.ngram == 3
    plan = [line.strip() for line in describe_plan(compile_plan(job))]
    assert "-> dedup_code: side data per split, then its passes (in the driver, one Ray task or Ray Data, by rows); only sources: code, forks" in plan

    body = GROUPS.replace("sources: [wiki]", "sources: [wiki, forks]")
    with pytest.raises(SpecError) as e:
        load_job(_write(tmp_path, body))
    assert ("stages[0] (dedup_code) and stages[1] (dedup_prose) are both 'dedup' stages over source 'forks'"
            in str(e.value))
    assert "add a dedup without 'sources'" in str(e.value)
