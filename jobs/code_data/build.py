#!/usr/bin/env python3
"""Assemble the code job's input (jobs/code.yaml) from packages installed in this Python.

Why: the code job must run on a fresh clone with real code, and nothing third-party is
committed. Every input file is copied byte for byte from an installed package (or the
standard library), except the small ``webapp`` repository this script writes itself to
plant what real repositories also hold: credentials in a settings file and a vendored
``node_modules/`` copy. What each repository is there to exercise:

=====================  ==========================================  ==================================
repository             from                                        exercises
=====================  ==========================================  ==================================
``trees/idna``         the ``idna`` package + its ``LICENSE.md``   BSD-3-Clause from the root license
                                                                   file; large generated data tables
``trees/otel-proto``   ``opentelemetry-proto``'s ``*_pb2.py(i)``   protobuf stubs -> ``generated``;
                       + its ``LICENSE``                           Apache-2.0
``trees/speedscope``   ray's bundled speedscope viewer build       minified JavaScript; a large JSON
                       (``LICENSE``: MIT)                          schema -> ``data_file``
``trees/webapp``       written here; its ``LICENSE`` is attrs'     AWS key id + secret key and a GitHub
                       MIT text; ``node_modules/`` holds           token in ``settings.py``; vendored
                       werkzeug's ``debugger.js``                  tree -> ``vendored``
``archives/            standard-library modules + kenlm's          a repository tarball; its GPL-3.0
gpl-tool.tar.gz``      ``COPYING.3`` (GPL-3.0) as ``COPYING``,     license -> ``license:not_allowed``
                       the last member
=====================  ==========================================  ==================================

Contract: deterministic (same installed versions -> byte-identical files: sorted tar
members, mtime 0, uid/gid 0, gzip mtime 0). Writes ``repos/`` next to this file (or
``--out``), replacing what is there. The credentials are made by a seeded generator in
the providers' real formats; they are not anyone's keys. ``GROUND_TRUTH.json`` beside
them lists them, so a test can check none reaches the output.

Dependencies: the Python standard library and the packages named above (``idna``,
``opentelemetry-proto``, ``ray``, ``werkzeug``, ``attrs``, ``kenlm``: all in the project's
environment).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.metadata as md
import io
import json
import shutil
import sysconfig
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _dist_file(dist: str, contains: str) -> Path:
    """An installed distribution's file whose path contains ``contains`` (first in path order)."""
    d = md.distribution(dist)
    hits = sorted(str(f) for f in d.files or () if contains in str(f))
    if not hits:
        raise SystemExit(f"build.py: {dist} has no file matching {contains!r}; is it installed?")
    return Path(d.locate_file(hits[0]))


def _package_dir(dist: str, top: str) -> Path:
    return Path(md.distribution(dist).locate_file(top))


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(src.read_bytes())


def _copy_tree(src: Path, dst: Path, suffixes: tuple[str, ...]) -> None:
    for p in sorted(src.rglob("*")):
        if p.is_file() and p.suffix in suffixes and "__pycache__" not in p.parts:
            _copy(p, dst / p.relative_to(src))


def _token(seed: str, alphabet: str, n: int) -> str:
    """``n`` characters of ``alphabet`` from a hash chain: deterministic, random-looking."""
    out, h = [], seed.encode()
    while len(out) < n:
        h = hashlib.sha256(h).digest()
        out.extend(alphabet[b % len(alphabet)] for b in h)
    return "".join(out[:n])


def secrets() -> dict[str, str]:
    return {
        "aws_access_key_id": "AKIA" + _token("datapipe-code-aws-id", B32, 16),
        "aws_secret_access_key": _token("datapipe-code-aws-secret", B64, 40),
        "github_token": "ghp_" + _token("datapipe-code-github", ALNUM, 36),
    }


SETTINGS = '''"""Settings of the webapp service (read from the environment in production)."""

import os

DEBUG = os.environ.get("WEBAPP_DEBUG", "0") == "1"
ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
DATABASE_URL = os.environ.get("DATABASE_URL", "sqlite:///webapp.db")

# uploads bucket (left here from a debugging session)
AWS_ACCESS_KEY_ID = "{aws_access_key_id}"
AWS_SECRET_ACCESS_KEY = "{aws_secret_access_key}"
AWS_REGION = "eu-west-1"
UPLOAD_BUCKET = "webapp-uploads"

GITHUB_TOKEN = "{github_token}"
REQUEST_TIMEOUT_S = 30
'''

APP = '''"""A small upload service: store a file in the bucket, list what is there."""

from __future__ import annotations

import hashlib

from settings import UPLOAD_BUCKET


def object_key(user: str, name: str) -> str:
    """Where a user's file lands in the bucket: a stable prefix per user."""
    digest = hashlib.sha256(user.encode("utf-8")).hexdigest()[:12]
    return f"{{digest}}/{{name}}"


def describe(user: str, names: list[str]) -> list[str]:
    return [f"s3://{{UPLOAD_BUCKET}}/{{object_key(user, n)}}" for n in sorted(names)]
'''


def build(out: Path) -> dict:
    if out.exists():
        shutil.rmtree(out)
    trees, archives = out / "trees", out / "archives"
    # idna: the package and its license
    _copy_tree(_package_dir("idna", "idna"), trees / "idna" / "idna", (".py",))
    _copy(_dist_file("idna", "LICENSE"), trees / "idna" / "LICENSE.md")
    # opentelemetry-proto: protobuf stubs (three of its message packages)
    proto = _package_dir("opentelemetry-proto", "opentelemetry/proto")
    for sub in ("common", "resource", "trace"):
        _copy_tree(proto / sub, trees / "otel-proto" / "src" / "opentelemetry" / "proto" / sub, (".py", ".pyi"))
    _copy(_dist_file("opentelemetry-proto", "LICENSE"), trees / "otel-proto" / "LICENSE")
    # speedscope's production build, as ray bundles it
    speed = _dist_file("ray", "speedscope-1.5.3/LICENSE").parent
    for p in sorted(speed.iterdir()):
        if p.suffix in (".js", ".json", "") and p.is_file():
            _copy(p, trees / "speedscope" / p.name)
    # webapp: written here, with a vendored copy of a real library
    keys = secrets()
    app = trees / "webapp"
    app.mkdir(parents=True)
    (app / "settings.py").write_text(SETTINGS.format(**keys), encoding="utf-8")
    (app / "app.py").write_text(APP.format(), encoding="utf-8")
    _copy(_dist_file("attrs", "licenses/LICENSE"), app / "LICENSE")
    _copy(_dist_file("werkzeug", "debug/shared/debugger.js"),
          app / "node_modules" / "werkzeug-debugger" / "debugger.js")
    # gpl-tool: a repository tarball whose license file is its last member
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    members = [(f"gpl-tool/src/{name}", stdlib / name) for name in ("bisect.py", "heapq.py", "textwrap.py")]
    members.append(("gpl-tool/COPYING", _dist_file("kenlm", "licenses/COPYING.3")))
    archives.mkdir(parents=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, src in members:
            data = src.read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode, info.uid, info.gid = len(data), 0, 0o644, 0, 0
            tar.addfile(info, io.BytesIO(data))
    with open(archives / "gpl-tool.tar.gz", "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0) as gz:
        gz.write(buf.getvalue())
    truth = {"secrets": keys, "expect": {
        "generated": "otel-proto: src/opentelemetry/proto/*/v1/*_pb2.py",
        "minified": "speedscope: *.js", "vendored": "webapp: node_modules/",
        "not_allowed": "gpl-tool: GPL-3.0-only"}}
    (out / "GROUND_TRUTH.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
    return truth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "repos", help="output folder (default: %(default)s)")
    args = ap.parse_args()
    build(args.out)
    files = sorted(p for p in args.out.rglob("*") if p.is_file())
    print(f"wrote {len(files)} files, {sum(p.stat().st_size for p in files)} bytes under {args.out}")


if __name__ == "__main__":
    main()
