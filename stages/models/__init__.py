"""The models wing: stages that run Hugging Face models (``classify``, ``embed``;
:mod:`.stage`) and their shared kit (:mod:`.kit`: local loading, device and dtype,
length-bucketed batching; :mod:`.embed`, :mod:`.classify`: the two model heads).

This package's ``__init__`` imports nothing, so the kit modules load without Ray or the
engine (``bench/model_stages.py`` on a GPU machine with only torch and transformers).
See ``docs/models.md``."""
