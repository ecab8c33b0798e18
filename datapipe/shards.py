"""Reading token shards back: :func:`verify_shards` (every check a shard must pass,
from the files alone), :func:`inspect_shards` (counts, document-length histogram, a
decoded excerpt), :func:`iter_documents` (every document decoded, with its id), and the
``datapipe shards verify|inspect|cat|grep`` commands. The format is
:mod:`datapipe.megatron`'s, shared with the loader; the writer is the ``tokenize``
stage's (``stages/tokenize/writer.py``). How and why in ``docs/shards.md``.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np
import xxhash

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
    return _joined_lengths(m.shards)


def _joined_lengths(shards) -> np.ndarray:
    """Length (EOS included) of every document in ``shards`` (consecutive shard records),
    a document split across two shards counted once."""
    out: list[np.ndarray] = []
    carry = 0
    for rec in shards:
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
# documents back out of the shards (cat, grep)


@dataclass(frozen=True)
class ShardDocument:
    """One document of a source's token stream, in shard order. ``id`` is the document's
    id when the job's documents output lies beside the shards (see :func:`iter_documents`),
    else its place, ``<shard>#<sequence>``; ``shard`` is where it starts."""

    source: str
    id: str
    shard: str
    position: int          # 0-based, over the whole source
    tokens: np.ndarray     # the document's ids, EOS not included
    text: str | None = None


def order_key(doc_id: str, seed: int) -> int:
    """A document's place within its read split in the shards: ``xxh3_64(id as UTF-8,
    seed)``, ties broken by the id (docs/formats.md)."""
    return xxhash.xxh3_64_intdigest(doc_id.encode("utf-8", "surrogatepass"), seed)


def _split_of(m: fmt.SourceManifest, i: int) -> str:
    return str(m.raw["shards"][i].get("split", "00000"))


def _source_documents(m: fmt.SourceManifest) -> Iterator[tuple[str, int, int, np.ndarray]]:
    """``(shard name, sequence, split, tokens without EOS)`` of every document of ``m`` in
    order; a document split across shards is joined (only its parts are in memory)."""
    np_dtype = fmt.NP_DTYPES[m.dtype]
    head: list[np.ndarray] = []       # the parts of a document continued in the next shard
    head_at: tuple[str, int] = ("", 0)
    for i, rec in enumerate(m.shards):
        idx = fmt.read_idx(rec.idx_path)
        data = np.memmap(rec.bin_path, dtype=np_dtype, mode="r") if rec.bin_bytes else np.zeros(0, np_dtype)
        step = np.dtype(np_dtype).itemsize
        n = len(idx.lengths)
        for k in range(n):
            off = int(idx.pointers[k]) // step
            part = data[off:off + int(idx.lengths[k])]
            continued = k == 0 and rec.first_doc_continued
            if k == n - 1 and rec.last_doc_split:
                if not continued:
                    head, head_at = [], (rec.name, k)
                head.append(np.array(part))
                continue
            if continued:
                whole = np.concatenate(head + [np.asarray(part)])
                name, seq = head_at
                head = []
            else:
                whole, name, seq = np.asarray(part), rec.name, k
            yield name, seq, i, whole[:-1] if len(whole) and whole[-1] == m.eos_id else whole


def documents_folder(shards_uri: str, manifest: Path, local_root: Path) -> str:
    """Where the documents output of ``manifest``'s source lies: the job output holding
    the shards is ``<output>/shards/<source>/manifest.json``, its documents
    ``<output>/documents/<source>/``. ``shards_uri`` is what the user gave (a local path or
    a URI), ``local_root`` its local copy, so the answer is on the same storage."""
    from datapipe import fs

    rel = manifest.parent.relative_to(local_root)
    source_uri = fs.join(shards_uri, *rel.parts) if rel.parts else shards_uri.rstrip("/")
    output = fs.parent(fs.parent(source_uri))
    return fs.join(output, "documents", _level_of(fs.basename(source_uri))[0])


def _level_of(name: str) -> tuple[str, int | None]:
    """A shard set's source and quality level: ``web@q4`` -> ``("web", 4)``, ``web`` ->
    ``("web", None)`` (``tokenize``'s ``by_level``)."""
    base, sep, level = name.rpartition(fmt.LEVEL_SEP)
    return (base, int(level)) if sep and base and level.isdigit() else (name, None)


def _ids_of_split(folder: Path, split: str, seed: int, level: int | None = None) -> list[tuple[str, int]] | None:
    """``(id, num_tokens)`` of the split's documents in shard order, read from the
    documents output's ``part-<split>`` file (Parquet or JSONL); None when there is none.
    ``level``: only the documents of that ``quality_level`` (a ``web@q4`` shard set)."""
    files = sorted(folder.glob(f"part-{split}.*")) if folder.is_dir() else []
    if not files:
        return None
    path = files[0]
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        t = pq.read_table(path, columns=["id", "num_tokens"] + (["quality_level"] if level is not None else []))
        keep = t.column("quality_level").to_pylist() if level is not None else [level] * t.num_rows
        rows = [(i, n) for i, n, lv in zip(t.column("id").to_pylist(), t.column("num_tokens").to_pylist(), keep)
                if lv == level]
    else:
        from datapipe.readers._streams import compression_of, open_binary

        rows = []
        with open_binary(str(path), compression_of(str(path))) as fh:
            for line in fh:
                if line.strip():
                    rec = json.loads(line)
                    meta = rec.get("metadata") or {}
                    if level is None or rec.get("quality_level", meta.get("quality_level")) == level:
                        rows.append((rec["id"], meta.get("num_tokens")))
    rows.sort(key=lambda r: (order_key(r[0], seed), r[0].encode("utf-8", "surrogatepass")))
    return rows


def iter_documents(
    manifest: str | os.PathLike[str], *, documents: str | os.PathLike[str] | None = None,
    decode: Callable[[list[int]], str] | None = None, ids: Iterable[str] | None = None,
) -> Iterator[ShardDocument]:
    """Every document of one source's shards, in shard order, streamed (one document and
    one split's ids in memory). ``documents``: the folder of the job's documents output for
    this source (``part-<split>.parquet|jsonl``); each split's ids are re-derived from it by
    the shard order (:func:`order_key`) and checked against the shards' document count
    and lengths (``num_tokens`` + EOS). Without it, or when a split does not match, ids are
    positions, ``<shard>#<sequence>``, and a warning is logged. ``decode`` fills ``text``;
    ``ids`` keeps only those documents."""
    m = fmt.load_manifest(manifest)
    seed = int((m.raw.get("order") or {}).get("seed", 0))
    folder = Path(documents) if documents is not None else None
    wanted = set(ids) if ids is not None else None
    split_ids: dict[str, list[tuple[str, int]] | None] = {}
    counters: dict[str, int] = {}
    for position, (name, seq, shard_i, toks) in enumerate(_source_documents(m)):
        split = _split_of(m, shard_i)
        if split not in split_ids:
            split_ids.clear()   # splits come in order: one split's ids at a time
            split_ids[split] = _checked_ids(m, split, folder, seed)
        rows = split_ids[split]
        k = counters.get(split, 0)
        counters[split] = k + 1
        doc_id = rows[k][0] if rows is not None else f"{name}#{seq}"
        if wanted is not None and doc_id not in wanted:
            continue
        yield ShardDocument(m.source, doc_id, name, position, toks,
                            decode([int(t) for t in toks]) if decode is not None else None)


def _checked_ids(m: fmt.SourceManifest, split: str, folder: Path | None, seed: int) -> list[tuple[str, int]] | None:
    if folder is None:
        return None
    rows = _ids_of_split(folder, split, seed, _level_of(m.source)[1])
    where = f"{m.source}: split {split}"
    if rows is None:
        log.warning("%s: no part-%s file in %s; ids shown are positions <shard>#<sequence>", where, split, folder)
        return None
    lengths = _split_lengths(m, split)
    want = [n + 1 if isinstance(n, int) else None for _, n in rows]
    if len(rows) != len(lengths) or any(w is not None and w != int(x) for w, x in zip(want, lengths)):
        log.warning("%s: the documents output in %s does not match the shards (%d documents there, %d in the "
                    "shards); ids shown are positions <shard>#<sequence>", where, folder, len(rows), len(lengths))
        return None
    return rows


def _split_lengths(m: fmt.SourceManifest, split: str) -> np.ndarray:
    """Token counts (EOS included) of the split's documents, split documents joined."""
    return _joined_lengths(rec for i, rec in enumerate(m.shards) if _split_of(m, i) == split)


def tokenizer_for(m: fmt.SourceManifest, tokenizer: str | None,
                  load: Callable[[str], tuple[Any, str]] | None) -> Callable[[list[int]], str]:
    """A decoder of ``m``'s token ids: ``tokenizer`` if given, else the copy beside the
    shards the manifest names, else its recorded path. Raises :class:`SpecError` in one
    line when none can be found or loaded; warns when its fingerprint is not the shards'."""
    folder = m.path.parent
    path = tokenizer or m.tokenizer.get("path")
    if not tokenizer and path and (folder / path).exists():
        path = str(folder / path)
    if load is None:
        raise SpecError("no tokenizer loader: the stages plugin (which knows tokenizer formats) is not installed")
    if not path or not Path(path).exists():
        raise SpecError(f"source {m.source}: tokenizer {path!r} (from {m.path}) not found; "
                        "pass --tokenizer PATH (the tokenizer.json the shards were written with)")
    tok, fingerprint = load(path)
    if fingerprint != m.fingerprint:
        log.warning("source %s: %s is not the tokenizer these shards were written with (fingerprint differs); "
                    "the text may be wrong", m.source, path)
    return lambda ids: tok.decode(ids, skip_special_tokens=False)


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
    c = sp.add_parser("cat", help="decode documents back to text, each under its id")
    c.add_argument("dir", help="a source's shard folder, <job output>/shards, or the job output (local or s3://)")
    c.add_argument("--source", action="append", help="only this source (repeatable)")
    c.add_argument("--limit", type=int, default=None, help="stop after N documents")
    c.add_argument("--ids", nargs="+", default=None, metavar="ID", help="only these document ids")
    c.add_argument("--tokenizer", default=None, help="tokenizer to decode with (default: the manifest's)")
    c.add_argument("--jsonl", action="store_true", help='one JSON object a line: {"source", "id", "shard", "tokens", "text"}')
    c.set_defaults(func=functools.partial(_cli_cat, load=load))
    g = sp.add_parser("grep", help="documents whose decoded text matches a pattern: id and the match in context")
    g.add_argument("pattern", help="a Python regular expression (-F: a fixed string)")
    g.add_argument("dir", help="a source's shard folder, <job output>/shards, or the job output (local or s3://)")
    g.add_argument("--source", action="append", help="only this source (repeatable)")
    g.add_argument("-F", "--fixed-strings", action="store_true", help="PATTERN is a plain string, not a regex")
    g.add_argument("-i", "--ignore-case", action="store_true")
    g.add_argument("-C", "--context", type=int, default=40, help="characters shown each side of a match")
    g.add_argument("--limit", type=int, default=None, help="stop after N matching documents")
    g.add_argument("--tokenizer", default=None, help="tokenizer to decode with (default: the manifest's)")
    g.set_defaults(func=functools.partial(_cli_grep, load=load))


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


def _sources(args: argparse.Namespace) -> list[tuple[Path, str | None]]:
    """``(local manifest, local documents folder or None)`` of each selected source of
    ``args.dir``, read through the storage layer like ``verify`` (a URI is checked for
    ``_SUCCESS`` and cached locally)."""
    from datapipe import fs
    from datapipe.commit import local_for_reading

    uri = args.dir
    local = Path(local_for_reading(uri))
    if (local / "shards").is_dir() and manifest_paths(local / "shards"):   # the job output itself
        uri, local = fs.join(uri, "shards"), local / "shards"
    paths = manifest_paths(local)
    if not paths:
        raise SpecError(f"{args.dir}: no {MANIFEST} here or in its subfolders (give a source's shard folder, "
                        "<job output>/shards or the job output)")
    out = []
    for mp in paths:
        m = fmt.load_manifest(mp)
        if args.source and m.source not in args.source:
            continue
        docs_uri = documents_folder(uri, mp, local)
        docs = local_for_reading(docs_uri) if fs.is_dir(docs_uri) else None
        if docs is None:
            log.warning("source %s: no documents output at %s (the job output beside the shards); "
                        "ids shown are positions <shard>#<sequence>", m.source, docs_uri)
        out.append((mp, docs))
    if args.source and not out:
        names = [fmt.load_manifest(p).source for p in paths]
        raise SpecError(f"--source {', '.join(args.source)}: not among the sources under {args.dir}: {names}")
    return out


def _documents(args: argparse.Namespace, load) -> Iterator[ShardDocument]:
    for mp, docs in _sources(args):
        decode = tokenizer_for(fmt.load_manifest(mp), args.tokenizer, load)
        yield from iter_documents(mp, documents=docs, decode=decode, ids=getattr(args, "ids", None))


def _quiet_on_closed_pipe(fn: Callable[..., int]) -> Callable[..., int]:
    """``datapipe shards cat ... | head``: a reader that stops early ends the command
    quietly (status 0), not with a BrokenPipeError traceback."""
    @functools.wraps(fn)
    def run(*a: Any, **kw: Any) -> int:
        try:
            return fn(*a, **kw)
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
    return run


@_quiet_on_closed_pipe
def _cli_cat(args: argparse.Namespace, *, load: Callable[[str], tuple[Any, str]] | None = None) -> int:
    wanted = set(args.ids) if args.ids else None
    if args.limit is not None and args.limit <= 0:
        return 0
    n = 0
    for doc in _documents(args, load):
        n += 1
        if args.jsonl:
            print(json.dumps({"source": doc.source, "id": doc.id, "shard": doc.shard, "tokens": len(doc.tokens),
                              "text": doc.text}, ensure_ascii=False))
        else:
            print(f"=== {doc.id}  ({doc.source}, shard {doc.shard}, {len(doc.tokens)} tokens)")
            print(doc.text)
        if wanted is not None:
            wanted.discard(doc.id)
            if not wanted:
                break
        if args.limit is not None and n >= args.limit:
            break
    if wanted:
        print(f"not found: {' '.join(sorted(wanted))}", file=sys.stderr)
        return 1
    return 0


@_quiet_on_closed_pipe
def _cli_grep(args: argparse.Namespace, *, load: Callable[[str], tuple[Any, str]] | None = None) -> int:
    try:
        rx = re.compile(re.escape(args.pattern) if args.fixed_strings else args.pattern,
                        re.IGNORECASE if args.ignore_case else 0)
    except re.error as e:
        raise SpecError(f"pattern {args.pattern!r} is not a valid regular expression ({e}); "
                        "use -F for a fixed string") from None
    docs = hits = matches = 0
    w = max(0, args.context)
    for doc in _documents(args, load):
        docs += 1
        found = False
        for mt in rx.finditer(doc.text or ""):
            if mt.end() == mt.start():
                continue
            found = True
            matches += 1
            a, b = mt.start(), mt.end()
            left = doc.text[max(0, a - w):a].replace("\n", "\u23ce")
            right = doc.text[b:b + w].replace("\n", "\u23ce")
            print(f"{doc.id}\t{doc.shard}\t{left}[{doc.text[a:b]}]{right}")
        hits += found
        if args.limit is not None and hits >= args.limit:
            break
    print(f"{matches} match(es) in {hits} of {docs} document(s) searched", file=sys.stderr)
    return 0 if hits else 1
