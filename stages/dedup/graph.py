"""The per-partition kernels of the dedup passes, as pure functions on Arrow tables.

Every Ray Data shuffle in the stage hash-partitions rows by a ``_part`` column and
hands each whole partition to one of these kernels, which then works vectorised
(sort, run detection) instead of calling Python once per group. A kernel's output
depends only on the *set* of rows it gets, never on their order or on how the
partitions were cut, which is what makes the stage repeatable.

Documents are nodes named by a **key** string that sorts in survival order::

    <tier><rank:04d> \\x1f <source> \\x1f <id> \\x1f <batch:016x> \\x1f <exact:016x>
        \\x1f <row:012d> \\x1f <split>

``tier`` is ``0`` for documents of a persisted index (earlier runs; always kept) and
``1`` for this run's documents; ``rank`` is the source's position in
``source_priority``. The smallest key of a component is the survivor. ``split`` and
``row`` name the side row (the read split and the row's position in it) a decision goes
back to, ``batch`` (a hash of the split) shards lookups by split; ``exact`` (the first
8 bytes of the normalised-text hash) tells an exact duplicate from a near one. The
split comes last so that any character in it is safe.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SEP = "\x1f"
EDGE_SCHEMA = pa.schema([("a", pa.string()), ("b", pa.string())])
COMPONENT_SCHEMA = pa.schema([("node", pa.string()), ("root", pa.string())])
STEP_SCHEMA = pa.schema([("a", pa.string()), ("b", pa.string()), ("changed", pa.bool_())])


def make_keys(tier: int, ranks: np.ndarray, sources: pa.Array, ids: pa.Array, batch: np.ndarray | int,
              exact8: np.ndarray, rows: np.ndarray | int = 0, splits: pa.Array | None = None) -> pa.Array:
    """Vectorised :data:`key <stages.dedup.graph>` construction."""
    n = len(ids)
    prefix = pa.array([f"{tier}{int(r):04d}" for r in ranks.tolist()], pa.string())
    batch_arr = np.broadcast_to(np.asarray(batch, dtype=np.uint64), (n,))
    bhex = pa.array([f"{int(x):016x}" for x in batch_arr.tolist()], pa.string())
    ehex = pa.array([f"{int(x):016x}" for x in exact8.astype(np.uint64).tolist()], pa.string())
    row_arr = np.broadcast_to(np.asarray(rows, dtype=np.int64), (n,))
    rdec = pa.array([f"{int(x):012d}" for x in row_arr.tolist()], pa.string())
    split = splits.cast(pa.string()) if splits is not None else pa.array([""] * n, pa.string())
    return pc.binary_join_element_wise(prefix, sources.cast(pa.string()), ids.cast(pa.string()), bhex, ehex, rdec,
                                       split, SEP)


_FIELDS = ("tier", "source", "id", "batch", "exact", "row", "split")


def key_fields(keys: pa.Array) -> dict[str, pa.Array]:
    """Split keys into ``tier, source, id, batch, exact, row, split`` (string arrays)."""
    parts = pc.split_pattern(keys, SEP, max_splits=len(_FIELDS) - 1)
    flat = pc.list_flatten(parts)
    n = len(keys)
    idx = np.arange(n, dtype=np.int64) * len(_FIELDS)
    out = {name: flat.take(pa.array(idx + i)) for i, name in enumerate(_FIELDS)}
    out["tier"] = pc.utf8_slice_codeunits(out["tier"], 0, 1)
    return out


def is_index_key(keys: pa.Array) -> np.ndarray:
    return pc.equal(pc.utf8_slice_codeunits(keys, 0, 1), "0").to_numpy(zero_copy_only=False)


def ordinal(*arrays: pa.Array) -> tuple[list[np.ndarray], pa.Array]:
    """Order-preserving integer codes for string arrays: ``codes[i]`` indexes the sorted
    distinct values, so comparing codes compares keys."""
    arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
    allv = pa.concat_arrays([a.cast(pa.string()) for a in arrays]) if arrays else pa.array([], pa.string())
    uniq = pc.unique(allv)
    uniq = uniq.take(pc.sort_indices(uniq))
    codes = [pc.index_in(a.cast(pa.string()), value_set=uniq).to_numpy(zero_copy_only=False).astype(np.int64)
             for a in arrays]
    return codes, uniq


def _col(t: pa.Table, name: str) -> pa.Array:
    c = t.column(name)
    return c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c


def _runs(sorted_keys: np.ndarray) -> np.ndarray:
    """Boolean 'first row of its run' over an already sorted array."""
    head = np.ones(len(sorted_keys), dtype=bool)
    if len(sorted_keys) > 1:
        head[1:] = sorted_keys[1:] != sorted_keys[:-1]
    return head


# -- exact duplicates --------------------------------------------------------------

def exact_groups(t: pa.Table) -> pa.Table:
    """Rows ``key, exact, buckets`` -> ``key, rep, buckets``: ``rep`` is the smallest key
    with the same normalised-text hash when that is another document, else null (the
    document represents its text further on). Nulls make the number of exact
    duplicates readable from the Parquet footers' statistics."""
    if t.num_rows == 0:
        return pa.table({"key": pa.array([], pa.string()), "rep": pa.array([], pa.string()),
                         "buckets": pa.array([], pa.list_(pa.uint64()))})
    t = t.sort_by([("exact", "ascending"), ("key", "ascending")])
    ex = _col(t, "exact")
    head = np.ones(t.num_rows, dtype=bool)
    if t.num_rows > 1:
        head[1:] = pc.not_equal(ex.slice(1), ex.slice(0, t.num_rows - 1)).to_numpy(zero_copy_only=False)
    run = np.cumsum(head) - 1
    heads = np.flatnonzero(head)
    keys = _col(t, "key")
    src = heads[run]
    rep = keys.take(pa.array(src, mask=src == np.arange(t.num_rows)))
    return pa.table({"key": keys, "rep": rep, "buckets": _col(t, "buckets")})


# -- LSH buckets --------------------------------------------------------------------

def bucket_edges(t: pa.Table) -> pa.Table:
    """Rows ``bucket, key`` -> candidate edges ``a < b``: in every bucket shared by two or
    more documents, an edge from the bucket's smallest key to each other member (a
    star: connected like the bucket's clique, with members-1 edges). Edges between two
    index documents are left out: both are kept whatever happens."""
    if t.num_rows == 0:
        return EDGE_SCHEMA.empty_table()
    (codes,), uniq = ordinal(_col(t, "key"))
    bucket = _col(t, "bucket").to_numpy(zero_copy_only=False)
    order = np.lexsort((codes, bucket))
    bucket, codes = bucket[order], codes[order]
    head = _runs(bucket)
    run = np.cumsum(head) - 1
    anchor = codes[np.flatnonzero(head)][run]
    sel = ~head & (anchor != codes)
    a, b = anchor[sel], codes[sel]
    if len(a) == 0:
        return EDGE_SCHEMA.empty_table()
    pair = np.unique(np.stack([a, b], axis=1), axis=0)
    ka, kb = uniq.take(pa.array(pair[:, 0])), uniq.take(pa.array(pair[:, 1]))
    keep = ~(is_index_key(ka) & is_index_key(kb))
    return pa.table({"a": ka.filter(pa.array(keep)), "b": kb.filter(pa.array(keep))}, schema=EDGE_SCHEMA)


# -- verification -------------------------------------------------------------------

def split_sides(t: pa.Table, carry: tuple[str, ...] = ()) -> tuple[pa.Table, pa.Table]:
    """A join partition's edge rows (``_side == 0``: ``a, b`` + ``carry``) and payload
    rows (``_side == 1``: ``key, sig, sh``)."""
    side = _col(t, "_side").to_numpy(zero_copy_only=False)
    edges = t.filter(pa.array(side == 0))
    pay = t.filter(pa.array(side == 1))
    return (pa.table({c: _col(edges, c) for c in ("a", "b", *carry)}),
            pa.table({c: _col(pay, c) for c in ("key", "sig", "sh")}))


def dedupe_edges(e: pa.Table) -> pa.Table:
    """Edges found in several bands, once."""
    if e.num_rows < 2:
        return e
    (ca, cb), _ = ordinal(_col(e, "a"), _col(e, "b"))
    _, first = np.unique(ca * (int(cb.max()) + 1) + cb, return_index=True)
    return e.take(pa.array(np.sort(first)))


def attach_payload(e: pa.Table, pay: pa.Table, *, on: str, prefix: str) -> pa.Table:
    """Hash-join step: attach the payload (``sig``, ``sh``) of each edge's ``on``
    endpoint as ``<prefix>sig``/``<prefix>sh``. An edge whose endpoint has no payload
    is dropped (a consistent run has none)."""
    if e.num_rows == 0:
        return e.append_column(prefix + "sig", pa.nulls(0, pay.schema.field("sig").type)).append_column(
            prefix + "sh", pa.nulls(0, pay.schema.field("sh").type))
    idx = pc.index_in(_col(e, on), value_set=_col(pay, "key"))
    found = pc.is_valid(idx)
    e = e.filter(found)
    idx = idx.filter(found)
    e = e.append_column(prefix + "sig", _col(pay, "sig").take(idx))
    return e.append_column(prefix + "sh", _col(pay, "sh").take(idx))


def _fixed_to_matrix(arr: pa.Array) -> np.ndarray:
    width = arr.type.list_size
    return np.asarray(arr.flatten().to_numpy(zero_copy_only=False)).reshape(-1, width) if len(arr) else np.zeros((0, width), np.uint32)


def similarities(t: pa.Table) -> np.ndarray:
    """Similarity of each edge: the exact Jaccard of the two shingle-hash sets where both
    are present, else the signature estimate (equal positions / num_perm)."""
    n = t.num_rows
    sim = np.zeros(n, dtype=np.float64)
    if n == 0:
        return sim
    sa, sb = _fixed_to_matrix(_col(t, "a_sig")), _fixed_to_matrix(_col(t, "b_sig"))
    sim[:] = (sa == sb).mean(axis=1)
    sha, shb = _col(t, "a_sh"), _col(t, "b_sh")
    both = np.flatnonzero((pc.is_valid(sha).to_numpy(zero_copy_only=False))
                          & (pc.is_valid(shb).to_numpy(zero_copy_only=False)))
    if len(both):
        la = sha.take(pa.array(both))
        lb = shb.take(pa.array(both))
        na = pc.list_value_length(la).to_numpy(zero_copy_only=False).astype(np.int64)
        nb = pc.list_value_length(lb).to_numpy(zero_copy_only=False).astype(np.int64)
        va = pc.list_flatten(la).to_numpy(zero_copy_only=False)
        vb = pc.list_flatten(lb).to_numpy(zero_copy_only=False)
        m = len(both)
        # each set is sorted and distinct, so (edge, value) keys of the a sides are sorted
        # as a whole: one binary search per b value finds the intersection, no sort needed
        ea = np.repeat(np.arange(m, dtype=np.uint64), na)
        eb = np.repeat(np.arange(m, dtype=np.uint64), nb)
        ka = (ea << np.uint64(32)) | va.astype(np.uint64)
        kb = (eb << np.uint64(32)) | vb.astype(np.uint64)
        pos = np.minimum(np.searchsorted(ka, kb), max(len(ka) - 1, 0))
        hit = ka[pos] == kb if len(ka) else np.zeros(len(kb), bool)
        inter = np.bincount(eb[hit].astype(np.int64), minlength=m)
        union = na + nb - inter
        sim[both] = np.where(union > 0, inter / np.maximum(union, 1), 0.0)
    return sim


# -- connected components -------------------------------------------------------------

def local_components(t: pa.Table) -> pa.Table:
    """Union-find over all edges of one partition: ``(node, root)`` for every node that
    is not its component's smallest key. Memory is linear in the number of edges."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if t.num_rows == 0:
        return COMPONENT_SCHEMA.empty_table()
    (a, b), uniq = ordinal(_col(t, "a"), _col(t, "b"))
    n = len(uniq)
    g = coo_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(n, n))
    _, label = connected_components(g, directed=False)
    root = np.full(label.max() + 1, n, dtype=np.int64)
    np.minimum.at(root, label, np.arange(n, dtype=np.int64))
    r = root[label]
    nodes = np.flatnonzero(r != np.arange(n))
    return pa.table({"node": uniq.take(pa.array(nodes)), "root": uniq.take(pa.array(r[nodes]))},
                    schema=COMPONENT_SCHEMA)


def large_star(t: pa.Table) -> pa.Table:
    """One large-star step over a partition of directed rows ``u, v`` (every undirected
    edge appears in both directions, partitioned by ``u``): each node ``u`` links every
    larger neighbour to the smallest of ``u`` and its neighbours."""
    if t.num_rows == 0:
        return STEP_SCHEMA.empty_table()
    (u, v), uniq = ordinal(_col(t, "u"), _col(t, "v"))
    uv = np.unique(np.stack([u, v], axis=1), axis=0)     # sorted by u, then v
    u, v = uv[:, 0], uv[:, 1]
    head = _runs(u)
    run = np.cumsum(head) - 1
    m = np.minimum(u, v[np.flatnonzero(head)][run])      # min over the closed neighbourhood
    sel = v > u
    a, b, changed = m[sel], v[sel], m[sel] != u[sel]
    return pa.table({"a": uniq.take(pa.array(a)), "b": uniq.take(pa.array(b)), "changed": pa.array(changed)},
                    schema=STEP_SCHEMA)


def small_star(t: pa.Table) -> pa.Table:
    """One small-star step over a partition of canonical edges ``a < b`` partitioned by
    ``b``: each node ``b`` links itself and its smaller neighbours to the smallest of
    them."""
    if t.num_rows == 0:
        return STEP_SCHEMA.empty_table()
    (a, b), uniq = ordinal(_col(t, "a"), _col(t, "b"))
    ba = np.unique(np.stack([b, a], axis=1), axis=0)     # sorted by b, then a
    b, a = ba[:, 0], ba[:, 1]
    head = _runs(b)
    run = np.cumsum(head) - 1
    hidx = np.flatnonzero(head)
    m = a[hidx][run]
    deg = np.diff(np.append(hidx, len(b)))[run]           # smaller neighbours of b
    changed = deg >= 2
    # (m, b) once per group, (m, a) for the other smaller neighbours
    out_a = np.concatenate([m[head], m[~head]])
    out_b = np.concatenate([b[head], a[~head]])
    out_c = np.concatenate([changed[head], changed[~head]])
    return pa.table({"a": uniq.take(pa.array(out_a)), "b": uniq.take(pa.array(out_b)), "changed": pa.array(out_c)},
                    schema=STEP_SCHEMA)


def star_components(edges: pa.Table) -> pa.Table:
    """After convergence every edge is ``(root, leaf)``."""
    return pa.table({"node": _col(edges, "b"), "root": _col(edges, "a")}, schema=COMPONENT_SCHEMA)


def components_in_memory(edges: pa.Table, *, max_rounds: int = 200) -> tuple[pa.Table, int]:
    """Alternating large-star / small-star on one table (the same kernels the
    distributed pass runs per partition); for tests and small graphs."""
    cur = pa.table({"a": _col(edges, "a"), "b": _col(edges, "b")})
    for rounds in range(1, max_rounds + 1):
        directed = pa.table({"u": pa.concat_arrays([_col(cur, "a"), _col(cur, "b")]),
                             "v": pa.concat_arrays([_col(cur, "b"), _col(cur, "a")])})
        ls = large_star(directed)
        ss = small_star(ls.select(["a", "b"]))
        changed = bool(pc.any(_col(ls, "changed")).as_py()) or bool(pc.any(_col(ss, "changed")).as_py())
        cur = ss.select(["a", "b"])
        if not changed:
            (ca, cb), uniq = ordinal(_col(cur, "a"), _col(cur, "b"))
            pair = np.unique(np.stack([ca, cb], axis=1), axis=0) if len(ca) else np.zeros((0, 2), np.int64)
            cur = pa.table({"a": uniq.take(pa.array(pair[:, 0])), "b": uniq.take(pa.array(pair[:, 1]))})
            return star_components(cur), rounds
    raise RuntimeError(f"connected components did not converge in {max_rounds} rounds")
