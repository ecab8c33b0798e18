"""Spherical k-means and the blockwise cosine compare of semantic dedup, in NumPy.

Every result here is a function of the rows' values and their order only, never of how
many rows a call gets besides them: a row's nearest centroid and a pair's cosine are
decided in float64 wherever float32 matrix products (whose last bits depend on the
shape BLAS is handed) leave it within :data:`MARGIN`. So the decisions are the same
whether a row is assigned in a block of 10 or of 100,000, and a cluster compared in
tiles of 512 rows or whole.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

#: float32 products decide only outside this margin (their error at 384 dimensions is
#: ~1e-6); inside it the float64 value decides
MARGIN = 1e-3


def embedding_matrix(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """An embedding column (``fixed_size_list`` or ``list`` of float16/float32) as a
    float64 matrix of unit rows, and the mask of the rows that take part: not null, every
    value finite, a non-zero norm. Rows that do not take part are zero in the matrix. A
    ``list`` column's rows must all have one length (else ``ValueError``: the column is
    not an embedding column)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], arr.type)
    n = len(arr)
    t = arr.type
    if not (pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t)) or \
            not pa.types.is_floating(t.value_type):
        raise ValueError(f"semantic_dedup: the embedding column has type {t}; it needs a list of floats per "
                         "document (the embed stage writes fixed_size_list<halffloat>), so name that column in "
                         "'column'")
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if n else np.zeros(0, bool)
    if pa.types.is_fixed_size_list(t):
        dim = t.list_size
        flat = arr.flatten() if arr.offset == 0 and arr.null_count == 0 else None
        if flat is None:   # null rows own values in a fixed-size list: take them row by row
            flat = pa.concat_arrays([arr.values.slice((arr.offset + i) * dim, dim) for i in range(n)]) \
                if n else arr.values.slice(0, 0)
    else:
        lens = arr.value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
        dims = np.unique(lens[valid])
        if len(dims) > 1:
            raise ValueError(f"semantic_dedup: the embedding column's rows have {len(dims)} different lengths "
                             f"({dims[:5].tolist()}...); every document needs an embedding of one size")
        dim = int(dims[0]) if len(dims) else 0
        filled = arr.fill_null(pa.scalar([0.0] * dim, arr.type)) if arr.null_count else arr
        flat = filled.flatten()
    x = flat.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False).reshape(n, dim) if dim \
        else np.zeros((n, 0))
    x = np.where(valid[:, None], x, 0.0)
    ok = valid & np.isfinite(x).all(axis=1)
    x = np.where(ok[:, None], x, 0.0)
    norm = np.sqrt((x * x).sum(axis=1))
    ok &= norm > 0
    x = np.divide(x, norm[:, None], out=np.zeros_like(x), where=ok[:, None])
    return x, ok


def assign(x: np.ndarray, centroids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each unit row's most similar centroid (the lowest index on a tie) and that cosine
    (float64). ``x``, ``centroids``: float64 unit rows. A row whose best two centroids
    are within :data:`MARGIN` in the float32 product is decided in float64, row by row,
    so the answer never depends on the other rows of the call."""
    n = len(x)
    if n == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.float64)
    c32 = centroids.astype(np.float32)
    s = x.astype(np.float32) @ c32.T
    best = np.argmax(s, axis=1)
    if s.shape[1] > 1:
        top2 = np.partition(s, s.shape[1] - 2, axis=1)[:, -2:]
        close = np.flatnonzero(top2[:, 1] - top2[:, 0] < MARGIN)
    else:
        close = np.zeros(0, np.int64)
    for i in close.tolist():
        best[i] = int(np.argmax((centroids * x[i]).sum(axis=1)))
    cos = (centroids[best] * x).sum(axis=1)
    return best.astype(np.int32), cos


def kmeans(x: np.ndarray, k: int, *, seed: int, iterations: int) -> np.ndarray:
    """Spherical k-means on the unit rows ``x`` (float64; their order is part of the
    input, so callers sort them first): k-means++ seeding from ``numpy.random.default_rng
    (seed)``, then at most ``iterations`` rounds of assign (cosine) and re-centre (the
    members' mean, normalised; a centroid left without members stays where it was),
    stopping early when no row moves. Returns at most ``k`` float64 unit centroids
    (fewer when ``x`` has fewer distinct rows)."""
    n = len(x)
    if n == 0 or k < 1:
        return np.zeros((0, x.shape[1] if x.ndim == 2 else 0))
    rng = np.random.default_rng(seed)
    picked = [int(rng.integers(n))]
    d2 = np.maximum(2.0 - 2.0 * (x @ x[picked[0]]), 0.0)   # squared distance of unit vectors
    while len(picked) < min(k, n):
        total = float(d2.sum())
        if total <= 1e-12:        # every row coincides with a centroid: no distinct row left
            break
        cum = np.cumsum(d2)
        i = int(np.searchsorted(cum, rng.random() * total, side="right"))
        i = min(i, n - 1)
        while d2[i] <= 0.0 and i > 0:   # never a row already a centroid (a zero-weight step)
            i -= 1
        picked.append(i)
        d2 = np.minimum(d2, np.maximum(2.0 - 2.0 * (x @ x[i]), 0.0))
    c = x[picked].copy()
    labels = None
    for _ in range(iterations):
        new, _ = assign(x, c)
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        order = np.argsort(labels, kind="stable")
        starts = np.flatnonzero(np.r_[True, labels[order][1:] != labels[order][:-1]])
        sums = np.add.reduceat(x[order], starts, axis=0)
        members = labels[order][starts]
        norm = np.sqrt((sums * sums).sum(axis=1))
        live = norm > 0
        c[members[live]] = sums[live] / norm[live][:, None]
    return c


def similar_pairs(x: np.ndarray, threshold: float, *, block_rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair ``i < j`` of the unit rows ``x`` (float64) whose cosine is at least
    ``threshold``, with that cosine (float64), sorted by ``(i, j)``. The rows are compared
    in ``block_rows x block_rows`` tiles of float32 products (memory: one tile plus the
    rows as float32, whatever the number of rows); a pair within :data:`MARGIN` of the
    threshold or above it is then checked in float64, so the pairs do not depend on
    ``block_rows``."""
    n = len(x)
    ii, jj = [], []
    x32 = x.astype(np.float32)
    lo = threshold - MARGIN
    for a in range(0, n, block_rows):
        xa = x32[a:a + block_rows]
        for b in range(a, n, block_rows):
            s = xa @ x32[b:b + block_rows].T
            r, c = np.nonzero(s >= lo)
            r, c = r + a, c + b
            keep = r < c
            ii.append(r[keep])
            jj.append(c[keep])
    i = np.concatenate(ii).astype(np.int64) if ii else np.zeros(0, np.int64)
    j = np.concatenate(jj).astype(np.int64) if jj else np.zeros(0, np.int64)
    cos = (x[i] * x[j]).sum(axis=1) if len(i) else np.zeros(0)
    keep = cos >= threshold
    i, j, cos = i[keep], j[keep], cos[keep]
    order = np.lexsort((j, i))
    return i[order], j[order], cos[order]
