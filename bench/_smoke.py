"""The ``--smoke`` convention every benchmark script follows.

``python bench/<name>.py --smoke`` runs the benchmark at its smallest size (a few
documents, one repeat, scratch files in a temporary folder) to check that it runs from a
fresh ``make setup``, not to measure anything. ``tests/e2e/test_bench_smoke.py`` runs every
``bench/*.py`` that has a ``__main__`` block this way, so a new benchmark joins the suite
by accepting ``--smoke``: build the parser as usual and replace ``ap.parse_args()`` with
``_smoke.parse(ap, {option: smallest value, ...})``; options given on the command line
still win. A script that cannot run in CI says why in a line of its own source::

    # bench-smoke: skip (needs a CUDA GPU)

and the suite reports it as skipped with that reason.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from typing import Any, Mapping, Sequence


def parse(ap: argparse.ArgumentParser, smoke: Mapping[str, Any], argv: Sequence[str] | None = None) -> argparse.Namespace:
    """``ap.parse_args(argv)`` plus ``--smoke``: then every option in ``smoke`` (by its
    ``dest``) not given on the command line takes the smoke value. A value ``"<tmp>"``
    becomes a new temporary folder (for a bench's work/output folder)."""
    ap.add_argument("--smoke", action="store_true",
                    help="smallest size, one repeat, scratch files in a temporary folder: checks the bench runs "
                         "(tests/e2e/test_bench_smoke.py)")
    args = ap.parse_args(argv)
    if args.smoke:
        given = {a.split("=", 1)[0] for a in (sys.argv[1:] if argv is None else argv) if a.startswith("--")}
        flags = {act.dest: act.option_strings for act in ap._actions}
        for dest, value in smoke.items():
            if not any(f in given for f in flags.get(dest, ())):
                setattr(args, dest, tempfile.mkdtemp(prefix=f"bench-smoke-{dest}-") if value == "<tmp>" else value)
    return args
