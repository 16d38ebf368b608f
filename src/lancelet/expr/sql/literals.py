"""Literals: numbers typed as DataFusion types them, strings, booleans, NULL, list
literals (``[1.0, 2.0]``) and binary literals (``X'0A0B'``).
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from lancelet.errors import FilterError
from lancelet.expr.sql.dialect import sql_text
from lancelet.expr.sql.translator import Handler, Translator
from lancelet.expr.sql.values import Value, const

__all__ = ["HANDLERS", "number"]


def _literal(t: Translator, node: exp.Literal) -> Value:
    if node.is_string:
        return const(pa.scalar(node.this, pa.string()))
    return const(number(node.this))


def number(text: str) -> pa.Scalar:
    # DataFusion types integer literals as int64, then uint64, then float64.
    try:
        value = int(text)
    except ValueError:
        return pa.scalar(float(text), pa.float64())
    if -(2**63) <= value < 2**63:
        return pa.scalar(value, pa.int64())
    if 0 <= value < 2**64:
        return pa.scalar(value, pa.uint64())
    return pa.scalar(float(value), pa.float64())


def _array(t: Translator, node: exp.Array) -> Value:
    """``[1.0, 2.0]``: a list literal, its items literals of one type, as DataFusion
    takes them (an update casts it to the column's list type)."""
    items = [t.visit(item) for item in node.expressions]
    where = f"{sql_text(node)!r} (in {t.sql!r})"
    if not items:
        raise FilterError(f"{where}: an empty array literal has no type")
    if any(item.const is None for item in items):
        raise FilterError(f"{where}: the items of an array literal must be literals")
    types = sorted({str(item.type) for item in items})
    if len(types) > 1 or pa.types.is_null(items[0].type):
        raise FilterError(f"{where}: Array expressions must have a consistent datatype: {types}")
    values = [item.const.as_py() for item in items if item.const is not None]
    return const(pa.scalar(values, pa.list_(items[0].type)))


def _boolean(t: Translator, node: exp.Boolean) -> Value:
    return const(pa.scalar(bool(node.this)))


def _null(t: Translator, node: exp.Null) -> Value:
    return const(pa.scalar(None))


def _hex_string(t: Translator, node: exp.HexString) -> Value:
    try:
        return const(pa.scalar(bytes.fromhex(node.this), pa.binary()))
    except ValueError:
        raise FilterError(
            f"{sql_text(node)!r} is not a binary literal (filter {t.sql!r})"
        ) from None


HANDLERS: dict[type[exp.Expression], Handler] = {
    exp.Literal: _literal,
    exp.Array: _array,
    exp.Boolean: _boolean,
    exp.Null: _null,
    exp.HexString: _hex_string,
}
