"""``datapipe inspect OUTPUT``: what each rule dropped, with the part that triggered it.

Tuning a threshold means reading examples of what it drops (datatrove's
``inspect_data``, Data-Juicer's tracer). This samples rejected documents from a job's
``rejects/`` output, filtered by ``--reason`` (``gopher_quality:stop_words``, or a
stage prefix ``gopher_quality:``), ``--stage`` and ``--source``, and prints each with
its ``reject_detail`` (the value that failed: a ratio, a word count, the language, the
bad word, the repeated line, the kept duplicate's id). When the detail points into the
document (a bad word or repeated line it quotes; a marker in quotes, on the ``line N``
it names: code_filter's generated files; ``at chars A-B``: the n-gram decontamination
matched), the text is shown around that part
with it marked ``>>>like this<<<``; otherwise the document's beginning is shown.

Without filters it lists the drop reasons by count, with a couple of examples each.

Cost: the rejects' small columns (id, source, stage, reason, detail) are read in full to
filter and count; the text is read only for the sampled rows, file by file. Sampling is
seeded (``--seed``), so the same command shows the same documents.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from datapipe.errors import SpecError

KEY_COLUMNS = ("id", "source", "reject_stage", "reject_reason", "reject_detail")
_CONTEXT = 160


@dataclass(frozen=True)
class Example:
    id: str
    source: str
    reason: str
    detail: str | None
    text: str | None
    origin: str | None


def reject_files(output: str | Path) -> list[Path]:
    """The rejects files of a job output (Parquet, or JSONL when written so)."""
    root = Path(output) / "rejects"
    if not root.is_dir():
        raise SpecError(f"{output} has no rejects/ folder: give the output folder of a `datapipe run` "
                        "(the spec's 'output', e.g. runs/sample)")
    files = sorted(p for p in root.rglob("*") if p.is_file() and (p.suffix == ".parquet" or ".jsonl" in p.name))
    return files


def _read(path: Path, columns: list[str] | None) -> pa.Table:
    if path.suffix == ".parquet":
        names = pq.read_schema(path).names
        return pq.read_table(path, columns=[c for c in columns if c in names] if columns else None)
    from datapipe.readers._streams import compression_of, open_binary

    with open_binary(str(path), compression_of(str(path))) as fh:
        rows = [_flat(json.loads(line)) for line in fh if line.strip()]
    names = columns or sorted({k for r in rows for k in r})
    # every column typed as in Parquet: a column null in every row must still be a string
    # column (else filtering it fails: "Invalid null value")
    return pa.table({c: pa.array([_text(r.get(c)) for r in rows], pa.string()) for c in names})


def _flat(record: dict) -> dict:
    """A JSONL output record (Dolma's layout: ``id``, ``text``, ``source`` on top, every
    other column under ``metadata``) as the flat row a Parquet output holds."""
    meta = record.get("metadata")
    row = dict(meta) if isinstance(meta, dict) else {}
    row.update({k: v for k, v in record.items() if k != "metadata"})
    return row


def _text(value) -> str | None:
    return value if value is None or isinstance(value, str) else json.dumps(value, sort_keys=True)


def _matches(table: pa.Table, *, reason: str | None, stage: str | None, source: str | None) -> pa.Array:
    mask = pa.array([True] * table.num_rows)
    if reason:
        col = pc.fill_null(table.column("reject_reason"), "")
        hit = pc.starts_with(col, reason) if reason.endswith(":") else pc.equal(col, reason)
        mask = pc.and_(mask, hit)
    if stage:
        mask = pc.and_(mask, pc.equal(pc.fill_null(table.column("reject_stage"), ""), stage))
    if source:
        mask = pc.and_(mask, pc.equal(table.column("source"), source))
    return mask


def find(output: str | Path, *, reason: str | None = None, stage: str | None = None, source: str | None = None,
         n: int = 5, seed: int = 0) -> tuple[dict[str, int], list[Example]]:
    """Counts of matching rejects by reason, and ``n`` sampled examples (seeded)."""
    counts, _, _, examples = _scan(output, reason=reason, stage=stage, source=source, n=n, seed=seed)
    return counts, examples


def _scan(output: str | Path, *, reason: str | None, stage: str | None, source: str | None, n: int,
          seed: int) -> tuple[dict[str, int], dict[str, int], dict[str, int], list[Example]]:
    """:func:`find`'s counts and examples, plus every reason and every source present in
    the rejects (with counts): what to show when a filter matches nothing."""
    files = reject_files(output)
    hits: list[tuple[int, int]] = []         # (file index, row)
    counts: dict[str, int] = {}
    all_reasons: dict[str, int] = {}
    all_sources: dict[str, int] = {}
    for i, path in enumerate(files):
        t = _read(path, list(KEY_COLUMNS))
        if t.num_rows == 0:
            continue
        rows = pc.indices_nonzero(_matches(t, reason=reason, stage=stage, source=source)).to_pylist()
        reasons = t.column("reject_reason").to_pylist()
        for r in reasons:
            all_reasons[r] = all_reasons.get(r, 0) + 1
        for s in t.column("source").to_pylist():
            all_sources[s] = all_sources.get(s, 0) + 1
        for r in rows:
            counts[reasons[r]] = counts.get(reasons[r], 0) + 1
        hits.extend((i, r) for r in rows)
    chosen = sorted(random.Random(seed).sample(hits, min(n, len(hits))))

    def by_count(d: dict) -> dict:
        return dict(sorted(d.items(), key=lambda kv: (-kv[1], str(kv[0]))))

    return by_count(counts), by_count(all_reasons), by_count(all_sources), list(_load(files, chosen))


def no_match(reasons: dict[str, int], sources: dict[str, int], *, reason: str | None, stage: str | None,
             source: str | None) -> str:
    """What to print when the filters match nothing: what does exist, and the likely fix."""
    if not reasons:
        return "no rejected documents in this output"
    lines = ["no rejected documents match"
             + "".join(f" {flag} {value!r}" for flag, value in (("--reason", reason), ("--stage", stage),
                                                                   ("--source", source)) if value)]
    stages = sorted({str(r).split(":", 1)[0] for r in reasons})
    if reason and ":" not in reason and reason in stages:
        lines.append(f"  --reason takes '<stage>:<rule>' or a stage prefix ending in ':'; every reason of "
                     f"stage {reason!r}: --reason {reason}:")
    lines.append("reasons present:")
    lines.extend(f"  {k:>8}  {r}" for r, k in reasons.items())
    lines.append("sources present: " + ", ".join(f"{s} ({k})" for s, k in sources.items()))
    if stage and stage not in stages:
        lines.append("stages that dropped documents: " + ", ".join(stages))
    return "\n".join(lines)


def _load(files: list[Path], chosen: list[tuple[int, int]]) -> Iterator[Example]:
    by_file: dict[int, list[int]] = {}
    for i, r in chosen:
        by_file.setdefault(i, []).append(r)
    for i, rows in sorted(by_file.items()):
        t = _read(files[i], list(KEY_COLUMNS) + ["text", "origin"]).take(pa.array(rows))
        for row in t.to_pylist():
            yield Example(id=row["id"], source=row["source"], reason=row["reject_reason"],
                          detail=row.get("reject_detail"), text=row.get("text"), origin=row.get("origin"))


_CHARS_RE = re.compile(r"\bat chars (\d+)-(\d+)\b")
_LINE_RE = re.compile(r"\bline (\d+)\b")
_QUOTED_RE = re.compile(r""""([^"]{2,})"|'([^']{2,})'""")


def _line_span(text: str, number: int) -> tuple[int, int] | None:
    """``(start, end)`` of 1-based line ``number`` of ``text``, or None past its end."""
    start = 0
    for _ in range(number - 1):
        start = text.find("\n", start) + 1
        if start == 0:
            return None
    end = text.find("\n", start)
    return start, len(text) if end < 0 else end


def locate(text: str, detail: str | None) -> tuple[int, int] | None:
    """Where in ``text`` the rule's ``detail`` points, as ``(start, end)``: a span it
    names (``at chars A-B``: decontamination's matched n-gram); else the detail itself
    when it is a piece of the text (a bad word, a repeated line) or a piece it quotes
    (``header 'DO NOT EDIT' line 18``: a generated file's marker), looked for first on
    the line it names (``line N``, 1-based), then anywhere; else that line; else None."""
    if not detail:
        return None
    m = _CHARS_RE.search(detail)
    if m and int(m.group(1)) < int(m.group(2)) <= len(text):
        return int(m.group(1)), int(m.group(2))
    m = _LINE_RE.search(detail)
    line = _line_span(text, int(m.group(1))) if m and int(m.group(1)) >= 1 else None
    pieces = [detail] if len(detail) >= 2 and not _is_number(detail) else []
    pieces += [q.group(1) or q.group(2) for q in _QUOTED_RE.finditer(detail)]
    low = text.lower()
    same = len(low) == len(text)         # lower() kept the offsets (it nearly always does)
    for a, b in ([line] if line else []) + [(0, len(text))]:
        for piece in pieces:
            pos = text.find(piece, a, b)
            if pos < 0 and same:
                pos = low.find(piece.lower(), a, b)
            if pos >= 0:
                return pos, pos + len(piece)
    return line


def excerpt(text: str | None, detail: str | None, width: int = _CONTEXT) -> str:
    """The part of ``text`` the rule pointed at (:func:`locate`), in context and marked
    ``>>>like this<<<``; else the beginning."""
    if not text:
        return "(no text)"
    span = locate(text, detail)
    if span is not None:
        pos, end = span
        a, b = max(0, pos - width), min(len(text), end + width)
        return (("..." if a else "") + text[a:pos] + ">>>" + text[pos:end] + "<<<"
                + text[end:b] + ("..." if b < len(text) else ""))
    head = text[: 2 * width]
    return head + ("..." if len(text) > len(head) else "")


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def examples_by_reason(output: str | Path, *, top: int = 5, per_reason: int = 2, seed: int = 0) -> dict[str, list[Example]]:
    """A few examples for each of the ``top`` drop reasons (for reports)."""
    counts, _ = find(output, n=0, seed=seed)
    return {reason: find(output, reason=reason, n=per_reason, seed=seed)[1] for reason in list(counts)[:top]}


def drop_examples(output: str | Path, *, top: int = 5, per_reason: int = 2, width: int = 100) -> dict[str, list[dict]]:
    """For the run report: the ``top`` drop reasons' first examples (seeded sample) with
    id, source, detail and the excerpt that shows what triggered the rule. Empty when
    the output has no rejects."""
    if not (Path(output) / "rejects").is_dir():
        return {}
    return {reason: [{"id": ex.id, "source": ex.source, "detail": ex.detail,
                      "excerpt": excerpt(ex.text, ex.detail, width)} for ex in exs]
            for reason, exs in examples_by_reason(output, top=top, per_reason=per_reason).items()}


def examples_markdown(examples: dict[str, list[dict]]) -> str:
    """The report.md section for :func:`drop_examples`."""
    if not examples:
        return ""
    lines = ["", "## Examples of dropped documents", "",
             "(more with `datapipe inspect <output> --reason <reason>`)"]
    for reason, exs in examples.items():
        lines += ["", f"### {reason}", ""]
        for ex in exs:
            text = " ".join(ex["excerpt"].split())
            lines.append(f"- `{ex['id']}` [{ex['source']}]" + (f" detail `{ex['detail']}`" if ex["detail"] else "")
                         + f": {text}")
    return "\n".join(lines) + "\n"


def render(counts: dict[str, int], examples: list[Example], *, filtered: bool) -> str:
    lines = []
    if not counts:
        return "no rejected documents match"
    if filtered and len(counts) == 1:
        (reason, total), = counts.items()
        lines.append(f"{reason}: {total} rejected; {len(examples)} shown")
    else:
        lines.append(f"{sum(counts.values())} rejected documents match:")
        lines.extend(f"  {n:>8}  {r}" for r, n in counts.items())
    for ex in examples:
        lines.append("")
        lines.append(f"--- {ex.id}  [{ex.source}]  {ex.reason}" + (f"  detail: {ex.detail}" if ex.detail else ""))
        if ex.origin:
            lines.append(f"    from {ex.origin}")
        lines.append(excerpt(ex.text, ex.detail))
    return "\n".join(lines)


def _cmd_inspect(args: argparse.Namespace) -> int:
    filtered = bool(args.reason or args.stage or args.source)
    if filtered:
        counts, reasons, sources, examples = _scan(args.output, reason=args.reason, stage=args.stage,
                                                   source=args.source, n=args.n, seed=args.seed)
        if not counts:
            print(no_match(reasons, sources, reason=args.reason, stage=args.stage, source=args.source))
            return 0
        print(render(counts, examples, filtered=True))
        return 0
    counts, _ = find(args.output, n=0)
    print(render(counts, [], filtered=False))
    for reason, exs in examples_by_reason(args.output, top=args.top, per_reason=args.n, seed=args.seed).items():
        print(f"\n## {reason} ({counts[reason]})")
        print(render({reason: counts[reason]}, exs, filtered=True).split("\n", 1)[1] if exs else "")
    return 0


def add_cli(sub) -> None:
    p = sub.add_parser("inspect", help="sample rejected documents of a job output, with what triggered the rule")
    p.add_argument("output", help="a job's output folder (e.g. runs/sample)")
    p.add_argument("--reason", help="a drop reason (gopher_quality:stop_words) or a stage prefix (gopher_quality:)")
    p.add_argument("--stage", help="the stage (instance) name that dropped them")
    p.add_argument("--source", help="only this source")
    p.add_argument("-n", type=int, default=5, help="examples to show (per reason without filters; default 5)")
    p.add_argument("--top", type=int, default=5, help="without filters: reasons to show examples for")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (same seed, same examples)")
    p.set_defaults(func=_cmd_inspect)
