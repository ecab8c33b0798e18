"""The heuristics wing: rule-based document filters (``length``/``normalize``, ``c4``,
``fineweb``, ``gopher_quality``, ``gopher_repetition``, ``filter_expr``, ``url_filter``)
and what they share:

- per-language settings and word lists (:mod:`.languages`);
- a batch's columns as arrays (:mod:`.columns`), byte-level counts on the UTF-8 buffers
  (:mod:`.byte_counts`), texts as flat pieces per document (:mod:`.pieces`), words and
  their character classes (:mod:`.words`), equal keys and in-document repeats
  (:mod:`.grouping`), rule failures to verdicts (:mod:`.verdicts`);
- the ``reference: datatrove`` mode (:mod:`.datatrove_mode`) and the wording of their
  config checks (:mod:`.config_checks`).

The plain per-document statement of every rule, the oracle the vectorised stages are
tested against, is ``tests/heuristics_reference.py``."""
