"""The ``quality`` stage: a fastText classifier's ``P(high quality)`` per document, and
a keep rule on it.

The model comes from ``datapipe quality train`` (see ``docs/quality.md``); its card
(``<model>.card.json``) gives the text normalisation used at training, which the stage
applies before predicting, and the score calibration used by ``top_fraction``.

Keep rules (``mode``):

``threshold`` (default)
    keep ``quality_score >= threshold``; drop reason ``quality:below_threshold|<score>``.
``top_fraction``
    keep roughly the best ``top_fraction`` of the corpus. A batch-local rank would make
    the result depend on how Ray cut the data into batches (and a batch of junk would
    still keep its "best" 30%), so by default the fraction is turned into one global
    threshold: the ``1 - top_fraction`` quantile of the scores in the card's
    *calibration* (computed by ``quality train --calibrate`` / ``quality calibrate`` over
    a sample of the corpus being filtered). Same threshold on every batch and actor, so
    reruns match exactly; the realised fraction matches the target to the extent the
    sample represents the corpus. ``top_fraction_scope: batch`` ranks within each batch
    instead (no calibration needed; not reproducible across batch sizes).
    Reason ``quality:below_top_fraction|<score><<threshold>``.
``pareto``
    GPT-3's stochastic filter: keep when ``X > 1 - score`` with ``X ~ Pareto(alpha)``
    (NumPy's Lomax form, alpha 9 in GPT-3), so low-scoring documents survive now and
    then and the filtered corpus is not just the classifier's mode. ``X`` is drawn from
    a uniform number hashed from ``(seed, id)``, so the same document gets the same
    decision on every rerun, worker and batch size. Reason ``quality:pareto|<score>``.
``score``
    annotate only, drop nothing.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pyarrow as pa
import xxhash

from datapipe import fs
from stages.models import fasttext as fasttext_compat
from datapipe import schema as S
from datapipe.errors import SpecError
from stages.models.model_card import read_card
from stages.models.quality.train import POSITIVE, QUANTILE_POINTS, positive_scores
from datapipe.stage import Compute, FilterStage, StageConfig
from stages.models.textnorm import TextNorm

log = logging.getLogger(__name__)

QUALITY_SCORE = "quality_score"
_TWO64 = float(2**64)


def calibrated_threshold(quantiles: list[float], top_fraction: float) -> float:
    """The score above which ``top_fraction`` of the calibration sample lies
    (linear interpolation between the stored quantiles)."""
    probs = np.linspace(0.0, 1.0, len(quantiles))
    return float(np.interp(1.0 - top_fraction, probs, np.asarray(quantiles, dtype=np.float64)))


def pareto_keep(ids: list[str], scores: np.ndarray, alpha: float, seed: int) -> np.ndarray:
    """GPT-3's rule ``pareto(alpha) > 1 - score`` with the draw hashed from each id."""
    u = np.fromiter((xxhash.xxh3_64_intdigest(i.encode("utf-8", "surrogatepass"), seed=seed) for i in ids),
                    dtype=np.float64, count=len(ids)) / _TWO64
    draw = (1.0 - u) ** (-1.0 / alpha) - 1.0  # inverse CDF of numpy.random.pareto (Lomax)
    return draw > 1.0 - scores.astype(np.float64)


@dataclass(kw_only=True, frozen=True)
class QualityConfig(StageConfig):
    """``model``: path to the fastText ``.bin`` written by ``datapipe quality train``
    (its card must sit beside it). ``mode``: how to turn scores into keep/drop (module
    docstring); when omitted it is ``top_fraction`` if ``top_fraction`` is set, else
    ``threshold``."""

    model: str | None = None
    #: per-language models (``{de: models/quality/de.bin}``) and/or a folder of them
    #: (``quality train --by-language --out-dir``, keyed by the language in each card):
    #: a document is scored by the model of its ``language`` column; ``model``, when
    #: also given, scores the other languages; without it they are kept unscored and
    #: counted (``passed_no_model``)
    models: dict[str, str] = field(default_factory=dict)
    models_dir: str | None = None
    mode: Literal["threshold", "top_fraction", "pareto", "score"] | None = None
    threshold: float = 0.5
    top_fraction: float | None = None
    top_fraction_scope: Literal["calibrated", "batch"] = "calibrated"
    pareto_alpha: float = 9.0
    seed: int = 0
    label: str = POSITIVE

    def __post_init__(self) -> None:
        if self.mode is None:
            object.__setattr__(self, "mode", "top_fraction" if self.top_fraction is not None else "threshold")
        models = dict(self.models)
        if self.models_dir is not None:
            from stages.models.by_language import models_in_dir

            for lang, path in models_in_dir(self.models_dir, "fasttext-quality", where="quality").items():
                models.setdefault(lang, path)
        object.__setattr__(self, "models", models)
        if self.model is None and not models:
            raise SpecError("quality: give `model` (from `datapipe quality train`), `models: {lang: path}` or "
                            "`models_dir` (from `quality train --by-language`)")
        for where, path in ([("model", self.model)] if self.model else []) + [(f"models[{k}]", v) for k, v in models.items()]:
            if not fs.is_file(path):
                raise SpecError(f"quality.{where}: {path} not found; train it with `datapipe quality train "
                                f"--positive ... --negative ... --out {path}` (docs/quality.md)")
        if not 0.0 <= self.threshold <= 1.0:
            raise SpecError(f"quality.threshold must be in [0, 1], got {self.threshold}")
        if self.mode == "top_fraction":
            if self.top_fraction is None or not 0.0 < self.top_fraction <= 1.0:
                raise SpecError(f"quality.top_fraction must be in (0, 1] for mode top_fraction, got {self.top_fraction}")
            if self.top_fraction_scope == "calibrated":
                for path in ([self.model] if self.model else []) + list(models.values()):
                    card = read_card(path, required=True)
                    if not (card.get("calibration") or {}).get("quantiles"):
                        raise SpecError(
                            f"quality.top_fraction: the card of {path} has no calibration; run "
                            f"`datapipe quality calibrate --model {path} --input <sample of the corpus>` "
                            "or set top_fraction_scope: batch")
        elif self.top_fraction is not None:
            raise SpecError(f"quality.top_fraction only applies to mode top_fraction (mode is {self.mode})")
        if self.pareto_alpha <= 0:
            raise SpecError(f"quality.pareto_alpha must be > 0, got {self.pareto_alpha}")


class QualityFilter(FilterStage):
    """Adds ``quality_score`` (float32, ``P(hq)``) and keeps by the configured rule."""

    name = "quality"
    Config = QualityConfig
    compute = Compute(kind="actor")   # setup() loads state once per actor
    reads = (S.TEXT,)
    adds = {QUALITY_SCORE: pa.float32()}

    def setup(self) -> None:
        cfg: QualityConfig = self.config
        #: language (None: the fallback ``model``) -> (fastText model, normalisation, threshold)
        self._models: dict[str | None, tuple] = {}
        for lang, path in ([(None, cfg.model)] if cfg.model else []) + sorted(cfg.models.items()):
            self._models[lang] = self._load(path)

    def _load(self, path: str) -> tuple:
        cfg: QualityConfig = self.config
        card = read_card(path, required=True)
        if card.get("kind") != "fasttext-quality":
            raise SpecError(f"quality.model: {path} is not a quality classifier card (kind {card.get('kind')!r})")
        model = fasttext_compat.load(path)
        labels = [lab.removeprefix("__label__") for lab in model.get_labels()]
        if cfg.label not in labels:
            raise SpecError(f"quality.label {cfg.label!r} is not a label of {path} (labels: {labels})")
        threshold = cfg.threshold
        if cfg.mode == "top_fraction" and cfg.top_fraction_scope == "calibrated":
            q = card["calibration"]["quantiles"]
            if len(q) != QUANTILE_POINTS:
                log.warning("calibration of %s has %d quantiles (expected %d)", path, len(q), QUANTILE_POINTS)
            threshold = calibrated_threshold(q, cfg.top_fraction)
            log.info("quality: %s: top %.3g of the calibration sample = score >= %.4f", path, cfg.top_fraction,
                     threshold)
        return model, TextNorm.from_dict(card.get("textnorm")), threshold

    def _model_keys(self, batch: pa.Table) -> list:
        """Per row, the key of the model that scores it (a language, None for the
        fallback ``model``), or ``...`` when no model covers its language."""
        if not self.config.models:
            return [None] * batch.num_rows
        langs = batch.column("language").to_pylist() if "language" in batch.column_names else [None] * batch.num_rows
        return [lg if lg in self._models else (None if None in self._models else ...) for lg in langs]

    def annotate(self, batch: pa.Table):
        texts = batch.column(S.TEXT).to_pylist()
        keys = self._model_keys(batch)
        scores = np.full(len(texts), np.nan, dtype=np.float32)
        for key, (model, norm, _) in self._models.items():
            idx = [i for i, k in enumerate(keys) if k == key and k is not ...]
            if idx:
                scores[idx] = positive_scores(model, [norm.one_line(texts[i]) for i in idx], self.config.label)
        return {QUALITY_SCORE: pa.array(scores, pa.float32(), mask=np.isnan(scores))}

    def keep(self, batch: pa.Table):
        keep, reasons = self._keep_scored(batch)
        keys = self._model_keys(batch)
        no_model = np.fromiter((k is ... for k in keys), dtype=np.int64, count=len(keys))
        if no_model.any():  # unscored: kept, and counted
            keep = np.asarray(keep, dtype=bool) | no_model.astype(bool)
            reasons = [None if n else r for n, r in zip(no_model.tolist(), reasons)]
        return keep, reasons, {"passed_no_model": no_model}

    def _keep_scored(self, batch: pa.Table):
        cfg: QualityConfig = self.config
        scores = batch.column(QUALITY_SCORE).to_numpy(zero_copy_only=False).astype(np.float32)
        m = len(scores)
        if cfg.mode == "score":
            return np.ones(m, dtype=bool), [None] * m
        if cfg.mode == "pareto":
            keep = pareto_keep(batch.column(S.ID).to_pylist(), scores, cfg.pareto_alpha, cfg.seed)
            return keep, [None if k else f"pareto|{s:.4f}" for k, s in zip(keep.tolist(), scores.tolist())]
        if cfg.mode == "top_fraction" and cfg.top_fraction_scope == "batch":
            k = math.ceil(cfg.top_fraction * m)
            # rank by score, ties broken by id so the choice never depends on row order
            ids = batch.column(S.ID).to_pylist()
            order = sorted(range(m), key=lambda i: (-float(scores[i]), ids[i]))
            keep = np.zeros(m, dtype=bool)
            keep[order[:k]] = True
            return keep, [None if kk else f"below_top_fraction|{s:.4f}" for kk, s in zip(keep.tolist(), scores.tolist())]
        keys = self._model_keys(batch)
        thr = np.array([self._models[k][2] if k is not ... else 0.0 for k in keys], dtype=np.float64)
        keep = scores >= thr
        rule = "below_top_fraction" if cfg.mode == "top_fraction" else "below_threshold"
        return keep, [None if k else f"{rule}|{s:.4f}<{th:.4f}" for k, s, th in zip(keep.tolist(), scores.tolist(),
                                                                                   thr.tolist())]
