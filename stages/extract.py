"""Main-text extraction from HTML with trafilatura.

Reads ``raw`` (page bytes from HTML and WARC sources) and fills ``text`` with the
page's main content and ``title`` with its ``<title>``; ``url`` is passed to trafilatura
as the page address. Rows that have no ``raw`` but already have ``text`` (JSONL, Parquet
sources in the same job) pass through untouched, so one chain serves mixed sources; their
``title`` is the ``title`` field of their ``metadata`` when a reader put one there
(MediaWiki pages; a JSONL source keeping a ``title`` field), else null.

Guard rails, each a reject with a reason (``extract:<rule>``), never an exception or a
hung worker:

* ``too_large`` – the page is over ``max_bytes`` (checked before any parsing; lxml's
  parse is one C call that no timer can interrupt, so this bounds it);
* ``not_html`` – a binary payload (PDF, image, archive, control bytes; detail says
  which) or text without any HTML markup;
* ``timeout`` – decoding + extraction took longer than ``timeout_s`` (see
  :mod:`datapipe.deadline` for how the limit is enforced in the main thread and in
  Ray's actor threads);
* ``empty`` – trafilatura found no main text (or the row has neither raw nor text);
* ``failed`` – trafilatura raised (detail: the exception type).

Encoding detection is in :mod:`stages._html` (BOM, declared charset, UTF-8, page
language, charset_normalizer, windows-1252); invalid bytes become U+FFFD.

Defaults are precision-oriented (``favor_precision: true``, no comments), the setting
FineWeb and RefinedWeb used; ``favor_precision: false, include_comments: true`` is
trafilatura's own default.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.stage import StageConfig
from stages import _html
from datapipe.stage import Rewrite, RewriteFilterStage
from datapipe.deadline import DocumentTimeout, deadline

log = logging.getLogger(__name__)


@dataclass(kw_only=True, frozen=True)
class ExtractConfig(StageConfig):
    favor_precision: bool = True
    favor_recall: bool = False
    include_comments: bool = False
    include_tables: bool = True
    include_formatting: bool = False
    include_links: bool = False
    include_images: bool = False
    #: trafilatura's ``fast`` mode: skip the fallback extractors (faster, lower recall)
    fast: bool = False
    #: drop repeated text segments within the page (trafilatura ``deduplicate``)
    deduplicate: bool = False
    #: output format handed to trafilatura: plain text or Markdown
    output_format: str = "txt"
    #: pages larger than this are rejected as ``extract:too_large`` before parsing
    max_bytes: int = 8 << 20
    #: per-page limit for decoding + extraction, seconds (0 disables)
    timeout_s: float = 5.0

    def __post_init__(self) -> None:
        if self.favor_precision and self.favor_recall:
            raise SpecError("extract: favor_precision and favor_recall are exclusive; set one of them to false")
        if self.max_bytes <= 0:
            raise SpecError(f"extract: max_bytes must be > 0, got {self.max_bytes}")
        if self.timeout_s < 0:
            raise SpecError(f"extract: timeout_s must be >= 0 (0 disables the limit), got {self.timeout_s}")
        if self.output_format not in ("txt", "markdown"):
            raise SpecError(f"extract: output_format must be 'txt' or 'markdown', got {self.output_format!r}")


def _reader_title(metadata: str | None) -> str | None:
    """The title a reader put in a text document's metadata (MediaWiki pages), else None."""
    if not metadata or '"title"' not in metadata:
        return None
    try:
        title = json.loads(metadata).get("title")
    except (ValueError, AttributeError):
        return None
    return title if isinstance(title, str) else None


class Extract(RewriteFilterStage):
    """HTML -> main text with trafilatura; see the module docstring."""

    name = "extract"
    Config = ExtractConfig
    reads = ()
    adds = {S.TEXT: pa.string(), "title": pa.string()}

    def trafilatura_kwargs(self) -> dict:
        """Keyword arguments for ``trafilatura.extract`` from the config."""
        c: ExtractConfig = self.config
        return dict(
            favor_precision=c.favor_precision, favor_recall=c.favor_recall,
            include_comments=c.include_comments, include_tables=c.include_tables,
            include_formatting=c.include_formatting, include_links=c.include_links,
            include_images=c.include_images, fast=c.fast, deduplicate=c.deduplicate,
            output_format=c.output_format, with_metadata=False,
        )

    def rewrite(self, batch: pa.Table) -> Rewrite:
        n = batch.num_rows
        raws = batch.column(S.RAW).to_pylist() if S.RAW in batch.column_names else [None] * n
        texts = batch.column(S.TEXT).to_pylist() if S.TEXT in batch.column_names else [None] * n
        urls = batch.column(S.URL).to_pylist() if S.URL in batch.column_names else [None] * n
        metas = batch.column(S.METADATA).to_pylist() if S.METADATA in batch.column_names else [None] * n
        kwargs = self.trafilatura_kwargs()
        out_text: list[str | None] = [None] * n
        titles: list[str | None] = [None] * n
        reasons: list[str | None] = [None] * n
        keep = np.zeros(n, dtype=bool)
        extracted = np.zeros(n, dtype=np.int64)
        for i in range(n):
            raw = raws[i]
            if raw is None:
                if texts[i]:
                    out_text[i], keep[i] = texts[i], True  # already text: pass through
                    titles[i] = _reader_title(metas[i])
                else:
                    reasons[i] = "empty|no raw page and no text"
                continue
            text, title, reason = self.extract_page(raw, urls[i], kwargs)
            out_text[i], titles[i], reasons[i] = text, title, reason
            keep[i] = reason is None
            extracted[i] = 1
        return Rewrite(texts=pa.array(out_text, pa.string()), keep=keep, reasons=reasons,
                       changes={"pages_extracted": extracted},
                       columns={"title": pa.array(titles, pa.string())})

    def extract_page(self, raw: bytes, url: str | None, kwargs: dict | None = None) -> tuple[str | None, str | None, str | None]:
        """``(text, title, reason)`` for one page; ``reason`` is None when kept."""
        import trafilatura

        cfg: ExtractConfig = self.config
        if kwargs is None:
            kwargs = self.trafilatura_kwargs()
        if len(raw) > cfg.max_bytes:
            return None, None, f"too_large|{len(raw)} bytes > {cfg.max_bytes}"
        if not raw[:65536].strip() and not raw.strip():
            return None, None, "empty|blank page"
        kind = _html.binary_kind(raw)
        if kind is not None:
            return None, None, f"not_html|{kind}"
        t0 = time.perf_counter()
        title = None
        try:
            with deadline(cfg.timeout_s):
                page, _how = _html.decode_html(raw)
                if not _html.has_markup(page):
                    return None, None, "not_html|no markup"
                title = _html.find_title(page)
                text = trafilatura.extract(page, url=url, **kwargs)
        except DocumentTimeout:
            return None, title, f"timeout|{time.perf_counter() - t0:.2f}s > {cfg.timeout_s}s"
        except Exception as e:  # a bug or resource error inside the extractor: reject, go on
            log.debug("extract failed on %s: %r", url, e)
            return None, title, f"failed|{type(e).__name__}"
        if not text or not text.strip():
            return None, title, "empty"
        return text, title, None
