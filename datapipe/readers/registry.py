"""Readers registered like stages: the engine's own plus any plugin's.

A registry is a plain dict from a job spec's ``format`` to a :class:`Reader` class,
built when asked (:func:`reader_registry`) from the built-in readers
(:data:`datapipe.readers.READERS`) and every plugin module's ``readers()``
(:mod:`datapipe.plugins`): a plugin adds an input format in one file with no edit to
the core. Each reader class declares what the registry needs:

* ``format``: the name a spec's ``format:`` (or an input's ``format:`` prefix) uses;
* ``Options``: its keyword-only options dataclass (a spec's ``options:``);
* ``suffixes``: file name endings it claims when a format is guessed, and
  ``guess_options(path)``: the options such a name implies.

:func:`guess_format` picks, for a file named without a format, the reader with the
longest suffix ending the name once one compression suffix
(:data:`datapipe.readers._streams.COMPRESSIONS`, the one table readers open by) is
stripped; a name no reader claims is ``text``.
"""

from __future__ import annotations

import difflib
from types import ModuleType
from typing import Mapping

from datapipe.errors import SpecError
from datapipe.readers._streams import strip_compression
from datapipe.readers.base import Reader

#: the format of a file whose name no reader claims
FALLBACK = "text"

ReaderRegistry = Mapping[str, type[Reader]]


def reader_registry(plugins: list[tuple[str, ModuleType]] | None = None) -> dict[str, type[Reader]]:
    """Format -> reader class: the built-in readers plus every plugin's ``readers()``.
    A plugin registering a format already taken (built in or by another plugin), or a
    class that is not a :class:`Reader` declaring that format, is an error."""
    from datapipe.plugins import PluginError, load_plugins
    from datapipe.readers import READERS

    registry: dict[str, type[Reader]] = dict(READERS)
    owner = {name: "datapipe" for name in registry}
    for plugin, module in plugins if plugins is not None else load_plugins():
        provide = getattr(module, "readers", None)
        if provide is None:
            continue
        for name, cls in provide().items():
            if not (isinstance(cls, type) and issubclass(cls, Reader)):
                raise PluginError(f"plugin {plugin!r}: readers()[{name!r}] is {cls!r}, not a Reader subclass")
            if cls.format != name:
                raise PluginError(f"plugin {plugin!r}: readers()[{name!r}] is {cls.__name__}, whose format is "
                                  f"{cls.format!r}; register it under its own format name")
            if name in registry and registry[name] is not cls:
                raise PluginError(f"reader format {name!r} is registered by both {owner[name]!r} and plugin "
                                  f"{plugin!r}; rename one of them")
            registry[name], owner[name] = cls, plugin
    return registry


def reader_class(registry: ReaderRegistry, name: object, *, where: str = "") -> type[Reader]:
    """The reader registered as ``name``; an unknown name lists the valid ones, with the
    closest as a suggestion."""
    if isinstance(name, str) and name in registry:
        return registry[name]
    prefix = f"{where}: " if where else ""
    close = difflib.get_close_matches(name, list(registry), n=1) if isinstance(name, str) else []
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise SpecError(f"{prefix}unknown format {name!r}{hint}; valid formats: {', '.join(sorted(registry))}")


def guess_format(path: str, registry: ReaderRegistry | None = None) -> str:
    """The format of a file named without one: the reader whose longest suffix ends the
    name (compression stripped), else :data:`FALLBACK`."""
    from datapipe import fs

    if registry is None:
        registry = reader_registry()
    name = strip_compression(fs.basename(path)).lower()
    best, best_len = FALLBACK, 0
    for fmt in sorted(registry):
        for suffix in registry[fmt].suffixes:
            if len(suffix) > best_len and name.endswith(suffix):
                best, best_len = fmt, len(suffix)
    return best
