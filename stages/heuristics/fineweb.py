"""FineWeb quality filter (Penedo et al. 2024, "The FineWeb Datasets: Decanting the Web
for the Finest Text Data at Scale", arXiv:2406.17557; datatrove
``FineWebQualityFilter``). Targets list-like pages that pass the Gopher and C4 filters.

Rules, checked in this order (``fineweb:<rule>``, detail = measured value):

=================  =================================================================  =======
rule               drops a document when                                              default
=================  =================================================================  =======
empty              it has no non-blank line                                           –
line_punct_ratio   fraction of lines ending in terminal punctuation <= min            0.12
short_line_ratio   fraction of lines of <= ``short_line_length`` (30) chars >= max    0.67
char_dup_ratio     characters in repeated lines / non-newline characters >= max       0.10
list_ratio         newlines / words > max                                             0.30
=================  =================================================================  =======

Lines are split on ``\\n``; blank lines are skipped (``skip_blank_lines``) and trailing
whitespace (``\\r`` of CRLF text included) is ignored when checking the last character
and the length. The paper's comparisons (``<=``, ``>=``) are kept. The paper gives 0.1
for the duplicated-line character fraction; datatrove's code default is 0.01 (set
``max_char_dup_ratio: 0.01`` to match that code). The newline/word ratio is datatrove's
(not in the paper); words are whitespace tokens (characters of languages written
without spaces).

Languages (:mod:`stages.heuristics.languages`): a line ends in terminal punctuation when its last
character is one of ``terminal_punctuation`` or of its document's language's own marks
(``。！？`` ...). A document whose language has no known sentence marks (Thai, Lao, an
unknown language, no language) is not judged by ``line_punct_ratio`` and is counted as
``line_punct_ratio_unsupported_language``. ``reference: datatrove`` reproduces datatrove's
``FineWebQualityFilter`` (its Unicode sentence terminals unless ``terminal_punctuation``
is changed; differences in ``docs/filters.md``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe.errors import SpecError
from datapipe.stage import FilterStage, StageConfig
from stages.heuristics import datatrove_mode as DT
from stages.heuristics import languages as L
from stages.heuristics.byte_counts import count_byte, count_words
from stages.heuristics.columns import as_bool, lengths, text_list, texts_of
from stages.heuristics.grouping import codes, repeats
from stages.heuristics.pieces import Pieces
from stages.heuristics.verdicts import first_failure
from stages.heuristics.config_checks import check_fractions, check_non_negative, check_reference, check_single_chars

log = logging.getLogger(__name__)

FINEWEB_TERMINAL_PUNCTUATION = (".", "'", '"', "!", "?")


@dataclass(kw_only=True, frozen=True)
class FineWebConfig(StageConfig):
    min_line_punct_ratio: float | None = 0.12
    max_short_line_ratio: float | None = 0.67
    short_line_length: int = 30
    max_char_dup_ratio: float | None = 0.10
    max_list_ratio: float | None = 0.30
    terminal_punctuation: tuple[str, ...] = FINEWEB_TERMINAL_PUNCTUATION
    skip_blank_lines: bool = True
    #: language of documents when the batch has no ``language`` column (null: unknown)
    default_language: str | None = "en"
    #: "paper" (the published rules) or "datatrove" (datatrove's implementation)
    reference: str = "paper"

    def __post_init__(self) -> None:
        s = "fineweb"
        check_reference(s, self.reference)
        check_fractions(s, self, ("min_line_punct_ratio", "max_short_line_ratio", "max_char_dup_ratio"))
        check_non_negative(s, self, ("max_list_ratio",))
        if self.short_line_length < 0:
            raise SpecError(f"{s}: short_line_length must be >= 0, got {self.short_line_length}")
        check_single_chars(s, "terminal_punctuation", self.terminal_punctuation)


class FineWeb(FilterStage):
    """FineWeb's line-shape heuristics on ``text``; see the module docstring."""

    name = "fineweb"
    Config = FineWebConfig

    def keep(self, batch: pa.Table):
        cfg: FineWebConfig = self.config
        langs = L.languages_of(L.document_languages(batch, cfg.default_language))
        if cfg.reference == "datatrove":
            return self._datatrove(batch, langs)
        arr = texts_of(batch)
        n = len(arr)
        lists = pc.split_pattern(arr, "\n")
        lines = Pieces(pc.utf8_rtrim_whitespace(pc.list_flatten(lists)),
                         pc.list_parent_indices(lists).to_numpy(zero_copy_only=False).astype(np.int64), n)
        if cfg.skip_blank_lines and len(lines):
            lines = lines.select(lengths(lines.values) > 0)
        n_lines = lines.count()
        safe_lines = np.maximum(n_lines, 1)
        fails: list[tuple] = [("empty", n_lines == 0, n_lines)]

        if cfg.min_line_punct_ratio is not None:
            ends, unknown = line_ends(lines, langs, cfg.terminal_punctuation)
            r = lines.count(ends) / safe_lines
            fails.append(("line_punct_ratio", r <= cfg.min_line_punct_ratio, r, unknown))
        if cfg.max_short_line_ratio is not None:
            r = lines.count(lengths(lines.values) <= cfg.short_line_length) / safe_lines
            fails.append(("short_line_ratio", r >= cfg.max_short_line_ratio, r))
        newlines = count_byte(arr, 10)
        if cfg.max_char_dup_ratio is not None:
            stripped = pc.utf8_ltrim_whitespace(lines.values) if len(lines) else lines.values
            rep = repeats(codes(stripped), lines.parent)
            dup_chars = lines.total(lengths(stripped).astype(np.float64), rep)
            non_nl = lengths(arr) - newlines
            r = dup_chars / np.maximum(non_nl, 1)
            fails.append(("char_dup_ratio", r >= cfg.max_char_dup_ratio, r))
        if cfg.max_list_ratio is not None:
            words = count_words(arr)
            for i in (i for i, x in enumerate(langs) if x is not None and x.by_chars):
                words[i] = len(L.segment(arr[i].as_py()))
            r = newlines / np.maximum(words, 1)
            fails.append(("list_ratio", r > cfg.max_list_ratio, r))
        return first_failure(fails, n)

    def _datatrove(self, batch: pa.Table, langs: list):
        cfg: FineWebConfig = self.config
        if getattr(self, "_words", None) is None:
            self._words = DT.Words()
        stop = (tuple(DT.TERMINAL_PUNCTUATION) if tuple(cfg.terminal_punctuation) == FINEWEB_TERMINAL_PUNCTUATION
                else tuple(cfg.terminal_punctuation))
        return DT.run_per_document(text_list(batch), langs, lambda t, lang: DT.fineweb(
            t, lambda: self._words.words(t, lang), cfg, stop))


def line_ends(lines: Pieces, langs: list, base: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per line: ends in its document's terminal punctuation; per document: its language
    has no known sentence marks (not judged)."""
    ends = np.zeros(len(lines), dtype=bool)
    unknown = np.zeros(len(langs), dtype=bool)
    groups, unk = L.terminal_marks(langs, base)
    unknown[unk] = True
    if not len(lines):
        return ends, unknown
    last = pc.utf8_slice_codeunits(lines.values, -1)
    doc_group = np.full(len(langs), -1, dtype=np.int64)
    for g, docs in enumerate(groups.values()):
        doc_group[docs] = g
    line_group = doc_group[lines.parent]
    for g, marks in enumerate(groups):
        sel = np.flatnonzero(line_group == g)
        if len(sel):
            ends[sel] = as_bool(pc.is_in(last.take(pa.array(sel)), value_set=pa.array(list(marks), pa.string())))
    return ends, unknown
