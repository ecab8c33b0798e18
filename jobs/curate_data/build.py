"""Builds the inputs jobs/curate.yaml needs from ../shared into jobs/curate_data/built/
(not committed: shared texts are not copied into the repository):

* ``wikitext_cloze.jsonl``: the evaluation set (build_eval.py);
* ``arxiv/arXiv_src_fixture_00{1,2}.tar`` + ``arxiv/arxiv-metadata.jsonl``: bulk arXiv
  source tars made from the real RedPajama arXiv sample (tests/arxiv_fixture.py); the
  second holds only v2 of a paper whose v1 is in the first (``latest_version`` keeps v2).

    .venv/bin/python jobs/curate_data/build.py [--shared ../shared]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "tests"))

from arxiv_fixture import build as build_arxiv  # noqa: E402
from build_eval import build as build_eval  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.environ.get("DATAPIPE_SHARED", str(HERE.parents[2] / "shared")))
    args = ap.parse_args()
    shared, out = Path(args.shared), HERE / "built"
    n = build_eval(shared, out / "wikitext_cloze.jsonl")
    got = build_arxiv(shared, out / "arxiv", split_versions=True)
    print(f"{out}: {n} evaluation questions; {', '.join(t.name for t in got['tars'])} with {len(got['bodies'])} "
          "papers")


if __name__ == "__main__":
    main()
