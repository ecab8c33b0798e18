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
#: rows (or pairs) converted to float64 at a time
CHUNK = 8192


def embedding_matrix(arr: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """An embedding column (``fixed_size_list`` or ``list`` of float16/float32) as a
    float32 matrix of unit rows (each normalised in float64, so a row's values never
    depend on the rows beside it), and the mask of the rows that take part: not null,
    every value finite, a non-zero norm. Rows that do not take part are zero. A ``list``
    column's rows must all have one length (else ``ValueError``: the column is not an
    embedding column). Memory: the float32 matrix plus :data:`CHUNK` rows in float64."""
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
        flat = arr.values.slice(arr.offset * dim, n * dim)   # a null row owns its slots too
    else:
        lens = arr.value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
        dims = np.unique(lens[valid])
        if len(dims) > 1:
            raise ValueError(f"semantic_dedup: the embedding column's rows have {len(dims)} different lengths "
                             f"({dims[:5].tolist()}...); every document needs an embedding of one size")
        dim = int(dims[0]) if len(dims) else 0
        filled = arr.fill_null(pa.scalar([0.0] * dim, arr.type)) if arr.null_count else arr
        flat = filled.flatten()
    if flat.null_count:
        flat = flat.cast(pa.float32()).fill_null(np.nan)
    v = flat.to_numpy(zero_copy_only=False).reshape(n, dim) if dim else np.zeros((n, 0), np.float32)
    x = np.zeros((n, dim), np.float32)
    ok = valid.copy()
    for a in range(0, n, CHUNK):
        blk = v[a:a + CHUNK].astype(np.float64)
        good = ok[a:a + CHUNK] & np.isfinite(blk).all(axis=1)
        blk[~good] = 0.0
        norm = np.sqrt((blk * blk).sum(axis=1))
        good &= norm > 0
        ok[a:a + CHUNK] = good
        x[a:a + CHUNK] = np.divide(blk, norm[:, None], out=np.zeros_like(blk), where=good[:, None])
    return x, ok


def cosines(x: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The cosine of rows ``i[k]`` and ``j[k]`` of the unit rows ``x`` in float64 (each a
    function of the two rows alone), :data:`CHUNK` pairs at a time."""
    out = np.empty(len(i))
    for a in range(0, len(i), CHUNK):
        out[a:a + CHUNK] = (x[i[a:a + CHUNK]].astype(np.float64) * x[j[a:a + CHUNK]]).sum(axis=1)
    return out


def assign(x: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Each unit row's most similar centroid (the lowest index on a tie). ``x``: float32
    unit rows; ``centroids``: float64 unit rows. A row whose best two centroids are within
    :data:`MARGIN` in the float32 product is decided in float64, row by row, so the
    answer never depends on the other rows of the call. Memory: :data:`CHUNK` x
    centroids scores."""
    n, k = len(x), len(centroids)
    best = np.zeros(n, np.int32)
    if n == 0 or k == 0:
        return best
    c32 = centroids.astype(np.float32)
    for a in range(0, n, CHUNK):   # CHUNK x k scores at a time
        s = x[a:a + CHUNK] @ c32.T
        b = np.argmax(s, axis=1)
        if k > 1:
            top2 = np.partition(s, k - 2, axis=1)[:, -2:]
            for i in np.flatnonzero(top2[:, 1] - top2[:, 0] < MARGIN).tolist():
                b[i] = int(np.argmax((centroids * x[a + i].astype(np.float64)).sum(axis=1)))
        best[a:a + CHUNK] = b
    return best


def kmeans(x: np.ndarray, k: int, *, seed: int, iterations: int) -> np.ndarray:
    """Spherical k-means on the float32 unit rows ``x`` (their order is part of the
    input, so callers sort them first): k-means++ seeding from ``numpy.random.default_rng
    (seed)``, then at most ``iterations`` rounds of assign (cosine) and re-centre (the
    members' float64 sum in row order, normalised; a centroid left without members stays
    where it was), stopping early when no row moves. Returns at most ``k`` float64 unit
    centroids (fewer when ``x`` has fewer distinct rows)."""
    from scipy.sparse import csr_matrix

    n = len(x)
    if n == 0 or k < 1:
        return np.zeros((0, x.shape[1] if x.ndim == 2 else 0))
    rng = np.random.default_rng(seed)

    def dist2(i: int) -> np.ndarray:   # squared distance of unit vectors to row i
        return np.maximum(2.0 - 2.0 * (x @ x[i]).astype(np.float64), 0.0)

    picked = [int(rng.integers(n))]
    d2 = dist2(picked[0])
    while len(picked) < min(k, n):
        total = float(d2.sum())
        if total <= 1e-9:        # every row coincides with a centroid: no distinct row left
            break
        i = min(int(np.searchsorted(np.cumsum(d2), rng.random() * total, side="right")), n - 1)
        while d2[i] <= 0.0 and i > 0:   # never a row already a centroid (a zero-weight step)
            i -= 1
        picked.append(i)
        d2 = np.minimum(d2, dist2(i))
    c = x[picked].astype(np.float64)
    labels = None
    for _ in range(iterations):
        new = assign(x, c)
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        sums = np.zeros_like(c)
        for a in range(0, n, CHUNK):   # members summed in row order (CSR rows: a fixed order)
            m = min(CHUNK, n - a)
            sums += csr_matrix((np.ones(m), (labels[a:a + m], np.arange(m))), shape=(len(c), m)) \
                @ x[a:a + m].astype(np.float64)
        norm = np.sqrt((sums * sums).sum(axis=1))
        live = norm > 0
        c[live] = sums[live] / norm[live][:, None]
    return c


def _tile_pairs(x: np.ndarray, threshold: float, block_rows: int):
    """The pairs ``i < j`` at cosine >= ``threshold`` of the float32 unit rows ``x``, one
    tile of ``block_rows x block_rows`` at a time: a float32 product decides outside
    :data:`MARGIN` of the threshold, the float64 cosine inside it."""
    n = len(x)
    lo, hi = threshold - MARGIN, threshold + MARGIN
    for a in range(0, n, block_rows):
        xa = x[a:a + block_rows]
        for b in range(a, n, block_rows):
            s = xa @ x[b:b + block_rows].T
            r, c = np.nonzero(s >= lo)
            sure = s[r, c] >= hi
            r, c = r + a, c + b
            keep = r < c
            r, c, sure = r[keep], c[keep], sure[keep]
            if not sure.all():
                check = np.flatnonzero(~sure)
                sure[check] = cosines(x, r[check], c[check]) >= threshold
                r, c = r[sure], c[sure]
            if len(r):
                yield r.astype(np.int64), c.astype(np.int64)


def similar_pairs(x: np.ndarray, threshold: float, *, block_rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair ``i < j`` of the float32 unit rows ``x`` whose cosine (float64) is at
    least ``threshold``, with that cosine, sorted by ``(i, j)``; the same pairs whatever
    ``block_rows`` (see :func:`_tile_pairs`). Holds every pair: for tests and small
    inputs (:func:`components` holds none)."""
    got = list(_tile_pairs(x, threshold, block_rows))
    i = np.concatenate([r for r, _ in got]) if got else np.zeros(0, np.int64)
    j = np.concatenate([c for _, c in got]) if got else np.zeros(0, np.int64)
    order = np.lexsort((j, i))
    i, j = i[order], j[order]
    return i, j, cosines(x, i, j)


def components(x: np.ndarray, threshold: float, *, block_rows: int) -> np.ndarray:
    """For each of the float32 unit rows ``x``, the first row (smallest index) of its
    component under the pairs at cosine >= ``threshold``. Pairs are merged tile by tile
    and never kept: memory is ``x``, one tile and O(rows), however many pairs a cluster
    of near-identical documents has."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(x)
    root = np.arange(n)
    for r, c in _tile_pairs(x, threshold, block_rows):
        a, b = root[r], root[c]
        m = a != b
        if not m.any():
            continue
        _, label = connected_components(coo_matrix((np.ones(int(m.sum()), np.int8), (a[m], b[m])), shape=(n, n)),
                                        directed=False)
        first = np.full(label.max() + 1, n, np.int64)
        np.minimum.at(first, label, np.arange(n))
        root = first[label[root]]   # a root's group holds roots only: its smallest is the new root
    return root
