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

Every byte comes through the input layer (:mod:`datapipe.readers.inputs`): a bulk tar is
read with :func:`~datapipe.readers.inputs.tar_members` (a tar cut short or damaged keeps
the papers read before the damage and adds the file's ``read:truncated`` /
``read:corrupt_archive`` reject), a folder paper's ``\\input`` files through
``Input.sibling`` (confined to the input roots, regular files only, bounded), and
``metadata_file`` through an ``Input`` rooted at its own folder.

Per paper: the main file is the one with ``\\documentclass`` (several: the one named
``main``/``ms``/like the paper, else the largest); ``\\input``/``\\include`` are followed
inside the paper (``.tex`` added when missing; depth 10; a file that is not in the paper
is dropped and counted in metadata ``missing_inputs``, a file already being expanded in
the same chain (a cycle) too, as ``name (cycle)``, and in a folder a file the input layer
refuses as ``name (<reason>)``). Cleaning, after RedPajama's ``arxiv_cleaner``: comments
removed (``%`` to end of line, not ``\\%``); user macros expanded
(``\\newcommand``/``\\renewcommand``/``\\providecommand``/``\\def``, with or without
arguments, ``#1``.. substituted; three passes for nested macros; a conditional testing
one of them, ``\\ifdefined\\final``, replaced by the branch TeX takes:
:func:`resolve_conditionals`); everything before the
first sectioning command (``\\chapter``, ``\\section``, ``\\subsection``...) removed (the
preamble, title block and abstract, as RedPajama did); everything from the bibliography
on removed (``\\begin{thebibliography}``, ``\\bibliography{``, ``\\printbibliography``:
appendices after the references go too), ``\\bibliographystyle{...}`` and
``\\end{document}``; runs of blank lines
collapsed. Math stays LaTeX.

Budgets per paper: the text that ``\\input`` and macros expand to may reach
``limits.expanded_bytes`` (default ``max_doc_bytes``), a paper follows at most
:data:`MAX_INCLUDES` ``\\input``/``\\include``; past either: ``read:expansion_limit``. A
paper's cleaning runs under ``limits.doc_seconds`` (``read:timeout``).

Columns: ``text`` (the cleaned LaTeX), ``url`` ``https://arxiv.org/abs/<id>``,
``source_id`` ``<id>v<version>`` (``<id>`` when the name has no version), ``metadata``
JSON ``{"arxiv_id", "version", "categories", "missing_inputs"}``; ``categories`` from
``metadata_file`` (a JSONL with ``id`` and ``categories``, the arXiv metadata snapshot's
format) when given. The id key is ``<id>v<version>``, so two versions are two ids.

``versions: latest`` (default) keeps the newest version of each id *within one input
file* (a bulk tar, or one folder's files in one split); older ones are rejects
``read:old_version`` naming the newer. The engine reads splits independently, so across
input files the job adds the global stage ``latest_version`` (stages/dedup/latest_version.py:
highest ``version`` per ``arxiv_id`` of the metadata, over the whole corpus; see
docs/readers.md). ``versions: all`` keeps every version.

Counted rejects naming the paper: ``read:bad_archive`` (a member that is not gzip or
whose tar is broken or cut), ``read:no_tex`` (no LaTeX: PDF-only submissions),
``read:no_main_file`` (no ``\\documentclass``), ``read:empty`` (an empty member, or
nothing left after cleaning), ``read:too_large``, ``read:old_version``,
``read:included_file``, ``read:not_a_paper`` (a member whose name holds no id, or that is
a link or special file), ``read:bad_name`` (a version past 2**31-1), ``read:duplicate``
(a second member with the same id and version), ``read:expansion_limit``,
``read:timeout``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import posixpath
import re
import tarfile
import zlib
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Iterator, Literal

from datapipe import fs
from datapipe.errors import SpecError
from datapipe.readers._streams import FileCorrupt
from datapipe.readers.base import InputFile, Reader, Rec, reject
from datapipe.readers.inputs import DEFAULT_LIMITS, Input, InputLimits, Refused, tar_members, time_budget

log = logging.getLogger(__name__)

# old style: archive + 7 digits (hep-ex0408102); new style: 4.4-5 digits (1712.01076)
_ID_RE = re.compile(r"(?:(?P<old>[a-z][a-z\-]+(?:\.[A-Z]{2})?)/?(?P<onum>\d{7})|(?P<num>\d{4}\.\d{4,5}))"
                    r"(?:v(?P<v>\d+))?$")
#: characters at the end of a name's last component looked at for an id: the longest
#: real id with its version (``solv-int9901001v12.tar.gz``) is far shorter, and a
#: bounded tail keeps the id regex linear in the name (a 40,000-character member name)
_ID_TAIL = 80
#: the largest version a name may carry (an int32); a larger one is ``read:bad_name``
MAX_VERSION = 2**31 - 1
_TEXT_EXT = (".tex", ".ltx", ".latex", ".bbl", ".sty", ".cls", ".def", ".cfg", ".inc", ".txt", ".bib", ".clo")
_MAIN_RE = re.compile(r"^[^%\n]*\\document(?:class|style)\b", re.M)
_SECTION_RE = re.compile(r"\\(?:part|chapter|section|subsection|subsubsection|paragraph)\*?\s*[\[{]")
_BIB_RE = re.compile(r"\\begin\{thebibliography\}|\\bibliography\s*\{|\\printbibliography\b")
# typesets nothing; often just before \bibliography{, anywhere in the body in some papers
_BIBSTYLE_RE = re.compile(r"\\bibliographystyle\s*\{[^{}]*\}[ \t]*\n?")
# an \input name holds no brace: an unclosed "\input{" then scans only to the next brace
_INPUT_RE = re.compile(r"\\(?:input|include)\s*\{([^{}]*)\}|\\input\s+([^\s{}\\]+)")
_COMMENT_RE = re.compile(r"(?<!\\)%.*")
_BLANKS_RE = re.compile(r"\n{3,}")
_USE_RE = re.compile(r"\\([A-Za-z@]+)")
MAX_DEPTH = 10
#: ``\input``/``\include`` one paper may follow (each file at most once per chain, but a
#: file may be included from many places): past it, ``read:expansion_limit``
MAX_INCLUDES = 10_000
#: longest ``metadata_file`` line read (the snapshot's lines are a few KB)
_META_LINE_BYTES = 16 << 20


def _metadata_input(path: str, storage: Any = None, limits: InputLimits = DEFAULT_LIMITS) -> Input:
    """``metadata_file`` through the input layer: a side input the user named, confined
    to its own folder (a link to elsewhere is refused), regular files only, bounded."""
    return Input(path, fs.basename(path), (fs.parent(path) or ".",), storage, limits)


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
        if self.metadata_file is None:
            return
        if not isinstance(self.metadata_file, str) or not self.metadata_file:
            raise SpecError(f"option metadata_file must be a path, got {self.metadata_file!r}")
        try:
            _metadata_input(self.metadata_file).check()
        except (FileCorrupt, OSError, ValueError) as exc:
            why = exc.detail if isinstance(exc, FileCorrupt) else f"{type(exc).__name__}: {exc}"
            raise SpecError(f"option metadata_file: {self.metadata_file!r} is not a readable file ({why}); give a "
                            "JSONL with 'id' and 'categories' per line (arxiv-metadata-oai-snapshot.json; a "
                            "regular file, not a link to another folder) or null") from None


class BadName(ValueError):
    """A name that holds an arXiv id with a version no real paper has (past
    :data:`MAX_VERSION`): ``read:bad_name``, so no stage downstream sees the number."""


def parse_id(name: str) -> tuple[str, int | None] | None:
    """``(arXiv id, version)`` from a member or file name (``1712/1712.01076v2.gz``,
    ``hep-ex0408102.gz``); None when the name holds no id. Only the last path
    component's last :data:`_ID_TAIL` characters are looked at, so the cost does not
    grow with the name. Raises :class:`BadName` for a version past 2**31-1."""
    stem = name.rsplit("/", 1)[-1][-_ID_TAIL:]
    stem = re.sub(r"(\.tar)?\.gz$|\.tex$|\.tar$", "", stem, flags=re.I)
    m = _ID_RE.search(stem)
    if not m:
        return None
    old, num, v = m.group("old"), m.group("onum") or m.group("num"), m.group("v")
    if v is not None and (len(v) > 10 or int(v) > MAX_VERSION):
        raise BadName(f"{name[-200:]!r}: version {v[:30]}{'...' if len(v) > 30 else ''} is past 2**31-1; "
                      "not a name arXiv gives")
    ident = f"{old}/{num}" if old else num
    return ident, int(v) if v else None


# ----------------------------------------------------------------------------- cleaning

class _Bad(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def _over(budget: int, what: str) -> _Bad:
    return _Bad("expansion_limit", f"{what} expand the paper past limits.expanded_bytes ({budget} bytes)")


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


# possessive whitespace and a bracket group without brackets inside: a definition's
# pattern fails in one scan, never by trying every split of a long run of spaces
_NEWCOMMAND_RE = re.compile(r"\\(?:re)?newcommand\*?\s*+\{?\s*+\\([A-Za-z@]+)\s*+\}?\s*+(?:\[(\d)\])?\s*+"
                            r"(?:\[[^\[\]]*+\])?")
_PROVIDE_RE = re.compile(r"\\providecommand\*?\s*+\{?\s*+\\([A-Za-z@]+)\s*+\}?\s*+(?:\[(\d)\])?")
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


#: TeX's conditionals (each closed by ``\\fi``); ``\\newif`` adds a paper's own. Not
#: ``\\iff`` (the math symbol) nor ``\\ifthenelse`` (a command with arguments, no ``\\fi``)
_CONDITIONALS = frozenset(
    "if ifcat ifnum ifdim ifodd ifvmode ifhmode ifmmode ifinner ifvoid ifhbox ifvbox ifx ifeof iftrue "
    "iffalse ifcase ifdefined ifcsname iffontchar ifincsname ifpdf ifxetex ifluatex ifpdftex".split())
_COND_TOKEN_RE = re.compile(r"\\(if[A-Za-z@]*|else|fi)(?![A-Za-z@])")
_NEWIF_RE = re.compile(r"\\newif\s*\\(if[A-Za-z@]+)")
# the tests whose answer the paper itself decides: is one of its own macros defined
_DEFINED_RE = re.compile(r"\\ifdefined\s*\\([A-Za-z@]+)|\\ifcsname\s*([A-Za-z@]+)\s*\\endcsname"
                         r"|\\ifx\s*\\([A-Za-z@]+)\s*\\undefined(?![A-Za-z@])")


def resolve_conditionals(tex: str, macros: dict[str, tuple[int, str]]) -> str:
    """Each ``\\ifdefined\\name`` (``\\ifcsname name\\endcsname``; ``\\ifx\\name\\undefined``,
    its negation) testing a macro the paper defines replaced by the branch TeX would
    take, without the ``\\if``/``\\else``/``\\fi``: expanding ``\\def\\final{}`` inside
    ``\\ifdefined\\final`` would otherwise leave a dangling ``\\ifdefined``. Nested
    conditionals are matched (TeX's own and the paper's ``\\newif`` ones) in one scan
    (linear: what is cut is collected, then the text copied once); a test of a name the
    paper does not define (a package's) and an unclosed one are left as written."""
    if "\\if" not in tex or not macros:
        return tex
    conds = _CONDITIONALS | {m.group(1) for m in _NEWIF_RE.finditer(tex)}
    # match each conditional with its \else and \fi: (start, head end, else start, else end, fi start, fi end)
    stack: list[list[int]] = []
    spans: list[tuple[int, int, int, int, int, int]] = []
    for m in _COND_TOKEN_RE.finditer(tex):
        word = m.group(1)
        if word == "fi":
            if stack:
                start, head, e0, e1 = stack.pop()
                spans.append((start, head, e0, e1, m.start(), m.end()))
        elif word == "else":
            if stack and stack[-1][2] < 0:
                stack[-1][2:] = [m.start(), m.end()]
        elif word in conds:
            d = _DEFINED_RE.match(tex, m.start()) if word in ("ifdefined", "ifcsname", "ifx") else None
            # only a test of the paper's own macro is decided; the rest are matched, not changed
            decide = d is not None and (d.group(1) or d.group(2) or d.group(3)) in macros
            stack.append([m.start(), d.end() if decide else -1, -1, -1])
    cuts: list[tuple[int, int]] = []      # what TeX would not typeset: the tests and the branch not taken
    for start, head, e0, e1, f0, f1 in spans:
        if head < 0:
            continue
        if _DEFINED_RE.match(tex, start).group(3) is None:    # defined: the first branch
            cuts += [(start, head), (e0, f1) if e0 >= 0 else (f0, f1)]
        else:                                                # \ifx\name\undefined: the \else branch
            cuts += [(start, e1), (f0, f1)] if e0 >= 0 else [(start, f1)]
    out, pos = [], 0
    for a, b in sorted(cuts):             # a cut inside another (a dropped branch) is covered by it
        if a > pos:
            out.append(tex[pos:a])
        pos = max(pos, b)
    out.append(tex[pos:])
    return "".join(out)


def expand_macros(tex: str, macros: dict[str, tuple[int, str]], passes: int = 3, *,
                  budget: int | None = None) -> str:
    """Each use of a user macro replaced by its body, ``#k`` by the k-th ``{...}``
    argument (a use missing its arguments is left as written). A pass whose text would
    pass ``budget`` characters stops there (``read:expansion_limit``): a macro that uses
    itself (``\\def\\a{\\a\\a}``) grows geometrically."""
    if not macros:
        return tex
    limit = budget if budget is not None else float("inf")
    for _ in range(passes):
        out, pos, changed, size = [], 0, False, 0
        for m in _USE_RE.finditer(tex):
            if m.start() < pos:
                continue
            got = macros.get(m.group(1))
            if got is None:
                continue
            nargs, body = got
            i, args = m.end(), []
            for _k in range(nargs):
                arg = _braced(tex, i)
                if arg is None:
                    break
                args.append(arg[0])
                i = arg[1]
            if len(args) < nargs:
                continue
            piece = m.start() - pos
            for k, a in enumerate(args, 1):
                tok = f"#{k}"
                n = body.count(tok)
                if n and size + piece + len(body) + n * (len(a) - len(tok)) > limit:
                    raise _over(int(limit), "macros")
                body = body.replace(tok, a)
            if nargs == 0 and i < len(tex) and tex[i].isalpha():
                body += " "      # \foo bar -> body + space: keep the words apart
            size += piece + len(body)
            if size > limit:
                raise _over(int(limit), "macros")
            out.append(tex[pos:m.start()])
            out.append(body)
            pos, changed = i, True
        if size + len(tex) - pos > limit:
            raise _over(int(limit), "macros")
        out.append(tex[pos:])
        tex = "".join(out)
        if not changed:
            break
    return tex


#: what a loader gives for an ``\input`` name: ``(file key, text)``, a refusal reason
#: (the input layer would not open it), or None (not in the paper)
Loaded = tuple[str, str] | str | None


def _candidates(name: str) -> tuple[str, ...]:
    return (name, name + ".tex", name.lstrip("./"), name.lstrip("./") + ".tex")


def _files_loader(files: dict[str, str]) -> Callable[[str], Loaded]:
    def load(name: str) -> Loaded:
        for cand in _candidates(name):
            if cand in files:
                return cand, files[cand]
        return None
    return load


class _Includes:
    """``\\input``/``\\include`` followed for one paper: a file already being expanded
    in the same chain is refused (a cycle, listed as ``name (cycle)``), depth
    :data:`MAX_DEPTH`, at most :data:`MAX_INCLUDES` directives, and the expanded text,
    counting the directives it held (what was scanned), at most ``budget`` characters
    (``read:expansion_limit``)."""

    def __init__(self, load: Callable[[str], Loaded], budget: int) -> None:
        self.load, self.budget = load, budget
        self.missing: list[str] = []
        self.size = self.count = 0
        self._stripped: dict[str, str] = {}

    def expand(self, tex: str, chain: tuple[str, ...], depth: int = 0) -> str:
        out: list[str] = []
        pos = 0
        for m in _INPUT_RE.finditer(tex):
            self._emit(out, tex[pos:m.start()])
            self._emit(None, m.group(0))      # the directive is not kept but was read: it counts
            pos = m.end()
            self.count += 1
            if self.count > MAX_INCLUDES:
                raise _Bad("expansion_limit", f"more than {MAX_INCLUDES} \\input/\\include to follow")
            name = (m.group(1) or m.group(2) or "").strip()
            got = self.load(name)
            if len(name) > 300:
                name = name[:300] + "..."     # as listed in missing_inputs (no file has such a name)
            if got is None:
                self.missing.append(name)
                continue
            if isinstance(got, str):
                self.missing.append(f"{name} ({got})")
                continue
            key, text = got
            if depth >= MAX_DEPTH:
                self.missing.append(name + " (too deep)")
                continue
            if key in chain:
                self.missing.append(f"{name} (cycle)")
                continue
            body = self._stripped.get(key)
            if body is None:
                body = self._stripped[key] = strip_comments(text)
            self._emit(out, "\n")
            out.append(self.expand(body, chain + (key,), depth + 1))
            self._emit(out, "\n")
        self._emit(out, tex[pos:])
        return "".join(out)

    def _emit(self, out: list[str] | None, s: str) -> None:
        self.size += len(s)
        if self.size > self.budget:
            raise _over(self.budget, "\\input/\\include")
        if out is not None:
            out.append(s)


def clean_paper(files: dict[str, str], main: str, *, budget: int = 16 << 20,
                load: Callable[[str], Loaded] | None = None) -> tuple[str, list[str]]:
    """The cleaned LaTeX of a paper (``files``: path in the paper -> text) from its main
    file, and the inputs it named that were not there (or were refused). ``load`` finds
    an ``\\input`` name (default: in ``files``); ``budget``: the characters the text may
    reach once expanded (:class:`_Bad` ``expansion_limit`` past it)."""
    inc = _Includes(load or _files_loader(files), budget)
    tex = inc.expand(strip_comments(files[main]), (main,))
    macros, tex = find_macros(tex)
    tex = resolve_conditionals(tex, macros)
    first = _SECTION_RE.search(tex)
    tex = tex[first.start():] if first else ""
    bib = _BIB_RE.search(tex)
    if bib:
        tex = tex[:bib.start()]
    tex = _BIBSTYLE_RE.sub("", tex).replace("\\end{document}", "")
    tex = expand_macros(tex, macros, budget=budget)
    text = _BLANKS_RE.sub("\n\n", tex).strip()
    if len(text) * 4 > budget and len(text.encode("utf-8", "surrogatepass")) > budget:
        raise _over(budget, "\\input/\\include and macros")
    return text, inc.missing


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

def paper_files(payload: bytes, name: str, max_bytes: int, limits: InputLimits = DEFAULT_LIMITS) -> dict[str, str]:
    """A per-paper ``.gz`` (or ``.tar``, or ``.tex``) as its text files. The gzip is read
    to its end (its CRC and length checked) and an inner tar must end with its
    end-of-archive block: a cut or damaged one is ``read:bad_archive``."""
    if not payload:
        raise _Bad("empty", "an empty member (0 bytes)")
    data = payload
    if name.lower().endswith(".gz") or payload[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(payload)) as g:
                data = g.read(max_bytes + 1)
        except (OSError, EOFError, zlib.error) as e:
            raise _Bad("bad_archive", f"not a readable gzip: {e}") from None
        if len(data) > max_bytes:
            raise _Bad("too_large", f"decompresses to more than max_doc_bytes ({max_bytes})")
        if not data:
            raise _Bad("empty", "the gzip holds nothing")
    if len(data) > 262 and data[257:262] == b"ustar":
        files: dict[str, str] = {}
        others = []
        try:
            for m, fh in tar_members(io.BytesIO(data), rel=name, limits=limits):
                if fh is None:
                    continue
                path = m.name.lstrip("./")
                if path.lower().endswith(_TEXT_EXT) or "." not in path.rsplit("/", 1)[-1]:
                    files[path] = _decode(fh.read())
                else:
                    others.append(path)
        except Refused as e:
            raise _Bad(e.reason, f"the tar inside the .gz: {e.detail}") from None
        except FileCorrupt as e:
            raise _Bad("bad_archive", f"broken tar inside the .gz: {e.reason}: {e.detail}") from None
        except (tarfile.TarError, OSError, EOFError) as e:
            raise _Bad("bad_archive", f"broken tar inside the .gz: {e}") from None
        if not files:
            raise _Bad("no_tex", f"no LaTeX files (only: {', '.join(sorted(others)[:5]) or 'nothing'})")
        return files
    if data[:5] == b"%PDF-":
        raise _Bad("no_tex", "a PDF-only submission")
    return {"main.tex": _decode(data)}


class _Siblings:
    """A folder paper's ``\\input`` names read from beside its main file through the
    input layer (``Input.sibling``: inside the input roots, regular files only), each
    name once; the files read may hold ``budget`` bytes in all (``read:expansion_limit``
    past it, read no further). A refusal is the name's ``missing_inputs`` entry."""

    def __init__(self, src: Input, main: str, text: str, budget: int) -> None:
        self.src, self.budget, self.left = src, budget, budget
        self.seen: dict[str, Loaded] = {main: (main, text)}

    def __call__(self, name: str) -> Loaded:
        for cand in _candidates(name):
            if not cand.lower().endswith(_TEXT_EXT) or cand.startswith("/") or ".." in cand.split("/"):
                continue    # a paper's files are beside it: absolute and ../ names are not
            rel = posixpath.normpath(cand)
            if rel not in self.seen:
                self.seen[rel] = self._read(rel)
            got = self.seen[rel]
            if got is not None:
                return got
        return None

    def _read(self, rel: str) -> Loaded:
        sib = self.src.sibling(rel)
        try:
            data = sib.read(self.left + 1)
        except Refused as exc:
            log.warning("arxiv: %s: \\input %s refused: read:%s (%s)", self.src.rel, rel, exc.reason, exc.detail)
            return exc.reason
        except (OSError, ValueError):      # not there (or a name no file can have)
            return None
        if len(data) > self.left:
            raise _Bad("expansion_limit", f"{sib.rel}: the paper's \\input files pass limits.expanded_bytes "
                                          f"({self.budget} bytes); not read further")
        self.left -= len(data)
        return rel, _decode(data)


def _lines(fh: BinaryIO, limit: int) -> Iterator[bytes | None]:
    """The lines of ``fh``; None for one longer than ``limit`` (skipped, never held)."""
    while True:
        line = fh.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while True:
                rest = fh.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
        else:
            yield line


#: characters of a member name kept in its locator (origin); a longer name (a PAX
#: header allows 1 MiB) keeps its two ends and a digest of the whole
_NAME_KEEP = 1024


def _member_loc(rel: str, name: str) -> str:
    if len(name) > _NAME_KEEP:
        digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        name = f"{name[:_NAME_KEEP // 2]}...{name[-_NAME_KEEP // 2:]}#{digest}"
    return f"{rel}!{name}"


def _member_bytes(fh: Any, rel: str, name: str) -> bytes:
    try:
        return fh.read()
    except (tarfile.TarError, EOFError) as exc:     # the tar ends inside this member
        raise FileCorrupt("truncated", f"{rel}: the tar ends inside member {name[-200:]!r} ({exc})") from None


class ArxivReader(Reader):
    """One document per paper (the cleaned LaTeX of its newest version)."""

    format = "arxiv"
    Options = ArxivOptions

    # ------------------------------------------------------------------ metadata_file

    def _categories(self, storage: Any) -> dict[str, str | None]:
        """``id -> categories`` from ``metadata_file``, read once. A line that is not a
        JSON object with a string ``id`` and a string (or null) ``categories`` is skipped
        and counted in a warning; a file the input layer refuses or finds cut ends each
        input file with that reason, naming the metadata file."""
        got = getattr(self, "_cats", None)
        if got is None:
            try:
                got = self._load_categories(storage) if self.options.metadata_file is not None else {}
            except FileCorrupt as exc:
                got = (exc.reason, exc.detail)
            except OSError as exc:
                got = ("unreadable", f"{type(exc).__name__}: {exc}")
            self._cats = got
        if isinstance(got, tuple):
            raise FileCorrupt(got[0], f"metadata_file {self.options.metadata_file}: {got[1]}")
        return got

    def _load_categories(self, storage: Any) -> dict[str, str | None]:
        path = self.options.metadata_file
        cats: dict[str, str | None] = {}
        bad, first = 0, ""
        with _metadata_input(path, storage, self.limits).open() as fh:
            for n, line in enumerate(_lines(fh, _META_LINE_BYTES), 1):
                why = None
                if line is None:
                    why = f"longer than {_META_LINE_BYTES} bytes"
                elif line.strip():
                    try:
                        obj = json.loads(line)
                    except (ValueError, RecursionError) as exc:
                        why = f"not JSON ({type(exc).__name__})"
                    else:
                        ident = obj.get("id") if isinstance(obj, dict) else None
                        cat = obj.get("categories") if isinstance(obj, dict) else None
                        if not isinstance(ident, str) or not (cat is None or isinstance(cat, str)):
                            why = "not an object with a string 'id' and string 'categories'"
                        else:
                            cats[ident] = cat
                if why is not None:
                    bad += 1
                    first = first or f"line {n}: {why}"
        if bad:
            log.warning("arxiv: metadata_file %s: %d line(s) skipped (first: %s)", path, bad, first)
        return cats

    # ------------------------------------------------------------------ inputs

    @property
    def _budget(self) -> int:
        return self.limits.expansion(self.max_doc_bytes)

    def _records(self, f: InputFile, start: int, end: int | None) -> Iterator[Rec]:
        cats = self._categories(f.storage)
        low = f.path.lower()
        if low.endswith(".tar"):
            yield from self._bulk(f, cats)
        elif low.endswith((".tex", ".ltx", ".latex")):
            yield from self._tex_file(f, cats)
        else:
            payload = self.input(f).read(self.max_doc_bytes + 1)
            try:
                ident = parse_id(f.rel) or (f.rel.rsplit("/", 1)[-1].split(".")[0], None)
            except BadName as e:
                yield reject(f.rel, f.rel, "bad_name", str(e))
                return
            yield self._paper(f.rel, ident, payload, cats)

    def _bulk(self, f: InputFile, cats: dict[str, str | None]) -> Iterator[Rec]:
        """A bulk tar, read twice streaming: names first (to know each id's newest
        version), then the papers. Damage (a cut, a bad header) ends the first pass
        quietly; the second keeps the papers before it and then raises it (the file's
        reject, or under ``on_error: fail`` the error naming it)."""
        src = self.input(f)
        newest: dict[str, int] = {}
        try:
            with src.open() as fh:
                for m, _ in tar_members(fh, rel=f.rel, limits=self.limits):
                    try:
                        got = parse_id(m.name) if m.isfile() else None
                    except BadName:
                        got = None
                    if got is not None:
                        newest[got[0]] = max(newest.get(got[0], 0), got[1] or 0)
        except FileCorrupt:
            pass
        members = 0
        names: set[int] = set()         # hashes: a name may be 1 MiB, and there may be many
        kept: dict[str, str] = {}
        with src.open() as fh:
            for m, data in tar_members(fh, rel=f.rel, limits=self.limits):
                if m.isdir():
                    continue
                members += 1
                loc = _member_loc(f.rel, m.name)
                rkey = loc if hash(m.name) not in names else f"{loc}@{m.offset}"   # a repeated name keeps ids apart
                names.add(hash(m.name))
                if data is None:
                    kind = "a link" if m.issym() or m.islnk() else "a special file"
                    yield reject(rkey, loc, "not_a_paper", f"member {m.name[-200:]!r} is {kind}, not a file")
                    continue
                try:
                    got = parse_id(m.name)
                except BadName as e:
                    yield reject(rkey, loc, "bad_name", str(e))
                    continue
                if got is None:
                    yield reject(rkey, loc, "not_a_paper", f"member name {m.name[-200:]!r} holds no arXiv id")
                    continue
                key = f"{got[0]}v{got[1]}" if got[1] else got[0]
                if key in kept:
                    yield Rec(f"{loc}@{m.offset}", loc, reason="duplicate", detail=f"{key}: a second member for "
                              f"{key} in {f.rel} (the first, {kept[key]!r}, is read)", source_id=key)
                    continue
                kept[key] = m.name[-200:]
                if self.options.versions == "latest" and (got[1] or 0) < newest.get(got[0], 0):
                    yield Rec(key, loc, reason="old_version", detail=f"{key} superseded by v{newest[got[0]]} in "
                              f"{f.rel}", source_id=key)
                    continue
                if m.size > min(self.max_doc_bytes, self.limits.member_bytes):
                    yield Rec(key, loc, reason="too_large", detail=self._too_large(m.size), source_id=key)
                    continue
                yield self._paper(loc, got, _member_bytes(data, f.rel, m.name), cats)
        if not members:
            yield reject(f.rel, f.rel, "empty_file", "a tar with no members")

    def _paper(self, loc: str, ident: tuple[str, int | None], payload: bytes, cats: dict[str, str | None]) -> Rec:
        pid, version = ident
        key = f"{pid}v{version}" if version else pid
        try:
            if len(payload) > self.max_doc_bytes:
                raise _Bad("too_large", self._too_large(len(payload)))
            with time_budget(self.limits.doc_seconds, key):
                files = paper_files(payload, loc, self.max_doc_bytes, self.limits)
                main = main_file(files, pid)
                if main is None:
                    raise _Bad("no_main_file", f"no \\documentclass in {', '.join(sorted(files)[:5])}")
                text, missing = clean_paper(files, main, budget=self._budget)
            if not text:
                raise _Bad("empty", "no sectioning command (\\section...) or nothing before the bibliography")
        except (_Bad, Refused) as e:
            return Rec(key, loc, reason=e.reason, detail=f"{key}: {e.detail}", source_id=key)
        return self._doc(key, loc, pid, version, text, missing, cats)

    def _doc(self, key: str, loc: str, pid: str, version: int | None, text: str, missing: list[str],
             cats: dict[str, str | None]) -> Rec:
        meta = {"arxiv_id": pid, "version": version, "categories": cats.get(pid), "missing_inputs": missing or None}
        return Rec(key, loc, text=text, url=f"https://arxiv.org/abs/{pid}", source_id=key,
                   metadata=json.dumps(meta, sort_keys=True))

    def _tex_file(self, f: InputFile, cats: dict[str, str | None]) -> Iterator[Rec]:
        """A ``.tex`` in a folder: a paper when it has ``\\documentclass`` (its inputs
        read from beside it, only those it names), else part of one."""
        src = self.input(f)
        raw = src.read(self.max_doc_bytes + 1)
        if len(raw) > self.max_doc_bytes:
            yield reject(f.rel, f.rel, "too_large", self._too_large(len(raw), more=True))
            return
        tex = _decode(raw)
        if not _MAIN_RE.search(tex):
            yield reject(f.rel, f.rel, "included_file", "no \\documentclass: part of a paper in this folder")
            return
        try:
            ident = parse_id(fs.basename(fs.parent(f.path))) or parse_id(f.rel) or (f.rel.rsplit(".", 1)[0], None)
        except BadName as e:
            yield reject(f.rel, f.rel, "bad_name", str(e))
            return
        pid, version = ident
        key = f"{pid}v{version}" if version else pid
        main = fs.basename(f.path)
        try:
            with time_budget(self.limits.doc_seconds, key):
                text, missing = clean_paper({main: tex}, main, budget=self._budget,
                                            load=_Siblings(src, main, tex, self._budget))
        except (_Bad, Refused) as e:
            yield Rec(key, f.rel, reason=e.reason, detail=f"{key}: {e.detail}", source_id=key)
            return
        if not text:
            yield Rec(key, f.rel, reason="empty", detail=f"{key}: nothing left after cleaning", source_id=key)
            return
        yield self._doc(key, f.rel, pid, version, text, missing, cats)
