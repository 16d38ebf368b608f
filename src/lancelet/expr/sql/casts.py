"""``CAST(x AS type)`` as SQL engines cast, where Arrow's safe cast is stricter: floats
truncate toward zero to integers, integers round to floats, and SQL's type names read
as DataFusion reads them (``TIMESTAMP`` in microseconds, ``DECIMAL`` as
``DECIMAL(38, 10)``).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.expr.sql import timestamps
from lancelet.expr.sql.dialect import sql_text
from lancelet.expr.sql.translator import Handler, Translator
from lancelet.expr.sql.values import Value, apply, cast, const

__all__ = ["HANDLERS", "decimal_type", "sql_cast"]


def _cast_handler(t: Translator, node: exp.Cast) -> Value:
    value, target = t.visit(node.this), _arrow_type(t, node.to)
    if timestamps.coarsens(value.type, target):
        if not t.computes:
            raise timestamps.coarsening_error(sql_text(node), t.sql)
        # pylance truncates toward zero (the unsafe cast does too).
        return cast(value, target, node, safe=False)
    return sql_cast(value, target, node)


def sql_cast(value: Value, target: pa.DataType, node: exp.Expression) -> Value:
    """CAST as SQL engines do it where Arrow's safe cast is stricter."""
    source = value.type
    if value.const is not None and timestamps.casts_text(source, target, value.const):
        return const(timestamps.cast_text(value.const, target))
    if pa.types.is_integer(target) and pa.types.is_floating(source):
        # SQL truncates toward zero; Arrow's safe cast refuses fractional values.
        value = apply(pc.trunc, [value], node)
    elif pa.types.is_integer(target) and pa.types.is_decimal(source):
        # Dropping the scale unsafely truncates, and cannot overflow.
        value = cast(value, decimal_type(source.precision, 0), node, safe=False)
    elif pa.types.is_floating(target) and pa.types.is_integer(source):
        # Integer to float is lossy by nature; Arrow's safe cast refuses beyond 2**24 or 2**53.
        return cast(value, target, node, safe=False)
    elif pa.types.is_decimal(target) and pa.types.is_integer(source):
        # Arrow casts integers only to decimals with room for any 64-bit value; the second,
        # narrowing cast then checks that the actual values fit.
        value = cast(value, decimal_type(20 + target.scale, target.scale), node)
    return cast(value, target, node)


def decimal_type(precision: int, scale: int) -> pa.DataType:
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


_SQL_TYPES: dict[Any, pa.DataType] = {
    exp.DataType.Type.TINYINT: pa.int8(),
    exp.DataType.Type.SMALLINT: pa.int16(),
    exp.DataType.Type.INT: pa.int32(),
    exp.DataType.Type.BIGINT: pa.int64(),
    exp.DataType.Type.UTINYINT: pa.uint8(),
    exp.DataType.Type.USMALLINT: pa.uint16(),
    exp.DataType.Type.UINT: pa.uint32(),
    exp.DataType.Type.UBIGINT: pa.uint64(),
    exp.DataType.Type.FLOAT: pa.float32(),
    exp.DataType.Type.DOUBLE: pa.float64(),
    exp.DataType.Type.VARCHAR: pa.string(),
    exp.DataType.Type.CHAR: pa.string(),
    exp.DataType.Type.NVARCHAR: pa.string(),
    exp.DataType.Type.NCHAR: pa.string(),
    exp.DataType.Type.TEXT: pa.string(),
    exp.DataType.Type.BINARY: pa.binary(),
    exp.DataType.Type.VARBINARY: pa.binary(),
    exp.DataType.Type.BOOLEAN: pa.bool_(),
    exp.DataType.Type.DATE: pa.date32(),
}

_TIMESTAMP_UNITS = {0: "s", 3: "ms", 6: "us", 9: "ns"}


def _arrow_type(t: Translator, sql_type: exp.DataType) -> pa.DataType:
    kind = sql_type.this
    params = [int(p.name) for p in sql_type.expressions if p.name.isdigit()]
    if kind in _SQL_TYPES:
        return _SQL_TYPES[kind]
    if kind in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATETIME):
        # pylance's TIMESTAMP is microsecond precision unless told otherwise.
        precision = params[0] if params else 6
        if precision not in _TIMESTAMP_UNITS:
            raise t.unsupported(sql_type, f"timestamp precision {precision}")
        return pa.timestamp(_TIMESTAMP_UNITS[precision])
    if kind == exp.DataType.Type.DECIMAL:
        # DataFusion's DECIMAL without arguments is DECIMAL(38, 10).
        precision, scale = (params + [38, 10][len(params) :])[:2]
        return decimal_type(precision, scale)
    raise t.unsupported(sql_type, f"cast to {sql_text(sql_type)}")


HANDLERS: dict[type[exp.Expression], Handler] = {exp.Cast: _cast_handler}
