"""Small general-purpose stages: document length bounds and text normalisation."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe.errors import SpecError
from datapipe.stage import FilterStage, FormatterStage, StageConfig


@dataclass(kw_only=True, frozen=True)
class LengthConfig(StageConfig):
    min_chars: int = 1
    max_chars: int = 1_000_000

    def __post_init__(self) -> None:
        if self.min_chars < 0 or self.max_chars < self.min_chars:
            raise SpecError(
                f"length: need 0 <= min_chars <= max_chars, got min_chars={self.min_chars}, "
                f"max_chars={self.max_chars}"
            )


class LengthFilter(FilterStage):
    """Drops empty and giant documents (``length:too_short`` / ``length:too_long``)."""

    name = "length"
    Config = LengthConfig

    def keep(self, batch: pa.Table):
        n = pc.fill_null(pc.utf8_length(batch.column("text")), 0).to_numpy(zero_copy_only=False)
        short = n < self.config.min_chars
        long_ = n > self.config.max_chars
        reasons = [
            f"too_short|{v}" if s else (f"too_long|{v}" if lg else None)
            for v, s, lg in zip(n.tolist(), short.tolist(), long_.tolist())
        ]
        return ~(short | long_), reasons


@dataclass(kw_only=True, frozen=True)
class NormalizeConfig(StageConfig):
    unicode_form: Literal["NFC", "NFKC", "none"] = "NFC"
    collapse_spaces: bool = True
    max_blank_lines: int = 2
    strip_control: bool = True

    def __post_init__(self) -> None:
        if self.max_blank_lines < 0:
            raise SpecError(f"normalize: max_blank_lines must be >= 0, got {self.max_blank_lines}")


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b\ufeff]")
_SPACES = re.compile(r"[ \t\u00a0]+")
_TRAILING = re.compile(r"[ \t]+\n")


class Normalize(FormatterStage):
    """Unicode normalisation, control characters out, runs of spaces and blank lines
    collapsed, ``\\r\\n`` to ``\\n``. Counts the documents and characters it changed."""

    name = "normalize"
    Config = NormalizeConfig

    def format(self, batch: pa.Table):
        cfg = self.config
        blank = re.compile(r"\n{%d,}" % (cfg.max_blank_lines + 2)) if cfg.max_blank_lines >= 0 else None
        keep_nl = "\n" * (cfg.max_blank_lines + 1)
        out, delta = [], []
        for t in batch.column("text").to_pylist():
            t0 = t or ""
            t = t0.replace("\r\n", "\n").replace("\r", "\n")
            if cfg.unicode_form != "none":
                t = unicodedata.normalize(cfg.unicode_form, t)
            if cfg.strip_control:
                t = _CONTROL.sub("", t)
            if cfg.collapse_spaces:
                t = _SPACES.sub(" ", t)
                t = _TRAILING.sub("\n", t)
            if blank is not None:
                t = blank.sub(keep_nl, t)
            t = t.strip()
            out.append(t)
            delta.append(abs(len(t0) - len(t)))
        return out, {"chars_removed": np.asarray(delta, dtype=np.int64)}
