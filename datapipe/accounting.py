"""The accounting check: every document a stage received is passed on or dropped with a
reason, per stage and source, and the written files agree with the counters.

The driver adds up every split's stats (:func:`merged_stats`) and checks them with the
files written (:func:`check_accounting`); a run with a problem is not committed.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

from datapipe import stats as ST
from datapipe.stage import BatchStats


def merged_stats(records: Iterable[dict[str, Any]], global_seconds: dict[str, float]
                 ) -> dict[str, dict[str, dict[str, Any]]]:
    """Every split's stats added up, with each global stage's time on the driver
    (``global_seconds``) shared among its sources by documents in."""
    stats = ST.merge_dicts(r["stats"] for r in records)
    for name, seconds in global_seconds.items():
        for st in stats.get(name, {}).values():
            st["seconds"] += seconds * st["docs_in"] / max(1, sum(s["docs_in"] for s in stats[name].values()))
    return stats


def check_accounting(chain: list[str], stats: dict[str, dict[str, dict[str, Any]]], files: list[dict[str, Any]],
                     sources: list[str], applies: Callable[[str, str], bool] = lambda stage, src: True) -> list[str]:
    """Every problem found; empty when ``in == out + dropped`` holds everywhere and the
    written datasets agree with the stage counters."""
    problems = []
    written_docs: dict[str, int] = {}
    written_rejects: dict[tuple[str, str], int] = {}
    for f in files:
        if f["kind"] == "documents":
            written_docs[f["source"]] = written_docs.get(f["source"], 0) + f["rows"]
        else:
            for key, n in json.loads(f["reject_counts"]).items():
                stage = key.split("\t", 1)[0]
                written_rejects[(stage, f["source"])] = written_rejects.get((stage, f["source"]), 0) + n
    for src in sources:
        prev_out = None
        prev_name = None
        for name in chain:
            if not applies(name, src):
                if stats.get(name, {}).get(src):
                    problems.append(f"stage {name!r} counted documents of source {src!r}, which it does not apply to")
                continue
            st = BatchStats.from_dict(stats.get(name, {}).get(src, BatchStats().to_dict()))
            dropped = sum(st.dropped.values())
            if st.docs_in != st.docs_out + dropped:
                problems.append(f"stage {name!r}, source {src!r}: in ({st.docs_in}) != out ({st.docs_out}) + dropped ({dropped})")
            if prev_out is not None and st.docs_in != prev_out:
                problems.append(f"source {src!r}: stage {prev_name!r} let {prev_out} documents through but "
                                f"stage {name!r} received {st.docs_in}")
            if written_rejects.get((name, src), 0) != dropped:
                problems.append(f"stage {name!r}, source {src!r}: counted {dropped} drops but "
                                f"{written_rejects.get((name, src), 0)} rejects were written")
            prev_out, prev_name = st.docs_out, name
        if written_docs.get(src, 0) != (prev_out or 0):
            problems.append(f"source {src!r}: the last stage let {prev_out} documents through but "
                            f"{written_docs.get(src, 0)} were written")
    extra = {stage for stage, _ in written_rejects} - set(chain)
    if extra:
        problems.append(f"rejects written by unknown stage(s) {sorted(extra)}")
    return problems
