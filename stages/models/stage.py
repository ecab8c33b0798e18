"""The ``classify`` and ``embed`` stages: any Hugging Face sequence-classification or
embedding model from a local folder, one model per Ray actor, on a GPU when the stage is
given one (``gpus``) and on the CPU otherwise. See ``docs/models.md``.

``classify`` adds ``<prefix>_score`` (float32: the raw logit of a one-logit regression
head, or the probability of ``label``, or of the top label), ``<prefix>_label`` (the top
label, for a head with several), optionally ``<prefix>_int_score`` (FineWeb-Edu's
``round(clip(score, lo, hi))``) and one column per label (``all_labels``), and keeps by
``min_score`` / ``min_int_score`` / ``keep_labels`` (counted rejects with a reason).

``embed`` adds ``embedding`` (``column``): a fixed-size list of float16, the
L2-normalised pooled vector (cast after normalising); semantic dedup reads it.

The model columns depend on the config (``prefix``, the model's width), so these stages
set ``adds`` and ``compute`` per instance; the engine plans with the instance's.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa

from datapipe import schema as S
from datapipe.errors import SpecError
from datapipe.stage import AnnotatorStage, Compute, FilterStage, StageConfig
from stages.models.classify import default_output, int_score, labels_of, transform
from stages.models.kit import check_model_dir, model_config

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def cluster_gpus() -> float:
    """GPUs the job's Ray cluster has: the joined cluster's when this process is
    connected, else this machine's (what an embedded Ray will find:
    ``CUDA_VISIBLE_DEVICES`` when set, else the NVIDIA driver's GPU list). Nothing is
    imported for it."""
    import sys

    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        return float(ray.cluster_resources().get("GPU", 0))
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return float(len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"]))
    gpus = Path("/proc/driver/nvidia/gpus")
    return float(len(list(gpus.iterdir()))) if gpus.is_dir() else 0.0


@dataclass(kw_only=True, frozen=True)
class ModelStageConfig(StageConfig):
    """What both model stages take.

    ``model``: a local Hugging Face model folder (config.json, weights, tokenizer); never
    downloaded. ``max_length``: tokens kept per document (head truncation, special tokens
    included). ``batch_tokens``: padded tokens per forward pass (None: 8192 on CPU, 65536
    on GPU). ``gpus``: per actor; ``auto`` is 1 when the cluster has GPUs (resolved when
    the spec is read, so the job hash says which), a fraction shares a GPU between
    actors. ``dtype``: ``auto`` is bf16 on GPU (give fp16 for GPUs without bf16) and fp32
    on CPU. ``cpus``: per actor (torch's CPU threads on CPU). ``actors``: pool size
    (None: as many as the cluster's CPUs, or GPUs, allow)."""

    model: str | None = None
    max_length: int = 512
    batch_tokens: int | None = None
    gpus: float | Literal["auto"] = "auto"
    dtype: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    cpus: float = 1
    actors: int | None = None

    def _check_common(self, stage: str) -> None:
        if self.model is None:
            raise SpecError(f"{stage}: give `model:`, the local folder of a Hugging Face model (docs/models.md)")
        try:
            check_model_dir(self.model, where=f"{stage}.model")
        except ValueError as exc:
            raise SpecError(str(exc)) from None
        if self.max_length < 2:
            raise SpecError(f"{stage}.max_length must be >= 2 (tokens, special tokens included), got {self.max_length}")
        if self.batch_tokens is not None and self.batch_tokens < self.max_length:
            raise SpecError(f"{stage}.batch_tokens ({self.batch_tokens}) must be >= max_length ({self.max_length})")
        gpus = self.gpus
        if gpus == "auto":
            gpus = 1.0 if cluster_gpus() > 0 else 0.0
        if not 0 <= float(gpus) <= 1:
            raise SpecError(f"{stage}.gpus must be 0, 1, a fraction (actors sharing a GPU) or auto, got {self.gpus}")
        object.__setattr__(self, "gpus", float(gpus))
        if self.dtype == "auto":
            object.__setattr__(self, "dtype", "bf16" if gpus else "fp32")
        if self.cpus <= 0:
            raise SpecError(f"{stage}.cpus must be > 0, got {self.cpus}")
        if self.actors is not None and self.actors < 1:
            raise SpecError(f"{stage}.actors must be >= 1 (or omitted), got {self.actors}")

    def compute(self) -> Compute:
        return Compute(kind="actor", num_cpus=self.cpus, num_gpus=float(self.gpus), concurrency=self.actors)

    def runner_kwargs(self) -> dict:
        """What the kit's runner takes from this config, on the device the actor got."""
        gpu = float(self.gpus) > 0
        return dict(device="cuda" if gpu else "cpu", dtype=self.dtype, max_length=self.max_length,
                    batch_tokens=self.batch_tokens, threads=None if gpu else max(1, int(self.cpus)))


@dataclass(kw_only=True, frozen=True)
class ClassifyConfig(ModelStageConfig):
    """``prefix``: the columns' prefix (``edu`` -> ``edu_score``). ``output``: ``raw``
    logits, ``softmax`` or ``sigmoid`` probabilities (None: raw for a one-logit or
    regression head, sigmoid for multi-label, else softmax). ``label``: the label whose
    value is ``<prefix>_score`` (None: the only one, or the top one). ``all_labels``: one
    float32 column per label (``<prefix>_<label>``). ``int_score``: ``[lo, hi]`` adds
    ``<prefix>_int_score = round(clip(score, lo, hi))``. Keep rules (all that are set
    must hold): ``min_score``, ``min_int_score``, ``keep_labels`` (the top label is one
    of them)."""

    prefix: str = "classify"
    output: Literal["raw", "softmax", "sigmoid"] | None = None
    label: str | None = None
    all_labels: bool = False
    int_score: tuple[float, float] | None = None
    min_score: float | None = None
    min_int_score: int | None = None
    keep_labels: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        self._check_common("classify")
        if not _NAME.match(self.prefix):
            raise SpecError(f"classify.prefix {self.prefix!r} must be lower-case letters, digits and '_' "
                            "(it names columns), e.g. 'edu'")
        labels = labels_of(self.model)
        if self.output is None:
            object.__setattr__(self, "output", default_output(self.model))
        if self.label is not None and self.label not in labels:
            raise SpecError(f"classify.label {self.label!r} is not a label of {self.model} (labels: {labels})")
        for lab in self.keep_labels or ():
            if lab not in labels:
                raise SpecError(f"classify.keep_labels: {lab!r} is not a label of {self.model} (labels: {labels})")
        if self.keep_labels is not None and len(labels) < 2:
            raise SpecError(f"classify.keep_labels needs a model with several labels; {self.model} has one "
                            "(a score: use min_score or min_int_score)")
        if self.int_score is not None:
            lo, hi = self.int_score
            if not lo < hi:
                raise SpecError(f"classify.int_score must be [lo, hi] with lo < hi (FineWeb-Edu: [0, 5]), got {list(self.int_score)}")
        if self.min_int_score is not None and self.int_score is None:
            raise SpecError("classify.min_int_score needs int_score: [lo, hi] (FineWeb-Edu: int_score: [0, 5], "
                            "min_int_score: 3)")
        cols = [c for c, _ in column_types(self, labels)]
        if len(set(cols)) != len(cols):
            raise SpecError(f"classify: the label columns {cols} collide; set all_labels: false or another prefix")


def _label_column(prefix: str, label: str) -> str:
    return f"{prefix}_" + (re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_") or "label")


def column_types(cfg: ClassifyConfig, labels: list[str]) -> list[tuple[str, pa.DataType]]:
    """The columns ``classify`` adds for ``cfg`` and the model's labels, in order."""
    cols = [(f"{cfg.prefix}_score", pa.float32())]
    if len(labels) > 1:
        cols.append((f"{cfg.prefix}_label", pa.string()))
    if cfg.int_score is not None:
        cols.append((f"{cfg.prefix}_int_score", pa.int32()))
    if cfg.all_labels:
        cols += [(_label_column(cfg.prefix, lab), pa.float32()) for lab in labels]
    return cols


class Classify(FilterStage):
    """Scores every document with a sequence-classification model and keeps by the
    configured rules (none set: keeps all)."""

    name = "classify"
    Config = ClassifyConfig
    compute = Compute(kind="actor")
    reads = (S.TEXT,)
    adds = {"classify_score": pa.float32()}   # the default prefix's; instances set their own

    def __init__(self, config: ClassifyConfig | None = None, **kw) -> None:
        super().__init__(config, **kw)
        cfg: ClassifyConfig = self.config
        self.labels = labels_of(cfg.model)
        self.adds = dict(column_types(cfg, self.labels))
        self.compute = cfg.compute()

    def setup(self) -> None:
        from stages.models.classify import Classifier

        self._model = Classifier(self.config.model, **self.config.runner_kwargs())

    def annotate(self, batch: pa.Table):
        cfg: ClassifyConfig = self.config
        values = transform(self._model.logits(batch.column(S.TEXT).to_pylist()), cfg.output)
        top = values.argmax(axis=1)
        pick = np.full(len(values), self.labels.index(cfg.label)) if cfg.label is not None else top
        score = values[np.arange(len(values)), pick]
        out = {f"{cfg.prefix}_score": pa.array(score, pa.float32())}
        if len(self.labels) > 1:
            out[f"{cfg.prefix}_label"] = pa.array([self.labels[i] for i in top.tolist()], pa.string())
        if cfg.int_score is not None:
            out[f"{cfg.prefix}_int_score"] = pa.array(int_score(score, *cfg.int_score), pa.int32())
        if cfg.all_labels:
            for j, lab in enumerate(self.labels):
                out[_label_column(cfg.prefix, lab)] = pa.array(values[:, j], pa.float32())
        return out

    def keep(self, batch: pa.Table):
        cfg: ClassifyConfig = self.config
        m = batch.num_rows
        keep = np.ones(m, dtype=bool)
        reasons: list[str | None] = [None] * m
        score = batch.column(f"{cfg.prefix}_score").to_numpy(zero_copy_only=False)
        rules = []
        if cfg.min_score is not None:
            rules.append((score >= cfg.min_score, lambda i: f"below_min_score|{score[i]:.4f}<{cfg.min_score:g}"))
        if cfg.min_int_score is not None:
            ints = batch.column(f"{cfg.prefix}_int_score").to_numpy(zero_copy_only=False)
            rules.append((ints >= cfg.min_int_score, lambda i: f"below_min_int_score|{ints[i]}<{cfg.min_int_score}"))
        if cfg.keep_labels is not None:
            top = batch.column(f"{cfg.prefix}_label").to_pylist()
            ok = np.fromiter((t in cfg.keep_labels for t in top), dtype=bool, count=m)
            rules.append((ok, lambda i: f"label|{top[i]}"))
        for ok, why in rules:
            for i in np.flatnonzero(keep & ~ok).tolist():
                reasons[i] = why(i)
            keep &= ok
        return keep, reasons


@dataclass(kw_only=True, frozen=True)
class EmbedConfig(ModelStageConfig):
    """``column``: where the vectors go (``embedding``). ``pooling``: mean, cls, max or
    lasttoken (None: the model folder's sentence-transformers pooling config, else mean).
    Vectors are always L2-normalised (then cast to float16)."""

    column: str = "embedding"
    pooling: Literal["mean", "cls", "max", "lasttoken"] | None = None

    def __post_init__(self) -> None:
        self._check_common("embed")
        if not _NAME.match(self.column):
            raise SpecError(f"embed.column {self.column!r} must be lower-case letters, digits and '_', e.g. 'embedding'")
        modules = Path(self.model) / "modules.json"
        if modules.is_file():
            extra = [m.get("type") for m in json.loads(modules.read_text(encoding="utf-8"))
                     if not str(m.get("type", "")).endswith(("Transformer", "Pooling", "Normalize"))]
            if extra:
                raise SpecError(f"embed.model: {self.model} has sentence-transformers modules {extra} after the "
                                "pooling; the embed stage runs encoder + pooling + normalise only")
        from stages.models.embed import pooling_of

        try:
            pooling_of(self.model)
        except ValueError as exc:
            if self.pooling is None:
                raise SpecError(f"embed: {exc}") from None
        if embedding_dim(self.model) < 1:
            raise SpecError(f"embed.model: {self.model}/config.json gives no hidden_size; cannot size the column")


def embedding_dim(model_dir: str) -> int:
    cfg = model_config(model_dir)
    return int(cfg.get("hidden_size") or cfg.get("d_model") or cfg.get("dim") or 0)


class Embed(AnnotatorStage):
    """Adds the L2-normalised embedding of every document (float16 fixed-size list)."""

    name = "embed"
    Config = EmbedConfig
    compute = Compute(kind="actor")
    reads = (S.TEXT,)
    adds = {"embedding": pa.list_(pa.float16())}   # instances: fixed size, the model's width

    def __init__(self, config: EmbedConfig | None = None, **kw) -> None:
        super().__init__(config, **kw)
        cfg: EmbedConfig = self.config
        self.dim = embedding_dim(cfg.model)
        self.adds = {cfg.column: pa.list_(pa.float16(), self.dim)}
        self.compute = cfg.compute()

    def setup(self) -> None:
        from stages.models.embed import Encoder

        self._model = Encoder(self.config.model, pooling=self.config.pooling, **self.config.runner_kwargs())
        if self._model.width != self.dim:
            raise SpecError(f"embed.model: {self.config.model} gives {self._model.width}-wide vectors, its "
                            f"config.json says {self.dim}")

    def annotate(self, batch: pa.Table):
        vec = self._model.encode(batch.column(S.TEXT).to_pylist()).astype(np.float16)
        flat = pa.array(vec.reshape(-1), pa.float16())
        return {self.config.column: pa.FixedSizeListArray.from_arrays(flat, self.dim)}
