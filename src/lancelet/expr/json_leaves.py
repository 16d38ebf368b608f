"""Leaves of the predicate tree over a JSON column's values: ``json_get_int(col,
'key')`` and its siblings, which a JSON index on path ``key`` answers
(:mod:`lancelet.index.json_index`).

Such a call is a leaf's subject as a column is: the leaf names it by the text
:func:`getter_column` gives (``json_get_int(j, 'x')``), and its
literals are in the function's result type.  A call whose column is no JSON column,
whose key is no string literal, or whose name a real column has, is no leaf subject.
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from lancelet.expr.filter import operand
from lancelet.file.extensions import ARROW_JSON, is_extension

__all__ = ["GETTERS", "getter_column", "getter_subject"]

# The functions whose calls an index answers, and the value type each reads.
GETTERS: dict[str, pa.DataType] = {
    "json_get_int": pa.int64(),
    "json_get_float": pa.float64(),
    "json_get_bool": pa.bool_(),
    "json_get_string": pa.string(),
}


def getter_column(function: str, column: str, key: str) -> str:
    """The name the predicate tree gives a ``function(column, 'key')`` call's value."""
    return f"{function}({column}, {key!r})"


def getter_subject(
    node: exp.Expression, sql: str, schema: pa.Schema
) -> tuple[str, pa.DataType] | None:
    """The leaf column name and value type of a ``json_get_*(column, 'key')`` call."""
    if not isinstance(node, exp.Anonymous):
        return None
    function = str(node.name).lower()
    dtype = GETTERS.get(function)
    if dtype is None or len(node.expressions) != 2:
        return None
    subject, key = node.expressions
    if not (isinstance(key, exp.Literal) and key.is_string):
        return None
    path = operand(subject, sql, schema).path
    if path is None or any("." in name for name in path):
        return None
    column_type = _type_at(schema, path)
    if not (is_extension(column_type) and column_type.extension_name == ARROW_JSON):
        return None
    name = getter_column(function, ".".join(path), str(key.this))
    return None if schema.get_field_index(name) >= 0 else (name, dtype)


def _type_at(schema: pa.Schema, path: tuple[str, ...]) -> pa.DataType:
    dtype: pa.DataType = schema.field(path[0]).type
    for name in path[1:]:
        dtype = dtype.field(name).type
    return dtype
