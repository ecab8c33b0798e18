"""Wikitext to plain text for the ``mediawiki`` reader, and the child process it runs in.

``mwparserfromhell``'s C tokenizer is quadratic in the length of a run of constructs it
cannot close: 20 KB of ``{{a|`` takes 8 s, 80 KB over a minute, one 1 MB page hours, in
one C call that a Python-level deadline cannot interrupt. So the reader runs
:func:`wikitext_to_text` here, in a child process (this file run as a script: the
standard library and ``mwparserfromhell`` only, ~60 ms to start), and kills it when one
page passes ``limits.doc_seconds`` (:class:`datapipe.readers.mediawiki.Converter`); the
page is a ``read:timeout`` reject and the next page gets a new child. The child also
dies on its own: with its parent (``PR_SET_PDEATHSIG``, and at the end of its stdin) and
a few seconds after a page's budget (its own ``SIGALRM``, left at the default action),
so a parse nobody waits for never outlives the task.

The protocol on the child's stdin and stdout, little-endian: a request is ``<II``
(lengths) + the media/category namespace names joined by NUL + the wikitext, both
UTF-8; a reply is ``<BI`` (0 = text, 1 = the parser's error) + that many bytes of UTF-8.
The child says :data:`READY` once, when it has imported the parser.
"""

from __future__ import annotations

import bisect
import re
import struct
import sys

#: tags whose content is not prose (citations, galleries, math, code listings), removed
#: with their content before parsing: they do not nest, and removing them first is much
#: cheaper than removing nodes from the parse tree
_DROP_NAMES = r"(ref|references|gallery|math|score|timeline|syntaxhighlight)"
_DROP_OPEN = re.compile(r"<" + _DROP_NAMES + r"\b", re.I)
_DROP_CLOSE = re.compile(r"</" + _DROP_NAMES + r"\s*>", re.I)
#: the English names MediaWiki accepts in every language, besides the local ones
CANONICAL = ("File", "Image", "Media", "Category")

REQUEST = struct.Struct("<II")
REPLY = struct.Struct("<BI")
#: what the child writes once it can take requests
READY = b"R"


def drop_tags(text: str) -> str:
    """``text`` without ``<ref .../>`` and ``<ref ...>...</ref>`` (and the other
    :data:`_DROP_NAMES`): what ``re.sub(r"<(names)\\b[^>]*/>|<(names)\\b[^>]*>.*?</\\2\\s*>",
    "", text, flags=re.S | re.I)`` gives, in linear time (that regex scans to the end of
    the text from every opening tag that is never closed: 80 KB of ``<ref>`` took 4 s)."""
    closes: dict[str, list[int]] = {}
    ends: dict[str, list[int]] = {}
    for m in _DROP_CLOSE.finditer(text):
        name = m.group(1).lower()
        closes.setdefault(name, []).append(m.start())
        ends.setdefault(name, []).append(m.end())
    out: list[str] = []
    pos, gt = 0, -1
    for m in _DROP_OPEN.finditer(text):
        if m.start() < pos:
            continue
        name_end = m.end()
        if gt < name_end:            # the first ">" after the name (the last one found still is, if past it)
            gt = text.find(">", name_end)
            if gt < 0:
                break                # no ">" left: no tag from here on
        if gt - 1 >= name_end and text[gt - 1] == "/":
            end = gt + 1             # <ref .../>
        else:
            name = m.group(1).lower()
            i = bisect.bisect_left(closes.get(name, ()), gt + 1)
            if i == len(closes.get(name, ())):
                continue             # never closed: left as it is
            end = ends[name][i]
        out.append(text[pos:m.start()])
        pos = end
    out.append(text[pos:])
    return "".join(out)


def media_link_pattern(names) -> re.Pattern:
    """``[[File:...]]``-style links (captions may hold one level of nested links)."""
    alt = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(r"\[\[\s*:?\s*(?:" + alt + r")\s*:[^\[\]]*(?:\[\[[^\[\]]*\]\][^\[\]]*)*\]\]", re.I)


DEFAULT_MEDIA = media_link_pattern(CANONICAL)


def wikitext_to_text(wikitext: str, media_links: re.Pattern = DEFAULT_MEDIA) -> str:
    """Plain text of a page's wikitext: markup removed, link texts kept, file/category
    links removed, runs of blank lines collapsed."""
    import mwparserfromhell

    code = mwparserfromhell.parse(media_links.sub("", drop_tags(wikitext)))
    text = code.strip_code(normalize=True, collapse=True)
    # rows of tables the parser could not close are left as markup: never prose
    lines = [ln.strip() for ln in text.splitlines() if not ln.lstrip().startswith(("|", "!", "{|"))]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _read_exact(fh, n: int) -> bytes | None:
    parts, got = [], 0
    while got < n:
        b = fh.read(n - got)
        if not b:
            return None
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def _die_with_parent() -> None:
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except Exception:
        pass   # not Linux: the end of stdin and the alarm still stop it


def serve(seconds: float) -> None:
    """The child: answer requests on stdin until it ends."""
    import signal

    _die_with_parent()
    import mwparserfromhell  # noqa: F401  (before saying ready: a page's budget is its parse alone)

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    stdout.write(READY)
    stdout.flush()
    patterns: dict[bytes, re.Pattern] = {}
    while True:
        head = _read_exact(stdin, REQUEST.size)
        if head is None:
            return
        n_names, n_text = REQUEST.unpack(head)
        names, text = _read_exact(stdin, n_names), _read_exact(stdin, n_text)
        if names is None or text is None:
            return
        if names not in patterns:
            patterns[names] = media_link_pattern(names.decode("utf-8", "surrogatepass").split("\0"))
        signal.setitimer(signal.ITIMER_REAL, seconds + 5)   # SIGALRM's default action ends the process
        try:
            status, out = 0, wikitext_to_text(text.decode("utf-8", "surrogatepass"), patterns[names])
        except Exception as exc:   # the parser's own error, reported to the reader
            status, out = 1, f"{type(exc).__name__}: {exc}"
        signal.setitimer(signal.ITIMER_REAL, 0)
        data = out.encode("utf-8", "surrogatepass")
        stdout.write(REPLY.pack(status, len(data)) + data)
        stdout.flush()


if __name__ == "__main__":
    serve(float(sys.argv[1]))
