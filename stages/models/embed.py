"""Sentence embeddings from a Hugging Face encoder, the sentence-transformers way: the
encoder's last hidden states pooled over the attention mask (mean by default, or what the
model folder's ``1_Pooling/config.json`` says) and L2-normalised.

:func:`encode_texts` is the public entry point (semantic dedup and its tests use it);
:class:`Encoder` keeps the model loaded between calls (the ``embed`` stage's actors).
No Ray and no engine import here (see :mod:`stages.models.kit`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from stages.models.kit import Runner, import_torch, load_kwargs

if TYPE_CHECKING:
    import torch

POOLINGS = ("mean", "cls", "max", "lasttoken")


def pooling_of(model_dir: str | os.PathLike) -> str | None:
    """The pooling a sentence-transformers folder declares (``modules.json`` naming a
    Pooling module, its ``config.json``), or None when the folder declares none."""
    root = Path(model_dir)
    path = None
    modules = root / "modules.json"
    if modules.is_file():
        for m in json.loads(modules.read_text(encoding="utf-8")):
            if str(m.get("type", "")).endswith("Pooling"):
                path = root / m.get("path", "") / "config.json"
    if path is None or not path.is_file():
        path = root / "1_Pooling" / "config.json"
    if not path.is_file():
        return None
    cfg = json.loads(path.read_text(encoding="utf-8"))
    modes = {"mean": cfg.get("pooling_mode_mean_tokens"), "cls": cfg.get("pooling_mode_cls_token"),
             "max": cfg.get("pooling_mode_max_tokens"), "lasttoken": cfg.get("pooling_mode_lasttoken")}
    on = [k for k, v in modes.items() if v]
    if len(on) != 1:
        raise ValueError(f"{path}: pooling modes {on or 'none'} set; the embed stage takes exactly one of "
                         f"{', '.join(POOLINGS)} (set `pooling:` on the stage to choose)")
    return on[0]


def pool(hidden: "torch.Tensor", mask: "torch.Tensor", how: str) -> "torch.Tensor":
    """One vector per row from ``hidden`` (rows x tokens x dim), ignoring padding; float32."""
    torch, _ = import_torch()
    h = hidden.float()
    m = mask.unsqueeze(-1).to(h.dtype)
    if how == "mean":
        return (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
    if how == "cls":
        return h[:, 0]
    if how == "max":
        return h.masked_fill(m == 0, torch.finfo(h.dtype).min).max(1).values
    if how == "lasttoken":   # right padding: the last real token of each row
        last = mask.sum(1) - 1
        return h[torch.arange(h.shape[0], device=h.device), last]
    raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {how!r}")


class Encoder(Runner):
    """An encoder model (``AutoModel``) with pooling and L2 normalisation. ``pooling``:
    None reads the folder's pooling config (mean when it has none). ``normalize``: L2
    normalise each vector (the contract of the ``embed`` column; sentence-transformers'
    ``Normalize`` module)."""

    kind = "embed"

    def __init__(self, model_dir: str | os.PathLike, *, pooling: str | None = None, normalize: bool = True,
                 **kw: Any) -> None:
        self.pooling = pooling or pooling_of(model_dir) or "mean"
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {self.pooling!r}")
        self.normalize = normalize
        super().__init__(model_dir, **kw)
        self._width = int(getattr(self.model.config, "hidden_size", 0) or 0)

    def _load(self, transformers: Any) -> Any:
        return transformers.AutoModel.from_pretrained(str(self.model_dir), **load_kwargs(self))

    @property
    def width(self) -> int:
        return self._width

    def forward(self, input_ids, attention_mask, token_type_ids):
        torch, _ = import_torch()
        kw = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask, **kw).last_hidden_state
        vec = pool(hidden, attention_mask, self.pooling)
        return torch.nn.functional.normalize(vec, p=2, dim=1) if self.normalize else vec

    def encode(self, texts: Sequence[str | None]) -> np.ndarray:
        """``(len(texts), dim)`` float32 embeddings in input order."""
        return self.run(texts)


def encode_texts(model_dir: str, texts: list[str], *, max_length: int = 512, device: str = "cpu",
                 dtype: str = "auto", batch_tokens: int | None = None) -> np.ndarray:
    """Embeddings of ``texts`` with the model in the local folder ``model_dir``: float32,
    shape ``(len(texts), dim)``, L2-normalised, in input order; each text head-truncated
    to ``max_length`` tokens. The same vectors the ``embed`` stage writes (before its
    float16 cast). Loads the model on every call: keep an :class:`Encoder` to reuse it."""
    return Encoder(model_dir, device=device, dtype=dtype, max_length=max_length, batch_tokens=batch_tokens).encode(texts)
