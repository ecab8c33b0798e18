"""The run report: ``report.json``, a readable ``report.md`` (also printed at the end of
a run) and ``drops.png``, a picture of where documents were dropped."""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path
from typing import Any

from datapipe.spec import JobSpec
from datapipe.stage import DROPS_BY, BatchStats


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def build_report(job: JobSpec, chain: list[str], stats: dict[str, dict[str, dict[str, Any]]],
                 files: list[dict[str, Any]], *, problems: list[str], wall_seconds: float, started: float,
                 global_seconds: dict[str, float], stage_reports: dict[str, Any], job_hash: str,
                 shards: dict[str, Any] | None = None, splits: dict[str, Any] | None = None) -> dict[str, Any]:
    sources = [s.name for s in job.sources]
    kinds = {"read": "read"}
    for st in job.stages:
        kinds[st.name] = st.cls.kind
    stages = []
    for name in chain:
        per_source = {}
        total = BatchStats()
        for src in sources:
            st = BatchStats.from_dict(stats.get(name, {}).get(src, BatchStats().to_dict()))
            per_source[src] = st.to_dict()
            total.merge(st)
        seconds = global_seconds.get(name, total.seconds)
        entry = {
            "stage": name,
            "kind": kinds.get(name, "?"),
            "docs_in": total.docs_in,
            "docs_out": total.docs_out,
            "dropped": dict(sorted(total.dropped.items(), key=lambda kv: -kv[1])),
            "bytes_in": total.bytes_in,
            "bytes_out": total.bytes_out,
            "docs_changed": total.docs_changed,
            "changes": total.changes,
            "busy_seconds": round(seconds, 4),
            # for `datapipe estimate`: seconds in the split tasks (a global stage's side())
            # and a global stage's passes, run from the driver (busy_seconds shows the latter alone)
            "task_seconds": round(total.seconds - global_seconds.get(name, 0.0), 4),
            "driver_seconds": round(global_seconds.get(name, 0.0), 4),
            "docs_per_second": round(total.docs_in / seconds, 1) if seconds > 0 else None,
            "per_source": per_source,
        }
        stages.append(entry)
    kept = {s: 0 for s in sources}
    rejected = {s: 0 for s in sources}
    kept_bytes = {s: 0 for s in sources}
    for f in files:
        if f["kind"] == "documents":
            kept[f["source"]] += f["rows"]
            kept_bytes[f["source"]] += f["text_bytes"]
        else:
            rejected[f["source"]] += f["rows"]
    totals = {
        "documents": sum(kept.values()),
        "rejects": sum(rejected.values()),
        "per_source": {s: {"documents": kept[s], "rejects": rejected[s], "text_bytes": kept_bytes[s]} for s in sources},
    }
    report = {
        "job": job.name,
        "spec": job.path,
        "output": job.output,
        "job_hash": job_hash,
        "spec_hash": job.spec_hash(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "wall_seconds": round(wall_seconds, 2),
        "accounting_ok": not problems,
        "splits": splits or {},
        "input": {"docs": stages[0]["docs_in"], "bytes": stages[0]["bytes_in"]} if stages else {},
        "resources": run_resources(job),
        "problems": problems,
        "stages": stages,
        "totals": totals,
        "files": files,
        "shards": shards or {},
        "stage_reports": stage_reports,
        "drops_by": {"column": DROPS_BY, "per_source": drops_by(job, stages)},
    }
    report["summary_text"] = summary_markdown(report)
    report["console_text"] = console_summary(report)
    return report


def run_resources(job: JobSpec) -> dict[str, Any]:
    """What the run had and used, for ``datapipe estimate``: ``cpus`` (the Ray cluster's
    CPUs when Ray is up, else ``execution.num_cpus``), the driver's peak RSS and CPU
    seconds (user + system) so far. Per-worker memory is not recorded here (the split
    tasks do not measure it; ``bench/scale.py`` samples it from ``/proc``)."""
    cpus = job.execution.num_cpus
    try:
        import ray

        if ray.is_initialized():
            cpus = int(ray.cluster_resources().get("CPU", 0)) or cpus
    except Exception:  # noqa: BLE001 - resources are informative; the report must still be written
        pass
    use = resource.getrusage(resource.RUSAGE_SELF)
    return {"cpus": cpus, "driver_peak_rss_bytes": use.ru_maxrss * 1024,
            "driver_cpu_seconds": round(use.ru_utime + use.ru_stime, 2)}


def drops_by(job: JobSpec, stages: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    """``{source: {group: {reason: n}}}``, every stage's drops by the :data:`DROPS_BY`
    column, for the sources whose reader declares that column (``columns`` of the reader
    class, e.g. the ``code`` reader's ``language``): the code filters' reasons per
    language. Groups by documents dropped, most first; reasons likewise."""
    declared = [s.name for s in job.sources if DROPS_BY in (getattr(s.reader, "columns", None) or {})]
    out: dict[str, dict[str, dict[str, int]]] = {}
    for src in declared:
        merged: dict[str, dict[str, int]] = {}
        for st in stages:
            for group, reasons in st["per_source"].get(src, {}).get("dropped_by", {}).items():
                g = merged.setdefault(group, {})
                for reason, n in reasons.items():
                    g[reason] = g.get(reason, 0) + n
        out[src] = {g: dict(sorted(r.items(), key=lambda kv: (-kv[1], kv[0])))
                    for g, r in sorted(merged.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))}
    return out


def _drops_by_section(report: dict[str, Any]) -> list[str]:
    """One table per declaring source: group, documents dropped, the reasons."""
    info = report.get("drops_by") or {}
    lines: list[str] = []
    for src, groups in (info.get("per_source") or {}).items():
        if not groups:
            continue
        lines += ["", f"Drop reasons by {info['column']} ({src}):", "",
                  f"| {info['column']} | dropped | reasons |", "|---|---:|---|"]
        for group, reasons in groups.items():
            lines.append(f"| {group} | {sum(reasons.values())} | "
                         + ", ".join(f"{r} ({n})" for r, n in reasons.items()) + " |")
    return lines


def console_summary(report: dict[str, Any]) -> str:
    """What ``datapipe run`` prints at the end: the stage table and totals. Everything
    else (per source, shards, dedup, rewrites, examples) is in report.md / report.json."""
    lines = summary_markdown(report).split("\n")
    end = lines.index("| source | documents | rejects | kept text |")
    out = lines[:end]
    t = report["totals"]
    out.append(f"kept {t['documents']} documents, rejected {t['rejects']}"
               + (f"; {sum(s['tokens'] for s in report['shards'].values())} tokens in "
                  f"{sum(s['shards'] for s in report['shards'].values())} shards" if report.get("shards") else ""))
    if report["problems"]:
        out.append("Accounting problems:")
        out.extend(f"- {p}" for p in report["problems"])
    out.append("Per source, shards, dedup, rewrites and drop examples: report.md (drop reasons: report.json, drops.png)")
    return "\n".join(out)


def summary_markdown(report: dict[str, Any]) -> str:
    lines = [f"# datapipe run: {report['job']}", ""]
    status = "OK" if report["accounting_ok"] else "FAILED"
    lines.append(f"wall time {report['wall_seconds']:.1f} s; accounting (in == out + dropped, per stage and source): {status}")
    sp = report.get("splits") or {}
    if sp:
        lines.append(f"read splits: {sp['total']}; reused from an interrupted run: {sp['reused']}"
                     + (f" (per phase: {', '.join(map(str, sp['reused_per_phase']))})" if sp.get("phases", 1) > 1 else ""))
    lines.append("")
    lines.append("| stage | kind | docs in | docs out | dropped | bytes in | bytes out | busy s | docs/s | top drop reasons |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for st in report["stages"]:
        dropped = sum(st["dropped"].values())
        top = ", ".join(f"{r} ({n})" for r, n in list(st["dropped"].items())[:3]) or "-"
        dps = f"{st['docs_per_second']:.0f}" if st["docs_per_second"] else "-"
        lines.append(f"| {st['stage']} | {st['kind']} | {st['docs_in']} | {st['docs_out']} | {dropped} | "
                     f"{_fmt_bytes(st['bytes_in'])} | {_fmt_bytes(st['bytes_out'])} | {st['busy_seconds']:.2f} | {dps} | {top} |")
    lines.append("")
    lines.append("| source | documents | rejects | kept text |")
    lines.append("|---|---:|---:|---:|")
    for src, t in report["totals"]["per_source"].items():
        lines.append(f"| {src} | {t['documents']} | {t['rejects']} | {_fmt_bytes(t['text_bytes'])} |")
    lines.append(f"| **total** | {report['totals']['documents']} | {report['totals']['rejects']} | |")
    if report.get("shards"):
        lines.append("")
        lines.append("| token shards | documents | tokens (incl. EOS) | shards |")
        lines.append("|---|---:|---:|---:|")
        for src, t in report["shards"].items():
            lines.append(f"| {src} | {t['documents']} | {t['tokens']} | {t['shards']} |")
        lines.append(f"| **total** | {sum(t['documents'] for t in report['shards'].values())} | "
                     f"{sum(t['tokens'] for t in report['shards'].values())} | |")
    lines.extend(_drops_by_section(report))
    for name, rep in report.get("stage_reports", {}).items():
        if isinstance(rep, dict) and "s_curve" in rep:
            lines.extend(_dedup_section(name, rep))
        if isinstance(rep, dict) and isinstance(rep.get("levels"), dict) and "groups" in rep["levels"]:
            lines.extend(_levels_section(name, rep["levels"]))
    changed = [st for st in report["stages"] if st["changes"] or st["docs_changed"]]
    if changed:
        lines.append("")
        lines.append("Rewrites: " + "; ".join(
            f"{st['stage']}: {st['docs_changed']} docs changed"
            + "".join(f", {k} {v}" for k, v in sorted(st["changes"].items())) for st in changed))
    if report["problems"]:
        lines.append("")
        lines.append("Accounting problems:")
        lines.extend(f"- {p}" for p in report["problems"])
    lines.append("")
    lines.append("Drop reasons by stage and source: report.json; picture: drops.png")
    return "\n".join(lines)


def _levels_section(name: str, rep: dict[str, Any]) -> list[str]:
    """Per group (a source, or the pool), each quality level's documents and boundaries
    (the lowest and highest key: a score in its own units, or the mean percentile rank)."""
    scores = ", ".join(f"{c} ({d} is better)" for c, d in rep["scores"].items())
    lines = ["", f"**{name}**: {rep['levels']} levels per {rep['per']} by {rep['key']} of {scores}", "",
             "| group | " + " | ".join(f"q{k}" for k in range(rep["levels"])) + " | missing score |",
             "|---|" + "---:|" * (rep["levels"] + 1)]

    def cell(lv: dict[str, Any]) -> str:
        if not lv["documents"]:
            return "0"
        return f"{lv['documents']} ({lv['min']:.4g} .. {lv['max']:.4g})" if lv["min"] is not None else str(lv["documents"])

    for group, g in rep["groups"].items():
        lines.append(f"| {group} | " + " | ".join(cell(lv) for lv in g["levels"]) + f" | {g['missing_score']} |")
    return lines


def _dedup_section(name: str, rep: dict[str, Any]) -> list[str]:
    """Bands x rows with the S-curve, removals per source, where duplicates were found
    (removed source x kept source) and the cluster-size histogram."""
    lines = ["", f"**{name}**: {rep.get('bands')} bands x {rep.get('rows')} rows "
             f"(threshold {rep.get('params', {}).get('threshold')}); P(candidate) at similarity: "
             + ", ".join(f"{k}: {v:.3f}" for k, v in rep["s_curve"].items())]
    removed = rep.get("removed_per_source", {})
    if removed:
        lines.append("")
        lines.append("| removed from \\ kept in | exact | near | " + " | ".join(removed) + " |")
        lines.append("|---|---:|---:|" + "---:|" * len(removed))
        matrix = rep.get("matrix", {})
        for src, n in removed.items():
            row = matrix.get(src, {})
            lines.append(f"| {src} | {n.get('exact', 0)} | {n.get('near', 0)} | "
                         + " | ".join(str(row.get(k, 0) or "") for k in removed) + " |")
    if rep.get("cluster_sizes"):
        lines.append("")
        lines.append("cluster sizes: " + ", ".join(f"{k} docs: {v}" for k, v in rep["cluster_sizes"].items()))
    return lines


#: bar colours per source (matplotlib's tab10, cycled)
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def plot_drops(report: dict[str, Any], path: Path) -> None:
    """Horizontal bars: documents dropped at each stage, stacked by source, the total at
    the end of each bar and a legend of sources. Drawn with Pillow (a few ms; the same
    picture through matplotlib cost the driver ~2 s of CPU, mostly its import)."""
    from PIL import Image, ImageDraw, ImageFont

    stages = report["stages"]
    sources = list(report["totals"]["per_source"])
    drops = [[sum(st["per_source"].get(src, {}).get("dropped", {}).values()) for src in sources] for st in stages]
    font, small = ImageFont.load_default(size=14), ImageFont.load_default(size=12)
    label_w = 12 + max([int(font.getlength(st["stage"])) for st in stages] + [40])
    legend_w = 24 + max([int(small.getlength(src)) for src in sources] + [int(small.getlength("source"))]) + 20
    bar_w, row_h, top = 640, 28, 44
    width, height = label_w + bar_w + 60 + legend_w, top + row_h * len(stages) + 50
    img = Image.new("RGB", (width, height), "white")
    d = ImageDraw.Draw(img)
    title = (f"{report['job']}: where documents were dropped ({report['totals']['documents']} kept, "
             f"{report['totals']['rejects']} dropped)")
    d.text((10, 12), title, fill="black", font=font)
    scale = bar_w / max([sum(row) for row in drops] + [1])
    x0 = label_w
    for y, (st, row) in enumerate(zip(stages, drops)):
        cy = top + y * row_h
        d.text((x0 - 8, cy + row_h / 2), st["stage"], fill="black", font=font, anchor="rm")
        x = float(x0)
        for k, n in enumerate(row):
            if n:
                d.rectangle([x, cy + 4, x + max(1.0, n * scale), cy + row_h - 4], fill=PALETTE[k % len(PALETTE)])
                x += n * scale
        if sum(row):
            d.text((x + 4, cy + row_h / 2), str(sum(row)), fill="black", font=small, anchor="lm")
    axis_y = top + row_h * len(stages) + 4
    d.line([x0, top - 2, x0, axis_y], fill="black")
    d.line([x0, axis_y, x0 + bar_w, axis_y], fill="black")
    d.text((x0 + bar_w / 2, axis_y + 8), "documents dropped", fill="black", font=small, anchor="mt")
    lx = x0 + bar_w + 60
    d.text((lx, top), "source", fill="black", font=small)
    for k, src in enumerate(sources):
        ly = top + 20 + k * 18
        d.rectangle([lx, ly + 2, lx + 12, ly + 12], fill=PALETTE[k % len(PALETTE)])
        d.text((lx + 18, ly), src, fill="black", font=small)
    img.save(path, optimize=False)


def write_report(report: dict[str, Any], folder: Path) -> None:
    folder = Path(folder)
    (folder / "report.json").write_text(json.dumps(report, indent=2, sort_keys=False, default=str) + "\n")
    (folder / "report.md").write_text(report["summary_text"] + "\n")
    plot_drops(report, folder / "drops.png")
