"""Hostile mix manifests (issue #35): YAML's ``.nan`` and ``.inf`` are floats, but no token
fraction. ``datapipe mix plan`` refuses them (and negative weights) with one line naming the
mix file, the source and the fix, in ``sources:`` and in a schedule's phases alike; before,
a phase weight of ``.nan`` was read as 0 and ``.inf`` was a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from trainer_bridge.mix import main as mix_main


def _plain(path: Path, weight) -> Path:
    path.write_text(yaml.safe_dump({"name": "m", "seq_len": 8, "token_budget": 80, "sources": [
        {"manifest": "wiki/manifest.json", "weight": weight}, {"manifest": "books/manifest.json", "weight": 1}]}))
    return path


def _scheduled(path: Path, weight) -> Path:
    path.write_text(yaml.safe_dump({"name": "m", "seq_len": 8, "token_budget": 80,
                                    "sources": [{"manifest": "wiki/manifest.json"}, {"manifest": "books/manifest.json"}],
                                    "schedule": [{"name": "main", "tokens": 40, "weights": {"wiki": 1, "books": 1}},
                                                 {"name": "anneal", "weights": {"wiki": weight, "books": 1}}]}))
    return path


def _plan(mix: Path, capsys) -> str:
    assert mix_main(["plan", str(mix)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err   # one line, no traceback
    return err


@pytest.mark.parametrize("weight, shown", [(float("nan"), "nan"), (float("inf"), "inf"), (-float("inf"), "-inf")])
def test_non_finite_source_weight_is_refused_naming_file_source_and_fix(tmp_path, capsys, weight, shown):
    mix = _plain(tmp_path / "plain.yaml", weight)
    assert f".{shown.lstrip('-')}" in mix.read_text().lower()   # written as YAML's .nan / .inf
    err = _plan(mix, capsys)
    assert f"error: mix {mix}: sources[0]: source wiki/manifest.json: weight {shown} is not a finite number" in err
    assert "give the source a positive token fraction (e.g. 0.3), or remove it from the mix" in err


@pytest.mark.parametrize("weight, shown", [(float("nan"), "nan"), (float("inf"), "inf"), (-0.5, "-0.5")])
def test_non_finite_or_negative_phase_weight_is_refused_naming_file_phase_and_source(tmp_path, capsys, weight, shown):
    mix = _scheduled(tmp_path / "sched.yaml", weight)
    err = _plan(mix, capsys)
    assert (f"error: mix {mix}: schedule[1]: phase 'anneal': weight of 'wiki' is {shown}; it must be a finite "
            "number >= 0 (a token fraction, e.g. 0.3; 0 or leaving the source out: not read in this phase)") in err


def test_negative_source_weight_is_still_refused(tmp_path, capsys):
    mix = _plain(tmp_path / "neg.yaml", -0.5)
    assert "sources[0]: source wiki/manifest.json: weight -0.5 must be > 0" in _plan(mix, capsys)


def test_mix_new_refuses_an_infinite_weight_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "new.yaml"
    assert mix_main(["new", "wiki/manifest.json=inf", "books/manifest.json=1", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "weight inf is not a finite number" in err and "Traceback" not in err
    assert not out.exists()
