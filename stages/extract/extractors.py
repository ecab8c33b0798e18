"""The main-text extractors ``extract`` can run (``extractor:`` in its config).

Each extractor is a function ``(page, url, config) -> (text or None, fell_back)`` over a
decoded page (``str``); ``fell_back`` says that ``cascade`` ran the comparison or the full pass (the
stage counts those pages as ``cascade_fallbacks`` in the job report). The stage does the
byte-level work (size limit, binary sniffing, encoding, title, time limit) before any of
them runs, so they differ only in how they find the main content.

* ``trafilatura`` – ``trafilatura.extract`` with the stage's options: the reference the
  others are measured against.
* ``trafilatura_fast`` – the same with trafilatura's ``fast`` mode: no comparison with
  readability/jusText (its "fallback"), so about 60 % of the CPU and lower recall.
* ``cascade`` (the default) – trafilatura's own algorithm at about 40 % of its CPU
  (:mod:`stages.extract.cascade`): lexbor drops what trafilatura deletes anyway, one
  pass of trafilatura's steps runs on the smaller tree with its slow XPath selectors
  replaced by the same selections in Python, and the readability/jusText comparison runs
  only when the main text has at most ``cascade_min_chars`` characters (the full
  reference on the original page when it is empty). docs/filters.md has the measured
  share, quality and CPU.
* ``resiliparse`` – Resiliparse's ``extract_plain_text(main_content=True)`` on a lexbor
  DOM (what DCLM uses): several times faster, lower quality on our sets. Needs the
  ``resiliparse`` package (``pip install 'datapipe[extract]'``).

Which is chosen is a plain dict from name to function (:data:`EXTRACTORS`).
"""

from __future__ import annotations

from typing import Callable

from stages.extract import html


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


def _cascade(page: str, url: str | None, config) -> tuple[str | None, bool]:
    from stages.extract import cascade

    return cascade.extract(page, url, trafilatura_kwargs(config), config.cascade_min_chars)


class TooDeep(Exception):
    """The page would make the HTML5 parse quadratic (:func:`stages.extract.html.tree_work`
    over :data:`~stages.extract.html.LEXBOR_MAX_WORK`); the stage rejects it as ``too_deep``."""


def _resiliparse(page: str, url: str | None, config) -> tuple[str | None, bool]:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    if (work := html.tree_work(page)) > html.LEXBOR_MAX_WORK:
        raise TooDeep(f"{work:.2g} open-element steps > {html.LEXBOR_MAX_WORK:.2g}")

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
NEEDS = {"resiliparse": ("resiliparse", "resiliparse")}
