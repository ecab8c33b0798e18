"""Byte-level HTML helpers for ``extract``: is this HTML at all, which encoding, what title,
and whether an HTML5 tree builder can parse the page in bounded time (:func:`tree_work`).

Encoding, in the order a browser uses (WHATWG "encoding sniffing", simplified):

1. a byte-order mark (UTF-8, UTF-16, UTF-32), or UTF-16 without a BOM recognised by
   ``<`` followed/preceded by a NUL;
2. a declaration in the first 4 KiB: ``<meta charset=...>``, ``<meta http-equiv=
   "Content-Type" content="...; charset=...">`` or ``<?xml ... encoding=...?>``, with
   WHATWG's label mapping (``iso-8859-1``/``ascii`` mean windows-1252, ``gb2312``
   means GB18030, ...). A page that does not decode strictly with its declared
   encoding but is valid UTF-8 is read as UTF-8 (a common mislabel); otherwise the
   declared encoding is used with replacement characters for the invalid bytes;
3. undeclared: UTF-8 if the bytes are valid UTF-8; else the legacy encoding of the
   page's ``<html lang>`` (the locale default browsers use) if it decodes cleanly;
   else ``charset_normalizer``'s best guess if it decodes cleanly; else windows-1252
   with replacement characters.

Decoding never raises: invalid byte sequences become U+FFFD.
"""

from __future__ import annotations

import codecs
import html
import re

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

_META_CHARSET = re.compile(rb"<meta[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9_:.+-]+)", re.I)
_XML_ENCODING = re.compile(rb"<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9_:.+-]+)", re.I)
_HTML_LANG = re.compile(rb"<html[^>]*?\slang\s*=\s*[\"']?\s*([A-Za-z]{2,3})", re.I)

#: WHATWG label fixes: what browsers actually decode these labels as.
_LABEL_FIX = {
    "iso-8859-1": "cp1252", "iso8859-1": "cp1252", "latin-1": "cp1252", "latin1": "cp1252",
    "l1": "cp1252", "ascii": "cp1252", "us-ascii": "cp1252", "windows-1252": "cp1252",
    "iso_8859-1": "cp1252", "cp819": "cp1252", "x-user-defined": "cp1252",
    "iso-8859-9": "cp1254", "latin5": "cp1254", "tis-620": "cp874", "iso-8859-11": "cp874",
    "gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030", "gb_2312-80": "gb18030",
    "big5": "big5hkscs", "shift_jis": "cp932", "shift-jis": "cp932", "sjis": "cp932",
    "x-sjis": "cp932", "ms_kanji": "cp932", "windows-31j": "cp932", "euc-kr": "cp949",
    "ks_c_5601-1987": "cp949", "utf-16": "utf-8", "utf-16le": "utf-8", "utf-16be": "utf-8",
    "utf8": "utf-8", "unicode-1-1-utf-8": "utf-8",
}

#: Legacy default encoding by page language (what browsers assume for that locale).
_LANG_DEFAULT = {
    **dict.fromkeys(("pl", "cs", "sk", "hu", "sl", "hr", "ro", "bs", "sr"), "cp1250"),
    **dict.fromkeys(("ru", "uk", "be", "bg", "mk", "kk"), "cp1251"),
    "el": "cp1253", "tr": "cp1254", "az": "cp1254", "he": "cp1255", "iw": "cp1255",
    "ar": "cp1256", "fa": "cp1256", "ur": "cp1256",
    **dict.fromkeys(("lt", "lv", "et"), "cp1257"), "vi": "cp1258", "th": "cp874",
    "ja": "cp932", "zh": "gb18030", "ko": "cp949",
}
_LEGACY_FALLBACK = "cp1252"

_BINARY_MAGIC = (
    (b"%PDF-", "pdf"), (b"\x89PNG\r\n\x1a\n", "png"), (b"\xff\xd8\xff", "jpeg"), (b"GIF87a", "gif"),
    (b"GIF89a", "gif"), (b"PK\x03\x04", "zip"), (b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"), (b"(\xb5/\xfd", "zstd"), (b"7z\xbc\xaf\x27\x1c", "7z"), (b"Rar!", "rar"),
    (b"\x7fELF", "elf"), (b"OggS", "ogg"), (b"ID3", "mp3"), (b"fLaC", "flac"), (b"\x00asm", "wasm"),
    (b"wOFF", "woff"), (b"wOF2", "woff2"), (b"\x00\x00\x01\x00", "ico"), (b"MZ", "exe"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "ole"), (b"SQLite format 3\x00", "sqlite"),
)
_CONTROL_BYTES = bytes(range(0, 9)) + bytes(range(14, 27)) + bytes(range(28, 32))
_MARKUP = re.compile(
    r"<\s*(?:!doctype\s+html|html|head|body|title|meta|link|div|p|span|a|br|hr|table|td|tr|script|style|"
    r"article|section|main|header|footer|nav|h[1-6]|ul|ol|li|img|form|iframe|center|font|b|i|strong|em)"
    r"(?:\s|/?>)|<!--", re.I)
_TITLE = re.compile(r"<title[^>]{0,200}>(.{0,2000}?)</title\s*>", re.I | re.S)
_OG_TITLE = (
    re.compile(r"<meta[^>]{0,200}?property\s*=\s*[\"']og:title[\"'][^>]{0,200}?content\s*=\s*\"([^\"]{0,2000})\"", re.I),
    re.compile(r"<meta[^>]{0,200}?content\s*=\s*\"([^\"]{0,2000})\"[^>]{0,200}?property\s*=\s*[\"']og:title[\"']", re.I),
)
_WS = re.compile(r"\s+")
# one character per tag: "/" for an end tag, the name's first letter for a start tag that
# is not void (a void element is never left open)
_TAG_MARK = re.compile(r"<(/|(?!(?:area|base|br|col|embed|hr|img|input|link|meta|param|source|track|"
                       r"wbr|keygen|basefont|bgsound|frame)\b)[A-Za-z])", re.I)

# start tags as an HTML5 tokenizer reads them, each up to its closing ">": a quote opens
# a quoted value only right after "=" (elsewhere it is part of a name), so a ">" inside a
# quoted value does not end the tag. Comments are skipped, and so is the content of the
# raw-text elements (a "<" in a script starts no tag; its own start tag is kept). Group 1
# is a raw-text element's start tag, group 2 any other. Possessive throughout: linear on
# any input.
_TAG_BODY = r"""(?:[^>"'=]++|=\s*+(?:"[^"]*+"|'[^']*+')?|["'])*+"""
_RAW_TEXT = r"(?:script|style|textarea|title|xmp)"
_START_TAGS = re.compile(
    r"<(?:!--(?:[^-]++|-(?!->))*+(?:-->)?"
    rf"|((?i:{_RAW_TEXT})\b{_TAG_BODY})(?:>(?:[^<]++|<(?!/(?i:{_RAW_TEXT})\b))*+)?"
    rf"|([A-Za-z]{_TAG_BODY}))")
# inside a start tag: a value ("=" and what follows) or a name (a run up to space, "/", "=")
_TAG_PART = re.compile(r"""=\s*+(?:"[^"]*+"|'[^']*+'|[^\s>]*+)|[^\s/=]++""")

#: The most attributes one start tag may have before ``extract`` rejects the page
#: (``too_many_attributes``): lxml's and lexbor's parsers both check each new attribute
#: against the tag's earlier ones, so a tag with 80,000 took 76 s in lxml (151 s in
#: trafilatura), 36 s in lexbor, 31 s in resiliparse, in one C call. At 5,000 it is well
#: under a second; the most on a real page of our three evaluation sets is 512.
MAX_ATTRIBUTES = 5_000

#: The most :func:`tree_work` a page may have for lexbor (the HTML5 parser under
#: ``cascade``'s prestrip and under ``resiliparse``) to parse it: about 0.2-0.4 s of one C
#: call at the 3-8 ns per unit measured on hostile pages. Real pages are far below: the
#: highest over the 1,653 pages of our three evaluation sets is 1.5e5.
LEXBOR_MAX_WORK = 50_000_000


def _codec(label: str | bytes) -> str | None:
    """Python codec name for an encoding label, or None if unknown."""
    if isinstance(label, bytes):
        label = label.decode("ascii", "ignore")
    label = label.strip().lower()
    label = _LABEL_FIX.get(label, label)
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def _strict(raw: bytes, codec: str) -> str | None:
    try:
        return raw.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


def declared_encoding(raw: bytes) -> str | None:
    """The encoding a page declares in its first 4 KiB (codec name), if any."""
    head = raw[:4096]
    for pat in (_META_CHARSET, _XML_ENCODING):
        m = pat.search(head)
        if m:
            codec = _codec(m.group(1))
            if codec:
                return codec
    return None


def decode_html(raw: bytes) -> tuple[str, str]:
    """``(text, how)``: the page as text and how its encoding was chosen
    (``bom:utf-8``, ``declared:cp1252``, ``utf-8``, ``lang:cp1250``, ``guess:cp1251``,
    ``fallback:cp1252``). Never raises on bad bytes."""
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            return raw[len(bom):].decode(codec, "replace"), f"bom:{codec}"
    if raw[:2] == b"<\x00":
        return raw.decode("utf-16-le", "replace"), "nul:utf-16-le"
    if raw[:2] == b"\x00<":
        return raw.decode("utf-16-be", "replace"), "nul:utf-16-be"

    declared = declared_encoding(raw)
    if declared:
        text = _strict(raw, declared)
        if text is not None:
            return text, f"declared:{declared}"
        if declared != "utf-8":
            text = _strict(raw, "utf-8")
            if text is not None:
                return text, "utf-8"
        return raw.decode(declared, "replace"), f"declared:{declared}"

    text = _strict(raw, "utf-8")
    if text is not None:
        return text, "utf-8"
    m = _HTML_LANG.search(raw[:8192])
    if m:
        codec = _LANG_DEFAULT.get(m.group(1).decode("ascii").lower(), _LEGACY_FALLBACK)
        text = _strict(raw, codec)
        if text is not None:
            return text, f"lang:{codec}"
    guess = _guess(raw)
    if guess:
        text = _strict(raw, guess)
        if text is not None:
            return text, f"guess:{guess}"
    return raw.decode(_LEGACY_FALLBACK, "replace"), f"fallback:{_LEGACY_FALLBACK}"


def _guess(raw: bytes) -> str | None:
    """charset_normalizer's best guess on (a sample of) the bytes."""
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - it ships with trafilatura
        return None
    sample = raw if len(raw) <= 65536 else raw[:32768] + raw[-32768:]
    best = from_bytes(sample).best()
    return _codec(best.encoding) if best is not None else None


def binary_kind(raw: bytes) -> str | None:
    """What a payload is when it is clearly not a text page (``pdf``, ``png``, ...,
    ``binary`` for control bytes), else None. Looks at the first 4 KiB only."""
    head = raw[:8192].lstrip(b" \t\r\n")[:4096]
    for bom, _ in _BOMS:
        if head.startswith(bom):
            return None
    for magic, kind in _BINARY_MAGIC:
        if head.startswith(magic):
            return kind
    if head[:2] in (b"<\x00", b"\x00<"):  # UTF-16 without a BOM
        return None
    if not head:
        return None
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    if b"\x00" in head or controls > 0.05 * len(head):
        return "binary"
    return None


def has_markup(text: str) -> bool:
    """Whether decoded text contains HTML markup (looks at the first 256 Ki characters)."""
    return _MARKUP.search(text, 0, 262144) is not None


def find_title(text: str) -> str | None:
    """The page's ``<title>`` (or ``og:title``), unescaped, whitespace collapsed."""
    head = text[:524288]
    m = _TITLE.search(head)
    value = m.group(1) if m else None
    if not value or not value.strip():
        value = None
        for pat in _OG_TITLE:
            m = pat.search(head)
            if m and m.group(1).strip():
                value = m.group(1)
                break
    if value is None:
        return None
    value = _WS.sub(" ", html.unescape(value)).strip()
    return value[:1000] or None


def tree_work(page: str) -> int:
    """An upper bound of the open-element work an HTML5 tree builder does on ``page``.

    lexbor scans its stack of open elements (and list of open formatting elements) for
    many tokens: every block start tag looks for an open ``<p>`` to close, every end tag
    for its element, text reopens the formatting elements. So a page that leaves many
    elements open makes the parse quadratic, in one C call no time limit can interrupt:
    20,000 nested ``<div>`` take 0.4 s, 200,000 took 100 s here; 100,000 unclosed
    ``<option><optgroup>`` pairs took 78 s in resiliparse's copy of lexbor.

    The bound: for every tag, the number of elements open at that point (start tags that
    are not void, minus end tags, never below zero), summed. Comments and ``<`` in text
    or scripts only raise it. It is counted tag by tag only when the plain bound n²/2 for
    n ``<`` characters is over :data:`LEXBOR_MAX_WORK` (pages with more than 10,000 of
    them: 4 of our 1,653 evaluation pages; a few ms each); otherwise that plain bound is
    returned."""
    n = page.count("<")
    if n * n // 2 <= LEXBOR_MAX_WORK:
        return n * n // 2
    import numpy as np

    marks = np.frombuffer("".join(_TAG_MARK.findall(page)).encode("ascii", "replace"), np.uint8)
    step = np.where(marks == ord("/"), -1, 1).astype(np.int64)
    level = np.cumsum(step)
    open_now = level - np.minimum(np.minimum.accumulate(level), 0)   # the walk, floored at zero
    return int(open_now.sum())


def most_attributes(page: str) -> int:
    """The most attributes in one start tag of ``page``, counted in the tags long enough
    to hold more than :data:`MAX_ATTRIBUTES` (two characters each); 0 when none is. One
    linear pass over the page (about 0.6 ms for a 140 kB page)."""
    counts = [sum(1 for part in _TAG_PART.findall(raw or other, 1) if part[0] != "=")
              for raw, other in _START_TAGS.findall(page) if len(raw) + len(other) > 2 * MAX_ATTRIBUTES]
    return max(counts, default=0)
