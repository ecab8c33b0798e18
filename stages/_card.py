"""Model cards: the JSON file written beside every model datapipe trains.

A card says what the model was trained on (inputs, sizes), how (parameters), how good
it is (held-out metrics), and - the part inference depends on - the text
normalisation used, so that a stage scoring documents rebuilds the same
:class:`~datapipe.textnorm.TextNorm`. ``models/quality.bin`` has its card at
``models/quality.card.json``; ``models/en.arpa`` at ``models/en.card.json``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from datapipe import fs
from datapipe.errors import SpecError

_MODEL_EXTS = (".bin", ".ftz", ".arpa", ".binary", ".klm", ".gz")


def card_path(model_path: str | os.PathLike) -> str:
    """Where the card of ``model_path`` lives (its name with the model suffix replaced)."""
    path = os.fspath(model_path)
    base, ext = os.path.splitext(path)
    if ext.lower() == ".gz":
        base, ext = os.path.splitext(base)
    return (base if ext.lower() in _MODEL_EXTS else path) + ".card.json"


def write_card(model_path: str | os.PathLike, card: dict[str, Any]) -> str:
    """Write ``card`` beside ``model_path`` (atomically) and return its path."""
    path = card_path(model_path)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(card, f, indent=2, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)
    return path


def read_card(model_path: str | os.PathLike, *, required: bool = False) -> dict[str, Any] | None:
    """The card of ``model_path``, or None when there is none and it is not ``required``."""
    path = card_path(model_path)
    if not fs.is_file(path):
        if required:
            raise SpecError(f"model card {path} not found beside {os.fspath(model_path)}; "
                            "train the model with datapipe (it writes the card) or drop the "
                            "option that needs it")
        return None
    try:
        return json.loads(fs.read_text(path))
    except ValueError as e:
        raise SpecError(f"model card {path} is not valid JSON: {e}") from None
