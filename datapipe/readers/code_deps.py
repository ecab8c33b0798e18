"""The order of a repository's files in a ``group: repository`` document: each file after
the files it imports, as DeepSeek-Coder orders repository-level data, so that a model sees
a definition before its use.

Which imports count, found by regular expressions over the first ``SCAN_BYTES`` of each
file (no code is run or parsed as a whole; at most ``MAX_IMPORTS`` imports a file; no
pattern can backtrack across the file: a parenthesised list is closed by one forward
search for ``)`` shared by all the lists of the file, so the scan is linear on any text):

* **Python** (``.py``, ``.pyi``, ``.pyw``): ``import a.b``, ``from a.b import c, d``,
  ``from .x import y``, ``from .. import z``. An absolute name resolves to the file whose
  dotted path ends with it (``a/b.py`` or ``a/b/__init__.py``, at the repository root or
  below a folder such as ``src/``; the shortest such path wins, then path order);
  ``from a.b import c`` names the submodule ``a/b/c.py`` when there is one, else ``a/b``
  (``c`` is defined there). A relative name resolves from the importing file's package.
  A package's ``__init__.py`` is an edge only where it is named (``import a``,
  ``from . import x`` where ``x`` is not a module): an ``__init__`` that re-exports its
  modules would otherwise tie a whole package into one cycle.
  Names that are not files of the repository (the standard library, other packages) are
  not edges.
* **JavaScript / TypeScript** (``.js .mjs .cjs .jsx .ts .tsx .mts .cts``): ``import ... from
  './x'``, ``import './x'``, ``export ... from './x'``, ``require('./x')``,
  ``import('./x')``; only relative specifiers (``./``, ``../``), resolved as a bundler does:
  the path itself, with each extension above and ``.d.ts``, then ``x/index.<ext>``; a
  ``./x.js`` written in TypeScript also finds ``x.ts``/``x.tsx``.
* **Go** (``.go``): a package is a folder, and its files stay together (in path order). An
  import path names a package of this repository when it starts with a ``module`` line's
  path of a ``go.mod`` in the repository (the rest is the folder below that ``go.mod``);
  without any ``go.mod``, the longest tail of the import path that is a folder holding
  ``.go`` files.

Every other file has no edges. The order: the import graph's strongly connected
components (Tarjan's algorithm, iterative: a repository of any depth is no recursion
risk) are laid out dependencies first; among the components whose dependencies are all
placed, the one holding the smallest path comes next (so with no imports at all this is
path order, and ties always go to path order). A cycle (``a`` imports ``b``, ``b``
imports ``a``) is one component: its files stay together, in path order, at the place of
its smallest path. The result depends only on the paths and texts, never on read order.
"""

from __future__ import annotations

import heapq
import posixpath
import re
from typing import Sequence

#: bytes of a file scanned for imports (imports are at the top in all three languages)
SCAN_BYTES = 1 << 20
#: imports taken from one file at most
MAX_IMPORTS = 2_000

PY_EXT = (".py", ".pyi", ".pyw")
JS_EXT = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
GO_EXT = (".go",)

_PY = re.compile(r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+([^\n#;]*)|import[ \t]+([^\n#;]+))", re.M)
#: ``from './x'`` (the tail of an import or export: the keyword is not matched, so the scan is
#: linear on any text), ``import './x'``, ``import('./x')``, ``require('./x')``
_JS = re.compile(r"""(?:\bfrom|\bimport[ \t\n]*\(?|\brequire[ \t\n]*\()[ \t\n]*"""
                 r"""['"](\.{1,2}/[^'"\n]{0,1000}|\.{1,2})['"]""")
_GO_ONE = re.compile(r'^[ \t]*import[ \t]+(?:[\w.]+[ \t]+)?"([^"\n]+)"', re.M)
_GO_BLOCK = re.compile(r"^[ \t]*import[ \t]*\(", re.M)
#: characters a parenthesised import list may span
_PAREN_CHARS = 100_000
_GO_SPEC = re.compile(r'"([^"\n]+)"')
_GO_MODULE = re.compile(r"^[ \t]*module[ \t]+\"?([^\s\"/][^\s\"]*)\"?", re.M)
_AS = re.compile(r"\s+as\s+\w+\s*$")


def _kind(path: str) -> str | None:
    low = path.lower()
    if low.endswith(PY_EXT):
        return "py"
    if low.endswith(JS_EXT):
        return "js"
    if low.endswith(GO_EXT):
        return "go"
    return None


def _scan(text: str) -> str:
    return text if len(text) <= SCAN_BYTES else text[:SCAN_BYTES]


class _Closer:
    """The next ``)`` at or after a position, each found once: text is scanned once
    however many open parentheses precede a close (or none follows)."""

    def __init__(self, text: str) -> None:
        self.text, self.at = text, -2

    def after(self, start: int) -> int:
        if self.at != -1 and self.at < start:
            self.at = self.text.find(")", start)
        return self.at


def _names(clause: str) -> list[str]:
    """``a as b, c`` / ``(a,\\n b)`` -> ``[a, c]`` (``*`` and junk dropped)."""
    out = []
    for part in clause.strip().strip("()").replace("\\\n", " ").split(","):
        name = _AS.sub("", part.strip()).strip()
        if name and all(p.isidentifier() for p in name.split(".")):
            out.append(name)
    return out


class _Python:
    """Python module names -> file indexes of one repository."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.by_path = {p: i for i, p in enumerate(paths)}
        self.by_tail: dict[str, list[tuple[int, str, int]]] = {}
        for i, p in enumerate(paths):
            if _kind(p) != "py":
                continue
            stem = p.rsplit(".", 1)[0]
            parts = stem.split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            for k in range(len(parts)):   # every tail: 'a.b.c', 'b.c', 'c' (below src/ and the like)
                tail = parts[k:]
                if all(x.isidentifier() for x in tail):
                    self.by_tail.setdefault(".".join(tail), []).append((k, p, i))
        for v in self.by_tail.values():
            v.sort()

    def _file(self, folder: str, parts: list[str]) -> int | None:
        base = posixpath.join(folder, *parts) if parts else folder
        for cand in (base + ".py", base + ".pyi", posixpath.join(base, "__init__.py"),
                     posixpath.join(base, "__init__.pyi")):
            i = self.by_path.get(cand.lstrip("/"))
            if i is not None:
                return i
        return None

    def _absolute(self, name: str, paths: Sequence[str]) -> list[int]:
        hits = self.by_tail.get(name)
        if not hits:
            return []
        return [hits[0][2]]

    def imports(self, i: int, path: str, text: str, paths: Sequence[str]) -> list[int]:
        out: list[int] = []
        scan = _scan(text)
        closer = _Closer(scan)
        for n, m in enumerate(_PY.finditer(scan)):
            if n >= MAX_IMPORTS:
                break
            mod, what, plain = m.group(1), m.group(2), m.group(3)
            if what is not None and what.lstrip().startswith("(") and ")" not in what:
                close = closer.after(m.end())   # ``from x import (a,\n b)``
                if 0 <= close - m.end() <= _PAREN_CHARS:
                    what += scan[m.end():close + 1]
            if plain is not None:
                for name in _names(plain):
                    out.extend(self._absolute(name, paths))
                continue
            names = _names(what)
            dots = len(mod) - len(mod.lstrip("."))
            rest = [x for x in mod[dots:].split(".") if x]
            if dots:   # relative: from the importing file's package, up dots - 1 folders
                folder = posixpath.dirname(path)
                up = folder.split("/") if folder else []
                if dots - 1 > len(up):
                    continue
                folder = "/".join(up[: len(up) - (dots - 1)])
                subs = [k for k in (self._file(folder, rest + name.split(".")) for name in names) if k is not None]
                j = None if len(subs) == len(names) and names else self._file(folder, rest)
                out.extend(subs + ([j] if j is not None else []))
                continue
            if not rest:
                continue
            subs = [hit[0][2] for hit in (self.by_tail.get(".".join(rest + [name])) for name in names) if hit]
            if len(subs) < len(names) or not names:   # a name of the module itself
                hits = self.by_tail.get(".".join(rest))
                if hits:
                    subs.append(hits[0][2])
            out.extend(subs)
        return out


class _Script:
    """Relative JS/TS module specifiers -> file indexes."""

    _EXT = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".json")

    def __init__(self, paths: Sequence[str]) -> None:
        self.by_path = {p: i for i, p in enumerate(paths)}

    def _resolve(self, base: str) -> int | None:
        cands = [base] + [base + e for e in self._EXT] + [f"{base}/index{e}" for e in self._EXT]
        if base.endswith((".js", ".jsx", ".mjs", ".cjs")):   # TypeScript's ESM style: './x.js' is x.ts
            stem = base.rsplit(".", 1)[0]
            cands += [stem + ".ts", stem + ".tsx", stem + ".mts", stem + ".cts"]
        for c in cands:
            i = self.by_path.get(c)
            if i is not None:
                return i
        return None

    def imports(self, i: int, path: str, text: str, paths: Sequence[str]) -> list[int]:
        out: list[int] = []
        folder = posixpath.dirname(path)
        for n, m in enumerate(_JS.finditer(_scan(text))):
            if n >= MAX_IMPORTS:
                break
            base = posixpath.normpath(posixpath.join(folder, m.group(1)))
            if base.startswith("../") or base == ".." or base.startswith("/"):
                continue   # out of the repository
            j = self._resolve("" if base == "." else base)
            if j is not None:
                out.append(j)
        return out


class _Go:
    """Go import paths -> the folder (package) of this repository they name."""

    def __init__(self, paths: Sequence[str], texts: Sequence[str]) -> None:
        self.packages = {posixpath.dirname(p) for p in paths if _kind(p) == "go"}
        self.modules: list[tuple[str, str]] = []   # (module path, its folder), longest module first
        for p, t in zip(paths, texts):
            if posixpath.basename(p) == "go.mod":
                m = _GO_MODULE.search(_scan(t))
                if m:
                    self.modules.append((m.group(1).rstrip("/"), posixpath.dirname(p)))
        self.modules.sort(key=lambda mf: (-len(mf[0]), mf[1]))

    def package(self, spec: str) -> str | None:
        for mod, folder in self.modules:
            if spec == mod or spec.startswith(mod + "/"):
                pkg = posixpath.join(folder, spec[len(mod):].lstrip("/")).rstrip("/")
                pkg = posixpath.normpath(pkg) if pkg else ""
                pkg = "" if pkg == "." else pkg
                return pkg if pkg in self.packages else None
        if self.modules:
            return None
        parts = spec.split("/")
        for k in range(len(parts)):   # no go.mod: the longest tail that is a package folder
            tail = "/".join(parts[k:])
            if tail in self.packages:
                return tail
        return None

    def imports(self, text: str) -> list[str]:
        scan = _scan(text)
        specs = [m.group(1) for m in _GO_ONE.finditer(scan)]
        closer = _Closer(scan)
        for block in _GO_BLOCK.finditer(scan):
            close = closer.after(block.end())
            if 0 <= close - block.end() <= _PAREN_CHARS:
                specs.extend(m.group(1) for m in _GO_SPEC.finditer(scan, block.end(), close))
            if len(specs) > MAX_IMPORTS:
                break
        out = []
        for spec in specs[:MAX_IMPORTS]:
            pkg = self.package(spec)
            if pkg is not None:
                out.append(pkg)
        return out


def dependency_order(paths: Sequence[str], texts: Sequence[str]) -> list[int]:
    """The indexes of ``paths`` (one repository's files, ``texts`` their contents) in
    dependency order (see the module docstring)."""
    n = len(paths)
    if n <= 1:
        return list(range(n))
    kinds = [_kind(p) for p in paths]
    # nodes: a Go package (folder) is one node; every other file is its own
    node_of = [0] * n
    members: list[list[int]] = []
    go_node: dict[str, int] = {}
    for i in sorted(range(n), key=lambda i: paths[i]):
        if kinds[i] == "go":
            folder = posixpath.dirname(paths[i])
            if folder not in go_node:
                go_node[folder] = len(members)
                members.append([])
            node_of[i] = go_node[folder]
        else:
            node_of[i] = len(members)
            members.append([])
        members[node_of[i]].append(i)
    m = len(members)
    edges: list[set[int]] = [set() for _ in range(m)]   # node -> the nodes it imports
    py = _Python(paths) if "py" in kinds else None
    js = _Script(paths) if "js" in kinds else None
    go = _Go(paths, texts) if "go" in kinds else None
    for i in range(n):
        a = node_of[i]
        if kinds[i] == "py":
            deps = [node_of[j] for j in py.imports(i, paths[i], texts[i], paths)]
        elif kinds[i] == "js":
            deps = [node_of[j] for j in js.imports(i, paths[i], texts[i], paths)]
        elif kinds[i] == "go":
            deps = [go_node[pkg] for pkg in go.imports(texts[i])]
        else:
            continue
        edges[a].update(d for d in deps if d != a)
    key = [paths[members[v][0]] for v in range(m)]   # a node's smallest path
    comp = _tarjan(m, [sorted(e, key=key.__getitem__) for e in edges])
    n_comp = max(comp) + 1
    comp_nodes: list[list[int]] = [[] for _ in range(n_comp)]
    for v in sorted(range(m), key=key.__getitem__):
        comp_nodes[comp[v]].append(v)
    waiting = [0] * n_comp                         # unplaced components a component imports
    users: list[set[int]] = [set() for _ in range(n_comp)]
    for v in range(m):
        for d in edges[v]:
            cv, cd = comp[v], comp[d]
            if cv != cd and cv not in users[cd]:
                users[cd].add(cv)
                waiting[cv] += 1
    ready = [(key[comp_nodes[c][0]], c) for c in range(n_comp) if not waiting[c]]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, c = heapq.heappop(ready)
        for v in comp_nodes[c]:
            order.extend(members[v])
        for u in users[c]:
            waiting[u] -= 1
            if not waiting[u]:
                heapq.heappush(ready, (key[comp_nodes[u][0]], u))
    return order


def _tarjan(m: int, edges: list[list[int]]) -> list[int]:
    """Strongly connected component id of each node (Tarjan, with an explicit stack)."""
    index = [-1] * m
    low = [0] * m
    comp = [-1] * m
    on_stack = [False] * m
    stack: list[int] = []
    counter = 0
    n_comp = 0
    for root in range(m):
        if index[root] != -1:
            continue
        work = [(root, 0)]
        while work:
            v, pos = work[-1]
            if pos == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack[v] = True
            if pos < len(edges[v]):
                work[-1] = (v, pos + 1)
                w = edges[v][pos]
                if index[w] == -1:
                    work.append((w, 0))
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp[w] = n_comp
                    if w == v:
                        break
                n_comp += 1
    return comp
