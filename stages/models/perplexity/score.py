"""Document perplexity under a KenLM model, shared by the ``perplexity`` stage and
``datapipe lm cutoffs`` so that cut-offs and scores are computed the same way.

A document is scored like CCNet does: every normalised line is a sentence
(``<s> .. </s>``), log10 probabilities are summed over the lines, and the perplexity
is ``10 ** (-sum / tokens)`` where ``tokens`` counts the words plus one ``</s>`` per
line. A document with no words has no perplexity (NaN).
"""

from __future__ import annotations

import os
from typing import Iterable

import numpy as np

from datapipe import fs
from datapipe.errors import SpecError
from stages.models.textnorm import TextNorm


def load_kenlm(path: str | os.PathLike):
    """Load an ARPA or KenLM binary model from a local path (KenLM's loading banner,
    printed on stderr, is harmless)."""
    import kenlm

    path = os.fspath(path)
    if fs.scheme(path) is not None and fs.is_file(path):
        path = fs.local_copy(path)   # KenLM reads local files only: a copy cached by content
    if not os.path.isfile(path):
        raise SpecError(f"KenLM model not found: {path} (train one with `datapipe lm train`)")
    return kenlm.Model(path)


def perplexities(model, norm: TextNorm, texts: Iterable[str | None]) -> np.ndarray:
    """Per-document perplexity (float64; NaN for documents without words)."""
    score = model.score
    out = []
    for text in texts:
        total = 0.0
        tokens = 0
        for line in norm.lines(text):
            total += score(line, bos=True, eos=True)
            tokens += line.count(" ") + 2
        out.append(10.0 ** (-total / tokens) if tokens else np.nan)
    return np.asarray(out, dtype=np.float64)
