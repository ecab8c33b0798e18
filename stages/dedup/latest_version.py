"""A global stage: of the documents that share a key, keep the one with the highest version.

arXiv ships a paper as several versions (``2101.00001v1``, ``v2``), possibly in different
bulk tars; the ``arxiv`` reader can only compare versions inside one input file, because
the engine reads splits independently. This stage decides across the whole corpus, on
the global-stage passes contract (docs/engine.md "Adding a global stage"): each split's
task writes one compact side row per document (id, key, version; never text), and one
pass, hash-partitioned by the key, keeps the highest version of each key.

``key`` and ``version`` name a base column (``url``, ``source_id``...) or else a field of
the ``metadata`` JSON; the defaults (``arxiv_id``, ``version``) are the fields the
``arxiv`` reader writes. A version is an integer (``"v2"`` and ``"2"`` read as 2); a
missing or unreadable version counts as 0. A document without the key takes no part.

Rejects: ``latest_version:older`` (a higher version of the key is kept) and
``latest_version:same_version`` (the same version was read twice; the first in read
order, i.e. by split then row, stays); the detail is the kept document's id. A version
that does not fit 64 bits (``1712.01076v99999999999999999999``: a forged or broken name,
no real arXiv version) is ``latest_version:bad_version``, whatever else the key has: it
neither wins over the real versions nor stops the job.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe import schema as S
from datapipe.passes import SIDE, Hash, Output, Pass
from datapipe.stage import GlobalStage, StageConfig

_BASE = frozenset(f.name for f in S.BASE_FIELDS) - {S.TEXT, S.RAW, S.METADATA}
_VERSION_RE = re.compile(r"\s*[vV]?(\d+)\s*$")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass(kw_only=True, frozen=True)
class LatestVersionConfig(StageConfig):
    #: what identifies a work across versions: a base column or a metadata JSON field
    key: str = "arxiv_id"
    #: its version: a base column or a metadata JSON field (an integer, or ``v<integer>``)
    version: str = "version"
    #: partitions of the side rows (by key) the decisions pass runs on
    parts: int = 1

    def __post_init__(self) -> None:
        for field_name in ("key", "version"):
            value = getattr(self, field_name)
            if not isinstance(value, str) or not value or value in (S.TEXT, S.RAW, S.METADATA):
                raise ValueError(f"latest_version: {field_name}={value!r}; name a column such as 'url' or a "
                                 "metadata field such as 'arxiv_id' / 'version'")
        if self.key == self.version:
            raise ValueError(f"latest_version: key and version are both {self.key!r}; give two different fields")
        if not isinstance(self.parts, int) or self.parts < 1:
            raise ValueError(f"latest_version: parts={self.parts!r}; use a whole number >= 1")

    @property
    def reads(self) -> tuple[str, ...]:
        """The columns the side rows come from (checked against each source by the spec)."""
        cols = tuple(dict.fromkeys(c if c in _BASE else S.METADATA for c in (self.key, self.version)))
        return (S.ID,) + tuple(c for c in cols if c != S.ID)


def _field(batch: pa.Table, name: str, meta: list[dict] | None) -> list:
    if name in _BASE and name in batch.column_names:
        return batch.column(name).to_pylist()
    return [m.get(name) if isinstance(m, dict) else None for m in meta]


def _version(v) -> int | None:
    """The version as an integer (0: missing or unreadable); None: one past 64 bits."""
    if isinstance(v, bool) or v is None:
        return 0
    if isinstance(v, int):
        return v if _INT64_MIN <= v <= _INT64_MAX else None
    m = _VERSION_RE.match(str(v))
    if not m:
        return 0
    digits = m.group(1).lstrip("0") or "0"
    if len(digits) > 19:   # never turned into an int: past 64 bits (and past int()'s 4300 digits)
        return None
    n = int(digits)
    return n if n <= _INT64_MAX else None


class LatestVersion(GlobalStage):
    """Keeps the highest version of each key across every input file (see the module
    docstring); the others are ``latest_version:older`` / ``same_version`` rejects naming
    the kept document's id."""

    name = "latest_version"
    Config = LatestVersionConfig
    reads = ()   # config.reads: the key's and version's columns

    def side(self, batch: pa.Table) -> pa.Table:
        cfg = self.config
        meta = None
        if not (cfg.key in _BASE and cfg.version in _BASE):
            meta = []
            for raw in (batch.column(S.METADATA).to_pylist() if S.METADATA in batch.column_names
                        else [None] * batch.num_rows):
                try:
                    meta.append(json.loads(raw) if raw else None)
                except ValueError:
                    meta.append(None)   # unreadable metadata: no key, takes no part
        keys = [None if k is None else str(k) for k in _field(batch, cfg.key, meta)]
        versions = [_version(v) for v in _field(batch, cfg.version, meta)]
        return pa.table({"id": batch.column(S.ID), "key": pa.array(keys, pa.string()),
                         "version": pa.array(versions, pa.int64())})

    def passes(self, ctx) -> list[Pass]:
        return [Pass(name="decisions", inputs=(SIDE,), fn=older_versions,
                     partitioning=Hash(column="key", parts=self.config.parts),
                     output=Output(schema=S.DECISIONS, sort_by=(S.SPLIT, S.ROW)))]


def older_versions(t: pa.Table) -> pa.Table:
    """The decisions for every key whose rows are all in ``t``: per key, the highest
    version (first by split, row on ties) stays; every other row is dropped. A row whose
    version did not fit 64 bits (null) is dropped as ``bad_version`` and takes no part."""
    t = t.filter(pc.is_valid(t.column("key")))
    bad = t.filter(pc.is_null(t.column("version")))
    t = t.filter(pc.is_valid(t.column("version")))
    t = t.sort_by([("key", "ascending"), ("version", "descending"), ("_split", "ascending"), ("_row", "ascending")])
    n = t.num_rows
    keys = t.column("key")
    first = np.r_[True, pc.not_equal(keys.slice(1), keys.slice(0, max(n - 1, 0)))
                  .to_numpy(zero_copy_only=False)] if n else np.zeros(0, bool)
    kept_at = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    drop = np.flatnonzero(~first)
    version = t.column("version").to_numpy(zero_copy_only=False)
    same = version[drop] == version[kept_at[drop]]
    reasons = np.where(same, "same_version", "older").tolist()
    out = pa.table({"_split": t.column("_split").take(pa.array(drop)), "_row": t.column("_row").take(pa.array(drop)),
                    "reason": pa.array(reasons, pa.string()),
                    "detail": t.column("id").take(pa.array(kept_at[drop]))}, schema=S.DECISIONS)
    if not bad.num_rows:
        return out
    bad = pa.table({"_split": bad.column("_split"), "_row": bad.column("_row"),
                    "reason": pa.array(["bad_version"] * bad.num_rows, pa.string()),
                    "detail": pa.array(["the version does not fit 64 bits"] * bad.num_rows, pa.string())},
                   schema=S.DECISIONS)
    return pa.concat_tables([out, bad]).sort_by([("_split", "ascending"), ("_row", "ascending")])
