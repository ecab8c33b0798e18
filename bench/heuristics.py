"""Alias of ``bench/filters.py`` (the heuristic-filter and langid throughput bench)."""

from __future__ import annotations

import runpy
from pathlib import Path

if __name__ == "__main__":
    runpy.run_path(str(Path(__file__).with_name("filters.py")), run_name="__main__")
