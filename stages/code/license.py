"""Licenses of code: detect a file's repository license, and the ``license`` filter.

Where the license comes from, first that answers:

1. the ``license`` column: repository level, as the reader filled it (The Stack's
   license metadata, or the repository's root license file for trees and archives),
   normalised to an SPDX expression;
2. the row is itself a repository-root license file (``LICENSE``, ``LICENCE``,
   ``COPYING``, ``UNLICENSE``, any suffix): its own text's license;
3. the file's own ``SPDX-License-Identifier:`` header (first ``header_chars``);
4. a license file of the same repository found *in the same batch*;
5. otherwise ``unknown``.

Detection of license texts, names and headers lives in
:mod:`datapipe.readers.code_license` (the ``code`` reader fills ``license`` from the
repository's root license file with it, for every file of the repository, across read
splits and batches; see docs/code.md, "Licenses"). Step 4 matters only for rows the
reader did not fill: Stack-layout tables without a license column, or another reader.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar, Mapping

import numpy as np
import pyarrow as pa

from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.readers.code_license import (header_license, is_license_file, license_of_text,  # noqa: F401
                                           normalize, repository_license, spdx_licensing)
from datapipe.stage import FilterStage, StageConfig
from stages.heuristics.columns import text_list

log = logging.getLogger(__name__)

REPO, PATH, LICENSE = "repo", "path", "license"
UNKNOWN = "unknown"

#: The default allow-list: permissive licenses (The Stack's permissive set, abridged).
PERMISSIVE = ("MIT", "MIT-0", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "BSD-3-Clause-Clear", "0BSD", "ISC",
              "Unlicense", "CC0-1.0", "Zlib", "BSL-1.0", "PSF-2.0", "Python-2.0", "HPND", "MIT-CMU", "WTFPL", "X11",
              "Artistic-2.0", "UPL-1.0", "NCSA", "PostgreSQL")


def allowed(expression: str, allow: frozenset[str]) -> bool:
    """Whether an SPDX expression is allowed: an ``OR`` needs one allowed branch, an
    ``AND`` needs all; ``WITH`` exceptions follow their license."""
    lic = spdx_licensing()
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
    files: dict[str, list[tuple[str, str | None]]] = {}
    for r, p, lic in sorted(zip(repos, paths, own_file), key=lambda x: (str(x[0]), x[1])):
        if lic is not None and r is not None:
            files.setdefault(r, []).append((p, lic))
    # the first license file in path order (LICENSE before LICENSE-THIRD-PARTY), or the
    # OR of files each named for its license (LICENSE-MIT + LICENSE-APACHE)
    repo_license = {r: repository_license(found) for r, found in files.items()}
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
        lic, why = detect(batch.column(REPO).to_pylist(), text_list(batch, PATH), text_list(batch),
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
