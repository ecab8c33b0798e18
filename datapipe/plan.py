"""A job compiled once into what the runner executes.

:func:`compile_plan` turns a loaded :class:`~datapipe.spec.JobSpec` into a :class:`Plan`:
every source's reader and read splits (numbered in plan order: output names depend on
this only), the chain cut at its global stages into phases (each with its stages, the
schema after each stage and the compute the phase runs with) and the document sink a
stage provides (token shards). The runner reads the plan, never the spec's stage list,
and knows no concrete stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import pyarrow as pa

from datapipe import schema as S
from datapipe.readers import ReadSplit
from datapipe.sink import DocumentSink
from datapipe.spec import JobSpec, StageSpec, reader_for_source
from datapipe.stage import Compute, GlobalStage, fuse


@dataclass(frozen=True)
class SplitRef:
    """One read split of one source, numbered in the source's plan order."""

    source: str
    index: int
    split: ReadSplit

    @property
    def key(self) -> str:
        return f"{self.source}/{self.index:05d}"

    @property
    def part(self) -> str:
        return f"part-{self.index:05d}"


@dataclass(frozen=True, kw_only=True)
class Phase:
    """Stages run by one pass over the splits: after the global stage ``before`` (whose
    decisions are applied first), up to the global stage ``after`` (None: the end).
    ``input_schema``: the rows entering the phase; ``schemas``: after each stage."""

    index: int
    stages: tuple[StageSpec, ...]
    before: StageSpec | None
    after: StageSpec | None
    compute: Compute
    input_schema: pa.Schema
    schemas: tuple[pa.Schema, ...]

    @property
    def last(self) -> bool:
        return self.after is None


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What the runner executes. ``job`` stays for what is the job's, not a stage's:
    output, storage, execution options, hashes."""

    job: JobSpec
    readers: Mapping[str, Any]          # source name -> its reader
    splits: tuple[SplitRef, ...]
    phases: tuple[Phase, ...]
    sink: DocumentSink | None           # output a stage writes beside documents/ (None: none)

    @property
    def chain(self) -> list[str]:
        """``read`` and every stage's name, in order: what stats and the report list."""
        return ["read"] + [st.name for st in self.job.stages]

    def applies(self, stage: str, source: str) -> bool:
        """Whether the chain entry ``stage`` (``read`` or a stage name) sees ``source``."""
        return stage == "read" or next(st for st in self.job.stages if st.name == stage).applies_to(source)


def compile_plan(job: JobSpec) -> Plan:
    """The plan of ``job``: readers, splits, phases and sink, built once."""
    readers = {src.name: reader_for_source(job, src) for src in job.sources}
    return Plan(job=job, readers=readers, splits=tuple(_splits(job, readers)), phases=tuple(_phases(job)),
                sink=_sink(job))


def split_refs(job: JobSpec) -> list[SplitRef]:
    """Every source's read splits, numbered in plan order (the plan's ``splits``)."""
    return _splits(job, {src.name: reader_for_source(job, src) for src in job.sources})


def auto_split_bytes(input_bytes: int) -> int:
    """The default ``execution.split_bytes``: an eighth of the input, between 4 MiB and
    64 MiB (a small job still gets a split per core; per-split cost is a few files and
    one call, so more splits cost little). A function of the inputs only, never of the
    cluster, so outputs stay the same bytes on any number of CPUs."""
    return min(64 << 20, max(4 << 20, input_bytes // 8))


def _splits(job: JobSpec, readers: Mapping[str, Any]) -> list[SplitRef]:
    size = job.execution.split_bytes or auto_split_bytes(sum(f.size for src in job.sources for f in src.files))
    return [SplitRef(source=src.name, index=i, split=split)
            for src in job.sources
            for i, split in enumerate(readers[src.name].plan(list(src.files), split_bytes=size))]


def _schemas(job: JobSpec) -> list[pa.Schema]:
    """``[i]``: the Arrow schema before stage ``i`` (the last: after every stage). The
    readers' own columns (``Reader.columns``, e.g. the code reader's) come first."""
    from datapipe.readers import reader_for

    out, extra = [], {}
    for src in job.sources:
        cls = src.reader if src.reader is not None else reader_for(src.format)
        for col, typ in cls.columns.items():
            extra.setdefault(col, typ)
    for st in job.stages:
        out.append(S.schema_with([pa.field(k, v) for k, v in extra.items()]))
        for col, typ in st.adds.items():
            if col not in S.BASE_COLUMNS:
                extra.setdefault(col, typ)
    out.append(S.schema_with([pa.field(k, v) for k, v in extra.items()]))
    return out


def _phases(job: JobSpec) -> list[Phase]:
    """The chain cut at its global stages."""
    schemas = _schemas(job)
    groups: list[tuple[list[StageSpec], StageSpec | None, StageSpec | None]] = []
    current: list[StageSpec] = []
    before = None
    for st in job.stages:
        if issubclass(st.cls, GlobalStage):
            groups.append((current, before, st))
            current, before = [], st
        else:
            current.append(st)
    groups.append((current, before, None))
    return [Phase(index=i, stages=tuple(stages), before=before, after=after,
                  compute=fuse([st.compute for st in stages]),
                  input_schema=schemas[before.index + 1 if before is not None else 0],   # + its adds
                  schemas=tuple(schemas[st.index + 1] for st in stages))
            for i, (stages, before, after) in enumerate(groups)]


def _sink(job: JobSpec) -> DocumentSink | None:
    """The sink of the stage that declares one (the spec allows at most one)."""
    for st in job.stages:
        if st.cls.SinkOptions is not None:
            lineage = {"job": job.name, "spec_hash": job.spec_hash(),
                       "inputs": [{"source": s.name, "path": f.rel, "bytes": f.size}
                                  for s in job.sources for f in s.files]}
            return st.make().sink(job.shards, lineage=lineage)
    return None


def compute_text(plan: Plan, phase: Phase, cpus: int | None) -> str:
    """How a phase runs, in words (``cpus``: the cluster's, when known)."""
    c = phase.compute
    each = f"{c.num_cpus:g} CPU" + (f" + {c.num_gpus:g} GPU" if c.num_gpus else "") + " each"
    if c.kind == "actor":
        n = plan.job.execution.actors_per_stage or c.concurrency or (max(1, int(cpus // c.num_cpus)) if cpus else None)
        return (f"{n} actor(s)" if n else "one actor per CPU") + f", {each}, read fused in"
    return f"tasks, {each}, one per split"


def describe_plan(plan: Plan, cpus: int | None = None) -> list[str]:
    """Human-readable plan (what ``datapipe validate`` prints): sources and splits, and
    for every phase its stages, each stage's declared compute and the compute the phase
    gets."""
    job = plan.job
    lines = [f"job {job.name!r} ({job.path}) -> {job.output}", f"on_error: {job.on_error}", "sources:"]
    for src in job.sources:
        n = sum(ref.source == src.name for ref in plan.splits)
        mb = sum(f.size for f in src.files) / 1e6
        lines.append(f"  {src.name:<10} {src.format:<8} {len(src.files):>5} files {mb:>9.2f} MB "
                     f"{n:>5} splits  root={src.root}")
    lines.append("phases (each one pass over the splits; text never leaves its split's task):")
    for ph in plan.phases:
        head = f"  [{ph.index}] {compute_text(plan, ph, cpus)}"
        if ph.before is not None:
            head += f"; applies {ph.before.name}'s decisions"
        lines.append(head)
        for st in ph.stages:
            adds = ", ".join(st.adds) or "-"
            only = f"; only sources: {', '.join(sorted(st.sources))}" if st.sources is not None else ""
            lines.append(f"      {st.name:<18} {st.cls.kind:<14} [{st.compute.describe()}] "
                         f"reads: {', '.join(st.cls.reads) or '-'}; adds: {adds}{only}")
        if ph.after is not None:
            only = f"; only sources: {', '.join(sorted(ph.after.sources))}" if ph.after.sources is not None else ""
            lines.append(f"      -> {ph.after.name}: side data per split, then its passes (in the driver, one Ray task or Ray Data, by rows){only}")
    fmt = job.output_options.format
    lines.append(f"outputs: documents/<source>/part-<split> and rejects/<source>/part-<split> ({fmt}), "
                 + (f"{plan.sink.folder}/<source>/ (per split) + manifest, " if plan.sink is not None else "")
                 + "report.json, report.md, drops.png, manifest.json")
    lines.append(f"retries: task {job.execution.max_retries}, actor restarts {job.execution.max_restarts}; "
                 "no block is ever skipped (max_errored_blocks = 0)")
    return lines


def plan_line(plan: Plan, cpus: int) -> str:
    """The one line a run prints before it starts: split count and each phase's compute."""
    job = plan.job
    compute = "; ".join(f"[{ph.index}] {compute_text(plan, ph, cpus).split(',')[0]}" for ph in plan.phases)
    return (f"job {job.name!r} ({job.path}) -> {job.output}: {len(job.sources)} sources, "
            f"{len(plan.splits)} read splits; phases {compute} (`datapipe validate` shows the plan)")
