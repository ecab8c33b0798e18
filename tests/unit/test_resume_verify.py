"""Resume trusts a finished split only when its done-record and every file it lists are
intact: one flipped byte in a reused file (same size) sends the split back to be redone."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from datapipe.plan import compile_plan
from datapipe.spec import load_job
from datapipe.splitwork import PhaseEnv, SplitRunner, verify_done


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-9] ^= 0xFF          # inside the Parquet footer's metadata, size unchanged
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("kind", ["documents", "rejects", "ids"])
def test_a_corrupted_reused_file_is_detected(tmp_path, kind):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.jsonl").write_text("".join(
        json.dumps({"id": f"d{i}", "text": "x" * (5 if i % 3 == 0 else 50)}) + "\n" for i in range(30)))
    spec = tmp_path / "job.yaml"
    spec.write_text(textwrap.dedent("""
        name: verify
        output: out
        sources:
          - {name: docs, format: jsonl, paths: [data/*.jsonl], options: {id_key: id}}
        stages:
          - length: {min_chars: 20}
    """))
    plan = compile_plan(load_job(spec))
    staging = str(tmp_path / "staging")
    env = PhaseEnv(phase=plan.phases[0], staging=staging, readers=plan.readers, batch_rows=8,
                   output=plan.job.output_options, storage=plan.job.storage, id_parts=1)
    [ref] = plan.splits
    record = SplitRunner(env).run(ref)
    assert verify_done(env.done_path(ref), staging) == record
    target = {"documents": Path(staging) / "documents" / "docs" / "part-00000.parquet",
              "rejects": Path(staging) / "rejects" / "docs" / "part-00000.parquet",
              "ids": Path(env.ids_path(ref))}[kind]
    size = target.stat().st_size
    _flip_a_byte(target)
    assert target.stat().st_size == size
    assert verify_done(env.done_path(ref), staging) is None
