"""The main-text extractors ``extract`` can run (``extractor:`` in its config).

Each extractor is a function ``(page, url, config) -> (text or None, fell_back)`` over a
decoded page (``str``); ``fell_back`` says that ``cascade`` ran its second, full pass (the
stage counts those pages as ``cascade_fallbacks`` in the job report). The stage does the
byte-level work (size limit, binary sniffing, encoding, title, time limit) before any of
them runs, so they differ only in how they find the main content.

* ``trafilatura`` – ``trafilatura.extract`` with the stage's options: the reference, and
  the default.
* ``trafilatura_fast`` – the same with trafilatura's ``fast`` mode: no comparison with
  readability/jusText (its "fallback"), so about 60 % of the CPU and lower recall.
* ``cascade`` – parse the page with lexbor (selectolax), drop the elements trafilatura
  deletes anyway before it looks for content (scripts, styles, navigation, forms, media,
  ...: :data:`PRESTRIP`), run trafilatura's fast mode on the smaller page, and run the
  reference (the full trafilatura, with its fallback comparison, on the original page)
  only when the fast output looks like a failure: ``cascade_min_chars`` characters or
  fewer. Where it falls back, its text is the reference's. The fallback comparison mostly
  rescues short or empty extractions, so this keeps the reference's quality where it
  matters and pays for the comparison on a minority of pages (docs/filters.md has the
  measured share, quality and CPU).
* ``resiliparse`` – Resiliparse's ``extract_plain_text(main_content=True)`` on a lexbor
  DOM (what DCLM uses): several times faster, lower quality on our sets. Needs the
  ``resiliparse`` package (``pip install 'datapipe[extract]'``).

Which is chosen is a plain dict from name to function (:data:`EXTRACTORS`).
"""

from __future__ import annotations

from typing import Callable

#: Elements removed (with their content, keeping the text that follows them) before
#: ``cascade``'s passes. trafilatura's own cleaning deletes each of these
#: (``MANUALLY_CLEANED``) before it extracts, the same way; deleting them first in
#: lexbor makes trafilatura's parse and every XPath walk over a smaller tree. Not in the list although trafilatura
#: cleans them: ``figure`` (a figure holding a table is kept as a table), ``math``
#: (formulas are salvaged first), ``head`` (the page language is read there), ``time``.
PRESTRIP = (
    "script", "style", "noscript", "template", "svg", "iframe", "nav", "footer", "aside", "form",
    "button", "input", "select", "option", "textarea", "label", "fieldset", "picture", "video",
    "audio", "canvas", "object", "embed", "map", "menu", "link", "meta",
)


def trafilatura_kwargs(config) -> dict:
    """Keyword arguments for ``trafilatura.extract`` from an ``ExtractConfig``."""
    c = config
    return dict(
        favor_precision=c.favor_precision, favor_recall=c.favor_recall,
        include_comments=c.include_comments, include_tables=c.include_tables,
        include_formatting=c.include_formatting, include_links=c.include_links,
        include_images=c.include_images, fast=c.fast or c.extractor == "trafilatura_fast",
        deduplicate=c.deduplicate, output_format=c.output_format, with_metadata=False,
    )


def _trafilatura(page: str, url: str | None, config) -> tuple[str | None, bool]:
    import trafilatura

    return trafilatura.extract(page, url=url, **trafilatura_kwargs(config)), False


def prestrip(page: str) -> str:
    """The page without the :data:`PRESTRIP` elements, as HTML (lexbor's serialisation)."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(page)
    tree.strip_tags(list(PRESTRIP))
    return tree.html or ""


def _cascade(page: str, url: str | None, config) -> tuple[str | None, bool]:
    import trafilatura

    small = prestrip(page)
    kwargs = trafilatura_kwargs(config)
    kwargs["fast"] = True
    text = trafilatura.extract(small, url=url, **kwargs)
    if text is not None and len(text) > config.cascade_min_chars:
        return text, False
    kwargs["fast"] = False
    return trafilatura.extract(page, url=url, **kwargs), True


def _resiliparse(page: str, url: str | None, config) -> tuple[str | None, bool]:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    text = extract_plain_text(HTMLTree.parse(page), main_content=True, alt_texts=config.include_images,
                              links=config.include_links, comments=config.include_comments)
    return text or None, False


#: ``extractor:`` name -> function ``(page, url, config) -> (text or None, fell_back)``.
EXTRACTORS: dict[str, Callable[..., str | None]] = {
    "trafilatura": _trafilatura,
    "trafilatura_fast": _trafilatura,
    "cascade": _cascade,
    "resiliparse": _resiliparse,
}

#: what each extractor needs besides the core dependencies: import name -> pip package
NEEDS = {"resiliparse": ("resiliparse", "resiliparse"), "cascade": ("selectolax", "selectolax")}
