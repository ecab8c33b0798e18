"""A toy global stage: of the documents that share a URL, keep the longest."""

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from datapipe import fs
from datapipe import schema as S
from datapipe.stage import GlobalStage, StageConfig


@dataclass(kw_only=True, frozen=True)
class LongestPerUrlConfig(StageConfig):
    pass


class LongestPerUrl(GlobalStage):
    """Drops every document whose URL a longer one has (ties: the first in read order
    stays) as ``longest_per_url:shorter``, with the kept document's id as detail."""

    name = "longest_per_url"
    Config = LongestPerUrlConfig
    reads = (S.TEXT, S.URL)

    def side(self, batch: pa.Table) -> pa.Table:
        # in each split's task: one compact row per document, never the text
        return pa.table({"id": batch.column(S.ID), "url": batch.column(S.URL),
                         "chars": pc.utf8_length(batch.column(S.TEXT))})

    def decide(self, side: list[str], ctx) -> str | None:
        # once, on the driver, over every split's side file (the engine appended _split, _row)
        tables = []
        for uri in side:
            fsys, path = fs.Location(uri, ctx.storage).filesystem()
            tables.append(pq.read_table(path, filesystem=fsys))
        t = pa.concat_tables(tables)
        t = t.filter(pc.is_valid(t.column("url")))
        t = t.sort_by([("url", "ascending"), ("chars", "descending"), ("_split", "ascending"), ("_row", "ascending")])
        n = t.num_rows
        first = np.r_[True, pc.not_equal(t.column("url").slice(1), t.column("url").slice(0, max(n - 1, 0)))
                      .to_numpy(zero_copy_only=False)] if n else np.zeros(0, bool)
        kept_at = np.maximum.accumulate(np.where(first, np.arange(n), 0))   # each row's group's longest
        drop = pa.array(np.flatnonzero(~first))
        ctx.report["removed"] = len(drop)
        if not len(drop):
            return None
        decisions = pa.table({"_split": t.column("_split").take(drop), "_row": t.column("_row").take(drop),
                              "reason": pa.array(["shorter"] * len(drop), pa.string()),
                              "detail": t.column("id").take(pa.array(kept_at[np.flatnonzero(~first)]))})
        out = ctx.work.join("decisions.parquet")
        with out.open_write() as f:   # atomic, on a local disk or an object store alike
            pq.write_table(decisions.sort_by([("_split", "ascending"), ("_row", "ascending")]), f)
        return out.uri
