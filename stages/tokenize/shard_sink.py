"""The ``tokenize`` stage's sink: Megatron token shards per source and read split.

Each split's task orders its kept documents by ``(xxh3_64(id, seed), id)`` and writes
them as ``shards/<source>/<source>-<split>-<shard>.bin/.idx`` with a split manifest in
the work area (:class:`ShardSplitWriter`); the driver merges the splits' manifests into
one ``shards/<source>/manifest.json`` per source (splits in plan order, each shard record
carrying its ``split``), O(shards), checks that the shards hold exactly the kept
documents and their tokens + one EOS each, and keeps the tokenizer as ``tokenizer.json``
beside the shards (a file copied; a GPT-2 folder serialised, same fingerprint) so
``datapipe shards inspect`` decodes without being told.

With ``by_level`` (``tokenize``'s option) a split writes one shard set per quality level
of its documents (``quality_level``, set by ``quality_levels``): ``shards/web@q4/`` holds
web's level-4 documents as ``web@q4-<split>-<shard>`` with its own manifest (source
``web@q4``); a document without a level goes to ``shards/web/``. The split's record
lists its sets; the driver merges each set's manifest as above and checks the sets of a
source together against the source's kept documents.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from datapipe import fs
from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.sink import DocumentSink, SinkResult, SinkSplit, SplitWriter, file_info, local_dir, upload

TOKENS, NUM_TOKENS = "tokens", "num_tokens"
LEVEL = "quality_level"
ORDER_KEY = "read splits in plan order; within a split xxh3_64(id utf-8, seed), then id"


class ShardSink(DocumentSink):
    """Token shards of the kept documents (``shards:`` options: :class:`stages.tokenize.writer.ShardOptions`)."""

    folder = "shards"
    consumes = frozenset({TOKENS})
    sums = (NUM_TOKENS,)

    def __init__(self, *, tokenizer: str, eos: str | None, options: Any, lineage: Mapping[str, Any],
                 by_level: bool = False) -> None:
        self.tokenizer, self.eos, self.options, self.lineage = tokenizer, eos, options, dict(lineage)
        self.by_level = by_level
        self.info = None   # TokenizerInfo, set by prepare()
        self._copy_from: str | None = None   # the tokenizer.json to copy beside the shards
        self._serialised: bytes | None = None   # else its content (a GPT-2 folder, serialised)

    def prepare(self) -> None:
        """The tokenizer's manifest entry, its path the ``tokenizer.json`` kept beside the
        shards: the file itself, a folder's ``tokenizer.json``, or, for a GPT-2 folder
        (``vocab.json`` + ``merges.txt``), the loaded tokenizer serialised (same
        fingerprint), so ``datapipe shards inspect`` decodes whatever form was given."""
        from stages.tokenize.identity import TOKENIZER_FILE, load_tokenizer, tokenizer_info

        info = tokenizer_info(self.tokenizer, eos=self.eos)
        path = Path(self.tokenizer)
        if path.is_file():
            self._copy_from = str(path)
        elif (path / TOKENIZER_FILE).is_file():
            self._copy_from = str(path / TOKENIZER_FILE)
        else:
            self._copy_from = None
            self._serialised = load_tokenizer(path).to_str().encode("utf-8")
        self.info = dataclasses.replace(info, path=TOKENIZER_FILE)

    def open(self, split: SinkSplit) -> SplitWriter:
        return ShardSplitWriter(self, split)

    def finish(self, *, staging: str, storage: fs.StorageOptions | None, sources: list[str],
               splits: list[tuple[SinkSplit, dict[str, Any] | None]], documents: list[dict[str, Any]]) -> SinkResult:
        from datapipe.megatron import LEVEL_SEP

        sets: dict[str, str] = {}   # shard set -> its source
        for sp, rec in splits:
            for name in _split_sets(sp, rec):
                if name != sp.source and name in sources:
                    raise SpecError(f"tokenize by_level: level shard set {name!r} of source {sp.source!r} has the "
                                    f"name of another source of the job; rename that source (no {LEVEL_SEP!r} in it)")
                sets.setdefault(name, sp.source)
        for src in sources:   # a source with nothing kept still gets its (empty) manifest
            if src not in sets.values():
                sets[src] = src
        manifests = {name: self._merge(name, [(sp, _split_sets(sp, rec)[name]) for sp, rec in splits
                                              if sp.source == src and rec and name in _split_sets(sp, rec)],
                                       staging, storage)
                     for name, src in sorted(sets.items())}
        expected: dict[str, tuple[int, int]] = {}
        for f in documents:
            docs, toks = expected.get(f["source"], (0, 0))
            expected[f["source"]] = (docs + f["rows"], toks + f[NUM_TOKENS])
        totals, held = {}, {}
        for name, mpath in sorted(manifests.items()):
            m = json.loads(fs.read_text(mpath, storage))
            totals[name] = {**m["totals"], "manifest": fs.relative(mpath, staging), "sha256": fs.sha256(mpath, storage)}
            if name != sets[name]:
                totals[name]["source"] = sets[name]
            docs, toks = held.get(sets[name], (0, 0))
            held[sets[name]] = (docs + m["totals"]["documents"], toks + m["totals"]["tokens"])
        return SinkResult(totals=totals, problems=_conservation(expected, held))

    def _merge(self, src: str, splits: list[tuple[SinkSplit, str]], staging: str,
               storage: fs.StorageOptions | None) -> str:
        """One shard set's manifest (a source's, or a source's level's) from its splits'
        manifests (URIs), splits in plan order; an empty one when nothing of it was kept."""
        from datapipe.megatron import MANIFEST_NAME, make_manifest, shard_dtype

        records = []
        for split, manifest in splits:
            m = json.loads(fs.read_text(manifest, storage))
            records.extend({**r, "split": f"{split.index:05d}"} for r in m["shards"])
        folder = fs.join(staging, self.folder, src)
        fs.makedirs(folder, storage)
        if self._copy_from is not None:
            fs.copy_file(self._copy_from, fs.join(folder, self.info.path), storage)
        else:
            fs.write_bytes(fs.join(folder, self.info.path), self._serialised, storage)
        opts = self.options
        blob = make_manifest(folder=Path(folder), source=src, dtype=shard_dtype(self.info.vocab_size),
                             shard_tokens=opts.shard_tokens, span_documents=opts.span_documents,
                             tokenizer=self.info.to_manifest(), order={"key": ORDER_KEY, "seed": opts.seed},
                             shards=records, lineage=self.lineage)
        path = fs.join(folder, MANIFEST_NAME)
        fs.write_bytes(path, blob, storage)
        return path


def _split_sets(sp: SinkSplit, rec: dict[str, Any] | None) -> dict[str, str]:
    """A split's record's shard sets: set name -> its split manifest (URI)."""
    if not rec:
        return {}
    return dict(rec["sets"]) if "sets" in rec else {sp.source: rec["manifest"]}


def _conservation(expected: Mapping[str, tuple[int, int]], held: Mapping[str, tuple[int, int]]) -> list[str]:
    """Per source, what its shard sets hold together against what the job kept:
    ``expected[source] = (kept documents, their num_tokens)``, ``held[source] = (documents,
    tokens)`` summed over its sets' manifests (tokens include one EOS per document)."""
    problems = []
    for src in sorted(set(expected) | set(held)):
        docs, doc_tokens = expected.get(src, (0, 0))
        if src not in held:
            if docs:
                problems.append(f"source {src}: {docs} kept documents but no shard manifest")
            continue
        got_docs, got_tokens = held[src]
        if got_docs != docs:
            problems.append(f"source {src}: shards hold {got_docs} documents, the job kept {docs}")
        if got_tokens != doc_tokens + docs:
            problems.append(f"source {src}: shards hold {got_tokens} tokens, kept documents have "
                            f"{doc_tokens} + {docs} EOS = {doc_tokens + docs}")
    return problems


class ShardSplitWriter(SplitWriter):
    """One split's shards ``<source>-<split>-NNNNN`` (with ``by_level``, per level
    ``<source>@q<level>-<split>-NNNNN`` in ``shards/<source>@q<level>/``); holds the
    split's kept token ids (bounded by ``split_bytes``) until :meth:`close` orders and
    writes them."""

    def __init__(self, sink: ShardSink, split: SinkSplit) -> None:
        self.sink, self.split = sink, split
        self.tokens: list[pa.Table] = []
        self.columns = [S.ID, TOKENS] + ([LEVEL] if sink.by_level else [])

    def add(self, kept: pa.Table) -> None:
        if self.sink.by_level and LEVEL not in kept.column_names:
            raise SpecError(f"tokenize: by_level is true but the documents have no {LEVEL!r} column; add a "
                            "quality_levels stage before tokenize, or leave by_level out")
        self.tokens.append(kept.select(self.columns))

    def close(self) -> dict[str, Any] | None:
        from datapipe.megatron import level_set

        if not self.tokens:
            return None
        table = pa.concat_tables(self.tokens)
        if not self.sink.by_level:
            manifest, written = self._write(self.split, table)
            return {"manifest": manifest, "written": written}
        sp, sets, written = self.split, {}, []
        levels = table.column(LEVEL)
        for lv in sorted(pc.unique(levels).to_pylist(), key=lambda v: -1 if v is None else v):
            name = sp.source if lv is None else level_set(sp.source, lv)
            part = table.filter(pc.is_null(levels) if lv is None else pc.equal(levels, lv))
            sub = dataclasses.replace(sp, source=name, folder=_sibling(sp.folder, sp.source, name),
                                      work_dir=fs.join(sp.work_dir, name))
            sets[name], w = self._write(sub, part)
            written += w
        index = fs.join(sp.work_dir, sp.part + ".json")   # the split's own record of its sets
        fs.write_text(index, json.dumps({"sets": sets}, sort_keys=True), sp.storage)
        return {"manifest": index, "sets": sets, "written": written}

    def _write(self, sp: SinkSplit, table: pa.Table) -> tuple[str, list[dict[str, Any]]]:
        """One shard set's part of the split: its documents ordered and laid out as
        ``<set>-<split>-NNNNN`` in ``sp.folder``; returns its split manifest and files."""
        from stages.tokenize.writer import ORDER_COLUMN, SourceShardWriter, add_order_column, flat_tokens

        opts = self.sink.options
        table = add_order_column(table.select([S.ID, TOKENS]), opts.seed)
        table = table.take(pc.sort_indices(table, sort_keys=[(ORDER_COLUMN, "ascending"), (S.ID, "ascending")]))
        manifest = fs.join(sp.work_dir, sp.part + ".json")
        with local_dir(sp.folder) as local:   # the writer fsyncs and memory-maps real files
            remote = local != sp.folder
            local_manifest = os.path.join(local, ".manifest", sp.part + ".json") if remote else manifest
            writer = SourceShardWriter(local, sp.source, tokenizer_info=self.sink.info,
                                       shard_tokens=opts.shard_tokens, seed=opts.seed, lineage=self.sink.lineage,
                                       span_documents=opts.span_documents, stem=f"{sp.source}-{sp.index:05d}",
                                       manifest_path=local_manifest)
            try:
                for off in range(0, table.num_rows, opts.batch_rows):
                    flat, lengths = flat_tokens(table.column(TOKENS).slice(off, opts.batch_rows))
                    writer.add(flat, lengths)
                writer.finish()
            finally:
                writer.abort()
            written = []
            for r in json.loads(fs.read_bytes(local_manifest))["shards"]:
                for k in ("bin", "idx"):
                    uri = fs.join(sp.folder, r[k])
                    if remote:
                        upload(os.path.join(local, r[k]), uri, sp.storage)
                    written.append(dict(file_info(os.path.join(local, r[k])), path=uri))
            if remote:
                upload(local_manifest, manifest, sp.storage)
        return manifest, written


def _sibling(folder: str, source: str, name: str) -> str:
    """``<...>/shards/<source>`` as ``<...>/shards/<name>``."""
    assert folder.endswith("/" + source), folder
    return folder[: -len(source)] + name
