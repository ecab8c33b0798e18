"""arXiv LaTeX source reader: papers as arXiv ships them in bulk, cleaned the way
RedPajama's arXiv subset was.

Inputs (each a job-spec path):

* a bulk ``.tar`` (``arXiv_src_1712_001.tar``) of per-paper ``.gz`` members named by id
  (``1712/1712.01076v2.gz``, old style ``0408/hep-ex0408102.gz``); each ``.gz`` is
  either one gzipped ``.tex`` or a gzipped tar of the paper's files;
* one such per-paper ``.gz`` (or ``.tar.gz``);
* ``.tex`` files in folders: a file with ``\\documentclass`` (or ``\\documentstyle``) is
  a paper's main file and its ``\\input``/``\\include`` files are read from beside it;
  a ``.tex`` file without one is part of some paper (``read:included_file``).

Per paper: the main file is the one with ``\\documentclass`` (several: the one named
``main``/``ms``/like the paper, else the largest); ``\\input``/``\\include`` are followed
inside the paper (``.tex`` added when missing; depth 10; a file that is not in the paper
is dropped and counted in metadata ``missing_inputs``). Cleaning, after RedPajama's
``arxiv_cleaner``: comments removed (``%`` to end of line, not ``\\%``); user macros
expanded (``\\newcommand``/``\\renewcommand``/``\\providecommand``/``\\def``, with or
without arguments, ``#1``.. substituted; three passes for nested macros); everything
before the first sectioning command (``\\chapter``, ``\\section``, ``\\subsection``...)
removed (the preamble, title block and abstract, as RedPajama did); everything from the
bibliography on removed (``\\begin{thebibliography}``, ``\\bibliography{``,
``\\printbibliography``: appendices after the references go too) and
``\\end{document}``; runs of blank lines collapsed. Math stays LaTeX.

Columns: ``text`` (the cleaned LaTeX), ``url`` ``https://arxiv.org/abs/<id>``,
``source_id`` ``<id>v<version>`` (``<id>`` when the name has no version), ``metadata``
JSON ``{"arxiv_id", "version", "categories", "missing_inputs"}``; ``categories`` from
``metadata_file`` (a JSONL with ``id`` and ``categories``, the arXiv metadata snapshot's
format) when given. The id key is ``<id>v<version>``, so two versions are two ids.

``versions: latest`` (default) keeps the newest version of each id *within one input
file* (a bulk tar, or one folder's files in one split); older ones are rejects
``read:old_version`` naming the newer. The engine reads splits independently, so across
input files the job adds the global stage ``latest_version`` (stages/latest_version.py:
highest ``version`` per ``arxiv_id`` of the metadata, over the whole corpus; see
docs/readers.md). ``versions: all`` keeps every version.

Counted rejects naming the paper: ``read:bad_archive`` (a member that is not gzip or
whose tar is broken), ``read:no_tex`` (no LaTeX: PDF-only submissions), ``read:no_main_file``
(no ``\\documentclass``), ``read:empty`` (nothing left after cleaning), ``read:too_large``,
``read:old_version``, ``read:included_file``.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
import zlib
from dataclasses import dataclass
from typing import Iterator, Literal

from datapipe import fs
from datapipe.errors import SpecError
from datapipe.readers.base import InputFile, Rec, Reader, reject

_ID_RE = re.compile(r"(?P<old>[a-z][a-z\-]+(?:\.[A-Z]{2})?)?/?(?P<num>\d{4}\.\d{4,5}|\d{7})(?:v(?P<v>\d+))?$")
_TEXT_EXT = (".tex", ".ltx", ".latex", ".bbl", ".sty", ".cls", ".def", ".cfg", ".inc", ".txt", ".bib", ".clo")
_MAIN_RE = re.compile(r"^[^%\n]*\\document(?:class|style)\b", re.M)
_SECTION_RE = re.compile(r"\\(?:part|chapter|section|subsection|subsubsection|paragraph)\*?\s*[\[{]")
_BIB_RE = re.compile(r"\\begin\{thebibliography\}|\\bibliography\s*\{|\\printbibliography\b")
_INPUT_RE = re.compile(r"\\(?:input|include)\s*\{([^}]*)\}|\\input\s+([^\s{}\\]+)")
_COMMENT_RE = re.compile(r"(?<!\\)%.*")
_BLANKS_RE = re.compile(r"\n{3,}")
MAX_DEPTH = 10


@dataclass(kw_only=True, frozen=True)
class ArxivOptions:
    """``versions``: ``latest`` (newest version of each id within an input file; across
    files: the ``latest_version`` stage) or
    ``all``. ``metadata_file``: JSONL of ``{"id", "categories"}`` (the arXiv metadata
    snapshot) for the ``categories`` metadata."""

    versions: Literal["latest", "all"] = "latest"
    metadata_file: str | None = None

    def __post_init__(self) -> None:
        if self.versions not in ("latest", "all"):
            raise SpecError(f"option versions must be 'latest' or 'all', got {self.versions!r}")
        if self.metadata_file is not None and not fs.is_file(self.metadata_file):
            raise SpecError(f"option metadata_file: {self.metadata_file!r} is not a file; give a JSONL with "
                            "'id' and 'categories' per line (arxiv-metadata-oai-snapshot.json) or null")


def parse_id(name: str) -> tuple[str, int | None] | None:
    """``(arXiv id, version)`` from a member or file name (``1712/1712.01076v2.gz``,
    ``hep-ex0408102.gz``, ``hep-ex/0408102``); None when the name holds no id."""
    stem = name.rsplit("/", 1)[-1] if "/" not in name.rstrip("/").split("/")[-1] else name
    stem = re.sub(r"(\.tar)?\.gz$|\.tex$|\.tar$", "", stem, flags=re.I)
    m = _ID_RE.search(stem)
    if not m:
        return None
    old, num, v = m.group("old"), m.group("num"), m.group("v")
    if old is None and len(num) == 7:
        return None
    ident = f"{old}/{num}" if old else num
    return ident, int(v) if v else None


# ----------------------------------------------------------------------------- cleaning

def strip_comments(tex: str) -> str:
    """``%`` to the end of the line removed (not ``\\%``); a line holding only a comment
    goes entirely. ``verbatim`` blocks are left alone."""
    out = []
    in_verb = False
    for line in tex.split("\n"):
        if "\\begin{verbatim}" in line:
            in_verb = True
        if in_verb:
            out.append(line)
            if "\\end{verbatim}" in line:
                in_verb = False
            continue
        if line.lstrip().startswith("%"):
            continue
        out.append(_COMMENT_RE.sub("", line))
    return "\n".join(out)


def _braced(s: str, i: int) -> tuple[str, int] | None:
    """The ``{...}`` group starting at ``s[i]`` (after spaces), and the index after it."""
    while i < len(s) and s[i] in " \t\n":
        i += 1
    if i >= len(s) or s[i] != "{":
        return None
    depth = 0
    for j in range(i, len(s)):
        c = s[j]
        if c == "\\":
            continue
        if c == "{" and (j == 0 or s[j - 1] != "\\"):
            depth += 1
        elif c == "}" and s[j - 1] != "\\":
            depth -= 1
            if depth == 0:
                return s[i + 1:j], j + 1
    return None


_NEWCOMMAND_RE = re.compile(r"\\(?:re)?newcommand\*?\s*\{?\s*\\([A-Za-z@]+)\s*\}?\s*(?:\[(\d)\])?\s*(?:\[[^\]]*\])?")
_PROVIDE_RE = re.compile(r"\\providecommand\*?\s*\{?\s*\\([A-Za-z@]+)\s*\}?\s*(?:\[(\d)\])?")
_DEF_RE = re.compile(r"\\[gex]?def\s*\\([A-Za-z@]+)((?:#\d)*)\s*")


def find_macros(tex: str) -> tuple[dict[str, tuple[int, str]], str]:
    """User macros (name -> (number of arguments, body)) and the text without their
    definitions."""
    macros: dict[str, tuple[int, str]] = {}
    out, pos = [], 0
    for m in sorted(list(_NEWCOMMAND_RE.finditer(tex)) + list(_PROVIDE_RE.finditer(tex))
                    + list(_DEF_RE.finditer(tex)), key=lambda m: m.start()):
        if m.start() < pos:
            continue
        body = _braced(tex, m.end())
        if body is None:
            continue
        name = m.group(1)
        nargs = int(m.group(2)) if m.re is not _DEF_RE and m.group(2) else (
            len(m.group(2)) // 2 if m.re is _DEF_RE else 0)
        if not (m.re is _PROVIDE_RE and name in macros):
            macros[name] = (nargs, body[0])
        out.append(tex[pos:m.start()])
        pos = body[1]
    out.append(tex[pos:])
    return macros, "".join(out)


def expand_macros(tex: str, macros: dict[str, tuple[int, str]], passes: int = 3) -> str:
    """Each use of a user macro replaced by its body, ``#k`` by the k-th ``{...}``
    argument (a use missing its arguments is left as written)."""
    if not macros:
        return tex
    names = sorted(macros, key=len, reverse=True)
    use = re.compile(r"\\(" + "|".join(re.escape(n) for n in names) + r")(?![A-Za-z@])")
    for _ in range(passes):
        out, pos, changed = [], 0, False
        for m in use.finditer(tex):
            if m.start() < pos:
                continue
            nargs, body = macros[m.group(1)]
            i, args = m.end(), []
            for _k in range(nargs):
                got = _braced(tex, i)
                if got is None:
                    break
                args.append(got[0])
                i = got[1]
            if len(args) < nargs:
                continue
            for k, a in enumerate(args, 1):
                body = body.replace(f"#{k}", a)
            if nargs == 0 and i < len(tex) and tex[i].isalpha():
                body += " "      # \foo bar -> body + space: keep the words apart
            out.append(tex[pos:m.start()])
            out.append(body)
            pos, changed = i, True
        out.append(tex[pos:])
        tex = "".join(out)
        if not changed:
            break
    return tex


def resolve_inputs(tex: str, files: dict[str, str], missing: list[str], depth: int = 0) -> str:
    """``\\input{x}``/``\\include{x}`` replaced by the paper's file ``x`` (or ``x.tex``),
    recursively; names not in ``files`` are dropped and listed in ``missing``."""
    def sub(m: re.Match) -> str:
        name = (m.group(1) or m.group(2) or "").strip()
        for cand in (name, name + ".tex", name.lstrip("./"), name.lstrip("./") + ".tex"):
            if cand in files:
                if depth >= MAX_DEPTH:
                    missing.append(name + " (too deep)")
                    return ""
                return "\n" + resolve_inputs(strip_comments(files[cand]), files, missing, depth + 1) + "\n"
        missing.append(name)
        return ""
    return _INPUT_RE.sub(sub, tex)


def clean_paper(files: dict[str, str], main: str) -> tuple[str, list[str]]:
    """The cleaned LaTeX of a paper (``files``: path in the paper -> text) from its main
    file, and the inputs it named that were not there."""
    missing: list[str] = []
    tex = resolve_inputs(strip_comments(files[main]), files, missing)
    macros, tex = find_macros(tex)
    first = _SECTION_RE.search(tex)
    tex = tex[first.start():] if first else ""
    bib = _BIB_RE.search(tex)
    if bib:
        tex = tex[:bib.start()]
    tex = tex.replace("\\end{document}", "")
    tex = expand_macros(tex, macros)
    return _BLANKS_RE.sub("\n\n", tex).strip(), missing


def main_file(files: dict[str, str], paper_id: str = "") -> str | None:
    """The file with ``\\documentclass``: if several, one named main/ms/the paper's id,
    else the largest."""
    mains = sorted(n for n, t in files.items() if n.lower().endswith((".tex", ".ltx", ".latex")) or "." not in
                   n.rsplit("/", 1)[-1] if _MAIN_RE.search(t))
    if not mains:
        return None
    for n in mains:
        stem = n.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()
        if stem in ("main", "ms", paper_id.replace("/", "").lower()):
            return n
    return max(mains, key=lambda n: (len(files[n]), n))


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")   # older arXiv sources: 8-bit TeX


# ----------------------------------------------------------------------------- reader

class _Bad(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def paper_files(payload: bytes, name: str, max_bytes: int) -> dict[str, str]:
    """A per-paper ``.gz`` (or ``.tar``, or ``.tex``) as its text files."""
    data = payload
    if name.lower().endswith(".gz") or payload[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(payload)) as g:
                data = g.read(max_bytes + 1)
        except (OSError, EOFError, zlib.error) as e:
            raise _Bad("bad_archive", f"not a readable gzip: {e}") from None
        if len(data) > max_bytes:
            raise _Bad("too_large", f"decompresses to more than max_doc_bytes ({max_bytes})")
    if len(data) > 262 and data[257:262] == b"ustar":
        files: dict[str, str] = {}
        others = []
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as t:
                for m in t.getmembers():
                    if not m.isfile():
                        continue
                    path = m.name.lstrip("./")
                    if path.lower().endswith(_TEXT_EXT) or "." not in path.rsplit("/", 1)[-1]:
                        fh = t.extractfile(m)
                        files[path] = _decode(fh.read()) if fh is not None else ""
                    else:
                        others.append(path)
        except (tarfile.TarError, OSError, EOFError) as e:
            raise _Bad("bad_archive", f"broken tar inside the .gz: {e}") from None
        if not files:
            raise _Bad("no_tex", f"no LaTeX files (only: {', '.join(sorted(others)[:5]) or 'nothing'})")
        return files
    if data[:5] == b"%PDF-":
        raise _Bad("no_tex", "a PDF-only submission")
    return {"main.tex": _decode(data)}


class ArxivReader(Reader):
    """One document per paper (the cleaned LaTeX of its newest version)."""

    format = "arxiv"
    Options = ArxivOptions

    def _categories(self) -> dict[str, str]:
        cats = getattr(self, "_cats", None)
        if cats is None:
            cats = {}
            if self.options.metadata_file is not None:
                for line in fs.read_text(self.options.metadata_file).splitlines():
                    if line.strip():
                        obj = json.loads(line)
                        cats[str(obj.get("id"))] = obj.get("categories")
            self._cats = cats
        return cats

    def _records(self, f: InputFile, start: int, end: int | None) -> Iterator[Rec]:
        low = f.path.lower()
        if low.endswith(".tar"):
            yield from self._bulk(f)
        elif low.endswith((".tex", ".ltx", ".latex")):
            yield from self._tex_file(f)
        else:
            with fs.open_input(f.path, f.storage) as fh:
                payload = fh.read(self.max_doc_bytes + 1)
            ident = parse_id(f.rel) or (f.rel.rsplit("/", 1)[-1].split(".")[0], None)
            yield self._paper(f, f.rel, ident, payload)

    def _bulk(self, f: InputFile) -> Iterator[Rec]:
        """A bulk tar, read twice streaming: names first (to know each id's newest
        version), then the papers."""
        newest: dict[str, int] = {}
        with fs.open_input(f.path, f.storage) as fh, tarfile.open(fileobj=fh, mode="r|") as t:
            for m in t:
                got = parse_id(m.name) if m.isfile() else None
                if got is not None:
                    newest[got[0]] = max(newest.get(got[0], 0), got[1] or 0)
        with fs.open_input(f.path, f.storage) as fh, tarfile.open(fileobj=fh, mode="r|") as t:
            for m in t:
                if not m.isfile():
                    continue
                loc = f"{f.rel}!{m.name}"
                got = parse_id(m.name)
                if got is None:
                    yield reject(loc, loc, "not_a_paper", f"member name {m.name!r} holds no arXiv id")
                    continue
                if self.options.versions == "latest" and (got[1] or 0) < newest[got[0]]:
                    key = f"{got[0]}v{got[1]}"
                    yield Rec(key, loc, reason="old_version", detail=f"{key} superseded by v{newest[got[0]]} in "
                              f"{f.rel}", source_id=key)
                    continue
                if m.size > self.max_doc_bytes:
                    key = f"{got[0]}v{got[1]}" if got[1] else got[0]
                    yield Rec(key, loc, reason="too_large", detail=self._too_large(m.size), source_id=key)
                    continue
                fh2 = t.extractfile(m)
                yield self._paper(f, loc, got, fh2.read() if fh2 is not None else b"")

    def _paper(self, f: InputFile, loc: str, ident: tuple[str, int | None], payload: bytes) -> Rec:
        pid, version = ident
        key = f"{pid}v{version}" if version else pid
        try:
            if len(payload) > self.max_doc_bytes:
                raise _Bad("too_large", self._too_large(len(payload)))
            files = paper_files(payload, loc, self.max_doc_bytes)
            main = main_file(files, pid)
            if main is None:
                raise _Bad("no_main_file", f"no \\documentclass in {', '.join(sorted(files)[:5])}")
            text, missing = clean_paper(files, main)
            if not text:
                raise _Bad("empty", "no sectioning command (\\section...) or nothing before the bibliography")
        except _Bad as e:
            return Rec(key, loc, reason=e.reason, detail=f"{key}: {e.detail}", source_id=key)
        meta = {"arxiv_id": pid, "version": version, "categories": self._categories().get(pid),
                "missing_inputs": missing or None}
        return Rec(key, loc, text=text, url=f"https://arxiv.org/abs/{pid}", source_id=key,
                   metadata=json.dumps(meta, sort_keys=True))

    def _tex_file(self, f: InputFile) -> Iterator[Rec]:
        """A ``.tex`` in a folder: a paper when it has ``\\documentclass`` (its inputs
        read from beside it), else part of one."""
        tex = _decode(fs.read_bytes(f.path, f.storage))
        if not _MAIN_RE.search(tex):
            yield reject(f.rel, f.rel, "included_file", "no \\documentclass: part of a paper in this folder")
            return
        folder = fs.parent(f.path)
        files = {fs.basename(f.path): tex}
        for name in fs.list_dir(folder, f.storage):
            base = fs.basename(name)
            if base not in files and base.lower().endswith(_TEXT_EXT):
                files[base] = _decode(fs.read_bytes(fs.join(folder, base), f.storage))
        ident = parse_id(fs.basename(fs.parent(f.path))) or parse_id(f.rel) or (f.rel.rsplit(".", 1)[0], None)
        pid, version = ident
        key = f"{pid}v{version}" if version else pid
        text, missing = clean_paper(files, fs.basename(f.path))
        if not text:
            yield Rec(key, f.rel, reason="empty", detail=f"{key}: nothing left after cleaning", source_id=key)
            return
        meta = {"arxiv_id": pid, "version": version, "categories": self._categories().get(pid),
                "missing_inputs": missing or None}
        yield Rec(key, f.rel, text=text, url=f"https://arxiv.org/abs/{pid}", source_id=key,
                  metadata=json.dumps(meta, sort_keys=True))
