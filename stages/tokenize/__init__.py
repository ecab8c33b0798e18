"""The ``tokenize`` stage (:mod:`.stage`) and what it owns: tokenizer loading and
fingerprints (:mod:`.identity`), the Megatron shard writer and the ``shards:`` options
(:mod:`.writer`), the job's shard sink (:mod:`.shard_sink`), and byte-level BPE training
(:mod:`.train`, ``datapipe tokenizer train``). The format itself is the engine's
(:mod:`datapipe.megatron`), shared with ``datapipe shards verify`` and the loader."""

from stages.tokenize.stage import NUM_TOKENS, TOKENS, TOKENS_TYPE, Tokenize, TokenizeConfig

__all__ = ["NUM_TOKENS", "TOKENS", "TOKENS_TYPE", "Tokenize", "TokenizeConfig"]
