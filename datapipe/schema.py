"""The document column contract: every batch that flows between stages is a
``pyarrow.Table`` with these columns.

Base columns (every reader fills them, in this order):

==========  =========  ==========================================================
column      type       meaning
==========  =========  ==========================================================
id          string     stable id: ``<source>/<16 hex digits>`` from a native id or
                       the record's locator (file path relative to the source
                       root + record position); never depends on scheduling
source      string     the job-spec source name the document came from
text        string     document text; null until ``extract`` fills it for
                       HTML/WARC sources
url         string     original URL, when known (nullable)
raw         binary     raw page bytes for HTML/WARC sources (null otherwise);
                       consumed by ``extract`` and never written to outputs
origin      string     where the record is: ``path`` or ``path@offset`` or
                       ``path:line`` (for people reading rejects)
source_id   string     the record's own id in its corpus (a JSONL/Parquet
                       ``id_key`` value, a wiki page id, a StackExchange post
                       id), so results join back to upstream data; null when
                       the format has none
metadata    string     JSON object of the record fields a source's
                       ``options.metadata`` keeps (names, or ``all``); null
                       when not asked for
==========  =========  ==========================================================

Bookkeeping columns (internal, underscore-prefixed): a document dropped by a stage is
not removed from the stream, it is *marked*, so that nothing is ever lost between
the stage that drops it and the rejects dataset:

* ``_reject_stage``  – name of the stage that dropped it (null while alive)
* ``_reject_reason`` – ``<stage>:<rule>``, e.g. ``gopher_quality:mean_word_length``
* ``_reject_detail`` – free text (the value that failed, the kept duplicate's id)

Stages add further columns (``language``, ``quality_score``, ...); each declares them
with its Arrow type in ``Stage.adds`` and :func:`conform` keeps every batch on the
same schema.
"""

from __future__ import annotations

from typing import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import xxhash

ID, SOURCE, TEXT, URL, RAW, ORIGIN = "id", "source", "text", "url", "raw", "origin"
SOURCE_ID, METADATA = "source_id", "metadata"
REJECT_STAGE, REJECT_REASON, REJECT_DETAIL = "_reject_stage", "_reject_reason", "_reject_detail"
#: a document's place in a phase's output: its split and its row there (side data and decisions)
SPLIT, ROW = "_split", "_row"

BASE_FIELDS: tuple[pa.Field, ...] = (
    pa.field(ID, pa.string(), nullable=False),
    pa.field(SOURCE, pa.string(), nullable=False),
    pa.field(TEXT, pa.string()),
    pa.field(URL, pa.string()),
    pa.field(RAW, pa.binary()),
    pa.field(ORIGIN, pa.string()),
    pa.field(SOURCE_ID, pa.string()),
    pa.field(METADATA, pa.string()),
)
REJECT_FIELDS: tuple[pa.Field, ...] = (
    pa.field(REJECT_STAGE, pa.string()),
    pa.field(REJECT_REASON, pa.string()),
    pa.field(REJECT_DETAIL, pa.string()),
)
BASE_SCHEMA = pa.schema(BASE_FIELDS + REJECT_FIELDS)
BASE_COLUMNS = frozenset(f.name for f in BASE_FIELDS + REJECT_FIELDS)

#: a global stage's decisions (datapipe.stage.GlobalStage.passes): one row per document it
#: drops, by (SPLIT, ROW), with the rule (without the stage prefix) and a detail; a stage
#: that edits or annotates appends its fields (``edit``, its added columns)
DECISIONS = pa.schema([(SPLIT, pa.string()), (ROW, pa.int64()), ("reason", pa.string()), ("detail", pa.string())])

# Columns every source provides from the start (text/raw depend on the format).
TEXT_SOURCE_COLUMNS = frozenset({ID, SOURCE, TEXT, URL, ORIGIN, SOURCE_ID, METADATA})
MARKUP_SOURCE_COLUMNS = frozenset({ID, SOURCE, RAW, URL, ORIGIN, SOURCE_ID, METADATA})

# Never written to the documents/rejects datasets.
NOT_WRITTEN = frozenset({RAW})


def make_id(source: str, key: str | bytes) -> str:
    """Stable document id from a native id or a locator (``relpath:line``, ``relpath@offset``)."""
    if isinstance(key, str):
        key = key.encode("utf-8", "surrogatepass")
    return f"{source}/{xxhash.xxh3_64_hexdigest(key)}"


def schema_with(extra: Sequence[pa.Field] = ()) -> pa.Schema:
    """The base schema followed by stage-added fields (in chain order)."""
    return pa.schema(list(BASE_SCHEMA) + list(extra))


def make_batch(
    *,
    source: str,
    ids: Sequence[str],
    texts: Sequence[str | None] | None = None,
    urls: Sequence[str | None] | None = None,
    raws: Sequence[bytes | None] | None = None,
    origins: Sequence[str | None] | None = None,
    reject_reasons: Sequence[str | None] | None = None,
    reject_details: Sequence[str | None] | None = None,
    source_ids: Sequence[str | None] | None = None,
    metadata: Sequence[str | None] | None = None,
) -> pa.Table:
    """Build a base-schema table; what a reader yields.

    ``reject_reasons`` marks records the reader itself could not read (reason
    ``read:<what>``, e.g. ``read:invalid_utf8``); they flow to the rejects dataset.
    """
    n = len(ids)
    none = [None] * n
    reasons = list(reject_reasons) if reject_reasons is not None else none
    stages = [None if r is None else "read" for r in reasons]
    cols = {
        ID: pa.array(list(ids), pa.string()),
        SOURCE: pa.array([source] * n, pa.string()),
        TEXT: pa.array(list(texts) if texts is not None else none, pa.string()),
        URL: pa.array(list(urls) if urls is not None else none, pa.string()),
        RAW: pa.array(list(raws) if raws is not None else none, pa.binary()),
        ORIGIN: pa.array(list(origins) if origins is not None else none, pa.string()),
        SOURCE_ID: pa.array(list(source_ids) if source_ids is not None else none, pa.string()),
        METADATA: pa.array(list(metadata) if metadata is not None else none, pa.string()),
        REJECT_STAGE: pa.array(stages, pa.string()),
        REJECT_REASON: pa.array(reasons, pa.string()),
        REJECT_DETAIL: pa.array(list(reject_details) if reject_details is not None else none, pa.string()),
    }
    return pa.Table.from_pydict(cols, schema=BASE_SCHEMA)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Return ``table`` with exactly ``schema``'s columns, in order; missing ones are null."""
    n = table.num_rows
    arrays = []
    for field in schema:
        if field.name in table.column_names:
            col = table.column(field.name)
            if col.type != field.type:
                col = col.cast(field.type)
            arrays.append(col)
        else:
            arrays.append(pa.nulls(n, field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def alive_mask(table: pa.Table) -> pa.Array:
    """Boolean mask of rows no stage has dropped yet."""
    return pc.is_null(table.column(REJECT_REASON)).combine_chunks()


def text_bytes(table: pa.Table, column: str = TEXT) -> int:
    """UTF-8 bytes of a string column (nulls count 0)."""
    if table.num_rows == 0:
        return 0
    lengths = pc.binary_length(table.column(column))
    total = pc.sum(lengths).as_py()
    return int(total or 0)

