"""Stages reach the engine through plugins: a filter defined here and registered the
documented way (a plugin module's ``stages()``, named by a ``datapipe.plugins`` entry
point of an installed distribution) is picked up by a job spec, by ``datapipe.stage``
and by ``validate``; a plugin that fails to import is an error naming it."""

from __future__ import annotations

import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import datapipe
from datapipe.errors import SpecError
from datapipe.plan import compile_plan, describe_plan
from datapipe.plugins import PluginError, stage_registry
from datapipe.spec import load_job
from datapipe.stage import FilterStage, StageConfig


@dataclass(kw_only=True, frozen=True)
class MaxLinesConfig(StageConfig):
    max_lines: int = 3

    def __post_init__(self):
        if self.max_lines < 1:
            raise SpecError(f"max_lines: max_lines must be >= 1, got {self.max_lines}")


class MaxLines(FilterStage):
    """Drops documents with more than ``max_lines`` lines."""

    name = "max_lines"
    Config = MaxLinesConfig

    def keep(self, batch: pa.Table):
        lines = pc.add(pc.count_substring(batch.column("text"), "\n"), 1).to_numpy(zero_copy_only=False)
        ok = lines <= self.config.max_lines
        return ok, [None if k else f"too_many_lines|{n}" for k, n in zip(ok, lines)]


def stages():
    """This module is the plugin: its stages, by the name job specs use."""
    return {"max_lines": MaxLines}


def _install(site: Path, name: str, module: str) -> None:
    """A distribution on ``site`` declaring ``name = module`` in ``datapipe.plugins``."""
    dist = site / f"{name}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[datapipe.plugins]\n{name} = {module}\n")


@pytest.fixture
def plugin_installed(tmp_path, monkeypatch):
    _install(tmp_path / "site", "max_lines_plugin", __name__)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert sys.modules[__name__].stages is stages


def _spec(tmp_path: Path, stage: str) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.txt").write_text("one line\n")
    (tmp_path / "data" / "b.txt").write_text("one\ntwo\nthree\nfour\nfive\n")
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: t
        output: out
        sources: [{{name: docs, format: text, paths: [data/*.txt]}}]
        stages:
          - normalize: {{}}
          - {stage}
        """))
    return spec


def test_a_plugin_filter_is_picked_up_by_a_job_spec(plugin_installed, tmp_path):
    assert stage_registry()["max_lines"] is MaxLines
    assert stage_registry()["length"].name == "length"          # the bundled stages are still there
    job = load_job(_spec(tmp_path, "max_lines: {max_lines: 2}"))
    st = job.stages[1]
    assert st.cls is MaxLines and st.config == MaxLinesConfig(max_lines=2)
    plan = compile_plan(job)
    assert [s.name for s in plan.phases[0].stages] == ["normalize", "max_lines"]
    assert any(line.split()[:2] == ["max_lines", "filter"] for line in describe_plan(plan))
    kept, rejects = datapipe.stage("max_lines", max_lines=2)(pa.table({"text": ["a", "a\nb\nc"]}))
    assert kept.column("text").to_pylist() == ["a"]
    assert rejects.column("reject_reason").to_pylist() == ["max_lines:too_many_lines"]
    assert rejects.column("reject_detail").to_pylist() == ["3"]
    assert "max_lines" in datapipe.stages()


def test_a_plugin_stage_config_is_checked_like_any_other(plugin_installed, tmp_path):
    with pytest.raises(SpecError, match="max_lines must be >= 1"):
        load_job(_spec(tmp_path, "max_lines: {max_lines: 0}"))


def test_without_the_plugin_the_name_is_unknown_and_the_error_lists_the_stages(tmp_path):
    with pytest.raises(SpecError, match=r"unknown stage 'max_lines'; valid stages: .*length"):
        load_job(_spec(tmp_path, "max_lines: {}"))


def test_a_plugin_passed_as_registry_needs_no_install(tmp_path):
    job = load_job(_spec(tmp_path, "max_lines: {}"), registry={**stage_registry(), "max_lines": MaxLines})
    assert job.stages[1].cls is MaxLines


def test_a_broken_plugin_is_an_error_naming_it(tmp_path, monkeypatch):
    _install(tmp_path / "site", "broken_plugin", "datapipe_no_such_plugin_module")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    with pytest.raises(PluginError, match=r"plugin 'broken_plugin' .*datapipe_no_such_plugin_module.*ModuleNotFoundError"):
        load_job(_spec(tmp_path, "normalize: {}"))
