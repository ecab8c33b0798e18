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


#: the column that marks a code document: the ``code`` reader fills it on every row it
#: reads (the repository name); no other reader has it
CODE_COLUMN = "repo"


@dataclass(kw_only=True, frozen=True)
class NormalizeConfig(StageConfig):
    unicode_form: Literal["NFC", "NFKC", "none"] = "NFC"
    #: runs of spaces/tabs inside a line to one space, trailing spaces cut; indentation
    #: (the spaces that start a line) is never touched. Off by default: it also flattens
    #: aligned columns (tables, ASCII diagrams from ``<pre>`` blocks).
    collapse_spaces: bool = False
    max_blank_lines: int = 2
    strip_control: bool = True
    #: ``keep``: code documents (a non-null ``repo``: the ``code`` reader's) pass through
    #: byte for byte; ``normalize``: they get the same treatment as prose
    code: Literal["keep", "normalize"] = "keep"

    def __post_init__(self) -> None:
        if self.max_blank_lines < 0:
            raise SpecError(f"normalize: max_blank_lines must be >= 0, got {self.max_blank_lines}")
        if self.code not in ("keep", "normalize"):
            raise SpecError(f"normalize: code must be 'keep' (code documents pass through byte for byte) or "
                            f"'normalize', got {self.code!r}")


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b\ufeff]")
# a run of spaces after a line's first visible character (indentation is not a run here)
_SPACES = re.compile(r"(?<=[^ \t\u00a0\n])[ \t\u00a0]{2,}|(?<=[^ \t\u00a0\n])[\t\u00a0]")
_TRAILING = re.compile(r"[ \t]+\n")
_LEADING_BLANK = re.compile(r"\A(?:[ \t]*\n)+")


class Normalize(FormatterStage):
    """Unicode normalisation, control characters out, blank lines capped, ``\\r\\n`` to
    ``\\n``, blank lines and trailing whitespace cut from both ends of the document;
    optionally runs of spaces inside lines collapsed. Indentation is kept: the first
    line's too (only blank lines before it go). Code documents (the ``code`` reader's,
    :data:`CODE_COLUMN` set) pass through unchanged under ``code: keep`` (the default)
    and are counted as ``code_kept``. Counts the documents and characters it changed."""

    name = "normalize"
    Config = NormalizeConfig

    def format(self, batch: pa.Table):
        cfg = self.config
        blank = re.compile(r"\n{%d,}" % (cfg.max_blank_lines + 2))
        keep_nl = "\n" * (cfg.max_blank_lines + 1)
        if cfg.code == "keep" and CODE_COLUMN in batch.column_names:
            is_code = pc.fill_null(pc.is_valid(batch.column(CODE_COLUMN)), False).to_pylist()
        else:
            is_code = [False] * batch.num_rows
        out, delta = [], []
        for t, code in zip(batch.column("text").to_pylist(), is_code):
            t0 = t or ""
            if code:
                out.append(t0)
                delta.append(0)
                continue
            t = t0.replace("\r\n", "\n").replace("\r", "\n")
            if cfg.unicode_form != "none":
                t = unicodedata.normalize(cfg.unicode_form, t)
            if cfg.strip_control:
                t = _CONTROL.sub("", t)
            if cfg.collapse_spaces:
                t = _SPACES.sub(" ", t)
                t = _TRAILING.sub("\n", t)
            t = blank.sub(keep_nl, t)
            t = _LEADING_BLANK.sub("", t).rstrip()
            out.append(t)
            delta.append(abs(len(t0) - len(t)))
        return out, {"chars_removed": np.asarray(delta, dtype=np.int64),
                     "code_kept": np.asarray(is_code, dtype=np.int64)}
