"""Line- or paragraph-level exact dedup across the corpus (CCNet's line dedup, Dolma's
paragraph dedup): every unit (a line, or a paragraph) whose normalised text was already
seen earlier in the corpus is removed from the document; the first copy stays.

A global stage that *edits*: its decisions carry, per document, the indices of the units
to remove (``edit``), and each split's task rewrites its own documents
(:meth:`LineDedup.apply_edits`); a document with too little left becomes a reject
``line_dedup:empty``. Text never leaves its task: ``side()`` writes per document the
64-bit hashes of its normalised units and their indices.

Passes (docs/dedup.md "Line and paragraph dedup"):

1. ``dups``: the side rows exploded to one row per unit ``(hash, _split, _row, unit)``,
   hash-partitioned by ``hash``; in each partition every unit after the first of its
   hash, in ``(_split, _row, unit)`` order, is a later copy.
2. ``decisions``: the later copies, partitioned by ``_split``, grouped per document into
   the sorted list of its units to remove.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.passes import SIDE, Hash, Input, Output, Pass
from datapipe.stage import GlobalStage, StageConfig

SIDE_SCHEMA = pa.schema([("hashes", pa.list_(pa.int64())), ("units", pa.list_(pa.int32()))])
UNITS = pa.schema([("hash", pa.int64()), ("_split", pa.string()), ("_row", pa.int64()), ("unit", pa.int32())])
COPIES = pa.schema([("_split", pa.string()), ("_row", pa.int64()), ("unit", pa.int32())])
DECISIONS = pa.schema([*S.DECISIONS, ("edit", pa.list_(pa.int64()))])

#: a paragraph ends at a blank line (a newline, then one or more lines of only whitespace)
_PARAGRAPH_SEP = re.compile(r"(\n(?:[ \t\r\f\v]*\n)+)")
_SPACE = re.compile(r"\s+")
_DIGIT = re.compile(r"\d")


@dataclass(kw_only=True, frozen=True)
class LineDedupConfig(StageConfig):
    """``unit``: ``line`` (split at ``\\n``) or ``paragraph`` (split at blank lines).
    A unit is normalised (whitespace runs to one space, stripped; ``lowercase``;
    ``digits``: every digit becomes ``0``, so ``Page 2 of 9`` and ``Page 3 of 9`` are one
    line) and only units of at least ``min_chars`` normalised characters are considered:
    shorter ones (``""``, ``Home``, ``1.``) are never removed. A document whose text,
    stripped, keeps fewer than ``min_doc_chars`` characters becomes a reject
    ``line_dedup:empty``. ``parts``: hash partitions of the unit rows (each holds about
    1/parts of them; raise it with the corpus: ~ units / 5M); ``local_rows``: up to this
    many documents the passes run in one process (no Ray Data start-up; the executor's
    choice of the driver or one Ray task)."""

    unit: Literal["line", "paragraph"] = "line"
    min_chars: int = 10
    lowercase: bool = True
    digits: bool = True
    min_doc_chars: int = 1
    parts: int = 1
    local_rows: int = 100_000

    def __post_init__(self) -> None:
        if self.unit not in ("line", "paragraph"):
            raise SpecError(f"line_dedup: unit={self.unit!r}; use 'line' or 'paragraph'")
        for name in ("min_chars", "min_doc_chars", "parts"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise SpecError(f"line_dedup: {name}={v!r}; use a whole number >= 1")
        if not isinstance(self.local_rows, int) or isinstance(self.local_rows, bool) or self.local_rows < 0:
            raise SpecError(f"line_dedup: local_rows={self.local_rows!r}; use a whole number >= 0 "
                            "(0: always run the passes on Ray Data)")


def split_units(text: str, unit: str) -> tuple[list[str], list[str]]:
    """``text`` as units and the separators between them (``len(seps) == len(units) - 1``):
    ``units[0] + seps[0] + units[1] + ... + units[-1] == text``."""
    if unit == "line":
        units = text.split("\n")
        return units, ["\n"] * (len(units) - 1)
    parts = _PARAGRAPH_SEP.split(text)
    return parts[0::2], parts[1::2]


def normalise(unit: str, *, lowercase: bool, digits: bool) -> str:
    """What two units must share to be copies: whitespace runs as one space, stripped;
    lowercased and digits as ``0`` when asked. Punctuation and accents are kept."""
    u = _SPACE.sub(" ", unit).strip()
    if lowercase:
        u = u.lower()
    if digits:
        u = _DIGIT.sub("0", u)
    return u


def remove_units(text: str, unit: str, drop: Sequence[int]) -> str:
    """``text`` without the units at ``drop``; each kept unit keeps the separator that
    followed it, except the last kept one."""
    units, seps = split_units(text, unit)
    gone = set(int(i) for i in drop)
    kept = [i for i in range(len(units)) if i not in gone]
    return "".join(units[i] + (seps[i] if j < len(kept) - 1 else "") for j, i in enumerate(kept))


class LineDedup(GlobalStage):
    """Removes every line (or paragraph) whose normalised text appeared before it in the
    corpus, in (source, read split, row, unit index) order; the first copy stays."""

    name = "line_dedup"
    Config = LineDedupConfig
    reads = (S.TEXT,)
    edits_text = True

    def side(self, batch: pa.Table) -> pa.Table:
        import xxhash

        c: LineDedupConfig = self.config
        h = xxhash.xxh3_64_intdigest
        hashes, units = [], []
        for text in batch.column(S.TEXT).to_pylist():
            hs, us = [], []
            for i, u in enumerate(split_units(text or "", c.unit)[0]):
                n = normalise(u, lowercase=c.lowercase, digits=c.digits)
                if len(n) >= c.min_chars:
                    hs.append(h(n.encode("utf-8")))
                    us.append(i)
            hashes.append(np.array(hs, np.uint64).view(np.int64))
            units.append(us)
        return pa.table({"hashes": pa.array(hashes, pa.list_(pa.int64())), "units": pa.array(units, pa.list_(pa.int32()))},
                        schema=SIDE_SCHEMA)

    @property
    def local_rows(self) -> int:
        return self.config.local_rows

    def passes(self, ctx) -> list[Pass]:
        parts = self.config.parts
        return [
            Pass(name="dups", inputs=(Input(name=SIDE, columns=("hashes", "units", "_split", "_row"),
                                            maps=((explode_units, {}),)),),
                 fn=later_copies, partitioning=Hash(column="hash", parts=parts), output=Output(schema=COPIES)),
            Pass(name="decisions", inputs=("dups",), fn=edit_lists, partitioning=Hash(column="_split", parts=parts),
                 output=Output(schema=DECISIONS, sort_by=(S.SPLIT, S.ROW))),
        ]

    def apply_edits(self, texts: Sequence[str], edits: Sequence[Sequence[int]]
                    ) -> tuple[list[str | None], dict[str, list[int]]]:
        c: LineDedupConfig = self.config
        out: list[str | None] = []
        units, chars = [], []
        for text, drop in zip(texts, edits):
            new = remove_units(text, c.unit, drop)
            units.append(len(drop))
            chars.append(len(text) - len(new))
            out.append(new if len(new.strip()) >= c.min_doc_chars else None)
        return out, {f"{c.unit}s_removed": units, "chars_removed": chars}


def explode_units(batch: pa.Table) -> pa.Table:
    """Side rows (one per document) as one row per considered unit."""
    hashes = batch.column("hashes").combine_chunks()
    parent = pc.list_parent_indices(hashes)
    return pa.table({"hash": pc.list_flatten(hashes), "_split": batch.column("_split").take(parent),
                     "_row": batch.column("_row").take(parent),
                     "unit": pc.list_flatten(batch.column("units").combine_chunks())}, schema=UNITS)


def later_copies(t: pa.Table) -> pa.Table:
    """Every unit of ``t`` (all rows of each of its hashes) after the first of its hash."""
    if not t.num_rows:
        return COPIES.empty_table()
    t = t.sort_by([("hash", "ascending"), ("_split", "ascending"), ("_row", "ascending"), ("unit", "ascending")])
    h = t.column("hash").to_numpy()
    later = np.flatnonzero(np.r_[False, h[1:] == h[:-1]])
    t = t.take(pa.array(later))
    return pa.table({"_split": t.column("_split"), "_row": t.column("_row"), "unit": t.column("unit")}, schema=COPIES)


def edit_lists(t: pa.Table) -> pa.Table:
    """Later copies grouped per document: its sorted unit indices to remove."""
    if not t.num_rows:
        return DECISIONS.empty_table()
    t = t.sort_by([("_split", "ascending"), ("_row", "ascending"), ("unit", "ascending")])
    split = t.column("_split").combine_chunks()
    row = t.column("_row").to_numpy()
    new_doc = np.r_[True, (row[1:] != row[:-1]) |
                    pc.not_equal(split.slice(1), split.slice(0, len(split) - 1)).to_numpy(zero_copy_only=False)]
    starts = np.flatnonzero(new_doc)
    offsets = pa.array(np.r_[starts, len(row)].astype(np.int32))
    edit = pa.ListArray.from_arrays(offsets, pc.cast(t.column("unit").combine_chunks(), pa.int64()))
    first = pa.array(starts)
    n = len(starts)
    return pa.table({"_split": split.take(first), "_row": pa.array(row[starts]),
                     "reason": pa.array(["duplicate_units"] * n, pa.string()), "detail": pa.nulls(n, pa.string()),
                     "edit": edit}, schema=DECISIONS)
