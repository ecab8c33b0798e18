"""``trainer_bridge`` as a datapipe plugin (entry point ``datapipe.plugins:
trainer_bridge``): the ``mix`` subcommands. It brings no stages."""

from __future__ import annotations

import argparse


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    from trainer_bridge.mix import add_cli as add_mix_cli
    from trainer_bridge.search import add_cli as add_search_cli

    mix = add_mix_cli(subparsers)
    sub = next(a for a in mix._actions if isinstance(a, argparse._SubParsersAction))
    add_search_cli(sub)   # mix search (trainer_bridge/search.py)
    sub.metavar = "{" + ",".join(sub.choices) + "}"
