"""One-document-per-file readers: plain text (and code) files, and HTML pages.

Many small files are grouped into one split up to ``split_bytes`` (by on-disk size);
a file is never split. The document is the whole (decompressed) file, read up to
``max_doc_bytes`` + 1 bytes: a bigger file is a ``read:too_large`` reject and is not
read further. ``.gz``, ``.zst``, ``.bz2`` and ``.xz`` files are decompressed (by extension, else by
magic bytes). The locator, and the key of the id, is the file's relative path.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Iterator

from datapipe.errors import SpecError
from datapipe.readers._streams import FileCorrupt
from datapipe.readers.inputs import read_upto
from datapipe.readers.base import InputFile, Rec, Reader, reject
from datapipe.readers.textsplit import check_split_options, read_split_file


@dataclass(kw_only=True, frozen=True)
class TextOptions:
    """``encoding``: how file bytes become text (``utf-8`` by default). Bytes that are
    not valid in that encoding make the file a ``read:invalid_utf8`` (or
    ``read:invalid_encoding``) reject rather than text with replacement characters.
    ``split``/``pattern``/``max_chars``: one file as many documents
    (:mod:`datapipe.readers.textsplit`)."""

    encoding: str = "utf-8"
    #: cut the file into many documents: paragraphs | lines | regex (see textsplit)
    split: str | None = None
    #: for split: regex, a line matching it starts a new document
    pattern: str | None = None
    #: with split: at most this many characters per document (0 = no limit)
    max_chars: int = 0

    def __post_init__(self) -> None:
        try:
            codecs.lookup(self.encoding)
        except (LookupError, TypeError):
            raise SpecError(f"option encoding: unknown text encoding {self.encoding!r}; "
                            "use a Python codec name such as 'utf-8' or 'latin-1'") from None
        check_split_options(self)


@dataclass(kw_only=True, frozen=True)
class HtmlOptions:
    """No options: the page bytes go to ``raw`` as they are; the ``extract`` stage
    detects the encoding and extracts the text."""


class _WholeFileReader(Reader):
    def _compression(self, f: InputFile) -> str | None:
        return self.input(f).compression()

    def _payload(self, f: InputFile) -> bytes | Rec:
        src = self.input(f)
        comp = src.compression()
        with src.open(compression=comp) as fh:
            data = read_upto(fh, self.max_doc_bytes + 1)
            if len(data) > self.max_doc_bytes:
                # The rest is not read: a compressed file's full size stays unknown.
                if comp is None:
                    detail = self._too_large(f.size)
                else:
                    detail = self._too_large(len(data), more=True)
                return reject(f.rel, f.rel, "too_large", detail)
        if not data and comp is not None:
            raise FileCorrupt("empty_file", f"decompresses to 0 bytes ({comp})")
        return data


class TextReader(_WholeFileReader):
    """``.txt``, ``.txt.gz`` and any other extension (source code, ``.md``...)."""

    format = "text"
    Options = TextOptions
    suffixes = (".txt",)

    def _records(self, f: InputFile, start: int, end: int | None) -> Iterator[Rec]:
        if self.options.split is not None:
            yield from read_split_file(self, f)
            return
        data = self._payload(f)
        if isinstance(data, Rec):
            yield data
            return
        enc = self.options.encoding
        utf8 = codecs.lookup(enc).name == "utf-8"
        try:
            text = data.decode(enc)
        except UnicodeDecodeError as exc:
            yield reject(f.rel, f.rel, "invalid_utf8" if utf8 else "invalid_encoding",
                         f"{enc}: {exc.reason} at byte {exc.start}: "
                         f"{data[max(0, exc.start - 20):exc.start + 20]!r}")
            return
        if not text.strip():
            yield reject(f.rel, f.rel, "empty", "the file holds only whitespace")
            return
        if utf8:
            # Valid UTF-8 already: hand the bytes on (cheaper to turn into Arrow).
            yield Rec(f.rel, f.rel, text=data[3:] if data.startswith(codecs.BOM_UTF8) else data)
        else:
            yield Rec(f.rel, f.rel, text=text.removeprefix("\ufeff"))


class HtmlReader(_WholeFileReader):
    """``.html``, ``.htm``, ``.html.gz``: ``raw`` = the page bytes, ``text`` null."""

    format = "html"
    Options = HtmlOptions
    suffixes = (".html", ".htm")
    markup = True

    def _records(self, f: InputFile, start: int, end: int | None) -> Iterator[Rec]:
        data = self._payload(f)
        if isinstance(data, Rec):
            yield data
            return
        if not data.strip():
            yield reject(f.rel, f.rel, "empty", "the page holds only whitespace")
            return
        yield Rec(f.rel, f.rel, raw=data)
