"""A batch's texts as flat arrays of pieces (lines, paragraphs) with, for each piece, the
document it belongs to: per-document statistics are ``bincount``s over that index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class Pieces:
    """A batch's texts split into pieces: ``values[i]`` belongs to document ``parent[i]``;
    pieces of one document are contiguous and in text order."""

    values: pa.Array
    parent: np.ndarray
    n_docs: int

    def __len__(self) -> int:
        return len(self.values)

    def count(self, mask: np.ndarray | None = None) -> np.ndarray:
        """Pieces per document (only those where ``mask`` is true)."""
        return per_doc_count(self.parent, self.n_docs, mask)

    def total(self, weights: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Per-document sum of ``weights`` (only where ``mask`` is true)."""
        return per_doc_total(self.parent, self.n_docs, weights, mask)

    def select(self, mask: np.ndarray) -> Pieces:
        return Pieces(self.values.filter(pa.array(mask)), self.parent[mask], self.n_docs)

    def join(self, sep: str) -> pa.Array:
        """One string per document: its pieces joined by ``sep`` (``""`` for none)."""
        counts = self.count()
        offsets = np.zeros(self.n_docs + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        lists = pa.ListArray.from_arrays(pa.array(offsets), self.values)
        return pc.binary_join(lists, sep)


def per_doc_count(doc: np.ndarray, n_docs: int, mask: np.ndarray | None = None) -> np.ndarray:
    """How many items (pieces, tokens) of each document, ``doc[i]`` being item ``i``'s
    document (only items where ``mask`` is true)."""
    d = doc if mask is None else doc[mask]
    return np.bincount(d, minlength=n_docs).astype(np.int64)


def per_doc_total(doc: np.ndarray, n_docs: int, weights: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Per-document sum of the items' ``weights`` (only items where ``mask`` is true)."""
    if mask is not None:
        return np.bincount(doc[mask], weights=weights[mask], minlength=n_docs)
    return np.bincount(doc, weights=weights, minlength=n_docs)


def positions_in_doc(parent: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """For contiguous pieces: each piece's index within its document, and the number of
    pieces of its document."""
    counts = np.bincount(parent, minlength=n_docs)
    starts = np.zeros(n_docs, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    pos = np.arange(len(parent), dtype=np.int64) - starts[parent]
    return pos, counts[parent]


def split_lines_py(texts: Sequence[str], *, sep: str | None = None, strip: str | None = None,
                   drop_blank: bool = False) -> Pieces:
    """Lines of every text as pieces. ``sep=None`` is ``str.splitlines()``, otherwise
    ``str.split(sep)``. ``strip``: ``"both"``, ``"right"`` or ``None``. ``drop_blank``
    removes lines that are empty after stripping surrounding whitespace."""
    flat: list[str] = []
    counts = np.zeros(len(texts), dtype=np.int64)
    for i, t in enumerate(texts):
        lines = t.splitlines() if sep is None else t.split(sep)
        if strip == "both":
            lines = [x.strip() for x in lines]
        elif strip == "right":
            lines = [x.rstrip() for x in lines]
        if drop_blank:
            lines = [x for x in lines if x and not x.isspace()]
        counts[i] = len(lines)
        flat.extend(lines)
    parent = np.repeat(np.arange(len(texts), dtype=np.int64), counts)
    return Pieces(pa.array(flat, pa.string()), parent, len(texts))
