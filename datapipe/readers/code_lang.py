"""The language of a source file, from its name and, for ambiguous extensions, its content.

The mapping is data: ``datapipe/readers/data/code_languages.csv`` (language, extensions,
exact file names), in the spirit of GitHub linguist's ``languages.yml``, one language per
extension. Resolution, first match wins:

1. an exact file name (``Makefile``, ``Dockerfile``, ``CMakeLists.txt``);
2. an ambiguous extension decided by content (``.h``: Objective-C / C++ / C; ``.m``:
   Objective-C / MATLAB; ``.pl``: Prolog / Perl), as linguist's heuristics do;
3. the extension (the longest that the table has: ``.d.ts`` is not special, ``.tar`` is
   not code);
4. a ``#!`` line (``#!/usr/bin/env python3`` -> Python) for files without a known
   extension;
5. otherwise None (unknown).
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Mapping, NamedTuple

#: extensions whose language depends on the content (see :func:`_by_content`)
AMBIGUOUS = (".h", ".m", ".pl")

_OBJC = re.compile(r"^\s*(@interface|@implementation|@protocol|@end\b|#import\s)", re.M)
_CPP = re.compile(r"^\s*(class\s+\w+|namespace\s+\w+|template\s*<|public:|private:|protected:)|std::"
                  r"|#include\s*<(iostream|vector|string|memory|map|algorithm|utility)>", re.M)
_MATLAB = re.compile(r"^\s*(function\b|%|end\s*$|disp\(|fprintf\()", re.M)
_PROLOG = re.compile(r"^\s*:-|^[a-z]\w*(\([^)]*\))?\s*:-", re.M)
_PERL = re.compile(r"^\s*(use\s+(strict|warnings)|my\s+[$@%]|sub\s+\w+|package\s+[\w:]+;)|^#!.*\bperl", re.M)
_SHEBANG = (("python", "Python"), ("node", "JavaScript"), ("perl", "Perl"), ("ruby", "Ruby"),
            ("bash", "Shell"), ("zsh", "Shell"), ("/sh", "Shell"), ("env sh", "Shell"), ("php", "PHP"),
            ("lua", "Lua"), ("Rscript", "R"), ("julia", "Julia"), ("pwsh", "PowerShell"))


class LanguageTable(NamedTuple):
    extensions: Mapping[str, str]
    names: Mapping[str, str]
    languages: frozenset[str]


@functools.lru_cache(maxsize=1)
def table() -> LanguageTable:
    """The mapping from the package's data file (read once per process)."""
    text = resources.files("datapipe.readers").joinpath("data/code_languages.csv").read_text(encoding="utf-8")
    extensions: dict[str, str] = {}
    names: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        language, exts, files = (line.split(",") + ["", ""])[:3]
        for e in exts.split():
            assert e not in extensions, f"extension {e} listed twice in code_languages.csv"
            extensions[e] = language
        for n in files.split():
            names[n] = language
    langs = frozenset(extensions.values()) | frozenset(names.values()) | {"C", "C++", "Objective-C", "MATLAB",
                                                                         "Prolog", "Perl"}
    return LanguageTable(extensions, names, langs)


def _by_content(ext: str, head: str) -> str:
    if ext == ".h":
        if _OBJC.search(head):
            return "Objective-C"
        return "C++" if _CPP.search(head) else "C"
    if ext == ".m":
        if _OBJC.search(head):
            return "Objective-C"
        return "MATLAB" if _MATLAB.search(head) else "Objective-C"
    # .pl
    if _PERL.search(head):
        return "Perl"
    return "Prolog" if _PROLOG.search(head) else "Perl"


def detect_language(path: str, content: str | None = None) -> str | None:
    """The language of the file at ``path`` (a repository-relative path; only its name
    is used) with ``content`` (its text, for the ambiguous extensions and ``#!`` lines;
    only the first 8 KB are looked at)."""
    t = table()
    name = path.rsplit("/", 1)[-1]
    if name in t.names:
        return t.names[name]
    low = name.lower()
    head = (content or "")[:8192]
    dot = low.rfind(".")
    ext = low[dot:] if dot > 0 else ""
    if ext in AMBIGUOUS:
        return _by_content(ext, head)
    if ext in t.extensions:
        return t.extensions[ext]
    if head.startswith("#!"):
        first = head.split("\n", 1)[0]
        for needle, language in _SHEBANG:
            if needle in first:
                return language
    return None


def known_languages() -> frozenset[str]:
    """Every language :func:`detect_language` can return (for checking ``languages:``)."""
    return table().languages
