"""What the function translations build on: the filter's translated values
(:class:`Value`), a function call being translated (:class:`Call`), and numpy
kernels registered as pyarrow UDFs (:func:`vectorized`).

A translation receives the call's argument nodes, translates them with the filter's
translator, and returns a :class:`Value`: a pyarrow compute expression, its Arrow
type, and its value when it is known while parsing (a constant argument list folds
to a constant, as DataFusion folds it).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.errors import FilterError
from lancelet.expr.sql import kernels
from lancelet.expr.sql.dialect import sql_text
from lancelet.expr.sql.translator import Translator
from lancelet.expr.sql.values import Value, apply, cast, const

__all__ = [
    "Call",
    "Value",
    "apply",
    "cast",
    "const",
    "is_float",
    "is_integer",
    "is_null",
    "is_numeric",
    "is_string",
    "null",
    "vectorized",
]


def null(dtype: pa.DataType) -> Value:
    """A NULL constant of type ``dtype``."""
    return const(pa.scalar(None, dtype))


def is_string(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_string(dtype) or pa.types.is_large_string(dtype))


def is_integer(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_integer(dtype))


def is_float(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_floating(dtype))


def is_null(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_null(dtype))


def is_numeric(dtype: pa.DataType) -> bool:
    return bool(is_integer(dtype) or is_float(dtype) or pa.types.is_decimal(dtype))


@dataclass
class Call:
    """One call of a SQL function: its (lower-case) name, argument nodes and place."""

    translator: Translator
    node: exp.Expression
    name: str
    args: list[exp.Expression]
    _values: dict[int, Value] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{sql_text(self.node)!r} (in {self.translator.sql!r})"

    @property
    def computes(self) -> bool:
        """Whether the call computes a column (a projection, update or new column)."""
        return self.translator.computes

    def error(self, message: str) -> FilterError:
        return FilterError(f"{self.name}: {message}: {self.where}")

    def arity(self, low: int, high: int | None = None) -> None:
        """Refuse a call with fewer than ``low`` or more than ``high`` arguments."""
        high = low if high is None else high
        if not low <= len(self.args) <= high:
            wanted = str(low) if low == high else f"{low} to {high}"
            if high > 64:
                wanted = f"at least {low}"
            raise self.error(f"takes {wanted} argument(s), not {len(self.args)}")

    def value(self, index: int) -> Value:
        if index not in self._values:
            self._values[index] = self.translator.visit(self.args[index])
        return self._values[index]

    def values(self) -> list[Value]:
        return [self.value(i) for i in range(len(self.args))]

    def literal(self, index: int, what: str) -> pa.Scalar:
        """Argument ``index`` as a constant (possibly NULL); refused when it is not one."""
        value = self.value(index)
        if value.const is None:
            raise self.error(f"lancelet takes the {what} as a literal only")
        return value.const

    def int_literal(self, index: int, what: str) -> int | None:
        """Argument ``index`` as an integer constant, None when it is NULL."""
        scalar = self.literal(index, what)
        if is_null(scalar.type) or (is_integer(scalar.type) and not scalar.is_valid):
            return None
        if not is_integer(scalar.type):
            raise self.error(f"the {what} must be an integer, not {scalar.type}")
        number: int = scalar.as_py()
        return number

    def str_literal(self, index: int, what: str) -> str | None:
        """Argument ``index`` as a string constant, None when it is NULL."""
        scalar = self.literal(index, what)
        if is_null(scalar.type) or (is_string(scalar.type) and not scalar.is_valid):
            return None
        if not is_string(scalar.type):
            raise self.error(f"the {what} must be a string, not {scalar.type}")
        text: str = scalar.as_py()
        return text

    def is_root(self) -> bool:
        """Whether the call is the whole expression (its parentheses aside)."""
        parent = self.node.parent
        while isinstance(parent, exp.Paren):
            parent = parent.parent
        return parent is None

    # pylance types some string results as Arrow's string_view, and the type carries
    # through the functions that keep their argument's type.  pyarrow's kernels barely
    # take string_view, so lancelet computes with strings, remembers which calls
    # pylance would type as string_view, and casts only a projection's whole result.

    def arg_is_view(self, *indices: int) -> bool:
        """Whether pylance types any of the arguments ``indices`` as string_view."""
        views = _VIEWS.get(self.translator, set())
        return any(id(_unwrapped(self.args[i])) in views for i in indices if i < len(self.args))

    def as_view(self, value: Value) -> Value:
        """``value``, a result pylance types as string_view."""
        _VIEWS.setdefault(self.translator, set()).add(id(self.node))
        if self.computes and self.is_root() and not pa.types.is_string_view(value.type):
            return cast(value, pa.string_view(), self.node)
        return value

    def text_result(self, value: Value, view: bool) -> Value:
        """``value``, typed as string_view by pylance when ``view``."""
        return self.as_view(value) if view else value


_VIEWS: weakref.WeakKeyDictionary[Translator, set[int]] = weakref.WeakKeyDictionary()


def _unwrapped(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


# --- numpy kernels as pyarrow UDFs --------------------------------------------------

Kernel = Callable[..., pa.Array]


def vectorized(
    call: Call,
    kernel: Kernel,
    columns: Sequence[Value],
    params: Sequence[pa.Scalar],
    output: pa.DataType,
) -> Value:
    """``kernel(*column_arrays, *param_values)`` over the values of ``columns``, with the
    constant ``params`` passed as Python values; folded when every column is constant.

    ``kernel`` must be a module-level function (it names the UDF) that takes arrays of
    the columns' types and returns an array of type ``output``.
    """
    if all(c.const is not None for c in columns):
        arrays = [pa.array([c.const.as_py()], c.type) for c in columns if c.const is not None]
        result = kernel(*arrays, *[p.as_py() for p in params])
        return const(result[0])
    name = _register(
        kernel,
        tuple(c.type for c in columns),
        tuple(p.type for p in params),
        output,
    )
    operands = [c.expr for c in columns] + [pc.scalar(p) for p in params]
    return Value(kernels.call(name, operands), output)


@functools.cache
def _register(
    kernel: Kernel,
    column_types: tuple[pa.DataType, ...],
    param_types: tuple[pa.DataType, ...],
    output: pa.DataType,
) -> str:
    # UDFs are typed exactly: one per kernel and argument types.  The name must be the
    # same for the same kernel and types in every import of this module.
    signature = repr((column_types, param_types, output)).encode()
    name = f"lancelet_sql_{kernel.__name__}_{hashlib.sha1(signature).hexdigest()[:16]}"
    width = len(column_types)

    def udf(context: Any, *args: Any) -> pa.Array:
        columns = [_as_array(a, context.batch_length) for a in args[:width]]
        return kernel(*columns, *[a.as_py() for a in args[width:]])

    in_types = {f"c{i}": t for i, t in enumerate(column_types)}
    in_types |= {f"p{i}": t for i, t in enumerate(param_types)}
    doc = {"summary": f"lancelet's SQL {kernel.__name__}", "description": kernel.__doc__ or ""}
    with contextlib.suppress(pa.ArrowKeyError):
        pc.register_scalar_function(udf, name, doc, in_types, output)
    return name


def _as_array(value: Any, length: int) -> pa.Array:
    if isinstance(value, pa.ChunkedArray):
        return value.combine_chunks()
    if isinstance(value, pa.Array):
        return value
    return pa.repeat(value, length)
