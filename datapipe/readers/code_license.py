"""License text and name detection for code, owned by the ``code`` reader (the engine core
may not import ``stages``; the ``license`` stage imports these from here).

The reader uses :func:`license_of_text` on a repository's root ``LICENSE``/``COPYING``
file to fill the ``license`` column of every file of that repository, whatever read split
or batch the files land in; the ``license`` stage uses all of it for the cases the reader
cannot decide (SPDX headers, Stack-layout metadata names).

SPDX data and expression handling come from ``license-expression`` (nexB, the library
under ScanCode; pure Python, ships the SPDX list with ScanCode's aliases and
deprecated ids, so ``apache-2.0``, ``GPL-2.0+`` and ``MIT OR Apache-2.0`` normalise to
``Apache-2.0``, ``GPL-2.0-or-later``, ``MIT OR Apache-2.0``). Identifying a license
*text* is done here with required-phrase fingerprints of the ~25 licenses that cover
nearly all of GitHub (:data:`FINGERPRINTS`): ScanCode's full matcher is far more
thorough but its install (hundreds of MB of license data, native deps) and speed
(seconds per file) do not fit a batch stage.
"""

from __future__ import annotations

import functools
import re
from typing import Sequence

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
def spdx_licensing():
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
    lic = spdx_licensing()
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


def root_license_files(names: Sequence[str]) -> list[str]:
    """The repository-root license files among ``names`` (paths inside the repository),
    in the order they are tried: path order, so ``LICENSE`` before ``LICENSE-THIRD-PARTY``."""
    return sorted(n for n in names if is_license_file(n))


#: what a license file's name may call its license, where that is not the SPDX id's start
_NAME_ALIASES = {"boost": "bsl", "expat": "mit", "asl": "apache", "mozilla": "mpl"}
_DOC_SUFFIX = re.compile(r"(?i)\.(?:txt|md|markdown|rst)$")


def _named_for(name: str, spdx: str) -> bool:
    """Whether a license file's name names the license it holds: ``LICENSE-MIT`` (MIT),
    ``LICENSE.APACHE`` / ``LICENSE-APACHE-2.0.txt`` (Apache-2.0), ``LICENSE-BOOST``
    (BSL-1.0); not ``LICENSE``, ``COPYING.LESSER`` or ``LICENSE-THIRD-PARTY``."""
    m = re.match(r"(?i)^(?:un)?(?:licen[cs]e|copying)[._\-](.+)$", _DOC_SUFFIX.sub("", name.rsplit("/", 1)[-1]))
    if not m:
        return False
    said = re.sub(r"[^a-z0-9]", "", m.group(1).lower())
    for alias, start in _NAME_ALIASES.items():
        if said.startswith(alias):
            said = start + said[len(alias):]
    return bool(said) and re.sub(r"[^a-z0-9]", "", spdx.lower()).startswith(said)


def repository_license(found: Sequence[tuple[str, str | None]]) -> str | None:
    """A repository's license from its root license files: ``found`` is (name, identified
    SPDX id or None) in path order.

    Two or more files each named for the different license it holds (``LICENSE-MIT`` and
    ``LICENSE-APACHE``, ``LICENSE.APACHE`` and ``LICENSE.BSD``) are the dual-licensing
    convention (Rust's Cargo, PyPA's ``packaging``): the repository is offered under any
    of them, ``Apache-2.0 OR MIT`` (the expression as ``license-expression`` simplifies
    it, so the same files give the same string). Otherwise the first identified file in
    path order (``LICENSE`` before ``LICENSE-THIRD-PARTY``)."""
    named: list[str] = []
    for name, spdx in found:
        if spdx is not None and _named_for(name, spdx) and spdx not in named:
            named.append(spdx)
    if len(named) >= 2:
        lic = spdx_licensing()
        try:
            return str(lic.parse(" OR ".join(named)).simplify())
        except Exception:  # license-expression's own errors on an id it cannot parse
            return " OR ".join(sorted(named))
    return next((spdx for _, spdx in found if spdx is not None), None)
