"""Where ``quality train`` reads its examples: the trainers' corpus readers plus one
source of negatives the web itself provides, *boilerplate*.

``boilerplate:<html or warc spec>`` reads real crawled pages and yields, per page,
the visible text that the main-content extractor (the ``extract`` stage with a job's
default settings, as everywhere in the project) did **not** keep: menus, footers,
cookie banners, teaser lists, share buttons, shop widgets. That is exactly the text a
quality filter must push down, it comes from the same pages (and languages) as the
text worth keeping, and it costs no labelling. The main content of the same pages
(the plain ``html:``/``warc:`` reading) is the matching positive.

``exclude`` (paths or globs) drops files from every input, so a recipe can never
train on a held-out or labelled set (``bench/data/quality_dev/files.txt``).
"""

from __future__ import annotations

import dataclasses
from typing import Iterator, Sequence

from datapipe.readers import Document, ReadStats
from datapipe.readers.iterate import expand_inputs
from stages.models import training_text as corpus

BOILERPLATE = "boilerplate:"
#: elements whose start and end break a line (what a browser lays out as a block)
_BLOCK = frozenset(
    "p div li td th tr h1 h2 h3 h4 h5 h6 br ul ol dl dd dt table section article header footer nav aside "
    "blockquote pre form option button label title main figure figcaption select".split())
_SKIP = frozenset("script style noscript template svg head".split())


def visible_lines(html: bytes | str) -> list[str]:
    """Every line of text a browser would show (block elements break lines; scripts,
    styles and ``<head>`` dropped), whitespace collapsed, empty lines dropped."""
    import lxml.etree
    import lxml.html

    try:
        tree = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return []
    parts: list[str] = []
    skipping = 0
    for event, el in lxml.etree.iterwalk(tree, events=("start", "end")):
        tag = el.tag.lower() if isinstance(el.tag, str) else ""
        if event == "start":
            if tag in _SKIP:
                skipping += 1
            elif not skipping:
                if tag in _BLOCK:
                    parts.append("\n")
                if el.text:
                    parts.append(el.text)
            continue
        if tag in _SKIP:
            skipping -= 1
        elif not skipping and tag in _BLOCK:
            parts.append("\n")
        if not skipping and el.tail:
            parts.append(el.tail)
    return [" ".join(ln.split()) for ln in "".join(parts).split("\n") if ln.strip()]


def boilerplate(html: bytes, main: str | None) -> str:
    """The visible lines of a page that are not part of its main text."""
    kept = {" ".join(ln.split()) for ln in (main or "").splitlines()}
    joined = " ".join(kept)
    rest = [ln for ln in visible_lines(html) if ln not in kept and not (len(ln) > 20 and ln in joined)]
    return "\n".join(rest)


def expand(spec: str, exclude: Sequence[str] = ()) -> list[tuple[str, str]]:
    """``[(format, path)]`` of one input spec (``boilerplate:`` stripped), minus the
    excluded files."""
    return expand_inputs([spec.removeprefix(BOILERPLATE)], exclude=exclude)


def iter_docs(spec: str, *, text_key: str = "text", exclude: Sequence[str] = (),
              stats: ReadStats | None = None) -> Iterator[Document]:
    """Documents of one input spec; ``boilerplate:`` yields each page's boilerplate
    (pages whose main text the extractor cannot find are rejects, counted in ``stats``)."""
    inner = spec.removeprefix(BOILERPLATE)
    if inner == spec:
        yield from corpus.iter_docs([spec], text_key=text_key, exclude=exclude, stats=stats)
        return
    for fmt, path in expand(spec, exclude):
        if fmt not in ("html", "warc"):
            raise ValueError(f"boilerplate: needs HTML pages or WARC archives, got {fmt} file {path}")
    for doc in corpus.iter_docs([inner], exclude=exclude, stats=stats):
        text = boilerplate(doc.raw, doc.text)
        if text:
            yield dataclasses.replace(doc, text=text)


def file_summary(spec: str, exclude: Sequence[str] = ()) -> list[dict]:
    """What a model card records about one input: path, format, bytes."""
    return corpus.file_summary([spec.removeprefix(BOILERPLATE)], exclude=exclude)
