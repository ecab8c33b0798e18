"""The batch functions the dedup passes hand to Ray Data (``map_batches`` /
``map_groups``). Module-level and side-effect free so Ray can ship them to workers;
the orchestration that chains them lives in :mod:`stages.dedup.stage`."""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from datapipe import schema as S
from stages.dedup import graph as G
from stages.dedup.minhash import (Normalisation, Shingling, band_buckets, batch_signatures, normalise, permutations)

log = logging.getLogger(__name__)

# columns the signature pass adds to every document row (dropped again at the end)
KEY, EXACT, BUCKETS, SIG, SH, BATCH = "_dd_key", "_dd_exact", "_dd_buckets", "_dd_sig", "_dd_sh", "_dd_batch"
DD_COLUMNS = (KEY, EXACT, BUCKETS, SIG, SH, BATCH)
SHARD = "shard"  # not underscore-prefixed: readers skip such folder names


def _col(t: pa.Table, name: str) -> pa.Array:
    c = t.column(name)
    return c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c


def exact_u64(arr: pa.Array) -> np.ndarray:
    """First 8 bytes of each 16-byte exact hash, as uint64 (nulls read as 0)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    if n == 0:
        return np.zeros(0, np.uint64)
    words = np.frombuffer(arr.buffers()[1], dtype=np.uint64)
    return words[2 * arr.offset: 2 * (arr.offset + n)].reshape(n, 2)[:, 0].copy()


def string_part(values: pa.Array, parts: int) -> np.ndarray:
    """Partition number of each string (stable across processes and runs)."""
    if parts == 1:
        return np.zeros(len(values), dtype=np.int64)
    h = xxhash.xxh3_64_intdigest
    return np.fromiter((h(v.encode("utf-8")) % parts if v is not None else 0 for v in values.to_pylist()), dtype=np.int64,
                       count=len(values))


def sig_type(num_perm: int) -> pa.DataType:
    return pa.list_(pa.uint32(), num_perm)


# -- pass 1: signatures -------------------------------------------------------------------

def signature_batch(batch: pa.Table, *, params: dict[str, Any]) -> pa.Table:
    """Add the ``_dd_*`` columns: key, exact hash, band buckets, signature, shingle set
    and batch id. Rows that are already dropped, outside ``applies`` or without any
    shingle get a null key: the passes ignore them and they come out untouched."""
    n = batch.num_rows
    num_perm = params["num_perm"]
    out: dict[str, pa.Array] = {}
    if n == 0:
        out.update({KEY: pa.array([], pa.string()), EXACT: pa.array([], pa.binary(16)),
                    BUCKETS: pa.array([], pa.list_(pa.uint64())), SIG: pa.array([], sig_type(num_perm)),
                    SH: pa.array([], pa.list_(pa.uint32())), BATCH: pa.array([], pa.uint64())})
        return _with(batch, out)
    alive = S.alive_mask(batch).to_numpy(zero_copy_only=False)
    if params["applies"] is not None:
        alive &= pc.is_in(_col(batch, S.SOURCE), pa.array(params["applies"], pa.string())).to_numpy(zero_copy_only=False)
    idx = np.flatnonzero(alive)
    texts = _col(batch, S.TEXT).take(pa.array(idx))
    norm = Normalisation(**params["norm"])
    shingling = Shingling(**params["shingling"])
    a, b = permutations(num_perm, params["seed"], params["scheme"])
    keep_sh = params["verify"] == "jaccard"
    if params["near"]:
        bs = batch_signatures(texts, norm=norm, shingling=shingling, a=a, b=b, scheme=params["scheme"],
                              keep_shingles=keep_sh)
        ok = bs.n_shingles > 0
        exact = bs.exact
    else:  # exact only: no shingles needed
        normed = normalise(texts, norm, for_words=shingling.kind == "word")
        exact = [xxhash.xxh3_128_digest(s.encode("utf-8")) for s in normed.to_pylist()]
        ok = pc.greater(pc.binary_length(normed), 0).to_numpy(zero_copy_only=False)
        bs = None
    elig = idx[ok]
    batch_id = xxhash.xxh3_64_intdigest(str(_col(batch, S.ID)[0].as_py()).encode("utf-8"))
    full_ok = np.zeros(n, dtype=bool)
    full_ok[elig] = True
    mask = pa.array(~full_ok)
    # exact hash
    ex_live = pa.array([exact[j] for j in np.flatnonzero(ok).tolist()], pa.binary(16))
    ex = _scatter(elig, n, ex_live)
    sources = _col(batch, S.SOURCE).take(pa.array(elig))
    ids = _col(batch, S.ID).take(pa.array(elig))
    ranks = np.array([params["ranks"].get(s, params["default_rank"]) for s in sources.to_pylist()], dtype=np.int64)
    keys = G.make_keys(1, ranks, sources, ids, batch_id, exact_u64(ex_live))
    out[KEY] = _scatter(elig, n, keys)
    out[EXACT] = ex
    if bs is not None:
        sig_live = bs.sig[ok]
        sig_full = np.zeros((n, num_perm), np.uint32)
        sig_full[elig] = sig_live
        out[SIG] = pa.FixedSizeListArray.from_arrays(pa.array(sig_full.ravel()), num_perm, mask=mask)
        bk = band_buckets(sig_live, params["bands"], params["rows"])
        bfull = np.zeros((n, params["bands"]), np.uint64)
        bfull[elig] = bk
        off = np.arange(n + 1, dtype=np.int32) * params["bands"]
        out[BUCKETS] = pa.ListArray.from_arrays(pa.array(off), pa.array(bfull.ravel()), mask=mask)
    else:
        out[SIG] = pa.nulls(n, sig_type(num_perm))
        out[BUCKETS] = pa.nulls(n, pa.list_(pa.uint64()))
    if bs is not None and keep_sh:
        # rows without shingles have none to contribute, so the values line up as they are
        counts_full = np.zeros(n, np.int64)
        counts_full[idx] = np.diff(bs.shingle_ptr)
        off = np.concatenate([[0], np.cumsum(counts_full)]).astype(np.int32)
        out[SH] = pa.ListArray.from_arrays(pa.array(off), pa.array(bs.shingle_values, pa.uint32()), mask=mask)
    else:
        out[SH] = pa.nulls(n, pa.list_(pa.uint32()))
    out[BATCH] = pa.array(np.full(n, batch_id, dtype=np.uint64))
    return _with(batch, out)


def _with(batch: pa.Table, cols: dict[str, pa.Array]) -> pa.Table:
    """``batch`` (its fields as they are, nullability included) plus ``cols``."""
    for name, arr in cols.items():
        if name in batch.column_names:
            batch = batch.drop_columns([name])
        batch = batch.append_column(name, arr)
    return batch


def _scatter(positions: np.ndarray, n: int, values: pa.Array) -> pa.Array:
    """``values`` at ``positions`` of an ``n``-long array, null elsewhere."""
    where = np.full(n, -1, dtype=np.int64)
    where[positions] = np.arange(len(positions))
    return values.take(pa.array(where, mask=where < 0))


# -- pass 2: exact ---------------------------------------------------------------------

def exact_input(batch: pa.Table, *, parts: int) -> pa.Table:
    """Eligible rows as ``_part, key, exact, buckets`` partitioned by exact hash."""
    if KEY in batch.column_names:
        batch = batch.filter(pc.is_valid(_col(batch, KEY)))
        t = pa.table({"key": _col(batch, KEY), "exact": _col(batch, EXACT), "buckets": _col(batch, BUCKETS)})
    else:
        t = batch.select(["key", "exact", "buckets"])
    part = (exact_u64(_col(t, "exact")) % np.uint64(parts)).astype(np.int64)
    return t.add_column(0, "_part", pa.array(part))


def exact_kernel(group: pa.Table) -> pa.Table:
    return G.exact_groups(group.drop_columns(["_part"]))


def exact_edges(batch: pa.Table) -> pa.Table:
    """Members of an exact group as edges from their representative."""
    t = batch.filter(pc.is_valid(_col(batch, "rep")))
    return pa.table({"a": _col(t, "rep"), "b": _col(t, "key")}, schema=G.EDGE_SCHEMA)


# -- pass 3: buckets -------------------------------------------------------------------

def bucket_rows(batch: pa.Table, *, parts: int) -> pa.Table:
    """Representatives exploded to one ``(bucket, key)`` row per band."""
    if "rep" in batch.column_names:
        batch = batch.filter(pc.is_null(_col(batch, "rep")))
    elif KEY in batch.column_names:
        batch = batch.filter(pc.is_valid(_col(batch, KEY)))
        batch = pa.table({"key": _col(batch, KEY), "buckets": _col(batch, BUCKETS)})
    lists = _col(batch, "buckets")
    parents = pc.list_parent_indices(lists)
    buckets = pc.list_flatten(lists)
    keys = _col(batch, "key").take(parents)
    part = (buckets.to_numpy(zero_copy_only=False) % np.uint64(parts)).astype(np.int64)
    return pa.table({"_part": pa.array(part), "bucket": buckets, "key": keys})


def bucket_kernel(group: pa.Table) -> pa.Table:
    return G.bucket_edges(group.drop_columns(["_part"]))


# -- pass 4: verification --------------------------------------------------------------

def join_schema(num_perm: int, carry: bool) -> pa.Schema:
    fields = [("_part", pa.int64()), ("_side", pa.int8()), ("a", pa.string()), ("b", pa.string()),
              ("key", pa.string()), ("sig", sig_type(num_perm)), ("sh", pa.list_(pa.uint32()))]
    if carry:
        fields += [("a_sig", sig_type(num_perm)), ("a_sh", pa.list_(pa.uint32()))]
    return pa.schema(fields)


def edge_side(batch: pa.Table, *, on: str, parts: int, num_perm: int, carry: bool) -> pa.Table:
    n = batch.num_rows
    cols = {"_part": pa.array(string_part(_col(batch, on), parts)), "_side": pa.array(np.zeros(n, np.int8))}
    for c in ("a", "b") + (("a_sig", "a_sh") if carry else ()):
        cols[c] = _col(batch, c)
    return S.conform(pa.table(cols), join_schema(num_perm, carry))


def needed_keys(batch: pa.Table, *, shards: int) -> pa.Table:
    """Endpoints of candidate pairs, sharded like the documents' batches, so that the
    verification joins only move the payload of documents that are in a pair."""
    keys = pc.unique(pa.concat_arrays([_col(batch, "a"), _col(batch, "b")]))
    batch_hex = G.key_fields(keys)["batch"]
    shard = np.array([int(x, 16) % shards for x in batch_hex.to_pylist()], dtype=np.int64)
    return pa.table({"key": keys, SHARD: pa.array(shard)})


def payload_side(batch: pa.Table, *, parts: int, num_perm: int, carry: bool, needed_dir: str | None = None,
                 shards: int = 1) -> pa.Table:
    """Payload rows (key, signature, shingle set) of the documents in candidate pairs
    (all eligible ones when ``needed_dir`` is None), tagged for the join."""
    if KEY in batch.column_names:
        batch = batch.filter(pc.is_valid(_col(batch, KEY)))
        bid = _col(batch, BATCH).to_numpy(zero_copy_only=False)
        batch = pa.table({"key": _col(batch, KEY), "sig": _col(batch, SIG), "sh": _col(batch, SH)})
    else:   # index rows: batch 0
        bid = np.zeros(batch.num_rows, np.uint64)
    if needed_dir is not None and batch.num_rows:
        need = _load_shards(needed_dir, (bid % np.uint64(shards)).astype(np.int64), ["key"])
        keep = pc.is_in(_col(batch, "key"), value_set=_col(need, "key")) if need is not None and need.num_rows \
            else pa.array(np.zeros(batch.num_rows, bool))
        batch = batch.filter(keep)
    n = batch.num_rows
    cols = {"_part": pa.array(string_part(_col(batch, "key"), parts)), "_side": pa.array(np.ones(n, np.int8)),
            "key": _col(batch, "key"), "sig": _col(batch, "sig"), "sh": _col(batch, "sh")}
    return S.conform(pa.table(cols), join_schema(num_perm, carry))


def join_a_kernel(group: pa.Table) -> pa.Table:
    """First half of the two-shuffle verification (partitioned by ``a``)."""
    e, pay = G.split_sides(group)
    return G.attach_payload(G.dedupe_edges(e), pay, on="a", prefix="a_")


def _keep_similar(e: pa.Table, threshold: float) -> pa.Table:
    sim = G.similarities(e)
    keep = sim >= threshold
    return pa.table({"a": _col(e, "a").filter(pa.array(keep)), "b": _col(e, "b").filter(pa.array(keep)),
                     "sim": pa.array(sim[keep], pa.float32())})


def join_b_kernel(group: pa.Table, *, threshold: float) -> pa.Table:
    """Second half (partitioned by ``b``): attach ``b`` and keep similar pairs."""
    e, pay = G.split_sides(group, carry=("a_sig", "a_sh"))
    return _keep_similar(G.attach_payload(e, pay, on="b", prefix="b_"), threshold)


def join_both_kernel(group: pa.Table, *, threshold: float) -> pa.Table:
    """Verification when everything fits one partition: both endpoints at once."""
    e, pay = G.split_sides(group)
    e = G.attach_payload(G.dedupe_edges(e), pay, on="a", prefix="a_")
    return _keep_similar(G.attach_payload(e, pay, on="b", prefix="b_"), threshold)


# -- pass 5: components ----------------------------------------------------------------

def edges_only(batch: pa.Table) -> pa.Table:
    return pa.table({"a": _col(batch, "a"), "b": _col(batch, "b")}, schema=G.EDGE_SCHEMA)


def single_part(batch: pa.Table) -> pa.Table:
    return edges_only(batch).add_column(0, "_part", pa.array(np.zeros(batch.num_rows, np.int64)))


def local_kernel(group: pa.Table) -> pa.Table:
    return G.local_components(group.drop_columns(["_part"]))


def directed_rows(batch: pa.Table, *, parts: int) -> pa.Table:
    a, b = _col(batch, "a"), _col(batch, "b")
    u = pa.concat_arrays([a, b])
    v = pa.concat_arrays([b, a])
    return pa.table({"_part": pa.array(string_part(u, parts)), "u": u, "v": v})


def by_b_rows(batch: pa.Table, *, parts: int) -> pa.Table:
    b = _col(batch, "b")
    return pa.table({"_part": pa.array(string_part(b, parts)), "a": _col(batch, "a"), "b": b})


def large_star_kernel(group: pa.Table) -> pa.Table:
    return G.large_star(group.drop_columns(["_part"]))


def small_star_kernel(group: pa.Table) -> pa.Table:
    return G.small_star(group.drop_columns(["_part"]))


# -- pass 6: decisions -----------------------------------------------------------------

DECISION_SCHEMA = pa.schema([("id", pa.string()), ("source", pa.string()), ("reason", pa.string()),
                             ("kept", pa.string()), ("kept_source", pa.string()), ("root", pa.string()),
                             ("size", pa.int64()), ("first", pa.bool_()), (SHARD, pa.int64())])


def by_root_rows(batch: pa.Table, *, parts: int) -> pa.Table:
    """Component rows, ``(node, root)`` or converged star edges ``(a=root, b=node)``,
    partitioned by root."""
    if "root" in batch.column_names:
        node, r = _col(batch, "node"), _col(batch, "root")
    else:
        node, r = _col(batch, "b"), _col(batch, "a")
    return pa.table({"_part": pa.array(string_part(r, parts)), "node": node, "root": r})


def decide_kernel(group: pa.Table, *, shards: int) -> pa.Table:
    """Component rows ``(node, root)`` partitioned by root -> one decision per removed
    document of this run: ``exact`` when its normalised text equals the survivor's,
    else ``near``; the survivor's id and source; its cluster's size (survivor included,
    documents of a persisted index left out) with ``first`` set on one row per cluster
    (for the histogram); the decision shard its input batch routes to."""
    nodes = _col(group, "node")
    t = group.select(["node", "root"]).filter(pa.array(~G.is_index_key(nodes)))
    if t.num_rows == 0:
        return DECISION_SCHEMA.empty_table()
    t = t.sort_by([("root", "ascending"), ("node", "ascending")])
    nf, rf = G.key_fields(_col(t, "node")), G.key_fields(_col(t, "root"))
    reason = pc.if_else(pc.equal(nf["exact"], rf["exact"]), "exact", "near")
    shard = np.array([int(x, 16) % shards for x in nf["batch"].to_pylist()], dtype=np.int64)
    (codes,), _ = G.ordinal(_col(t, "root"))
    head = np.ones(len(codes), dtype=bool)
    head[1:] = codes[1:] != codes[:-1]
    run = np.cumsum(head) - 1
    size = np.bincount(run)[run] + 1
    return pa.table({"id": nf["id"], "source": nf["source"], "reason": reason, "kept": rf["id"],
                     "kept_source": rf["source"], "root": _col(t, "root"), "size": pa.array(size, pa.int64()),
                     "first": pa.array(head), SHARD: pa.array(shard)}, schema=DECISION_SCHEMA)


def report_partials(batch: pa.Table) -> pa.Table:
    """Small partial aggregates of decisions for the report: ``pair`` rows count
    (source, kept_source, reason); ``size`` rows count clusters by size."""
    cols = {"kind": [], "source": [], "kept_source": [], "reason": [], "size": [], "n": []}
    if batch.num_rows:
        g = batch.group_by(["source", "kept_source", "reason"]).aggregate([([], "count_all")])
        for s, k, r, n in zip(*(g.column(c).to_pylist() for c in ("source", "kept_source", "reason", "count_all"))):
            for c, v in zip(cols, ("pair", s, k, r, 0, n)):
                cols[c].append(v)
        firsts = batch.filter(_col(batch, "first"))
        if firsts.num_rows:
            vc = pc.value_counts(_col(firsts, "size"))
            for size, n in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
                for c, v in zip(cols, ("size", None, None, None, size, n)):
                    cols[c].append(v)
    return pa.table({"kind": pa.array(cols["kind"], pa.string()), "source": pa.array(cols["source"], pa.string()),
                     "kept_source": pa.array(cols["kept_source"], pa.string()),
                     "reason": pa.array(cols["reason"], pa.string()), "size": pa.array(cols["size"], pa.int64()),
                     "n": pa.array(cols["n"], pa.int64())})


def _load_shards(decisions_dir: str, shards: np.ndarray, columns: list[str]) -> pa.Table | None:
    import pyarrow.dataset as pds

    tables = []
    for s in np.unique(shards).tolist():
        path = f"{decisions_dir.rstrip('/')}/{SHARD}={s}"
        fs, p = _fs(path)
        info = fs.get_file_info(p)
        if info.type.name == "NotFound":
            continue
        tables.append(pds.dataset(p, filesystem=fs, format="parquet").to_table(columns=columns))
    return pa.concat_tables(tables) if tables else None


def _fs(path: str):
    """(pyarrow filesystem, path) through datapipe's storage layer (S3 endpoint, region
    and profile as AWS tools read them)."""
    from datapipe import fs

    return fs.resolve(path)


def mark(batch: pa.Table, *, decisions_dir: str | None, shards: int, stage: str, columns: list[str]) -> pa.Table:
    """Final pass: mark this batch's removed documents, from the decision shards its
    rows route to; every other row comes out exactly as it went in."""
    out = batch.select(columns)
    if batch.num_rows == 0 or decisions_dir is None:
        return out
    shard = (_col(batch, BATCH).to_numpy(zero_copy_only=False) % np.uint64(shards)).astype(np.int64)
    dec = _load_shards(decisions_dir, shard, ["id", "reason", "kept"])
    if dec is None or dec.num_rows == 0:
        return out
    idx = pc.index_in(_col(batch, S.ID), value_set=_col(dec, "id"))
    hit = pc.and_(pc.is_valid(idx), S.alive_mask(batch))
    if not pc.any(hit).as_py():
        return out
    reason = pc.binary_join_element_wise(pa.scalar(f"{stage}:"), _col(dec, "reason").take(idx), "")
    kept = _col(dec, "kept").take(idx)
    cols = {name: _col(out, name) for name in out.column_names}
    cols[S.REJECT_STAGE] = pc.if_else(hit, pa.scalar(stage), cols[S.REJECT_STAGE])
    cols[S.REJECT_REASON] = pc.if_else(hit, reason, cols[S.REJECT_REASON])
    cols[S.REJECT_DETAIL] = pc.if_else(hit, kept, cols[S.REJECT_DETAIL])
    return pa.table(cols, schema=out.schema)


# -- index -----------------------------------------------------------------------------

INDEX_SCHEMA_FIELDS = ("id", "source", "exact", "buckets", "sig")


def index_survivors(batch: pa.Table, *, decisions_dir: str | None, shards: int) -> pa.Table:
    """This run's surviving eligible documents, as index rows."""
    batch = batch.filter(pc.is_valid(_col(batch, KEY)))
    if batch.num_rows and decisions_dir is not None:
        shard = (_col(batch, BATCH).to_numpy(zero_copy_only=False) % np.uint64(shards)).astype(np.int64)
        dec = _load_shards(decisions_dir, shard, ["id"])
        if dec is not None and dec.num_rows:
            batch = batch.filter(pc.invert(pc.is_in(_col(batch, S.ID), value_set=_col(dec, "id"))))
    return pa.table({"id": _col(batch, S.ID), "source": _col(batch, S.SOURCE), "exact": _col(batch, EXACT),
                     "buckets": _col(batch, BUCKETS), "sig": _col(batch, SIG)})


def index_rows(batch: pa.Table, *, ranks: dict[str, int], default_rank: int) -> pa.Table:
    """Index rows -> node rows (``key, exact, buckets, sig, sh``) of tier 0."""
    src = _col(batch, "source")
    r = np.array([ranks.get(s, default_rank) for s in src.to_pylist()], dtype=np.int64)
    keys = G.make_keys(0, r, src, _col(batch, "id"), 0, exact_u64(_col(batch, "exact")))
    return pa.table({"key": keys, "exact": _col(batch, "exact"), "buckets": _col(batch, "buckets"),
                     "sig": _col(batch, "sig"), "sh": pa.nulls(batch.num_rows, pa.list_(pa.uint32()))})
