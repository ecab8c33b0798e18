"""From per-rule failure masks to a filter's verdicts: the keep mask, the reject reason of
each dropped document (``rule|value``, the first rule it failed) and the counters.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def fmt(value: float) -> str:
    """Compact number for reject details."""
    if isinstance(value, (int, np.integer)) or float(value).is_integer():
        return str(int(value))
    return f"{float(value):.4g}"


def first_failure(fails: Sequence[tuple], n: int) -> tuple[np.ndarray, list[str | None], dict[str, np.ndarray]]:
    """Keep mask, reasons and counters from per-rule failure masks, checked in the given
    order: a document dropped by an earlier rule is reported under that rule, with the
    measured value as detail (``"mean_word_length|2.5"``).

    An entry may carry a fourth element, a mask of the documents the rule could not judge
    (their language has no settings for it): those are never failed by it, and the ones
    that reached the rule are counted as ``<rule>_unsupported_language``."""
    keep = np.ones(n, dtype=bool)
    reasons: list[str | None] = [None] * n
    counters: dict[str, np.ndarray] = {}
    for entry in fails:
        rule, failed, value = entry[:3]
        if len(entry) > 3 and entry[3] is not None:
            skipped = np.asarray(entry[3], dtype=bool)
            failed = failed & ~skipped
            key = f"{rule}_unsupported_language"
            counters[key] = counters.get(key, np.zeros(n, dtype=np.int64)) + (skipped & keep)
        new = failed & keep
        for i in np.flatnonzero(new):
            reasons[i] = f"{rule}|{fmt(value[i])}"
        keep &= ~failed
    return keep, reasons, counters
