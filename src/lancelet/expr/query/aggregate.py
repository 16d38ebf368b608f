"""Aggregate functions of ``LanceDataset.sql`` queries, computed with pyarrow's hash
aggregation, with DataFusion's result types and null rules.

========================  ==============================================================
function                  result
========================  ==============================================================
``count(*)``, ``count(x)``  int64, never null; ``count(x)`` counts non-null values
``count(DISTINCT x)``     int64, never null; distinct non-null values (floats by bits)
``sum(x)``                int64 for signed, uint64 for unsigned integers (an overflow is
                          an error, where DataFusion wraps around), float64 for floats,
                          decimal128(min(38, p + 10), s) for decimal128(p, s)
``avg(x)``, ``mean(x)``   float64 for integers and floats
``min(x)``, ``max(x)``    x's type; floats in IEEE 754's total order (NaN is largest)
``stddev``/``var``        float64: ``stddev``, ``stddev_samp``, ``var``, ``var_samp`` are
                          sample statistics, ``stddev_pop``, ``var_pop`` population ones
``bool_and``, ``bool_or`` bool
========================  ==============================================================

All but ``count`` are null for a group with no non-null value.  Other aggregate
functions, ``DISTINCT`` other than in ``count``, and ``avg`` of decimals are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.errors import SqlQueryError, UnsupportedSqlError
from lancelet.expr.query.naming import call_arguments, function_name, is_aggregate
from lancelet.expr.query.ordering import from_total_order_key, total_order_key
from lancelet.expr.query.statement import text

# Function names (as DataFusion accepts them) of the aggregates lancelet computes.
_KINDS = {
    "count": "count",
    "sum": "sum",
    "avg": "avg",
    "mean": "avg",
    "min": "min",
    "max": "max",
    "stddev": "stddev",
    "stddev_samp": "stddev",
    "stddev_pop": "stddev_pop",
    "var": "var",
    "var_samp": "var",
    "var_pop": "var_pop",
    "bool_and": "bool_and",
    "bool_or": "bool_or",
}


@dataclass(frozen=True)
class AggregateCall:
    """One aggregate of the query: what it computes over which (resolved) argument."""

    kind: str
    argument: exp.Expr | None  # None: count(*)
    distinct: bool
    key: str  # the call's SQL text: equal calls are computed once

    @property
    def column(self) -> str:
        return f"__aggregate_{abs(hash(self.key))}"


def aggregate_call(node: exp.Expr) -> AggregateCall:
    """The aggregate a (resolved) call node asks for; refuses what lancelet lacks."""
    name = function_name(node)  # type: ignore[arg-type]
    kind = _KINDS.get(name)
    if kind is None:
        raise UnsupportedSqlError(f"the aggregate function {name}() is not supported")
    arguments = call_arguments(node)  # type: ignore[arg-type]
    if arguments is None:
        raise UnsupportedSqlError(f"{name}() with these arguments is not supported: {node.sql()}")
    distinct = bool(arguments) and isinstance(arguments[0], exp.Distinct)
    if distinct:
        arguments = list(arguments[0].expressions) + arguments[1:]
    if len(arguments) > 1:
        raise UnsupportedSqlError(f"{name}() with {len(arguments)} arguments is not supported")
    if distinct and kind != "count":
        raise UnsupportedSqlError(f"{name}(DISTINCT ...) is not supported; only count(DISTINCT)")
    argument = arguments[0] if arguments else None
    if isinstance(argument, exp.Star) or argument is None:
        if kind != "count":
            raise SqlQueryError(f"{name}() needs an argument")
        argument = None
    elif any(is_aggregate(n) for n in argument.walk()):
        raise SqlQueryError(f"aggregate function calls cannot be nested: {node.sql()}")
    return AggregateCall(kind, argument, distinct, text(node))


# --- evaluation ---------------------------------------------------------------------


def aggregate(
    keys: Sequence[pa.ChunkedArray],
    calls: Sequence[AggregateCall],
    arguments: Sequence[pa.ChunkedArray | None],
    rows: int,
) -> tuple[pa.Array, list[pa.Array]]:
    """Group the ``rows`` rows by ``keys`` (one group of all rows when there are none)
    and compute each call over its argument's values.  Returns each group's first row
    (null for the one group of no rows) and each call's values, one per group, in the
    order groups first appear."""
    columns: dict[str, pa.Array] = {f"k{n}": total_order_key(k) for n, k in enumerate(keys)}
    group_keys = list(columns)
    columns["row"] = pa.array(np.arange(rows, dtype=np.int64))
    specs: list[tuple[Any, ...]] = []
    finishers: list[Callable[[pa.Array], pa.Array]] = []
    for number, (call, values) in enumerate(zip(calls, arguments, strict=True)):
        prepared, function, options, finish = _plan(call, values)
        if prepared is None:
            prepared = columns["row"]
        columns[f"a{number}"] = prepared
        specs.append((f"a{number}", function, options))
        finishers.append(finish)
    # Without GROUP BY, DataFusion's population variance of one value is 0 whatever the
    # value (NaN or infinity included; its grouped form gives NaN, as pyarrow does):
    # each such call's values are counted.
    counted = {}
    for number, call in enumerate(calls):
        if call.kind in ("var_pop", "stddev_pop") and not keys:
            counted[number] = len(specs)
            specs.append((f"a{number}", "count", pc.CountOptions("only_valid")))
    specs.append(("row", "min"))
    try:
        grouped = pa.table(columns).group_by(group_keys, use_threads=False).aggregate(specs)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise UnsupportedSqlError(f"cannot group or aggregate these values: {exc}") from exc
    # pyarrow puts the keys first (older versions: last): the aggregates are the others.
    start = len(group_keys) if grouped.schema.names[: len(group_keys)] == group_keys else 0
    results = [grouped.column(start + i).combine_chunks() for i in range(len(specs))]
    values = [finish(result) for finish, result in zip(finishers, results, strict=False)]
    for number, index in counted.items():
        single = pc.equal(results[index], 1)
        values[number] = pc.if_else(single, pa.scalar(0.0, values[number].type), values[number])
    return results[-1], values


_Plan = tuple[pa.Array | None, str, pc.FunctionOptions | None, Callable[[pa.Array], pa.Array]]


def _same(values: pa.Array) -> pa.Array:
    return values


def _plan(call: AggregateCall, values: pa.ChunkedArray | None) -> _Plan:
    """The column to aggregate, pyarrow's function and options, and what turns its
    result into DataFusion's."""
    if values is None:  # count(*): the rows, counted
        return None, "count", pc.CountOptions("all"), _same
    data = values.combine_chunks()
    if call.kind == "count":
        if call.distinct:
            counted = total_order_key(data)
            return counted, "count_distinct", pc.CountOptions("only_valid"), _same
        return data, "count", pc.CountOptions("only_valid"), _same
    planner = _PLANNERS[call.kind]
    return planner(data, call)


def _sum(data: pa.Array, call: AggregateCall) -> _Plan:
    t = data.type
    if pa.types.is_integer(t):
        # Summed exactly, then checked to fit the result type DataFusion gives.
        target = pa.uint64() if pa.types.is_unsigned_integer(t) else pa.int64()
        return data.cast(pa.decimal128(38, 0)), "sum", None, _checked_cast(target, call)
    if pa.types.is_floating(t):
        return data.cast(pa.float64()), "sum", None, _same
    if pa.types.is_decimal128(t):
        wider = pa.decimal128(min(38, t.precision + 10), t.scale)
        return data.cast(wider), "sum", None, _cast_to(wider)
    raise _argument_error(call, t)


def _checked_cast(target: pa.DataType, call: AggregateCall) -> Callable[[pa.Array], pa.Array]:
    def finish(values: pa.Array) -> pa.Array:
        try:
            return values.cast(target)
        except pa.ArrowInvalid as exc:
            raise SqlQueryError(
                f"{call.key}: the sum overflows {target} (DataFusion would wrap around)"
            ) from exc

    return finish


def _cast_to(target: pa.DataType) -> Callable[[pa.Array], pa.Array]:
    return lambda values: values.cast(target)


def _avg(data: pa.Array, call: AggregateCall) -> _Plan:
    if pa.types.is_integer(data.type) or pa.types.is_floating(data.type):
        return data.cast(pa.float64()), "mean", None, _same
    if pa.types.is_decimal(data.type):
        raise UnsupportedSqlError(f"{call.key}: avg of decimals is not supported")
    raise _argument_error(call, data.type)


def _extreme(data: pa.Array, call: AggregateCall) -> _Plan:
    if pa.types.is_floating(data.type):
        float_type = pa.float32() if pa.types.is_float16(data.type) else data.type
        if pa.types.is_float16(data.type):
            raise UnsupportedSqlError(f"{call.key}: {call.kind} of float16 is not supported")
        finish = lambda keys: from_total_order_key(keys, float_type)  # noqa: E731
        return total_order_key(data), call.kind, None, finish
    if pa.types.is_nested(data.type):
        raise UnsupportedSqlError(f"{call.key}: {call.kind} of {data.type} is not supported")
    return data, call.kind, None, _cast_to(data.type)


def _spread(data: pa.Array, call: AggregateCall) -> _Plan:
    if not (pa.types.is_integer(data.type) or pa.types.is_floating(data.type)):
        if pa.types.is_decimal(data.type):
            raise UnsupportedSqlError(f"{call.key}: {call.kind} of decimals is not supported")
        raise _argument_error(call, data.type)
    function = "stddev" if call.kind.startswith("stddev") else "variance"
    options = pc.VarianceOptions(ddof=0 if call.kind.endswith("_pop") else 1)
    return data.cast(pa.float64()), function, options, _same


def _boolean(data: pa.Array, call: AggregateCall) -> _Plan:
    if not pa.types.is_boolean(data.type):
        raise _argument_error(call, data.type)
    function = "all" if call.kind == "bool_and" else "any"
    return data, function, pc.ScalarAggregateOptions(skip_nulls=True, min_count=1), _same


def _argument_error(call: AggregateCall, t: pa.DataType) -> SqlQueryError:
    return SqlQueryError(f"{call.key}: {call.kind} does not accept values of type {t}")


_PLANNERS: dict[str, Callable[[pa.Array, AggregateCall], _Plan]] = {
    "sum": _sum,
    "avg": _avg,
    "min": _extreme,
    "max": _extreme,
    "stddev": _spread,
    "stddev_pop": _spread,
    "var": _spread,
    "var_pop": _spread,
    "bool_and": _boolean,
    "bool_or": _boolean,
}


def result_type(call: AggregateCall, argument_type: pa.DataType | None) -> pa.DataType:
    """The type of ``call``'s column for an argument of ``argument_type``."""
    if call.kind == "count":
        return pa.int64()
    assert argument_type is not None
    if call.kind == "sum":
        if pa.types.is_unsigned_integer(argument_type):
            return pa.uint64()
        if pa.types.is_integer(argument_type):
            return pa.int64()
        if pa.types.is_decimal128(argument_type):
            return pa.decimal128(min(38, argument_type.precision + 10), argument_type.scale)
        return pa.float64()
    if call.kind in ("min", "max"):
        return argument_type
    if call.kind in ("bool_and", "bool_or"):
        return pa.bool_()
    return pa.float64()
