"""Opening input files as decompressed binary streams, and the file-level error type.

Compression is chosen by extension (``.gz``, ``.zst``/``.zstd``) and, for any other
name, by the file's magic bytes, so ``data.jsonl`` that is really gzip still reads.
Decompression is streamed; nothing reads a whole file into memory.

The standard ``zstandard`` stream readers end quietly on a truncated frame, which would
turn a cut-off file into silently missing documents. :class:`_ZstdRaw` feeds the
decompressor itself in small input chunks and raises :class:`FileCorrupt` when the
input ends inside a frame.
"""

from __future__ import annotations

import gzip
import io
import zlib
from typing import BinaryIO

import zstandard

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

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


def compression_of(path: str) -> str | None:
    """``"gzip"``, ``"zstd"`` or ``None`` (plain), from the extension, else the magic bytes."""
    low = path.lower()
    if low.endswith(".gz"):
        return "gzip"
    if low.endswith((".zst", ".zstd")):
        return "zstd"
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        return None  # the real open reports it
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head == ZSTD_MAGIC:
        return "zstd"
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


def open_binary(path: str, compression: str | None) -> BinaryIO:
    """A buffered binary stream of the (decompressed) file content; supports readline."""
    raw = open(path, "rb", buffering=_BUFFER)
    if compression is None:
        return raw
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if compression == "zstd":
        return io.BufferedReader(_ZstdRaw(raw), buffer_size=_BUFFER)  # type: ignore[return-value]
    raw.close()
    raise ValueError(f"unknown compression {compression!r}")


def classify(exc: BaseException, compression: str | None) -> tuple[str, str]:
    """``(reason, detail)`` for an exception that ended the reading of a file."""
    if isinstance(exc, FileCorrupt):
        return exc.reason, exc.detail
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, EOFError):
        return ("truncated_gzip" if compression == "gzip" else "truncated"), detail
    if isinstance(exc, (gzip.BadGzipFile, zlib.error)):
        return "corrupt_gzip", detail
    if isinstance(exc, zstandard.ZstdError):
        return "corrupt_zstd", detail
    if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
        return "unreadable", detail
    if isinstance(exc, OSError) and compression == "gzip":
        return "corrupt_gzip", detail
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
