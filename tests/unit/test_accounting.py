"""The accounting check on hand-made split records: what balances passes, each kind of
imbalance is named, and a global stage's driver time is shared by documents in."""

from __future__ import annotations

import json

from datapipe.accounting import check_accounting, merged_stats
from datapipe.stage import BatchStats

CHAIN = ["read", "langid"]


def _stats(docs_in: int, docs_out: int, dropped: dict[str, int], seconds: float = 0.0) -> dict:
    return BatchStats(docs_in=docs_in, docs_out=docs_out, dropped=dropped, seconds=seconds).to_dict()


def _split(read_in: int, langid_drops: int, *, source: str = "web") -> dict:
    """One split's record: ``read`` passes everything, ``langid`` drops ``langid_drops``."""
    kept = read_in - langid_drops
    return {"stats": {"read": {source: _stats(read_in, read_in, {})},
                      "langid": {source: _stats(read_in, kept, {"language": langid_drops} if langid_drops else {})}},
            "files": [{"kind": "documents", "source": source, "rows": kept},
                      {"kind": "rejects", "source": source, "rows": langid_drops,
                       "reject_counts": json.dumps({"langid\tlanguage": langid_drops})}]}


def _check(records: list[dict], chain: list[str] = CHAIN) -> list[str]:
    stats = merged_stats(records, {})
    return check_accounting(chain, stats, [f for r in records for f in r["files"]], ["web"])


def test_splits_that_balance_pass_and_are_added_up():
    records = [_split(10, 3), _split(5, 0)]
    assert _check(records) == []
    assert merged_stats(records, {})["langid"]["web"]["docs_out"] == 12


def test_each_imbalance_is_named():
    lost = _split(10, 3)
    lost["stats"]["langid"]["web"]["docs_out"] = 6          # one document neither kept nor dropped
    problems = _check([lost])
    assert any("stage 'langid', source 'web': in (10) != out (6) + dropped (3)" in p for p in problems)
    assert any("the last stage let 6 documents through but 7 were written" in p for p in problems)

    unwritten = _split(10, 3)
    unwritten["files"][1]["reject_counts"] = json.dumps({"langid\tlanguage": 2})
    assert _check([unwritten]) == ["stage 'langid', source 'web': counted 3 drops but 2 rejects were written"]

    gap = _split(10, 0)
    gap["stats"]["read"]["web"] = _stats(11, 11, {})         # read let 11 through, langid got 10
    assert any("stage 'read' let 11 documents through but stage 'langid' received 10" in p for p in _check([gap]))

    stranger = _split(10, 3)
    stranger["files"][1]["reject_counts"] = json.dumps({"langid\tlanguage": 3, "dedup\tcopy": 1})
    assert _check([stranger]) == ["rejects written by unknown stage(s) ['dedup']"]


def test_a_stage_counting_a_source_it_does_not_apply_to_is_a_problem():
    records = [_split(4, 1)]
    stats = merged_stats(records, {})
    files = [f for r in records for f in r["files"]]
    problems = check_accounting(CHAIN, stats, files, ["web"], lambda stage, src: stage != "langid")
    assert "stage 'langid' counted documents of source 'web', which it does not apply to" in problems


def test_a_global_stages_driver_time_is_shared_by_documents_in():
    records = [{"stats": {"dedup": {"a": _stats(30, 30, {}, 1.0), "b": _stats(10, 10, {})}}}]
    stats = merged_stats(records, {"dedup": 4.0})
    assert stats["dedup"]["a"]["seconds"] == 1.0 + 3.0
    assert stats["dedup"]["b"]["seconds"] == 1.0
