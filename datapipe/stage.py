"""Stage base classes.

A stage is one class with a ``name``, a keyword-only ``Config`` dataclass, optional
``setup()`` (heavy state: once per Ray actor when ``compute`` asks for actors) and one
hot method over a ``pyarrow.Table`` batch. The base class does the rest: it hands the
hot method only the documents still alive, marks drops with stage and reason, counts,
times, and keeps every batch on the declared schema.

Kinds, each writing one method:

* :class:`FilterStage` – ``keep(batch) -> (mask, reasons)``: a boolean per row and,
  for the dropped ones, a rule name (``"mean_word_length"``); the base class prefixes
  the stage name (``gopher_quality:mean_word_length``). A filter that drops many rows
  a batch may give the reasons as Arrow instead (:class:`Reasons`).
* :class:`FormatterStage` – ``format(batch) -> (texts, changes[, columns])``: the
  rewritten text column, per-document change counters (``{"lines_removed": array}``)
  and optionally added columns. A document whose text becomes empty is dropped with
  reason ``<stage>:empty``.
* :class:`AnnotatorStage` – ``annotate(batch) -> {column: array}`` for the columns in
  ``adds``. A filter or formatter may also define ``annotate``; it runs first and its
  columns are visible to ``keep``/``format``.
* :class:`GlobalStage` – stages that must see every split before deciding (dedup):
  ``side(batch) -> compact table`` per split, ``passes(ctx)`` (a list of declared
  passes, or a generator of them) over the side files, run once by the engine's pass
  executor; the runner applies the decisions where the text is.

A stage declares how it runs in ``compute`` (:class:`Compute`: tasks or a pool of
actors, CPUs and GPUs each, how many actors); the runner uses what it states. A stage
that writes its own output beside ``documents/`` (``tokenize``: token shards) provides a
:class:`~datapipe.sink.DocumentSink` through :meth:`Stage.sink`.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe import schema as S
from datapipe.errors import JobError

if TYPE_CHECKING:
    from datapipe import fs
    from datapipe.passes import InputFiles, Plan, Preparation
    from datapipe.sink import DocumentSink


@dataclass(kw_only=True, frozen=True)
class Compute:
    """How a stage wants to run. ``kind``: ``task`` (a plain Ray task per split; cheap
    state built per split) or ``actor`` (a pool of actors, each running ``setup()`` once:
    models, tokenizers). ``num_cpus``/``num_gpus``: per task or actor. ``concurrency``:
    actors in the pool (None: as many as the cluster's CPUs allow); a job's
    ``execution.actors_per_stage`` overrides it. The stages of one phase run fused in one
    task or actor, which gets the largest request of its stages."""

    kind: Literal["task", "actor"] = "task"
    num_cpus: float = 1
    num_gpus: float = 0
    concurrency: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("task", "actor"):
            raise ValueError(f"Compute.kind must be 'task' or 'actor', got {self.kind!r}")
        if self.num_cpus <= 0 or self.num_gpus < 0:
            raise ValueError(f"Compute needs num_cpus > 0 and num_gpus >= 0, got {self.num_cpus}, {self.num_gpus}")
        if self.concurrency is not None and (self.kind != "actor" or self.concurrency < 1):
            raise ValueError(f"Compute.concurrency is a number of actors (>= 1, kind 'actor'), got {self.concurrency}")

    def describe(self) -> str:
        """``actor, 1 CPU`` / ``task, 1 CPU, 1 GPU``: what ``datapipe validate`` prints."""
        gpus = f", {self.num_gpus:g} GPU" if self.num_gpus else ""
        n = f" x{self.concurrency}" if self.concurrency is not None else ""
        return f"{self.kind}{n}, {self.num_cpus:g} CPU{gpus}"


def fuse(computes: Sequence[Compute]) -> Compute:
    """The compute of stages fused into one task or actor: an actor if any stage needs
    one, the largest CPU and GPU request, the smallest declared pool."""
    if not computes:
        return Compute()
    actor = any(c.kind == "actor" for c in computes)
    pools = [c.concurrency for c in computes if c.concurrency is not None]
    return Compute(kind="actor" if actor else "task", num_cpus=max(c.num_cpus for c in computes),
                   num_gpus=max(c.num_gpus for c in computes), concurrency=min(pools) if pools and actor else None)


@dataclass(kw_only=True, frozen=True)
class StageConfig:
    """Base for stage configs. Subclasses are keyword-only dataclasses validated in
    ``__post_init__`` with errors that say how to fix the value."""


#: the column drop reasons are also counted by (``BatchStats.dropped_by``), where a batch has it
DROPS_BY = "language"


@dataclass
class BatchStats:
    """What one call of a stage did to one batch, per source. Mergeable by addition.
    ``dropped_by``: the drops again, by the value of the :data:`DROPS_BY` column
    (``{"Python": {"code_filter:minified": 3}}``; null as ``"(none)"``), for batches that
    have that column."""

    docs_in: int = 0
    docs_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    dropped: dict[str, int] = dataclasses.field(default_factory=dict)
    changes: dict[str, int] = dataclasses.field(default_factory=dict)
    docs_changed: int = 0
    seconds: float = 0.0
    dropped_by: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)

    def merge(self, other: "BatchStats") -> None:
        self.docs_in += other.docs_in
        self.docs_out += other.docs_out
        self.bytes_in += other.bytes_in
        self.bytes_out += other.bytes_out
        self.docs_changed += other.docs_changed
        self.seconds += other.seconds
        for k, v in other.dropped.items():
            self.dropped[k] = self.dropped.get(k, 0) + v
        for k, v in other.changes.items():
            self.changes[k] = self.changes.get(k, 0) + v
        for group, reasons in other.dropped_by.items():
            mine = self.dropped_by.setdefault(group, {})
            for k, v in reasons.items():
                mine[k] = mine.get(k, 0) + v

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "BatchStats":
        st = cls(**{k: (dict(v) if isinstance(v, dict) else v) for k, v in d.items()})
        st.dropped_by = {g: dict(r) for g, r in st.dropped_by.items()}
        return st

    def count_drop(self, reason: str, group: str | None) -> None:
        """One dropped document: its reason, and its group's (``None``: the batch has
        no :data:`DROPS_BY` column)."""
        self.dropped[reason] = self.dropped.get(reason, 0) + 1
        if group is not None:
            by = self.dropped_by.setdefault(group, {})
            by[reason] = by.get(reason, 0) + 1


class Stage:
    """Base of every stage. Subclasses set ``name``, ``Config``, ``reads``, ``adds``."""

    name: ClassVar[str] = ""
    #: what the report calls this kind of stage
    kind: ClassVar[str] = "batch"
    Config: ClassVar[type[StageConfig]] = StageConfig
    #: columns the stage needs present (per source) when it runs
    reads: ClassVar[tuple[str, ...]] = (S.TEXT,)
    #: columns the stage adds, with their Arrow types
    adds: ClassVar[Mapping[str, pa.DataType]] = {}
    #: how the stage runs (tasks or actors, CPUs, GPUs); read by the runner
    compute: ClassVar[Compute] = Compute()
    #: the config dataclass of the output this stage writes beside ``documents/`` (the
    #: job spec's top-level ``shards:`` mapping); None: the stage writes no output
    SinkOptions: ClassVar[type | None] = None

    def __init__(self, config: StageConfig | None = None, *, sources: frozenset[str] | None = None,
                 name: str | None = None) -> None:
        self.config = config if config is not None else self.Config()
        if name is not None:
            #: the instance's name (a job spec's ``name:``, e.g. ``quality_web``): reject
            #: reasons, stats and reports use it; the class's ``name`` is the stage kind
            self.name = name
        #: when set, the stage applies only to documents of these sources; others pass
        #: through untouched and uncounted (a job spec's ``sources:`` on a stage entry)
        self.sources = frozenset(sources) if sources is not None else None
        #: the artifacts of :meth:`prepare`'s passes by pass name (URIs), set by the engine
        #: before :meth:`setup` runs; empty when the stage prepares nothing or runs alone
        self.prepared: dict[str, str] = {}
        self._ready = False

    # -- lifecycle -----------------------------------------------------------------
    def setup(self) -> None:
        """Load heavy state (models, tokenizers, compiled detectors). Runs once per Ray
        actor (``compute.kind == "actor"``), or once per split's task otherwise."""

    def prepare(self, ctx: "StageContext") -> "Preparation | None":
        """Passes to run once per run, before this stage's phase, on the driver or the
        cluster (:class:`datapipe.passes.Preparation`: passes over inputs the stage names,
        e.g. an index built from files its config lists). The engine's executor runs
        them under ``ctx.work_dir`` and owns their commit, resume key and timing; every
        copy of the stage (each actor or task) then gets the artifacts' URIs in
        :attr:`prepared` before :meth:`setup`. None (the default): nothing to prepare."""
        return None

    def prepares(self) -> bool:
        """Whether this stage declares :meth:`prepare` passes (overrides it)."""
        return type(self).prepare is not Stage.prepare

    def after_prepare(self, ctx: "StageContext") -> None:
        """On the driver, once :meth:`prepare`'s passes are committed (:attr:`prepared`
        set): may add to ``ctx.report`` (the stage's entry in the run's report)."""

    def ensure_setup(self) -> None:
        if not self._ready:
            self.setup()
            self._ready = True

    def sink(self, options: Any, *, lineage: Mapping[str, Any]) -> "DocumentSink":
        """The sink that writes this stage's output (``SinkOptions`` set): called once on
        the driver when the job is planned. ``lineage`` names the job and its inputs."""
        raise NotImplementedError(f"stage {self.name!r} declares SinkOptions but no sink()")

    # -- batch path ----------------------------------------------------------------
    def annotate(self, batch: pa.Table) -> Mapping[str, Any]:  # pragma: no cover - optional
        return {}

    def _has_annotate(self) -> bool:
        return type(self).annotate is not Stage.annotate

    def process(self, batch: pa.Table) -> tuple[pa.Table, dict[str, BatchStats]]:
        """Run the stage on ``batch`` (all rows, alive or already dropped) and return the
        batch with drops marked and columns added, plus per-source stats."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"


def _as_array(values: Any, typ: pa.DataType) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values if values.type == typ else values.cast(typ)
    if isinstance(values, np.ndarray) and values.dtype != object:
        return pa.array(values).cast(typ)
    return pa.array(values, type=typ)


def _scatter(alive_idx: np.ndarray, n: int, values: pa.Array) -> pa.Array:
    """Place ``values`` (one per alive row) at ``alive_idx`` in an ``n``-long null array."""
    if len(alive_idx) == n:
        return values
    positions = np.full(n, -1, dtype=np.int64)
    positions[alive_idx] = np.arange(len(alive_idx))
    take_idx = pa.array(positions, mask=positions < 0)
    return values.take(take_idx)


@dataclass(frozen=True)
class Reasons:
    """A filter's reasons as Arrow, one entry per *dropped* row in row order: ``rule``
    (one string for all, or a string array) and ``detail`` (a string array, or None).
    The same outcome as a list of ``"rule|detail"`` strings without building and
    splitting a Python string per drop (``url_filter`` drops a quarter of a crawl's rows
    with a detail each)."""

    rule: str | pa.Array
    detail: pa.Array | None = None


class BatchStage(Stage):
    """Shared per-batch plumbing for filter, formatter and annotator stages."""

    def _run(self, live: pa.Table) -> tuple[dict[str, pa.Array], np.ndarray | None, list | None, pa.Array | None, dict[str, np.ndarray]]:
        """Kind-specific work on alive rows: (added columns, keep mask, reasons, new text, changes)."""
        raise NotImplementedError

    def process(self, batch: pa.Table) -> tuple[pa.Table, dict[str, BatchStats]]:
        self.ensure_setup()
        t0 = time.perf_counter()
        alive, alive_idx, live = self._live(batch)
        m = len(alive_idx)
        if m:
            added, keep, reasons, new_text, changes = self._run(live)
        else:
            added, keep, reasons, new_text, changes = {}, None, None, None, {}
        keep = np.ones(m, dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
        if keep.shape != (m,):
            raise AssertionError(f"stage {self.name}: keep mask has shape {keep.shape}, expected ({m},)")
        if new_text is not None:
            new_text, keep, reasons = self._empty_text_drops(new_text, keep, reasons, m)
        cols = {name: batch.column(name) for name in batch.column_names}
        if new_text is not None:
            cols[S.TEXT] = _merged_text(batch, live, alive, alive_idx, keep, new_text)
        self._add_columns(cols, added, alive, alive_idx, batch.num_rows)
        reason_full = self._mark_drops(cols, batch, alive_idx, keep, reasons)
        out_text = new_text if new_text is not None else (
            live.column(S.TEXT).combine_chunks() if S.TEXT in live.column_names else None)
        stats = _source_stats(live, keep, reason_full, out_text, new_text, changes)
        elapsed = time.perf_counter() - t0
        for st in stats.values():
            st.seconds = elapsed * st.docs_in / max(m, 1)
        return pa.table(cols), stats

    def _live(self, batch: pa.Table) -> tuple[np.ndarray, np.ndarray, pa.Table]:
        """Rows this stage works on: alive, and of its sources (mask, indices, table)."""
        alive = S.alive_mask(batch).to_numpy(zero_copy_only=False)
        if self.sources is not None:
            mine = pc.is_in(batch.column(S.SOURCE), pa.array(sorted(self.sources), pa.string()))
            alive = alive & mine.to_numpy(zero_copy_only=False)
        alive_idx = np.flatnonzero(alive)
        return alive, alive_idx, (batch.take(pa.array(alive_idx)) if len(alive_idx) < batch.num_rows else batch)

    def _empty_text_drops(self, new_text: Any, keep: np.ndarray, reasons: list | None, m: int):
        """A formatter's output: a kept document whose new text is empty is dropped as
        ``empty``."""
        new_text = _as_array(new_text, pa.string())
        if len(new_text) != m:
            raise AssertionError(f"stage {self.name}: format returned {len(new_text)} texts for {m} documents")
        empty = (pc.fill_null(pc.binary_length(new_text), 0).to_numpy(zero_copy_only=False) == 0)
        reasons = list(reasons) if reasons is not None else [None] * m
        for i in np.flatnonzero(empty & keep):
            reasons[i] = "empty"
        return new_text, keep & ~empty, reasons

    def _add_columns(self, cols: dict[str, Any], added: Mapping[str, Any], alive: np.ndarray,
                     alive_idx: np.ndarray, n: int) -> None:
        """The ``adds`` columns, full length: values at the live rows, earlier values (or
        nulls) elsewhere."""
        m = len(alive_idx)
        for col, typ in self.adds.items():
            if col in added:
                arr = _as_array(added[col], typ)
                if len(arr) != m:
                    raise AssertionError(f"stage {self.name}: column {col!r} has {len(arr)} values for {m} documents")
                full = _scatter(alive_idx, n, arr)
                if col in cols and m < n:
                    old = cols[col].combine_chunks() if isinstance(cols[col], pa.ChunkedArray) else cols[col]
                    full = pc.if_else(pa.array(alive), full, old)
                cols[col] = full
            elif col not in cols:
                cols[col] = pa.nulls(n, typ)

    def _mark_drops(self, cols: dict[str, Any], batch: pa.Table, alive_idx: np.ndarray, keep: np.ndarray,
                    reasons: list | None) -> np.ndarray | None:
        """Mark the rows this stage drops (``<stage>:<rule>``, detail after ``|``) in
        ``cols``; the full reason per live row (object array, None: kept), for the stats
        (None: no drop)."""
        drop_live = np.flatnonzero(~keep)
        if not len(drop_live):
            return None
        if reasons is None:
            raise AssertionError(f"stage {self.name}: dropped documents without reasons")
        reason_full = np.full(len(alive_idx), None, dtype=object)
        if isinstance(reasons, Reasons):
            full, detail = self._arrow_reasons(reasons, len(drop_live))
            if isinstance(full, str):
                reason_full[drop_live] = full
                full = pa.nulls(len(drop_live), pa.string()).fill_null(full)
            else:
                reason_full[drop_live] = full.to_numpy(zero_copy_only=False)
        else:
            full, detail = self._split_reasons([reasons[j] for j in drop_live.tolist()])
            reason_full[drop_live] = full.to_numpy(zero_copy_only=False)
        marked = mark_rejects(batch, alive_idx[drop_live], stage=self.name, reasons=full, details=detail)
        for col in (S.REJECT_STAGE, S.REJECT_REASON, S.REJECT_DETAIL):
            cols[col] = marked.column(col)
        return reason_full

    def _split_reasons(self, picked: list) -> tuple[pa.Array, pa.Array]:
        """Full reasons and details of ``"<rule>|<detail>"`` strings, split with Arrow (a
        filter may drop most of a batch); an empty or missing reason is "unspecified", an
        empty detail none."""
        try:
            arr = pa.array(picked, pa.string())
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            arr = pa.array([str(r) if r else None for r in picked], pa.string())
        parts = pc.extract_regex(_or_unspecified(arr), r"(?s)^(?P<rule>[^|]*)(?:\|(?P<detail>.*))?$")
        return (pc.binary_join_element_wise(f"{self.name}:", parts.field("rule"), ""),
                _no_empty(parts.field("detail")))

    def _arrow_reasons(self, reasons: Reasons, k: int) -> tuple[str | pa.Array, pa.Array]:
        """Full reason (one string, or an array) and details of a :class:`Reasons` for
        ``k`` dropped rows."""
        detail = pa.nulls(k, pa.string()) if reasons.detail is None else _strings(reasons.detail)
        if len(detail) != k:
            raise AssertionError(f"stage {self.name}: {len(detail)} reason details for {k} dropped documents")
        if isinstance(reasons.rule, str):
            return f"{self.name}:{reasons.rule or 'unspecified'}", _no_empty(detail)
        rule = _strings(reasons.rule)
        if len(rule) != k:
            raise AssertionError(f"stage {self.name}: {len(rule)} reasons for {k} dropped documents")
        return pc.binary_join_element_wise(f"{self.name}:", _or_unspecified(rule), ""), _no_empty(detail)


def _no_empty(values: pa.Array) -> pa.Array:
    """Empty strings as nulls."""
    return pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)


def _or_unspecified(reasons: pa.Array) -> pa.Array:
    """An empty or missing reason is ``unspecified``."""
    return pc.fill_null(_no_empty(reasons), "unspecified")


def mark_rejects(batch: pa.Table, rows: Sequence[int] | np.ndarray, *, stage: str, reasons: Sequence[str],
                 details: Sequence[str | None], first_row: int = 0) -> pa.Table:
    """``batch`` with ``rows`` (indices, ascending) marked as rejects of ``stage``:
    ``reasons[j]`` is the full reason (``<stage>:<rule>``), ``details[j]`` the detail.
    The one way anything marks a reject (batch stages, a global stage's decisions,
    duplicate ids). A row already rejected cannot be rejected again: that is a bug in
    whoever decided (``first_row``: the batch's first row in its split, for the message).
    ``reasons``/``details`` may be Arrow string arrays. Vectorised (Arrow ``replace_with_mask``): a filter may drop most of a batch."""
    if not len(rows):
        return batch
    rows = np.asarray(rows, dtype=np.int64)
    reason_col = batch.column(S.REJECT_REASON)
    ascending = bool((rows[1:] > rows[:-1]).all())   # the usual case: no sort, no row named twice
    order = np.arange(len(rows)) if ascending else np.argsort(rows, kind="stable")
    srt = rows if ascending else rows[order]
    taken = (pc.is_valid(reason_col).to_numpy(zero_copy_only=False) if reason_col.null_count < batch.num_rows
             else np.zeros(batch.num_rows, dtype=bool))
    again = np.r_[False, srt[1:] == srt[:-1]]        # a row named twice: dropped by the first
    bad = taken[srt] | again
    if bad.any():
        i = int(srt[np.argmax(bad)])
        prior = reason_col[i] if taken[i] else reasons[int(order[np.argmax(bad) - 1])]
        prior = prior.as_py() if isinstance(prior, pa.Scalar) else prior
        raise JobError(f"stage {stage!r} decided to drop row {i + first_row}, which {prior} already dropped")
    mask = np.zeros(batch.num_rows, dtype=bool)
    mask[rows] = True
    mask = pa.array(mask)
    reasons, details = _strings(reasons), _strings(details)
    if not ascending:
        reasons, details = reasons.take(pa.array(order)), details.take(pa.array(order))
    for col, values in ((S.REJECT_STAGE, pa.nulls(len(rows), pa.string()).fill_null(stage)),
                        (S.REJECT_REASON, reasons), (S.REJECT_DETAIL, details)):
        old = batch.column(col)
        old = (old.combine_chunks() if isinstance(old, pa.ChunkedArray) else old).cast(pa.string())
        batch = batch.set_column(batch.schema.get_field_index(col), col, pc.replace_with_mask(old, mask, values))
    return batch


def _strings(values: Sequence[str | None] | pa.Array) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return values.cast(pa.string()) if isinstance(values, pa.Array) else pa.array(values, pa.string())


def _merged_text(batch: pa.Table, live: pa.Table, alive: np.ndarray, alive_idx: np.ndarray, keep: np.ndarray,
                 new_text: pa.Array) -> pa.Array:
    """The full text column after a rewrite: kept live rows get their new text; rows this
    stage drops keep their *input* text (for the rejects), and so do rows dropped earlier."""
    m, n = len(alive_idx), batch.num_rows
    merged = pc.if_else(pa.array(keep), new_text, live.column(S.TEXT).combine_chunks())
    if m == n:
        return merged
    return pc.if_else(pa.array(alive), _scatter(alive_idx, n, merged), batch.column(S.TEXT).combine_chunks())


def _source_stats(live: pa.Table, keep: np.ndarray, reason_full: np.ndarray | None, out_text: Any,
                  new_text: pa.Array | None, changes: Mapping[str, np.ndarray]) -> dict[str, BatchStats]:
    """Per-source stats of one batch over its live rows (seconds filled by the caller).
    Bytes in are the text's, or the raw markup's while no text is extracted yet."""
    m = live.num_rows
    stats: dict[str, BatchStats] = {}
    in_bytes = _lengths(live, S.TEXT)
    if S.RAW in live.column_names and m:
        no_text = (pc.is_null(live.column(S.TEXT)).to_numpy(zero_copy_only=False) if S.TEXT in live.column_names
                   else np.ones(m, bool))
        in_bytes = np.where(no_text, _lengths(live, S.RAW), in_bytes)
    out_bytes = (pc.fill_null(pc.binary_length(out_text), 0).to_numpy(zero_copy_only=False)
                 if out_text is not None and m else np.zeros(m, dtype=np.int64))
    changed = None
    if new_text is not None and m:
        changed = pc.fill_null(pc.not_equal(new_text, live.column(S.TEXT).combine_chunks()), True)
        changed = changed.to_numpy(zero_copy_only=False)
    groups = (live.column(DROPS_BY).to_pylist()
              if reason_full is not None and DROPS_BY in live.column_names and m and not keep.all() else None)
    for src, sel in _by_source(live, m):
        st = BatchStats(docs_in=int(sel.sum()), docs_out=int((sel & keep).sum()), bytes_in=int(in_bytes[sel].sum()),
                        bytes_out=int(out_bytes[sel & keep].sum()))
        if reason_full is not None:
            idx = np.flatnonzero(sel & ~keep)
            if groups is None:
                for reason, count in Counter(reason_full[idx].tolist()).items():
                    st.dropped[reason] = st.dropped.get(reason, 0) + count
            else:
                for (group, reason), count in Counter((str(groups[j] or "(none)"), reason_full[j])
                                                      for j in idx.tolist()).items():
                    st.dropped[reason] = st.dropped.get(reason, 0) + count
                    by = st.dropped_by.setdefault(group, {})
                    by[reason] = by.get(reason, 0) + count
        for name, counts in changes.items():
            st.changes[name] = int(np.asarray(counts)[sel].sum())
        if changed is not None:
            st.docs_changed = int((changed & sel & keep).sum())
        stats[src] = st
    return stats


def _by_source(live: pa.Table, m: int) -> list[tuple[str, np.ndarray]]:
    """``(source, row mask)`` per source of the batch, sources in sorted order."""
    if not m:
        return []
    col = live.column(S.SOURCE)
    enc = (col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col).dictionary_encode()
    if enc.null_count:   # not produced by any reader; compare in Python as before
        sources = col.to_pylist()
        return [(src, np.fromiter((s == src for s in sources), dtype=bool, count=m)) for src in sorted(set(sources))]
    codes = enc.indices.to_numpy(zero_copy_only=False)
    names = enc.dictionary.to_pylist()
    return [(names[k], codes == k) for k in sorted(range(len(names)), key=names.__getitem__)]


def _lengths(table: pa.Table, column: str) -> np.ndarray:
    if column not in table.column_names or table.num_rows == 0:
        return np.zeros(table.num_rows, dtype=np.int64)
    return pc.fill_null(pc.binary_length(table.column(column)), 0).to_numpy().astype(np.int64)


class AnnotatorStage(BatchStage):
    """Adds the columns in ``adds``; drops nothing."""

    kind = "annotator"

    def annotate(self, batch: pa.Table) -> Mapping[str, Any]:
        raise NotImplementedError

    def _run(self, live):
        return dict(self.annotate(live)), None, None, None, {}


class FilterStage(BatchStage):
    """Keeps or drops each document with a reason. May also ``annotate``."""

    kind = "filter"

    adds: ClassVar[Mapping[str, pa.DataType]] = {}

    def keep(self, batch: pa.Table) -> tuple[np.ndarray, Sequence[str | None]]:
        """Return a boolean keep mask and, for dropped rows, the rule that dropped them.

        A reason may carry a detail after ``|`` (``"mean_word_length|2.1"``): the rule
        goes to ``_reject_reason`` and the detail to ``_reject_detail``. ``reasons`` may
        instead be a :class:`Reasons` (Arrow arrays over the dropped rows). A third element,
        ``{counter: per-row counts}``, is summed into the stage's ``changes`` (e.g. the
        heuristics' ``<rule>_unsupported_language``: documents a rule could not judge)."""
        raise NotImplementedError

    def _run(self, live):
        added = dict(self.annotate(live)) if self._has_annotate() else {}
        view = live
        for col, arr in added.items():
            arr = _as_array(arr, self.adds[col])
            view = view.append_column(col, arr) if col not in view.column_names else view.set_column(view.column_names.index(col), col, arr)
        result = self.keep(view)
        keep, reasons = result[0], result[1]
        counters = result[2] if len(result) > 2 else {}
        if not isinstance(reasons, Reasons):
            reasons = list(reasons)
        return added, np.asarray(keep, dtype=bool), reasons, None, {k: np.asarray(v) for k, v in counters.items()}


class FormatterStage(BatchStage):
    """Rewrites ``text`` and counts what it changed. May also ``annotate``."""

    kind = "formatter"

    def format(self, batch: pa.Table) -> tuple[Any, ...]:
        """Return ``(new_texts, {counter_name: per-row counts})``, or a third element
        ``{column: values}`` for columns in ``adds`` computed in the same pass (so a
        scrubber can report its per-document counts without detecting twice)."""
        raise NotImplementedError

    def _run(self, live):
        added = dict(self.annotate(live)) if self._has_annotate() else {}
        result = self.format(live)
        texts, changes = result[0], result[1]
        if len(result) > 2 and result[2]:
            added.update(result[2])
        return added, None, None, texts, {k: np.asarray(v) for k, v in changes.items()}


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
    changes: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
    columns: Mapping[str, Any] = dataclasses.field(default_factory=dict)


class RewriteFilterStage(BatchStage):
    """Rewrites ``text`` and keeps or drops each document with a reason, in one pass
    (``extract``: new text, or ``not_html``/``timeout``; ``c4``: lines removed, or
    ``lorem_ipsum``)."""

    kind = "rewrite+filter"

    def rewrite(self, batch: pa.Table) -> Rewrite:
        raise NotImplementedError

    def _run(self, live: pa.Table):
        r = self.rewrite(live)
        keep = np.asarray(r.keep, dtype=bool)
        return (dict(r.columns), keep, list(r.reasons), r.texts,
                {k: np.asarray(v) for k, v in r.changes.items()})


class GlobalStage(Stage):
    """A stage that needs to see every split before it can decide (dedup).

    Text never leaves the task that read it. The runner runs each read split up to this
    stage, writes the split's rows to a work file and calls :meth:`side` on them; once
    every split is done the engine's pass executor runs the stage's :meth:`passes` over
    the side files once (:func:`datapipe.passes.run_global`: it chooses where they run,
    owns their files, resume keys, commits, timings and any folder they publish); then
    each split's task reloads its own rows, marks the decided ones as rejects of this
    stage (``<name>:<reason>``) and goes on with the rest of the chain. The runner tallies
    the stage's stats from those marks. With ``sources`` (a spec entry's ``sources:``) the
    stage sees only those sources' splits: the others get no side rows and pass it
    untouched and uncounted, so one kind can run once per group of sources.
    """

    kind = "global"
    #: the stage's decisions may *edit* documents (an ``edit`` column, see
    #: :meth:`apply_edits`), so it rewrites text: ``validate`` refuses it after the stage
    #: that writes token shards, as it does a formatter
    edits_text: ClassVar[bool] = False
    #: what else the passes' functions depend on (a format version): part of every pass's
    #: resume key
    salt: ClassVar[str] = ""

    def side(self, batch: pa.Table) -> pa.Table:
        """In each split's task, on the rows this stage sees (alive and applicable; the
        runner filters), in read order. Returns exactly one row per input row with
        compact columns only, never text (id, source, hashes, signatures...).
        Deterministic. The runner appends ``_split`` (string: the read split's key) and
        ``_row`` (int64: the row's position among that split's rows) and writes the
        result as Parquet under ``<ctx.work_dir>/side/``."""
        raise NotImplementedError

    def passes(self, ctx: "StageContext") -> "Plan":
        """The stage's passes over the side files (:data:`datapipe.passes.SIDE`) and its
        :meth:`inputs`, as data (:class:`datapipe.passes.Pass`: inputs, function,
        partitioning, output, params), run by the engine's executor, which owns their
        work files, resume keys, commits and timings. Either a list, whose last pass's
        output is the decisions, or a generator, for a plan that depends on what earlier
        passes wrote: it yields a batch of steps (passes, and
        :class:`~datapipe.passes.Discard` / :class:`~datapipe.passes.Publish`), is sent
        that batch's :class:`~datapipe.passes.Artifact` by pass name (URI, rows, key),
        and returns the name of the pass that holds the decisions (None: nothing
        decided). ``ctx.local`` says whether the passes run in one process (then one
        partition is enough) and ``ctx.cpus`` how many CPUs they are spread over.

        The decisions (:data:`datapipe.schema.DECISIONS`): columns ``_split`` (string),
        ``_row`` (int64), ``reason`` (string, rule name without the stage prefix),
        ``detail`` (string, nullable), sorted by (``_split``, ``_row``); deterministic in
        (side contents, config).

        A stage with ``edits_text`` may add a column ``edit`` (``list<int64>``): a row
        whose ``edit`` is null is dropped as above; a row whose ``edit`` is a list is kept
        and rewritten by :meth:`apply_edits` in its split's task (its ``reason`` and
        ``detail`` are then unused). One decision row per (``_split``, ``_row``).

        A stage that ``adds`` columns (``quality_levels``: ``quality_level``) may carry them
        in its decisions: a row whose ``reason`` is null is kept and gets the decision's
        values in those columns (an *annotation*); the next phase's rows have the columns
        (null where the stage decided nothing)."""
        raise NotImplementedError

    def inputs(self, ctx: "StageContext") -> "Mapping[str, InputFiles]":
        """Files the passes read besides the side files, by the input name the passes
        use (dedup: the segments of ``index_in``), with their rows and, for an immutable
        folder, a key standing for their contents. Default: none."""
        return {}

    @property
    def local_rows(self) -> int:
        """Input rows (side rows plus :meth:`inputs`' rows) up to which the passes run in
        one process on Arrow tables (no Ray Data start-up); the executor puts that process
        in the driver, or in one Ray task above :data:`datapipe.passes.DRIVER_ROWS`.
        Above it, Ray Data passes. Default 0: always Ray Data."""
        return 0

    def after_passes(self, ctx: "StageContext", artifacts: "Mapping[str, str]") -> None:
        """Where the passes ran, after they committed (``artifacts``: each pass's URI by
        name): add what the stage measured to ``ctx.report`` (such as level
        boundaries). Default: nothing."""

    def apply_edits(self, texts: Sequence[str], edits: Sequence[Sequence[int]]
                    ) -> tuple[list[str | None], dict[str, list[int]]]:
        """In a split's task, on the rows whose decision carries an ``edit`` list (in row
        order): each row's new text, or None when too little is left to keep it (the row
        becomes a reject ``<name>:empty``, its text as it came in); and per-row counts of
        what changed by name (``{"lines_removed": [...], "chars_removed": [...]}``),
        which the engine adds to this stage's stats (``changes``) per source. Pure and
        deterministic: a re-run applies the same decisions to the same rows."""
        raise NotImplementedError(f"global stage {self.name!r} decided edits but does not define apply_edits()")


@dataclass(kw_only=True)
class StageContext:
    """What a global stage's :meth:`~GlobalStage.passes` (and a stage's :meth:`~Stage.prepare`) gets: where it may write durable
    artifacts between its passes (a path or URI string, reached with ``storage``: the
    job's ``storage:`` options), the sources the stage applies to in spec order (every
    source of the job unless its spec entry lists ``sources:``), and a dict to fill for
    the report. ``side``, ``local`` and ``cpus`` are set by the executor before it asks a
    global stage for its passes: the side files (Parquet files, whose footers give
    counts), whether the passes run in one process, and the CPUs they are spread over (1
    in one process). Files are reached through :mod:`datapipe.fs` with ``storage``."""

    work_dir: str
    sources: tuple[str, ...]
    report: dict[str, Any] = dataclasses.field(default_factory=dict)
    storage: "fs.StorageOptions | None" = None
    side: tuple[str, ...] = ()
    local: bool = True
    cpus: int = 1

    def partitions(self, rows: int, per_partition: int, min_rows: int) -> int:
        """Partitions for a pass over ``rows`` rows: one in one process; else at most
        ``per_partition`` rows each, spread over the CPUs while each keeps ``min_rows``."""
        if self.local:
            return 1
        from datapipe.passes import partitions

        return partitions(rows, per_partition, self.cpus, min_rows)
