"""Alias of ``bench/filters.py``: heuristic-filter and langid throughput per core beside
the per-document baseline (the issue names the script ``filters.py``)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    runpy.run_path(str(here / "filters.py"), run_name="__main__")
