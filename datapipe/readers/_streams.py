"""Opening input files as decompressed binary streams, and the file-level error type.

Compression is chosen by extension (``.gz``, ``.zst``/``.zstd``, ``.bz2``, ``.xz``) and,
for any other name, by the file's magic bytes, so ``data.jsonl`` that is really gzip
still reads. A compression datapipe cannot read (``.lz4``, ``.zip``, ``.7z``, ``.br``,
``.Z``, or those magic bytes) is a per-file ``read:unsupported_compression`` error, never
garbage text. Decompression is streamed; nothing reads a whole file into memory. Files
are opened through :mod:`datapipe.fs`, so every reader reads ``s3://`` and friends too
(ranged reads: a split of a large object reads only its part).

The standard ``zstandard`` stream readers end quietly on a truncated frame, which would
turn a cut-off file into silently missing documents. :class:`_ZstdRaw` feeds the
decompressor itself in small input chunks and raises :class:`FileCorrupt` when the
input ends inside a frame.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from typing import Any, BinaryIO

import zstandard

from datapipe import fs

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
BZ2_MAGIC = b"BZh"
XZ_MAGIC = b"\xfd7zXZ\x00"
#: the one table of compression suffixes datapipe reads: readers open, and format guessing
#: ignores, exactly these (:func:`strip_compression`)
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd", ".bz2": "bz2", ".xz": "xz"}
_UNSUPPORTED_EXT = {".lz4": "lz4", ".zip": "zip", ".7z": "7z", ".br": "brotli", ".z": "compress (.Z)",
                    ".lzma": "lzma-alone", ".lzo": "lzo", ".sz": "snappy"}
_UNSUPPORTED_MAGIC = {b"\x04\x22\x4d\x18": "lz4", b"PK\x03\x04": "zip", b"7z\xbc\xaf": "7z",
                      b"\x1f\x9d": "compress (.Z)"}

# Compressed bytes handed to the zstd decompressor per call. Small, because one call's
# output is unbounded (a highly compressible frame can expand ~30000x).
_ZSTD_IN_CHUNK = 16 << 10
_BUFFER = 1 << 20


class FileCorrupt(Exception):
    """A whole file (or the rest of it) cannot be read; becomes one reject row or a
    :class:`~datapipe.errors.CorruptInputError`, per ``on_error``.

    ``reason`` is the rule name without the ``read:`` prefix (``truncated_gzip``);
    ``offset``, when known, is where the damage starts (a reader may resume after it).
    """

    def __init__(self, reason: str, detail: str, offset: int | None = None) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.offset = offset

    def __reduce__(self):  # picklable across Ray workers
        return (type(self), (self.reason, self.detail, self.offset))


def strip_compression(name: str) -> str:
    """``name`` without one trailing compression suffix of :data:`COMPRESSIONS`
    (case kept): ``a.warc.gz`` -> ``a.warc``."""
    low = name.lower()
    for ext in COMPRESSIONS:
        if low.endswith(ext):
            return name[: -len(ext)]
    return name


def compression_of(path: str, storage: Any = None, *, head: bytes | None = None) -> str | None:
    """``"gzip"``, ``"zstd"``, ``"bz2"``, ``"xz"`` or ``None`` (plain), from the extension,
    else the magic bytes (``head``, the file's first bytes; read from ``path`` when
    ``storage`` is given and ``head`` is not); ``"unsupported:<what>"`` for a compression
    datapipe cannot read. Readers ask :meth:`datapipe.readers.inputs.Input.compression`,
    which reads the magic bytes through the confined open."""
    low = path.lower()
    for ext, comp in COMPRESSIONS.items():
        if low.endswith(ext):
            return comp
    for ext, what in _UNSUPPORTED_EXT.items():
        if low.endswith(ext):
            return f"unsupported:{what}"
    if head is None:
        if storage is None:
            return None
        try:
            with fs.open_input(path, storage) as fh:
                head = fh.read(6)
        except OSError:
            return None  # the real open reports it
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    if head.startswith(XZ_MAGIC):
        return "xz"
    if head.startswith(BZ2_MAGIC) and head[3:4].isdigit():
        return "bz2"
    for magic, what in _UNSUPPORTED_MAGIC.items():
        if head.startswith(magic):
            return f"unsupported:{what}"
    return None


class _ZstdRaw(io.RawIOBase):
    """Raw stream of the decompressed content of a (multi-frame) zstd file.

    Raises :class:`FileCorrupt` (``truncated_zstd``) when the file ends inside a frame
    and (``corrupt_zstd``) when the decompressor rejects the data.
    """

    def __init__(self, fh: BinaryIO) -> None:
        super().__init__()
        self._fh = fh
        self._dctx = zstandard.ZstdDecompressor()
        self._dobj = self._dctx.decompressobj()
        self._in_frame = False
        self._pending = b""
        self._pos = 0
        self._eof = False

    def readable(self) -> bool:
        return True

    def _fill(self) -> None:
        while self._pos >= len(self._pending) and not self._eof:
            chunk = self._fh.read(_ZSTD_IN_CHUNK)
            if not chunk:
                self._eof = True
                if self._in_frame:
                    raise FileCorrupt("truncated_zstd", "file ends inside a zstd frame")
                return
            self._pending = self._feed(chunk)
            self._pos = 0

    def _feed(self, chunk: bytes) -> bytes:
        out = []
        while chunk:
            self._in_frame = True
            try:
                out.append(self._dobj.decompress(chunk))
            except zstandard.ZstdError as exc:
                raise FileCorrupt("corrupt_zstd", str(exc)) from exc
            if not self._dobj.eof:
                break
            # Frame complete: anything left over starts the next frame.
            chunk = self._dobj.unused_data
            self._dobj = self._dctx.decompressobj()
            self._in_frame = False
        return b"".join(out)

    def readinto(self, buf) -> int:  # type: ignore[override]
        self._fill()
        n = min(len(buf), len(self._pending) - self._pos)
        if n <= 0:
            return 0
        buf[:n] = memoryview(self._pending)[self._pos : self._pos + n]
        self._pos += n
        return n

    def close(self) -> None:
        if not self.closed:
            self._fh.close()
        super().close()


def open_binary(path: str, compression: str | None, storage: Any = None) -> BinaryIO:
    """A buffered binary stream of the (decompressed) content of a file datapipe wrote
    itself (rejects, reports). Input files are opened through the input layer
    (:mod:`datapipe.readers.inputs`), never with this."""
    if compression is not None and compression.startswith("unsupported:"):
        decompress(None, compression)
    raw = fs.open_input(path, storage)
    try:
        return decompress(raw, compression)
    except BaseException:
        raw.close()
        raise


def decompress(raw: Any, compression: str | None) -> BinaryIO:
    """``raw`` (a binary stream of stored bytes) as a buffered stream of its decompressed
    content; supports readline. Each decompressor checks its stream's end: a cut or
    damaged stream raises when it is reached (:func:`classify` names it)."""
    if compression is not None and compression.startswith("unsupported:"):
        raise FileCorrupt("unsupported_compression",
                          f"{compression.split(':', 1)[1]} compression is not supported; decompress the file "
                          "or recompress it as gzip, zstd, bz2 or xz")
    if compression is None:
        return raw
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if compression == "zstd":
        return io.BufferedReader(_ZstdRaw(raw), buffer_size=_BUFFER)  # type: ignore[return-value]
    if compression == "bz2":
        return bz2.BZ2File(raw, mode="rb")  # type: ignore[return-value]
    if compression == "xz":
        return lzma.LZMAFile(raw, mode="rb")  # type: ignore[return-value]
    raise ValueError(f"unknown compression {compression!r}")


def classify(exc: BaseException, compression: str | None) -> tuple[str, str]:
    """``(reason, detail)`` for an exception that ended the reading of a file."""
    if isinstance(exc, FileCorrupt):
        return exc.reason, exc.detail
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, EOFError):
        return (f"truncated_{compression}" if compression in ("gzip", "bz2", "xz") else "truncated"), detail
    if isinstance(exc, (gzip.BadGzipFile, zlib.error)):
        return "corrupt_gzip", detail
    if isinstance(exc, zstandard.ZstdError):
        return "corrupt_zstd", detail
    if isinstance(exc, lzma.LZMAError):
        return "corrupt_xz", detail
    if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
        return "unreadable", detail
    if isinstance(exc, OSError) and compression in ("gzip", "bz2"):
        return f"corrupt_{compression}", detail
    return "unreadable", detail


def read_upto(stream, limit: int) -> bytes:
    """Read until ``limit`` bytes or EOF (``read(n)`` on some streams returns short)."""
    parts = []
    got = 0
    while got < limit:
        b = stream.read(limit - got)
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)
