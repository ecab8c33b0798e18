"""Cross-source exact and near-duplicate removal: MinHash-LSH on Ray Data.

``Dedup`` is the stage (registered as ``dedup``); :mod:`stages.dedup.minhash` holds the
datasketch-compatible signatures, :mod:`stages.dedup.graph` the partition kernels and
:mod:`stages.dedup.stage` the passes. See ``docs/dedup.md``.
"""

from stages.dedup.config import DedupConfig
from stages.dedup.stage import Dedup

__all__ = ["Dedup", "DedupConfig"]
