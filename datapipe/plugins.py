"""Plugins: how the engine finds stages and command-line tools it does not import by name.

``datapipe/`` never imports ``stages`` or ``trainer_bridge``. Each package that brings
stages or subcommands names one *plugin module* in its ``pyproject.toml``::

    [project.entry-points."datapipe.plugins"]
    stages = "stages.plugin"

A plugin module may define either or both of:

* ``stages() -> Mapping[str, type[Stage]]``: the stages it registers, by the name a job
  spec uses (``length``, ``dedup``);
* ``readers() -> Mapping[str, type[Reader]]``: input formats it adds, by the name a
  source's ``format:`` uses (merged with the built-in readers by
  :func:`datapipe.readers.reader_registry`);
* ``add_cli(subparsers)``: adds its subcommands to ``datapipe`` (each leaf sets
  ``func(args) -> exit code``).

A registry is a plain dict from name to stage class, built when asked
(:func:`stage_registry`) and passed to whoever needs it (:func:`datapipe.spec.load_job`);
there is no import-time registration and no global registry.
"""

from __future__ import annotations

import argparse
import importlib
import logging
from importlib.metadata import entry_points
from types import ModuleType
from typing import Mapping

from datapipe.errors import SpecError
from datapipe.stage import Stage

log = logging.getLogger(__name__)

GROUP = "datapipe.plugins"


class PluginError(SpecError):
    """A plugin named in the installed entry points cannot be loaded or is malformed."""


def load_plugins() -> list[tuple[str, ModuleType]]:
    """Every plugin module of the ``datapipe.plugins`` entry points, by entry-point name
    (sorted, so registries and ``--help`` do not depend on install order). A module that
    fails to import is an error naming the entry point, the module and the cause."""
    found = []
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        try:
            module = importlib.import_module(ep.value)
        except Exception as exc:  # noqa: BLE001 - any import failure is the plugin's, named here
            raise PluginError(f"plugin {ep.name!r} (entry point {GROUP}: {ep.name} = {ep.value!r}) failed to "
                              f"import: {type(exc).__name__}: {exc}. Fix the module or uninstall the package "
                              "that declares it") from exc
        found.append((ep.name, module))
    return found


def stage_registry(plugins: list[tuple[str, ModuleType]] | None = None) -> dict[str, type[Stage]]:
    """Name -> stage class over every plugin's ``stages()``. Two plugins registering one
    name is an error (a job spec could not say which it means)."""
    registry: dict[str, type[Stage]] = {}
    owner: dict[str, str] = {}
    for plugin, module in plugins if plugins is not None else load_plugins():
        provide = getattr(module, "stages", None)
        if provide is None:
            continue
        for name, cls in provide().items():
            if not (isinstance(cls, type) and issubclass(cls, Stage)):
                raise PluginError(f"plugin {plugin!r}: stages()[{name!r}] is {cls!r}, not a Stage subclass")
            if name in registry and registry[name] is not cls:
                raise PluginError(f"stage name {name!r} is registered by both plugin {owner[name]!r} and "
                                  f"plugin {plugin!r}; rename one of them")
            registry[name], owner[name] = cls, plugin
    return registry


def stage_class(registry: Mapping[str, type[Stage]], name: str, *, where: str = "") -> type[Stage]:
    """The class registered as ``name``; an unknown name lists the valid ones."""
    try:
        return registry[name]
    except KeyError:
        prefix = f"{where}: " if where else ""
        raise SpecError(f"{prefix}unknown stage {name!r}; valid stages: {', '.join(sorted(registry))}") from None


def add_plugin_cli(subparsers: argparse._SubParsersAction) -> None:
    """Let every plugin with an ``add_cli`` add its subcommands."""
    for plugin, module in load_plugins():
        add = getattr(module, "add_cli", None)
        if add is not None:
            log.debug("subcommands from plugin %s", plugin)
            add(subparsers)
