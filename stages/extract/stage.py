"""Main-text extraction from HTML (``cascade``, trafilatura's steps made cheaper, by default;
``extractor:`` picks another).

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
* ``too_many_attributes`` – a start tag has more than ``html.MAX_ATTRIBUTES``
  attributes: every HTML parser here (lxml, lexbor) checks each new attribute against the
  tag's earlier ones, so such a tag is quadratic in one uninterruptible C call (80,000
  took 76 s in lxml), checked before any extractor runs;
* ``too_deep`` – ``extractor: resiliparse`` only: the page leaves so many elements open
  that lexbor's parse, one C call, would be quadratic (:func:`stages.extract.html.tree_work`;
  ``cascade`` gives such a page to trafilatura instead);
* ``empty`` – the extractor found no main text (or the row has neither raw nor text);
* ``failed`` – the extractor raised (detail: the exception type).

``extractor`` picks how the main content is found (:mod:`stages.extract.extractors`):
``cascade`` (the default: trafilatura's own steps on a pre-pruned tree with faster
selectors, its comparison with readability/jusText only where the main text is short:
:mod:`stages.extract.cascade`; the same quality as ``trafilatura`` at ~0.4x its CPU),
``trafilatura`` (the library's own call: the reference ``cascade`` is measured against),
``trafilatura_fast`` and ``resiliparse``; docs/filters.md has each one's measured quality
and CPU.

Encoding detection is in :mod:`stages.extract.html` (BOM, declared charset, UTF-8, page
language, charset_normalizer, windows-1252); invalid bytes become U+FFFD.

Defaults are precision-oriented (``favor_precision: true``, no comments), the setting
FineWeb and RefinedWeb used; ``favor_precision: false, include_comments: true`` is
trafilatura's own default.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.stage import StageConfig
from stages.extract import cascade, extractors, html
from datapipe.stage import Rewrite, RewriteFilterStage
from datapipe.deadline import DocumentTimeout, deadline

log = logging.getLogger(__name__)


@dataclass(kw_only=True, frozen=True)
class ExtractConfig(StageConfig):
    #: how the main content is found: one of :data:`stages.extract.extractors.EXTRACTORS`
    extractor: str = "cascade"
    #: ``cascade``: when the main extractor's text has at most this many characters,
    #: trafilatura's readability/jusText comparison runs too (the full reference when it is empty)
    cascade_min_chars: int = 1000
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
        if self.extractor not in extractors.EXTRACTORS:
            raise SpecError(f"extract: unknown extractor {self.extractor!r}; "
                            f"use one of {', '.join(sorted(extractors.EXTRACTORS))}")
        if self.fast and self.extractor not in ("trafilatura", "trafilatura_fast"):
            raise SpecError(f"extract: fast: true is trafilatura's fast mode and does not apply to "
                            f"extractor: {self.extractor} (the default is cascade); drop fast, or use "
                            f"extractor: trafilatura_fast")
        needs = extractors.NEEDS.get(self.extractor)
        if needs and importlib.util.find_spec(needs[0]) is None:
            raise SpecError(f"extract: extractor: {self.extractor} needs the {needs[1]!r} package, which is not "
                            f"installed: pip install 'datapipe[extract]' (or pick another extractor)")
        if self.extractor == "cascade" and (got := importlib.metadata.version("trafilatura")) != cascade.TRAFILATURA_VERSION:
            raise SpecError(f"extract: extractor: cascade runs trafilatura {cascade.TRAFILATURA_VERSION}'s own steps, "
                            f"but trafilatura {got} is installed: pip install trafilatura=={cascade.TRAFILATURA_VERSION} "
                            f"(pyproject.toml pins it) or pick another extractor")
        if self.cascade_min_chars < 0:
            raise SpecError(f"extract: cascade_min_chars must be >= 0, got {self.cascade_min_chars}")
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
    """HTML -> main text with the configured extractor; see the module docstring."""

    name = "extract"
    Config = ExtractConfig
    reads = ()
    adds = {S.TEXT: pa.string(), "title": pa.string()}

    def rewrite(self, batch: pa.Table) -> Rewrite:
        n = batch.num_rows
        raws = batch.column(S.RAW).to_pylist() if S.RAW in batch.column_names else [None] * n
        texts = batch.column(S.TEXT).to_pylist() if S.TEXT in batch.column_names else [None] * n
        urls = batch.column(S.URL).to_pylist() if S.URL in batch.column_names else [None] * n
        metas = batch.column(S.METADATA).to_pylist() if S.METADATA in batch.column_names else [None] * n
        out_text: list[str | None] = [None] * n
        titles: list[str | None] = [None] * n
        reasons: list[str | None] = [None] * n
        keep = np.zeros(n, dtype=bool)
        extracted = np.zeros(n, dtype=np.int64)
        fell_back = np.zeros(n, dtype=np.int64)
        for i in range(n):
            raw = raws[i]
            if raw is None:
                if texts[i]:
                    out_text[i], keep[i] = texts[i], True  # already text: pass through
                    titles[i] = _reader_title(metas[i])
                else:
                    reasons[i] = "empty|no raw page and no text"
                continue
            text, title, reason, fell_back[i] = self._extract_page(raw, urls[i])
            out_text[i], titles[i], reasons[i] = text, title, reason
            keep[i] = reason is None
            extracted[i] = 1
        return Rewrite(texts=pa.array(out_text, pa.string()), keep=keep, reasons=reasons,
                       changes={"pages_extracted": extracted, **({"cascade_fallbacks": fell_back}
                                                                 if self.config.extractor == "cascade" else {})},
                       columns={"title": pa.array(titles, pa.string())})

    def extract_page(self, raw: bytes, url: str | None) -> tuple[str | None, str | None, str | None]:
        """``(text, title, reason)`` for one page; ``reason`` is None when kept."""
        return self._extract_page(raw, url)[:3]

    def _extract_page(self, raw: bytes, url: str | None) -> tuple[str | None, str | None, str | None, bool]:
        """:meth:`extract_page` plus whether ``cascade`` ran its full second pass."""
        cfg: ExtractConfig = self.config
        extractor = extractors.EXTRACTORS[cfg.extractor]
        if len(raw) > cfg.max_bytes:
            return None, None, f"too_large|{len(raw)} bytes > {cfg.max_bytes}", False
        if not raw[:65536].strip() and not raw.strip():
            return None, None, "empty|blank page", False
        kind = html.binary_kind(raw)
        if kind is not None:
            return None, None, f"not_html|{kind}", False
        t0 = time.perf_counter()
        title, fell_back = None, False
        try:
            with deadline(cfg.timeout_s):
                page, _how = html.decode_html(raw)
                if not html.has_markup(page):
                    return None, None, "not_html|no markup", False
                title = html.find_title(page)
                if (attrs := html.most_attributes(page)) > html.MAX_ATTRIBUTES:
                    return None, title, f"too_many_attributes|{attrs} in one tag > {html.MAX_ATTRIBUTES}", False
                text, fell_back = extractor(page, url, cfg)
        except extractors.TooDeep as e:
            return None, title, f"too_deep|{e}", fell_back
        except DocumentTimeout:
            return None, title, f"timeout|{time.perf_counter() - t0:.2f}s > {cfg.timeout_s}s", fell_back
        except Exception as e:  # a bug or resource error inside the extractor: reject, go on
            log.debug("extract failed on %s: %r", url, e)
            return None, title, f"failed|{type(e).__name__}", fell_back
        if not text or not text.strip():
            return None, title, "empty", fell_back
        return text, title, None, fell_back
