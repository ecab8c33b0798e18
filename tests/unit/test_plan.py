"""A job compiles into a plan: phases cut at global stages, and the compute each phase
runs with is what its stages declare (``execution.actors_per_stage`` overrides the pool
size); ``validate`` prints both."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from datapipe.plan import compile_plan, describe_plan
from datapipe.plugins import stage_registry
from datapipe.spec import load_job
from datapipe.stage import Compute
from stages.heuristics.basic import LengthFilter


class HeavyLength(LengthFilter):
    """``length`` that asks for a pool of three 2-CPU actors (as a model stage would)."""

    name = "heavy_length"
    compute = Compute(kind="actor", num_cpus=2, concurrency=3)


def _job(tmp_path: Path, execution: str = "{}"):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.txt").write_text("some words here\n")
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent(f"""
        name: t
        output: out
        execution: {execution}
        sources: [{{name: docs, format: text, paths: [data/*.txt]}}]
        stages:
          - normalize: {{}}
          - heavy_length: {{min_chars: 3}}
          - dedup: {{}}
          - length: {{min_chars: 3}}
        """))
    return load_job(spec, registry={**stage_registry(), "heavy_length": HeavyLength})


def test_phases_take_the_compute_their_stages_declare(tmp_path):
    plan = compile_plan(_job(tmp_path))
    first, second = plan.phases
    assert [s.name for s in first.stages] == ["normalize", "heavy_length"] and first.after.name == "dedup"
    assert first.compute == Compute(kind="actor", num_cpus=2, concurrency=3)
    assert [s.name for s in second.stages] == ["length"] and second.compute == Compute(kind="task")
    text = "\n".join(describe_plan(plan, cpus=8))
    assert "[0] 3 actor(s), 2 CPU each, read fused in" in text
    assert "[1] tasks, 1 CPU each, one per split; applies dedup's decisions" in text
    assert "heavy_length       filter         [actor x3, 2 CPU]" in text


def test_actors_per_stage_overrides_the_declared_pool(tmp_path):
    plan = compile_plan(_job(tmp_path, "{actors_per_stage: 5}"))
    assert "[0] 5 actor(s), 2 CPU each" in "\n".join(describe_plan(plan, cpus=8))


def test_compute_rejects_impossible_requests():
    with pytest.raises(ValueError, match="kind must be 'task' or 'actor'"):
        Compute(kind="thread")
    with pytest.raises(ValueError, match="concurrency is a number of actors"):
        Compute(kind="task", concurrency=2)
