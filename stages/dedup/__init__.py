"""Cross-source exact and near-duplicate removal: MinHash-LSH on Ray Data.

``Dedup`` is the stage (registered as ``dedup``): :mod:`stages.dedup.stage` holds it and
the orchestration of ``decide()``'s passes (local, or on Ray Data);
:mod:`stages.dedup.passes` the batch functions those passes hand to Ray Data,
:mod:`stages.dedup.minhash` the datasketch-compatible signatures,
:mod:`stages.dedup.graph` the partition kernels and :mod:`stages.dedup.config` the
config. The engine runs it (``datapipe.runner``); benchmarks run it through the engine
too. See ``docs/dedup.md``.
"""

from stages.dedup.config import DedupConfig
from stages.dedup.stage import Dedup

__all__ = ["Dedup", "DedupConfig"]
