"""Hostile job specs and stage inputs (issue #35, "Inputs are untrusted"): each is a
one-line error at ``datapipe validate`` naming the value and the fix, or a counted reject
at run time; never a traceback, a hang or unbounded memory."""

from __future__ import annotations

import textwrap
import time
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pytest

import datapipe
from datapipe.cli import main
from datapipe.errors import SpecError
from datapipe.plugins import stage_registry
from datapipe.spec import load_job


def _job(tmp_path: Path, *, options: str = "{text_key: text}", stages: str = "  - normalize: {}\n",
         head: str = "") -> Path:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "a.jsonl").write_text('{"text": "hello world", "url": "http://example.com/"}\n')
    spec = tmp_path / "job.yaml"
    spec.write_text(head + textwrap.dedent("""\
        name: t
        output: out
        sources:
          - name: docs
            format: jsonl
            paths: [data/*.jsonl]
            options: OPTIONS
        stages:
        """).replace("OPTIONS", options) + stages)
    return spec


def _validate(spec: Path, capsys) -> str:
    """``datapipe validate SPEC``: it must fail with exit code 2 and one line, no traceback."""
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("datapipe: error: ") and "\n" not in err and "Traceback" not in err, err
    return err


# -- 1. YAML --------------------------------------------------------------------------------

def _alias_bomb(levels: int = 9, width: int = 9, indent: int = 6) -> str:
    """Anchors ``&a<i> [*a<i-1>, ...]``: ``width ** levels`` strings from a few hundred bytes."""
    lines = ["_a0: &a0 [" + ", ".join(['"lol"'] * width) + "]"]
    lines += [f"_a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
    return "".join("\n" + " " * indent + line for line in lines)


def test_alias_bomb_under_source_options_is_refused_fast_in_bounded_memory(tmp_path, capsys):
    spec = _job(tmp_path, options=_alias_bomb())
    assert spec.stat().st_size < 1000
    registry = stage_registry()   # imported before the clock starts
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(SpecError, match="expands to more than 1,000,000 values once its aliases"):
            load_job(spec, registry=registry)
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seconds < 2.0, seconds
    assert peak < 50e6, peak
    err = _validate(spec, capsys)
    assert str(spec) in err and "alias bomb" in err


@pytest.mark.parametrize("body,expected", [
    ("loop: &x [1, *x]\n", "an alias refers to a mapping or list that contains it"),
    ("loop: &x {a: *x}\n", "an alias refers to a mapping or list that contains it"),
    ("deep: " + "[" * 100_000 + "]" * 100_000 + "\n", "nests more than 100 levels"),
    ("deep:\n" + "".join(" " * i + "- \n" for i in range(1, 3000)), "nests more than 100 levels"),
    # depth from aliases, without indentation: &d1 [*d0], &d2 [*d1], ...
    ("".join(f"d{i}: &d{i} [{f'*d{i - 1}' if i else 1}]\n" for i in range(150)), "nests more than 100 levels"),
])
def test_self_referencing_or_too_deep_yaml_is_a_spec_error(tmp_path, capsys, body, expected):
    spec = _job(tmp_path, head=body)
    t0 = time.perf_counter()
    with pytest.raises(SpecError, match=expected):
        load_job(spec)
    assert time.perf_counter() - t0 < 2.0
    assert expected in _validate(spec, capsys)


def test_broken_yaml_is_one_line_naming_line_and_column(tmp_path, capsys):
    spec = _job(tmp_path, options="{text_key: [text}")
    assert f"{spec}: not valid YAML at line 7, column " in _validate(spec, capsys)


def test_yaml_that_is_not_utf8_names_the_line(tmp_path, capsys):
    spec = _job(tmp_path)
    spec.write_bytes(spec.read_bytes().replace(b"name: t\n", b"name: t\n# caf\xe9\n"))
    err = _validate(spec, capsys)
    assert f"{spec}: line 2 is not UTF-8" in err and "save the file as UTF-8" in err


def test_ordinary_aliases_still_load(tmp_path):
    spec = _job(tmp_path, stages="  - length: &len {min_chars: 3}\n"
                                 "  - {stage: length, name: length_again, config: *len}\n")
    assert [s.config.min_chars for s in load_job(spec).stages] == [3, 3]


def test_mix_manifest_goes_through_the_same_guard(tmp_path):
    from trainer_bridge.mix import load_mix

    mix = tmp_path / "mix.yaml"
    mix.write_text("name: m\nsources:" + _alias_bomb(indent=2) + "\n")
    t0 = time.perf_counter()
    with pytest.raises(SpecError, match="alias bomb"):
        load_mix(mix)
    assert time.perf_counter() - t0 < 2.0


# -- 2. filter_expr ------------------------------------------------------------------------

def _filter_expr_spec(tmp_path: Path, expr: str) -> Path:
    return _job(tmp_path, stages=f"  - filter_expr: {{keep: '{expr}'}}\n")


@pytest.mark.parametrize("expr,expected", [
    ("not " * 5000 + "True", "nests more than 100 levels deep"),
    ("-" * 50_000 + "1 > 0", "nests more than 100 levels deep"),
    ("len(text) > 99999999999999999999999999",
     "the integer 99999999999999999999999999 in 'len(text) > 99999999999999999999999999' does not fit 64 bits"),
    ("len(text) in [1, 99999999999999999999]", "the integer 99999999999999999999"),
    ("len(text) > -9223372036854775809", "the integer -9223372036854775809"),
    ("text in [1, \"a\"]", "mixes types"),
    ("len(text) > 0 or " + "x " * 60_000, "at most 100,000"),
])
def test_hostile_expressions_are_one_line_errors_at_validate(tmp_path, capsys, expr, expected):
    spec = _filter_expr_spec(tmp_path, expr)
    t0 = time.perf_counter()
    err = _validate(spec, capsys)
    assert time.perf_counter() - t0 < 5.0
    assert expected in err and "filter_expr" in err
    assert len(err) < 1000   # the expression is cut short in the message


def test_edge_literals_that_fit_still_work():
    t = pa.table({"text": ["hello world", "x"]})
    for expr, kept in [("len(text) > -9223372036854775808", 2), ("len(text) < 9223372036854775807", 2),
                       ("len(text) < 1e400", 2), ("len(text) > -1e400", 2), ("len(text) > 1e400", 0),
                       ("not " * 90 + "len(text) > 1", 1)]:
        out, _ = datapipe.stage("filter_expr", keep=expr)(t)
        assert out.num_rows == kept, expr


# -- 3. url_filter ---------------------------------------------------------------------------

def _url_filter_spec(tmp_path: Path, config: str) -> Path:
    return _job(tmp_path, stages=f"  - url_filter: {config}\n")


def test_url_list_that_is_not_utf8_is_one_line_at_validate_naming_file_and_line(tmp_path, capsys):
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "block.txt").write_bytes(b"example.org\n# caf\xe9 sites\nexample.net\n")
    err = _validate(_url_filter_spec(tmp_path, "{block_files: ['{spec_dir}/lists/block.txt']}"), capsys)
    assert f"list {lists / 'block.txt'} line 2 is not UTF-8" in err and "iconv" in err


@pytest.mark.parametrize("where", ["file", "inline", "allow_file", "tag"])
def test_url_regex_that_re2_refuses_is_refused_at_validate(tmp_path, capsys, where):
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "l.txt").write_text("example.org\n# lookahead:\nregex:(?=x)  # RE2 has none\n")
    config = {"file": "{block_files: ['{spec_dir}/lists/l.txt']}",
              "inline": "{block: [example.org, 'regex:(?=x)']}",
              "allow_file": "{allow_files: ['{spec_dir}/lists/l.txt'], allow_only: true}",
              "tag": "{tags: {t: ['regex:(?=x)']}}"}[where]
    err = _validate(_url_filter_spec(tmp_path, config), capsys)
    assert "bad regex '(?=x)'" in err and "RE2" in err
    assert ("l.txt:3" if "file" in where else "[1]" if where == "inline" else "tags[t][0]") in err


def test_url_regex_that_only_re2_accepts_runs():
    # \pL is RE2 (Python's re refuses it): the run's engine decides, at validate and at run time
    kept, rejects = datapipe.stage("url_filter", block=[r"regex:\.org/\pL+\d"])(
        pa.table({"url": ["http://a.org/ab1", "http://a.org/12"], "text": ["x", "y"]}))
    assert kept.column("url").to_pylist() == ["http://a.org/12"]
    assert rejects.column("reject_reason").to_pylist() == ["url_filter:blocked"]


def test_url_keywords_that_case_folding_disagrees_on_do_not_crash_and_big_keyword_lists_run(tmp_path):
    # RE2's (?i) finds "casino" in "caſino" (long s); str.lower() does not: no match, not a crash
    words = [f"kw{i:06d}x" for i in range(100_000)]   # one RE2 alternation of these is too large
    (tmp_path / "kw.txt").write_text("".join(f"keyword:{w}\n" for w in words) + "keyword:casino\n")
    urls = ["http://a.org/ca\u017fino", "http://a.org/CASINO", "http://a.org/kw099999x", "http://a.org/ok"]
    kept, rejects = datapipe.stage("url_filter", block_files=[str(tmp_path / "kw.txt")])(
        pa.table({"url": urls, "text": ["x"] * 4}))
    assert kept.column("url").to_pylist() == ["http://a.org/ca\u017fino", "http://a.org/ok"]
    assert [d.split(" (")[0] for d in rejects.column("reject_detail").to_pylist()] == \
        ["keyword:casino", "keyword:kw099999x"]


# -- 4. latest_version -----------------------------------------------------------------------

def test_versions_past_64_bits_are_bad_version_rejects_not_a_crash():
    import json

    from stages.dedup.latest_version import LatestVersion, older_versions

    versions = [1, 2, 99999999999999999999, "v99999999999999999999", "v" + "9" * 5000, 3, 10 ** 30]
    keys = ["1712.01076"] * 3 + ["1712.01076", "1712.01076", "2001.00001", "2001.00001"]
    batch = pa.table({"id": [f"d{i}" for i in range(len(versions))],
                      "text": ["x"] * len(versions),
                      "metadata": [json.dumps({"arxiv_id": k, "version": v}) for k, v in zip(keys, versions)]})
    t0 = time.perf_counter()
    side = LatestVersion().side(batch)
    side = side.append_column("_split", pa.array(["s0"] * side.num_rows)) \
               .append_column("_row", pa.array(range(side.num_rows), pa.int64()))
    decisions = older_versions(side).to_pylist()
    assert time.perf_counter() - t0 < 1.0
    assert side.column("version").to_pylist() == [1, 2, None, None, None, 3, None]
    assert [(d["_row"], d["reason"]) for d in decisions] == [
        (0, "older"), (2, "bad_version"), (3, "bad_version"), (4, "bad_version"), (6, "bad_version")]
    assert decisions[0]["detail"] == "d1"           # v2 stays: a forged v9999... does not win
    assert decisions[1]["detail"] == "the version does not fit 64 bits"


# -- 5. decontaminate ------------------------------------------------------------------------

@pytest.mark.parametrize("content,why", [
    ("", "has no items"),
    ("\n\n   \n", "has no items"),
    ("What is two plus two?\nName the capital of France.\n", "has 2 item(s), all shorter than 13 words"),
    (None, "lists no files"),
])
def test_decontamination_set_that_cannot_match_is_a_warning_at_validate(tmp_path, caplog, content, why):
    files = []
    if content is not None:
        (tmp_path / "evals").mkdir()
        (tmp_path / "evals" / "short.txt").write_text(content)
        files = ["{spec_dir}/evals/short.txt"]
    spec = _job(tmp_path, stages=f"  - decontaminate: {{eval_sets: {{tiny_qa: {files}}}}}\n")
    with caplog.at_level("WARNING", logger="stages.decontam"):
        load_job(spec)
    warned = [r.getMessage() for r in caplog.records if r.name == "stages.decontam" and r.levelname == "WARNING"]
    assert len(warned) == 1, warned
    assert f"eval_sets['tiny_qa'] {why}, so it can match nothing" in warned[0]


def test_decontamination_set_with_one_long_item_gives_no_warning(tmp_path, caplog):
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "qa.txt").write_text("Short one?\n" + " ".join(f"w{i}" for i in range(13)) + "\n")
    spec = _job(tmp_path, stages="  - decontaminate: {eval_sets: {qa: ['{spec_dir}/evals/qa.txt']}}\n")
    with caplog.at_level("WARNING", logger="stages.decontam"):
        load_job(spec)
    assert not [r for r in caplog.records if r.name == "stages.decontam"]


def test_decontamination_set_too_large_to_check_at_validate_is_warned_about_when_the_index_is_built(
        tmp_path, caplog, monkeypatch):
    import stages.decontam as D
    from datapipe.passes import run_prepared
    from datapipe.stage import StageContext

    monkeypatch.setattr(D, "CHECK_BYTES", 10)   # every set counts as too large for the config check
    (tmp_path / "short.jsonl").write_text('{"text": "What is two plus two?"}\n{"text": "Yes or no?"}\n')
    (tmp_path / "long.txt").write_text(" ".join(f"w{i}" for i in range(20)) + "\n")
    with caplog.at_level("WARNING", logger="stages.decontam"):
        stage = D.Decontaminate(D.DecontamConfig(eval_sets={"short": [str(tmp_path / "short.jsonl")],
                                                            "long": [str(tmp_path / "long.txt")]}))
        assert not caplog.records
        run_prepared(stage, StageContext(work_dir=str(tmp_path / "work"), sources=("web",)))
    warned = [r.getMessage() for r in caplog.records if r.name == "stages.decontam" and r.levelname == "WARNING"]
    assert len(warned) == 1 and "eval_sets['short'] has 2 item(s), all shorter than 13 words" in warned[0]
