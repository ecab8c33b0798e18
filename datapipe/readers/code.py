"""The ``code`` reader: source code from the forms it arrives in, one document per file
(or per repository), with the columns code filters and license decisions need.

Layouts (option ``layout``; ``auto``: every file of the source an archive -> ``archive``,
every file Parquet/JSONL -> ``stack``, else ``tree``):

* ``tree``: a directory tree or a git checkout (its working tree). A file's repository
  is the nearest folder above it, inside the source, that holds ``.git`` (a ``.git``
  that resolves outside the declared inputs decides nothing); without one, the source
  root (``repos: git``, the default) or the first folder below the root (``repos:
  folders``: a folder of repositories). ``.git/`` is never read. With ``gitignore:
  true`` (default) files that the repository's ``.gitignore`` files list (git's
  semantics, by the ``pathspec`` library's patterns, matched by RE2 in linear time;
  nested ``.gitignore`` files apply below their folder, the deepest deciding) are
  ``read:gitignored`` rejects; a ``.gitignore`` that cannot be read or decoded is logged
  and not applied, a line that does not parse is skipped. Every file, ``.gitignore`` and
  license file is opened through the input layer (:mod:`datapipe.readers.inputs`): a
  link that resolves outside the declared inputs is a ``read:outside_inputs`` reject
  naming it, a FIFO or device ``read:not_regular_file``, never opened; a link that stays
  inside the inputs but leaves its repository is a ``read:symlink_outside`` reject.
* ``archive``: ``.tar``, ``.tar.gz``/``.tgz``, ``.tar.bz2``, ``.tar.xz``, ``.zip``: each
  archive one repository, named by the archive (``requests-2.31.0.tar.gz`` ->
  ``requests-2.31.0``); a single top-level folder shared by every member (GitHub's
  ``owner-repo-sha/``) is not part of the paths. Members are read in memory, never
  extracted: a member with an absolute path, ``..`` or a name over 4,096 characters is a
  ``read:unsafe_path`` reject, a link member (symbolic or hard) a ``read:symlink``
  reject, a second member of the same path ``read:duplicate_member``, an encrypted or
  Deflate64 zip member ``read:encrypted`` / ``read:unsupported_compression``. An archive
  cut short is ``read:truncated`` and one that cannot be read ``read:corrupt_archive``
  (``on_error``; the members read before the damage are kept).
* ``stack``: Parquet or JSONL (``.gz``/``.zst`` too) in The Stack's layout: one row per
  file with its content, repository name, path, licenses and star/fork counts. Column
  names are found among The Stack v1/v2 names (``columns:`` overrides them). A row that
  cannot be used is a reject naming it (``read:invalid_json``, ``read:bad_row``,
  ``read:bad_license``, ``read:missing_field``); the rows around it are read.

Every file becomes a row with ``repo``, ``path`` (inside the repository), ``language``
(:mod:`datapipe.readers.code_lang`), ``size`` (bytes), ``license`` (the repository's:
the Stack layout's metadata column, else, for trees and archives, the SPDX id of the
repository's root ``LICENSE``/``COPYING`` file as :mod:`datapipe.readers.code_license`
identifies it, on every file of the repository whatever split or batch it lands in;
null when neither answers, and the ``license`` stage tries the file's own header), and the repository
metadata where the layout has it: ``stars``, ``forks``, ``archived``. The id key is
``<repo>:<path>``; ``origin`` the file's locator (``rel``, ``rel!member``, ``rel#row``).

Rejects, each naming the file: ``read:binary`` (a NUL byte, or not UTF-8),
``read:too_large`` (over ``max_doc_bytes``), ``read:empty``, ``read:language`` (outside
``languages:``), plus the layout's own above. With ``group: repository`` the kept files
of a repository become one document, each file after the files it imports (``order:
imports``, :mod:`datapipe.readers.code_deps`: Python, JS/TS, Go; path order for the rest
and for ties) or in path order (``order: path``). ``format: starcoder2`` writes
StarCoder2's ``<repo_name>name<file_sep>path\ncontent<file_sep>path\ncontent...`` (the
separators are special tokens of a code tokenizer; a file whose text or path holds one is a
``read:separator`` reject); ``format: header`` (the default) puts
``header`` (its ``{path}`` filled in) before each file and ``separator`` between them. The
document's ``language`` is the language with the most bytes, ``path`` null, ``size`` the sum. A repository is then read by one
task; the texts it holds are bounded by ``limits.expanded_bytes`` (default
``max_doc_bytes``): past it they are let go and the repository is one ``read:too_large``
reject (``read:expansion_limit`` when the budget is below ``max_doc_bytes``). Batches are
cut at ``batch_rows`` rows or 64 MiB of text, whichever comes first.
"""

from __future__ import annotations

import io
import itertools
import json
import logging
import lzma
import math
import os
import posixpath
import re
import tarfile
import warnings
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import zstandard

from datapipe import fs
from datapipe import schema as S
from datapipe.errors import CorruptInputError, SpecError
from datapipe.readers._streams import FileCorrupt, classify, strip_compression
from datapipe.readers.base import (
    _BATCH_BYTES,
    InputFile,
    Reader,
    ReadSplit,
    escape_name,
    safe_str,
)
from datapipe.readers.code_deps import dependency_order
from datapipe.readers.code_lang import detect_language, known_languages
from datapipe.readers.code_license import (
    is_license_file,
    license_of_text,
    repository_license,
    root_license_files,
)
from datapipe.readers.inputs import (
    Input,
    MemberRefused,
    read_upto,
    read_zip_member,
    tar_members,
    zip_members,
)

log = logging.getLogger(__name__)

#: the columns a code document has besides the base schema
COLUMNS: Mapping[str, pa.DataType] = {
    "repo": pa.string(), "path": pa.string(), "language": pa.string(), "size": pa.int64(),
    "license": pa.string(), "stars": pa.int64(), "forks": pa.int64(), "archived": pa.bool_(),
}
LAYOUTS = ("auto", "tree", "archive", "stack")
GROUPS = ("file", "repository")
FORMATS = ("header", "starcoder2")
ORDERS = ("imports", "path")
#: StarCoder2's repository-document separators (special tokens of a code tokenizer)
REPO_NAME, FILE_SEP = "<repo_name>", "<file_sep>"
REPOS = ("git", "folders")
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".zip")
STACK_SUFFIXES = (".parquet", ".jsonl", ".json", ".ndjson")
#: The Stack's column names (v1 first, then v2 and common exports), per field
STACK_COLUMNS: Mapping[str, tuple[str, ...]] = {
    "content": ("content", "text", "code"),
    "repo": ("max_stars_repo_name", "repo_name", "repository_name", "repo"),
    "path": ("max_stars_repo_path", "path", "file_path"),
    "license": ("max_stars_repo_licenses", "licenses", "detected_licenses", "license"),
    "stars": ("max_stars_count", "stars", "star_events_count", "stars_count"),
    "forks": ("max_forks_count", "forks", "fork_events_count", "forks_count"),
    "archived": ("archived", "gha_archived", "is_archived"),
}
_BINARY_SNIFF = 8000
#: bytes of a root license file read to identify it (license texts are a few KB)
_LICENSE_BYTES = 200_000
#: a ``.gitignore`` larger than this, or with more patterns, is not applied (logged)
_GITIGNORE_BYTES = 1 << 20
_GITIGNORE_PATTERNS = 10_000
#: an archive member name longer than this is ``read:unsafe_path`` (and shortened where shown)
_NAME_CHARS = 4096
_SHOWN_CHARS = 300
_INT64 = (-(1 << 63), (1 << 63) - 1)
#: member bytes a tar's first pass holds, so that an archive up to this size is read once
_HELD_BYTES = 32 << 20
_BOM = "\ufeff"


@dataclass(kw_only=True, frozen=True)
class CodeOptions:
    """See the module docstring. ``languages``: allow-list of languages (names as in
    ``code_languages.csv``, e.g. ``[Python, C, C++]``); null: every file, known language
    or not. ``columns``: Stack-layout column names, ``{content: ..., repo: ..., path:
    ..., license: ..., stars: ..., forks: ..., archived: ...}`` (unset: found by name)."""

    layout: str = "auto"
    group: str = "file"
    format: str = "header"
    order: str = "imports"
    separator: str = "\n\n"
    header: str = ""
    gitignore: bool = True
    repos: str = "git"
    languages: tuple[str, ...] | None = None
    columns: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, allowed in (("layout", LAYOUTS), ("group", GROUPS), ("repos", REPOS), ("format", FORMATS),
                              ("order", ORDERS)):
            if getattr(self, name) not in allowed:
                raise SpecError(f"option {name} must be one of {list(allowed)}, got {getattr(self, name)!r}")
        for name in ("separator", "header"):
            if not isinstance(getattr(self, name), str):
                raise SpecError(f"option {name} must be a string, got {getattr(self, name)!r}")
        if self.format == "starcoder2" and (self.separator != "\n\n" or self.header):
            raise SpecError(f"option format: starcoder2 writes {REPO_NAME}name{FILE_SEP}path\\ncontent and takes no "
                            f"separator or header (got separator={self.separator!r}, header={self.header!r}); drop "
                            "them, or use format: header")
        if not isinstance(self.gitignore, bool):
            raise SpecError(f"option gitignore must be true or false, got {self.gitignore!r}")
        if self.languages is not None:
            langs = (self.languages,) if isinstance(self.languages, str) else tuple(self.languages)
            unknown = [x for x in langs if x not in known_languages()]
            if not langs or unknown:
                raise SpecError(f"option languages: unknown language(s) {unknown or langs!r}; valid names: "
                                f"{', '.join(sorted(known_languages()))}")
            object.__setattr__(self, "languages", langs)
        bad = set(self.columns) - set(STACK_COLUMNS)
        if bad:
            raise SpecError(f"option columns: unknown field(s) {sorted(bad)}; valid: {sorted(STACK_COLUMNS)}")


@dataclass
class _Row:
    key: str
    origin: str
    repo: str | None = None
    path: str | None = None
    text: str | None = None
    reason: str | None = None
    detail: str | None = None
    language: str | None = None
    size: int | None = None
    license: str | None = None
    stars: int | None = None
    forks: int | None = None
    archived: bool | None = None
    nbytes: int = 0   # UTF-8 bytes of ``text`` (not a column)


def _is_archive(path: str) -> bool:
    return path.lower().endswith(ARCHIVE_SUFFIXES)


def _is_stack(path: str) -> bool:
    return strip_compression(path).lower().endswith(STACK_SUFFIXES)


def _auto_layout(paths: Sequence[str]) -> str:
    """``layout: auto``: archive when every file is an archive, stack when every file is
    Parquet/JSONL, else tree."""
    if paths and all(_is_archive(p) for p in paths):
        return "archive"
    if paths and all(_is_stack(p) for p in paths):
        return "stack"
    return "tree"


def _archive_repo(path: str) -> str:
    name = fs.basename(path)
    for suffix in sorted(ARCHIVE_SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _root_of(f: InputFile) -> str:
    """The source root ``f.rel`` is relative to (a file read on its own, ``rel`` being
    the path itself as :func:`~datapipe.readers.iter_documents` gives it: its folder)."""
    if f.rel and f.rel != f.path and f.path.endswith(f.rel):
        return f.path[: len(f.path) - len(f.rel)].rstrip("/\\")
    return fs.parent(f.path)


def _parts(rel: str) -> list[str]:
    return [p for p in rel.replace("\\", "/").split("/") if p]


def _in_git_dir(rel: str) -> bool:
    return ".git" in _parts(rel)[:-1] or _parts(rel)[-1:] == [".git"]


def _shown(name: str) -> str:
    """A member name as it appears in an origin or detail (a giant name shortened)."""
    return name if len(name) <= _SHOWN_CHARS else f"{name[:_SHOWN_CHARS]}...({len(name)} characters)"


def _inside(real: str, folder_real: str) -> bool:
    return real == folder_real or real.startswith(folder_real.rstrip(os.sep) + os.sep)


class CodeReader(Reader):
    """Source files of trees, git checkouts, repository archives and Stack-layout tables."""

    format = "code"
    Options = CodeOptions
    columns = COLUMNS

    # ------------------------------------------------------------------ planning

    def _layout(self, files: Sequence[InputFile]) -> str:
        if self.options.layout != "auto":
            return self.options.layout
        return _auto_layout([f.path for f in files])

    @classmethod
    def source_options(cls, paths: Sequence[str]) -> dict[str, Any] | None:
        """``layout`` as ``auto`` decides it over all of a source's files: a tree's
        ``package.json`` is a file of the tree, not a Stack table."""
        return {"layout": _auto_layout(paths)} if paths else None

    def plan(self, files: Sequence[InputFile], *, split_bytes: int = 64 << 20) -> list[ReadSplit]:
        if not isinstance(split_bytes, int) or split_bytes <= 0:
            raise SpecError(f"split_bytes must be a positive integer, got {split_bytes!r}")
        layout = self._layout(files)
        # the source's layout, for reading its splits (a tree split may hold only .jsonl files)
        self.__dict__["_planned_layout"] = layout
        if layout != "tree":
            odd = [f.rel for f in files if not (_is_archive if layout == "archive" else _is_stack)(f.path)]
            if odd:
                raise SpecError(f"source {self.source!r}: layout {layout} but {odd[:3]} are not "
                                f"{'archives' if layout == 'archive' else 'Parquet/JSONL'}; use layout: tree or "
                                "separate sources")
            # one archive = one repository = one split; Stack files: one split each
            return [ReadSplit((f,), nbytes=f.size) for f in files]
        files = [f for f in files if not _in_git_dir(f.rel)]
        if self.options.group == "file":
            return super().plan(files, split_bytes=split_bytes)
        # group: repository -- a repository's files in one split, repositories packed in order
        by_repo: dict[str, list[InputFile]] = {}
        for f in files:
            by_repo.setdefault(self._tree_repo(f)[0], []).append(f)
        splits, group, size = [], [], 0
        for repo_files in by_repo.values():
            n = sum(f.size for f in repo_files)
            if group and size + n > split_bytes:
                splits.append(ReadSplit(tuple(group), nbytes=size))
                group, size = [], 0
            group.extend(repo_files)
            size += n
        if group:
            splits.append(ReadSplit(tuple(group), nbytes=size))
        return splits

    def _has_git(self, folder: str, src: Input) -> bool:
        """Whether ``folder`` holds a ``.git`` (a folder, or a worktree's file) that the
        input layer would let us reach: one through a link out of the inputs decides nothing."""
        cache = self.__dict__.setdefault("_git_folders", {})   # per reader: one look per folder
        if folder not in cache:
            git = src.at(fs.join(folder, ".git"), ".git")
            cache[folder] = bool(git.list_dir()) or git.is_file()
        return cache[folder]

    def _tree_repo(self, f: InputFile) -> tuple[str, str, str]:
        """``(repo key, repo name, repo folder)`` of a tree file: the nearest folder with
        ``.git`` inside the source, else the root (``repos: git``) or the first folder."""
        root = _root_of(f)
        cache = self.__dict__.setdefault("_repo_of_dir", {})   # per reader: files of a folder share it
        rel = f.rel if f.rel != f.path else fs.basename(f.path)
        folder_key = (root, rel.rpartition("/")[0])
        if folder_key not in cache:
            cache[folder_key] = self._find_repo(root, rel, self.input(f))
        return cache[folder_key]

    def _real(self, path: str) -> str:
        cache = self.__dict__.setdefault("_real_dirs", {})
        if path not in cache:
            cache[path] = fs.real_key(path)
        return cache[path]

    def _real_file(self, path: str) -> str:
        """The real path of a local file: its folder's (cached) plus its name, unless the
        file itself is a link (one ``lstat`` a file instead of one per path component)."""
        local = fs.local_path(path)
        if os.path.islink(local):
            return os.path.realpath(local)
        return os.path.join(self._real(os.path.dirname(local)), os.path.basename(local))

    def _leaves_repo(self, path: str, folder: str) -> str | None:
        """Where a local path inside the inputs leads when that is outside its repository
        folder (a link to another repository), else None."""
        if not fs.is_local(path):
            return None
        real = self._real_file(path)
        return None if _inside(real, self._real(folder)) else real

    def _find_repo(self, root: str, rel: str, src: Input) -> tuple[str, str, str]:
        parts = _parts(rel)
        for depth in range(len(parts) - 1, -1, -1):
            folder = fs.join(root, *parts[:depth]) if depth else root
            if self._has_git(folder, src):
                return "/".join(parts[:depth]), "/".join(parts[:depth]) or fs.basename(root), folder
        if self.options.repos == "folders" and len(parts) > 1:
            return parts[0], parts[0], fs.join(root, parts[0])
        return "", fs.basename(root), root

    # ------------------------------------------------------------------ reading

    def read(self, split: ReadSplit) -> Iterator[pa.Table]:
        """The split's rows: file rows (``group: file``), or repository documents plus
        the rejected files (``group: repository``), in tables of at most ``batch_rows``
        rows and about 64 MiB of text."""
        rows: list[_Row] = []
        nbytes = 0
        for unit in self._units(split):
            for row in unit if self.options.group == "file" else self._grouped(unit):
                rows.append(row)
                nbytes += row.nbytes if row.text is not None else 0
                if len(rows) >= self.batch_rows or nbytes >= _BATCH_BYTES:
                    table = self._table(rows)
                    rows, nbytes = [], 0   # let the rows' texts go before the table is handed on
                    yield table
        if rows:
            yield self._table(rows)

    def _units(self, split: ReadSplit) -> Iterator[Iterator[_Row]]:
        """The split's rows, one iterator per repository unit: an archive, a Stack file,
        or a tree split's files of one repository (in path order)."""
        layout = self.__dict__.get("_planned_layout") or self._layout(split.files)
        if layout == "tree":
            for _, files in itertools.groupby(split.files, key=lambda f: self._tree_repo(f)[0]):
                yield self._tree_rows(list(files))
            return
        for f in split.files:
            yield self._file_rows(f, layout)

    def _file_rows(self, f: InputFile, layout: str) -> Iterator[_Row]:
        """An archive's or a Stack file's rows; damage ends it with the file's reject
        (the rows read before it are kept) or, under ``on_error: fail``, an error naming it."""
        try:
            n = 0
            for row in self._archive_rows(f) if layout == "archive" else self._stack_rows(f):
                n += 1
                yield row
            if n == 0:   # nothing to read: still the file's row, so that it is accounted for
                raise FileCorrupt("empty_file", f"{f.rel}: {'no file in the archive' if layout == 'archive' else 'no row'}")
        except (FileCorrupt, OSError, EOFError, zlib.error, lzma.LZMAError, zstandard.ZstdError,
                pa.ArrowException) as exc:
            reason, detail = classify(exc, None) if not isinstance(exc, pa.ArrowException) else \
                ("corrupt_table", f"{f.rel}: {type(exc).__name__}: {exc}")
            if self.on_error == "fail":
                raise CorruptInputError(f.path, f"read:{reason}", detail) from exc
            log.warning("source %s: skipping %s: read:%s (%s)", self.source, f.path, reason, detail)
            yield _Row(key=f"{f.rel}!{reason}", origin=f.rel, reason=reason, detail=detail)

    def _refused(self, row: _Row, f: InputFile, exc: BaseException) -> _Row:
        """A file the input layer refused, or that cannot be read: its reject, or under
        ``on_error: fail`` the error naming it."""
        reason, detail = classify(exc, None)
        if self.on_error == "fail":
            raise CorruptInputError(f.path, f"read:{reason}", detail) from exc
        return self._reject(row, reason, detail if f.rel in detail else f"{f.rel}: {detail}")

    # -- the three layouts ----------------------------------------------------------

    def _tree_rows(self, files: list[InputFile]) -> Iterator[_Row]:
        """The rows of one repository's files of a tree split."""
        if not files:
            return
        src = self.input(files[0])
        root = _root_of(files[0])
        _, repo, folder = self._tree_repo(files[0])
        paths = [fs.relative(f.path, folder) for f in files]
        ignored = [None] * len(files)
        if self.options.gitignore:
            ignored = self._ignore().decide(folder, paths, lambda d: self._gitignore(d, folder, root, src))
        license = self._tree_license(folder, root, src)
        for f, path, rule in zip(files, paths, ignored):
            yield self._tree_row(f, repo, folder, path, rule, license)

    def _ignore(self) -> _IgnoreRules:
        if "_ignore_rules" not in self.__dict__:
            self.__dict__["_ignore_rules"] = _IgnoreRules(self.source)   # per reader: each .gitignore read once
        return self.__dict__["_ignore_rules"]

    def _tree_row(self, f: InputFile, repo: str, folder: str, path: str, rule: str | None,
                  license: str | None) -> _Row:
        row = _Row(key=f"{repo}:{path}", origin=f.rel, repo=repo, path=path, license=license)
        try:
            # the confined open decides first: a link out of the inputs, a FIFO, a dangling
            # link are refused here, before anything else looks at the file
            fh = self.input(f).open(compression=False)   # as it is: a .gz in a repository is a file
        except (FileCorrupt, OSError) as exc:
            return self._refused(row, f, exc)
        with fh:
            real = self._leaves_repo(f.path, folder)
            if real is not None:
                return self._reject(row, "symlink_outside", f"{f.rel} links to {real}, outside repository {repo}")
            if rule is not None:
                return self._reject(row, "gitignored", f"{f.rel} is listed in {rule}")
            try:
                data = read_upto(fh, self.max_doc_bytes + 1)
            except (FileCorrupt, OSError) as exc:
                return self._refused(row, f, exc)
        return self._content(row, data, f.size)

    def _gitignore(self, folder: str, repo_folder: str, root: str, src: Input) -> str | None:
        """The text of ``folder``'s ``.gitignore``, read through the input layer; None
        when there is none, or it leads outside the inputs or its repository, is not a
        regular file or is larger than 1 MiB (logged: the repository is read without it).
        Bytes that are not UTF-8 are read as U+FFFD."""
        path = fs.join(folder, ".gitignore")
        rel = fs.relative(path, root)
        if self._leaves_repo(path, repo_folder) is not None:
            log.warning("source %s: %s leads out of its repository; not applied", self.source, rel)
            return None
        try:
            data = src.at(path, rel).read(_GITIGNORE_BYTES + 1)
        except FileNotFoundError:
            return None
        except (FileCorrupt, OSError) as exc:
            log.warning("source %s: %s not applied: %s", self.source, rel, exc)
            return None
        if len(data) > _GITIGNORE_BYTES:
            log.warning("source %s: %s is larger than %d bytes; not applied", self.source, rel, _GITIGNORE_BYTES)
            return None
        return data.decode("utf-8", "replace")

    def _tree_license(self, folder: str, root: str, src: Input) -> str | None:
        """The license of the repository at ``folder`` from its root license files
        (:func:`repository_license`: the first identified in path order, or the ``OR`` of
        files each named for its license); read once per repository per reader, through
        the input layer. A license file that leads outside the inputs or out of its
        repository is not read."""
        cache = self.__dict__.setdefault("_repo_licenses", {})
        if folder not in cache:
            found: list[tuple[str, str | None]] = []
            for name in root_license_files(src.at(folder, fs.relative(folder, root)).list_dir()):
                path = fs.join(folder, name)
                if self._leaves_repo(path, folder) is not None:
                    continue
                try:
                    data = src.at(path, fs.relative(path, root)).read(_LICENSE_BYTES)
                except (FileCorrupt, OSError) as exc:
                    log.warning("source %s: license file %s not read: %s", self.source, path, exc)
                    continue
                found.append((name, license_of_text(data.decode("utf-8", "replace"))))
            cache[folder] = repository_license(found)
        return cache[folder]

    def _archive_rows(self, f: InputFile) -> Iterator[_Row]:
        repo = _archive_repo(f.path)
        src = self.input(f)
        if f.path.lower().endswith(".zip"):
            yield from self._zip_rows(f, src, repo)
        else:
            yield from self._tar_rows(f, src, repo)

    def _member_row(self, f: InputFile, repo: str, prefix: str, name: str, license: str | None,
                    seen: set[int]) -> tuple[_Row, bool]:
        """A member's row, and whether its content should be read."""
        path = name[len(prefix):] if prefix and name.startswith(prefix) else name
        giant = len(name) > _NAME_CHARS
        row = _Row(key=f"{repo}:{path}", origin=f"{f.rel}!{escape_name(_shown(name) if giant else name)}", repo=repo,
                   path=_shown(path) if giant else path, license=license)
        parts = _parts(name)
        if name.startswith("/") or ".." in parts or posixpath.isabs(name):
            return self._reject(row, "unsafe_path", f"{f.rel}: member {_shown(name)!r} points outside the archive"), False
        if giant:
            return self._reject(row, "unsafe_path", f"{f.rel}: member name of {len(name)} characters "
                                                    f"(more than {_NAME_CHARS})"), False
        if _in_git_dir(path):
            return row, False
        norm = hash("/".join(p for p in _parts(path) if p != "."))
        if norm in seen:
            return self._reject(row, "duplicate_member", f"{f.rel}: member {name!r} appears again in the archive; "
                                                         "the first copy is read"), False
        seen.add(norm)
        return row, True

    def _checked(self, stream: Any, f: InputFile, compression: str | None) -> Any:
        return _Checked(stream, f.rel, compression)

    def _tar_rows(self, f: InputFile, src: Input, repo: str) -> Iterator[_Row]:
        """A tar's rows, streamed through the input layer. The paths need the top folder
        every member shares and the rows the repository's license, both known only at the
        end: a first pass finds them and holds the members read on the way, up to
        :data:`_HELD_BYTES`; a larger archive is streamed a second time for its rows (a
        compressed tar cannot be entered at a member). Damage found by the first pass is
        raised after the rows of the members before it."""
        comp = src.compression()
        top, licenses, damage = _Top(), {}, None
        held: list[tuple[tarfile.TarInfo, bytes | None]] | None = []
        budget = _HELD_BYTES
        try:
            with src.open() as raw:
                for m, fh in tar_members(self._checked(raw, f, comp), rel=f.rel, limits=self.limits):
                    if m.isdir():
                        continue
                    top.add(m.name)
                    data = head = None
                    candidate = _license_candidate(m.name)
                    if fh is not None and m.size <= self.limits.member_bytes:
                        if held is not None and m.size <= self.max_doc_bytes:
                            data = _read_member(fh, self.max_doc_bytes + 1, f.rel, m.name)
                            head = data[:_LICENSE_BYTES]
                        elif candidate:
                            head = _read_member(fh, _LICENSE_BYTES, f.rel, m.name)
                    if candidate and head is not None:
                        licenses[m.name] = license_of_text(head.decode("utf-8", "replace"))
                    if held is not None:
                        budget -= (len(data) if data is not None else 0) + 1024
                        if budget < 0:
                            held = None   # too much to hold: the rows come from a second pass
                        else:
                            held.append((m, data))
        except FileCorrupt as exc:
            damage = exc
        prefix = top.prefix()
        license = _archive_license(licenses, prefix)
        seen: set[int] = set()
        if held is not None:
            for m, data in held:
                row = self._tar_row(f, repo, prefix, license, seen, m, lambda data=data: data)
                if row is not None:
                    yield row
        else:
            with src.open() as raw:
                for m, fh in tar_members(self._checked(raw, f, comp), rel=f.rel, limits=self.limits):
                    if not m.isdir():
                        row = self._tar_row(f, repo, prefix, license, seen, m, lambda m=m, fh=fh: _read_member(
                            fh, self.max_doc_bytes + 1, f.rel, m.name) if fh is not None else None)
                        if row is not None:
                            yield row
        if damage is not None:   # found by the first pass, after the members before it
            raise damage

    def _tar_row(self, f: InputFile, repo: str, prefix: str, license: str | None, seen: set[int],
                 m: tarfile.TarInfo, read: Any) -> _Row | None:
        """A tar member's row (None for what is not a row: ``.git/``); ``read()`` gives
        its bytes (up to ``max_doc_bytes + 1``), only asked for when they are needed."""
        row, wanted = self._member_row(f, repo, prefix, m.name, license, seen)
        if not wanted:
            return row if row.reason is not None else None
        if m.issym() or m.islnk():
            return self._reject(row, "symlink", f"{f.rel}: member {_shown(m.name)} is a link to {_shown(m.linkname)!r}")
        if not m.isfile():
            return self._reject(row, "not_a_file", f"{f.rel}: member {_shown(m.name)} is not a regular file")
        row.size = _fits(m.size)
        if m.size > min(self.max_doc_bytes, self.limits.member_bytes):
            return self._reject(row, "too_large", f"{row.origin}: {self._member_too_large(m.size)}")
        return self._content(row, read(), m.size)

    def _member_too_large(self, size: int) -> str:
        if size > self.limits.member_bytes:
            return f"{size} bytes > limits.member_bytes ({self.limits.member_bytes}); not read"
        return self._too_large(size)

    def _zip_rows(self, f: InputFile, src: Input, repo: str) -> Iterator[_Row]:
        with src.open_raw() as raw:
            try:
                z, infos = zip_members(raw, rel=f.rel, limits=self.limits)
            except IndexError:   # zipfile's ZipInfo.is_dir() on a member whose name is empty
                raise FileCorrupt("corrupt_archive", f"{f.rel}: a member with an empty name") from None
            with z:
                top = _Top()
                for i in infos:
                    top.add(i.filename)
                prefix = top.prefix()
                licenses = {}
                for i in infos:
                    if _license_candidate(i.filename) and not _zip_link(i):
                        try:
                            data = read_zip_member(z, i, _LICENSE_BYTES, rel=f.rel)
                        except MemberRefused:
                            continue
                        licenses[i.filename] = license_of_text(data.decode("utf-8", "replace"))
                license = _archive_license(licenses, prefix)
                seen: set[int] = set()
                for info in sorted(infos, key=lambda i: i.filename):
                    row, read = self._member_row(f, repo, prefix, info.filename, license, seen)
                    if not read:
                        if row.reason is not None:
                            yield row
                        continue
                    if _zip_link(info):
                        yield self._reject(row, "symlink", f"{f.rel}: member {_shown(info.filename)} is a symlink")
                        continue
                    row.size = _fits(info.file_size)
                    if info.file_size > min(self.max_doc_bytes, self.limits.member_bytes):
                        yield self._reject(row, "too_large", f"{row.origin}: {self._member_too_large(info.file_size)}")
                        continue
                    try:
                        data = read_zip_member(z, info, self.max_doc_bytes + 1, rel=f.rel)
                    except MemberRefused as exc:
                        yield self._reject(row, exc.reason, exc.detail)
                        continue
                    yield self._content(row, data, info.file_size)

    def _stack_rows(self, f: InputFile) -> Iterator[_Row]:
        src = self.input(f)
        if strip_compression(f.path).lower().endswith(".parquet"):
            yield from self._parquet_rows(f, src)
        else:
            yield from self._jsonl_rows(f, src)

    def _parquet_rows(self, f: InputFile, src: Input) -> Iterator[_Row]:
        source = src.arrow_source()
        try:
            try:
                pf = pq.ParquetFile(source)
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise FileCorrupt("corrupt_table", f"{f.rel}: {type(exc).__name__}: {exc}") from None
            cols, missing = self._stack_columns(pf.schema_arrow.names)
            if missing:
                raise FileCorrupt("missing_column", f"{f.rel}: {missing}")
            row_no = 0
            try:
                for batch in pf.iter_batches(batch_size=self.batch_rows, columns=sorted(set(cols.values()))):
                    for rec in _records(batch):
                        yield (self._stack_row(f, row_no, rec, cols) if not isinstance(rec, str)
                               else self._bad_row(f, row_no, "bad_row", rec))
                        row_no += 1
            except (pa.ArrowException, OSError) as exc:
                raise FileCorrupt("corrupt_table", f"{f.rel}: {type(exc).__name__}: {exc}") from None
        finally:
            if not isinstance(source, str):
                source.close()

    def _jsonl_rows(self, f: InputFile, src: Input) -> Iterator[_Row]:
        """One row per non-blank line; a line that is not a JSON object, or whose fields
        cannot be used, is that row's reject and the lines after it are read."""
        comp = src.compression()
        limit = 2 * self.max_doc_bytes + (1 << 20)   # a content of max_doc_bytes, JSON-escaped
        by_keys: dict[frozenset, tuple[dict[str, str], str | None]] = {}
        with src.open() as raw, io.BufferedReader(self._checked(raw, f, comp), 1 << 20) as fh:
            row_no = 0
            while True:
                line = fh.readline(limit)
                if not line:
                    break
                if len(line) >= limit and not line.endswith(b"\n"):
                    n = len(line) + _skip_line(fh)
                    yield self._bad_row(f, row_no, "too_large", f"a line of {n} bytes (more than {limit})")
                    row_no += 1
                    continue
                if not line.strip():
                    continue
                rec, problem = _json_object(line, row_no == 0)
                if problem is not None:
                    yield self._bad_row(f, row_no, *problem)
                else:
                    keys = frozenset(rec)
                    found = by_keys.get(keys)
                    if found is None:
                        found = self._stack_columns(list(rec))
                        if len(by_keys) < 256:
                            by_keys[keys] = found
                    cols, missing = found
                    yield (self._stack_row(f, row_no, rec, cols) if missing is None
                           else self._bad_row(f, row_no, "missing_field", missing))
                row_no += 1

    def _stack_columns(self, present: Sequence[str]) -> tuple[dict[str, str], str | None]:
        """The Stack fields' column names among ``present``, and what is missing (None:
        content, repository and path are all there)."""
        cols: dict[str, str] = {}
        names = set(present)
        for fld, candidates in STACK_COLUMNS.items():
            given = self.options.columns.get(fld)
            if given is not None:
                if given not in names:
                    return cols, f"no column {given!r} (options.columns.{fld})"
                cols[fld] = given
                continue
            found = next((c for c in candidates if c in names), None)
            if found is not None:
                cols[fld] = found
        for need in ("content", "repo", "path"):
            if need not in cols:
                return cols, (f"no {need} column (looked for {list(STACK_COLUMNS[need])}); name it with "
                              f"options.columns.{need}")
        return cols, None

    def _bad_row(self, f: InputFile, row_no: int, reason: str, what: str) -> _Row:
        where = f"{f.rel}#{row_no}"
        return _Row(key=where, origin=where, reason=reason, detail=f"{f.rel} row {row_no}: {what}")

    def _stack_row(self, f: InputFile, row_no: int, rec: Mapping[str, Any], cols: Mapping[str, str]) -> _Row:
        repo, path, content = rec.get(cols["repo"]), rec.get(cols["path"]), rec.get(cols["content"])
        lic, lic_problem = _license(rec.get(cols["license"])) if "license" in cols else (None, None)
        stars, s_problem = _count(rec.get(cols["stars"])) if "stars" in cols else (None, None)
        forks, f_problem = _count(rec.get(cols["forks"])) if "forks" in cols else (None, None)
        archived, a_problem = _flag(rec.get(cols["archived"])) if "archived" in cols else (None, None)
        if repo is None or path is None or content is None:
            row = _Row(key=f"{repo}:{path}", origin=f"{f.rel}#{row_no}", repo=None if repo is None else str(repo)[:4096],
                       path=None if path is None else str(path)[:4096])
            return self._reject(row, "missing_field", f"{f.rel} row {row_no}: repository, path or content is null")
        for name, v in (("repository", repo), ("path", path)):
            if not isinstance(v, str):
                return self._bad_row(f, row_no, "bad_row", f"the {name} is a {type(v).__name__}, not a string")
        if not isinstance(content, (str, bytes)):
            return self._bad_row(f, row_no, "bad_row", f"the content is a {type(content).__name__}, not text")
        for name, problem in (("stars", s_problem), ("forks", f_problem), ("archived", a_problem)):
            if problem is not None:
                return self._bad_row(f, row_no, "bad_row", f"{name}: {problem}")
        row = _Row(key=f"{repo}:{path}", origin=f"{f.rel}#{row_no}", repo=repo, path=path, license=lic,
                   stars=stars, forks=forks, archived=archived)
        if lic_problem is not None:
            return self._reject(row, "bad_license", f"{f.rel} row {row_no}: {lic_problem}")
        if isinstance(content, str):
            content = content.encode("utf-8", "surrogatepass")
        return self._content(row, content, len(content))

    # -- shared --------------------------------------------------------------------

    def _reject(self, row: _Row, reason: str, detail: str) -> _Row:
        row.reason, row.detail, row.text, row.nbytes = reason, detail, None, 0
        return row

    def _content(self, row: _Row, data: bytes, size: int) -> _Row:
        """Decode and check one file's bytes; the language from its path and text."""
        row.size = size
        where = row.origin
        if len(data) > self.max_doc_bytes:
            return self._reject(row, "too_large", f"{where}: {self._too_large(max(size, len(data)))}")
        if b"\x00" in data[:_BINARY_SNIFF]:
            return self._reject(row, "binary", f"{where}: NUL byte (a binary file)")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return self._reject(row, "binary", f"{where}: not UTF-8 ({exc.reason} at byte {exc.start})")
        nbytes = len(data)
        if text.startswith(_BOM):
            text, nbytes = text[1:], nbytes - len(_BOM.encode())
        row.language = detect_language(row.path or "", text)
        allowed = self.options.languages
        if allowed is not None and row.language not in allowed:
            return self._reject(row, "language", f"{where}: language {row.language} not in languages")
        if not text.strip():
            return self._reject(row, "empty", f"{where}: the file holds only whitespace")
        row.text, row.nbytes = text, nbytes
        return row

    def _grouped(self, rows: Iterable[_Row]) -> Iterator[_Row]:
        """``group: repository``: each repository's kept rows as one document (in
        :meth:`_ordered`'s order; repositories in order of first appearance), then the rejected rows as they
        are. A repository's texts are held up to ``limits.expanded_bytes`` (default
        ``max_doc_bytes``); past it they are let go and it becomes one reject."""
        budget = self.limits.expansion(self.max_doc_bytes)
        starcoder2 = self.options.format == "starcoder2"
        sep = 0 if starcoder2 else len(self.options.separator.encode("utf-8"))
        groups: dict[str | None, _Group] = {}
        rejected: list[_Row] = []
        for r in rows:
            if r.reason is None and starcoder2:
                r = self._no_separator(r)
            if r.reason is not None:
                rejected.append(r)
                continue
            g = groups.get(r.repo)
            if g is None:
                g = groups[r.repo] = _Group(first=r)
                g.nbytes = len(self._doc_start(r.repo).encode("utf-8"))
            g.nbytes += (sep if g.files else 0) + len(self._file_start(r.path).encode("utf-8")) + r.nbytes
            g.files += 1
            g.size += r.size or 0
            if g.rows is None:
                continue
            if g.nbytes > budget:
                g.rows = None   # let the texts go: this repository is not kept
                continue
            g.rows.append(r)
        for g in groups.values():
            yield self._repository_doc(self._ordered(g.rows)) if g.rows is not None else self._over_budget(g, budget)
        yield from rejected

    def _over_budget(self, g: _Group, budget: int) -> _Row:
        first = g.first
        doc = _Row(key=f"{first.repo}", origin=_repo_origin(first), repo=first.repo, size=g.size,
                   license=first.license, stars=first.stars, forks=first.forks, archived=first.archived)
        if g.nbytes > self.max_doc_bytes:
            return self._reject(doc, "too_large", f"repository {first.repo}: {g.files} files make a document of "
                                                  f"{g.nbytes} bytes > max_doc_bytes ({self.max_doc_bytes})")
        return self._reject(doc, "expansion_limit", f"repository {first.repo}: {g.files} files make a document of "
                                                    f"{g.nbytes} bytes > limits.expanded_bytes ({budget})")

    def _no_separator(self, r: _Row) -> _Row:
        """``format: starcoder2``: a file whose text or path holds ``<repo_name>`` or
        ``<file_sep>`` is a ``read:separator`` reject (the separators in a repository
        document are then only ever structure, which ``tokenize``'s ``structure:`` relies on)."""
        for where, value in (("path", r.path or ""), ("text", r.text or "")):
            for token in (REPO_NAME, FILE_SEP):
                at = value.find(token)
                if at >= 0:
                    return self._reject(r, "separator", f"{r.repo}/{r.path}: its {where} holds {token} at "
                                                        f"character {at}")
        return r

    def _ordered(self, rows: list[_Row]) -> list[_Row]:
        """A repository's kept files in path order, or (``order: imports``) each after the
        files it imports (:mod:`datapipe.readers.code_deps`; ties and the rest in path order)."""
        rows = sorted(rows, key=lambda r: r.path or "")
        if self.options.order == "path":
            return rows
        return [rows[i] for i in dependency_order([r.path or "" for r in rows], [r.text or "" for r in rows])]

    def _doc_start(self, repo: str | None) -> str:
        """What a repository document starts with (``format: starcoder2``: ``<repo_name>name``)."""
        return f"{REPO_NAME}{escape_name(repo or '')}" if self.options.format == "starcoder2" else ""

    def _file_start(self, path: str | None) -> str:
        """What precedes a file's text: ``<file_sep>path\\n``, or the ``header`` with its path."""
        if self.options.format == "starcoder2":
            return f"{FILE_SEP}{escape_name(path or '')}\n"
        return _header(self.options.header, path)

    def _repository_doc(self, kept: list[_Row]) -> _Row:
        first = kept[0]
        sep = "" if self.options.format == "starcoder2" else self.options.separator
        text = self._doc_start(first.repo) + sep.join(self._file_start(r.path) + (r.text or "") for r in kept)
        by_lang: dict[str, int] = {}
        for r in kept:
            if r.language is not None:
                by_lang[r.language] = by_lang.get(r.language, 0) + (r.size or 0)
        language = min(by_lang, key=lambda k: (-by_lang[k], k)) if by_lang else None
        nbytes = len(text.encode("utf-8"))
        doc = _Row(key=f"{first.repo}", origin=_repo_origin(first), repo=first.repo, text=text, language=language,
                   size=sum(r.size or 0 for r in kept), license=first.license, stars=first.stars,
                   forks=first.forks, archived=first.archived, nbytes=nbytes)
        if nbytes > self.max_doc_bytes:
            doc = self._reject(doc, "too_large", f"repository {first.repo}: {self._too_large(nbytes)}")
        return doc

    def _table(self, rows: list[_Row]) -> pa.Table:
        src = self.source
        base = S.make_batch(
            source=src,
            ids=[S.make_id(src, r.key) for r in rows],
            texts=[r.text for r in rows],
            origins=[escape_name(r.origin) for r in rows],
            reject_reasons=[None if r.reason is None else f"read:{r.reason}" for r in rows],
            reject_details=[None if r.detail is None else escape_name(r.detail) for r in rows],
        )
        for name, typ in COLUMNS.items():
            values = [getattr(r, name) for r in rows]
            if typ == pa.string():
                values = [None if v is None else escape_name(v) for v in values]
            base = base.append_column(pa.field(name, typ), pa.array(values, typ))
        return base

    def provides(self) -> frozenset[str]:
        return S.TEXT_SOURCE_COLUMNS | frozenset(COLUMNS)


class _IgnoreRules:
    """``.gitignore`` files of the repositories one reader reads, each loaded once.
    Patterns are parsed by ``pathspec`` (git's rules: negation, ``dir/``, ``**``,
    anchoring) and matched with RE2 (``pyarrow.compute``), which runs in linear time on
    any pattern: Python's backtracking ``re``, which ``pathspec`` matches with, takes
    seconds per name on a line like ``*a*a*a*a*b``. The decision is ``pathspec``'s
    ``GitIgnoreSpec.check_file``: the last pattern that matches the file itself decides,
    else the last that matches one of its folders."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._specs: dict[str, list[tuple[bool, str, bool]] | None] = {}

    def decide(self, repo_folder: str, paths: Sequence[str],
               load: Any) -> list[str | None]:
        """For each path (inside the repository at ``repo_folder``), the ``.gitignore``
        that ignores it (relative to the repository), or None. ``load(folder)``: the
        text of ``folder``'s ``.gitignore`` or None."""
        parts = [_parts(p) for p in paths]
        below: dict[tuple[str, ...], list[int]] = {}   # folder (parts) -> the paths below it
        for i, ps in enumerate(parts):
            for depth in range(len(ps)):
                below.setdefault(tuple(ps[:depth]), []).append(i)
        verdict = np.full(len(paths), -1, np.int8)
        rule: list[str | None] = [None] * len(paths)
        for key in sorted(below, key=len):   # the repository's root first, the deepest last
            folder = fs.join(repo_folder, *key) if key else repo_folder
            if folder not in self._specs:
                text = load(folder)
                self._specs[folder] = None if text is None else self._parse(text, folder)
            spec = self._specs[folder]
            if not spec:
                continue
            idx = below[key]
            found = _match(spec, ["/".join(parts[i][len(key):]) for i in idx])
            name = "/".join(key + (".gitignore",))
            for i, v in zip(idx, found.tolist()):
                if v >= 0:
                    verdict[i], rule[i] = v, name
        return [rule[i] if verdict[i] == 1 else None for i in range(len(paths))]

    def _parse(self, text: str, folder: str) -> list[tuple[bool, str, bool]] | None:
        """``(include, anchored RE2 pattern, has a folder mark)`` per pattern; a line
        that does not parse (``!``, ``\\``, ``[z-a]``) or that RE2 refuses is skipped."""
        import pathspec

        lines = text.removeprefix(_BOM).splitlines()
        if sum(1 for ln in lines if ln.strip() and not ln.startswith("#")) > _GITIGNORE_PATTERNS:
            log.warning("source %s: %s/.gitignore has more than %d patterns; not applied", self.source, folder,
                        _GITIGNORE_PATTERNS)
            return None
        skipped = 0
        with warnings.catch_warnings():   # re's FutureWarning on '[[' and the like
            warnings.simplefilter("ignore")
            try:
                patterns = list(pathspec.GitIgnoreSpec.from_lines(lines).patterns)
            except (ValueError, re.error):   # find the lines at fault
                patterns = []
                for line in lines:
                    try:
                        patterns.extend(pathspec.GitIgnoreSpec.from_lines([line]).patterns)
                    except (ValueError, re.error):
                        skipped += 1
        out = []
        for p in patterns:
            regex = getattr(p, "regex", None)
            if p.include is None or regex is None:
                continue
            rx = f"^(?:{regex.pattern})"
            try:
                pc.match_substring_regex(_NO_PATHS, rx)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                skipped += 1
                continue
            out.append((bool(p.include), rx, "(?P<ps_d>" in rx))
        if skipped:
            log.warning("source %s: %s/.gitignore: %d line(s) that are not valid patterns skipped",
                        self.source, folder, skipped)
        return out


_NO_PATHS = pa.array([""], pa.string())


def _match(spec: list[tuple[bool, str, bool]], paths: list[str]) -> np.ndarray:
    """Per path: 1 ignored, 0 re-included, -1 no pattern matched (one RE2 pass per pattern
    over all paths). A file match beats a folder match; among equals the last pattern wins."""
    arr = pa.array([safe_str(p) for p in paths], pa.string())
    by_file = np.full(len(paths), -1, np.int8)
    by_dir = np.full(len(paths), -1, np.int8)
    for include, rx, marks_dir in spec:
        hits = pc.match_substring_regex(arr, rx).to_numpy(zero_copy_only=False)
        if not hits.any():
            continue
        idx = np.flatnonzero(hits)
        if marks_dir:
            mark = pc.extract_regex(arr.take(pa.array(idx)), rx).field("ps_d")
            is_dir = pc.fill_null(pc.not_equal(mark, ""), False).to_numpy(zero_copy_only=False)
            by_dir[idx[is_dir]] = include
            by_file[idx[~is_dir]] = include
        else:
            by_file[idx] = include
    return np.where(by_file >= 0, by_file, by_dir)


@dataclass
class _Group:
    """One repository being grouped: its kept rows (None once over the budget), their
    document's bytes so far, file count and summed sizes."""

    first: _Row
    rows: list[_Row] | None = field(default_factory=list)
    nbytes: int = 0
    files: int = 0
    size: int = 0


def _header(header: str, path: str | None) -> str:
    """``header`` with ``{path}`` filled in (a non-UTF-8 name percent-encoded, as in ``path``)."""
    return header.replace("{path}", escape_name(path or "")) if "{path}" in header else header


def _fits(n: int) -> int | None:
    """A size from an archive header for the int64 ``size`` column (None if it cannot be one)."""
    return n if _INT64[0] <= n <= _INT64[1] else None


def _repo_origin(first: _Row) -> str:
    return first.origin.rsplit("!", 1)[0] if "!" in first.origin else first.repo or first.origin


class _Top:
    """The single top-level folder every member name shares, found a name at a time
    (no list of names is kept)."""

    def __init__(self) -> None:
        self.top: str | None = None
        self.shared = True

    def add(self, name: str) -> None:
        parts = _parts(name)
        if not parts:
            return
        if self.top is None:
            self.top = parts[0]
        elif parts[0] != self.top:
            self.shared = False
        if len(parts) == 1 and not name.endswith("/"):
            self.shared = False

    def prefix(self) -> str:
        return self.top + "/" if self.shared and self.top is not None else ""


class _Checked(io.RawIOBase):
    """A decompressed archive or table stream whose decoder errors end the file as a
    :class:`FileCorrupt` naming it: a stream cut short (EOF before the end marker) is
    ``truncated``, damage ``corrupt_<compression>``. Reads with ``read1``, so the bytes
    before a cut reach the parser before the error does."""

    def __init__(self, inner: Any, rel: str, compression: str | None) -> None:
        super().__init__()
        self._inner, self._rel, self._comp = inner, rel, compression
        self._read = getattr(inner, "read1", inner.read)

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:  # type: ignore[override]
        try:
            data = self._read(len(buf))
        except FileCorrupt:
            raise
        except EOFError as exc:
            raise FileCorrupt("truncated", f"{self._rel}: the {self._comp or 'file'} stream ends early ({exc})") from None
        except (OSError, zlib.error, lzma.LZMAError, zstandard.ZstdError) as exc:
            reason, detail = classify(exc, self._comp)
            raise FileCorrupt(reason, f"{self._rel}: {detail}") from None
        n = len(data)
        buf[:n] = data
        return n


def _read_member(fh: Any, limit: int, rel: str, name: str) -> bytes:
    """At most ``limit`` bytes of a tar member; a member the archive ends inside is the
    archive's ``truncated``."""
    try:
        return read_upto(fh, limit)
    except (tarfile.ReadError, EOFError) as exc:
        raise FileCorrupt("truncated", f"{rel}: the archive ends inside member {_shown(name)!r} ({exc})") from None


def _zip_link(info: Any) -> bool:
    return (info.external_attr >> 16) & 0o170000 == 0o120000


def _skip_line(fh: Any) -> int:
    """Read to the end of the current line; the bytes skipped."""
    n = 0
    while True:
        chunk = fh.readline(1 << 20)
        n += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return n


def _json_object(line: bytes, first: bool) -> tuple[dict | None, tuple[str, str] | None]:
    """A JSONL line as an object, or ``(reason, what)`` for its reject."""
    body = line.rstrip(b"\r\n")
    if first and body.startswith(b"\xef\xbb\xbf"):
        body = body[3:]
    try:
        s = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, ("invalid_json", f"not UTF-8 ({exc.reason} at byte {exc.start})")
    try:
        obj = json.loads(s)
    except (ValueError, RecursionError) as exc:
        return None, ("invalid_json", str(exc)[:300])
    if not isinstance(obj, dict):
        return None, ("bad_row", f"the line is a JSON {type(obj).__name__}, not an object")
    return obj, None


def _records(batch: pa.RecordBatch) -> Iterator[dict | str]:
    """A Parquet batch's rows as dicts; a row Python cannot hold (a date out of range)
    as a string saying why."""
    try:
        yield from batch.to_pylist()
        return
    except (ValueError, OverflowError, pa.ArrowException):
        pass
    for i in range(batch.num_rows):
        try:
            yield batch.slice(i, 1).to_pylist()[0]
        except (ValueError, OverflowError, pa.ArrowException) as exc:
            yield f"{type(exc).__name__}: {exc}"[:300]


def _license(v: Any) -> tuple[str | None, str | None]:
    """A Stack row's license value (a list joined with `` AND ``), or what is wrong with it."""
    if v is None or isinstance(v, str):
        return v, None
    if isinstance(v, (list, tuple)):
        if all(isinstance(x, str) for x in v):
            return " AND ".join(v) or None, None
        kinds = sorted({type(x).__name__ for x in v if not isinstance(x, str)})
        return None, f"the license list holds {', '.join(kinds)} values, not only names"
    return None, f"the license is a {type(v).__name__}, not a name or a list of names"


def _count(v: Any) -> tuple[int | None, str | None]:
    """A star/fork count as an int64 (NaN and unparsable strings: null, as missing), or
    what is wrong with it (infinite, out of int64, not a number)."""
    if v is None:
        return None, None
    if isinstance(v, bool):
        return int(v), None
    if isinstance(v, str):
        try:
            v = int(v)
        except ValueError:
            return None, None
    if isinstance(v, float) or (not isinstance(v, int) and hasattr(v, "__float__")):
        try:
            f = float(v)
        except (TypeError, ValueError, OverflowError):
            return None, f"{v!r} is not a number"
        if math.isnan(f):
            return None, None
        if math.isinf(f):
            return None, f"{v!r} is not a finite count"
        v = int(v)
    if not isinstance(v, int):
        return None, f"a {type(v).__name__}, not a number"
    if not _INT64[0] <= v <= _INT64[1]:
        return None, f"{v} does not fit 64 bits"
    return v, None


def _flag(v: Any) -> tuple[bool | None, str | None]:
    if v is None or isinstance(v, bool):
        return v, None
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes"), None
    if hasattr(v, "__float__"):   # a number (int, float, Decimal); NaN: missing
        try:
            return (None, None) if math.isnan(float(v)) else (bool(v), None)
        except (TypeError, ValueError, OverflowError):
            pass
    return None, f"a {type(v).__name__}, not true or false"


def _license_candidate(name: str) -> bool:
    """A member that may be the repository's root license file (the shared top folder
    is not known yet): a safe path at most one folder deep named like a license file."""
    parts = _parts(name)
    return (0 < len(parts) <= 2 and not name.startswith("/") and ".." not in parts
            and is_license_file(parts[-1]))


def _archive_license(found: Mapping[str, str | None], prefix: str) -> str | None:
    """The repository license of an archive: its root license files (below the shared
    top folder ``prefix``), as :func:`repository_license` decides (``found``: each
    candidate's identified license)."""
    root = {n[len(prefix):]: spdx for n, spdx in found.items() if n.startswith(prefix)}
    return repository_license([(name, root[name]) for name in root_license_files([n for n in root if "/" not in n])])
