"""Language identification with fastText (the ``lid.176`` model of Joulin et al. 2016/
Grave et al. 2018, as used by CCNet, RefinedWeb and FineWeb).

Adds ``language`` (the top label, e.g. ``en``) and ``language_score`` (its probability)
to every document, and drops those outside ``languages`` (``langid:language``, detail =
the language) or scoring below ``min_score`` (``langid:low_score``, detail = the
score). The model is a local file given in the job spec (nothing is downloaded) and is
loaded once per actor in :meth:`LangId.setup`.

fastText predicts on one line; newlines are folded to spaces. Documents are predicted
on their first ``max_chars`` characters (0 = the whole text): the label of a long page
is settled well before its end and the cost grows with the length.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from datapipe import fs
from datapipe import fasttext_compat
from datapipe.errors import SpecError
from datapipe.stage import FilterStage, StageConfig
from stages import _text as T

log = logging.getLogger(__name__)


@dataclass(kw_only=True, frozen=True)
class LangIdConfig(StageConfig):
    #: local path of a fastText language-ID model (``lid.176.ftz`` / ``lid.176.bin``)
    model: str
    #: keep only these languages (fastText labels without ``__label__``); empty keeps all
    languages: tuple[str, ...] = ()
    #: drop documents whose top-language probability is below this
    min_score: float = 0.0
    #: characters of each document given to the model (0 = all)
    max_chars: int = 0

    def __post_init__(self) -> None:
        if not self.model:
            raise SpecError("langid: 'model' is required: the local path of a fastText model such as "
                            "{shared}/models/lid.176.ftz")
        if not fs.is_file(self.model):
            raise SpecError(f"langid: model file {self.model!r} not found; give the local path of a fastText "
                            "language-ID model (e.g. {shared}/models/lid.176.ftz); nothing is downloaded")
        if not 0.0 <= self.min_score <= 1.0:
            raise SpecError(f"langid: min_score must be between 0 and 1, got {self.min_score}")
        if self.max_chars < 0:
            raise SpecError(f"langid: max_chars must be >= 0 (0 = whole text), got {self.max_chars}")
        bad = [x for x in self.languages if not x or x.startswith("__label__")]
        if bad:
            raise SpecError(f"langid: languages are bare codes like 'en', 'de' (no '__label__' prefix), got {bad}")


class LangId(FilterStage):
    """fastText language ID: annotates ``language``/``language_score``, filters by them."""

    name = "langid"
    Config = LangIdConfig
    adds = {"language": pa.string(), "language_score": pa.float32()}

    _model = None                              # the fastText model, loaded in setup()

    def setup(self) -> None:
        self._model = fasttext_compat.load(self.config.model)
        log.info("langid: loaded %s", self.config.model)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_model"] = None  # the C++ model does not pickle; each actor loads its own
        state["_ready"] = False
        return state

    def predict(self, texts: list[str]) -> tuple[list[str | None], np.ndarray]:
        """Top language and its probability for each text (None/0 for blank texts)."""
        self.ensure_setup()
        limit = self.config.max_chars
        if limit:
            texts = [t[:limit] for t in texts]
        nonblank = [i for i, t in enumerate(texts) if t and not t.isspace()]
        langs: list[str | None] = [None] * len(texts)
        scores = np.zeros(len(texts), dtype=np.float32)
        if nonblank:
            labels, probs = fasttext_compat.predict(self._model, [texts[i] for i in nonblank], k=1)
            for i, lab, p in zip(nonblank, labels, probs):
                if lab:
                    langs[i] = lab[0]
                    scores[i] = min(float(p[0]), 1.0)
        return langs, scores

    def annotate(self, batch: pa.Table):
        langs, scores = self.predict(T.text_list(batch))
        return {"language": pa.array(langs, pa.string()), "language_score": pa.array(scores, pa.float32())}

    def keep(self, batch: pa.Table):
        cfg: LangIdConfig = self.config
        langs = batch.column("language").to_pylist()
        scores = batch.column("language_score").to_numpy(zero_copy_only=False)
        wanted = set(cfg.languages)
        keep = np.ones(len(langs), dtype=bool)
        reasons: list[str | None] = [None] * len(langs)
        for i, (lang, score) in enumerate(zip(langs, scores.tolist())):
            if wanted and lang not in wanted:
                keep[i] = False
                reasons[i] = f"language|{lang or 'none'}"
            elif score < cfg.min_score:
                keep[i] = False
                reasons[i] = f"low_score|{score:.3f}"
        return keep, reasons
