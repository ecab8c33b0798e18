"""The batch functions the dedup passes hand to Ray Data (``map_batches`` /
``map_groups``). Module-level and side-effect free so Ray can ship them to workers;
the orchestration that chains them lives in :mod:`stages.dedup.stage`."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from datapipe import schema as S
from datapipe.schema import ROW, SPLIT
from stages.dedup import graph as G
from stages.dedup.minhash import (Normalisation, Shingling, band_buckets, batch_signatures, normalise, permutations)

log = logging.getLogger(__name__)

# columns of the node rows the passes work on (one per eligible side row)
KEY, EXACT, BUCKETS, SIG, SH, BATCH = "_dd_key", "_dd_exact", "_dd_buckets", "_dd_sig", "_dd_sh", "_dd_batch"
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


# -- side rows (in the split's task) ------------------------------------------------------

def side_schema(num_perm: int) -> pa.Schema:
    """What :func:`side_batch` returns, one row per document."""
    return pa.schema([("id", pa.string()), ("source", pa.string()), ("exact", pa.binary(16)),
                      ("sig", sig_type(num_perm)), ("buckets", pa.list_(pa.uint64())), ("sh", pa.list_(pa.uint32()))])


def side_batch(batch: pa.Table, *, params: dict[str, Any]) -> pa.Table:
    """The compact side row of every document of ``batch`` (never its text): id, source,
    the 16-byte hash of the normalised text (``exact``), the datasketch-compatible MinHash
    signature, its LSH band buckets and the document's distinct shingle hashes, sorted
    (``sh``, for exact-Jaccard verification). A document with nothing to shingle gets
    nulls everywhere but id and source: the global passes ignore it. ``sig``/``buckets``
    are null without the near pass, ``sh`` unless ``verify: jaccard``."""
    n = batch.num_rows
    num_perm = params["num_perm"]
    schema = side_schema(num_perm)
    if n == 0:
        return schema.empty_table()
    texts = _col(batch, S.TEXT)
    norm = Normalisation(**params["norm"])
    shingling = Shingling(**params["shingling"])
    out = {"id": _col(batch, S.ID).cast(pa.string()), "source": _col(batch, S.SOURCE).cast(pa.string())}
    if params["near"]:
        a, b = permutations(num_perm, params["seed"], params["scheme"])
        keep_sh = params["verify"] == "jaccard"
        bs = batch_signatures(texts, norm=norm, shingling=shingling, a=a, b=b, scheme=params["scheme"],
                              keep_shingles=keep_sh)
        ok = bs.n_shingles > 0
        mask = pa.array(~ok)
        out["exact"] = pa.array(bs.exact, pa.binary(16)).take(pa.array(np.arange(n), mask=~ok))
        out["sig"] = pa.FixedSizeListArray.from_arrays(pa.array(bs.sig.ravel()), num_perm, mask=mask)
        bands = params["bands"]
        off = np.arange(n + 1, dtype=np.int32) * bands
        bk = band_buckets(bs.sig, bands, params["rows"])
        out["buckets"] = pa.ListArray.from_arrays(pa.array(off), pa.array(bk.ravel()), mask=mask)
        if keep_sh:
            # documents without shingles own no values, so the offsets line up as they are
            out["sh"] = pa.ListArray.from_arrays(pa.array(bs.shingle_ptr.astype(np.int32)),
                                                 pa.array(bs.shingle_values, pa.uint32()), mask=mask)
        else:
            out["sh"] = pa.nulls(n, pa.list_(pa.uint32()))
    else:  # exact only: no shingles needed
        normed = normalise(texts, norm, for_words=shingling.words, symbols=shingling.kind == "token")
        ok = pc.greater(pc.binary_length(normed), 0).to_numpy(zero_copy_only=False)
        h = xxhash.xxh3_128_digest
        out["exact"] = pa.array([h(s.encode("utf-8")) if k else None for s, k in zip(normed.to_pylist(), ok)],
                                pa.binary(16))
        out["sig"] = pa.nulls(n, sig_type(num_perm))
        out["buckets"] = pa.nulls(n, pa.list_(pa.uint64()))
        out["sh"] = pa.nulls(n, pa.list_(pa.uint32()))
    return pa.table(out, schema=schema)


def split_batch_ids(splits: pa.Array) -> np.ndarray:
    """A 64-bit hash of each row's split name (shards lookups by split)."""
    uniq = pc.unique(splits)
    ids = np.array([xxhash.xxh3_64_intdigest(s.encode("utf-8")) for s in uniq.to_pylist()], dtype=np.uint64)
    return ids[pc.index_in(splits, value_set=uniq).to_numpy(zero_copy_only=False)]


def node_rows(batch: pa.Table, *, ranks: dict[str, int], default_rank: int) -> pa.Table:
    """Side rows (with the runner's ``_split``/``_row``) -> node rows of this run's
    eligible documents: ``_dd_key, _dd_exact, _dd_buckets, _dd_sig, _dd_sh, _dd_batch``."""
    t = batch.filter(pc.is_valid(_col(batch, "exact")))
    src = _col(t, "source")
    r = np.array([ranks.get(s, default_rank) for s in src.to_pylist()], dtype=np.int64)
    splits = _col(t, SPLIT).cast(pa.string())
    bid = split_batch_ids(splits)
    keys = G.make_keys(1, r, src, _col(t, "id"), bid, exact_u64(_col(t, "exact")),
                       _col(t, ROW).to_numpy(zero_copy_only=False), splits)
    return pa.table({KEY: keys, EXACT: _col(t, "exact"), BUCKETS: _col(t, "buckets"), SIG: _col(t, "sig"),
                     SH: _col(t, "sh"), BATCH: pa.array(bid)})


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
                 shards: int = 1, storage: Any = None) -> pa.Table:
    """Payload rows (key, signature, shingle set) of the documents in candidate pairs
    (all eligible ones when ``needed_dir`` is None), tagged for the join."""
    if KEY in batch.column_names:
        batch = batch.filter(pc.is_valid(_col(batch, KEY)))
        bid = _col(batch, BATCH).to_numpy(zero_copy_only=False)
        batch = pa.table({"key": _col(batch, KEY), "sig": _col(batch, SIG), "sh": _col(batch, SH)})
    else:   # index rows: batch 0
        bid = np.zeros(batch.num_rows, np.uint64)
    if needed_dir is not None and batch.num_rows:
        need = _load_shards(needed_dir, (bid % np.uint64(shards)).astype(np.int64), ["key"], storage)
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


def verify_pairs(e: pa.Table, pay: pa.Table, threshold: float) -> pa.Table:
    """Candidate edges ``a, b`` -> those with similarity >= ``threshold`` (``a, b, sim``),
    given the payload (``key, sig, sh``) of at least every endpoint. Vectorised: cost in
    proportion to the candidate pairs and their shingle sets, never to the corpus."""
    e = G.attach_payload(G.dedupe_edges(e), pay, on="a", prefix="a_")
    return _keep_similar(G.attach_payload(e, pay, on="b", prefix="b_"), threshold)


def join_both_kernel(group: pa.Table, *, threshold: float) -> pa.Table:
    """Verification when everything fits one partition: both endpoints at once."""
    e, pay = G.split_sides(group)
    return verify_pairs(e, pay, threshold)


# -- pass 5: components ----------------------------------------------------------------

def edges_only(batch: pa.Table) -> pa.Table:
    return pa.table({"a": _col(batch, "a"), "b": _col(batch, "b")}, schema=G.EDGE_SCHEMA)


def local_decide(group: pa.Table) -> pa.Table:
    """Union-find over every edge (``a, b``) in one task, then the decisions (see
    :func:`decide_kernel`)."""
    return decide_kernel(G.local_components(edges_only(group)))


def directed_rows(batch: pa.Table, *, parts: int) -> pa.Table:
    a, b = _col(batch, "a"), _col(batch, "b")
    u = pa.concat_arrays([a, b])
    v = pa.concat_arrays([b, a])
    return pa.table({"_part": pa.array(string_part(u, parts)), "u": u, "v": v})


def by_b_rows(batch: pa.Table, *, parts: int) -> pa.Table:
    b = _col(batch, "b")
    return pa.table({"_part": pa.array(string_part(b, parts)), "a": _col(batch, "a"), "b": b})


# -- pass 6: decisions -----------------------------------------------------------------

DECISION_SCHEMA = pa.schema([("node", pa.string()), ("id", pa.string()), ("source", pa.string()),
                             ("reason", pa.string()), ("kept", pa.string()), ("kept_source", pa.string()),
                             ("root", pa.string()), ("size", pa.int64()), ("first", pa.bool_()),
                             (SPLIT, pa.string()), (ROW, pa.int64())])


def by_root_rows(batch: pa.Table, *, parts: int) -> pa.Table:
    """Component rows, ``(node, root)`` or converged star edges ``(a=root, b=node)``,
    partitioned by root."""
    if "root" in batch.column_names:
        node, r = _col(batch, "node"), _col(batch, "root")
    else:
        node, r = _col(batch, "b"), _col(batch, "a")
    return pa.table({"_part": pa.array(string_part(r, parts)), "node": node, "root": r})


def decide_kernel(group: pa.Table) -> pa.Table:
    """Component rows ``(node, root)`` partitioned by root -> one decision per removed
    document of this run: ``exact`` when its normalised text equals the survivor's,
    else ``near``; the survivor's id and source; its cluster's size (survivor included,
    documents of a persisted index left out) with ``first`` set on one row per cluster
    (for the histogram); the side row (``_split``, ``_row``) it goes back to."""
    nodes = _col(group, "node")
    t = group.select(["node", "root"]).filter(pa.array(~G.is_index_key(nodes)))
    if t.num_rows == 0:
        return DECISION_SCHEMA.empty_table()
    t = t.sort_by([("root", "ascending"), ("node", "ascending")])
    nf, rf = G.key_fields(_col(t, "node")), G.key_fields(_col(t, "root"))
    reason = pc.if_else(pc.equal(nf["exact"], rf["exact"]), "exact", "near")
    (codes,), _ = G.ordinal(_col(t, "root"))
    head = np.ones(len(codes), dtype=bool)
    head[1:] = codes[1:] != codes[:-1]
    run = np.cumsum(head) - 1
    size = np.bincount(run)[run] + 1
    return pa.table({"node": _col(t, "node"), "id": nf["id"], "source": nf["source"], "reason": reason,
                     "kept": rf["id"], "kept_source": rf["source"], "root": _col(t, "root"),
                     "size": pa.array(size, pa.int64()), "first": pa.array(head), SPLIT: nf["split"],
                     ROW: nf["row"].cast(pa.int64())}, schema=DECISION_SCHEMA)


def decisions_out(dec: pa.Table) -> pa.Table:
    """Decision rows as the runner takes them: ``_split, _row, reason, detail``
    (the survivor's id), sorted by ``(_split, _row)``."""
    t = pa.table({SPLIT: _col(dec, SPLIT), ROW: _col(dec, ROW), "reason": _col(dec, "reason"),
                  "detail": _col(dec, "kept")}, schema=S.DECISIONS)
    return t.sort_by([(SPLIT, "ascending"), (ROW, "ascending")])


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


def _load_shards(decisions_dir: str, shards: np.ndarray, columns: list[str], storage: Any = None) -> pa.Table | None:
    """The rows of the ``<SHARD>=<s>`` folders of ``decisions_dir`` for the shards named
    (``storage``: the job's :class:`datapipe.fs.StorageOptions`)."""
    from datapipe import fs

    tables = []
    for s in np.unique(shards).tolist():
        files = [f for f in fs.list_files(fs.join(decisions_dir, f"{SHARD}={s}"), storage) if f.endswith(".parquet")]
        tables += [pq.read_table(fs.arrow_input(f, storage), columns=columns) for f in files]
    return pa.concat_tables(tables) if tables else None


# -- index -----------------------------------------------------------------------------

INDEX_SCHEMA_FIELDS = ("id", "source", "exact", "buckets", "sig")


def index_survivors(batch: pa.Table, *, decisions: str | None, storage: Any = None) -> pa.Table:
    """Node rows of this run's documents that survive (not a ``node`` of the
    ``decisions`` artifact, the removed nodes; None: nothing removed), as index rows
    (``storage``: the job's :class:`datapipe.fs.StorageOptions`)."""
    from datapipe import fs

    removed = None
    if decisions is not None:   # bounded by the number of duplicates
        files = [f for f in fs.list_files(decisions, storage) if f.endswith(".parquet")]
        removed = pa.concat_tables([pq.read_table(fs.arrow_input(f, storage), columns=["node"]) for f in files]
                                   ).column("node").combine_chunks() if files else None
    if removed is not None and len(removed):
        batch = batch.filter(pc.invert(pc.is_in(_col(batch, KEY), value_set=removed)))
    f = G.key_fields(_col(batch, KEY))
    return pa.table({"id": f["id"], "source": f["source"], "exact": _col(batch, EXACT),
                     "buckets": _col(batch, BUCKETS), "sig": _col(batch, SIG)})


def index_rows(batch: pa.Table, *, ranks: dict[str, int], default_rank: int) -> pa.Table:
    """Index rows -> node rows (``key, exact, buckets, sig, sh``) of tier 0."""
    src = _col(batch, "source")
    r = np.array([ranks.get(s, default_rank) for s in src.to_pylist()], dtype=np.int64)
    keys = G.make_keys(0, r, src, _col(batch, "id"), 0, exact_u64(_col(batch, "exact")))
    return pa.table({"key": keys, "exact": _col(batch, "exact"), "buckets": _col(batch, "buckets"),
                     "sig": _col(batch, "sig"), "sh": pa.nulls(batch.num_rows, pa.list_(pa.uint32()))})
