"""Semantic dedup (SemDeDup-style) on document embeddings: ``SemanticDedup`` (registered
as ``semantic_dedup``) in :mod:`stages.semdedup.stage`, with its pass functions; the
NumPy k-means and blockwise cosine compare in :mod:`stages.semdedup.kmeans`. See
docs/dedup.md "Semantic dedup"."""

from stages.semdedup.stage import SemanticDedup, SemanticDedupConfig

__all__ = ["SemanticDedup", "SemanticDedupConfig"]
