"""The heuristics wing: rule-based document filters (``length``/``normalize``, ``c4``,
``fineweb``, ``gopher_quality``, ``gopher_repetition``, ``filter_expr``, ``url_filter``)
and what they share: per-language word splitting (:mod:`.languages`), text helpers
(:mod:`.text`), the ``reference: datatrove`` mode (:mod:`.datatrove_mode`) and the wording of
their config checks (:mod:`.config_checks`)."""
