"""The dedup stage's configuration (what a job spec's ``- dedup: {...}`` holds)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from datapipe.errors import SpecError
from datapipe.stage import StageConfig
from stages.dedup.minhash import Normalisation, Shingling, optimal_bands_rows


@dataclass(kw_only=True, frozen=True)
class DedupConfig(StageConfig):
    """Exact + MinHash-LSH near-duplicate removal across sources.

    Which copy survives: the one from the source listed first in ``source_priority``
    (sources not listed come after, by name), then the smallest document id. With
    ``index_in`` the documents of earlier runs always survive.
    """

    #: cheap first pass: identical normalised text
    exact: bool = True
    #: MinHash-LSH near-duplicate pass
    near: bool = True
    # normalisation (applies to both passes)
    lowercase: bool = True
    punctuation: bool = True
    digits: bool = True
    whitespace: bool = True
    nfkc: bool = False
    # shingles (code: ``shingle: token`` with lowercase/punctuation/digits off, see docs/code.md)
    shingle: Literal["word", "token", "char"] = "word"
    ngram: int = 5
    # MinHash (datasketch-compatible)
    num_perm: int = 128
    seed: int = 1
    scheme: Literal["affine32", "legacy"] = "affine32"
    # LSH
    threshold: float = 0.8
    #: (false-positive weight, false-negative weight) for choosing bands x rows; default:
    #: (0.05, 0.95) when candidates are verified (a false positive then only costs a
    #: check), (0.5, 0.5) - datasketch's default - when they are not
    weights: tuple[float, float] | None = None
    bands: int | None = None
    rows: int | None = None
    #: how candidate pairs are checked against ``threshold`` before clustering
    verify: Literal["jaccard", "signature", "none"] = "jaccard"
    source_priority: tuple[str, ...] = ()
    # incremental mode
    index_in: str | None = None
    index_out: str | None = None
    # execution
    #: the passes run in one process on NumPy/Arrow up to this many side rows (plus
    #: index documents), with no Ray Data pass and its start-up cost; above it, Ray
    #: Data passes bounded by the ``*_rows`` options below. Both give the same decisions
    local_rows: int = 200_000
    components: Literal["auto", "local", "distributed"] = "auto"
    #: ``auto`` clusters in one task up to this many duplicate edges (measured ~0.4 KB
    #: per edge at peak, so ~0.4 GB at the default); more edges go distributed
    local_max_edges: int = 1_000_000
    #: documents per ``side()`` batch when a runner hands the stage a whole dataset
    batch_size: int = 1024
    #: most rows per shuffle partition of the light grouping passes (keys, buckets, edges)
    partition_rows: int = 1_000_000
    #: most documents + candidate pairs per partition of the verification joins, which
    #: carry signatures and shingle sets (a few KB per document)
    verify_partition_rows: int = 100_000
    #: fewest rows per partition worth spreading over more CPUs than the minimum
    min_partition_rows: int = 50_000
    #: decision rows per shard the final pass looks up
    shard_rows: int = 200_000
    max_rounds: int = 100

    def __post_init__(self) -> None:
        def bad(field: str, msg: str) -> SpecError:
            return SpecError(f"dedup: {field} {msg}")

        if not (self.exact or self.near):
            raise bad("exact/near", "are both false: enable at least one pass or remove the dedup stage")
        if self.ngram < 1:
            raise bad("ngram", f"must be >= 1, got {self.ngram}")
        if not 2 <= self.num_perm <= 1024:
            raise bad("num_perm", f"must be in [2, 1024], got {self.num_perm}")
        if self.seed < 0 or self.seed >= 2**32:
            raise bad("seed", f"must be in [0, 2**32), got {self.seed}")
        if not 0.0 < self.threshold < 1.0:
            raise bad("threshold", f"must be in (0, 1), got {self.threshold} (0.8 is a common choice)")
        if self.weights is not None:
            if len(self.weights) != 2 or any(w < 0 or w > 1 for w in self.weights) or abs(sum(self.weights) - 1.0) > 1e-9:
                raise bad("weights", f"must be two numbers in [0, 1] summing to 1 (false positive, false negative), got {self.weights}")
        if (self.bands is None) != (self.rows is None):
            raise bad("bands/rows", "must be given together (or neither, to derive them from threshold)")
        if self.bands is not None:
            if self.bands < 1 or self.rows < 1 or self.bands * self.rows > self.num_perm:
                raise bad("bands/rows", f"need bands >= 1, rows >= 1 and bands * rows <= num_perm ({self.num_perm}); "
                          f"got {self.bands} x {self.rows}")
        if len(set(self.source_priority)) != len(self.source_priority):
            raise bad("source_priority", f"lists a source twice: {list(self.source_priority)}")
        if self.local_rows < 0:
            raise bad("local_rows", f"must be >= 0 (0: always distributed), got {self.local_rows}")
        for name, v in (("local_max_edges", self.local_max_edges), ("batch_size", self.batch_size),
                        ("partition_rows", self.partition_rows), ("shard_rows", self.shard_rows),
                        ("verify_partition_rows", self.verify_partition_rows),
                        ("min_partition_rows", self.min_partition_rows),
                        ("max_rounds", self.max_rounds)):
            if v < 1:
                raise bad(name, f"must be >= 1, got {v}")
        if (self.index_in or self.index_out) and not self.near:
            raise bad("index_in/index_out", "need the near pass (near: true): the index holds LSH buckets")
        if self.index_in and self.index_out and self.index_in.rstrip("/") == self.index_out.rstrip("/"):
            raise bad("index_out", f"must differ from index_in ({self.index_out}): indexes are immutable, so a "
                      "re-run never deduplicates data against itself; write a new one")

    # -- derived ------------------------------------------------------------------
    @property
    def normalisation(self) -> Normalisation:
        return Normalisation(lowercase=self.lowercase, punctuation=self.punctuation, digits=self.digits,
                             whitespace=self.whitespace, nfkc=self.nfkc)

    @property
    def shingling(self) -> Shingling:
        return Shingling(kind=self.shingle, n=self.ngram)

    @property
    def lsh_weights(self) -> tuple[float, float]:
        if self.weights is not None:
            return self.weights
        return (0.5, 0.5) if self.verify == "none" else (0.05, 0.95)

    def bands_rows(self) -> tuple[int, int]:
        """Explicit ``bands x rows``, or the optimum for ``threshold`` and the weights."""
        if self.bands is not None:
            return self.bands, self.rows
        return optimal_bands_rows(self.threshold, self.num_perm, self.lsh_weights)

    def rank(self, source: str) -> int:
        """Survival rank of a source (smaller survives); unlisted sources share the last."""
        try:
            return self.source_priority.index(source)
        except ValueError:
            return len(self.source_priority)

    def signature_params(self) -> dict:
        """What must match between a persisted index and a run that reads it."""
        b, r = self.bands_rows()
        return {
            "lowercase": self.lowercase, "punctuation": self.punctuation, "digits": self.digits,
            "whitespace": self.whitespace, "nfkc": self.nfkc, "shingle": self.shingle, "ngram": self.ngram,
            "num_perm": self.num_perm, "seed": self.seed, "scheme": self.scheme, "bands": b, "rows": r,
        }
