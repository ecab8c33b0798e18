"""Streaming XML for the dump readers (``stackexchange``, ``mediawiki``): the standard
library's expat, fed from the input layer's stream so that the cost stays linear in the
input and nothing in the file can make the parser expand it.

* **Linear in a large token.** expat (2.5 and older) re-reads a token that is not
  complete yet from its start each time more bytes arrive: a 20 MB ``Body`` attribute
  fed in 16 KiB pieces (what ``ElementTree.iterparse`` does) is re-scanned ~1,300 times
  (55 s; 100 MB never ends). :func:`parse` doubles the piece it feeds whenever a piece
  brought no event (the token is still open), so a token of ``n`` bytes is scanned
  ``O(n)`` times in all; a token longer than ``max_token`` is ``read:too_large`` for the
  file. The C ``XMLParser.feed`` hands a piece to expat whole (``pyexpat`` cuts it into
  1 MiB calls, which would be quadratic again).
* **No DTD.** A ``<!DOCTYPE`` is refused (``read:xml_dtd``) before its internal subset is
  read, so no entity is declared and none can expand (billion laughs, external entities
  naming local files). Dumps never carry one.
* **Bounded nesting**: elements nested deeper than :data:`MAX_DEPTH` are
  ``read:invalid_xml`` (dumps nest 5 deep).
* **The rule for a cut**: what the parser completed before a syntax error, a cut
  (``read:truncated``: the input ends before the root element closes) or a failing
  stream (a cut ``.bz2`` raises from the decompressor) reaches the reader before the
  error does.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any, BinaryIO, Iterator

from datapipe.readers._streams import FileCorrupt
from datapipe.readers.inputs import Refused

#: elements nested deeper than this are refused
MAX_DEPTH = 256
#: bytes fed to expat at a time while events come
CHUNK = 64 << 10
#: the largest piece fed at once (the C parser takes an int length)
_MAX_CHUNK = 1 << 30


class XmlTarget:
    """An ``XMLParser`` target that counts events (so :func:`parse` sees progress),
    refuses a DTD and deep nesting, and collects what the reader wants in ``ready``."""

    def __init__(self) -> None:
        self.depth = 0
        self.events = 0
        self.ready: list[Any] = []

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.events += 1
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FileCorrupt("invalid_xml", f"elements nested deeper than {MAX_DEPTH} levels")

    def end(self, tag: str) -> None:
        self.events += 1
        self.depth -= 1

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise FileCorrupt("xml_dtd", f"the file declares a DTD (<!DOCTYPE {short(name)}>): refused, so that "
                                     "no entity it declares can expand (a dump has none)")

    def close(self) -> None:
        return None

    def take(self) -> list[Any]:
        items, self.ready = self.ready, []
        return items


def parse(stream: BinaryIO, target: XmlTarget, *, max_token: int) -> Iterator[Any]:
    """What ``target`` collects in ``ready``, as the stream is parsed. Raises
    :class:`FileCorrupt` (``invalid_xml``, ``truncated``, ``xml_dtd``, ``too_large`` for
    a token over ``max_token`` bytes) or the stream's own error, after handing over what
    was complete before it."""
    parser = ET.XMLParser(target=target)
    size, stalled = CHUNK, 0
    while True:
        data, failed = _fill(stream, size)
        seen = target.events
        err: BaseException | None = None
        if data:
            try:
                parser.feed(data)
            except ET.ParseError as exc:
                err = FileCorrupt("invalid_xml", str(exc))
            except (ValueError, LookupError) as exc:   # an encoding expat cannot read (shift_jis, bogus)
                err = FileCorrupt("invalid_xml", f"{type(exc).__name__}: {exc}")
            except FileCorrupt as exc:                  # the target's refusals
                err = exc
        yield from target.take()
        if err is not None:
            raise err
        if failed is not None:
            raise failed
        if not data:
            break
        if target.events != seen:
            size, stalled = CHUNK, 0
        else:   # a token still open (or nothing the target hears about): feed more at once
            stalled += len(data)
            if stalled > max_token:
                raise Refused("too_large", f"an XML token (a tag with its attributes, a comment) longer than "
                                           f"{max_token} bytes")
            size = max(CHUNK, min(size * 2, _MAX_CHUNK, max_token - stalled + CHUNK))   # never far past max_token
    try:
        parser.close()
    except ET.ParseError as exc:
        raise FileCorrupt("truncated", f"the XML ends before its root element is closed ({exc})") from None
    yield from target.take()


def _fill(stream: Any, size: int) -> tuple[bytes, BaseException | None]:
    """Up to ``size`` bytes, and the error that stopped the stream early, if any (the
    bytes before it are kept: ``read1`` returns what the decompressor has)."""
    read = getattr(stream, "read1", stream.read)
    parts: list[bytes] = []
    got = 0
    try:
        while got < size:
            b = read(size - got)
            if not b:
                break
            parts.append(b)
            got += len(b)
    except Exception as exc:   # a cut or corrupt stream; the reader boundary names it
        return b"".join(parts), exc
    return b"".join(parts), None


def short(s: Any, n: int = 200) -> str:
    """An input-given string made fit for a reject's detail."""
    s = str(s)
    return s if len(s) <= n else s[:n] + f"... ({len(s)} characters)"
