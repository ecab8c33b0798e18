"""A small GPT in plain PyTorch: RMSNorm, rotary embeddings, SwiGLU, causal attention through
``F.scaled_dot_product_attention``.

The model knows nothing about parallelism; :mod:`trainer_bridge.parallelize` applies it from
outside. Two habits make that work: head counts are inferred from the projections' output
width (``view(B, T, -1, head_dim)``), so a column-parallel projection that yields fewer heads
per rank just works; and parameter names are stable (``layers.<i>.attention.wq`` ...), since
the tensor-parallel plan is written against them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from datapipe.errors import SpecError
from trainer_bridge.loss import token_losses


@dataclass(kw_only=True, frozen=True)
class ModelConfig:
    """Shape of the GPT. ``ffn_dim`` defaults to 8/3 x dim rounded up to a multiple of 64."""

    vocab_size: int
    dim: int = 256
    n_layers: int = 4
    n_heads: int = 4
    ffn_dim: int | None = None
    max_seq_len: int = 2048
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    init_std: float = 0.02

    def __post_init__(self) -> None:
        for key in ("vocab_size", "dim", "n_layers", "n_heads", "max_seq_len"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise SpecError(f"model.{key} is {v!r}; it must be a positive integer")
        if self.dim % self.n_heads or (self.dim // self.n_heads) % 2:
            raise SpecError(f"model.dim {self.dim} must be n_heads ({self.n_heads}) x an even head size")
        if self.ffn_dim is not None and self.ffn_dim < 1:
            raise SpecError(f"model.ffn_dim {self.ffn_dim} must be positive (or left out)")

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    @property
    def hidden_dim(self) -> int:
        return self.ffn_dim or 64 * math.ceil(8 * self.dim / 3 / 64)

    def num_params(self, *, embeddings: bool = True) -> int:
        per_layer = 4 * self.dim * self.dim + 3 * self.dim * self.hidden_dim + 2 * self.dim
        n = self.n_layers * per_layer + self.dim + self.vocab_size * self.dim  # + final norm + output
        return n + (self.vocab_size * self.dim if embeddings else 0)

    def flops_per_token(self, seq_len: int) -> float:
        """Training FLOPs per token (forward + backward): 6 N + 12 L d T (PaLM appendix B)."""
        return 6 * self.num_params(embeddings=False) + 12 * self.n_layers * self.dim * seq_len


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        return y.type_as(x) * self.weight


def rope_tables(head_dim: int, max_len: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ang = torch.outer(torch.arange(max_len, dtype=torch.float64), inv)
    return ang.cos().float(), ang.sin().float()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (first half, second half) of ``x`` ``[B, T, H, D]``; cos/sin ``[B or 1, T, 1, D/2]``."""
    x1, x2 = x.float().chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).type_as(x)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.head_dim = cfg.head_dim
        self.wq = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.wo = nn.Linear(cfg.dim, cfg.dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                mask: torch.Tensor | None) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, -1, self.head_dim)  # -1: local heads under tensor parallel
        k = self.wk(x).view(B, T, -1, self.head_dim)
        v = self.wv(x).view(B, T, -1, self.head_dim)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))


class FeedForward(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)
        self.w3 = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)
        self.w2 = nn.Linear(cfg.hidden_dim, cfg.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.attention = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.feed_forward = FeedForward(cfg)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                mask: torch.Tensor | None) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), cos, sin, mask)
        return x + self.feed_forward(self.ffn_norm(x))


class GPT(nn.Module):
    """Decoder-only transformer; ``forward(input_ids, position_ids=None) -> logits``.

    With ``position_ids`` (restarting at 0 at each document start), rotary positions follow
    documents; with ``document_mask=True`` attention is also block-diagonal per document.
    With ``labels``, forward returns per-token losses ``[B, T]`` (fp32) instead of logits,
    computed in chunks of ``loss_chunk_tokens`` tokens so the whole micro-batch's logits never
    exist at once (:mod:`trainer_bridge.loss`); the loss runs inside forward so that FSDP's
    gathered output weight is the one it uses.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        cos, sin = rope_tables(cfg.head_dim, cfg.max_seq_len, cfg.rope_theta)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.init_weights()

    @torch.no_grad()
    def init_weights(self) -> None:
        std = self.cfg.init_std
        out_std = std / math.sqrt(2 * self.cfg.n_layers)
        nn.init.normal_(self.tok_embeddings.weight, std=1.0)
        for name, p in self.named_parameters():
            if name.endswith(("wo.weight", "w2.weight")):
                nn.init.trunc_normal_(p, std=out_std, a=-3 * out_std, b=3 * out_std)
            elif p.dim() == 2 and "tok_embeddings" not in name:
                nn.init.trunc_normal_(p, std=std, a=-3 * std, b=3 * std)

    def forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor | None = None,
                document_mask: bool = False, labels: torch.Tensor | None = None,
                loss_chunk_tokens: int | None = None) -> torch.Tensor:
        B, T = input_ids.shape
        if T > self.cfg.max_seq_len:
            raise ValueError(f"sequence length {T} exceeds model.max_seq_len {self.cfg.max_seq_len}")
        mask = None
        if position_ids is None:
            cos, sin = self.rope_cos[:T][None, :, None], self.rope_sin[:T][None, :, None]
        else:
            cos, sin = self.rope_cos[position_ids][:, :, None], self.rope_sin[position_ids][:, :, None]
            if document_mask:
                doc = torch.cumsum(position_ids == 0, dim=1)
                causal = torch.ones(T, T, dtype=torch.bool, device=input_ids.device).tril()
                mask = ((doc[:, :, None] == doc[:, None, :]) & causal)[:, None]
        h = self.tok_embeddings(input_ids)
        for layer in self.layers:
            h = layer(h, cos, sin, mask)
        if labels is None:
            return self.output(self.norm(h))
        return token_losses(self.norm(h), self.output, labels, chunk_tokens=loss_chunk_tokens)
