"""MediaWiki XML dump reader: ``*-pages-articles.xml``, ``.xml.bz2`` (and ``.gz``/``.zst``/``.xz``).

The dump is streamed page by page through the input layer (decompressed there, by name
or magic bytes, its end and trailer checked) and the standard library's expat
(:mod:`datapipe.readers._xml`: linear in any token's size, no DTD), each ``<page>``
built as its own small tree and dropped once read, so memory holds one page whatever
the dump's size. A dump is one split (a compressed stream cannot be entered mid-way).

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

Hostile dumps (every case a counted reject, never a traceback):

* a page over ``max_doc_bytes`` is ``read:too_large``; once its elements and text pass
  ``max_doc_bytes`` + 1 MiB nothing more of it is kept, so memory stays bounded by
  the budget, not by the page;
* the wikitext parse runs in a child process (:mod:`datapipe.readers._wikitext`) killed
  at ``limits.doc_seconds`` per page (``read:timeout``): its C tokenizer is quadratic in
  runs of constructs it cannot close (20 KB of ``{{a|`` takes 8 s, in one call nothing
  in-process can interrupt);
* a ``<!DOCTYPE`` is ``read:xml_dtd`` (no entity can expand), bad bytes or a broken
  tag ``read:invalid_xml``, a tag over 8 x ``max_doc_bytes`` ``read:too_large``: each
  for the rest of the file;
* a cut dump (plain: ``read:truncated``; ``.bz2``/``.gz``/``.xz``:
  ``read:truncated_<compression>``) keeps the pages read before the cut: the file adds
  one reject, the rule of every reader (``docs/readers.md``).

Cost: the wikitext parse, about 1-3 MB of wikitext per second per core; the child
process adds ~60 ms per file and a pipe round trip per page. Memory: one page.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Iterator
from urllib.parse import quote

from datapipe.errors import SpecError
from datapipe.readers import _wikitext
from datapipe.readers._wikitext import CANONICAL, READY, REPLY, REQUEST, media_link_pattern, wikitext_to_text
from datapipe.readers._xml import XmlTarget, parse, short
from datapipe.readers.base import InputFile, Reader, Rec, reject, strict
from datapipe.readers.inputs import Refused, time_budget

log = logging.getLogger(__name__)

#: namespace numbers of File (6) and Category (14) pages: links into them are not prose
_MEDIA_NAMESPACES = ("6", "14", "-2")
#: a page's tree may hold max_doc_bytes plus this much besides its text (title, ids, contributor)
PAGE_SLACK = 1 << 20
#: what one element counts toward a page's budget, besides its attributes and text
_ELEMENT_COST = 64
#: an XML token (a tag with its attributes) may be this many times max_doc_bytes
TOKEN_BYTES_PER_DOC_BYTE = 8


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


class _DumpTarget(XmlTarget):
    """Builds each ``<page>`` (and the ``<siteinfo>``) as its own small tree, handed over
    as ``(name, element, over)`` when it closes; nothing outside them is kept. ``over``:
    the page's text and elements passed ``budget`` characters, and what came after was
    not kept (memory stays one page of at most ``budget``, whatever the dump holds)."""

    def __init__(self, budget: int) -> None:
        super().__init__()
        self.budget = budget
        self.tb: ET.TreeBuilder | None = None   # the open page's tree
        self.unit = 0                           # its depth
        self.used = 0
        self.over = False
        self.kept: list[bool] = []              # per element open in the page: given to the tree

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        super().start(tag, attrib)
        if self.tb is None:
            name = _local(tag)
            if name not in ("page", "siteinfo"):
                return
            self.tb, self.unit, self.used, self.over, self.kept = ET.TreeBuilder(), self.depth, 0, False, []
        else:
            self.used += _ELEMENT_COST + sum(len(k) + len(v) for k, v in attrib.items())
            self.over = self.over or self.used > self.budget
        self.kept.append(not self.over)
        if not self.over:
            self.tb.start(tag, attrib)

    def end(self, tag: str) -> None:
        if self.tb is not None:
            if self.kept.pop():
                self.tb.end(tag)
            if self.depth == self.unit:
                self.ready.append((_local(tag), self.tb.close(), self.over))
                self.tb = None
        super().end(tag)

    def data(self, data: str) -> None:
        self.events += 1
        if self.tb is None or self.over:
            return
        self.used += len(data)
        if self.used > self.budget:
            self.over = True
        else:
            self.tb.data(data)


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
        names = set(CANONICAL)
        if siteinfo is not None:
            base = _child_text(siteinfo, "base")
            if base and "/wiki/" in base:
                self.base = base[: base.index("/wiki/") + len("/wiki/")]
            spaces = _child(siteinfo, "namespaces")
            for ns in spaces if spaces is not None else ():
                if ns.get("key") in _MEDIA_NAMESPACES and ns.text:
                    names.add(ns.text)
        #: the names of the namespaces whose links are removed whole
        self.media_names = tuple(sorted(names))

    def url(self, title: str) -> str | None:
        return None if self.base is None else self.base + quote(title.replace(" ", "_"), safe="/:()_,'-.!")


class MediaWikiReader(Reader):
    """One document per article page of a MediaWiki XML dump."""

    format = "mediawiki"
    Options = MediaWikiOptions

    def _compression(self, f: InputFile) -> str | None:
        return self.input(f).compression()

    def _records(self, f: InputFile, start: int, end: int | None) -> Iterator[Rec]:
        opts: MediaWikiOptions = self.options
        wanted = {str(n) for n in opts.namespaces}
        site = _Site(None)
        target = _DumpTarget(budget=self.max_doc_bytes + PAGE_SLACK)
        convert = Converter(self.limits.doc_seconds)
        try:
            with self.input(f).open() as fh:
                for kind, elem, over in parse(fh, target, max_token=TOKEN_BYTES_PER_DOC_BYTE * self.max_doc_bytes):
                    if kind == "siteinfo":
                        site = _Site(elem)
                    else:
                        yield self._page(f, elem, site, wanted, over, convert)
        finally:
            convert.close()

    def _page(self, f: InputFile, page: ET.Element, site: _Site, wanted: set[str], over: bool,
              convert: Converter) -> Rec:
        title = _child_text(page, "title") or ""
        page_id = _child_text(page, "id") or title
        key = f"{f.rel}#{page_id}"
        ns = (_child_text(page, "ns") or "0").strip()
        native = page_id.strip()
        if ns not in wanted:
            return Rec(key, key, reason="namespace", detail=short(ns), source_id=native)
        redirect = _child(page, "redirect")
        if redirect is not None:
            return Rec(key, key, reason="redirect", detail=short(redirect.get("title") or ""), source_id=native)
        if over:
            return reject(key, key, "too_large", self._too_large(0, more=True))._replace(source_id=native)
        revision = _child(page, "revision")
        wikitext = _child_text(revision, "text") if revision is not None else None
        if not wikitext:
            return Rec(key, key, reason="empty", detail="the page has no text", source_id=native)
        if len(wikitext.encode("utf-8")) > self.max_doc_bytes:
            return reject(key, key, "too_large", self._too_large(len(wikitext.encode("utf-8"))))._replace(source_id=native)
        try:
            text = convert(wikitext, site.media_names, key)
        except Refused as exc:
            return reject(key, key, exc.reason, exc.detail)._replace(source_id=native)
        if not text:
            return Rec(key, key, reason="empty", detail="no text left after removing the markup", source_id=native)
        if self.options.title and title:
            text = f"{title}\n\n{text}"
        meta = json.dumps({"title": title}, ensure_ascii=False) if title else None
        return Rec(key, key, text=text, url=site.url(title), source_id=native, metadata=meta)


#: seconds a wikitext parser process may take to start
STARTUP_S = 60.0


class Converter:
    """:func:`wikitext_to_text` in a child process (:mod:`datapipe.readers._wikitext`),
    killed when one page takes longer than ``seconds``: the parser's C tokenizer can take
    hours on one hostile page, in a call no Python-level deadline interrupts. One child
    serves every page of a file; a page that times out costs a new one. Where no child
    can be started, pages are parsed here under a Python-level deadline."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._proc: subprocess.Popen | None = None
        self._local = False

    def __call__(self, wikitext: str, names: tuple[str, ...], what: str) -> str:
        """The page's text; :class:`Refused` ``timeout`` past the budget, ``reader_error``
        when the parser failed (raised as a bug under ``DATAPIPE_STRICT_READERS``)."""
        if self._local:
            with time_budget(self.seconds, what):
                return wikitext_to_text(wikitext, media_link_pattern(names))
        names_b = "\0".join(names).encode("utf-8", "surrogatepass")
        text_b = wikitext.encode("utf-8", "surrogatepass")
        for attempt in range(2):   # a child that died before this page (killed from outside) is replaced once
            proc = self._start()
            if proc is None:
                return self(wikitext, names, what)
            try:
                proc.stdin.write(REQUEST.pack(len(names_b), len(text_b)))
                proc.stdin.write(names_b)
                proc.stdin.write(text_b)
                proc.stdin.flush()
                deadline = time.monotonic() + self.seconds
                status, size = REPLY.unpack(self._recv(REPLY.size, deadline))
                data = self._recv(size, max(deadline, time.monotonic() + 10))
            except TimeoutError:
                self.close(kill=True)
                raise Refused("timeout", f"{what}: parsing the wikitext took longer than limits.doc_seconds "
                                         f"({self.seconds} s)") from None
            except (BrokenPipeError, EOFError):
                code = self.close()
                if attempt:
                    raise Refused("reader_error", f"{what}: the wikitext parser's process died on this page "
                                                  f"(exit code {code})") from None
                continue
            out = data.decode("utf-8", "surrogatepass")
            if status:
                if strict():
                    raise RuntimeError(f"{what}: wikitext parser failed: {out}")
                raise Refused("reader_error", f"{what}: wikitext parser failed: {out[:500]}")
            return out
        raise AssertionError("unreachable")

    def _start(self) -> subprocess.Popen | None:
        if self._proc is None:
            try:
                self._proc = subprocess.Popen([sys.executable, "-I", os.path.abspath(_wikitext.__file__),
                                               repr(float(self.seconds))],
                                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True)
                if self._recv(len(READY), time.monotonic() + STARTUP_S) != READY:
                    raise EOFError
            except (OSError, EOFError, TimeoutError):
                log.warning("the wikitext parser's process did not start; parsing pages in this process, "
                            "under a deadline only Python code notices")
                self.close(kill=True)
                self._local = True
                return None
        return self._proc

    def _recv(self, n: int, deadline: float) -> bytes:
        fd = self._proc.stdout.fileno()
        parts, got = [], 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            b = os.read(fd, min(n - got, 1 << 20))
            if not b:
                raise EOFError
            parts.append(b)
            got += len(b)
        return b"".join(parts)

    def close(self, kill: bool = False) -> int | None:
        """Stop the child (it ends at the end of its stdin; killed if busy); its exit code."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        if kill:
            proc.kill()
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            return proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()
        finally:
            proc.stdout.close()
