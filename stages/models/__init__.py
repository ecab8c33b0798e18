"""The models wing: stages that score documents with a model, and what they share.

- Hugging Face models (``classify``, ``embed``; :mod:`.stage`) and their kit (:mod:`.kit`:
  local loading, device and dtype, length-bucketed batching; :mod:`.embed`,
  :mod:`.classify`: the two model heads).
- fastText and n-gram models: ``langid`` (:mod:`.langid`), ``quality`` (:mod:`.quality`),
  ``perplexity`` (:mod:`.perplexity`), and ``quality_levels`` (:mod:`.quality_levels`) over
  their scores; the fastText loader (:mod:`.fasttext`), the text normalisation a model's card
  records (:mod:`.textnorm`, :mod:`.model_card`), the text a model is trained on
  (:mod:`.training_text`) and per-language training (:mod:`.by_language`).

This package's ``__init__`` imports nothing, so the kit modules load without Ray or the
engine (``bench/model_stages.py`` on a GPU machine with only torch and transformers).
See ``docs/models.md``."""
