"""A toy global stage: of the documents that share a URL, keep the longest."""

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe import schema as S
from datapipe.passes import SIDE, Hash, Output, Pass
from datapipe.stage import GlobalStage, StageConfig


@dataclass(kw_only=True, frozen=True)
class LongestPerUrlConfig(StageConfig):
    parts: int = 1               # partitions of the side rows (by URL) the first pass runs on
    rows_per_part: int = 50_000  # shared-URL rows per partition of the decisions pass
    local_rows: int = 100_000    # side rows up to which the passes run in one process

    def __post_init__(self) -> None:
        for name in ("parts", "rows_per_part"):
            if getattr(self, name) < 1:
                raise ValueError(f"longest_per_url: {name}={getattr(self, name)}; use a whole number >= 1")


class LongestPerUrl(GlobalStage):
    """Drops every document whose URL a longer one has (ties: the first in read order
    stays) as ``longest_per_url:shorter``, with the kept document's id as detail."""

    name = "longest_per_url"
    Config = LongestPerUrlConfig
    reads = (S.TEXT, S.URL)

    @property
    def local_rows(self) -> int:
        return self.config.local_rows

    def side(self, batch: pa.Table) -> pa.Table:
        # in each split's task: one compact row per document, never the text
        return pa.table({"id": batch.column(S.ID), "url": batch.column(S.URL),
                         "chars": pc.utf8_length(batch.column(S.TEXT))})

    def passes(self, ctx):
        # A generator: each `yield` hands the engine a batch of passes (as data) and gets
        # back their artifacts (URI, rows, key). The engine runs them where it chose
        # (ctx.local: one process), keys them by inputs and params (a restarted job reuses
        # them), commits and times them.
        # 1. the side rows whose URL another row has too: every side row (the engine
        #    appended _split, _row), routed by a hash of its URL, so that a URL's rows
        #    meet in one call of shared_urls
        done = yield [Pass(name="shared", inputs=(SIDE,), fn=shared_urls,
                           partitioning=Hash(column="url", parts=self.config.parts), output=Output())]
        shared = done["shared"].rows
        if not shared:
            return None   # every URL is unique: nothing decided, no second pass
        # 2. the decisions over those rows only, in as many partitions as their count calls
        #    for (one in one process); its output, sorted, is what the runner applies
        yield [Pass(name="decisions", inputs=("shared",), fn=shorter_ones,
                    partitioning=Hash(column="url", parts=ctx.partitions(shared, self.config.rows_per_part, 1)),
                    output=Output(schema=S.DECISIONS, sort_by=(S.SPLIT, S.ROW)))]
        return "decisions"


def shared_urls(t: pa.Table) -> pa.Table:
    """The rows of ``t`` whose URL another row has (every row of a URL is in ``t``)."""
    t = t.filter(pc.is_valid(t.column("url")))
    counts = t.group_by("url").aggregate([("url", "count")])
    shared = counts.filter(pc.greater(counts.column("url_count"), 1)).column("url")
    return t.filter(pc.is_in(t.column("url"), value_set=shared))


def shorter_ones(t: pa.Table) -> pa.Table:
    """The decisions for every URL whose rows are all in ``t``."""
    t = t.filter(pc.is_valid(t.column("url")))
    t = t.sort_by([("url", "ascending"), ("chars", "descending"), ("_split", "ascending"), ("_row", "ascending")])
    n = t.num_rows
    first = np.r_[True, pc.not_equal(t.column("url").slice(1), t.column("url").slice(0, max(n - 1, 0)))
                  .to_numpy(zero_copy_only=False)] if n else np.zeros(0, bool)
    kept_at = np.maximum.accumulate(np.where(first, np.arange(n), 0))   # each row's group's longest
    drop = pa.array(np.flatnonzero(~first))
    return pa.table({"_split": t.column("_split").take(drop), "_row": t.column("_row").take(drop),
                     "reason": pa.array(["shorter"] * len(drop), pa.string()),
                     "detail": t.column("id").take(pa.array(kept_at[np.flatnonzero(~first)]))}, schema=S.DECISIONS)
