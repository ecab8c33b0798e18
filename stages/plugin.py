"""The ``stages`` package as a datapipe plugin (entry point ``datapipe.plugins: stages``):
its stages, and the command-line tools that build their models (``tokenizer``,
``quality``, ``lm``)."""

from __future__ import annotations

import argparse
from typing import Mapping

from datapipe.stage import Stage


def stages() -> Mapping[str, type[Stage]]:
    from stages import REGISTRY

    return REGISTRY


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    from datapipe.shards import add_cli as add_shards_cli
    from stages.tokenize.identity import load_for_decoding
    from stages.models.perplexity.cli import add_cli as add_lm_cli
    from stages.models.quality.train import add_cli as add_quality_cli
    from stages.tokenize.train import add_cli as add_tokenizer_cli
    from stages.models.langid import packaged_model_path

    add_shards_cli(subparsers, load=load_for_decoding)   # the engine's verify/inspect, with our tokenizers
    add_tokenizer_cli(subparsers)
    add_quality_cli(subparsers)
    add_lm_cli(subparsers, packaged_langid=packaged_model_path)
