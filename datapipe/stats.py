"""Stats as data: per-stage, per-source counters that travel with the work.

Every split's task returns its own counters (``{stage: {source: BatchStats dict}}``) in
its small result row and in its done-record; the driver adds them up once at the end.
Nothing is sent anywhere while a task runs, so a retried task (whose failed attempt
returned nothing) or a lost node can neither double-count nor lose a count: the counts
of a split are exactly those of the attempt whose files were kept.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from datapipe import schema as S
from datapipe.stage import DROPS_BY, BatchStats

#: ``{stage: {source: BatchStats}}``
SplitStats = dict[str, dict[str, BatchStats]]


def add(into: SplitStats, stage: str, per_source: Mapping[str, BatchStats]) -> None:
    """Add one batch's per-source stats of ``stage`` into ``into``."""
    by_source = into.setdefault(stage, {})
    for src, st in per_source.items():
        by_source.setdefault(src, BatchStats()).merge(st)


def to_dicts(stats: SplitStats) -> dict[str, dict[str, dict[str, Any]]]:
    """JSON-ready view (what a task returns and a done-record stores)."""
    return {stage: {src: st.to_dict() for src, st in sorted(by.items())} for stage, by in stats.items()}


def merge_dicts(parts: Iterable[Mapping[str, Mapping[str, Mapping[str, Any]]]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Sum many splits' stats (as :func:`to_dicts` made them) into one."""
    total: SplitStats = {}
    for part in parts:
        for stage, by in part.items():
            add(total, stage, {src: BatchStats.from_dict(d) for src, d in by.items()})
    return to_dicts(total)


def tally_marks(table: pa.Table, stage: str, *, count_raw: bool) -> dict[str, BatchStats]:
    """Per-source stats of ``stage`` read off the reject marks: its input is every row
    still alive or dropped by it; bytes are text (plus raw markup when ``count_raw``);
    drops also by the :data:`~datapipe.stage.DROPS_BY` column where the table has it."""
    stats: dict[str, BatchStats] = {}
    nbytes = pc.fill_null(pc.binary_length(table.column(S.TEXT)), 0)
    if count_raw:
        nbytes = pc.add(nbytes, pc.fill_null(pc.binary_length(table.column(S.RAW)), 0))
    has_groups = DROPS_BY in table.column_names
    groups = table.column(DROPS_BY).to_pylist() if has_groups else [None] * table.num_rows
    for src, by, reason, nb, group in zip(table.column(S.SOURCE).to_pylist(), table.column(S.REJECT_STAGE).to_pylist(),
                                          table.column(S.REJECT_REASON).to_pylist(), nbytes.to_pylist(), groups):
        if reason is not None and by != stage:
            continue
        st = stats.setdefault(src, BatchStats())
        st.docs_in += 1
        st.bytes_in += nb
        if reason is None:
            st.docs_out += 1
            st.bytes_out += nb
        else:
            st.count_drop(reason, str(group or "(none)") if has_groups else None)
    return stats
