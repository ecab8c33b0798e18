"""The executor of declared passes: a committed pass is keyed by its declaration and its
inputs' contents, reused when they come again and run again when either changes."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datapipe.passes import Output, Parts, Pass, PassExecutor

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
