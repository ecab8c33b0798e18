"""Licenses of code: detect a file's repository license, and the ``license`` filter.

Where the license comes from, first that answers:

1. the ``license`` column (repository metadata, e.g. The Stack's ``license`` field),
   normalised to an SPDX expression;
2. the row is itself a repository-root license file (``LICENSE``, ``LICENCE``,
   ``COPYING``, ``UNLICENSE``, any suffix): its own text's license;
3. the file's own ``SPDX-License-Identifier:`` header (first ``header_chars``);
4. a license file of the same repository found *in the same batch*;
5. otherwise ``unknown``.

SPDX data and expression handling come from ``license-expression`` (nexB, the library
under ScanCode; pure Python, ships the SPDX list with ScanCode's aliases and
deprecated ids, so ``apache-2.0``, ``GPL-2.0+`` and ``MIT OR Apache-2.0`` normalise to
``Apache-2.0``, ``GPL-2.0-or-later``, ``MIT OR Apache-2.0``). Identifying a license
*text* is done here with required-phrase fingerprints of the ~25 licenses that cover
nearly all of GitHub (:data:`FINGERPRINTS`): ScanCode's full matcher is far more
thorough but its install (hundreds of MB of license data, native deps) and speed
(seconds per file) do not fit a batch stage.

Limitation (documented in docs/code_filters.md): a repository's license file and its
other files are joined only within one batch. When they land in different batches or
read splits, a file falls back to its own SPDX header, or ``unknown``; the repository
level join across splits needs a global pass.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass, field
from typing import ClassVar, Mapping

import numpy as np
import pyarrow as pa

from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.stage import FilterStage, StageConfig
from stages import _text as T

log = logging.getLogger(__name__)

REPO, PATH, LICENSE = "repo", "path", "license"
UNKNOWN = "unknown"

#: The default allow-list: permissive licenses (The Stack's permissive set, abridged).
PERMISSIVE = ("MIT", "MIT-0", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "BSD-3-Clause-Clear", "0BSD", "ISC",
              "Unlicense", "CC0-1.0", "Zlib", "BSL-1.0", "PSF-2.0", "Python-2.0", "HPND", "MIT-CMU", "WTFPL", "X11",
              "Artistic-2.0", "UPL-1.0", "NCSA", "PostgreSQL")

#: (SPDX id, phrases that must all occur, phrases that must not), on text normalised by
#: :func:`_norm` (lower case, runs of non-alphanumerics as one space). Checked in order;
#: among matches the one whose first phrase occurs earliest in the text wins (a file
#: listing bundled licenses after its own).
FINGERPRINTS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("AGPL-3.0-only", ("gnu affero general public license", "version 3"), ()),
    ("LGPL-3.0-only", ("gnu lesser general public license", "version 3"), ("version 2 1",)),
    ("LGPL-2.1-only", ("gnu lesser general public license", "version 2 1"), ()),
    ("LGPL-2.0-only", ("gnu library general public license", "version 2"), ()),
    ("GPL-3.0-only", ("gnu general public license", "version 3 29 june 2007"), ()),
    ("GPL-2.0-only", ("gnu general public license", "version 2 june 1991"), ()),
    ("MPL-2.0", ("mozilla public license", "version 2 0"), ()),
    ("MPL-1.1", ("mozilla public license", "version 1 1"), ()),
    ("EPL-2.0", ("eclipse public license", "v 2 0"), ()),
    ("EPL-1.0", ("eclipse public license", "v 1 0"), ()),
    ("Apache-2.0", ("apache license", "version 2 0"), ()),
    ("Apache-2.0", ("version 2 0 january 2004", "terms and conditions for use reproduction and distribution"), ()),
    ("MPL-2.0", ("mozilla public license v 2 0",), ()),
    ("Apache-1.1", ("apache software license", "version 1 1"), ()),
    ("Artistic-2.0", ("the artistic license 2 0",), ()),
    ("BSL-1.0", ("boost software license version 1 0",), ()),
    ("Unlicense", ("this is free and unencumbered software released into the public domain",), ()),
    ("CC0-1.0", ("cc0 1 0 universal",), ()),
    ("WTFPL", ("do what the fuck you want to public license",), ()),
    ("PSF-2.0", ("python software foundation", "license agreement"), ()),
    ("MIT", ("permission is hereby granted free of charge to any person obtaining a copy",
             "the above copyright notice and this permission notice shall be included"), ()),
    ("MIT-0", ("permission is hereby granted free of charge to any person obtaining a copy",), ()),
    ("BSD-4-Clause", ("redistribution and use in source and binary forms", "all advertising materials mentioning"),
     ()),
    ("BSD-3-Clause", ("redistribution and use in source and binary forms",
                      "to endorse or promote products derived from this software"), ()),
    ("BSD-2-Clause", ("redistribution and use in source and binary forms",
                      "redistributions in binary form must reproduce the above copyright notice"), ()),
    ("ISC", ("permission to use copy modify and or distribute this software for any purpose with or without fee",
             "provided that the above copyright notice and this permission notice appear in all copies"), ()),
    ("ISC", ("permission to use copy modify and distribute this software for any purpose with or without fee",
             "provided that the above copyright notice and this permission notice appear in all copies"), ()),
    ("0BSD", ("permission to use copy modify and or distribute this software for any purpose with or without fee",),
     ()),
    ("MIT-CMU", ("by obtaining using and or copying this software and or its associated documentation",
                 "permission to use copy modify and distribute this software and its"), ()),
    ("HPND", ("permission to use copy modify and distribute this software and its documentation for any purpose",
              "without fee is hereby granted"), ()),
    ("Zlib", ("this software is provided as is without any express or implied warranty",
              "altered source versions must be plainly marked as such"), ()),
)

LICENSE_FILE_RE = re.compile(r"(?i)^(?:un)?(?:licen[cs]e|copying)(?:[._\-][a-z0-9._\-]*)?$")
SPDX_HEADER_RE = re.compile(r"SPDX-License-Identifier:[ \t]*([A-Za-z0-9.+\-() \t]+?)[ \t]*(?:\*/|-->|\n|$)")
#: common free-text names in metadata that are not SPDX ids
_ALIASES = {
    "mit license": "MIT", "the mit license": "MIT", "mit licence": "MIT", "expat": "MIT",
    "apache 2": "Apache-2.0", "apache 2.0": "Apache-2.0", "apache license 2.0": "Apache-2.0",
    "apache license, version 2.0": "Apache-2.0", "apache software license": "Apache-2.0",
    "apache-2": "Apache-2.0", "bsd 3-clause": "BSD-3-Clause", "new bsd": "BSD-3-Clause",
    "new bsd license": "BSD-3-Clause", "modified bsd": "BSD-3-Clause", "bsd 2-clause": "BSD-2-Clause",
    "simplified bsd": "BSD-2-Clause", "isc license": "ISC", "public domain": "Unlicense",
    "mpl 2.0": "MPL-2.0", "mozilla public license 2.0": "MPL-2.0", "gplv3": "GPL-3.0-only",
    "gplv2": "GPL-2.0-only", "lgplv3": "LGPL-3.0-only", "psf": "PSF-2.0", "python software foundation license": "PSF-2.0",
}


def _norm(text: str) -> str:
    return " " + re.sub(r"[^a-z0-9]+", " ", text.lower()) + " "


@functools.lru_cache(maxsize=1)
def _licensing():
    from license_expression import get_spdx_licensing

    return get_spdx_licensing()


@functools.lru_cache(maxsize=4096)
def normalize(expression: str | None) -> str | None:
    """An SPDX expression for a license name or expression from metadata or a header
    (``apache-2.0`` -> ``Apache-2.0``, ``MIT License`` -> ``MIT``); None when it names no
    known SPDX license."""
    if expression is None:
        return None
    e = expression.strip().strip("\"'()[]").strip()
    if not e or e.lower() in ("unknown", "none", "noassertion", "other", "null"):
        return None
    if e.lower() in _ALIASES:
        return _ALIASES[e.lower()]
    lic = _licensing()
    try:
        info = lic.validate(e)
    except Exception:  # license-expression raises its own errors on malformed input
        return None
    if info.errors or info.invalid_symbols or not info.normalized_expression:
        return None
    return info.normalized_expression


def license_of_text(text: str) -> str | None:
    """The SPDX id of a license file's text (:data:`FINGERPRINTS`), or None. A file
    that only names its license (``Apache 2.0``) is read as that name."""
    if len(text) < 100 and "\n" not in text.strip():
        return normalize(text)
    t = _norm(text[:200_000])
    best: tuple[int, str] | None = None
    for spdx, need, never in FINGERPRINTS:
        pos = [t.find(" " + p + " ") for p in need]
        if min(pos) < 0 or any(" " + p + " " in t for p in never):
            continue
        first = pos[0]
        if best is None or first < best[0]:
            best = (first, spdx)
    return best[1] if best else None


def header_license(text: str, header_chars: int = 2000) -> str | None:
    """The SPDX expression of the first ``SPDX-License-Identifier:`` in the header."""
    if "SPDX-License-Identifier" not in text[:header_chars]:
        return None
    m = SPDX_HEADER_RE.search(text[:header_chars])
    return normalize(m.group(1)) if m else None


def is_license_file(path: str) -> bool:
    """A repository-root license file (``LICENSE``, ``COPYING.txt``, ``LICENSE-MIT``)."""
    return "/" not in path.strip("/") and LICENSE_FILE_RE.match(path.strip("/")) is not None


def allowed(expression: str, allow: frozenset[str]) -> bool:
    """Whether an SPDX expression is allowed: an ``OR`` needs one allowed branch, an
    ``AND`` needs all; ``WITH`` exceptions follow their license."""
    lic = _licensing()
    try:
        parsed = lic.parse(expression, validate=False)
    except Exception:
        return expression in allow
    return _allowed(parsed, allow, lic)


def _allowed(node, allow: frozenset[str], lic) -> bool:
    if isinstance(node, lic.OR):
        return any(_allowed(a, allow, lic) for a in node.args)
    if isinstance(node, lic.AND):
        return all(_allowed(a, allow, lic) for a in node.args)
    key = getattr(node, "license_symbol", node)  # LicenseWithExceptionSymbol
    return str(getattr(key, "key", key)) in allow


def detect(repos: list[str | None], paths: list[str], texts: list[str], meta: list[str | None], *,
           header_chars: int = 2000) -> tuple[list[str], list[str]]:
    """(SPDX expression or ``unknown``, where it came from) per file of one batch:
    ``metadata``, ``header``, ``license_file``, ``repository_file`` or ``none``."""
    n = len(paths)
    own_file = [license_of_text(t) if is_license_file(p) else None for p, t in zip(paths, texts)]
    repo_license: dict[str, str] = {}
    for r, p, lic in sorted(zip(repos, paths, own_file), key=lambda x: (str(x[0]), x[1])):
        if lic is not None and r is not None and r not in repo_license:
            repo_license[r] = lic  # first license file in path order (LICENSE before LICENSE-THIRD-PARTY)
    out, why = [], []
    for i in range(n):
        m = normalize(meta[i]) if meta[i] else None
        if m:
            out.append(m), why.append("metadata")
            continue
        if own_file[i]:
            out.append(own_file[i]), why.append("license_file")
            continue
        h = header_license(texts[i], header_chars)
        if h:
            out.append(h), why.append("header")
            continue
        r = repo_license.get(repos[i]) if repos[i] is not None else None
        if r:
            out.append(r), why.append("repository_file")
            continue
        out.append(UNKNOWN), why.append("none")
    return out, why


@dataclass(kw_only=True, frozen=True)
class LicenseConfig(StageConfig):
    #: SPDX ids allowed (default: permissive licenses)
    allow: tuple[str, ...] = PERMISSIVE
    #: keep files whose license could not be determined (an explicit choice)
    allow_unknown: bool = False
    header_chars: int = 2000

    def __post_init__(self) -> None:
        if isinstance(self.allow, str) or not self.allow:
            raise SpecError(f"license: allow must be a non-empty list of SPDX ids, e.g. [MIT, Apache-2.0]; "
                            f"got {self.allow!r}")
        bad = [a for a in self.allow if normalize(a) != a and a != UNKNOWN]
        if bad:
            fixes = {a: normalize(a) for a in bad}
            raise SpecError(f"license: allow lists {bad}, not SPDX ids as written (normalised: {fixes}); use "
                            "SPDX ids such as MIT, Apache-2.0, BSD-3-Clause, and allow_unknown: true for unknown")
        if self.header_chars < 0:
            raise SpecError(f"license: header_chars must be >= 0, got {self.header_chars}")


class LicenseFilter(FilterStage):
    """Sets ``license`` (an SPDX expression, or ``unknown``) and ``license_source`` on
    every code file, and drops files whose license is not allowed
    (``license:not_allowed|GPL-3.0-only``) or unknown (``license:unknown``, unless
    ``allow_unknown``)."""

    name = "license"
    Config = LicenseConfig
    reads: ClassVar[tuple[str, ...]] = (S.TEXT, REPO, PATH, LICENSE)
    adds: ClassVar[Mapping[str, pa.DataType]] = {LICENSE: pa.string(), "license_source": pa.string()}

    def annotate(self, batch: pa.Table):
        cfg: LicenseConfig = self.config  # type: ignore[assignment]
        lic, why = detect(batch.column(REPO).to_pylist(), T.text_list(batch, PATH), T.text_list(batch),
                          batch.column(LICENSE).to_pylist(), header_chars=cfg.header_chars)
        return {LICENSE: pa.array(lic, pa.string()), "license_source": pa.array(why, pa.string())}

    def keep(self, batch: pa.Table):
        cfg: LicenseConfig = self.config  # type: ignore[assignment]
        allow = frozenset(cfg.allow)
        keep, reasons = [], []
        for lic in batch.column(LICENSE).to_pylist():
            if lic == UNKNOWN:
                ok = cfg.allow_unknown
                keep.append(ok), reasons.append(None if ok else "unknown")
            else:
                ok = allowed(lic, allow)
                keep.append(ok), reasons.append(None if ok else f"not_allowed|{lic}")
        return np.asarray(keep, dtype=bool), reasons


@dataclass(kw_only=True, frozen=True)
class RepoMetaConfig(StageConfig):
    min_stars: int | None = None
    min_forks: int | None = None
    drop_archived: bool = False
    #: keep files whose repository has no such metadata (null stars/forks/archived)
    keep_missing: bool = True

    def __post_init__(self) -> None:
        for name in ("min_stars", "min_forks"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise SpecError(f"repo_meta: {name} must be >= 0 (or null to disable), got {v}")


class RepoMetaFilter(FilterStage):
    """Repository metadata rules: ``repo_meta:stars|3`` (under ``min_stars``),
    ``repo_meta:forks|0``, ``repo_meta:archived``, and ``repo_meta:missing|stars`` for
    a file without the metadata a rule needs when ``keep_missing`` is false."""

    name = "repo_meta"
    Config = RepoMetaConfig
    reads: ClassVar[tuple[str, ...]] = ("stars", "forks", "archived")

    def keep(self, batch: pa.Table):
        cfg: RepoMetaConfig = self.config  # type: ignore[assignment]
        n = batch.num_rows
        keep = np.ones(n, dtype=bool)
        reasons: list[str | None] = [None] * n
        rules = []
        if cfg.min_stars is not None:
            rules.append(("stars", batch.column("stars").to_pylist(), lambda v: v >= cfg.min_stars))
        if cfg.min_forks is not None:
            rules.append(("forks", batch.column("forks").to_pylist(), lambda v: v >= cfg.min_forks))
        if cfg.drop_archived:
            rules.append(("archived", batch.column("archived").to_pylist(), lambda v: not v))
        for rule, values, ok in rules:
            for i, v in enumerate(values):
                if not keep[i]:
                    continue
                if v is None:
                    if not cfg.keep_missing:
                        keep[i], reasons[i] = False, f"missing|{rule}"
                elif not ok(v):
                    keep[i] = False
                    reasons[i] = rule if rule == "archived" else f"{rule}|{v}"
        return keep, reasons
