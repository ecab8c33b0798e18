"""The ``tokenize`` stage's sink: Megatron token shards per source and read split.

Each split's task orders its kept documents by ``(xxh3_64(id, seed), id)`` and writes
them as ``shards/<source>/<source>-<split>-<shard>.bin/.idx`` with a split manifest in
the work area (:class:`ShardSplitWriter`); the driver merges the splits' manifests into
one ``shards/<source>/manifest.json`` per source (splits in plan order, each shard record
carrying its ``split``), O(shards), checks that the shards hold exactly the kept
documents and their tokens + one EOS each, and keeps the tokenizer as ``tokenizer.json``
beside the shards (a file copied; a GPT-2 folder serialised, same fingerprint) so
``datapipe shards inspect`` decodes without being told.
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
from datapipe.sink import DocumentSink, SinkResult, SinkSplit, SplitWriter, file_info, local_dir, upload

TOKENS, NUM_TOKENS = "tokens", "num_tokens"
ORDER_KEY = "read splits in plan order; within a split xxh3_64(id utf-8, seed), then id"


class ShardSink(DocumentSink):
    """Token shards of the kept documents (``shards:`` options: :class:`stages.tokenize.writer.ShardOptions`)."""

    folder = "shards"
    consumes = frozenset({TOKENS})
    sums = (NUM_TOKENS,)

    def __init__(self, *, tokenizer: str, eos: str | None, options: Any, lineage: Mapping[str, Any]) -> None:
        self.tokenizer, self.eos, self.options, self.lineage = tokenizer, eos, options, dict(lineage)
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
        from stages.tokenize.writer import conservation_problems

        manifests = {src: self._merge(src, [(sp, rec) for sp, rec in splits if sp.source == src and rec],
                                      staging, storage) for src in sources}
        expected: dict[str, tuple[int, int]] = {}
        for f in documents:
            docs, toks = expected.get(f["source"], (0, 0))
            expected[f["source"]] = (docs + f["rows"], toks + f[NUM_TOKENS])
        problems = conservation_problems(expected, {src: fs.local_copy(m, storage) for src, m in manifests.items()})
        totals = {}
        for src, mpath in sorted(manifests.items()):
            m = json.loads(fs.read_text(mpath, storage))
            totals[src] = {**m["totals"], "manifest": fs.relative(mpath, staging), "sha256": fs.sha256(mpath, storage)}
        return SinkResult(totals=totals, problems=problems)

    def _merge(self, src: str, splits: list[tuple[SinkSplit, dict[str, Any]]], staging: str,
               storage: fs.StorageOptions | None) -> str:
        """One source's manifest from its splits' manifests, splits in plan order; an
        empty one when nothing of the source was kept."""
        from datapipe.megatron import MANIFEST_NAME, make_manifest, shard_dtype

        records = []
        for split, rec in splits:
            m = json.loads(fs.read_text(rec["manifest"], storage))
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


class ShardSplitWriter(SplitWriter):
    """One split's shards ``<source>-<split>-NNNNN``; holds the split's kept token ids
    (bounded by ``split_bytes``) until :meth:`close` orders and writes them."""

    def __init__(self, sink: ShardSink, split: SinkSplit) -> None:
        self.sink, self.split = sink, split
        self.tokens: list[pa.Table] = []

    def add(self, kept: pa.Table) -> None:
        self.tokens.append(kept.select([S.ID, TOKENS]))

    def close(self) -> dict[str, Any] | None:
        from stages.tokenize.writer import ORDER_COLUMN, SourceShardWriter, add_order_column, flat_tokens

        if not self.tokens:
            return None
        sp, opts = self.split, self.sink.options
        table = add_order_column(pa.concat_tables(self.tokens), opts.seed)
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
        return {"manifest": manifest, "written": written}
