"""Stages from Python: on a table or DataFrame, or inside your own Ray Data pipeline.

```python
import datapipe

gq = datapipe.stage("gopher_quality", min_words=50)
kept, rejects = gq(df)                       # pandas in, pandas out (or pyarrow.Table)
rejects[["text", "reject_reason", "reject_detail"]]

ds = ray.data.read_parquet("s3://bucket/docs/")
ds = ds.map_batches(gq.udf(), batch_format="pyarrow")                   # kept rows only
ds = ds.map_batches(datapipe.StageUDF, fn_constructor_kwargs={"stage": "langid", "config": {}},
                    compute=ray.data.ActorPoolStrategy(size=2), batch_format="pyarrow")

datapipe.stages()                            # ['c4', 'dedup', 'extract', ...]
```

Input needs only a ``text`` column (stages that read markup, like ``extract``, a
``raw`` column of bytes; the table lists what each stage reads). Every other column is
carried through untouched. ``id`` and ``source`` are used when present (``source``
matters for stages given ``sources=[...]``); otherwise the row number and ``"python"``
stand in for them and are not returned.

What comes back: the kept rows, and the dropped rows with ``reject_stage``,
``reject_reason`` (``<stage>:<rule>``) and ``reject_detail`` (the value that failed),
in the input's type. Stages that annotate (``langid``: ``language``, ``language_score``)
add their columns to both. Global stages (``dedup``) need the whole corpus and the
runner's work folder: run them in a job, not here.

Memory and time: a call holds its input and one copy of the output; heavy models load
once per :class:`Stage` object (once per Ray actor with ``StageUDF``), so reuse the
object across calls.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe import schema as S
from datapipe.config import build
from datapipe.errors import SpecError
from datapipe.stage import GlobalStage, Stage

#: reject columns as the API (and the written rejects) name them
REJECT_COLUMNS = {S.REJECT_STAGE: "reject_stage", S.REJECT_REASON: "reject_reason", S.REJECT_DETAIL: "reject_detail"}
_DEFAULT_SOURCE = "python"


class StageResult(NamedTuple):
    """What a stage did to a table: the kept rows and the dropped ones (with reasons)."""

    kept: Any
    rejects: Any


def stages() -> list[str]:
    """The names of the registered stages (what a job spec's ``stages:`` accepts)."""
    from datapipe.plugins import stage_registry

    return sorted(stage_registry())


def stage(name: str, /, *, sources: list[str] | None = None, **config: Any) -> "StageRunner":
    """The stage registered as ``name`` with ``config`` (its config dataclass's fields,
    checked as in a job spec), ready to run on tables. ``sources``: apply only to rows
    whose ``source`` column is one of these (others pass through)."""
    from datapipe.plugins import stage_class, stage_registry

    cls = stage_class(stage_registry(), name, where="datapipe.stage")
    if issubclass(cls, GlobalStage):
        raise SpecError(f"datapipe.stage: {name!r} is a global stage (it needs the whole corpus and a work folder); "
                        "run it in a job spec with `datapipe run`")
    cfg = build(cls.Config, config, where=f"datapipe.stage({name!r})")
    return StageRunner(cls(cfg, sources=frozenset(sources) if sources is not None else None))


_stage_runner = stage   # StageUDF's ``stage`` argument shadows the function's name


class StageRunner:
    """One configured stage; call it on a ``pyarrow.Table`` or pandas ``DataFrame``."""

    def __init__(self, stage: Stage) -> None:
        self.stage = stage

    @property
    def name(self) -> str:
        return self.stage.name

    def __repr__(self) -> str:
        return f"datapipe.stage({self.stage!r})"

    def __call__(self, data: Any) -> StageResult:
        table, to_user = _as_table(data)
        marked, added = self._process(table)
        alive = pc.is_null(marked.column(S.REJECT_REASON))
        kept = marked.filter(alive).drop_columns(list(REJECT_COLUMNS) + added)
        rejects = marked.filter(pc.invert(alive)).drop_columns(added).rename_columns(
            [REJECT_COLUMNS.get(c, c) for c in marked.drop_columns(added).column_names])
        return StageResult(to_user(kept), to_user(rejects))

    def mark(self, data: Any) -> Any:
        """Every row, with ``reject_stage``/``reject_reason``/``reject_detail`` (null
        for kept rows): for pipelines that route rejects themselves."""
        table, to_user = _as_table(data)
        marked, added = self._process(table)
        marked = marked.drop_columns(added)
        return to_user(marked.rename_columns([REJECT_COLUMNS.get(c, c) for c in marked.column_names]))

    def udf(self, *, rejects: str = "drop") -> "StageUDF":
        """A callable for ``Dataset.map_batches``: ``rejects="drop"`` returns the kept
        rows, ``"mark"`` every row with the reject columns."""
        return StageUDF(runner=self, rejects=rejects)

    def _process(self, table: pa.Table) -> tuple[pa.Table, list[str]]:
        """The table with the internal columns the stage needs, processed; and the names
        of the columns we added (to drop again)."""
        missing = [c for c in self.stage.reads if c not in table.column_names and c not in (S.ID, S.SOURCE)]
        if missing:
            raise ValueError(f"stage {self.stage.name!r} reads column(s) {missing}; the table has {table.column_names}")
        added = []
        n = table.num_rows
        table = _base_types(table)
        for col, default in ((S.ID, lambda: pa.array([str(i) for i in range(n)], pa.string())),
                             (S.SOURCE, lambda: pa.array([_DEFAULT_SOURCE] * n, pa.string()))):
            if col not in table.column_names:
                table = table.append_column(col, default())
                added.append(col)
        for col in (S.TEXT, S.RAW, S.REJECT_STAGE, S.REJECT_REASON, S.REJECT_DETAIL):
            if col not in table.column_names:
                table = table.append_column(S.BASE_SCHEMA.field(col), pa.nulls(n, S.BASE_SCHEMA.field(col).type))
                added.append(col)
        # a placeholder the stage fills (extract's text) is its output: kept, not dropped
        added = [c for c in added if c not in REJECT_COLUMNS and c not in self.stage.adds]
        out, _ = self.stage.process(table)
        return out, added


class StageUDF:
    """A stage as a Ray Data UDF. Use an instance (``runner.udf()``) for tasks, or the
    class with ``fn_constructor_kwargs={"stage": name, "config": {...}}`` and an
    ``ActorPoolStrategy`` so each actor loads the stage's model once."""

    def __init__(self, stage: str | None = None, config: dict | None = None, *, sources: list[str] | None = None,
                 rejects: str = "drop", runner: StageRunner | None = None) -> None:
        if rejects not in ("drop", "mark"):
            raise ValueError(f"rejects must be 'drop' or 'mark', got {rejects!r}")
        if runner is None:
            if stage is None:
                raise ValueError("StageUDF needs a stage name (or a runner from datapipe.stage(...))")
            runner = _stage_runner(stage, sources=sources, **(config or {}))
        self.runner = runner
        self.rejects = rejects

    def __call__(self, batch: Any) -> Any:
        if self.rejects == "mark":
            return self.runner.mark(batch)
        return self.runner(batch).kept


def _base_types(table: pa.Table) -> pa.Table:
    """The base columns (``text``, ``raw``, ``id``, ...) in the types the stages take:
    pandas gives ``large_string``/``large_binary``, an all-None column arrives as
    Arrow's ``null`` type, which no string kernel accepts, and HTML given as ``str``
    is taken as its UTF-8 bytes."""
    for i, name in enumerate(table.column_names):
        if name not in S.BASE_COLUMNS:
            continue
        want, got = S.BASE_SCHEMA.field(name).type, table.schema.field(i).type
        if got == want:
            continue
        stringy = pa.types.is_string(got) or pa.types.is_large_string(got)
        if pa.types.is_null(got) or stringy or (pa.types.is_large_binary(got) and pa.types.is_binary(want)):
            table = table.set_column(i, pa.field(name, want), table.column(name).cast(want))   # str raw: UTF-8
    return table


def _as_table(data: Any):
    """``data`` as a pyarrow Table, and how to turn a result back into its type."""
    if isinstance(data, pa.Table):
        return data, lambda t: t
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data]), lambda t: t
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        pd = None
    if pd is not None and isinstance(data, pd.DataFrame):
        return pa.Table.from_pandas(data, preserve_index=False), lambda t: t.to_pandas()
    if isinstance(data, dict):   # Ray Data's "numpy" batch format
        return (pa.table({k: list(v) if isinstance(v, np.ndarray) and v.dtype == object else v for k, v in data.items()}),
                lambda t: {c: t.column(c).to_numpy(zero_copy_only=False) for c in t.column_names})
    raise TypeError(f"a stage runs on a pyarrow.Table, pandas.DataFrame or dict of columns, got {type(data).__name__}")
