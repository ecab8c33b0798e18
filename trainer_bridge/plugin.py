"""``trainer_bridge`` as a datapipe plugin (entry point ``datapipe.plugins:
trainer_bridge``): the ``mix`` subcommands. It brings no stages."""

from __future__ import annotations

import argparse


def add_cli(subparsers: argparse._SubParsersAction) -> None:
    from trainer_bridge.mix import add_cli as add_mix_cli

    add_mix_cli(subparsers)
