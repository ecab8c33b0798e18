"""One filesystem layer for every user path: local paths and URIs (``s3://``, ``gs://``,
``hdfs://``, any scheme fsspec serves) behind the same few functions.

Every path a user gives (sources, ``output``, work folders, dedup indexes, shards,
manifests, mixes, models) goes through here; nothing else in datapipe calls ``os.*`` or
``open()`` on a user path. A path without ``scheme://`` (or with ``file://``) is local and
behaves exactly as a plain path always did (symlinks, relative paths, atomic rename).

Backends: ``pyarrow.fs`` first (S3, GCS, HDFS, local); any other scheme through fsspec,
wrapped as a ``pyarrow`` filesystem. S3 is configured the way every AWS tool is
(:class:`S3Options` documents the precedence); the spec's ``storage:`` section
(:class:`StorageOptions`) overrides the environment. Options hold no secrets and are
small frozen dataclasses, so they travel to Ray workers inside each task's arguments and
each worker builds its own filesystem (cached per process).

Object stores have no rename: :func:`write_bytes` is atomic there because one PUT is;
locally it writes a temporary file and renames it. Folder commits live in
:mod:`datapipe.commit`.
"""

from __future__ import annotations

import configparser
import errno
import contextlib
import dataclasses
import fnmatch
import functools
import hashlib
import io
import logging
import os
import re
import shutil
import stat as stat_
import tempfile
import uuid
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterator, Mapping

import pyarrow.fs as pafs

from datapipe.errors import SpecError

log = logging.getLogger(__name__)

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_MAGIC = re.compile(r"[*?\[]")
_BUFFER = 1 << 20
_PYARROW_SCHEMES = {"s3", "s3a", "gs", "gcs", "hdfs", "viewfs"}


@dataclass(kw_only=True, frozen=True)
class S3Options:
    """How S3 (and S3-compatible stores such as MinIO) are reached.

    Precedence per setting: this section of the spec, then the environment
    (``AWS_ENDPOINT_URL_S3`` > ``AWS_ENDPOINT_URL``; ``AWS_REGION`` >
    ``AWS_DEFAULT_REGION``; ``AWS_PROFILE``), then the profile's entries in
    ``~/.aws/credentials`` / ``~/.aws/config``, then the AWS SDK's own defaults.
    Credentials come only from the environment (``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``), a profile, or the instance role:
    never from the spec, so they never reach a manifest or a hash.
    """

    endpoint_url: str | None = None
    region: str | None = None
    profile: str | None = None
    anonymous: bool = False

    def __post_init__(self) -> None:
        if self.endpoint_url is not None and not re.match(r"^https?://[^/]+/?$", str(self.endpoint_url)):
            raise SpecError(f"storage.s3.endpoint_url must look like http://host:port or https://host, "
                            f"got {self.endpoint_url!r}")
        for name in ("region", "profile"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise SpecError(f"storage.s3.{name} must be a non-empty string, got {value!r}")
        if not isinstance(self.anonymous, bool):
            raise SpecError(f"storage.s3.anonymous must be true or false, got {self.anonymous!r}")


@dataclass(kw_only=True, frozen=True)
class StorageOptions:
    """The spec's ``storage:`` section. ``cache_dir``: where remote files that a library
    needs as local files (models, shards for the loader) are cached by content
    (default ``$DATAPIPE_CACHE`` or ``~/.cache/datapipe``)."""

    s3: S3Options = field(default_factory=S3Options)
    cache_dir: str | None = None
    # AWS_* variables of the process that loaded the spec, so that Ray workers started
    # elsewhere reach the store the same way. Never printed, hashed or written.
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def capture(self) -> "StorageOptions":
        """A copy carrying this process's ``AWS_*`` variables (for workers)."""
        env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_")))
        return dataclasses.replace(self, env=env)


DEFAULT = StorageOptions()


# -- URIs ----------------------------------------------------------------------------

def scheme(uri: str) -> str | None:
    """The URI scheme (lower case), or None for a local path (``file://`` counts as local)."""
    m = _SCHEME.match(uri)
    if m is None:
        return None
    s = m.group(1).lower()
    return None if s == "file" else s


def is_local(uri: str) -> bool:
    return scheme(uri) is None


def local_path(uri: str) -> str:
    """A local path from a local path or ``file://`` URI."""
    return uri[len("file://"):] if uri.lower().startswith("file://") else uri


def join(base: str, *parts: str) -> str:
    if is_local(base):
        return os.path.join(local_path(base), *parts)
    out = base.rstrip("/")
    for p in parts:
        out = out + "/" + p.strip("/")
    return out


def parent(uri: str) -> str:
    if is_local(uri):
        return os.path.dirname(os.path.normpath(local_path(uri)))
    head, _, _ = uri.rstrip("/").rpartition("/")
    return head


def basename(uri: str) -> str:
    if is_local(uri):
        return os.path.basename(os.path.normpath(local_path(uri)))
    return uri.rstrip("/").rpartition("/")[2]


def absolute(uri: str, base: str) -> str:
    """``uri`` made absolute: URIs as they are, relative local paths against ``base``."""
    if not is_local(uri):
        return uri
    p = local_path(uri)
    return os.path.normpath(p if os.path.isabs(p) else os.path.join(local_path(base), p))


def relative(uri: str, root: str) -> str:
    """``uri``'s path below ``root`` (``/``-separated for URIs)."""
    if is_local(uri):
        return os.path.relpath(local_path(uri), local_path(root))
    return uri[len(root.rstrip("/")) + 1:] if uri.startswith(root.rstrip("/") + "/") else basename(uri)


def is_inside(child: str, folder: str) -> bool:
    """Whether ``child`` is ``folder`` or below it (local paths by their real path)."""
    if scheme(child) != scheme(folder):
        return False
    if is_local(child):
        c, f = os.path.realpath(local_path(child)), os.path.realpath(local_path(folder))
        return c == f or c.startswith(f.rstrip(os.sep) + os.sep)
    c, f = child.rstrip("/"), folder.rstrip("/")
    return c == f or c.startswith(f + "/")


def has_magic(pattern: str) -> bool:
    return _MAGIC.search(pattern) is not None


# -- backends ------------------------------------------------------------------------

def check_scheme(uri: str, *, where: str) -> None:
    """Raise :class:`SpecError` naming ``where`` when no installed library serves ``uri``."""
    s = scheme(uri)
    if s is None:
        return
    if s in ("s3", "s3a"):
        if not hasattr(pafs, "S3FileSystem"):
            raise SpecError(f"{where}: {uri!r} needs S3 support, but this pyarrow was built without it; "
                            "install a pyarrow wheel from PyPI (pip install 'pyarrow>=15')")
        return
    if s in ("gs", "gcs") and hasattr(pafs, "GcsFileSystem"):
        return
    if s in ("hdfs", "viewfs") and hasattr(pafs, "HadoopFileSystem"):
        return
    try:
        import fsspec

        fsspec.get_filesystem_class(s)
    except (ImportError, ValueError) as exc:
        raise SpecError(f"{where}: no filesystem library serves {s}:// ({uri!r}): {exc}. Use a local path, "
                        "s3://, gs:// or hdfs://, or install the fsspec implementation for that scheme") from None


def check_output(uri: str, *, where: str) -> None:
    """:func:`check_scheme`, and an output on an object store must be a prefix inside a
    bucket (its lock and staging folders are siblings of it)."""
    check_scheme(uri, where=where)
    if not is_local(uri) and not _bucket_key(uri)[1]:
        raise SpecError(f"{where}: {uri!r} is a whole bucket; name a prefix inside it, e.g. {uri.rstrip('/')}/run1")


def _bucket_key(uri: str) -> tuple[str, str]:
    rest = uri.split("://", 1)[1]
    bucket, _, key = rest.partition("/")
    return bucket, key.strip("/")


def _profile_settings(profile: str) -> dict[str, str]:
    """Entries of ``profile`` in the AWS shared credentials and config files."""
    out: dict[str, str] = {}
    files = [(os.environ.get("AWS_CONFIG_FILE", os.path.expanduser("~/.aws/config")),
              "default" if profile == "default" else f"profile {profile}"),
             (os.environ.get("AWS_SHARED_CREDENTIALS_FILE", os.path.expanduser("~/.aws/credentials")), profile)]
    for path, section in files:
        cp = configparser.ConfigParser()
        try:
            cp.read(path)
        except configparser.Error as exc:
            raise SpecError(f"{path}: cannot parse the AWS profile file: {exc}") from None
        if cp.has_section(section):
            out.update(cp.items(section))
    return out


def s3_settings(opts: S3Options, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Keyword arguments for ``pyarrow.fs.S3FileSystem`` from ``opts`` and the environment
    ``env`` (default ``os.environ``).

    pyarrow does not read ``AWS_ENDPOINT_URL*`` itself, so the endpoint is passed through.
    """
    env = os.environ if env is None else env
    profile = opts.profile or env.get("AWS_PROFILE")
    prof = _profile_settings(profile) if profile else {}
    kw: dict[str, Any] = {}
    if opts.anonymous:
        kw["anonymous"] = True
    else:
        key = env.get("AWS_ACCESS_KEY_ID") or prof.get("aws_access_key_id")
        secret = env.get("AWS_SECRET_ACCESS_KEY") or prof.get("aws_secret_access_key")
        if key and secret:
            kw["access_key"], kw["secret_key"] = key, secret
            token = env.get("AWS_SESSION_TOKEN") or prof.get("aws_session_token")
            if token:
                kw["session_token"] = token
    region = opts.region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or prof.get("region")
    if region:
        kw["region"] = region
    endpoint = (opts.endpoint_url or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
                or prof.get("endpoint_url"))
    if endpoint:
        m = re.match(r"^(https?)://([^/]+)/?$", endpoint)
        if m is None:
            raise SpecError(f"S3 endpoint {endpoint!r} must look like http://host:port or https://host")
        kw["scheme"], kw["endpoint_override"] = m.group(1), m.group(2)
        kw.setdefault("region", "us-east-1")  # S3-compatible stores: no region lookup
    return kw


@functools.lru_cache(maxsize=32)
def _filesystem(s: str | None, storage: StorageOptions, netloc: str) -> pafs.FileSystem:
    """One filesystem per (scheme, options) per process; hold no secrets in the key."""
    if s is None:
        return pafs.LocalFileSystem()
    if s in ("s3", "s3a"):
        return pafs.S3FileSystem(**s3_settings(storage.s3, dict(storage.env) if storage.env else None))
    if s in ("gs", "gcs") and hasattr(pafs, "GcsFileSystem"):
        return pafs.GcsFileSystem()
    if s in ("hdfs", "viewfs"):
        return pafs.FileSystem.from_uri(f"{s}://{netloc}")[0]
    import fsspec

    return pafs.PyFileSystem(pafs.FSSpecHandler(fsspec.filesystem(s)))


def resolve(uri: str, storage: StorageOptions | None = None) -> tuple[pafs.FileSystem, str]:
    """``(filesystem, path inside it)`` for a local path or URI."""
    s = scheme(uri)
    if s is None:
        return _filesystem(None, DEFAULT, ""), os.path.abspath(local_path(uri))
    check_scheme(uri, where="path")
    rest = uri.split("://", 1)[1].rstrip("/")
    netloc = rest.split("/", 1)[0] if s in ("hdfs", "viewfs") else ""
    path = rest.split("/", 1)[1] if netloc else rest
    if s not in _PYARROW_SCHEMES:
        path = uri.rstrip("/")  # fsspec handlers take the full URI
    return _filesystem(s, storage or DEFAULT, netloc), path


def _uri(template: str, path: str) -> str:
    """The URI of ``path`` (a path inside ``template``'s filesystem)."""
    s = scheme(template)
    if s is None:
        return path
    if s not in _PYARROW_SCHEMES:
        return path
    prefix = template.split("://", 1)[0]
    if s in ("hdfs", "viewfs"):
        netloc = template.split("://", 1)[1].split("/", 1)[0]
        return f"{prefix}://{netloc}/{path.lstrip('/')}"
    return f"{prefix}://{path}"


# -- queries -------------------------------------------------------------------------

@dataclass(frozen=True)
class FileStat:
    size: int
    mtime_ns: int | None   # None where the store has none


def _info(uri: str, storage: StorageOptions | None) -> pafs.FileInfo:
    fs, path = resolve(uri, storage)
    return fs.get_file_info(path)


def exists(uri: str, storage: StorageOptions | None = None) -> bool:
    if is_local(uri):
        return os.path.exists(local_path(uri))
    return _info(uri, storage).type != pafs.FileType.NotFound


def is_file(uri: str, storage: StorageOptions | None = None) -> bool:
    if is_local(uri):
        return os.path.isfile(local_path(uri))
    return _info(uri, storage).type == pafs.FileType.File


def is_dir(uri: str, storage: StorageOptions | None = None) -> bool:
    """A local folder, or a URI prefix with at least one object below it."""
    if is_local(uri):
        return os.path.isdir(local_path(uri))
    fs, path = resolve(uri, storage)
    if fs.get_file_info(path).type == pafs.FileType.Directory:
        return bool(fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)))
    return False


def stat(uri: str, storage: StorageOptions | None = None) -> FileStat:
    """Size and modification time; raises ``FileNotFoundError`` naming ``uri``."""
    if is_local(uri):
        st = os.stat(local_path(uri))
        return FileStat(st.st_size, st.st_mtime_ns)
    info = _info(uri, storage)
    if info.type != pafs.FileType.File:
        raise FileNotFoundError(f"{uri}: no such object")
    return FileStat(int(info.size), info.mtime_ns)


def list_files(uri: str, storage: StorageOptions | None = None, *, max_depth: int | None = None,
               entries: bool = False) -> list[str]:
    """Every file below folder ``uri`` (at most ``max_depth`` folders down), sorted; local
    symlinks followed without looping, each real file once (first path in sorted order).

    ``entries=True`` (how a job's inputs are listed): locally, also every entry that is
    not a readable file (a FIFO, socket, device, dangling link) and every link to a
    folder outside ``uri``, which is listed and not entered, so the input layer can
    refuse each by name (:mod:`datapipe.readers.inputs`); nothing outside ``uri`` is walked."""
    if is_local(uri):
        return _walk_local(local_path(uri), max_depth, entries=entries)
    fs, path = resolve(uri, storage)
    # pyarrow's selector has no depth limit: one level, or everything (callers filter)
    sel = pafs.FileSelector(path, recursive=max_depth is None or max_depth > 0, allow_not_found=True)
    infos = fs.get_file_info(sel)
    return sorted(_uri(uri, i.path) for i in infos if i.type == pafs.FileType.File)


def list_dir(uri: str, storage: StorageOptions | None = None) -> list[str]:
    """Names directly below folder ``uri`` (files and folders), sorted; [] if absent."""
    if is_local(uri):
        p = local_path(uri)
        return sorted(os.listdir(p)) if os.path.isdir(p) else []
    fs, path = resolve(uri, storage)
    infos = fs.get_file_info(pafs.FileSelector(path, recursive=False, allow_not_found=True))
    return sorted(i.base_name for i in infos)


def _under(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _walk_local(root: str, max_depth: int | None = None, *, entries: bool = False) -> list[str]:
    seen_dirs: set[str] = set()
    seen_files: set[str] = set()
    out = []
    odd = []
    root_real = os.path.realpath(root)
    base = root.rstrip(os.sep).count(os.sep)
    for folder, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen_dirs:
            dirs[:] = []
            continue
        seen_dirs.add(real)
        keep = []
        for d in sorted(dirs):
            p = os.path.join(folder, d)
            real_d = os.path.realpath(p)
            if entries and not _under(real_d, root_real):
                odd.append(p)   # a link out of the inputs: named, never walked
            elif real_d not in seen_dirs:
                keep.append(d)
        dirs[:] = keep
        if max_depth is not None and folder.rstrip(os.sep).count(os.sep) - base >= max_depth:
            dirs[:] = []
        for name in sorted(files):
            p = os.path.join(folder, name)
            if os.path.isfile(p):
                out.append(p)
            elif entries:
                odd.append(p)
    result = []
    for p in sorted(out):
        real = os.path.realpath(p)
        if real not in seen_files:
            seen_files.add(real)
            result.append(p)
    return sorted(result + odd)


def glob_root(pattern: str) -> str:
    """The folder a pattern is anchored at: the part before the first wildcard segment."""
    sep = os.sep if is_local(pattern) else "/"
    head = ""
    if not is_local(pattern):
        head, pattern = pattern.split("://", 1)
        head += "://"
    parts = pattern.split(sep)
    fixed = []
    for part in parts:
        if has_magic(part):
            break
        fixed.append(part)
    root = sep.join(fixed)
    return head + root if root else (head or ".")


def _segment_regex(seg: str) -> str:
    rx = fnmatch.translate(seg)[4:-3]   # strip (?s: ... )\Z
    if seg.startswith(("*", "?", "[")):
        rx = r"(?!\.)" + rx   # like glob: wildcards do not match hidden names
    return rx


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    parts = [p for p in pattern.split("/") if p != ""]
    rx = ""
    for i, seg in enumerate(parts):
        last = i == len(parts) - 1
        if seg == "**":
            rx += r"(?:[^/.][^/]*/)*" if not last else r"(?:[^/.][^/]*/)*[^/.][^/]*"
        else:
            rx += _segment_regex(seg).replace(".*", "[^/]*") + ("" if last else "/")
    return re.compile(rx + r"\Z", re.S)


def glob(pattern: str, storage: StorageOptions | None = None, *, entries: bool = False) -> list[str]:
    """Files matching ``pattern`` (``*``, ``?``, ``[..]``; ``**`` = any depth), sorted.

    Locally, symlinked folders are followed once (loops are safe) and a file reached
    by several paths is listed once. Folders never match."""
    root = glob_root(pattern)
    sep = os.sep if is_local(pattern) else "/"
    rel_pattern = pattern[len(root):].lstrip(sep) if root != "." else pattern
    if is_local(pattern):
        rel_pattern = rel_pattern.replace(os.sep, "/")
    rx = _pattern_regex(rel_pattern)
    if (is_local(root) and not os.path.isdir(local_path(root))) or (not is_local(root) and not is_dir(root, storage)):
        return []
    segments = [p for p in rel_pattern.split("/") if p]
    depth = None if "**" in segments else len(segments) - 1
    out = []
    for f in list_files(root, storage, max_depth=depth, entries=entries):
        rel = relative(f, root)
        if is_local(root):
            rel = rel.replace(os.sep, "/")
        if rx.match(rel):
            out.append(f)
    return out


def expand(pattern: str, storage: StorageOptions | None = None, *, entries: bool = False) -> list[str]:
    """The files one input names, sorted: a glob's matches (``**`` = any depth), every
    file below a folder, or the file itself; ``[]`` when it names nothing. How a job's
    ``paths`` and the model trainers' inputs are both expanded; ``entries``: see
    :func:`list_files`."""
    if has_magic(pattern):
        return glob(pattern, storage, entries=entries)
    if is_dir(pattern, storage):
        return list_files(pattern, storage, entries=entries)
    if is_file(pattern, storage):
        return [pattern]
    if entries and is_local(pattern) and os.path.lexists(local_path(pattern)):
        return [pattern]   # a FIFO or a dangling link named directly: refused by name when read
    return []


def real_key(uri: str) -> str:
    """A key naming the file itself (the real path locally), for de-duplication."""
    return os.path.realpath(local_path(uri)) if is_local(uri) else uri


# -- reading -------------------------------------------------------------------------

def open_input(uri: str, storage: StorageOptions | None = None) -> BinaryIO:
    """A buffered, seekable binary stream (remote reads are ranged, not whole-file)."""
    if is_local(uri):
        return open(local_path(uri), "rb", buffering=_BUFFER)
    fs, path = resolve(uri, storage)
    return io.BufferedReader(fs.open_input_file(path), buffer_size=_BUFFER)  # type: ignore[return-value]


class NotRegularFile(OSError):
    """A local path names a FIFO, device, socket or folder, not a regular file."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"{path} is {kind}, not a regular file")
        self.kind = kind


def kind_of(mode: int) -> str:
    """What a file mode names, for messages: ``a FIFO``, ``a socket``, ``a folder``..."""
    return _kind(mode)


def _kind(mode: int) -> str:
    for test, kind in ((stat_.S_ISFIFO, "a FIFO"), (stat_.S_ISCHR, "a character device"),
                       (stat_.S_ISBLK, "a block device"), (stat_.S_ISSOCK, "a socket"),
                       (stat_.S_ISDIR, "a folder"), (stat_.S_ISLNK, "a symlink")):
        if test(mode):
            return kind
    return "a special file"


def open_regular(path: str) -> BinaryIO:
    """A local regular file opened for reading, never anything else: the last component
    is not followed if it is a link (``O_NOFOLLOW``), and a FIFO or device is opened
    non-blocking, seen by ``fstat`` and refused (:class:`NotRegularFile`) before a byte
    is read, so it cannot hang the caller. The input layer's primitive
    (:mod:`datapipe.readers.inputs`)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:   # the last component became a link
            raise NotRegularFile(path, "a symlink") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat_.S_ISREG(mode):
            raise NotRegularFile(path, _kind(mode))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=_BUFFER)   # type: ignore[return-value]
    except BaseException:
        os.close(fd)
        raise


def arrow_input(uri: str, storage: StorageOptions | None = None) -> Any:
    """What pyarrow readers (``pq.ParquetFile``) take: the local path as it is, or an open
    random-access file on the store (ranged reads: only the footer and the row groups
    asked for are fetched)."""
    if is_local(uri):
        return local_path(uri)
    fs, path = resolve(uri, storage)
    return fs.open_input_file(path)


def read_bytes(uri: str, storage: StorageOptions | None = None) -> bytes:
    with open_input(uri, storage) as fh:
        return fh.read()


def read_text(uri: str, storage: StorageOptions | None = None) -> str:
    return read_bytes(uri, storage).decode("utf-8")


def sha256(uri: str, storage: StorageOptions | None = None) -> str:
    h = hashlib.sha256()
    with open_input(uri, storage) as fh:
        for chunk in iter(lambda: fh.read(_BUFFER), b""):
            h.update(chunk)
    return h.hexdigest()


# -- writing -------------------------------------------------------------------------

def makedirs(uri: str, storage: StorageOptions | None = None) -> None:
    """Create a local folder (and parents); a no-op on object stores (no folders)."""
    if is_local(uri):
        os.makedirs(local_path(uri), exist_ok=True)


class AtomicFile:
    """One file written whole or not at all: readers see the old content or the new,
    never a part, and a failed write leaves nothing behind.

    Locally: a temporary file ``.<name>.<random>.tmp`` beside the target, created with
    mode ``0666 & ~umask`` (what ``open()`` gives; 0644 under umask 022, never
    ``mkstemp``'s 0600, so another account can read a committed output), fsynced, then
    renamed onto the target. On an object store: one upload under the final name (an
    object appears whole when its upload completes); a failed one is deleted.

    Use as a context manager (commits on success, aborts on an exception) or call
    :meth:`commit`/:meth:`abort`. ``write`` errors name the target path.

    The one atomic write of datapipe: every file written whole (outputs, artifacts,
    manifests, shards, checkpoint markers, caches, a mix file) goes through it, so the
    fsync, the file mode and the clean-up after a failure are decided here once.
    ``tmp`` is the local temporary file (None on an object store): after :meth:`flush`
    a caller may read it back by path before committing (the shard writer verifies a
    shard before it gets its name), or :meth:`abort` instead (a re-run that found the
    same bytes already under the name)."""

    def __init__(self, uri: str, storage: StorageOptions | None = None) -> None:
        self.uri, self.storage = uri, storage
        if is_local(uri):
            path = local_path(uri)
            folder, name = os.path.split(os.path.abspath(path))
            os.makedirs(folder, exist_ok=True)
            self.tmp: str | None = os.path.join(folder, f".{name}.{uuid.uuid4().hex[:12]}.tmp")
            fd = self._guard(lambda: os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            self._fh: Any = os.fdopen(fd, "wb", buffering=_BUFFER)
        else:
            self.tmp = None
            fsys, path = resolve(uri, storage)
            self._fh = fsys.open_output_stream(path, compression=None)
        self.closed = False

    def _guard(self, fn):
        try:
            return fn()
        except OSError as exc:
            if exc.filename is None and exc.errno is not None:
                raise OSError(exc.errno, exc.strerror or str(exc), self.uri) from exc
            raise

    # the file-object protocol pyarrow and zstandard writers need
    def write(self, data) -> int:
        try:
            return self._guard(lambda: self._fh.write(data))
        except BaseException:
            self.abort()
            raise

    def flush(self) -> None:
        self._guard(self._fh.flush)

    def tell(self) -> int:
        return self._fh.tell()

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readable(self) -> bool:
        return False

    def close(self) -> None:
        """Closing the stream commits it (pyarrow writers close their sink when done)."""
        self.commit()

    def commit(self) -> None:
        if self.closed:
            return
        try:
            if self.tmp is not None:
                self._guard(self._fh.flush)
                self._guard(lambda: os.fsync(self._fh.fileno()))
                self._fh.close()
                self._guard(lambda: os.replace(self.tmp, local_path(self.uri)))
            else:
                self._guard(self._fh.close)
        except BaseException:
            self.abort()
            raise
        self.closed = True

    def abort(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._fh.close()
        except Exception:  # noqa: BLE001 - the write already failed; the cause is raised by the caller
            pass
        if self.tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.tmp)
        else:
            with contextlib.suppress(OSError):
                delete_file(self.uri, self.storage)

    def __enter__(self) -> "AtomicFile":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def write_bytes(uri: str, data: bytes, storage: StorageOptions | None = None) -> None:
    """Write a whole file atomically (:class:`AtomicFile`)."""
    with AtomicFile(uri, storage) as out:
        out.write(data)


def fsync_dir(uri: str) -> None:
    """Make the renames done in local folder ``uri`` durable (a crash after it keeps
    them); a no-op on object stores and where the platform cannot fsync a folder."""
    if not is_local(uri):
        return
    try:
        fd = os.open(local_path(uri), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def open_stream(uri: str, *, append: bool = True, encoding: str | None = "utf-8") -> Any:
    """A local file written as it goes, not whole: a log or metrics stream a user
    watches grow, a subprocess's output (given as its ``stdout``), a private working
    file fed line by line. Appended to (``append``) or started empty, its folder
    created; text with ``encoding``, binary when it is None. Not atomic (a reader may
    see a partial last line; use :class:`AtomicFile` for a file that must appear whole)
    and local only: an object store has no append, so a URI raises ``ValueError``."""
    if not is_local(uri):
        raise ValueError(f"{uri}: a file written as it goes must be a local path (object stores cannot "
                         "append); write it locally and upload it when done")
    path = local_path(uri)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    mode = ("a" if append else "w") + ("" if encoding else "b")
    return open(path, mode, encoding=encoding)


def move_into_place(src: str, uri: str, storage: StorageOptions | None = None) -> None:
    """Make the finished local file ``src`` (one a library or a subprocess wrote by path:
    a fastText or KenLM model) the file ``uri``, whole or not at all, as
    :class:`AtomicFile` does for bytes written through it: locally fsynced and renamed
    onto ``uri`` (``src`` must be on the same filesystem, best beside it); on an object
    store uploaded as one object, then ``src`` removed."""
    if is_local(uri):
        fd = os.open(src, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(src, local_path(uri))
        return
    upload_file(src, uri, storage)
    os.unlink(src)


@contextlib.contextmanager
def lock(uri: str) -> Iterator[None]:
    """Hold an exclusive lock on local file ``uri`` (created if absent) for the block:
    processes sharing a local file (a cache several trainers update) take turns.
    Advisory (``flock``); local only (``ValueError`` for a URI)."""
    import fcntl

    if not is_local(uri):
        raise ValueError(f"{uri}: a lock file must be a local path")
    path = local_path(uri)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def create_exclusive(uri: str, data: bytes, storage: StorageOptions | None = None) -> bool:
    """Create ``uri`` with ``data`` unless it exists (False then). Atomic locally
    (``O_EXCL``); best effort on object stores (no conditional PUT through pyarrow)."""
    if is_local(uri):
        path = local_path(uri)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return True
    if exists(uri, storage):
        return False
    write_bytes(uri, data, storage)
    return True


def replace_dir(src: str, dst: str, *, aside: str) -> None:
    """Local folders only: make folder ``src`` the folder ``dst`` (renamed; an existing
    ``dst`` is first renamed to ``aside`` and then deleted). Object stores have no
    rename: :mod:`datapipe.commit` publishes there by copying."""
    assert is_local(src) and is_local(dst), "replace_dir is for local folders"
    out, staging = local_path(dst), local_path(src)
    trash = None
    if os.path.lexists(out):
        trash = local_path(aside)
        os.rename(out, trash)
    os.rename(staging, out)
    if trash is not None:
        delete_tree(trash)


def upload_file(local: str, uri: str, storage: StorageOptions | None = None) -> None:
    """Copy local file ``local`` to ``uri`` atomically, streamed in 1 MiB chunks (never
    the whole file in memory)."""
    with open(local, "rb") as src, AtomicFile(uri, storage) as out:
        for chunk in iter(lambda: src.read(_BUFFER), b""):
            out.write(chunk)


def write_text(uri: str, text: str, storage: StorageOptions | None = None) -> None:
    write_bytes(uri, text.encode("utf-8"), storage)


def copy_file(src: str, dst: str, storage: StorageOptions | None = None) -> None:
    """Copy one file; server-side within one object store."""
    if scheme(src) == scheme(dst) and not is_local(src):
        fs, s = resolve(src, storage)
        _, d = resolve(dst, storage)
        fs.copy_file(s, d)
        return
    with open_input(src, storage) as fh, AtomicFile(dst, storage) as out:
        for chunk in iter(lambda: fh.read(_BUFFER), b""):
            out.write(chunk)


def upload_tree(local_dir: str, uri: str, storage: StorageOptions | None = None) -> list[str]:
    """Copy every file below local folder ``local_dir`` to ``uri`` (same relative paths)."""
    rels = []
    for f in _walk_local(local_dir):
        rel = os.path.relpath(f, local_dir).replace(os.sep, "/")
        upload_file(f, join(uri, rel), storage)
        rels.append(rel)
    return rels


def delete_file(uri: str, storage: StorageOptions | None = None) -> None:
    """Delete one file; absent is fine."""
    if is_local(uri):
        try:
            os.unlink(local_path(uri))
        except FileNotFoundError:
            pass
        return
    fs, path = resolve(uri, storage)
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        pass


def delete(uri: str, storage: StorageOptions | None = None) -> None:
    """Delete a file, or a folder / prefix and everything below it; absent is fine."""
    if is_file(uri, storage):
        delete_file(uri, storage)
    else:
        delete_tree(uri, storage)


def delete_tree(uri: str, storage: StorageOptions | None = None) -> None:
    """Delete a folder / every object under a prefix; absent is fine."""
    if is_local(uri):
        shutil.rmtree(local_path(uri), ignore_errors=True)
        return
    fs, path = resolve(uri, storage)
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        return
    fs.delete_dir(path)


# -- local copies for libraries that need files --------------------------------------

def cache_dir(storage: StorageOptions | None = None) -> str:
    d = (storage or DEFAULT).cache_dir or os.environ.get("DATAPIPE_CACHE") or os.path.expanduser("~/.cache/datapipe")
    return os.path.join(d, "objects")


def local_copy(uri: str, storage: StorageOptions | None = None, *, sha256_hex: str | None = None) -> str:
    """A local file with ``uri``'s content: local paths as they are; remote objects
    downloaded once into the cache, keyed by content (``sha256_hex`` when the caller
    knows it, else the object's size and mtime), verified, and shared between runs."""
    if is_local(uri):
        return local_path(uri)
    st = stat(uri, storage)
    key = sha256_hex or hashlib.sha256(f"{uri}\0{st.size}\0{st.mtime_ns}".encode()).hexdigest()
    folder = os.path.join(cache_dir(storage), key[:2])
    dest = os.path.join(folder, key + "-" + basename(uri))
    if os.path.isfile(dest) and os.path.getsize(dest) == st.size:
        return dest
    h = hashlib.sha256()
    with open_input(uri, storage) as src, AtomicFile(dest) as out:
        for chunk in iter(lambda: src.read(_BUFFER), b""):
            h.update(chunk)
            out.write(chunk)
        if sha256_hex is not None and h.hexdigest() != sha256_hex:
            raise OSError(f"{uri}: content sha256 {h.hexdigest()} != expected {sha256_hex}")
    log.info("cached %s -> %s", uri, dest)
    return dest


def local_tree(uri: str, storage: StorageOptions | None = None) -> str:
    """A local folder with the files below ``uri``: local paths as they are; a remote
    folder downloaded once into the cache, keyed by one listing (every object's path,
    size and mtime), so a warm open costs one LIST request."""
    if is_local(uri):
        return local_path(uri)
    fs, path = resolve(uri, storage)
    infos = sorted((i for i in fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True))
                    if i.type == pafs.FileType.File), key=lambda i: i.path)
    if not infos:
        raise FileNotFoundError(f"{uri}: no objects under this prefix")
    listing = "\0".join(f"{_uri(uri, i.path)}:{i.size}:{i.mtime_ns}" for i in infos)
    dest = os.path.join(cache_dir(storage), "trees", hashlib.sha256(listing.encode()).hexdigest())
    if os.path.isdir(dest):
        return dest
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tree-", dir=os.path.dirname(dest))
    try:
        for i in infos:
            target = os.path.join(tmp, relative(_uri(uri, i.path), uri))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with fs.open_input_stream(i.path) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out, _BUFFER)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("cached %s -> %s", uri, dest)
    return dest


def storage_from_mapping(raw: Mapping[str, Any] | None, *, where: str) -> StorageOptions:
    """Build :class:`StorageOptions` from a spec's ``storage:`` mapping; secrets refused."""
    from datapipe.config import build

    if raw is None:
        return DEFAULT
    if not isinstance(raw, Mapping):
        raise SpecError(f"{where}: 'storage' must be a mapping like {{s3: {{endpoint_url: ..., region: ...}}}}")
    unknown = sorted(set(raw) - {"s3", "cache_dir"})
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {unknown} in 'storage'; valid keys: ['cache_dir', 's3']")
    s3 = raw.get("s3") or {}
    if not isinstance(s3, Mapping):
        raise SpecError(f"{where}: storage.s3 must be a mapping like {{endpoint_url: http://host:9000, region: ...}}")
    secret = sorted(k for k in s3 if any(w in str(k).lower() for w in ("secret", "access_key", "token", "password")))
    if secret:
        raise SpecError(f"{where}: storage.s3 must not hold credentials ({secret}); set AWS_ACCESS_KEY_ID / "
                        "AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN in the environment or use a profile")
    return StorageOptions(s3=build(S3Options, s3, where=f"{where}: storage.s3"), cache_dir=raw.get("cache_dir"))


def iter_chunks(uri: str, storage: StorageOptions | None = None, size: int = _BUFFER) -> Iterator[bytes]:
    with open_input(uri, storage) as fh:
        yield from iter(lambda: fh.read(size), b"")
