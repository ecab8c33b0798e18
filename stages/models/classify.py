"""Scores from a Hugging Face sequence-classification model
(``AutoModelForSequenceClassification``): the raw logit of a regression head (FineWeb-Edu's
classifier: one logit, the educational score 0-5), or class probabilities (NeMo Curator's
quality classifier: High / Medium / Low).

No Ray and no engine import here (see :mod:`stages.models.kit`).
"""

from __future__ import annotations

import os
from typing import Any, Literal, Sequence

import numpy as np

from stages.models.kit import Runner, load_kwargs, model_config

Output = Literal["raw", "softmax", "sigmoid"]


def labels_of(model_dir: str | os.PathLike) -> list[str]:
    """The model's label names in logit order (``id2label``; ``LABEL_i`` when unnamed)."""
    cfg = model_config(model_dir)
    id2label = cfg.get("id2label") or {}
    n = int(cfg.get("num_labels") or len(id2label) or 2)
    return [str(id2label.get(str(i), id2label.get(i, f"LABEL_{i}"))) for i in range(n)]


def default_output(model_dir: str | os.PathLike) -> Output:
    """``raw`` for a regression head (one logit, or ``problem_type: regression``),
    ``sigmoid`` for a multi-label head, else ``softmax``."""
    cfg = model_config(model_dir)
    problem = cfg.get("problem_type")
    if problem == "regression" or len(labels_of(model_dir)) == 1:
        return "raw"
    return "sigmoid" if problem == "multi_label_classification" else "softmax"


def transform(logits: np.ndarray, output: Output) -> np.ndarray:
    """Per-row values from logits: as they are, softmax over the labels, or a sigmoid
    each (float64 math, float32 out)."""
    x = np.asarray(logits, dtype=np.float64)
    if output == "raw":
        y = x
    elif output == "softmax":
        e = np.exp(x - x.max(axis=1, keepdims=True))
        y = e / e.sum(axis=1, keepdims=True)
    elif output == "sigmoid":
        y = 1.0 / (1.0 + np.exp(-x))
    else:
        raise ValueError(f"output must be raw, softmax or sigmoid, got {output!r}")
    return y.astype(np.float32)


def int_score(scores: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """FineWeb-Edu's ``int_score``: ``round(clip(score, lo, hi))`` (half to even, as
    Python's ``round``)."""
    return np.rint(np.clip(np.asarray(scores, dtype=np.float64), lo, hi)).astype(np.int32)


class Classifier(Runner):
    """A sequence-classification model: :meth:`logits` per text, float32."""

    kind = "classify"

    def _load(self, transformers: Any) -> Any:
        return transformers.AutoModelForSequenceClassification.from_pretrained(str(self.model_dir),
                                                                               **load_kwargs(self))

    @property
    def width(self) -> int:
        return int(self.model.config.num_labels)

    def forward(self, input_ids, attention_mask, token_type_ids):
        kw = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        return self.model(input_ids=input_ids, attention_mask=attention_mask, **kw).logits

    def logits(self, texts: Sequence[str | None]) -> np.ndarray:
        """``(len(texts), num_labels)`` float32 logits in input order."""
        return self.run(texts)
