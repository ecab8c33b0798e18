"""The ``filter_expr`` stage: a one-off rule written in the job spec, no plugin needed.

```yaml
- filter_expr: {keep: 'language == "en" and quality_score > 0.3'}
- {stage: filter_expr, name: long_en, config: {keep: 'len(text) >= 500 or metadata.source == "wiki"'}}
```

``keep`` is an expression over the document's columns (``text``, ``url``, ``source``,
``source_id``, every column a stage before it added: ``language``, ``language_score``,
``quality_score``, ``perplexity``, ...) and the fields of the source record kept in
``metadata`` (``metadata.perplexity``: a path into that JSON object). A document is kept
when the expression is true; otherwise it is dropped as ``<stage>:expr_false``, or as
``<stage>:expr_null`` when the expression has no value for it (a comparison with a
missing field, as in SQL's WHERE), with the expression as the reason's detail.

The expression is parsed once with :mod:`ast` and only an allow-list of nodes is
accepted (no attribute access but ``metadata.<field>``, no calls but the functions in
:data:`FUNCTIONS`, no subscripts, lambdas or comprehensions); it compiles to a tree of
``pyarrow.compute`` calls evaluated on whole batches. Nothing is ever passed to
``eval``. An expression nested more than :data:`MAX_DEPTH` levels deep or longer than
:data:`MAX_CHARS` characters is refused at validate, like any other mistake.

Grammar (Python's syntax, a subset):

* literals: strings, numbers (integers within 64 bits), ``True``/``False``/``None``;
  lists/tuples of literals of one kind (right side of ``in``);
* ``and``, ``or``, ``not``; ``==  !=  <  <=  >  >=`` (chains allowed), ``in`` / ``not
  in`` a list, ``is None`` / ``is not None``;
* ``+ - * /`` and unary minus on numbers;
* functions: ``len(x)`` (characters), ``lower(x)``, ``upper(x)``, ``contains(x, "s")``,
  ``startswith(x, "s")``, ``endswith(x, "s")``, ``matches(x, "regex")`` (RE2 search),
  ``abs(x)``, ``coalesce(x, default)``.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from datapipe import schema as S
from datapipe.errors import JobError, SpecError
from datapipe.stage import FilterStage, StageConfig

Value = Any            # a pa.Array (one value per row) or a pa.Scalar / Python literal
Node = Callable[[pa.Table], Value]

_COMPARE = {ast.Eq: "equal", ast.NotEq: "not_equal", ast.Lt: "less", ast.LtE: "less_equal",
            ast.Gt: "greater", ast.GtE: "greater_equal"}
_ARITH = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide"}


def _len(x):
    return pc.utf8_length(x)


def _pattern(fn: str):
    def call(x, pattern):
        if not isinstance(pattern, str):
            raise SpecError(f"{fn}(x, pattern): the pattern must be a string literal, got {pattern!r}")
        return getattr(pc, fn)(x, pattern=pattern)
    return call


#: name -> (number of arguments, implementation over arrays/literals)
FUNCTIONS: dict[str, tuple[int, Callable[..., Value] | None]] = {
    "len": (1, _len),
    "lower": (1, pc.utf8_lower),
    "upper": (1, pc.utf8_upper),
    "abs": (1, pc.abs),
    "contains": (2, _pattern("match_substring")),
    "startswith": (2, _pattern("starts_with")),
    "endswith": (2, _pattern("ends_with")),
    "matches": (2, _pattern("match_substring_regex")),
    "coalesce": (2, None),   # _coalesce: a field missing from every row still takes the default
}


#: how deep an expression may nest (each level is a few Python frames when it is built and
#: when it runs; ``not not ... x`` 5000 deep would exhaust the interpreter's stack)
MAX_DEPTH = 100
#: characters of an expression (a long ``in [...]`` list fits; a pasted file does not)
MAX_CHARS = 100_000
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _literal(node: ast.AST, expr: str) -> Any:
    value = _number(node)
    if value is None and isinstance(node, ast.Constant) and isinstance(node.value, (str, bool, type(None))):
        return node.value
    if value is not None:
        if isinstance(value, int) and not _INT64[0] <= value <= _INT64[1]:
            raise SpecError(f"filter_expr: the integer {ast.unparse(node)} in {_short(expr)} does not fit 64 bits "
                            f"({_INT64[0]} .. {_INT64[1]}), the type of the columns it is compared with; "
                            "write it as a float (1e26) if a bound that large is meant")
        return value
    raise SpecError(f"filter_expr: {ast.unparse(node)!r} in {_short(expr)} must be a literal (string, number, True, "
                    "False, None)")


def _number(node: ast.AST) -> int | float | None:
    """The value of a number literal, or of a negated one (``-3``), else None."""
    negate = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    if negate:
        node = node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return -node.value if negate else node.value
    return None


def _depth(tree: ast.AST) -> int:
    """How deep ``tree`` nests (iteratively: the tree may be deeper than the stack)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in ast.iter_child_nodes(node))
    return deepest


@dataclass(frozen=True)
class Compiled:
    """A parsed expression: the function that evaluates it on a batch, the document
    columns it reads and the ``metadata`` paths it looks up."""

    evaluate: Node
    columns: frozenset[str]
    metadata_paths: frozenset[tuple[str, ...]]


def compile_expr(expr: str) -> Compiled:
    """Parse ``expr`` with the allow-list above; a node outside it is a SpecError naming
    it and what is allowed."""
    if len(expr) > MAX_CHARS:
        raise SpecError(f"filter_expr: the expression is {len(expr):,} characters (at most {MAX_CHARS:,}); "
                        "for long lists of values use a stage made for them (url_filter lists, a plugin)")
    too_deep = SpecError(f"filter_expr: {_short(expr)} nests more than {MAX_DEPTH} levels deep; write it "
                         "flatter (not not x is x; a and b and c needs no parentheses)")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        raise SpecError(f"filter_expr: cannot parse {_short(expr)}: {exc.msg} (at column {exc.offset})") from None
    except (RecursionError, MemoryError):   # the parser's own stack (MemoryError from CPython's)
        raise too_deep from None
    if _depth(tree) > MAX_DEPTH:
        raise too_deep
    columns: set[str] = set()
    paths: set[tuple[str, ...]] = set()

    def bad(node: ast.AST, what: str) -> SpecError:
        return SpecError(f"filter_expr: {what} {ast.unparse(node)!r} is not allowed in {_short(expr)}; use column names, "
                         "metadata.<field>, literals, and/or/not, comparisons, in [..], is None, + - * /, and "
                         f"the functions {', '.join(sorted(FUNCTIONS))}")

    def path_of(node: ast.AST) -> tuple[str, ...] | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id == S.METADATA and parts:
            return tuple(reversed(parts))
        return None

    def build(node: ast.AST) -> Node:
        if isinstance(node, ast.Constant):
            value = _literal(node, expr)
            return lambda t: value
        if isinstance(node, ast.Name):
            if node.id in ("True", "False", "None"):   # pragma: no cover - Constant since 3.8
                raise bad(node, "name")
            columns.add(node.id)
            name = node.id
            return lambda t: t.column(name).combine_chunks()
        if isinstance(node, ast.Attribute):
            path = path_of(node)
            if path is None:
                raise bad(node, "attribute")
            paths.add(path)
            key = "metadata." + ".".join(path)
            return lambda t: t.column(key)
        if isinstance(node, ast.BoolOp):
            parts = [build(v) for v in node.values]
            fn = pc.and_kleene if isinstance(node.op, ast.And) else pc.or_kleene

            def boolop(t):
                out = _bool(parts[0](t), t)
                for p in parts[1:]:
                    out = fn(out, _bool(p(t), t))
                return out
            return boolop
        if isinstance(node, ast.UnaryOp):
            if _number(node) is not None:   # a negative literal: -9223372036854775808 fits 64 bits
                value = _literal(node, expr)
                return lambda t: value
            if isinstance(node.op, ast.Not):
                inner = build(node.operand)
                return lambda t: pc.invert(_bool(inner(t), t))
            if isinstance(node.op, ast.USub):
                inner = build(node.operand)
                return lambda t: _apply("negate", [inner(t)], t, pa.float64())
            if isinstance(node.op, ast.UAdd):
                return build(node.operand)
            raise bad(node, "operator")
        if isinstance(node, ast.BinOp):
            op = _ARITH.get(type(node.op))
            if op is None:
                raise bad(node, "operator")
            left, right = build(node.left), build(node.right)
            if op == "divide":   # true division, as in Python, also for integer columns
                return lambda t: _apply("divide", [_float(left(t)), _float(right(t))], t, pa.float64())
            return lambda t: _apply(op, [left(t), right(t)], t, pa.float64())
        if isinstance(node, ast.Compare):
            return _compare(node)
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
                raise bad(node, "call")
            arity, impl = FUNCTIONS[node.func.id]
            if len(node.args) != arity:
                raise SpecError(f"filter_expr: {node.func.id}() takes {arity} argument(s), got {len(node.args)} in {_short(expr)}")
            args = [build(a) for a in node.args]
            if node.func.id in ("contains", "startswith", "endswith", "matches"):
                pattern = _literal(node.args[1], expr)
                try:
                    impl(pa.array([""]), pattern)   # a bad regex fails now, at validate
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise SpecError(f"filter_expr: {node.func.id}(): bad pattern {pattern!r} in {_short(expr)}: {exc}") from None
                return lambda t: _apply(lambda x: impl(x, pattern), [args[0](t)], t, pa.bool_())
            if node.func.id == "coalesce":
                return lambda t: _coalesce(args[0](t), args[1](t), t)
            return lambda t: _apply(impl, [a(t) for a in args], t, pa.null())
        raise bad(node, type(node).__name__.lower())

    def _compare(node: ast.Compare) -> Node:
        steps = []
        left = build(node.left)
        for op, comp in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(comp, (ast.List, ast.Tuple, ast.Set)):
                    raise SpecError(f"filter_expr: 'in' takes a list of literals, like language in ['en', 'de'], "
                                    f"in {_short(expr)}")
                values = [_literal(e, expr) for e in comp.elts]
                try:
                    pa.array(values)
                except (pa.ArrowInvalid, pa.ArrowTypeError):
                    raise SpecError(f"filter_expr: the list {ast.unparse(comp)!r} in {_short(expr)} mixes types; "
                                    "'in' takes strings or numbers, not both") from None
                steps.append(("in", isinstance(op, ast.NotIn), values))
                right = None
            elif isinstance(op, (ast.Is, ast.IsNot)):
                if not (isinstance(comp, ast.Constant) and comp.value is None):
                    raise SpecError(f"filter_expr: 'is' only compares with None (x is None, x is not None) in {_short(expr)}")
                steps.append(("is", isinstance(op, ast.IsNot), None))
                right = None
            elif type(op) in _COMPARE:
                right = build(comp)
                steps.append(("cmp", _COMPARE[type(op)], right))
            else:
                raise bad(node, "comparison")
            steps[-1] = steps[-1] + (comp,)

        def compare(t):
            out = None
            lhs = left(t)
            for kind, arg, extra, comp in steps:
                if kind == "in":
                    a = _arr(lhs, t)
                    values = pa.array(extra, a.type) if extra and a.type != pa.null() else pa.array(extra)
                    hit = pc.is_in(a, value_set=values)
                    hit = pc.if_else(pc.is_null(a), pa.scalar(None, pa.bool_()), hit)
                    res = pc.invert(hit) if arg else hit
                    rhs = lhs
                elif kind == "is":
                    res = pc.is_valid(_arr(lhs, t)) if arg else pc.is_null(_arr(lhs, t))
                    rhs = lhs
                else:
                    rhs = extra(t)
                    res = _apply(arg, [lhs, rhs], t, pa.bool_())
                out = res if out is None else pc.and_kleene(out, res)
                lhs = rhs
            return out
        return compare

    evaluate = build(tree.body)
    return Compiled(evaluate=evaluate, columns=frozenset(columns), metadata_paths=frozenset(paths))


def _short(expr: str, limit: int = 120) -> str:
    """``expr`` quoted for a message, cut to ``limit`` characters."""
    return repr(expr) if len(expr) <= limit else repr(expr[:limit]) + f"... ({len(expr):,} characters)"


def _arr(value: Value, t: pa.Table) -> Value:
    """A literal stays a scalar (pyarrow broadcasts it); arrays pass through."""
    return value


def _coalesce(x: Value, default: Value, t: pa.Table) -> Value:
    if isinstance(x, (pa.Array, pa.ChunkedArray)) and x.type == pa.null():
        return default if isinstance(default, (pa.Array, pa.ChunkedArray)) else pa.array([default] * t.num_rows)
    if x is None:
        return default
    return pc.coalesce(x, default)


def _float(value: Value) -> Value:
    if isinstance(value, (pa.Array, pa.ChunkedArray)) and value.type != pa.null():
        return pc.cast(value, pa.float64())
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _apply(fn: str | Callable[..., Value], args: list[Value], t: pa.Table, null_type: pa.DataType) -> Value:
    """``fn`` over ``args``; a column that is null in every row (a field no document of
    the batch has) gives nulls instead of a type error."""
    if any(isinstance(a, (pa.Array, pa.ChunkedArray)) and a.type == pa.null() for a in args) or \
            any(a is None for a in args):
        return pa.nulls(t.num_rows, null_type)
    f = getattr(pc, fn) if isinstance(fn, str) else fn
    return f(*args)


def _bool(value: Value, t: pa.Table) -> pa.Array:
    if isinstance(value, pa.BooleanScalar):
        value = value.as_py()
    if isinstance(value, bool) or value is None:
        return pa.array(np.full(t.num_rows, value) if value is not None else [None] * t.num_rows, pa.bool_())
    if isinstance(value, (pa.Array, pa.ChunkedArray)) and value.type == pa.null():
        return pa.nulls(t.num_rows, pa.bool_())
    if isinstance(value, (pa.Array, pa.ChunkedArray)) and value.type == pa.bool_():
        return value
    raise JobError(f"filter_expr: {value!r} is not true/false; 'and', 'or' and 'not' take comparisons "
                   "(quality_score > 0.3) or true/false columns")


@dataclass(kw_only=True, frozen=True)
class FilterExprConfig(StageConfig):
    """``keep``: the expression (module docstring); documents for which it is true are
    kept."""

    keep: str

    def __post_init__(self) -> None:
        if not isinstance(self.keep, str) or not self.keep.strip():
            raise SpecError("filter_expr: set keep: to an expression, e.g. "
                            "keep: 'language == \"en\" and quality_score > 0.3'")
        compile_expr(self.keep)   # a bad expression fails at validate, naming what is wrong

    @property
    def reads(self) -> tuple[str, ...]:
        """Columns the expression reads (the job spec checks them against the chain)."""
        c = compile_expr(self.keep)
        return tuple(sorted(c.columns | ({S.METADATA} if c.metadata_paths else set())))


class FilterExpr(FilterStage):
    """Keeps the documents for which ``keep`` is true (``expr_false`` / ``expr_null``
    otherwise, the expression as detail)."""

    name = "filter_expr"
    Config = FilterExprConfig
    reads = ()

    _compiled: Compiled | None = None

    def setup(self) -> None:
        self._compiled = compile_expr(self.config.keep)

    def keep(self, batch: pa.Table):
        c = self._compiled if self._compiled is not None else compile_expr(self.config.keep)
        view = batch
        for path in sorted(c.metadata_paths):
            view = view.append_column("metadata." + ".".join(path), _metadata_values(batch, path))
        try:
            result = _bool(c.evaluate(view), view)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise JobError(f"filter_expr: cannot evaluate {self.config.keep!r} on this data: {exc}") from None
        if isinstance(result, pa.ChunkedArray):
            result = result.combine_chunks()
        null = pc.is_null(result).to_numpy(zero_copy_only=False)
        keep = pc.fill_null(result, False).to_numpy(zero_copy_only=False)
        detail = self.config.keep.strip()
        reasons = [None if k else (f"expr_null|{detail}" if n else f"expr_false|{detail}")
                   for k, n in zip(keep.tolist(), null.tolist())]
        return keep, reasons


def _metadata_values(batch: pa.Table, path: tuple[str, ...]) -> pa.Array:
    """The value at ``path`` in each row's ``metadata`` JSON object (null when absent),
    as one Arrow array (strings when the rows disagree on the type)."""
    values = []
    for blob in batch.column(S.METADATA).to_pylist():
        node = json.loads(blob) if blob else None
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        values.append(node if not isinstance(node, (dict, list)) else json.dumps(node, sort_keys=True))
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if v is None else str(v) for v in values], pa.string())
