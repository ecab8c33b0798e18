"""The ``perplexity`` stage: per-document perplexity under a KenLM n-gram model trained
on reference text (``datapipe lm train``), CCNet-style.

Low perplexity under a Wikipedia model means "reads like Wikipedia"; CCNet used it to
split Common Crawl into ``head``/``middle``/``tail`` thirds per language, and LLaMA kept
head + middle. This stage adds

* ``perplexity`` (float32): ``10 ** (-sum log10 p / tokens)`` over the document's
  normalised lines (:mod:`stages.models.perplexity.score`), normalised exactly as the model's
  training text was (the card's ``textnorm``);
* ``perplexity_bucket`` (string): ``head`` below the ``head_percentile`` cut-off of the
  document's language, ``middle`` below ``tail_percentile``, else ``tail`` — only when
  ``cutoffs`` (a CSV from ``datapipe lm cutoffs``, or CCNet's own) is given.

and drops documents with ``perplexity > max_perplexity`` (``perplexity:too_high``) and
documents in ``drop_buckets`` (``perplexity:tail``). Documents in a language without a
model, and documents with no words, get null columns and are kept: this stage cannot
judge them.

Language: the ``language`` column when a ``langid`` stage ran before, else
``default_language``. ``model`` is the model of ``language`` (default: the language
written in its card); ``models`` adds more languages (``{de: models/lm/de.arpa}``), and
``models_dir`` a folder of them (``lm train --by-language --out-dir``, keyed by the
language in each card). Documents kept because their language has no model are counted
in the stage's ``passed_no_model`` counter (run report, ``changes``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from datapipe import fs
from datapipe import schema as S
from datapipe.errors import SpecError
from stages.models.model_card import read_card
from stages.models.perplexity.score import load_kenlm, perplexities
from stages.models.perplexity.train import read_cutoffs
from datapipe.stage import Compute, FilterStage, StageConfig
from stages.models.textnorm import TextNorm

log = logging.getLogger(__name__)

PERPLEXITY, BUCKET, LANGUAGE = "perplexity", "perplexity_bucket", "language"
BUCKETS = ("head", "middle", "tail")


@dataclass(kw_only=True, frozen=True)
class PerplexityConfig(StageConfig):
    model: str | None = None
    language: str | None = None
    models: dict[str, str] = field(default_factory=dict)
    #: a folder of per-language models (``lm train --by-language --out-dir``), keyed by
    #: the language in each card; adds to ``models``
    models_dir: str | None = None
    default_language: str | None = None
    max_perplexity: float | None = None
    cutoffs: str | None = None
    head_percentile: int = 30
    tail_percentile: int = 60
    drop_buckets: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        models = dict(self.models)
        if self.models_dir is not None:
            from stages.models.by_language import models_in_dir

            for lang, path in models_in_dir(self.models_dir, "kenlm-ngram", where="perplexity").items():
                models.setdefault(lang, path)
        if self.model is not None:
            lang = self.language or (read_card(self.model) or {}).get("language") or "en"
            object.__setattr__(self, "language", lang)
            if lang in models and models[lang] != self.model:
                raise SpecError(f"perplexity: language {lang!r} has two models ({self.model}, {models[lang]})")
            models[lang] = self.model
        if not models:
            raise SpecError("perplexity: give `model` (a KenLM .arpa/.binary from `datapipe lm train`), "
                            "`models: {lang: path}` or `models_dir` (from `lm train --by-language`)")
        for lang, path in models.items():
            if not fs.is_file(path):
                raise SpecError(f"perplexity.models[{lang}]: {path} not found; train it with "
                                f"`datapipe lm train --input <reference text> --out {path}` (docs/quality.md)")
        object.__setattr__(self, "models", models)
        if self.default_language is None:
            object.__setattr__(self, "default_language", self.language or (next(iter(models)) if len(models) == 1 else None))
        if self.max_perplexity is not None and self.max_perplexity <= 0:
            raise SpecError(f"perplexity.max_perplexity must be > 0, got {self.max_perplexity}")
        if not 0 < self.head_percentile < self.tail_percentile < 100:
            raise SpecError(f"perplexity: need 0 < head_percentile < tail_percentile < 100, got "
                            f"{self.head_percentile} and {self.tail_percentile}")
        bad = [b for b in self.drop_buckets if b not in BUCKETS]
        if bad:
            raise SpecError(f"perplexity.drop_buckets: unknown buckets {bad}; valid: {list(BUCKETS)}")
        if self.drop_buckets and not self.cutoffs:
            raise SpecError("perplexity.drop_buckets needs `cutoffs` (a CSV from `datapipe lm cutoffs`)")
        if self.cutoffs is not None:
            table = read_cutoffs(self.cutoffs)  # validates the file now, not on the first batch
            rows = min(len(v) for v in table.values())
            if self.tail_percentile >= rows:
                raise SpecError(f"perplexity.tail_percentile {self.tail_percentile}: {self.cutoffs} only has "
                                f"percentiles 0..{rows - 1}")
            missing = sorted(set(models) - set(table))
            if missing:
                raise SpecError(f"perplexity.cutoffs: {self.cutoffs} has no column for {missing}; "
                                f"run `datapipe lm cutoffs` for those languages")


class PerplexityFilter(FilterStage):
    """Adds ``perplexity`` and ``perplexity_bucket``; drops by threshold or bucket."""

    name = "perplexity"
    Config = PerplexityConfig
    compute = Compute(kind="actor")   # setup() loads state once per actor
    reads = (S.TEXT,)
    adds = {PERPLEXITY: pa.float32(), BUCKET: pa.string()}

    def setup(self) -> None:
        cfg: PerplexityConfig = self.config
        self._lms = {}
        for lang, path in cfg.models.items():
            card = read_card(path) or {}
            if not card:
                log.warning("perplexity: %s has no model card; assuming the default text normalisation", path)
            self._lms[lang] = (load_kenlm(path), TextNorm.from_dict(card.get("textnorm")))
        self._cuts: dict[str, tuple[float, float]] = {}
        if cfg.cutoffs:
            table = read_cutoffs(cfg.cutoffs)
            self._cuts = {lang: (float(v[cfg.head_percentile]), float(v[cfg.tail_percentile]))
                          for lang, v in table.items()}

    def _languages(self, batch: pa.Table) -> list[str | None]:
        default = self.config.default_language
        if LANGUAGE in batch.column_names:
            return [lang or default for lang in batch.column(LANGUAGE).to_pylist()]
        return [default] * batch.num_rows

    def annotate(self, batch: pa.Table):
        texts = batch.column(S.TEXT).to_pylist()
        langs = self._languages(batch)
        ppl = np.full(len(texts), np.nan)
        if len(self._lms) == 1 and all(lang in self._lms for lang in langs):
            lm, norm = next(iter(self._lms.values()))
            ppl = perplexities(lm, norm, texts)
        else:
            for lang, (lm, norm) in self._lms.items():
                idx = [i for i, lg in enumerate(langs) if lg == lang]
                if idx:
                    ppl[idx] = perplexities(lm, norm, [texts[i] for i in idx])
        valid = ~np.isnan(ppl)
        out = {PERPLEXITY: pa.array(ppl.astype(np.float32), mask=~valid)}
        if self._cuts:
            buckets: list[str | None] = []
            for p, lang, ok in zip(ppl.tolist(), langs, valid.tolist()):
                cut = self._cuts.get(lang) if ok else None
                buckets.append(None if cut is None else "head" if p < cut[0] else "middle" if p < cut[1] else "tail")
            out[BUCKET] = pa.array(buckets, pa.string())
        return out

    def keep(self, batch: pa.Table):
        cfg: PerplexityConfig = self.config
        m = batch.num_rows
        ppl = batch.column(PERPLEXITY).to_numpy(zero_copy_only=False).astype(np.float64)  # nulls -> NaN
        reasons: list[str | None] = [None] * m
        keep = np.ones(m, dtype=bool)
        if cfg.max_perplexity is not None:
            high = ppl > cfg.max_perplexity  # NaN compares False: unscored documents stay
            for i in np.flatnonzero(high):
                reasons[i] = f"too_high|{ppl[i]:.1f}"
            keep &= ~high
        if cfg.drop_buckets:
            buckets = batch.column(BUCKET).to_pylist()
            for i, b in enumerate(buckets):
                if keep[i] and b in cfg.drop_buckets:
                    keep[i] = False
                    reasons[i] = f"{b}|{ppl[i]:.1f}"
        # kept unjudged, and counted: documents whose language has no model
        no_model = np.fromiter((lang not in self._lms for lang in self._languages(batch)), dtype=np.int64, count=m)
        return keep, reasons, {"passed_no_model": no_model}
