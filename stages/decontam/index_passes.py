"""The decontamination index as global-stage passes (:mod:`datapipe.passes`), run once
per run by the engine's executor before the phase holding ``decontaminate``
(:meth:`datapipe.stage.Stage.prepare`), their artifacts committed under the stage's work
folder and reused on resume:

1. ``items`` (one group per evaluation file, hashed over ``parts``): reads each file
   (JSONL/Parquet/plain text, decompressed, through the input layer:
   :func:`stages.decontam.ngrams.read_eval_items`) and writes one row per
   evaluation item: its benchmark and the hashes of its n-grams (a list, empty for an
   item shorter than ``n`` words).
2. ``summary``: per benchmark, items, items shorter than ``n`` and n-grams (for the
   report).
3. ``index``: every n-gram once (first benchmark listed wins), sorted by hash: the
   exact index the workers load (10 bytes an n-gram).
4. ``bloom`` (``index_kind: bloom``, or ``auto`` above ``bloom_above`` n-grams): the
   Bloom filters built from the index (:class:`stages.decontam.ngrams.BloomIndex`), one
   row per filter (with several benchmarks, the per-benchmark ones at ``NAME_FPR``); the workers load these instead of the exact index.

The input is a one-row-per-file manifest the stage writes (benchmark, file); the passes'
resume key stands for the files' contents (sha256), ``n``, the text fields and
:data:`NORMALISATION`, not their paths.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from datapipe import fs
from datapipe.errors import SpecError
from stages.decontam.ngrams import NAME_FPR, Bloom, BloomIndex, NgramIndex, index_from_hashes, read_eval_items, text_ngram_hashes

#: names the normalisation and hashing the artifacts were built with (in the resume key)
NORMALISATION = "lower+nonword-runs:v1/poly64"

MANIFEST = pa.schema([("bench", pa.uint16()), ("benchmark", pa.string()), ("uri", pa.string())])
ITEMS = pa.schema([("bench", pa.uint16()), ("ngrams", pa.large_list(pa.uint64()))])
SUMMARY = pa.schema([("bench", pa.uint16()), ("items", pa.int64()), ("short_items", pa.int64()),
                     ("ngrams", pa.int64())])
INDEX = pa.schema([("hash", pa.uint64()), ("bench", pa.uint16())])
BLOOM = pa.schema([("filter", pa.int32()), ("m", pa.int64()), ("k", pa.int32()), ("ngrams", pa.int64()),
                   ("fpr", pa.float64()), ("bits", pa.large_binary())])


def items(table: pa.Table, *, n: int, fields: list[str], storage: fs.StorageOptions | None) -> pa.Table:
    """Per evaluation item of the manifest's files: (bench, its n-gram hashes). A file
    that cannot be read or parsed is a :class:`SpecError` naming it."""
    out = []
    for b, uri in zip(table.column("bench").to_pylist(), table.column("uri").to_pylist()):
        try:
            texts = read_eval_items(uri, tuple(fields), storage)
        except (OSError, ValueError, UnicodeDecodeError, pa.ArrowException) as e:
            raise SpecError(f"decontaminate: evaluation file {uri} cannot be read: {e}; fix or remove it") from None
        for i in range(0, len(texts), 4096):
            chunk = texts[i:i + 4096]
            h, row = text_ngram_hashes(chunk, n)
            offsets = np.searchsorted(row, np.arange(len(chunk) + 1)).astype(np.int64)
            out.append(pa.table({"bench": pa.array(np.full(len(chunk), b, np.uint16)),
                                 "ngrams": pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(h))},
                                schema=ITEMS))
    return pa.concat_tables(out) if out else ITEMS.empty_table()


def summary(table: pa.Table) -> pa.Table:
    """Per benchmark: items, items shorter than ``n`` (no n-gram), n-grams."""
    bench = table.column("bench").to_numpy()
    lens = np.diff(table.column("ngrams").combine_chunks().offsets.to_numpy()) if table.num_rows else np.zeros(0)
    ids = np.unique(bench)
    return pa.table({"bench": pa.array(ids.astype(np.uint16)),
                     "items": pa.array([int((bench == b).sum()) for b in ids], pa.int64()),
                     "short_items": pa.array([int(((bench == b) & (lens == 0)).sum()) for b in ids], pa.int64()),
                     "ngrams": pa.array([int(lens[bench == b].sum()) for b in ids], pa.int64())}, schema=SUMMARY)


def index(table: pa.Table, *, n: int) -> pa.Table:
    """Every n-gram once (sorted by hash; the first benchmark listed wins a shared one)."""
    lists = table.column("ngrams").combine_chunks() if table.num_rows else pa.array([], ITEMS.field("ngrams").type)
    lens = np.diff(lists.offsets.to_numpy()) if len(lists) else np.zeros(0, np.int64)
    h = lists.flatten().to_numpy() if len(lists) else np.zeros(0, np.uint64)
    b = np.repeat(table.column("bench").to_numpy(), lens).astype(np.uint16) if len(lists) else np.zeros(0, np.uint16)
    idx = index_from_hashes(h, b, n=n, names=[])
    return pa.table({"hash": pa.array(idx.hashes), "bench": pa.array(idx.bench)}, schema=INDEX)


def bloom(table: pa.Table, *, benchmarks: int, fpr: float, above: int) -> pa.Table:
    """The index's Bloom filters (filter -1: every n-gram; ``b``: benchmark ``b``'s, when
    there are several), or no row when the index holds ``above`` n-grams or fewer (the
    workers then load the exact index)."""
    if table.num_rows <= above:
        return BLOOM.empty_table()
    h, b = table.column("hash").to_numpy(), table.column("bench").to_numpy()
    filters = [(-1, Bloom.build(h, fpr), len(h), fpr)]
    if benchmarks > 1:
        name_fpr = max(fpr, NAME_FPR)
        filters += [(i, Bloom.build(h[b == i], name_fpr), int((b == i).sum()), name_fpr) for i in range(benchmarks)]
    return pa.table({"filter": pa.array([f[0] for f in filters], pa.int32()),
                     "m": pa.array([f[1].m for f in filters], pa.int64()),
                     "k": pa.array([f[1].k for f in filters], pa.int32()),
                     "ngrams": pa.array([f[2] for f in filters], pa.int64()),
                     "fpr": pa.array([f[3] for f in filters], pa.float64()),
                     "bits": pa.array([f[1].bits.tobytes() for f in filters], pa.large_binary())}, schema=BLOOM)


# -- loading the artifacts in a worker ----------------------------------------------------

def _read(uri: str, storage: fs.StorageOptions | None, columns: list[str] | None = None) -> pa.Table:
    """An artifact's Parquet files as one table (memory-mapped when local)."""
    from datapipe.passes import parquet_files

    files = parquet_files(uri, storage)
    if not files:
        return pa.table({})
    tables = []
    for f in files:
        if fs.is_local(f):
            tables.append(pq.read_table(f, columns=columns, memory_map=True))
        else:
            tables.append(pq.read_table(fs.arrow_input(f, storage), columns=columns))
    return pa.concat_tables(tables)


def load(artifacts: dict[str, str], *, n: int, names: list[str], storage: fs.StorageOptions | None
         ) -> NgramIndex | BloomIndex:
    """The index the passes built: the Bloom filters when the ``bloom`` pass wrote any,
    else the exact index."""
    if "bloom" in artifacts:
        t = _read(artifacts["bloom"], storage)
        if t.num_rows:
            rows = {int(f): i for i, f in enumerate(t.column("filter").to_pylist())}

            def filt(i: int) -> Bloom:
                bits = np.frombuffer(t.column("bits")[i].as_buffer(), dtype=np.uint64)
                return Bloom(bits=bits, m=int(t.column("m")[i].as_py()), k=int(t.column("k")[i].as_py()))

            r = rows[-1]
            return BloomIndex(n=n, names=list(names), fpr=float(t.column("fpr")[r].as_py()),
                              ngrams=int(t.column("ngrams")[r].as_py()), all=filt(r),
                              per=[filt(rows[b]) for b in range(len(names))] if len(names) > 1 else [])
    t = _read(artifacts["index"], storage, ["hash", "bench"])
    h = t.column("hash").to_numpy() if t.num_rows else np.zeros(0, np.uint64)
    b = t.column("bench").to_numpy() if t.num_rows else np.zeros(0, np.uint16)
    return NgramIndex(n=n, hashes=h, bench=b, names=list(names), items={}, short_items={})


def read_summary(uri: str, names: list[str], storage: fs.StorageOptions | None) -> dict[str, dict[str, int]]:
    """The ``summary`` artifact by benchmark name."""
    t = _read(uri, storage)
    return {names[r["bench"]]: {k: int(r[k]) for k in ("items", "short_items", "ngrams")} for r in t.to_pylist()}
