"""Labelled sets for the code filters' decisions, built from real package files; every
label comes from the package itself (file names, metadata), none is written by hand.

* **minified**: npm tarballs (``npm pack NAME@VERSION``, pinned in :data:`NPM_PACKAGES`,
  cached under ``--cache``) ship ``X.min.js`` / ``X-min.js`` / ``X.min.css`` beside
  ``X.js`` / ``X.css``: the first is labelled minified, its sibling not. Files without a
  sibling are left out (``amd/min.js`` in underscore is the ``min`` function, not a
  minified build).
* **generated**: the ``*_pb2.py`` / ``*_pb2_grpc.py`` protobuf stubs installed in the
  venv (ray ships ~200) are generated; the other ``.py`` files of the same top-level
  packages, sampled every ``k``-th in path order, are not (labels by name: a
  hand-written-looking name that is in fact generated counts against us).
* **license**: each ``*.dist-info`` with a single SPDX id in its METADATA
  (``License-Expression``, else ``License`` when it is an SPDX id) and a license file:
  the file's text is labelled with that id.

Nothing third-party is committed: the npm tarballs land in the cache directory, the
rest is read where it is installed.
"""

from __future__ import annotations

import argparse
import email
import logging
import re
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

#: pinned npm packages that ship minified and plain builds side by side
NPM_PACKAGES = ("underscore@1.13.7", "backbone@1.6.0", "jquery@3.7.1", "lodash@4.17.21", "moment@2.30.1",
                "axios@1.7.7", "d3@7.9.0", "bootstrap@5.3.3", "handlebars@4.7.8", "chart.js@2.9.4",
                "vue@2.7.16", "knockout@3.5.1", "animate.css@4.1.1", "normalize.css@8.0.1", "highlight.js@10.7.3")
DEFAULT_CACHE = Path.home() / ".cache" / "datapipe" / "code_labels"
_MIN_RE = re.compile(r"^(?P<stem>.+?)[.\-]min\.(?P<ext>js|css)$")


@dataclass
class Labelled:
    path: str      # path inside its package (what the filter sees)
    text: str
    language: str
    label: str     # minified/plain, generated/handwritten, or an SPDX id
    package: str


def _npm_pack(spec: str, cache: Path) -> Path:
    name, version = spec.rsplit("@", 1)
    tgz = cache / f"{name.replace('/', '-').lstrip('@')}-{version}.tgz"
    if not tgz.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        out = subprocess.run(["npm", "pack", spec, "--silent"], cwd=cache, capture_output=True, text=True,
                             timeout=300)
        if out.returncode != 0:
            raise RuntimeError(f"npm pack {spec} failed: {out.stderr.strip()[:300]}")
        made = cache / out.stdout.strip().splitlines()[-1]
        if made != tgz:
            made.rename(tgz)
    return tgz


def minified_set(cache: Path = DEFAULT_CACHE, packages: tuple[str, ...] = NPM_PACKAGES) -> list[Labelled]:
    out: list[Labelled] = []
    for spec in packages:
        try:
            tgz = _npm_pack(spec, cache)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            log.warning("skipping %s: %s", spec, e)
            continue
        with tarfile.open(tgz) as tar:
            members = {m.name: m for m in tar.getmembers() if m.isfile()}
            for name in sorted(members):
                m = _MIN_RE.match(name.rsplit("/", 1)[-1])
                if not m:
                    continue
                d = name.rsplit("/", 1)[0]
                plain = f"{d}/{m['stem']}.{m['ext']}"
                if plain not in members:
                    continue
                lang = "JavaScript" if m["ext"] == "js" else "CSS"
                for member, label in ((name, "minified"), (plain, "plain")):
                    text = tar.extractfile(members[member]).read().decode("utf-8", errors="replace")
                    out.append(Labelled(member.removeprefix("package/"), text, lang, label, spec))
    return out


def generated_set(site: Path, every: int = 15) -> list[Labelled]:
    out: list[Labelled] = []
    stubs = sorted(p for p in site.rglob("*.py") if p.name.endswith(("_pb2.py", "_pb2_grpc.py")))
    tops = sorted({p.relative_to(site).parts[0] for p in stubs})
    for p in stubs:
        out.append(Labelled(str(p.relative_to(site)), p.read_text(encoding="utf-8", errors="replace"), "Python",
                            "generated", p.relative_to(site).parts[0]))
    for top in tops:
        hand = sorted(p for p in (site / top).rglob("*.py") if not p.name.endswith(("_pb2.py", "_pb2_grpc.py")))
        for p in hand[::every]:
            out.append(Labelled(str(p.relative_to(site)), p.read_text(encoding="utf-8", errors="replace"), "Python",
                                "handwritten", top))
    return out


def license_set(site: Path) -> list[Labelled]:
    from stages.code.license import normalize

    out: list[Labelled] = []
    for d in sorted(site.glob("*.dist-info")):
        meta = email.message_from_string((d / "METADATA").read_text(encoding="utf-8", errors="replace"))
        label = normalize(meta.get("License-Expression") or "")
        if not label and meta.get("License") and len(meta["License"]) < 40:
            label = normalize(meta["License"])
        if not label or " " in label:
            continue
        files = sorted(p for p in d.rglob("*") if p.is_file() and re.match(r"(?i)(licen[cs]e|copying)", p.name))
        if files:
            out.append(Labelled(files[0].name, files[0].read_text(encoding="utf-8", errors="replace"), "Text",
                                label, d.name))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where npm tarballs are kept")
    args = ap.parse_args(argv)
    site = Path(next(p for p in sys.path if p.endswith("site-packages")))
    for name, items in (("minified", minified_set(args.cache)), ("generated", generated_set(site)),
                        ("license", license_set(site))):
        labels = sorted({x.label for x in items})
        print(f"{name:10s} {len(items):5d} files  labels: {', '.join(f'{lb}={sum(x.label == lb for x in items)}' for lb in labels[:12])}")


if __name__ == "__main__":
    main()
