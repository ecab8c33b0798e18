"""Turning YAML mappings into the keyword-only config dataclasses.

YAML is only a thin loader: every value is checked against the dataclass field's type,
and a wrong key or type raises a :class:`SpecError` naming the key, where it came from,
and what would be accepted. Lists become tuples where the field wants a tuple.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import difflib
import types
import typing
from typing import Any, Literal, Mapping, Union

from datapipe.errors import SpecError


def _type_name(tp: Any) -> str:
    if tp is type(None):
        return "null"
    origin = typing.get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(tp) if a is not Ellipsis)
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return getattr(tp, "__name__", str(tp))


class _Mismatch(Exception):
    pass


def coerce(value: Any, tp: Any, where: str = "") -> Any:
    """Return ``value`` converted to ``tp`` where YAML can't say it (list -> tuple,
    int -> float), or raise _Mismatch. A nested config dataclass is built with
    :func:`build`, its errors naming ``where`` (``"file: sources[1]"``)."""
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Literal:
        if value in args:
            return value
        raise _Mismatch
    if origin in (Union, types.UnionType):
        for a in args:
            try:
                return coerce(value, a, where)
            except _Mismatch:
                continue
        raise _Mismatch
    if tp is type(None):
        if value is None:
            return None
        raise _Mismatch
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise _Mismatch
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _Mismatch
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise _Mismatch
    if tp is str:
        if isinstance(value, str):
            return value
        raise _Mismatch
    if origin in (tuple, list, set, frozenset, collections.abc.Sequence) or tp in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise _Mismatch
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(value):
                raise _Mismatch
            return tuple(coerce(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
        item = args[0] if args else Any
        items = [coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
        return list(items) if origin is list else tuple(items)
    if origin in (dict, collections.abc.Mapping) or tp is dict:
        if not isinstance(value, dict):
            raise _Mismatch
        if args:
            return {coerce(k, args[0]): coerce(v, args[1], f"{where}[{k!r}]") for k, v in value.items()}
        return dict(value)
    if dataclasses.is_dataclass(tp) and isinstance(value, dict):
        return build(tp, value, where=where)
    if isinstance(tp, type) and isinstance(value, tp):
        return value
    raise _Mismatch


def build(cls: type, values: Mapping[str, Any] | None, *, where: str, given: Mapping[str, Any] | None = None) -> Any:
    """Instantiate dataclass ``cls`` from a YAML mapping, checking keys and types.

    ``where`` names the place in the spec for messages (``"jobs/x.yaml: stages[2] (c4)"``);
    a nested config dataclass (or a list of them) is built the same way, its place
    named ``where: key`` (``where: key[i]``). Errors raised by the dataclass's own
    ``__post_init__`` validation are re-raised with that place prefixed. ``given``: fields
    the caller sets (a file's folder), neither accepted from the YAML nor listed to it.
    """
    if values is None:
        values = {}
    if not isinstance(values, Mapping):
        raise SpecError(f"{where}: expected a mapping of keys to values, got {values!r} ({type(values).__name__})")
    given = dict(given or {})
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init and f.name not in given}
    _check_keys(values, fields, where)
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for key, value in values.items():
        tp = hints.get(key, Any)
        try:
            kwargs[key] = coerce(value, tp, f"{where}: {key}")
        except _Mismatch:
            raise SpecError(
                f"{where}: key {key!r} must be {_type_name(tp)}, got {value!r} ({type(value).__name__})"
            ) from None
    missing = [n for n, f in fields.items() if n not in kwargs
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise SpecError(f"{where}: missing required key(s) {', '.join(map(repr, missing))}")
    try:
        return cls(**kwargs, **given)
    except (TypeError, ValueError) as e:   # SpecError is a ValueError
        msg = str(e)
        raise SpecError(msg if msg.startswith(where) else f"{where}: {msg}") from None


def _check_keys(values: Mapping[str, Any], fields: Mapping[str, Any], where: str) -> None:
    """An unknown key is an error that suggests the closest valid one and lists them all."""
    for key in values:
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            valid = ", ".join(sorted(fields)) or "(none)"
            raise SpecError(f"{where}: unknown key {key!r}{hint} (valid keys: {valid})")


#: YAML nodes a user file may expand to once every alias is followed (a job spec holds
#: hundreds; a "billion laughs" alias bomb of a few hundred bytes, billions)
YAML_NODE_BUDGET = 1_000_000
#: how deep a user file's mappings and lists may nest (a job spec: under 10)
YAML_DEPTH_BUDGET = 100
#: bytes of a user YAML file (a job spec is a few KB; a mix lists its sources)
YAML_BYTES_BUDGET = 16 << 20


def load_yaml_mapping(path: Any, *, what: str, keys: Any, missing: str = "") -> dict:
    """Read a YAML file that must hold a mapping (a job spec, a mix, a config); every
    problem is a :class:`SpecError` naming the file and, for a missing file, ``missing``
    (how to get one). The file is parsed by :func:`load_yaml_text`, within its budgets."""
    from pathlib import Path

    path = Path(path)
    if not path.is_file():
        raise SpecError(f"{what} not found: {path}" + (f"; {missing}" if missing else ""))
    if path.stat().st_size > YAML_BYTES_BUDGET:
        raise SpecError(f"{path}: {path.stat().st_size:,} bytes is too large for a {what} (at most "
                        f"{YAML_BYTES_BUDGET:,}); is it the right file?")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        line = path.read_bytes()[:e.start].count(b"\n") + 1
        raise SpecError(f"{path}: line {line} is not UTF-8 ({e.reason}); save the file as UTF-8") from None
    raw = load_yaml_text(text, where=str(path))
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: a {what} is a YAML mapping with keys {sorted(keys)}")
    return raw


def load_yaml_text(text: str, *, where: str) -> Any:
    """``yaml.safe_load`` of an untrusted file, within a budget: the composed node graph
    is measured before any Python object is built, so an alias bomb or a self-referencing
    alias is a :class:`SpecError` naming ``where`` (in well under a second, in bounded
    memory) instead of hours of expansion later (:data:`YAML_NODE_BUDGET`,
    :data:`YAML_DEPTH_BUDGET`)."""
    import yaml

    class Loader(yaml.SafeLoader):
        # the scanner and parser slow down with the nesting depth (quadratically in all), so
        # the depth is refused while scanning, before the parser goes deeper
        def fetch_more_tokens(self) -> None:
            super().fetch_more_tokens()
            if self.flow_level + len(self.indents) > YAML_DEPTH_BUDGET:
                raise SpecError(f"{where}: the YAML nests more than {YAML_DEPTH_BUDGET} levels of mappings and "
                                f"lists (line {self.get_mark().line + 1}); flatten it")

    loader = Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_yaml_budget(node, where)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        what = " ".join(p for p in (e.context, e.problem) if p)
        raise SpecError(f"{where}: not valid YAML{at}: {what}") from None
    except yaml.YAMLError as e:
        raise SpecError(f"{where}: not valid YAML: {' '.join(str(e).split())}") from None
    except RecursionError:
        raise SpecError(f"{where}: the YAML nests too deeply (more than {YAML_DEPTH_BUDGET} levels of "
                        "mappings and lists); flatten it") from None
    finally:
        loader.dispose()


def _check_yaml_budget(root: Any, where: str) -> None:
    """Refuse a node graph that expands to more than :data:`YAML_NODE_BUDGET` nodes,
    nests deeper than :data:`YAML_DEPTH_BUDGET`, or holds an alias to one of its own
    ancestors. Each distinct node is visited once (iteratively), its expanded size and
    depth memoised, so the check costs the size of the file, not of its expansion."""
    import yaml

    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if isinstance(node, yaml.ScalarNode):
            size[key], depth[key] = 1, 0
            continue
        children = ([n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode)
                    else list(node.value))
        if done:
            on_path.discard(key)
            size[key] = min(1 + sum(size[id(c)] for c in children), YAML_NODE_BUDGET + 1)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            if size[key] > YAML_NODE_BUDGET:
                raise SpecError(f"{where}: the YAML expands to more than {YAML_NODE_BUDGET:,} values once its "
                                f"aliases (*name) are followed (near line {node.start_mark.line + 1}); an alias "
                                "bomb? Write the values out, or use fewer nested aliases")
            if depth[key] > YAML_DEPTH_BUDGET:
                raise SpecError(f"{where}: the YAML nests more than {YAML_DEPTH_BUDGET} levels of mappings and "
                                f"lists (near line {node.start_mark.line + 1}); flatten it")
            continue
        if key in size:
            continue
        on_path.add(key)
        stack.append((node, True))
        for c in children:
            if id(c) in on_path:
                raise SpecError(f"{where}: an alias refers to a mapping or list that contains it (near line "
                                f"{c.start_mark.line + 1}), so it never ends; write the value out")
            if id(c) not in size:
                stack.append((c, False))


def to_plain(obj: Any) -> Any:
    """A JSON-ready view of a config dataclass (for hashing and reports)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    return obj
