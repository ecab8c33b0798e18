"""The ``code`` reader: source code from the forms it arrives in, one document per file
(or per repository), with the columns code filters and license decisions need.

Layouts (option ``layout``; ``auto``: every file of the source an archive -> ``archive``,
every file Parquet/JSONL -> ``stack``, else ``tree``):

* ``tree``: a directory tree or a git checkout (its working tree). A file's repository
  is the nearest folder above it, inside the source, that holds ``.git``; without one,
  the source root (``repos: git``, the default) or the first folder below the root
  (``repos: folders``: a folder of repositories). ``.git/`` is never read. With
  ``gitignore: true`` (default) files that the repository's ``.gitignore`` files list
  (git's semantics, by the ``pathspec`` library; nested ``.gitignore`` files apply below
  their folder, the deepest deciding) are ``read:gitignored`` rejects. A symlink whose
  target lies outside its repository is a ``read:symlink_outside`` reject and is never
  opened.
* ``archive``: ``.tar``, ``.tar.gz``/``.tgz``, ``.tar.bz2``, ``.tar.xz``, ``.zip``: each
  archive one repository, named by the archive (``requests-2.31.0.tar.gz`` ->
  ``requests-2.31.0``); a single top-level folder shared by every member (GitHub's
  ``owner-repo-sha/``) is not part of the paths. Members are read in memory, never
  extracted: a member with an absolute path or ``..`` is a ``read:unsafe_path`` reject,
  a symlink member a ``read:symlink`` reject; an archive that cannot be read is a
  ``read:corrupt_archive`` (``on_error``).
* ``stack``: Parquet or JSONL (``.gz``/``.zst`` too) in The Stack's layout: one row per
  file with its content, repository name, path, licenses and star/fork counts. Column
  names are found among The Stack v1/v2 names (``columns:`` overrides them).

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
of a repository become one document, in path order, each preceded by ``header`` (its
``{path}`` filled in) and separated by ``separator``; its ``language`` is the language
with the most bytes, ``path`` null, ``size`` the sum. A repository is then read by one
task (memory: one repository, or one Stack-layout file).
"""

from __future__ import annotations

import json
import logging
import posixpath
import tarfile
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from datapipe import fs
from datapipe import schema as S
from datapipe.errors import CorruptInputError, SpecError
from datapipe.readers._streams import FileCorrupt, compression_of, open_binary, read_upto, strip_compression
from datapipe.readers.base import InputFile, ReadSplit, Reader, escape_name
from datapipe.readers.code_lang import detect_language, known_languages
from datapipe.readers.code_license import is_license_file, license_of_text, root_license_files

log = logging.getLogger(__name__)

#: the columns a code document has besides the base schema
COLUMNS: Mapping[str, pa.DataType] = {
    "repo": pa.string(), "path": pa.string(), "language": pa.string(), "size": pa.int64(),
    "license": pa.string(), "stars": pa.int64(), "forks": pa.int64(), "archived": pa.bool_(),
}
LAYOUTS = ("auto", "tree", "archive", "stack")
GROUPS = ("file", "repository")
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


@dataclass(kw_only=True, frozen=True)
class CodeOptions:
    """See the module docstring. ``languages``: allow-list of languages (names as in
    ``code_languages.csv``, e.g. ``[Python, C, C++]``); null: every file, known language
    or not. ``columns``: Stack-layout column names, ``{content: ..., repo: ..., path:
    ..., license: ..., stars: ..., forks: ..., archived: ...}`` (unset: found by name)."""

    layout: str = "auto"
    group: str = "file"
    separator: str = "\n\n"
    header: str = ""
    gitignore: bool = True
    repos: str = "git"
    languages: tuple[str, ...] | None = None
    columns: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, allowed in (("layout", LAYOUTS), ("group", GROUPS), ("repos", REPOS)):
            if getattr(self, name) not in allowed:
                raise SpecError(f"option {name} must be one of {list(allowed)}, got {getattr(self, name)!r}")
        for name in ("separator", "header"):
            if not isinstance(getattr(self, name), str):
                raise SpecError(f"option {name} must be a string, got {getattr(self, name)!r}")
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


def _is_archive(path: str) -> bool:
    return path.lower().endswith(ARCHIVE_SUFFIXES)


def _is_stack(path: str) -> bool:
    return strip_compression(path).lower().endswith(STACK_SUFFIXES)


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


class CodeReader(Reader):
    """Source files of trees, git checkouts, repository archives and Stack-layout tables."""

    format = "code"
    Options = CodeOptions
    columns = COLUMNS

    # ------------------------------------------------------------------ planning

    def _layout(self, files: Sequence[InputFile]) -> str:
        if self.options.layout != "auto":
            return self.options.layout
        if files and all(_is_archive(f.path) for f in files):
            return "archive"
        if files and all(_is_stack(f.path) for f in files):
            return "stack"
        return "tree"

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

    def _has_git(self, folder: str, storage: Any) -> bool:
        cache = self.__dict__.setdefault("_git_folders", {})   # per reader: one stat per folder
        if folder not in cache:
            cache[folder] = fs.exists(fs.join(folder, ".git"), storage)
        return cache[folder]

    def _tree_repo(self, f: InputFile) -> tuple[str, str, str]:
        """``(repo key, repo name, repo folder)`` of a tree file: the nearest folder with
        ``.git`` inside the source, else the root (``repos: git``) or the first folder."""
        root = _root_of(f)
        cache = self.__dict__.setdefault("_repo_of_dir", {})   # per reader: files of a folder share it
        rel = f.rel if f.rel != f.path else fs.basename(f.path)
        folder_key = (root, rel.rpartition("/")[0])
        if folder_key not in cache:
            cache[folder_key] = self._find_repo(root, rel, f.storage)
        return cache[folder_key]

    def _real(self, path: str) -> str:
        cache = self.__dict__.setdefault("_real_dirs", {})
        if path not in cache:
            cache[path] = fs.real_key(path)
        return cache[path]

    def _find_repo(self, root: str, rel: str, storage: Any) -> tuple[str, str, str]:
        parts = _parts(rel)
        for depth in range(len(parts) - 1, -1, -1):
            folder = fs.join(root, *parts[:depth]) if depth else root
            if self._has_git(folder, storage):
                return "/".join(parts[:depth]), "/".join(parts[:depth]) or fs.basename(root), folder
        if self.options.repos == "folders" and len(parts) > 1:
            return parts[0], parts[0], fs.join(root, parts[0])
        return "", fs.basename(root), root

    # ------------------------------------------------------------------ reading

    def read(self, split: ReadSplit) -> Iterator[pa.Table]:
        """The split's rows: file rows (``group: file``), or repository documents plus
        the rejected files (``group: repository``)."""
        pending: list[_Row] = []
        for rows in self._file_rows(split):
            if self.options.group == "file":
                pending.extend(rows)
            else:
                pending.extend(self._grouped(rows))
            while len(pending) >= self.batch_rows:
                yield self._table(pending[: self.batch_rows])
                pending = pending[self.batch_rows:]
        if pending:
            yield self._table(pending)

    def _file_rows(self, split: ReadSplit) -> Iterator[list[_Row]]:
        """Lists of file rows, one list per repository unit (an archive, a Stack file, or
        a tree split's files of one repository, in path order)."""
        layout = self.__dict__.get("_planned_layout") or self._layout(split.files)
        if layout == "tree":
            current: str | None = None
            rows: list[_Row] = []
            ignore = _IgnoreRules(self.options.gitignore)
            for f in split.files:
                key, name, folder = self._tree_repo(f)
                if key != current and rows:
                    yield rows
                    rows = []
                current = key
                rows.append(self._tree_row(f, name, folder, ignore))
            if rows:
                yield rows
            return
        whole = self.options.group == "repository"   # a repository document needs all its rows
        for f in split.files:
            rows = []
            try:
                for row in self._archive_rows(f) if layout == "archive" else self._stack_rows(f):
                    rows.append(row)
                    if not whole and len(rows) >= self.batch_rows:
                        yield rows
                        rows = []
                yield rows
            except FileCorrupt as exc:
                if rows:
                    yield rows
                if self.on_error == "fail":
                    raise CorruptInputError(f.path, f"read:{exc.reason}", exc.detail) from exc
                log.warning("source %s: skipping %s: read:%s (%s)", self.source, f.path, exc.reason, exc.detail)
                yield [_Row(key=f"{f.rel}!{exc.reason}", origin=f.rel, reason=exc.reason, detail=exc.detail)]

    # -- the three layouts ----------------------------------------------------------

    def _tree_row(self, f: InputFile, repo: str, folder: str, ignore: "_IgnoreRules") -> _Row:
        path = fs.relative(f.path, folder)
        row = _Row(key=f"{repo}:{path}", origin=f.rel, repo=repo, path=path,
                   license=self._tree_license(folder, f.storage))
        if fs.is_local(f.path):
            real, inside = fs.real_key(f.path), self._real(folder)
            if not fs.is_inside(real, inside):
                return self._reject(row, "symlink_outside", f"{f.rel} links to {real}, outside repository {repo}")
        rule = ignore.ignored(folder, path, f.storage)
        if rule is not None:
            return self._reject(row, "gitignored", f"{f.rel} is listed in {rule}")
        try:
            with fs.open_input(f.path, f.storage) as fh:   # as it is: a .gz in a repository is a file
                data = read_upto(fh, self.max_doc_bytes + 1)
        except OSError as exc:
            if self.on_error == "fail":
                raise CorruptInputError(f.path, "read:unreadable", str(exc)) from exc
            return self._reject(row, "unreadable", f"{f.rel}: {exc}")
        return self._content(row, data, f.size)

    def _tree_license(self, folder: str, storage: Any) -> str | None:
        """The license of the repository at ``folder``: the first of its root license
        files (path order) whose text is identified; read once per repository per reader.
        A license file that is a link out of the repository is not read."""
        cache = self.__dict__.setdefault("_repo_licenses", {})
        if folder not in cache:
            found = None
            for name in root_license_files(fs.list_dir(folder, storage)):
                path = fs.join(folder, name)
                if not fs.is_file(path, storage):
                    continue
                if fs.is_local(path) and not fs.is_inside(fs.real_key(path), self._real(folder)):
                    continue
                try:
                    with fs.open_input(path, storage) as fh:
                        found = license_of_text(read_upto(fh, _LICENSE_BYTES).decode("utf-8", "replace"))
                except OSError as exc:
                    log.warning("source %s: cannot read license file %s: %s", self.source, path, exc)
                if found is not None:
                    break
            cache[folder] = found
        return cache[folder]

    def _archive_rows(self, f: InputFile) -> Iterator[_Row]:
        repo = _archive_repo(f.path)
        try:
            if f.path.lower().endswith(".zip"):
                with fs.open_input(f.path, f.storage) as raw:
                    yield from self._zip_rows(f, repo, raw)
            else:
                yield from self._tar_rows(f, repo)
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, OSError) as exc:
            raise FileCorrupt("corrupt_archive", f"{f.rel}: {type(exc).__name__}: {exc}") from exc

    def _members(self, names: list[str]) -> str:
        """The single top-level folder every member shares ('' if none)."""
        tops = {_parts(n)[0] for n in names if _parts(n)}
        if len(tops) == 1 and all(len(_parts(n)) > 1 or n.endswith("/") for n in names if _parts(n)):
            return tops.pop() + "/"
        return ""

    def _member_row(self, f: InputFile, repo: str, prefix: str, name: str,
                    license: str | None = None) -> tuple[_Row, bool]:
        """A member's row, and whether its content should be read."""
        path = name[len(prefix):] if name.startswith(prefix) else name
        row = _Row(key=f"{repo}:{path}", origin=f"{f.rel}!{escape_name(name)}", repo=repo, path=path,
                   license=license)
        if name.startswith("/") or ".." in _parts(name) or posixpath.isabs(name):
            return self._reject(row, "unsafe_path", f"{f.rel}: member {name!r} points outside the archive"), False
        if _in_git_dir(path):
            return row, False
        return row, True

    def _tar_rows(self, f: InputFile, repo: str) -> Iterator[_Row]:
        """Two streamed passes (a compressed tar cannot be entered at a member): the
        member names (for the shared top folder), then the rows in archive order."""
        names: list[str] = []
        candidates: dict[str, bytes] = {}   # license files at the top or one folder down
        with fs.open_input(f.path, f.storage) as raw, tarfile.open(fileobj=raw, mode="r|*") as tar:
            for m in tar:
                if m.isdir():
                    continue
                names.append(m.name)
                if m.isfile() and _license_candidate(m.name):
                    candidates[m.name] = read_upto(tar.extractfile(m), _LICENSE_BYTES)
        prefix = self._members(names)
        license = _archive_license(candidates, prefix)
        with fs.open_input(f.path, f.storage) as raw, tarfile.open(fileobj=raw, mode="r|*") as tar:
            for m in tar:
                if m.isdir():
                    continue
                row, read = self._member_row(f, repo, prefix, m.name, license)
                if not read:
                    if row.reason is not None:
                        yield row
                    continue
                if m.issym() or m.islnk():
                    yield self._reject(row, "symlink", f"{f.rel}: member {m.name} is a link to {m.linkname!r}")
                    continue
                if not m.isfile():
                    yield self._reject(row, "not_a_file", f"{f.rel}: member {m.name} is not a regular file")
                    continue
                fh = tar.extractfile(m)
                yield self._content(row, read_upto(fh, self.max_doc_bytes + 1), m.size)

    def _zip_rows(self, f: InputFile, repo: str, raw: Any) -> Iterator[_Row]:
        with zipfile.ZipFile(raw) as z:
            infos = [i for i in z.infolist() if not i.is_dir()]
            prefix = self._members([i.filename for i in infos])
            candidates = {}
            for i in infos:
                if _license_candidate(i.filename) and (i.external_attr >> 16) & 0o170000 != 0o120000:
                    with z.open(i) as fh:
                        candidates[i.filename] = read_upto(fh, _LICENSE_BYTES)
            license = _archive_license(candidates, prefix)
            for info in sorted(infos, key=lambda i: i.filename):
                row, read = self._member_row(f, repo, prefix, info.filename, license)
                if not read:
                    if row.reason is not None:
                        yield row
                    continue
                if (info.external_attr >> 16) & 0o170000 == 0o120000:
                    yield self._reject(row, "symlink", f"{f.rel}: member {info.filename} is a symlink")
                    continue
                with z.open(info) as fh:
                    yield self._content(row, read_upto(fh, self.max_doc_bytes + 1), info.file_size)

    def _stack_rows(self, f: InputFile) -> Iterator[_Row]:
        try:
            if strip_compression(f.path).lower().endswith(".parquet"):
                pf = pq.ParquetFile(fs.open_input(f.path, f.storage))
                cols = self._stack_columns(pf.schema_arrow.names, f)
                batches = (b.to_pylist() for b in pf.iter_batches(batch_size=self.batch_rows,
                                                                    columns=sorted(set(cols.values()))))
            else:
                cols = None
                batches = self._jsonl_batches(f)
            row_no = 0
            for batch in batches:
                for rec in batch:
                    if cols is None:   # JSONL: columns found on the first record
                        cols = self._stack_columns(list(rec), f)
                    yield self._stack_row(f, row_no, rec, cols)
                    row_no += 1
        except (pa.ArrowException, OSError, EOFError, zlib.error, ValueError) as exc:
            raise FileCorrupt("corrupt_table", f"{f.rel}: {type(exc).__name__}: {exc}") from exc

    def _jsonl_batches(self, f: InputFile) -> Iterator[list[dict]]:
        with open_binary(f.path, compression_of(f.path, f.storage), f.storage) as fh:
            batch = []
            for line in fh:
                if line.strip():
                    batch.append(json.loads(line))
                if len(batch) >= self.batch_rows:
                    yield batch
                    batch = []
            if batch:
                yield batch

    def _stack_columns(self, present: Sequence[str], f: InputFile) -> dict[str, str]:
        cols: dict[str, str] = {}
        for fld, candidates in STACK_COLUMNS.items():
            given = self.options.columns.get(fld)
            if given is not None:
                if given not in present:
                    raise SpecError(f"source {self.source!r}: {f.rel} has no column {given!r} (columns.{fld}); "
                                    f"it has {sorted(present)}")
                cols[fld] = given
                continue
            found = next((c for c in candidates if c in present), None)
            if found is not None:
                cols[fld] = found
        for need in ("content", "repo", "path"):
            if need not in cols:
                raise SpecError(f"source {self.source!r}: {f.rel} has no {need} column (looked for "
                                f"{list(STACK_COLUMNS[need])}); name it with options.columns.{need}")
        return cols

    def _stack_row(self, f: InputFile, row_no: int, rec: Mapping[str, Any], cols: Mapping[str, str]) -> _Row:
        repo, path = rec.get(cols["repo"]), rec.get(cols["path"])
        lic = rec.get(cols["license"]) if "license" in cols else None
        if isinstance(lic, (list, tuple)):
            lic = " AND ".join(str(x) for x in lic) or None
        row = _Row(key=f"{repo}:{path}", origin=f"{f.rel}#{row_no}", repo=None if repo is None else str(repo),
                   path=None if path is None else str(path), license=None if lic is None else str(lic),
                   stars=_int(rec.get(cols["stars"])) if "stars" in cols else None,
                   forks=_int(rec.get(cols["forks"])) if "forks" in cols else None,
                   archived=_bool(rec.get(cols["archived"])) if "archived" in cols else None)
        content = rec.get(cols["content"])
        if repo is None or path is None or content is None:
            return self._reject(row, "missing_field", f"{f.rel} row {row_no}: repository, path or content is null")
        if isinstance(content, str):
            content = content.encode("utf-8", "surrogatepass")
        return self._content(row, content, len(content))

    # -- shared --------------------------------------------------------------------

    def _reject(self, row: _Row, reason: str, detail: str) -> _Row:
        row.reason, row.detail, row.text = reason, detail, None
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
        text = text.removeprefix("\ufeff")
        row.language = detect_language(row.path or "", text)
        allowed = self.options.languages
        if allowed is not None and row.language not in allowed:
            return self._reject(row, "language", f"{where}: language {row.language} not in languages")
        if not text.strip():
            return self._reject(row, "empty", f"{where}: the file holds only whitespace")
        row.text = text
        return row

    def _grouped(self, rows: list[_Row]) -> list[_Row]:
        """``group: repository``: each repository's kept rows as one document (path
        order; repositories in order of first appearance), the rejected rows as they are."""
        by_repo: dict[str | None, list[_Row]] = {}
        for r in rows:
            if r.reason is None:
                by_repo.setdefault(r.repo, []).append(r)
        docs = [self._repository_doc(sorted(kept, key=lambda r: r.path or "")) for kept in by_repo.values()]
        return docs + [r for r in rows if r.reason is not None]

    def _repository_doc(self, kept: list[_Row]) -> _Row:
        first = kept[0]
        sep, header = self.options.separator, self.options.header
        text = sep.join(header.replace("{path}", r.path or "") + (r.text or "") for r in kept)
        by_lang: dict[str, int] = {}
        for r in kept:
            if r.language is not None:
                by_lang[r.language] = by_lang.get(r.language, 0) + (r.size or 0)
        language = min(by_lang, key=lambda k: (-by_lang[k], k)) if by_lang else None
        origin = first.origin.rsplit("!", 1)[0] if "!" in first.origin else first.repo or first.origin
        doc = _Row(key=f"{first.repo}", origin=origin, repo=first.repo, text=text, language=language,
                   size=sum(r.size or 0 for r in kept), license=first.license, stars=first.stars,
                   forks=first.forks, archived=first.archived)
        if len(text.encode("utf-8")) > self.max_doc_bytes:
            doc = self._reject(doc, "too_large", f"repository {first.repo}: {self._too_large(len(text.encode()))}")
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
    """``.gitignore`` files of the repositories one task reads, loaded once each (git's
    pattern semantics by ``pathspec``). ``ignored(repo folder, path)`` names the
    ``.gitignore`` that ignores ``path``, or None."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._specs: dict[str, Any] = {}

    def _spec(self, folder: str, storage: Any):
        if folder not in self._specs:
            import pathspec

            path = fs.join(folder, ".gitignore")
            spec = None
            if fs.is_file(path, storage):
                spec = pathspec.GitIgnoreSpec.from_lines(fs.read_text(path, storage).splitlines())
            self._specs[folder] = spec
        return self._specs[folder]

    def ignored(self, repo_folder: str, path: str, storage: Any) -> str | None:
        if not self.enabled:
            return None
        parts = _parts(path)
        verdict, rule = None, None
        for depth in range(len(parts)):   # the repository's root first, the deepest last
            folder = fs.join(repo_folder, *parts[:depth]) if depth else repo_folder
            spec = self._spec(folder, storage)
            if spec is None:
                continue
            check = spec.check_file("/".join(parts[depth:]))
            if check.include is not None:
                verdict = check.include
                rule = "/".join(parts[:depth] + [".gitignore"])
        return rule if verdict else None


def _license_candidate(name: str) -> bool:
    """A member that may be the repository's root license file (the shared top folder
    is not known yet): a safe path at most one folder deep named like a license file."""
    parts = _parts(name)
    return (0 < len(parts) <= 2 and not name.startswith("/") and ".." not in parts
            and is_license_file(parts[-1]))


def _archive_license(candidates: Mapping[str, bytes], prefix: str) -> str | None:
    """The repository license of an archive: its root license files (below the shared
    top folder ``prefix``), the first identified in path order."""
    root = {n[len(prefix):]: data for n, data in candidates.items() if n.startswith(prefix)}
    for name in root_license_files([n for n in root if "/" not in n]):
        found = license_of_text(root[name].decode("utf-8", "replace"))
        if found is not None:
            return found
    return None


def _int(v: Any) -> int | None:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


def _bool(v: Any) -> bool | None:
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes")
    return bool(v)
