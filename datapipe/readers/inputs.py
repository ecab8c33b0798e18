"""The input layer: the one way a reader reaches bytes.

Readers do not open paths. They hold an :class:`Input` (``reader.input(f)``) for each
:class:`~datapipe.readers.base.InputFile` and ask it for streams; whatever they reach
through it (the file itself, a sibling named by an ``\\input``, a ``.gitignore``, a
license file, a metadata file) goes through the same four checks, so the next reader
gets them without re-earning them:

* **confinement**: a path must resolve inside the declared input roots (the real paths
  of the spec's ``paths``, carried on each ``InputFile`` as ``roots``). Locally the
  path's real path is compared (every link in it followed), and the final open uses
  ``O_NOFOLLOW`` on that real path, so a link swapped in later is refused, not
  followed. On an object store (no links) a key outside the declared prefixes, or one
  with ``.``/``..`` segments, is refused the same way. A refusal is the file's
  ``read:outside_inputs`` reject naming the link and where it leads; nothing is read.
* **file types**: only regular files are opened. A FIFO, device or socket is opened
  non-blocking (so it cannot hang the task), seen by ``fstat`` and refused
  (``read:not_regular_file``); a dangling link is ``read:dangling_link``.
* **budgets** (:class:`InputLimits`, the job's ``limits:`` block): decompressed bytes
  read per file (``file_bytes``) and per archive member (``member_bytes``), members per
  archive (``members``), the size a document may grow to when a reader expands it
  (``expanded_bytes``: LaTeX macros and ``\\input``, repository grouping), and wall
  time per document for parsers that can go super-linear (``doc_seconds``). A breach
  is a reject with its own reason (``read:too_large``, ``read:too_many_members``,
  ``read:expansion_limit``, ``read:timeout``), so memory and time follow the
  configuration, not the input.
* **integrity**: every compressed stream is read to its end and its trailer checked
  (gzip CRC and length, bz2 and xz end markers, zstd frames); a tar must end with its
  end-of-archive block (:func:`tar_members`), a zip's members their CRC
  (:func:`zip_members`). A short read is ``read:truncated`` (or
  ``read:truncated_<compression>``), damage ``read:corrupt_<what>``.

**The rule for what was read before the damage** (every format the same): documents
read before a file turns out truncated or corrupt are kept and counted; the file adds
one reject row naming it and the damage, and under ``on_error: fail`` the job stops
with one line naming the file instead.

Totality lives one level up (:func:`datapipe.readers.base.read_split`): whatever a
reader raises on data becomes a counted reject naming the file.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import posixpath
import stat as stat_
import tarfile
import zipfile
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator

from datapipe import fs
from datapipe.deadline import DocumentTimeout, deadline
from datapipe.errors import SpecError
# classify and strip_compression are public here for stages that read user files (decontamination)
from datapipe.readers._streams import (FileCorrupt, classify, compression_of, decompress, read_upto,  # noqa: F401
                                      strip_compression)

#: every reason the input layer itself gives (``read:`` + one of these)
REASONS = ("outside_inputs", "not_regular_file", "dangling_link", "too_large", "too_many_members",
           "expansion_limit", "timeout", "truncated", "corrupt_archive", "encrypted", "unsupported_compression",
           "unsafe_path")


@dataclass(kw_only=True, frozen=True)
class InputLimits:
    """What one input may cost; the job spec's ``limits:`` block (every key optional).

    ``file_bytes``: decompressed bytes read from one file (64 GiB). ``member_bytes``:
    bytes read from one archive member (1 GiB; a member over ``max_doc_bytes`` is a
    ``too_large`` reject anyway, read no further). ``members``: members of one archive
    (1,000,000). ``expanded_bytes``: the size a document may reach when a reader
    expands it (LaTeX macros and ``\\input``, a repository grouped into one document);
    null: ``execution.max_doc_bytes``. ``doc_seconds``: wall time a reader may spend
    parsing one document (30 s)."""

    file_bytes: int = 64 << 30
    member_bytes: int = 1 << 30
    members: int = 1_000_000
    expanded_bytes: int | None = None
    doc_seconds: float = 30.0

    def __post_init__(self) -> None:
        for key in ("file_bytes", "member_bytes", "members"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise SpecError(f"limits.{key} must be a positive integer, got {v!r}")
        v = self.expanded_bytes
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise SpecError(f"limits.expanded_bytes must be a positive integer or null, got {v!r}")
        v = self.doc_seconds
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or v == float("inf"):
            raise SpecError(f"limits.doc_seconds must be a positive number of seconds, got {v!r}")

    def expansion(self, max_doc_bytes: int) -> int:
        """Bytes an expanded document may reach."""
        return self.expanded_bytes if self.expanded_bytes is not None else max_doc_bytes


DEFAULT_LIMITS = InputLimits()


class Refused(FileCorrupt):
    """The input layer would not open a path (outside the inputs, not a regular file,
    over a budget). A :class:`FileCorrupt`, so a reader that does nothing about it
    turns it into the file's reject."""


@functools.lru_cache(maxsize=256)
def _real_root(root: str) -> str:
    return os.path.realpath(fs.local_path(root)) if fs.is_local(root) else root.rstrip("/")


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep) or root == os.sep


def roots_of(path: str, rel: str) -> tuple[str, ...]:
    """The root a file given without declared roots is confined to: the folder ``rel``
    is relative to (``path`` minus ``rel``), else the file's own folder."""
    if rel and rel != path and path.endswith(rel):
        head = path[: len(path) - len(rel)]
        if head.endswith(("/", os.sep)):
            return (head.rstrip("/" + os.sep) or os.sep,)
    return (fs.parent(path),)


class Input:
    """One path seen through the input layer: confined to ``roots``, read under
    ``limits``. ``rel`` names it in rejects (relative to the source root)."""

    __slots__ = ("path", "rel", "roots", "storage", "limits", "_dirs", "_real")

    def __init__(self, path: str, rel: str, roots: tuple[str, ...], storage: Any = None,
                 limits: InputLimits = DEFAULT_LIMITS, dirs: dict[str, str] | None = None) -> None:
        self.path, self.rel, self.roots, self.storage, self.limits = path, rel, roots, storage, limits
        self._dirs = dirs      # folder -> real path, shared by one reader's inputs (a split's files)
        self._real: str | None = None

    @classmethod
    def of(cls, f: Any, limits: InputLimits = DEFAULT_LIMITS, dirs: dict[str, str] | None = None) -> "Input":
        """The input layer's view of an :class:`~datapipe.readers.base.InputFile`;
        ``dirs``: a cache of folders' real paths, for the files of one split."""
        roots = getattr(f, "roots", ()) or roots_of(f.path, f.rel)
        return cls(f.path, f.rel, tuple(roots), f.storage, limits, dirs)

    def _real_path(self) -> str:
        """The local path with every link in it followed. The folder part comes from the
        reader's cache (one ``realpath`` per folder, not per file); a last component that
        is a link is followed in full. The open that follows is ``O_NOFOLLOW`` on it."""
        if self._real is None:
            local = fs.local_path(self.path)
            head, name = os.path.split(local)
            if self._dirs is None or name in ("", ".", "..") or not head:
                self._real = os.path.realpath(local)
            else:
                real_dir = self._dirs.get(head)
                if real_dir is None:
                    real_dir = os.path.realpath(head)
                    if len(self._dirs) < 4096:
                        self._dirs[head] = real_dir
                cand = os.path.join(real_dir, name)
                self._real = os.path.realpath(cand) if os.path.islink(cand) else cand
        return self._real

    def __repr__(self) -> str:
        return f"Input({self.path!r}, roots={self.roots!r})"

    # -- other paths under the same roots -------------------------------------------

    def at(self, path: str, rel: str | None = None) -> "Input":
        """Another path (a sibling, an include, a repository's ``.gitignore``) under the
        same roots and limits; checked when it is opened, like this one."""
        return Input(path, rel if rel is not None else path, self.roots, self.storage, self.limits, self._dirs)

    def sibling(self, name: str) -> "Input":
        """``name`` (``/``-separated, relative) beside this file."""
        rel_dir = posixpath.dirname(self.rel.replace(os.sep, "/"))
        return self.at(fs.join(fs.parent(self.path), *[p for p in name.split("/") if p]),
                       posixpath.normpath(posixpath.join(rel_dir, name)))

    # -- checks ----------------------------------------------------------------------

    def check(self) -> int | None:
        """Raise :class:`Refused` unless the path is a regular file inside the roots;
        its size when the check learned it (locally), else None. Opening checks again
        (on the open descriptor); this is for refusing early."""
        if not fs.is_local(self.path):
            if not self._key_inside():
                raise self._refuse_outside(self.path)
            return None
        real = self._confined()
        try:
            st = os.stat(real)
        except FileNotFoundError:
            raise self._missing() from None
        mode = st.st_mode
        if not stat_.S_ISREG(mode):
            raise Refused("not_regular_file", f"{self.rel} is {fs.kind_of(mode)}, not a regular file; not read")
        return st.st_size

    def is_file(self) -> bool:
        """Whether the path is a regular file inside the roots (no exception). A remote
        key is asked for too: :meth:`check` only confines it (its open finds it missing),
        and a key inside the roots is not yet an object there."""
        try:
            self.check()
            return fs.is_local(self.path) or fs.is_file(self.path, self.storage)
        except (Refused, OSError):
            return False

    def exists(self) -> bool:
        """Whether anything is at the path (metadata only: nothing is opened)."""
        try:
            return fs.exists(self.path, self.storage)
        except OSError:
            return False

    def list_dir(self) -> list[str]:
        """Names below this path when it is a folder inside the roots, else ``[]``."""
        if fs.is_local(self.path):
            real = os.path.realpath(fs.local_path(self.path))
            if not any(_inside(real, _real_root(r)) for r in self.roots):
                return []
        elif not self._key_inside():
            return []
        try:
            return fs.list_dir(self.path, self.storage)
        except OSError:
            return []

    def _key_inside(self) -> bool:
        parts = self.path.split("://", 1)[-1].split("/")
        if any(p in (".", "..") for p in parts[1:]):
            return False
        return any(self.path == r.rstrip("/") or self.path.startswith(r.rstrip("/") + "/")
                   for r in map(_real_root, self.roots))

    def _refuse_outside(self, real: str) -> Refused:
        return Refused("outside_inputs", f"{self.rel} resolves to {real}, outside the declared inputs "
                                         f"({', '.join(self.roots)}); not read")

    def _open_raw(self) -> BinaryIO:
        if not fs.is_local(self.path):
            if not self._key_inside():
                raise self._refuse_outside(self.path)
            return fs.open_input(self.path, self.storage)
        real = self._confined()
        try:
            return fs.open_regular(real)
        except fs.NotRegularFile as exc:
            raise Refused("not_regular_file", f"{self.rel} is {exc.kind}, not a regular file; not read") from None
        except FileNotFoundError:
            raise self._missing() from None

    def _confined(self) -> str:
        real = self._real_path()
        if not any(_inside(real, _real_root(r)) for r in self.roots):
            raise self._refuse_outside(real)
        return real

    def _missing(self) -> BaseException:
        local = fs.local_path(self.path)
        if os.path.islink(local):
            return Refused("dangling_link", f"{self.rel} is a link to {os.readlink(local)!r}, which does not exist")
        return FileNotFoundError(f"{self.path}: no such file")

    # -- reading ---------------------------------------------------------------------

    def open_raw(self) -> BinaryIO:
        """The stored bytes, seekable (a zip's directory, a Parquet footer, a WARC's
        member offsets); refused over ``file_bytes``."""
        fh = self._open_raw()
        size = _size(fh)
        if size is not None and size > self.limits.file_bytes:
            fh.close()
            raise Refused("too_large", f"{self.rel}: {size} bytes > limits.file_bytes ({self.limits.file_bytes})")
        return fh

    def arrow_source(self) -> Any:
        """What pyarrow's readers take (``pq.ParquetFile``, Arrow IPC), checked like
        :meth:`open_raw`: locally the file's real path (pyarrow reads it natively; a
        name pyarrow cannot encode: the open file), on a store an open random-access file
        (ranged reads: only the footer and the row groups asked for are fetched)."""
        fh = self.open_raw()
        if not fs.is_local(self.path):
            fh.close()
            return fs.arrow_input(self.path, self.storage)
        real = self._real_path()
        try:
            real.encode("utf-8")
        except UnicodeEncodeError:
            return fh
        fh.close()
        return real

    def compression(self) -> str | None:
        """``gzip``, ``zstd``, ``bz2``, ``xz``, None, or ``unsupported:<what>``: by the
        name's suffix, else the first bytes (read through the confined open)."""
        by_name = compression_of(self.path)
        if by_name is not None:
            return by_name
        try:
            with self._open_raw() as fh:
                head = fh.read(6)
        except (OSError, FileCorrupt):
            return None   # the real open reports it
        return compression_of(self.path, head=head)

    def open(self, *, compression: str | None | bool = True, limit: int | None = None) -> BinaryIO:
        """The content as a buffered stream, decompressed (``compression=True``: by name
        or magic bytes; a name: that one; ``False``/None: as stored), ending with
        ``read:too_large`` past ``limit`` (default ``file_bytes``) decompressed bytes and
        with ``read:truncated_*``/``corrupt_*`` when the stream's end or trailer is
        missing or wrong."""
        comp = self.compression() if compression is True else (compression or None)
        limit = self.limits.file_bytes if limit is None else limit
        fh = self.open_raw()
        try:
            stream = decompress(fh, comp)
        except BaseException:
            fh.close()
            raise
        if comp is None:
            return stream   # a plain file: its size was checked against the budget
        return _Bounded(stream, fh, limit, self.rel)  # type: ignore[return-value]

    def read(self, limit: int, *, compression: str | None | bool = False) -> bytes:
        """At most ``limit`` bytes of the content (as stored unless ``compression``)."""
        with self.open(compression=compression) as fh:
            return read_upto(fh, limit)


def _size(fh: Any) -> int | None:
    try:
        return os.fstat(fh.fileno()).st_size
    except (OSError, AttributeError, io.UnsupportedOperation):
        try:
            return getattr(fh, "raw", fh).size()   # pyarrow NativeFile
        except Exception:
            return None


class _Bounded(io.BufferedIOBase):
    """A decompressed stream that ends in ``read:too_large`` past ``limit`` bytes. It adds
    no buffer of its own (the decompressor has one): each call is the decompressor's,
    counted, and a call with no size asks for at most what the budget has left, so no
    single call can hold more than the budget."""

    def __init__(self, inner: Any, raw: Any, limit: int, rel: str) -> None:
        super().__init__()
        self._inner, self._raw, self._limit, self._rel, self._got = inner, raw, limit, rel, 0

    def _left(self, n: int | None) -> int:
        left = self._limit - self._got + 1   # one past the budget, so a breach is seen
        return left if n is None or n < 0 else min(n, left)

    def _count(self, n: int) -> None:
        self._got += n
        if self._got > self._limit:
            raise Refused("too_large", f"{self._rel}: decompresses past limits.file_bytes ({self._limit} bytes)")

    def readable(self) -> bool:
        return True

    def read(self, n: int | None = -1) -> bytes:
        data = self._inner.read(self._left(n))
        self._count(len(data))
        return data

    def read1(self, n: int = -1) -> bytes:
        data = self._inner.read1(self._left(n))
        self._count(len(data))
        return data

    def readline(self, limit: int | None = -1) -> bytes:
        line = self._inner.readline(self._left(limit))
        self._count(len(line))
        return line

    def readinto(self, buf: Any) -> int:  # type: ignore[override]
        view = memoryview(buf)[: self._left(len(buf))]
        n = self._inner.readinto(view) or 0
        self._count(n)
        return n

    def readinto1(self, buf: Any) -> int:  # type: ignore[override]
        view = memoryview(buf)[: self._left(len(buf))]
        n = (self._inner.readinto1 if hasattr(self._inner, "readinto1") else self._inner.readinto)(view) or 0
        self._count(n)
        return n

    def peek(self, n: int = 0) -> bytes:
        return self._inner.peek(n) if hasattr(self._inner, "peek") else b""

    def close(self) -> None:
        if not self.closed:
            try:
                self._inner.close()
            finally:
                self._raw.close()   # gzip/bz2/xz objects do not close the file they were given
        super().close()


# -- archives ---------------------------------------------------------------------------

class _Tail(io.RawIOBase):
    """A stream that remembers the last bytes read from it and how many, so that after
    ``tarfile`` stops we can tell an end-of-archive block from a cut."""

    KEEP = 256 << 10

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self._inner = inner
        self.pos = 0
        self.tail = bytearray()

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:  # type: ignore[override]
        n = self._inner.readinto(buf) or 0
        if n:
            self.tail += memoryview(buf)[:n]
            if len(self.tail) > 2 * self.KEEP:
                del self.tail[: len(self.tail) - self.KEEP]
            self.pos += n
        return n

    def block_at(self, offset: int, size: int = tarfile.BLOCKSIZE) -> bytes | None:
        start = len(self.tail) - (self.pos - offset)
        if start < 0:
            return None
        return bytes(self.tail[start:start + size])


#: bytes a GNU long-name or PAX header may hold (tarfile reads one into memory whole)
_TAR_META_BYTES = 1 << 20


class _BoundedTarInfo(tarfile.TarInfo):
    """A ``TarInfo`` that refuses a long-name or PAX header larger than
    :data:`_TAR_META_BYTES` before ``tarfile`` reads it into memory."""

    def _proc_gnulong(self, tarfile_):  # noqa: D401 (tarfile's hook)
        self._bounded()
        return super()._proc_gnulong(tarfile_)

    def _proc_pax(self, tarfile_):
        self._bounded()
        return super()._proc_pax(tarfile_)

    def _bounded(self) -> None:
        if self.size > _TAR_META_BYTES:
            raise FileCorrupt("corrupt_archive", f"a tar name/PAX header of {self.size} bytes "
                                                 f"(more than {_TAR_META_BYTES})")


def tar_members(stream: BinaryIO, *, rel: str, limits: InputLimits) -> Iterator[tuple[tarfile.TarInfo, Any]]:
    """``(member, reader)`` for each member of a tar read as a stream (``reader`` is
    None for what is not a regular file; read it before asking for the next member).

    ``stream`` is the decompressed tar (from :meth:`Input.open`), so the compression's
    own trailer is checked by the stream. Raises :class:`Refused`/:class:`FileCorrupt`:
    ``truncated`` when the archive ends before its end-of-archive block or inside a
    member, ``corrupt_archive`` for a header that does not parse, ``too_many_members``
    past ``limits.members``."""
    tail = _Tail(stream)
    n = 0
    try:
        with tarfile.open(fileobj=io.BufferedReader(tail, 1 << 16), mode="r|",
                          tarinfo=_BoundedTarInfo) as tar:
            for m in tar:
                n += 1
                if n > limits.members:
                    raise Refused("too_many_members", f"{rel}: more than limits.members ({limits.members}) members")
                if m.isfile():
                    if m.size > limits.member_bytes:
                        yield m, _Oversize(m.size, limits.member_bytes)
                    else:
                        yield m, _Member(tar.extractfile(m), rel, m.name)
                else:
                    yield m, None
            end = tar.offset
            # tarfile stops quietly at a short or unparseable header: look at the block
            # it stopped on. An end-of-archive block is 512 zero bytes.
            block = tail.block_at(end)
    except tarfile.ReadError as exc:
        msg = str(exc)
        if "unexpected end" in msg or "empty file" in msg or "truncated" in msg:
            raise FileCorrupt("truncated", f"{rel}: the tar ends inside a member or header ({msg})") from None
        raise FileCorrupt("corrupt_archive", f"{rel}: {msg}") from None
    except EOFError as exc:   # the compressed stream under the tar ends early
        raise FileCorrupt("truncated", f"{rel}: the compressed stream ends early ({exc})") from None
    except tarfile.TarError as exc:
        raise FileCorrupt("corrupt_archive", f"{rel}: {type(exc).__name__}: {exc}") from None
    if block is None:
        block = b""
    if len(block) < tarfile.BLOCKSIZE:
        raise FileCorrupt("truncated", f"{rel}: the tar ends after {end} bytes without its end-of-archive block")
    if block.count(0) != len(block):
        raise FileCorrupt("corrupt_archive", f"{rel}: unreadable tar header at byte {end}")
    # read the stream to its end, so the compression trailer (gzip CRC...) is checked
    while stream.read(1 << 20):
        pass


class _Member:
    """A tar member's content: a cut inside it is ``read:truncated`` naming the member,
    whoever reads it (``tarfile`` raises its own ``ReadError`` there)."""

    def __init__(self, fh: Any, rel: str, name: str) -> None:
        self._fh, self._where = fh, f"{rel}!{name}"

    def read(self, n: int = -1) -> bytes:
        try:
            return self._fh.read(n)
        except (tarfile.ReadError, EOFError) as exc:
            raise FileCorrupt("truncated", f"{self._where}: the archive ends inside this member ({exc})") from None

    def readinto(self, buf: Any) -> int:
        data = self.read(len(buf))
        buf[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._fh.close()


class _Oversize:
    """Stands in for a member larger than ``member_bytes``: reading it is refused."""

    def __init__(self, size: int, limit: int) -> None:
        self.size, self.limit = size, limit

    def read(self, n: int = -1) -> bytes:
        raise Refused("too_large", f"member of {self.size} bytes > limits.member_bytes ({self.limit})")


class MemberRefused(Exception):
    """One archive member cannot be read (encrypted, unsupported method, bad CRC); the
    archive goes on. ``reason`` is the rule name without ``read:``."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


def zip_members(fh: BinaryIO, *, rel: str, limits: InputLimits) -> tuple[zipfile.ZipFile, list[zipfile.ZipInfo]]:
    """The open zip and its file members (folders left out); a zip whose directory does
    not parse is ``corrupt_archive`` (a cut zip loses its directory: ``truncated``)."""
    try:
        z = zipfile.ZipFile(fh)
    except zipfile.BadZipFile as exc:
        raise FileCorrupt("corrupt_archive", f"{rel}: {exc}") from None
    except (EOFError, OSError, ValueError, NotImplementedError) as exc:
        raise FileCorrupt("corrupt_archive", f"{rel}: {type(exc).__name__}: {exc}") from None
    infos = [i for i in z.infolist() if not i.filename.endswith("/")]   # is_dir() fails on an empty name
    if len(infos) > limits.members:
        z.close()
        raise Refused("too_many_members", f"{rel}: {len(infos)} members > limits.members ({limits.members})")
    return z, infos


def read_zip_member(z: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, *, rel: str) -> bytes:
    """At most ``limit`` bytes of a member; the whole member is CRC-checked when it fits.
    Raises :class:`MemberRefused` for what only this member suffers from."""
    name = f"{rel}!{info.filename}"
    if info.flag_bits & 0x1:
        raise MemberRefused("encrypted", f"{name} is encrypted; not read")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        raise MemberRefused("unsupported_compression",
                            f"{name} uses zip compression method {info.compress_type}, which is not supported")
    try:
        with z.open(info) as m:
            return read_upto(m, limit)
    except zipfile.BadZipFile as exc:
        raise MemberRefused("corrupt_archive", f"{name}: {exc}") from None
    except (EOFError, OSError, ValueError, NotImplementedError, RuntimeError) as exc:
        raise MemberRefused("corrupt_archive", f"{name}: {type(exc).__name__}: {exc}") from None
    except Exception as exc:   # zlib/lzma/bz2 errors raised on bad member data
        if type(exc).__module__ in ("zlib", "_lzma", "lzma", "_bz2"):
            raise MemberRefused("corrupt_archive", f"{name}: {type(exc).__name__}: {exc}") from None
        raise


# -- time -------------------------------------------------------------------------------

@contextlib.contextmanager
def time_budget(seconds: float, what: str) -> Iterator[None]:
    """Run the block under a wall-time budget; past it, :class:`Refused` ``timeout``
    naming ``what`` (a parser that went super-linear on one document)."""
    try:
        with deadline(seconds):
            yield
    except DocumentTimeout:
        raise Refused("timeout", f"{what}: parsing took longer than limits.doc_seconds ({seconds} s)") from None
