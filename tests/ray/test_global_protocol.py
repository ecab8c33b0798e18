"""The global-stage protocol through the engine's one entry point
(``datapipe.passes.run_global``), on the stage docs/engine.md "Adding a global stage" shows
(docs/examples/longest_per_url.py): its second pass depends on the first one's rows, so
with no shared URL it stops after one pass and decides nothing; where the executor runs
the passes (the driver, one Ray task, Ray Data passes) does not change the decisions'
bytes; a rerun reuses every committed pass."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dedup_driver import write_side

from datapipe import passes
from datapipe import schema as S
from datapipe.stage import StageContext

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "docs" / "examples"))
import longest_per_url
from longest_per_url import LongestPerUrl, LongestPerUrlConfig

pytestmark = pytest.mark.ray

PAD = " about the river and the mill"


def _splits(rows: list[tuple[str, str | None, str]]) -> dict[str, pa.Table]:
    """Two rows per split: ``(id, url, text)``."""
    out = {}
    for i in range(0, len(rows), 2):
        part = rows[i:i + 2]
        out[f"web/{i // 2:04d}"] = S.make_batch(source="web", ids=[r[0] for r in part], urls=[r[1] for r in part],
                                                texts=[r[2] + PAD for r in part])
    return out


ROWS = [("a1", "https://x.org/a", "short"), ("b1", "https://x.org/b", "only one"),
        ("a2", "https://x.org/a", "the longest of the three"), ("n1", None, "no url"),
        ("a3", "https://x.org/a", "middle length"), ("c1", "https://x.org/c", "c, the longer copy"),
        ("c2", "https://x.org/c", "c, short")]


def _run(tmp_path: Path, name: str, splits: dict[str, pa.Table], **cfg) -> tuple[dict, dict, str | None]:
    stage = LongestPerUrl(LongestPerUrlConfig(**cfg))
    work = tmp_path / name
    files = write_side(stage, splits, work)
    ctx = StageContext(work_dir=str(work / "passes"), sources=("web",))
    uri = passes.run_global(stage, files, ctx)
    removed = {}
    if uri is not None:
        dec = pq.read_table(uri)
        for split, row, reason, detail in zip(*(dec.column(c).to_pylist() for c in ("_split", "_row", "reason",
                                                                                    "detail"))):
            removed[splits[split][S.ID][row].as_py()] = (reason, detail)
    return removed, ctx.report, uri


def test_a_later_pass_follows_the_earlier_artifact(ray_session, tmp_path, monkeypatch):
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(longest_per_url)
    splits = _splits(ROWS)
    by_id = {t[S.ID][i].as_py(): t[S.TEXT][i].as_py().removesuffix(PAD)
             for t in splits.values() for i in range(t.num_rows)}
    text_id = {v: k for k, v in by_id.items()}

    drv, rep_d, uri_d = _run(tmp_path, "driver", splits)
    assert rep_d["decided_in"] == "driver"
    assert [(p["pass"], p["rows"]) for p in rep_d["passes"]] == [("shared", 5), ("decisions", 3)]
    longest_a, longer_c = text_id["the longest of the three"], text_id["c, the longer copy"]
    assert {by_id[i]: d for i, d in drv.items()} == {"short": ("shorter", longest_a),
                                                      "middle length": ("shorter", longest_a),
                                                      "c, short": ("shorter", longer_c)}
    assert rep_d["removed"] == 3

    # Ray Data passes: the decisions pass gets partitions from the first pass's rows
    # (5 shared rows, 2 a partition: 3); one Ray task: the same as the driver
    dist, rep_r, uri_r = _run(tmp_path, "distributed", splits, local_rows=0, parts=2, rows_per_part=2)
    monkeypatch.setattr(passes, "DRIVER_ROWS", 0)
    task, rep_t, uri_t = _run(tmp_path, "task", splits)
    assert rep_r["decided_in"] == "Ray Data passes" and rep_t["decided_in"] == "one Ray task"
    assert dist == task == drv
    assert [f.read_bytes() for f in sorted(Path(uri_d).glob("*.parquet"))] == \
           [f.read_bytes() for f in sorted(Path(uri_t).glob("*.parquet"))]
    assert pq.read_table(uri_r).equals(pq.read_table(uri_d))

    # a rerun reuses both committed passes
    again, rep_2, _ = _run(tmp_path, "driver", splits)
    assert again == drv and [p["reused"] for p in rep_2["passes"]] == [True, True]


def test_no_shared_url_decides_nothing_after_one_pass(tmp_path):
    splits = _splits([r for r in ROWS if r[0] in ("a1", "b1", "n1", "c1")])
    removed, report, uri = _run(tmp_path, "none", splits)
    assert uri is None and removed == {} and report["removed"] == 0
    assert [p["pass"] for p in report["passes"]] == ["shared"]
