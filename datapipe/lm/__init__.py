"""n-gram language models: estimation (interpolated modified Kneser-Ney, vectorised),
ARPA output that KenLM loads, document perplexity and CCNet-style cut-offs.

See ``docs/quality.md`` for the recipes."""

from datapipe.lm.arpa import write_arpa
from datapipe.lm.kneser_ney import NgramModel, check_normalisation, estimate
from datapipe.lm.score import load_kenlm, perplexities

__all__ = ["NgramModel", "check_normalisation", "estimate", "load_kenlm", "perplexities", "write_arpa"]
