"""Quality levels: one or several numeric scores turned into an integer level
``quality_level`` (0 = worst .. ``levels - 1`` = best) by the corpus's quantiles, so a mix
can weight the best web text against the rest (``web@q4`` against ``web@q0``, with
``tokenize``'s ``by_level``) and a schedule can anneal onto the top levels.

A global stage on the declared-passes contract (docs/engine.md "Adding a global stage")
that *annotates*: its decisions set ``quality_level`` on the documents it saw and drop
only those it cannot place (``quality_levels:missing_score``, when ``missing: drop``).
``side()`` writes per document a 64-bit hash of its id, its group (its source, or one
pool) and each score, oriented so that higher is better (a ``lower`` score, such as
perplexity, is negated); never text.

One pass, ``decisions``, hash-partitioned by group: each group's documents are ordered
by their key (the score, or with several scores the mean of their percentile ranks,
Nemotron-CC's ensemble by rank), ties broken by the id's hash, and the document at rank
``r`` of ``n`` gets level ``r * levels // n``: exact quantiles, so each level holds
``n / levels`` documents rounded down or up, whatever the ties. The order is a function of
the scores and the ids, never of the splits, the blocks or the partitions. The boundaries
(each level's lowest and highest key) and counts per level reach the report
(``stage_reports.<name>.levels``). Details and memory: docs/mixes.md "Quality levels".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from datapipe import fs
from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.passes import SIDE, Hash, Input, Output, Pass
from datapipe.stage import GlobalStage, StageConfig

LEVEL = "quality_level"
DIRECTIONS = ("higher", "lower")
DECISIONS = pa.schema([*S.DECISIONS, (LEVEL, pa.int32()), ("group", pa.string()), ("key", pa.float64())])
_POOL = "(pooled)"


@dataclass(kw_only=True, frozen=True)
class QualityLevelsConfig(StageConfig):
    """``scores``: the numeric columns to cut on, each with its direction (``higher`` is
    better, as ``quality_score``; ``lower``, as ``perplexity``), e.g. ``{quality_score:
    higher}``; with several, the key is the (``weights``-weighted) mean of their
    percentile ranks. ``levels``: how many (2..1000). ``per``: ``source`` (each source's
    own quantiles: ``web@q4`` is web's best fifth) or ``pooled`` (one set of quantiles
    over every source the stage applies to). ``missing``: a document without a finite
    value of a score is dropped (``drop``: ``quality_levels:missing_score``) or ranked
    below every scored one (``lowest``). ``parts``: partitions of the groups (a group is
    never split; raise it with ``per: source`` and many sources). ``local_rows``: up to
    this many documents the pass runs in one process (the driver, or one Ray task)."""

    scores: Mapping[str, str]
    levels: int = 5
    per: Literal["source", "pooled"] = "source"
    weights: Mapping[str, float] = field(default_factory=dict)
    missing: Literal["drop", "lowest"] = "drop"
    parts: int = 1
    local_rows: int = 1_000_000

    def __post_init__(self) -> None:
        if not isinstance(self.scores, Mapping) or not self.scores:
            raise SpecError(f"quality_levels: scores={self.scores!r}; map each score column to its direction, "
                            "e.g. {quality_score: higher} or {quality_score: higher, perplexity: lower}")
        for col, d in self.scores.items():
            if not isinstance(col, str) or not col or col in (S.TEXT, S.RAW, S.METADATA, S.ID, S.SOURCE):
                raise SpecError(f"quality_levels: score column {col!r}; name a numeric column an earlier stage "
                                "adds, such as 'quality_score' or 'perplexity'")
            if d not in DIRECTIONS:
                raise SpecError(f"quality_levels: scores.{col}={d!r}; use 'higher' (higher is better, as "
                                "quality_score) or 'lower' (lower is better, as perplexity)")
        for col, w in self.weights.items():
            if col not in self.scores:
                raise SpecError(f"quality_levels: weights names {col!r}, which is not among scores "
                                f"{sorted(self.scores)}; weight the scores you listed")
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not (math.isfinite(w) and w > 0):
                raise SpecError(f"quality_levels: weights.{col}={w!r}; use a number > 0")
        if isinstance(self.levels, bool) or not isinstance(self.levels, int) or not 2 <= self.levels <= 1000:
            raise SpecError(f"quality_levels: levels={self.levels!r}; use a whole number from 2 to 1000 "
                            "(5 gives quintiles: q0 the worst fifth, q4 the best)")
        if self.per not in ("source", "pooled"):
            raise SpecError(f"quality_levels: per={self.per!r}; use 'source' (each source's own quantiles) "
                            "or 'pooled' (one set over every source the stage applies to)")
        if self.missing not in ("drop", "lowest"):
            raise SpecError(f"quality_levels: missing={self.missing!r}; use 'drop' or 'lowest'")
        if isinstance(self.parts, bool) or not isinstance(self.parts, int) or self.parts < 1:
            raise SpecError(f"quality_levels: parts={self.parts!r}; use a whole number >= 1")
        if isinstance(self.local_rows, bool) or not isinstance(self.local_rows, int) or self.local_rows < 0:
            raise SpecError(f"quality_levels: local_rows={self.local_rows!r}; use a whole number >= 0 "
                            "(0: always run the pass on Ray Data)")

    @property
    def reads(self) -> tuple[str, ...]:
        """The score columns (checked against each source's columns by the spec)."""
        return tuple(self.scores)


def _score_name(i: int) -> str:
    return f"s{i}"


class QualityLevels(GlobalStage):
    """Sets ``quality_level`` (0..levels-1, higher is better) on every document it sees,
    from the corpus quantiles of its scores (see the module docstring)."""

    name = "quality_levels"
    Config = QualityLevelsConfig
    reads = ()   # config.reads: the score columns
    adds = {LEVEL: pa.int32()}

    def side(self, batch: pa.Table) -> pa.Table:
        import xxhash

        cfg: QualityLevelsConfig = self.config
        h = xxhash.xxh3_64_intdigest
        ids = batch.column(S.ID).to_pylist()
        idh = np.fromiter((h(i.encode("utf-8", "surrogatepass")) for i in ids), np.uint64, len(ids))
        group = (batch.column(S.SOURCE) if cfg.per == "source"
                 else pa.array([_POOL] * batch.num_rows, pa.string()))
        cols: dict[str, Any] = {"idh": pa.array(idh.view(np.int64)), "group": group}
        for i, (col, direction) in enumerate(cfg.scores.items()):
            typ = batch.schema.field(col).type
            if not (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)):
                raise SpecError(f"quality_levels: score column {col!r} holds {typ}, not numbers; name a numeric "
                                "column such as 'quality_score' or 'perplexity'")
            v = pc.cast(batch.column(col), pa.float64()).to_numpy(zero_copy_only=False)
            v = np.where(np.isfinite(v), v, np.nan)   # null, NaN and inf: no score
            cols[_score_name(i)] = pa.array(-v if direction == "lower" else v, pa.float64(), mask=np.isnan(v))
        return pa.table(cols)

    @property
    def local_rows(self) -> int:
        return self.config.local_rows

    def passes(self, ctx) -> list[Pass]:
        cfg: QualityLevelsConfig = self.config
        names = [_score_name(i) for i in range(len(cfg.scores))]
        cols = list(cfg.scores)
        return [Pass(name="decisions", inputs=(Input(name=SIDE, columns=("idh", "group", "_split", "_row", *names)),),
                     fn=assign_levels, partitioning=Hash(column="group", parts=cfg.parts),
                     output=Output(schema=DECISIONS, sort_by=(S.SPLIT, S.ROW)),
                     params={"levels": cfg.levels, "scores": names, "columns": cols,
                             "weights": [float(cfg.weights.get(c, 1.0)) for c in cols],
                             "lower": [cfg.scores[c] == "lower" for c in cols], "missing": cfg.missing})]

    def after_passes(self, ctx, artifacts: Mapping[str, str]) -> None:
        cfg: QualityLevelsConfig = self.config
        files = [f for f in fs.list_files(artifacts["decisions"], ctx.storage) if f.endswith(".parquet")]
        t = pa.concat_tables([pq.read_table(fs.arrow_input(f, ctx.storage), columns=[LEVEL, "group", "key"])
                              for f in files]) if files else DECISIONS.empty_table().select([LEVEL, "group", "key"])
        ctx.report["levels"] = level_summary(t, levels=cfg.levels, per=cfg.per, scores=dict(cfg.scores),
                                             missing=cfg.missing)


def percentile_ranks(v: np.ndarray) -> np.ndarray:
    """Each value's mean rank among ``v`` (ties share the mean of their ranks) scaled to
    [0, 1]: 0 the lowest, 1 the highest; 0.5 for a single value. One sort."""
    n = len(v)
    if n <= 1:
        return np.full(n, 0.5)
    order = np.argsort(v, kind="stable")
    s = v[order]
    start = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])          # first position of each run of ties
    end = np.r_[start[1:], n]
    mean_rank = (start + end - 1) / 2 / (n - 1)
    out = np.empty(n, np.float64)
    out[order] = np.repeat(mean_rank, end - start)
    return out


def assign_levels(t: pa.Table, *, levels: int, scores: list[str], columns: list[str], weights: list[float],
                  lower: list[bool], missing: str) -> pa.Table:
    """The decisions for every group whose rows are all in ``t``: each scored row's level
    by its rank in its group (key, then id hash) and, with ``missing: drop``, a drop for
    each row lacking a score. ``key`` is the value cut on in the score's own units (a
    single score) or the mean percentile rank (several)."""
    if not t.num_rows:
        return DECISIONS.empty_table()
    out = []
    groups = t.column("group").combine_chunks()
    names = sorted(pc.unique(groups).to_pylist())
    for g in names:
        part = t if len(names) == 1 else t.filter(pc.equal(groups, g))
        out.append(_one_group(part, g, levels=levels, scores=scores, columns=columns, weights=weights,
                              lower=lower, missing=missing))
    return pa.concat_tables(out)


def _one_group(t: pa.Table, group: str, *, levels: int, scores: list[str], columns: list[str],
               weights: list[float], lower: list[bool], missing: str) -> pa.Table:
    vals = np.stack([t.column(s).to_numpy(zero_copy_only=False).astype(np.float64) for s in scores], axis=1)
    absent = np.isnan(vals).any(axis=1)
    split, row = t.column("_split").combine_chunks(), t.column("_row").to_numpy(zero_copy_only=False)
    parts = []
    if missing == "drop" and absent.any():
        idx = np.flatnonzero(absent)
        what = [", ".join(c for c, m in zip(columns, np.isnan(vals[i])) if m) for i in idx.tolist()]
        n = len(idx)
        parts.append(pa.table({"_split": split.take(pa.array(idx)), "_row": pa.array(row[idx]),
                               "reason": pa.array(["missing_score"] * n, pa.string()),
                               "detail": pa.array([f"no finite {w}" for w in what], pa.string()),
                               LEVEL: pa.nulls(n, pa.int32()), "group": pa.array([group] * n, pa.string()),
                               "key": pa.nulls(n, pa.float64())}, schema=DECISIONS))
        keep = np.flatnonzero(~absent)
        vals, absent, row = vals[keep], absent[keep], row[keep]
        split = split.take(pa.array(keep))
        idh = t.column("idh").to_numpy(zero_copy_only=False)[keep]
    else:
        idh = t.column("idh").to_numpy(zero_copy_only=False)
    n = len(row)
    if n:
        if len(scores) == 1:
            key = vals[:, 0]                      # oriented: higher is better; NaN: missing (lowest)
            report_key = -key if lower[0] else key
        else:
            w = np.asarray(weights, np.float64)
            ranks = np.stack([percentile_ranks(np.where(np.isnan(vals[:, j]), -np.inf, vals[:, j]))
                              for j in range(vals.shape[1])], axis=1)
            key = (ranks * w).sum(axis=1) / w.sum()
            report_key = key
        sort_key = np.where(np.isnan(key), -np.inf, key)
        uidh = idh.view(np.uint64)
        order = np.lexsort((uidh, sort_key))   # rank by (key, id hash)
        k, u = sort_key[order], uidh[order]
        if np.any((k[1:] == k[:-1]) & (u[1:] == u[:-1])):   # a (vanishingly rare) hash collision at a tie
            order = np.lexsort((row, _split_codes(split), uidh, sort_key))
        level = np.empty(n, np.int64)
        level[order] = np.arange(n, dtype=np.int64) * levels // n
        parts.append(pa.table({"_split": split, "_row": pa.array(row), "reason": pa.nulls(n, pa.string()),
                               "detail": pa.nulls(n, pa.string()), LEVEL: pa.array(level.astype(np.int32)),
                               "group": pa.repeat(group, n),
                               "key": pa.array(report_key, pa.float64(), mask=np.isnan(report_key))},
                              schema=DECISIONS))
    return pa.concat_tables(parts) if parts else DECISIONS.empty_table()


def _split_codes(split: pa.Array) -> np.ndarray:
    """Split keys as integers in their sorted order (for a lexsort)."""
    uniq = pc.unique(split).sort()
    return pc.index_in(split, value_set=uniq).to_numpy(zero_copy_only=False)


def level_summary(t: pa.Table, *, levels: int, per: str, scores: Mapping[str, str], missing: str
                  ) -> dict[str, Any]:
    """What the report shows: per group, each level's documents and its lowest and
    highest key (the boundaries; a single score in its own units, several as the mean
    percentile rank), and the documents dropped for a missing score."""
    out: dict[str, Any] = {"levels": levels, "per": per, "scores": dict(scores), "missing": missing,
                           "key": next(iter(scores)) if len(scores) == 1 else "mean percentile rank", "groups": {}}
    groups = t.column("group").to_pylist()
    level = pc.fill_null(t.column(LEVEL), -1).to_numpy()   # -1: dropped for a missing score
    key = pc.fill_null(t.column("key"), np.nan).to_numpy()
    garr = np.array(groups, dtype=object)
    for g in sorted(set(groups)):
        m = garr == g
        rows = []
        for lv in range(levels):
            k = key[m & (level == lv)]
            k = k[~np.isnan(k)]
            n = int((m & (level == lv)).sum())
            rows.append({"level": lv, "documents": n, "min": float(k.min()) if k.size else None,
                         "max": float(k.max()) if k.size else None})
        out["groups"][g] = {"levels": rows, "missing_score": int((m & (level == -1)).sum())}
    return out
