"""Model cards: the JSON file written beside every model datapipe trains (the quality
classifier, the n-gram LMs), and the command-line switches of the text normalisation
a card records.

A card says what the model was trained on (inputs, sizes), how (parameters), how good
it is (held-out metrics), and - the part inference depends on - the text
normalisation used, so that a stage scoring documents rebuilds the same
:class:`~stages.models.textnorm.TextNorm`. ``models/quality.bin`` has its card at
``models/quality.card.json``; ``models/en.arpa`` at ``models/en.card.json``.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from datapipe import fs
from datapipe.errors import SpecError
from stages.models.textnorm import TextNorm

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
    fs.write_text(path, json.dumps(card, indent=2, sort_keys=False) + "\n")
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


def add_textnorm_args(p: argparse.ArgumentParser) -> None:
    """The normalisation switches shared by ``lm train`` and ``quality train``."""
    g = p.add_argument_group("text normalisation (recorded in the model card, reused at inference)")
    g.add_argument("--no-lowercase", action="store_true", help="keep case")
    g.add_argument("--no-digits", action="store_true", help="keep digits (default: every digit becomes 0)")
    g.add_argument("--strip-accents", action="store_true", help="remove combining accents (NFD)")
    g.add_argument("--no-split-punct", action="store_true", help="do not put spaces around punctuation")
    g.add_argument("--max-chars", type=int, default=0, help="score only the first N characters of a document (0: all)")


def textnorm_from_args(args: argparse.Namespace) -> TextNorm:
    return TextNorm(lowercase=not args.no_lowercase, digits=not args.no_digits,
                    strip_accents=args.strip_accents, split_punct=not args.no_split_punct,
                    max_chars=args.max_chars)
