"""A filter may hand its reasons to the engine as Arrow (``datapipe.stage.Reasons``):
the marks, details and stats are the same as from the ``"rule|detail"`` strings."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from datapipe import schema as S
from datapipe.stage import FilterStage, Reasons, StageConfig

TEXTS = ["one", "two words", "", "three words here", "four", "a b c d e", "six six"]


def _keep(batch: pa.Table) -> tuple[np.ndarray, list[str], list[str | None]]:
    words = pc.list_value_length(pc.utf8_split_whitespace(batch.column(S.TEXT))).to_numpy(zero_copy_only=False)
    keep = words % 2 == 0
    rules = ["odd" if w > 1 else "" for w in words[~keep]]            # "" stands for no rule
    details = [str(w) if w > 3 else "" for w in words[~keep]]          # "" stands for no detail
    return keep, rules, details


class AsStrings(FilterStage):
    name = "words"
    Config = StageConfig

    def keep(self, batch):
        return _as_strings(batch)


class AsArrow(FilterStage):
    name = "words"
    Config = StageConfig

    def keep(self, batch):
        keep, rules, details = _keep(batch)
        return keep, Reasons(pa.array(rules, pa.string()), pa.array(details, pa.string()))


def _batch(texts: list[str], rejected: int | None = None) -> pa.Table:
    n = len(texts)
    reason = [None] * n
    if rejected is not None:
        reason[rejected] = "earlier:rule"
    return pa.table({S.ID: [str(i) for i in range(n)], S.SOURCE: ["a", "b"] * (n // 2) + ["a"] * (n % 2),
                     S.TEXT: texts, S.REJECT_STAGE: [r and "earlier" for r in reason], S.REJECT_REASON: reason,
                     S.REJECT_DETAIL: pa.nulls(n, pa.string())})


def test_arrow_reasons_mark_and_count_as_strings_do():
    strings = AsStrings(StageConfig())
    for batch in (_batch(TEXTS), _batch(TEXTS, rejected=1)):
        a, a_stats = strings.process(batch)
        b, b_stats = AsArrow(StageConfig()).process(batch)
        assert a.equals(b)
        assert {k: v.dropped for k, v in a_stats.items()} == {k: v.dropped for k, v in b_stats.items()}
    out, _ = AsArrow(StageConfig()).process(_batch(TEXTS))
    got = list(zip(out.column(S.REJECT_REASON).to_pylist(), out.column(S.REJECT_DETAIL).to_pylist()))
    assert got[0] == ("words:unspecified", None)                    # one word: no rule given
    assert got[5] == ("words:odd", "5")
    assert got[1] == (None, None)


def test_arrow_reasons_of_the_wrong_length_are_refused():
    class Short(FilterStage):
        name = "short"
        Config = StageConfig

        def keep(self, batch):
            return np.zeros(batch.num_rows, dtype=bool), Reasons("gone", pa.array(["x"], pa.string()))

    with pytest.raises(AssertionError, match="1 reason details for 7 dropped documents"):
        Short(StageConfig()).process(_batch(TEXTS))


def _as_strings(batch: pa.Table):
    keep, rules, details = _keep(batch)
    pairs = iter(zip(rules, details))
    out = []
    for k in keep:
        if k:
            out.append(None)
            continue
        rule, detail = next(pairs)
        out.append(f"{rule}|{detail}" if detail else rule)
    return keep, out
