"""``decontaminate``: drop documents that share a word n-gram (13 by default, as GPT-3)
with an evaluation set, or cut the overlapping spans out (``mode: cut``).

The evaluation sets are files the user names (``eval_sets: {benchmark: [files]}``:
JSONL/Parquet with ``text_fields``, or plain text, one item a line), or a prebuilt index
(``index: path/to/index.npz``, from :func:`stages.decontam.ngrams.build_index` +
``NgramIndex.save``).

The index is built once per run, not per worker: the stage declares it as passes
(:meth:`Decontaminate.prepare`, :mod:`stages.decontam.index_passes`) that the engine's
executor runs before the stage's phase, keyed by the files' contents, ``n``, the text
fields and the normalisation, committed under ``work/<stage>/prepare`` and reused on
resume. Each actor then loads the artifact (sorted uint64 hashes + uint16 benchmark ids
in Parquet, memory-mapped when local; or the Bloom filters' bits). ``index_kind``:
``exact`` (10 bytes an n-gram, exact up to 64-bit hash collisions), ``bloom`` (Bloom
filters at ``bloom_fpr`` per n-gram: ``-ln(fpr)/ln(2)^2`` bits an n-gram, 38 at 1e-8,
plus 19 for the benchmark-naming filters with several benchmarks) or ``auto`` (bloom above ``bloom_above`` distinct n-grams). The
report's ``decontaminate`` entry has the index's bytes, n-grams and items per benchmark
and the passes' timings (with ``reused``). Run alone (``datapipe.stage(...)``, the
bench), the stage builds the same index in ``setup()`` with the same functions.

A benchmark that cannot match anything (no files, no items, or every item shorter than
``n`` words) is a warning naming it and why: at validate for sets up to
:data:`CHECK_BYTES` (read until the first item of ``n`` words), else from the index
passes' summary when the run builds the index.

Reject: ``decontaminate:contaminated`` with detail ``<benchmark>: "<the n-gram>"
(+K more) at chars A-B`` (where the first match lies in the document, for ``datapipe
inspect``). Cut mode removes every overlapping word span (the union of the matching
n-grams' words, from the first word's start to the last one's end in the original text)
and counts ``ngrams_cut``/``chars_cut``; a document left empty is ``decontaminate:empty``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Literal, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from datapipe import fs
from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.passes import STORAGE, Hash, Output, Pass, Preparation
from datapipe.stage import Compute, Rewrite, RewriteFilterStage, StageConfig, StageContext
from stages.decontam import index_passes as P
from stages.decontam.ngrams import (BloomIndex, NgramIndex, eval_input, build_index, match, ngram_hashes,
                                    normalize, read_eval_items, text_ngram_hashes, words)

log = logging.getLogger(__name__)

_PY_WORD = re.compile(r"[^\W_]+")
#: evaluation bytes per benchmark that the config check reads to see whether the set can
#: match anything (larger sets: the index passes' summary says so during the run)
CHECK_BYTES = 16 << 20


@dataclass(kw_only=True, frozen=True)
class DecontamConfig(StageConfig):
    #: benchmark name -> evaluation files (JSONL/Parquet with text_fields, or plain text)
    eval_sets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: a prebuilt index (.npz from NgramIndex.save); wins over eval_sets
    index: str | None = None
    #: fields of JSONL/Parquet evaluation records that hold text
    text_fields: tuple[str, ...] = ("text",)
    #: n-gram length in words
    n: int = 13
    mode: Literal["drop", "cut"] = "drop"
    #: exact (sorted hashes), bloom (Bloom filters at bloom_fpr), auto (bloom above bloom_above n-grams)
    index_kind: Literal["exact", "bloom", "auto"] = "auto"
    #: false-positive rate per n-gram lookup of the Bloom filters
    bloom_fpr: float = 1e-8
    #: with index_kind auto: distinct n-grams above which the Bloom filters are used
    bloom_above: int = 20_000_000
    #: evaluation files totalling fewer bytes build the index in the driver's process
    #: (no Ray Data start-up); larger ones on the cluster
    local_build_bytes: int = 64 << 20

    def __post_init__(self) -> None:
        if self.index_kind not in ("exact", "bloom", "auto"):
            raise SpecError(f"decontaminate: index_kind must be exact, bloom or auto, got {self.index_kind!r}")
        if not 0 < self.bloom_fpr < 0.5:
            raise SpecError(f"decontaminate: bloom_fpr={self.bloom_fpr} must be in (0, 0.5); 1e-8 is the default")
        if self.bloom_above < 0 or self.local_build_bytes < 0:
            raise SpecError("decontaminate: bloom_above and local_build_bytes must be >= 0")
        if self.n < 2:
            raise SpecError(f"decontaminate: n must be >= 2 words, got {self.n}; GPT-3 used 13")
        if self.mode not in ("drop", "cut"):
            raise SpecError(f"decontaminate: mode must be 'drop' or 'cut', got {self.mode!r}")
        if self.index is None and not self.eval_sets:
            raise SpecError("decontaminate: give eval_sets ({benchmark: [files]}) or index (a prebuilt .npz)")
        paths = [self.index] if self.index is not None else [p for ps in self.eval_sets.values() for p in ps]
        for p in paths:
            try:
                ok = fs.is_file(p)
            except OSError as e:
                raise SpecError(f"decontaminate: cannot reach {p!r}: {e}") from None
            if not ok:
                raise SpecError(f"decontaminate: {p!r} is not a file; give evaluation files (JSONL, Parquet or "
                                ".txt) or a prebuilt index .npz")
        if not self.text_fields:
            raise SpecError("decontaminate: text_fields is empty; name the record fields holding text")
        if self.index is None:
            for name, files in self.eval_sets.items():
                _check_eval_set(name, files, n=self.n, fields=self.text_fields)


def _eval_bytes(files: tuple[str, ...]) -> int:
    return sum(fs.stat(p).size for p in files)


def _fully_checked(files: tuple[str, ...]) -> bool:
    """Whether the config check read all of these files: stored as plain text (a
    compressed file may grow past :data:`CHECK_BYTES`) and :data:`CHECK_BYTES` in all."""
    return (_eval_bytes(files) <= CHECK_BYTES
            and all(eval_input(p, None).compression() is None for p in files))


def _check_eval_set(name: str, files: tuple[str, ...], *, n: int, fields: tuple[str, ...]) -> None:
    """Open every file of benchmark ``name`` the way the run will (decompressed, parsed),
    so a file that cannot be read is the error the run would give, here, naming it; and
    warn when the benchmark cannot match anything (an empty set is otherwise a silent
    no-op). Reads :data:`CHECK_BYTES` of decompressed text in all (at least the first
    1 MiB of each file), until the first item of ``n`` words; a set read only in part is
    judged from the index passes' summary during the run (:meth:`Decontaminate.after_prepare`)."""
    if not files:
        _warn_unmatchable(name, "lists no files", n)
        return
    items, left, matchable = 0, CHECK_BYTES, False
    for uri in files:
        limit = max(left, 1 << 20)
        try:
            texts = read_eval_items(uri, fields, limit=limit)
        except (OSError, ValueError, pa.ArrowException) as e:
            raise SpecError(f"decontaminate: evaluation file {uri} cannot be read: {e}; fix or remove it") from None
        left = max(0, left - sum(len(t) for t in texts))
        items += len(texts)
        matchable = matchable or bool(texts and len(text_ngram_hashes(texts, n)[0]))
    if matchable or not _fully_checked(files):
        return   # larger or compressed sets: the run's summary decides (Decontaminate.after_prepare)
    _warn_unmatchable(name, "has no items" if not items else f"has {items} item(s), all shorter than {n} words",
                      n, fields)


def _warn_unmatchable(name: str, why: str, n: int, fields: tuple[str, ...] = ()) -> None:
    fix = ("list its evaluation files" if why == "lists no files" else
           f"check its files hold text (records with the fields {list(fields)}, or lines of plain text)"
           if why == "has no items" else f"lower n (n: {n} now; GPT-3 used 8 to 13 per benchmark)")
    log.warning("decontaminate: eval_sets[%r] %s, so it can match nothing and removes nothing; %s, or remove it",
                name, why, fix)


class Decontaminate(RewriteFilterStage):
    """Drops (or cuts) what overlaps evaluation sets by a word n-gram."""

    name = "decontaminate"
    Config = DecontamConfig
    compute = Compute(kind="actor")

    def _names(self) -> list[str]:
        return list(self.config.eval_sets)

    def prepare(self, ctx: StageContext) -> Preparation | None:
        """The index passes (:mod:`stages.decontam.index_passes`) over a manifest of the
        evaluation files, keyed by their sha256 (None with a prebuilt ``index``)."""
        cfg = self.config
        if cfg.index is not None:
            return None
        rows = [(b, name, uri) for b, name in enumerate(self._names()) for uri in cfg.eval_sets[name]]
        manifest = fs.join(ctx.work_dir, "eval_files.parquet")
        with fs.AtomicFile(manifest, ctx.storage) as f:
            pq.write_table(pa.table({"bench": pa.array([r[0] for r in rows], pa.uint16()),
                                     "benchmark": [r[1] for r in rows], "uri": [r[2] for r in rows]},
                                    schema=P.MANIFEST), f)
        contents, size = [], 0
        for b, name, uri in rows:
            try:
                contents.append([name, fs.sha256(uri, ctx.storage)])
                size += fs.stat(uri, ctx.storage).size
            except OSError as e:
                raise SpecError(f"decontaminate: evaluation file {uri} cannot be read: {e}") from None
        key = hashlib.sha256(json.dumps([contents, list(cfg.text_fields), cfg.n, P.NORMALISATION]).encode())
        parts = max(1, min(8, len(rows)))
        passes = [Pass(name="items", inputs=("eval_files",), fn=P.items, partitioning=Hash(column="uri", parts=parts),
                       output=Output(schema=P.ITEMS),
                       params={"n": cfg.n, "fields": list(cfg.text_fields), "storage": STORAGE}),
                  Pass(name="summary", inputs=("items",), fn=P.summary, partitioning=Hash(column="bench"),
                       output=Output(schema=P.SUMMARY, sort_by=("bench",))),
                  Pass(name="index", inputs=("items",), fn=P.index, partitioning=Hash(column="bench"),
                       output=Output(schema=P.INDEX, sort_by=("hash",)), params={"n": cfg.n})]
        if cfg.index_kind != "exact":
            passes.append(Pass(name="bloom", inputs=("index",), fn=P.bloom, partitioning=Hash(column="bench"),
                               output=Output(schema=P.BLOOM),
                               params={"benchmarks": len(self._names()), "fpr": cfg.bloom_fpr,
                                       "above": cfg.bloom_above if cfg.index_kind == "auto" else 0}))
        return Preparation(inputs={"eval_files": [manifest]}, passes=passes,
                           input_keys={"eval_files": key.hexdigest()}, local=size < cfg.local_build_bytes)

    def after_prepare(self, ctx: StageContext) -> None:
        index = P.load(self.prepared, n=self.config.n, names=self._names(), storage=ctx.storage)
        per = P.read_summary(self.prepared["summary"], self._names(), ctx.storage)
        exact = index if isinstance(index, NgramIndex) else None
        if exact is None:
            exact = P.load({"index": self.prepared["index"]}, n=self.config.n, names=self._names(),
                           storage=ctx.storage)
        for name, c in exact.per_benchmark().items():
            per.setdefault(name, {"items": 0, "short_items": 0, "ngrams": 0})["distinct_ngrams"] = c
        for name, files in self.config.eval_sets.items():
            got = per[name]
            if not got["ngrams"] and files and not _fully_checked(files):   # else: said at validate
                _warn_unmatchable(name, "has no items" if not got["items"] else
                                  f"has {got['items']} item(s), all shorter than {self.config.n} words",
                                  self.config.n, self.config.text_fields)
        ctx.report.update(self._index_report(index, per))

    def _index_report(self, index: NgramIndex | BloomIndex, per: dict) -> dict:
        rep = {"index_kind": "bloom" if isinstance(index, BloomIndex) else "exact", "n": self.config.n,
               "ngrams": len(index), "index_bytes": index.nbytes, "per_benchmark": per}
        if isinstance(index, BloomIndex):
            rep["bloom_fpr"] = index.fpr
        return rep

    def setup(self) -> None:
        cfg = self.config
        t0 = time.perf_counter()
        if cfg.index is not None:
            self.index = NgramIndex.load(cfg.index)
            if self.index.n != cfg.n:
                raise SpecError(f"decontaminate: index {cfg.index} holds {self.index.n}-grams but n is {cfg.n}; "
                                f"set n: {self.index.n} or rebuild the index")
            if cfg.index_kind == "bloom" or (cfg.index_kind == "auto" and len(self.index) > cfg.bloom_above):
                self.index = BloomIndex.from_index(self.index, cfg.bloom_fpr)
        elif self.prepared:   # the engine built it once for the run
            self.index = P.load(self.prepared, n=cfg.n, names=self._names(), storage=None)
        else:                 # run alone: the same functions, in this process
            exact = build_index({k: list(v) for k, v in cfg.eval_sets.items()}, n=cfg.n, fields=cfg.text_fields)
            self.index = exact
            if cfg.index_kind == "bloom" or (cfg.index_kind == "auto" and len(exact) > cfg.bloom_above):
                self.index = BloomIndex.from_index(exact, cfg.bloom_fpr)
        log.info("decontaminate: %s index of %d %d-grams from %s loaded in %.1f s, %.1f MB",
                 "bloom" if isinstance(self.index, BloomIndex) else "exact", len(self.index), cfg.n,
                 self.index.names, time.perf_counter() - t0, self.index.nbytes / 1e6)

    def rewrite(self, batch: pa.Table) -> Rewrite:
        texts = batch.column(S.TEXT).combine_chunks()
        hits = match(texts, self.index)
        m = batch.num_rows
        keep = np.ones(m, dtype=bool)
        reasons: list[str | None] = [None] * m
        ngrams_cut = np.zeros(m, dtype=np.int64)
        chars_cut = np.zeros(m, dtype=np.int64)
        new_texts = None
        hit_rows = np.flatnonzero(hits.first_bench >= 0)
        if self.config.mode == "cut" and len(hit_rows):
            new_texts = texts.to_pylist()
        for r in map(int, hit_rows):
            if new_texts is not None:
                cut = _cut(new_texts[r], self.index)
                if cut is not None:
                    new_texts[r], ngrams_cut[r], chars_cut[r] = cut
                    continue
            keep[r] = False
            reasons[r] = "contaminated|" + self._detail(hits, r, texts[r].as_py())
        return Rewrite(texts=texts if new_texts is None else pa.array(new_texts, pa.string()), keep=keep,
                       reasons=reasons, changes={"ngrams_cut": ngrams_cut, "chars_cut": chars_cut,
                                                 "ngram_hits": hits.count})

    def _detail(self, hits, r: int, text: str) -> str:
        """``<benchmark>: "<the n-gram, normalised>" (+K more) at chars A-B``: A-B is
        where the first matching n-gram lies in the document as written (code points,
        end exclusive; ``datapipe inspect`` marks it there). Left out when the Python
        word split disagrees with the vectorised one on this text (as in cut mode)."""
        bench = self.index.names[int(hits.first_bench[r])]
        i = int(hits.first_word[r])
        more = int(hits.count[r]) - 1
        out = f'{bench}: "{hits.words.text(i, i + self.index.n)}"' + (f" (+{more} more)" if more else "")
        row = hits.words.row
        lo, hi = int(np.searchsorted(row, r)), int(np.searchsorted(row, r, side="right"))
        spans = [(mt.start(), mt.end()) for mt in _PY_WORD.finditer(text)]
        if len(spans) == hi - lo:
            out += f" at chars {spans[i - lo][0]}-{spans[i - lo + self.index.n - 1][1]}"
        return out


def _cut(text: str, index: NgramIndex | BloomIndex) -> tuple[str, int, int] | None:
    """The text without the word spans of its matching n-grams; None when the Python
    word split disagrees with the vectorised one (the caller drops the document)."""
    spans = [(mt.start(), mt.end()) for mt in _PY_WORD.finditer(text)]
    w = words(normalize(pa.array([" ".join(text[a:b] for a, b in spans)], pa.string())))
    if len(w.hashes) != len(spans):
        return None
    h, first = ngram_hashes(w, index.n)
    hit = index.benchmarks(h) >= 0
    if not hit.any():
        return None
    covered = np.zeros(len(spans) + 1, dtype=np.int64)
    for f in first[hit]:
        covered[f] += 1
        covered[f + index.n] -= 1
    inside = np.cumsum(covered[:-1]) > 0
    out, pos, removed = [], 0, 0
    k = 0
    while k < len(spans):
        if inside[k]:
            j = k
            while j + 1 < len(spans) and inside[j + 1]:
                j += 1
            a, b = spans[k][0], spans[j][1]
            out.append(text[pos:a])
            removed += b - a
            pos = b
            k = j + 1
        else:
            k += 1
    out.append(text[pos:])
    res = _joined(out)
    if not out[0].strip():    # the document began with a cut span
        res = res.lstrip()
    if not out[-1].strip():   # ... or ended with one
        res = res.rstrip()
    return res, int(hit.sum()), removed


def _joined(pieces: list[str]) -> str:
    """The pieces around the cut spans, joined: the spaces and tabs that meet at a cut
    become one space (none at a line's start, so the next line keeps its indentation);
    whitespace anywhere else is the document's own (code keeps its indentation)."""
    res = pieces[0]
    for p in pieces[1:]:
        left = res.rstrip(" \t")
        if not left or left.endswith("\n"):   # the cut began a line
            res = res + p.lstrip(" \t")
        elif len(left) < len(res) or p[:1] in (" ", "\t"):
            res = left + " " + p.lstrip(" \t")
        else:
            res = res + p
    return res
