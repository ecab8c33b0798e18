"""The executor of declared passes: a committed pass is keyed by its declaration and its
inputs' contents, reused when they come again and run again when either changes; a
generator plan is sent each batch's artifacts and may discard an artifact and publish a
folder (in this process: ``local``, no Ray)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datapipe.passes import Blocks, Discard, Output, Parts, Pass, PassExecutor, Publish, run_passes

OUT = pa.schema([("v", pa.int64()), ("_input", pa.int64())])


def above(t: pa.Table, *, floor: int) -> pa.Table:
    return t.filter(pa.compute.greater(t.column("v"), floor)).select(["v", "_input"])


def _plan(floor: int) -> list[Pass]:
    return [Pass(name="above", inputs=("nums",), fn=above, partitioning=Parts(column="part", parts=1),
                 output=Output(schema=OUT, sort_by=("v",)), params={"floor": floor}, columns=("v",))]


def _write(path, values) -> str:
    pq.write_table(pa.table({"part": pa.array([0] * len(values), pa.int32()), "v": pa.array(values, pa.int64())}),
                   path)
    return str(path)


def test_a_committed_pass_is_reused_until_its_inputs_or_params_change(tmp_path):
    files = [_write(tmp_path / "a.parquet", [5, 1, 9]), _write(tmp_path / "b.parquet", [7, 2])]
    root = str(tmp_path / "work")

    def run(floor: int, timings: list):
        return PassExecutor(root, None, inputs={"nums": files}, timings=timings).run(_plan(floor))["above"]

    t1: list = []
    first = run(4, t1)
    assert (first.rows, first.reused) == (3, False)
    got = pq.read_table(first.uri)
    assert got.column("v").to_pylist() == [5, 7, 9] and got.column("_input").to_pylist() == [0, 1, 0]
    assert [(t["pass"], t["rows"], t["reused"]) for t in t1] == [("above", 3, False)]

    t2: list = []
    again = run(4, t2)
    assert (again.uri, again.key, again.reused) == (first.uri, first.key, True)
    assert [(t["pass"], t["reused"]) for t in t2] == [("above", True)]

    other = run(6, [])   # other params: another key, computed
    assert not other.reused and other.key != first.key and other.rows == 2

    _write(tmp_path / "b.parquet", [7, 8])   # other input contents: computed again
    changed = run(4, [])
    assert not changed.reused and changed.key != first.key
    assert pq.read_table(changed.uri).column("v").to_pylist() == [5, 7, 8, 9]


def test_declarations_are_checked():
    with pytest.raises(ValueError, match="params must be JSON"):
        Pass(name="x", inputs=("side",), fn=above, partitioning=Parts(column="part", parts=1),
             output=Output(schema=OUT), params={"floor": object()})
    with pytest.raises(ValueError, match="sort_by"):
        Output(schema=OUT, sort_by=("nope",))
    with pytest.raises(ValueError, match="neither an input"):
        PassExecutor("/tmp/unused", None, inputs={}).run(_plan(1))


def doubled(t: pa.Table) -> pa.Table:
    return pa.table({"v": pa.compute.multiply(t.column("v"), 2)})


def _chain(dest: str, seen: list):
    """Keeps the values above 4; doubles them only when there are any, then drops the
    first artifact and publishes the second with a note of its rows."""
    done = yield _plan(4)
    seen.append(done["above"].rows)
    if not done["above"].rows:
        return None
    done = yield [Pass(name="doubled", inputs=("above",), fn=doubled, partitioning=Blocks(), output=Output())]
    yield [Discard(name="above"),
           Publish(name="out", dest=dest, folders={"vals": "doubled"}, texts={"meta.json": f"{done['doubled'].rows}"})]
    return "doubled"


def test_a_generator_plan_follows_its_artifacts_discards_and_publishes(tmp_path):
    files = [_write(tmp_path / "a.parquet", [5, 1, 9])]
    root, dest = str(tmp_path / "work"), tmp_path / "published"
    (dest / "old").mkdir(parents=True)   # the folder published is replaced whole
    seen: list = []
    timings: list = []
    out = run_passes(_chain(str(dest), seen), root, None, inputs={"nums": files}, local=True, timings=timings)
    assert out.decisions == "doubled" and seen == [2] and "above" not in out.artifacts
    assert not any(p.name.startswith("above-") for p in (tmp_path / "work").iterdir())   # discarded
    assert sorted(p.name for p in dest.iterdir()) == ["meta.json", "vals"]
    assert (dest / "meta.json").read_text() == "2"
    assert sorted(pq.read_table(dest / "vals").column("v").to_pylist()) == [10, 18]
    assert [(t["pass"], t["rows"]) for t in timings] == [("above", 2), ("doubled", 2), ("out", 2)]

    files = [_write(tmp_path / "a.parquet", [1, 2])]   # nothing above 4: the plan stops, decides nothing
    out = run_passes(_chain(str(tmp_path / "unused"), seen), root, None, inputs={"nums": files}, local=True)
    assert out.decisions is None and seen == [2, 0] and not (tmp_path / "unused").exists()
