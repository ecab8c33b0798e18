"""Semantic dedup (SemDeDup-style) on document embeddings: ``SemanticDedup`` (registered
as ``semantic_dedup``) in :mod:`stages.dedup.semantic.stage`, with its pass functions; the
NumPy k-means and blockwise cosine compare in :mod:`stages.dedup.semantic.kmeans`. See
docs/dedup.md "Semantic dedup"."""

from stages.dedup.semantic.stage import SemanticDedup, SemanticDedupConfig

__all__ = ["SemanticDedup", "SemanticDedupConfig"]
