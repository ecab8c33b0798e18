"""The ``perplexity`` stage and the n-gram language models it scores with: estimation
(interpolated modified Kneser-Ney, vectorised), ARPA output that KenLM loads, document
perplexity and CCNet-style cut-offs (``datapipe lm train|cutoffs``, :mod:`.cli`).

See ``docs/quality.md`` for the recipes."""

from stages.models.perplexity.arpa import write_arpa
from stages.models.perplexity.kneser_ney import NgramModel, check_normalisation, estimate
from stages.models.perplexity.score import load_kenlm, perplexities
from stages.models.perplexity.stage import PerplexityConfig, PerplexityFilter

__all__ = ["NgramModel", "PerplexityConfig", "PerplexityFilter", "check_normalisation", "estimate",
           "load_kenlm", "perplexities", "write_arpa"]
