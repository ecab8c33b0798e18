"""The ``tokenize`` stage (:mod:`.stage`) and byte-level BPE training for it
(:mod:`.train`, ``datapipe tokenizer train``)."""

from stages.tokenize.stage import NUM_TOKENS, TOKENS, TOKENS_TYPE, Tokenize, TokenizeConfig

__all__ = ["NUM_TOKENS", "TOKENS", "TOKENS_TYPE", "Tokenize", "TokenizeConfig"]
