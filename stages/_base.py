"""A stage kind the base classes in :mod:`datapipe.stage` do not offer yet: one that
rewrites ``text`` *and* drops documents with its own reasons in the same pass.

``extract`` needs it (its output text is new, and a page can be rejected as
``too_large``/``timeout``/``not_html``), and so does ``c4`` (line-level cleaning plus
document-level rules such as ``lorem_ipsum``). A :class:`~datapipe.stage.FilterStage`
cannot rewrite text and a :class:`~datapipe.stage.FormatterStage` can only drop as
``<stage>:empty``; :class:`~datapipe.stage.BatchStage` already supports both at once,
so this class only routes one hot method, :meth:`RewriteFilterStage.rewrite`, to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa

from datapipe.stage import BatchStage


@dataclass
class Rewrite:
    """What :meth:`RewriteFilterStage.rewrite` returns for a batch of alive rows.

    ``texts``: the new text per row (dropped rows' values are ignored: rejects keep their
    input text); ``keep``/``reasons``: as for ``FilterStage.keep`` (a kept row whose new
    text is empty is dropped as ``<stage>:empty``); ``changes``: per-row counters summed
    into the stage stats; ``columns``: values for the stage's other ``adds`` columns."""

    texts: Any
    keep: np.ndarray
    reasons: Sequence[str | None]
    changes: Mapping[str, np.ndarray] = field(default_factory=dict)
    columns: Mapping[str, Any] = field(default_factory=dict)


class RewriteFilterStage(BatchStage):
    """Rewrites ``text`` and keeps or drops each document with a reason."""

    def rewrite(self, batch: pa.Table) -> Rewrite:
        raise NotImplementedError

    def _run(self, live: pa.Table):
        r = self.rewrite(live)
        keep = np.asarray(r.keep, dtype=bool)
        return (dict(r.columns), keep, list(r.reasons), r.texts,
                {k: np.asarray(v) for k, v in r.changes.items()})
