"""Cross-source exact and near-duplicate removal: MinHash-LSH on Ray Data.

``Dedup`` is the stage (registered as ``dedup``): :mod:`stages.dedup.stage` holds it and
its plan of passes (a generator the engine's executor drives, in one process or on Ray Data);
:mod:`stages.dedup.batch_kernels` the batch functions those passes hand to Ray Data,
:mod:`stages.dedup.minhash` the datasketch-compatible signatures,
:mod:`stages.dedup.graph` the partition kernels and :mod:`stages.dedup.config` the
config. The engine runs it (``datapipe.passes.run_global``); benchmarks run it through
the engine too. See ``docs/dedup.md``.

The wing's other global stages: ``line_dedup`` (:mod:`stages.dedup.lines`),
``latest_version`` (:mod:`stages.dedup.latest_version`) and ``semantic_dedup``
(:mod:`stages.dedup.semantic`).
"""

from stages.dedup.config import DedupConfig
from stages.dedup.stage import Dedup

__all__ = ["Dedup", "DedupConfig"]
