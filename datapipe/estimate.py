"""``datapipe estimate``: what a full job will cost, projected from a finished run's report.

The source is a run's ``report.json`` (a small run of the same chain on a sample of the
same kind of input); the target is the full job's size (``--input-bytes`` or ``--docs``)
and cluster (``--nodes``, ``--cores-per-node``, ``--mem-per-node``). The model, printed
with every estimate:

* every stage's CPU cost is linear in input: its busy seconds in the report divided by
  the report's input bytes (or documents), times the target's;
* wall = fixed + stage CPU seconds / (usable cores x parallel efficiency); the fixed
  part is what the source run's wall time leaves once its stage work is spread over its
  cores at that efficiency (Ray start-up, planning, commit, idle), and is carried over
  unchanged;
* usable cores: the cluster's, fewer where there are fewer read splits than cores (splits
  grow with input at the source's split size) or where a node's memory cannot hold a
  worker per core;
* memory: split tasks hold one split at a time, so a worker's peak does not grow with
  input; the driver is flat (one small record per split) except for dedup's passes,
  which runs in the driver up to 20,000 documents, in one Ray task up to ``local_rows``
  (~1-5 KB each, docs/dedup.md) and in bounded Ray Data partitions beyond;
* output bytes, documents and tokens are the source run's ratios to input.

No part of it looks at the target's data: a sample that is not representative (other
languages, other duplicate rates, other document lengths) gives a wrong projection.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
from dataclasses import dataclass
from typing import Any, Mapping

from datapipe import fs
from datapipe.errors import SpecError
from datapipe.passes import DRIVER_ROWS

log = logging.getLogger(__name__)

#: the largest Ray worker measured in docs/dedup.md ("largest worker", 200,000 documents:
#: 989 MB, the verification joins); used for ``--mem-per-node`` when ``--worker-mem`` is not given
MEASURED_WORKER_BYTES = 1_000_000_000
#: docs/dedup.md: the passes' one-process path holds ~1-5 KB per document, in the driver up to
#: DRIVER_ROWS side rows (the executor's own bound), in one Ray task above
DEDUP_DRIVER_BYTES_PER_DOC = 5_000
#: docs/dedup.md defaults (used when the report's dedup section does not carry them)
DEDUP_DEFAULTS = {"local_rows": 200_000, "verify_partition_rows": 100_000, "local_max_edges": 1_000_000}
#: docs/dedup.md: per-document bytes of a verification partition (signatures + shingle
#: sets, "a few KB per document") and per duplicate edge in the one components task
DEDUP_VERIFY_BYTES_PER_DOC = 5_000
DEDUP_EDGE_BYTES = 400
#: measured (bench/scale.py --docs 1000000, docs/engine.md "Scale"): the largest Ray worker's
#: private memory on dedup's distributed path, a read + map task of its passes (Ray Data's
#: read units and the shuffles' partitions bound it, not the corpus); the per-partition
#: arithmetic above undercounts it
DEDUP_DISTRIBUTED_WORKER_BYTES = 1_900_000_000
#: docs/dedup.md: the distributed path's fixed cost, Ray Data operator start-up (~15 s on 2 cores)
DEDUP_PASSES_FIXED_SECONDS = 15.0


@dataclass(frozen=True, kw_only=True)
class Target:
    """The full job: its size (exactly one of ``input_bytes``, ``docs``; bytes as the
    report counts them: the read stage's text + raw markup, decompressed) and cluster.
    ``efficiency``: share of the cores' time spent in stage work (the rest: waiting,
    scheduling, stragglers). ``worker_mem``: a worker's peak bytes, for ``mem_per_node``."""

    input_bytes: int | None = None
    docs: int | None = None
    nodes: int = 1
    cores_per_node: int = 1
    mem_per_node: int | None = None
    efficiency: float = 0.9
    worker_mem: int | None = None

    def __post_init__(self) -> None:
        if (self.input_bytes is None) == (self.docs is None):
            raise SpecError("estimate: give exactly one of --input-bytes and --docs (the full job's size)")
        for key in ("input_bytes", "docs", "nodes", "cores_per_node", "mem_per_node", "worker_mem"):
            v = getattr(self, key)
            if v is not None and v < 1:
                raise SpecError(f"estimate: {key} must be >= 1, got {v}")
        if not 0 < self.efficiency <= 1:
            raise SpecError(f"estimate: efficiency must be in (0, 1], got {self.efficiency} (0.9: 90% of the cores busy)")


@dataclass(frozen=True, kw_only=True)
class Estimate:
    source: str
    scale: float
    input_bytes: float
    docs: float
    stage_cpu_seconds: dict[str, float]
    cpu_hours: float
    fixed_seconds: float
    serial_seconds: float
    wall_seconds: float
    cores: int
    usable_cores: int
    splits: float
    driver_peak_bytes: float
    worker_peak_bytes: float | None
    dedup_path: str | None
    output_docs: float
    output_bytes: float
    tokens: float
    assumptions: list[str]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def text(self) -> str:
        mb = 1e6
        lines = [f"Estimate from {self.source} (x{self.scale:,.2f} its input)", "",
                 f"input: {self.input_bytes / 1e9:,.3f} GB, {self.docs:,.0f} documents, ~{self.splits:,.0f} read splits",
                 f"cluster: {self.cores} cores, {self.usable_cores} usable",
                 f"CPU: {self.cpu_hours:,.3f} core-hours of stage work ({self.cpu_hours * 3600:,.1f} s)",
                 f"wall: {_fmt_s(self.wall_seconds)} ({_fmt_s(self.fixed_seconds)} fixed + "
                 f"{_fmt_s(self.serial_seconds)} serial on the driver + "
                 f"{_fmt_s(self.wall_seconds - self.fixed_seconds - self.serial_seconds)} of parallel work)",
                 f"driver peak memory: {self.driver_peak_bytes / mb:,.0f} MB"
                 + (f" (dedup: {self.dedup_path})" if self.dedup_path else ""),
                 "peak memory per worker: " + (f"{self.worker_peak_bytes / mb:,.0f} MB" if self.worker_peak_bytes
                                                else "as the source run's workers (not recorded in a report)"),
                 f"output: {self.output_docs:,.0f} documents, {self.output_bytes / 1e9:,.3f} GB of text, "
                 f"{self.tokens:,.0f} tokens", "",
                 "| stage | CPU s |", "|---|---:|"]
        lines += [f"| {name} | {s:,.1f} |" for name, s in self.stage_cpu_seconds.items()]
        lines += ["", "Assumptions:"] + [f"- {a}" for a in self.assumptions]
        return "\n".join(lines)


def _fmt_s(s: float) -> str:
    return f"{s:,.1f} s" if s < 3600 else f"{s / 3600:,.2f} h ({s:,.0f} s)"


def load_report(uri: str) -> dict[str, Any]:
    """A run's report: ``uri`` is its ``report.json`` or the run's output folder."""
    if not uri.endswith(".json"):
        uri = fs.join(uri, "report.json")
    try:
        report = json.loads(fs.read_text(uri))
    except FileNotFoundError as e:
        raise SpecError(f"estimate: {uri}: no such report (give a finished run's report.json or output folder)") from e
    except ValueError as e:
        raise SpecError(f"estimate: {uri}: not a JSON report ({e})") from e
    if not isinstance(report, dict) or not report.get("stages"):
        raise SpecError(f"estimate: {uri}: not a datapipe run report (no 'stages')")
    return report


def estimate(report: Mapping[str, Any], target: Target, *, source: str = "report",
             source_cores: int | None = None) -> Estimate:
    """Project ``target`` from ``report`` (see the module's docstring for the model)."""
    stages = report["stages"]
    inp = report.get("input") or {"docs": stages[0]["docs_in"], "bytes": stages[0]["bytes_in"]}
    b0, d0 = float(inp["bytes"]), float(inp["docs"])
    if b0 <= 0 or d0 <= 0:
        raise SpecError(f"estimate: {source} read no input ({d0:.0f} documents, {b0:.0f} bytes): nothing to scale from")
    cores0 = source_cores or (report.get("resources") or {}).get("cpus")
    if not cores0:
        raise SpecError(f"estimate: {source} does not record its CPUs (an older report): give --source-cores")
    if target.input_bytes is not None:
        scale, by = target.input_bytes / b0, "input bytes"
    else:
        scale, by = target.docs / d0, "documents"
    eff = target.efficiency
    # split-task seconds (parallel) and driver seconds (a global stage's passes) per stage;
    # a report from before they were recorded: all busy seconds count as split-task work
    task0 = {st["stage"]: float(st.get("task_seconds", st["busy_seconds"])) for st in stages}
    drv0 = {st["stage"]: float(st.get("driver_seconds", 0.0)) for st in stages}
    t_task0, t_drv0 = sum(task0.values()), sum(drv0.values())
    splits0 = float((report.get("splits") or {}).get("total") or cores0)
    usable0 = min(cores0, splits0)
    wall0 = float(report["wall_seconds"])
    fixed = max(0.0, wall0 - t_task0 / (usable0 * eff) - t_drv0)
    cores = target.nodes * target.cores_per_node
    splits = splits0 * scale
    usable = min(cores, max(1, math.floor(splits)))
    worker = target.worker_mem or (report.get("resources") or {}).get("worker_peak_rss_bytes")
    notes = []
    if target.mem_per_node is not None:
        per_worker = worker or MEASURED_WORKER_BYTES
        fit = max(1, target.mem_per_node // per_worker)
        if fit < target.cores_per_node:
            usable = min(usable, target.nodes * fit)
            notes.append(f"memory-bound: {target.mem_per_node / 1e9:.1f} GB per node holds {fit} workers of "
                         f"{per_worker / 1e9:.2f} GB, fewer than its {target.cores_per_node} cores")
    docs = d0 * scale
    driver0 = float((report.get("resources") or {}).get("driver_peak_rss_bytes") or 0)
    driver, dedup_path, serial, extra_fixed = driver0, None, 0.0, 0.0
    for name, rep in (report.get("stage_reports") or {}).items():
        if not (isinstance(rep, dict) and "s_curve" in rep):
            continue
        params = {**DEDUP_DEFAULTS, **{k: v for k, v in (rep.get("params") or {}).items() if k in DEDUP_DEFAULTS}}
        # the stage chooses its path by the documents that reach it (its side rows), not those read
        seen0 = float(next((st["docs_in"] for st in stages if st["stage"] == name), d0))
        seen = seen0 * scale
        if seen <= DRIVER_ROWS:
            dedup_path = (f"{name} decides in the driver ({seen:,.0f} documents reach it): "
                          f"~{seen * DEDUP_DRIVER_BYTES_PER_DOC / 1e6:,.0f} MB at most")
            driver = max(driver, driver0 + seen * DEDUP_DRIVER_BYTES_PER_DOC)
            serial += drv0.get(name, 0.0) * scale
        elif seen <= params["local_rows"]:
            dedup_path = (f"{name} decides in one Ray task ({seen:,.0f} documents reach it, above "
                          f"{DRIVER_ROWS:,}): ~{seen * DEDUP_DRIVER_BYTES_PER_DOC / 1e6:,.0f} MB at most there")
            worker = max(worker or 0, seen * DEDUP_DRIVER_BYTES_PER_DOC)
            serial += drv0.get(name, 0.0) * scale
        else:
            bound = max(params["verify_partition_rows"] * DEDUP_VERIFY_BYTES_PER_DOC,
                        params["local_max_edges"] * DEDUP_EDGE_BYTES, DEDUP_DISTRIBUTED_WORKER_BYTES)
            dedup_path = (f"{name} ({seen:,.0f} documents reach it) above local_rows {params['local_rows']:,}: "
                          f"distributed passes, each worker ~{bound / 1e9:,.1f} GB at most (measured at 1M documents; "
                          f"partitions of verify_partition_rows {params['verify_partition_rows']:,} x ~5 KB, "
                          f"local_max_edges {params['local_max_edges']:,} x ~0.4 KB)")
            worker = max(worker or 0, bound)
            extra_fixed += DEDUP_PASSES_FIXED_SECONDS
            if seen0 <= DRIVER_ROWS:
                notes.append(f"driver peak: the source's, which includes its one-process passes over {seen0:,.0f} documents "
                             f"(up to ~{seen0 * DEDUP_DRIVER_BYTES_PER_DOC / 1e6:,.0f} MB) that the distributed path "
                             "does not hold: an upper bound")
    stage_cpu = {name: (task0[name] + drv0[name]) * scale for name in task0}
    work = sum(stage_cpu.values())
    wall = fixed + extra_fixed + serial + (work - serial) / (usable * eff)
    totals = report.get("totals") or {}
    out_bytes = sum(float(t.get("text_bytes", 0)) for t in (totals.get("per_source") or {}).values())
    tokens = sum(float(t.get("tokens", 0)) for t in (report.get("shards") or {}).values())
    assumptions = [
        f"source: {source} (job {report.get('job')!r}, started {report.get('started')}): {d0:,.0f} documents, "
        f"{b0 / 1e6:,.2f} MB read, {wall0:.1f} s wall on {cores0} CPUs, {t_task0:.1f} s of stage work in split "
        f"tasks, {t_drv0:.1f} s of global stages' passes run from the driver",
        f"scaled by {by}: x{scale:,.3f}; input bytes are the read stage's (text + raw markup, decompressed)",
        "linear per-byte costs per stage: "
        + ", ".join(f"{n} {1e6 * (task0[n] + drv0[n]) / b0:.3g} s/MB" for n in task0 if task0[n] + drv0[n] > 0),
        f"fixed start-up cost separated: {fixed:.1f} s (source wall {wall0:.1f} s minus {t_task0:.1f} s of split-task "
        f"work over {usable0:g} usable CPUs at {eff:.0%} and {t_drv0:.1f} s of global stages' passes), carried over unchanged "
        "(a cluster's start-up may be longer)"
        + (f"; plus {extra_fixed:.0f} s for dedup's distributed passes' start-up (docs/dedup.md)" if extra_fixed else ""),
        f"global stages' passes (dedup): serial (in the driver or one Ray task) up to local_rows documents ({serial:,.1f} s "
        "projected), otherwise spread over the cores like split work",
        f"parallel efficiency {eff:.0%} of {usable} usable cores ({target.nodes} nodes x {target.cores_per_node} "
        f"cores; splits ~{splits:,.0f} at the source's split size)",
        "CPU hours count stage work (busy seconds in the split tasks and global stages), not Ray's own processes "
        "or the driver's start-up",
        "a stage's busy seconds are wall time inside the stage: on a loaded source machine they include waiting "
        "for a core, which inflates the projection",
        "memory: split tasks hold one split at a time (flat in input); driver flat except dedup's one-process passes "
        f"up to {DRIVER_ROWS:,} documents (above: in one Ray task up to local_rows; docs/dedup.md bounds)",
        f"output ratios as in the source: {totals.get('documents', 0) / d0:.3f} documents kept per document read, "
        f"{out_bytes / b0:.3f} text bytes per input byte, {tokens / b0:.4f} tokens per input byte",
    ] + notes
    return Estimate(source=source, scale=scale, input_bytes=b0 * scale, docs=docs, stage_cpu_seconds=stage_cpu,
                    cpu_hours=work / 3600, fixed_seconds=fixed + extra_fixed, serial_seconds=serial, wall_seconds=wall, cores=cores, usable_cores=usable,
                    splits=splits, driver_peak_bytes=driver, worker_peak_bytes=worker, dedup_path=dedup_path,
                    output_docs=totals.get("documents", 0) * scale, output_bytes=out_bytes * scale,
                    tokens=tokens * scale, assumptions=assumptions)


_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "t": 10**12, "tb": 10**12, "p": 10**15, "pb": 10**15,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50}


def parse_size(text: str) -> int:
    """``"250"``, ``"4.5GB"``, ``"80 TB"``, ``"1M"`` (decimal units), ``"394TiB"`` (binary
    units, as Common Crawl states its crawls' sizes) -> an int."""
    t = text.strip().lower().replace(",", "").replace("_", "")
    num = t.rstrip("kmgtpbi ")
    unit = t[len(num):].strip()
    try:
        value = float(num)
    except ValueError:
        value = None
    if value is None or unit not in _UNITS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 500000, 64GB, 80TB, 394TiB)")
    return int(value * _UNITS[unit])


def _cmd_estimate(args: argparse.Namespace) -> int:
    report = load_report(args.report)
    target = Target(input_bytes=args.input_bytes, docs=args.docs, nodes=args.nodes,
                    cores_per_node=args.cores_per_node, mem_per_node=args.mem_per_node,
                    efficiency=args.efficiency, worker_mem=args.worker_mem)
    est = estimate(report, target, source=args.report, source_cores=args.source_cores)
    print(json.dumps(est.to_dict(), indent=2) if args.json else est.text())
    return 0


def add_cli(sub) -> None:
    p = sub.add_parser("estimate", help="project a full job's CPU hours, wall time, memory and output from a "
                                        "finished run's report")
    p.add_argument("report", help="a finished run's report.json or output folder (a small run of the same chain)")
    size = p.add_mutually_exclusive_group(required=True)
    size.add_argument("--input-bytes", type=parse_size, help="the full job's input (e.g. 80TB, 394TiB; as the report counts "
                                                             "it: decompressed text + markup)")
    size.add_argument("--docs", type=parse_size, help="the full job's documents (e.g. 1M)")
    p.add_argument("--nodes", type=int, default=1)
    p.add_argument("--cores-per-node", type=int, required=True)
    p.add_argument("--mem-per-node", type=parse_size, help="e.g. 256GB: fewer workers per node if they do not fit")
    p.add_argument("--worker-mem", type=parse_size, help="a worker's peak memory (default: the largest measured in "
                                                         "docs/dedup.md, ~1 GB)")
    p.add_argument("--efficiency", type=float, default=0.9, help="parallel efficiency (default 0.9)")
    p.add_argument("--source-cores", type=int, help="CPUs of the source run (for reports that do not record them)")
    p.add_argument("--json", action="store_true", help="print the estimate as JSON")
    p.set_defaults(func=_cmd_estimate)
