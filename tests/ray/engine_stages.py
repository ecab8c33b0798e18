"""Small real stages for the engine tests: an exact-duplicate GlobalStage (side rows,
one declared pass), an annotator with a ``setup()`` (so it runs in actors) and a
filter that takes its time (so a test can interrupt a job mid-way).

``register()`` adds them to the stage registry of this process and ships this module to
Ray workers by value; ``python tests/ray/engine_stages.py <datapipe args>`` runs the
CLI with them registered (for driver-kill tests)."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from datapipe import schema as S
from datapipe.passes import SIDE, Hash, Output, Pass
from datapipe.stage import (
    AnnotatorStage,
    Compute,
    FilterStage,
    GlobalStage,
    StageConfig,
)


@dataclass(kw_only=True, frozen=True)
class NoConfig(StageConfig):
    pass


@dataclass(kw_only=True, frozen=True)
class SlowConfig(StageConfig):
    seconds: float = 0.0


class ExactDup(GlobalStage):
    """Keeps the first copy (in split order) of every exact text; the others are
    ``exact_dup:exact`` with the kept id as detail."""

    name = "exact_dup"
    Config = NoConfig

    def side(self, batch: pa.Table) -> pa.Table:
        h = [xxhash.xxh3_64_intdigest(t.encode()) for t in batch.column(S.TEXT).to_pylist()]
        return pa.table({"id": batch.column(S.ID), "h": pa.array(h, pa.uint64())})

    @property
    def local_rows(self) -> int:
        return 10_000   # the engine tests' few rows: in the driver, no Ray Data start-up

    def passes(self, ctx) -> list[Pass]:
        return [Pass(name="decisions", inputs=(SIDE,), fn=later_copies, partitioning=Hash(column="h", parts=1),
                     output=Output(schema=S.DECISIONS, sort_by=(S.SPLIT, S.ROW)))]


def later_copies(t: pa.Table) -> pa.Table:
    """Every copy of a text after its first in (split, row) order, naming the first."""
    t = t.sort_by([("_split", "ascending"), ("_row", "ascending")])
    first: dict[int, str] = {}
    rows: dict[str, list] = {"_split": [], "_row": [], "reason": [], "detail": []}
    for split, row, h, doc in zip(*(t.column(c).to_pylist() for c in ("_split", "_row", "h", "id"))):
        if h in first:
            for k, v in zip(rows, (split, row, "exact", first[h])):
                rows[k].append(v)
        else:
            first[h] = doc
    return pa.table(rows, schema=S.DECISIONS)


class Tagger(AnnotatorStage):
    """Adds ``n_words``; has a setup() and declares actors, so the runner gives it actors."""

    name = "tagger"
    Config = NoConfig
    compute = Compute(kind="actor")
    adds = {"n_words": pa.int64()}

    def setup(self) -> None:
        self.loaded_at = time.time()  # stands in for loading a model

    def annotate(self, batch):
        return {"n_words": pc.list_value_length(pc.utf8_split_whitespace(batch.column(S.TEXT)))}


class Slow(FilterStage):
    """Keeps everything, after sleeping ``seconds`` per batch."""

    name = "slow"
    Config = SlowConfig

    def keep(self, batch):
        time.sleep(self.config.seconds)
        return np.ones(batch.num_rows, bool), [None] * batch.num_rows


def register() -> None:
    from ray import cloudpickle

    import stages

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    for cls in (ExactDup, Tagger, Slow):
        stages.REGISTRY[cls.name] = cls


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    register()
    from datapipe.cli import main

    sys.exit(main(sys.argv[1:]))
