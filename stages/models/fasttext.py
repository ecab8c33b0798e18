"""fastText prediction that works under NumPy 2.

fasttext 0.9.3's ``FastText.predict`` calls ``np.array(..., copy=False)``, which NumPy 2
rejects. We call the C++ binding (``model.f.multilinePredict``) directly, which returns
plain lists, and do the label/probability handling ourselves.
"""

from __future__ import annotations

import logging
import os
from typing import Sequence

import numpy as np

from datapipe import fs

log = logging.getLogger(__name__)


def load(path: str | os.PathLike):
    """Load a fastText model from a local path, or from a URI (``s3://...``) through a local
    copy cached by content (fastText reads only local files)."""
    import fasttext

    path = os.fspath(path)
    if fs.scheme(path) is not None and fs.is_file(path):
        path = fs.local_copy(path)
    if not os.path.isfile(path):
        from datapipe.errors import SpecError

        raise SpecError(f"fastText model not found: {path} (give a local .bin/.ftz path)")
    fasttext.FastText.eprint = lambda *a, **k: None  # silence the load-time warning
    return fasttext.load_model(path)


def predict(model, texts: Sequence[str], k: int = 1, threshold: float = 0.0) -> tuple[list[list[str]], list[np.ndarray]]:
    """Top-``k`` labels (without ``__label__``) and probabilities for each text.

    Newlines are folded to spaces (fastText predicts one line at a time)."""
    lines = [t.replace("\n", " ").replace("\r", " ") for t in texts]
    labels, probs = model.f.multilinePredict(lines, k, threshold, "replace")
    clean = [[lab[9:] if lab.startswith("__label__") else lab for lab in row] for row in labels]
    return clean, [np.asarray(p, dtype=np.float32) for p in probs]
