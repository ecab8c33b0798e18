"""Reading token shards back: :func:`verify_shards` (every check a shard must pass,
from the files alone) and :func:`inspect_shards` (counts, document-length histogram, a
decoded excerpt), and the ``datapipe shards verify|inspect`` commands. The format is
:mod:`datapipe.megatron`'s, shared with the loader; the writer is the ``tokenize``
stage's (``stages/tokenize/writer.py``). How and why in ``docs/shards.md``.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from datapipe import megatron as fmt
from datapipe.errors import SpecError

log = logging.getLogger(__name__)

MANIFEST = fmt.MANIFEST_NAME


# verify and inspect


def manifest_paths(path: str | os.PathLike[str]) -> list[Path]:
    """``path/manifest.json`` if it exists, else every ``path/*/manifest.json`` (sorted)."""
    p = Path(path)
    if p.is_file() and p.name == MANIFEST:
        return [p]
    if (p / MANIFEST).is_file():
        return [p / MANIFEST]
    return sorted(p.glob(f"*/{MANIFEST}"))


def verify_shards(path: str | os.PathLike[str]) -> list[str]:
    """Recompute every hash and count of the shards under ``path`` (a source folder or a
    folder of source folders) and check each ``.idx`` against its ``.bin`` and the
    manifest. Returns problems naming the shard and what differs; empty means good."""
    paths = manifest_paths(path)
    if not paths:
        return [f"{path}: no {MANIFEST} here or in its subfolders"]
    problems: list[str] = []
    for mp in paths:
        try:
            m = fmt.load_manifest(mp)
        except fmt.ShardFormatError as e:
            problems.append(str(e))
            continue
        problems.extend(f"{m.source}/{p}" for p in _verify_manifest(m))
    return problems


def _verify_manifest(m: fmt.SourceManifest) -> list[str]:
    problems = fmt.check_layout(m)
    for rec in m.shards:
        problems.extend(fmt.check_shard(rec, m.dtype, eos_id=m.eos_id, vocab_size=m.vocab_size))
    listed = {p.name for rec in m.shards for p in (rec.bin_path, rec.idx_path)}
    for f in sorted(m.path.parent.iterdir()):
        if f.name.endswith(".tmp"):
            problems.append(f"{f.name}: leftover temporary file (an interrupted write)")
        elif f.suffix in (".bin", ".idx") and f.name not in listed:
            problems.append(f"{f.name}: shard file not listed in the manifest")
    return problems


def _doc_lengths(m: fmt.SourceManifest) -> np.ndarray:
    """Length (EOS included) of every document of a source, split documents rejoined."""
    out: list[np.ndarray] = []
    carry = 0
    for rec in m.shards:
        lengths = fmt.read_idx(rec.idx_path).lengths.astype(np.int64)
        if rec.first_doc_continued and len(lengths):
            lengths = lengths.copy()
            lengths[0] += carry
            carry = 0
        if rec.last_doc_split and len(lengths):
            carry = int(lengths[-1])
            lengths = lengths[:-1]
        out.append(lengths)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def _first_doc(m: fmt.SourceManifest, limit: int) -> np.ndarray:
    for rec in m.shards:
        lengths = fmt.read_idx(rec.idx_path).lengths
        if len(lengths):
            n = min(int(lengths[0]), limit)
            return np.fromfile(rec.bin_path, dtype=fmt.NP_DTYPES[m.dtype], count=n).astype(np.int64)
    return np.zeros(0, dtype=np.int64)


def inspect_shards(
    path: str | os.PathLike[str], *, tokenizer: str | None = None, excerpt_tokens: int = 64,
    load: Callable[[str], tuple[Any, str]] | None = None,
) -> dict[str, Any]:
    """Per source: shard/document/token counts, split documents, a power-of-two histogram
    of document lengths (EOS included), and the first document's first tokens decoded
    with ``tokenizer`` (default: the copy beside the shards the manifest names, else its
    recorded path). ``load(path) -> (tokenizer with .decode, fingerprint)`` loads it
    (the ``tokenize`` plugin's loader; the engine knows no tokenizer format): without
    it, or when nothing loads, the excerpt is ids only. A tokenizer whose fingerprint
    differs from the manifest's is used with a warning in ``excerpt_note``."""
    report: dict[str, Any] = {"sources": {}}
    for mp in manifest_paths(path):
        m = fmt.load_manifest(mp)
        try:
            lengths = _doc_lengths(m)
        except (OSError, ValueError) as e:
            raise fmt.ShardFormatError(str(mp), "shards unreadable; run `datapipe shards verify`", str(e)) from None
        hist: dict[str, int] = {}
        if len(lengths):
            b = np.floor(np.log2(lengths)).astype(np.int64)
            for k, c in zip(*np.unique(b, return_counts=True)):
                hist[f"{2**int(k)}-{2**(int(k) + 1) - 1}"] = int(c)
        first = _first_doc(m, excerpt_tokens)
        excerpt, note = _decode(first, m, tokenizer, m.path.parent, load)
        report["sources"][m.source] = {
            "manifest": str(mp),
            "dtype": m.dtype,
            "shards": len(m.shards),
            "documents": m.total_documents,
            "tokens": m.total_tokens,
            "span_documents": m.span_documents,
            "split_documents": sum(1 for r in m.shards if r.last_doc_split),
            "mean_doc_tokens": float(lengths.mean()) if len(lengths) else 0.0,
            "max_doc_tokens": int(lengths.max()) if len(lengths) else 0,
            "doc_length_histogram": hist,
            "tokenizer": m.fingerprint,
            "excerpt_ids": first.tolist(),
            "excerpt": excerpt,
            "excerpt_note": note,
        }
    return report


def _decode(ids: np.ndarray, m: fmt.SourceManifest, tokenizer: str | None, folder: Path,
            load: Callable[[str], tuple[Any, str]] | None) -> tuple[str | None, str]:
    path = tokenizer or m.tokenizer.get("path")
    if not tokenizer and path and (folder / path).exists():  # a copy kept beside the shards
        path = str(folder / path)
    if load is None:
        return None, "no tokenizer loader given; showing ids only"
    if not path or not Path(path).exists():
        return None, f"tokenizer {path!r} not found; showing ids only (pass --tokenizer)"
    try:
        tok, fingerprint = load(path)
    except SpecError as e:
        return None, str(e)
    note = ""
    if fingerprint != m.fingerprint:
        note = f"warning: {path} is not the tokenizer these shards were written with (fingerprint differs)"
    return tok.decode([int(i) for i in ids], skip_special_tokens=False), note


def format_inspect(report: Mapping[str, Any]) -> str:
    """A human summary of :func:`inspect_shards`'s report."""
    lines: list[str] = []
    for src, r in report["sources"].items():
        lines.append(f"source {src}  ({r['manifest']})")
        lines.append(f"  {r['shards']} shard(s), {r['documents']} documents, {r['tokens']} tokens ({r['dtype']}), "
                     f"{r['split_documents']} split across shards")
        lines.append(f"  document tokens incl. EOS: mean {r['mean_doc_tokens']:.1f}, max {r['max_doc_tokens']}")
        hist = r["doc_length_histogram"]
        if hist:
            top = max(hist.values())
            width = max(len(k) for k in hist)
            for k, c in hist.items():
                bar = "#" * max(1, round(40 * c / top))
                lines.append(f"    {k:>{width}} | {bar} {c}")
        if r["excerpt"] is not None:
            lines.append("  first document: " + json.dumps(r["excerpt"], ensure_ascii=False))
        else:
            lines.append(f"  first document ids: {r['excerpt_ids']}")
        if r["excerpt_note"]:
            lines.append(f"  {r['excerpt_note']}")
    return "\n".join(lines) if lines else "no shard manifests found"


# ---------------------------------------------------------------------------------------
# CLI


def add_cli(subparsers: argparse._SubParsersAction, *, load: Callable[[str], tuple[Any, str]] | None = None) -> None:
    """Register ``datapipe shards verify|inspect``; ``load`` decodes inspect's excerpt
    (see :func:`inspect_shards`). The ``tokenize`` plugin registers them with its
    tokenizer loader. Handlers return the exit code (``sys.exit(args.func(args))``)."""
    p = subparsers.add_parser("shards", help="check or describe token shards")
    sp = p.add_subparsers(dest="shards_command", required=True)
    v = sp.add_parser("verify", help="recompute hashes and counts; exit 1 on any problem")
    v.add_argument("dir", help="a source's shard folder, or a folder of them (<job output>/shards)")
    v.set_defaults(func=_cli_verify)
    i = sp.add_parser("inspect", help="counts per source, document-length histogram, a decoded excerpt")
    i.add_argument("dir")
    i.add_argument("--tokenizer", default=None, help="tokenizer for the excerpt (default: the manifest's)")
    i.add_argument("--excerpt-tokens", type=int, default=64)
    i.add_argument("--json", action="store_true", help="print the report as JSON")
    i.set_defaults(func=functools.partial(_cli_inspect, load=load))


def _cli_verify(args: argparse.Namespace) -> int:
    from datapipe.commit import local_for_reading

    local = local_for_reading(args.dir)   # URIs: checked for _SUCCESS, then cached locally
    problems = verify_shards(local)
    n = len(manifest_paths(local))
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) in {args.dir}")
        return 1
    print(f"ok: {n} source manifest(s) under {args.dir} verified")
    return 0


def _cli_inspect(args: argparse.Namespace, *, load: Callable[[str], tuple[Any, str]] | None = None) -> int:
    from datapipe.commit import local_for_reading

    local = local_for_reading(args.dir)
    if not manifest_paths(local):
        print(f"{args.dir}: no {MANIFEST} here or in its subfolders")
        return 1
    report = inspect_shards(local, tokenizer=args.tokenizer, excerpt_tokens=args.excerpt_tokens, load=load)
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else format_inspect(report))
    return 0
