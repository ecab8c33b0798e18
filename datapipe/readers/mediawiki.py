"""MediaWiki XML dump reader: ``*-pages-articles.xml``, ``.xml.bz2`` (and ``.gz``/``.zst``).

The dump is streamed page by page (``xml.etree.ElementTree.iterparse``, each ``<page>``
cleared once read), so memory holds one page whatever the dump's size; a ``.bz2`` dump
is decompressed on the fly with the standard library's :mod:`bz2`. A dump is one split
(a compressed stream cannot be entered mid-way).

A page becomes one document: ``text`` is the latest revision's wikitext turned into
plain text by ``mwparserfromhell`` (templates, tables, ``<ref>`` citations, HTML tags
and formatting removed, link texts kept; links into the namespaces named in
``drop_link_namespaces`` - files, images, categories, in the dump's own language from
its ``<siteinfo>`` - removed whole); the page title is the first line. ``url`` is
``<base>/<Title>`` from the siteinfo's base URL, ``source_id`` the page id, ``metadata``
``{"title": <page title>}`` (the ``extract`` stage's ``title`` column takes it for text
documents).

Pages that are not articles are counted rejects, never silent skips:
``read:namespace`` (detail: the namespace number) for pages outside ``namespaces``
(default: 0, the articles), ``read:redirect`` (detail: the target), ``read:empty`` for
pages whose text is empty after markup removal.

Cost: the wikitext parse is pure Python, about 1-3 MB of wikitext per second per core;
memory is one page.
"""

from __future__ import annotations

import bz2
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Iterator
from urllib.parse import quote

from datapipe.errors import SpecError
from datapipe.readers._streams import FileCorrupt, compression_of, open_binary
from datapipe.readers.base import InputFile, Rec, Reader, reject

#: namespace numbers of File (6) and Category (14) pages: links into them are not prose
_MEDIA_NAMESPACES = ("6", "14", "-2")
#: tags whose content is not prose (citations, galleries, math, code listings), removed
#: with their content before parsing: they do not nest, and a regex pass is much cheaper
#: than removing nodes from the parse tree
_DROP_TAGS = re.compile(r"<(ref|references|gallery|math|score|timeline|syntaxhighlight)\b[^>]*/>"
                        r"|<(ref|references|gallery|math|score|timeline|syntaxhighlight)\b[^>]*>.*?</\2\s*>",
                        re.S | re.I)
#: the English names MediaWiki accepts in every language, besides the local ones
_CANONICAL = ("File", "Image", "Media", "Category")


@dataclass(kw_only=True, frozen=True)
class MediaWikiOptions:
    """``namespaces``: namespace numbers whose pages are documents (0 = articles).
    ``title``: put the page title as the document's first line."""

    namespaces: tuple[int, ...] = (0,)
    title: bool = True

    def __post_init__(self) -> None:
        if not self.namespaces or not all(isinstance(n, int) and not isinstance(n, bool) for n in self.namespaces):
            raise SpecError(f"option namespaces must be a non-empty list of namespace numbers (0 = articles), "
                            f"got {self.namespaces!r}")
        object.__setattr__(self, "namespaces", tuple(self.namespaces))


def _local(tag: str) -> str:
    """``{http://www.mediawiki.org/xml/export-0.10/}page`` -> ``page`` (any export version)."""
    return tag.rpartition("}")[2]


def _child(elem: ET.Element, name: str) -> ET.Element | None:
    for c in elem:
        if _local(c.tag) == name:
            return c
    return None


def _child_text(elem: ET.Element, name: str) -> str | None:
    c = _child(elem, name)
    return None if c is None else (c.text or "")


class _Site:
    """What the ``<siteinfo>`` says: the base URL and the media/category link prefixes."""

    def __init__(self, siteinfo: ET.Element | None) -> None:
        self.base: str | None = None
        names = set(_CANONICAL)
        if siteinfo is not None:
            base = _child_text(siteinfo, "base")
            if base and "/wiki/" in base:
                self.base = base[: base.index("/wiki/") + len("/wiki/")]
            spaces = _child(siteinfo, "namespaces")
            for ns in spaces if spaces is not None else ():
                if ns.get("key") in _MEDIA_NAMESPACES and ns.text:
                    names.add(ns.text)
        self.media_links = media_link_pattern(names)

    def url(self, title: str) -> str | None:
        return None if self.base is None else self.base + quote(title.replace(" ", "_"), safe="/:()_,'-.!")


def media_link_pattern(names) -> re.Pattern:
    """``[[File:...]]``-style links (captions may hold one level of nested links)."""
    alt = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(r"\[\[\s*:?\s*(?:" + alt + r")\s*:[^\[\]]*(?:\[\[[^\[\]]*\]\][^\[\]]*)*\]\]", re.I)


_DEFAULT_MEDIA = media_link_pattern(_CANONICAL)


def wikitext_to_text(wikitext: str, media_links: re.Pattern = _DEFAULT_MEDIA) -> str:
    """Plain text of a page's wikitext: markup removed, link texts kept, file/category
    links removed, runs of blank lines collapsed."""
    import mwparserfromhell

    code = mwparserfromhell.parse(media_links.sub("", _DROP_TAGS.sub("", wikitext)))
    text = code.strip_code(normalize=True, collapse=True)
    # rows of tables the parser could not close are left as markup: never prose
    lines = [ln.strip() for ln in text.splitlines() if not ln.lstrip().startswith(("|", "!", "{|"))]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


class MediaWikiReader(Reader):
    """One document per article page of a MediaWiki XML dump."""

    format = "mediawiki"
    Options = MediaWikiOptions

    def _compression(self, f: InputFile) -> str | None:
        return "bz2" if f.path.lower().endswith(".bz2") else compression_of(f.path)

    def _open(self, f: InputFile):
        if f.path.lower().endswith(".bz2"):
            return bz2.open(f.path, "rb")
        return open_binary(f.path, compression_of(f.path))

    def _records(self, f: InputFile, start: int, end: int | None) -> Iterator[Rec]:
        opts: MediaWikiOptions = self.options
        wanted = {str(n) for n in opts.namespaces}
        site = _Site(None)
        root = None
        try:
            with self._open(f) as fh:
                for event, elem in ET.iterparse(fh, events=("start", "end")):
                    if event == "start":
                        if root is None:
                            root = elem
                        continue
                    tag = _local(elem.tag)
                    if tag == "siteinfo":
                        site = _Site(elem)
                        root.clear()
                    elif tag == "page":
                        yield self._page(f, elem, site, wanted)
                        root.clear()  # drop the page (and any before it) from memory
        except ET.ParseError as exc:
            raise FileCorrupt("invalid_xml", str(exc)) from exc
        except EOFError as exc:
            raise FileCorrupt("truncated_bz2" if f.path.lower().endswith(".bz2") else "truncated", str(exc)) from exc

    def _page(self, f: InputFile, page: ET.Element, site: _Site, wanted: set[str]) -> Rec:
        title = _child_text(page, "title") or ""
        page_id = _child_text(page, "id") or title
        key = f"{f.rel}#{page_id}"
        ns = (_child_text(page, "ns") or "0").strip()
        native = page_id.strip()
        if ns not in wanted:
            return Rec(key, key, reason="namespace", detail=ns, source_id=native)
        redirect = _child(page, "redirect")
        if redirect is not None:
            return Rec(key, key, reason="redirect", detail=redirect.get("title") or "", source_id=native)
        revision = _child(page, "revision")
        wikitext = _child_text(revision, "text") if revision is not None else None
        if not wikitext:
            return Rec(key, key, reason="empty", detail="the page has no text", source_id=native)
        if len(wikitext.encode("utf-8")) > self.max_doc_bytes:
            return reject(key, key, "too_large", self._too_large(len(wikitext.encode("utf-8"))))._replace(source_id=native)
        text = wikitext_to_text(wikitext, site.media_links)
        if not text:
            return Rec(key, key, reason="empty", detail="no text left after removing the markup", source_id=native)
        if self.options.title and title:
            text = f"{title}\n\n{text}"
        meta = json.dumps({"title": title}, ensure_ascii=False) if title else None
        return Rec(key, key, text=text, url=site.url(title), source_id=native, metadata=meta)
