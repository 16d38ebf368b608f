"""A SQL filter string as a predicate tree (:mod:`lancelet.expr.nodes`).

The filter is split at AND, OR, NOT and parentheses.  A part that compares one column
with literals in a shape an index can answer becomes a leaf:

* ``col = lit`` -> Equals; ``col <> lit`` -> Not(Equals)
* ``col <, <=, >, >= lit`` -> Range; ``col BETWEEN a AND b`` -> Range (both bounds
  inclusive, reversed bounds give an empty Range); ``NOT BETWEEN`` -> Not(Range)
* ``col IN (lits)`` -> IsIn; ``col IS NULL`` -> IsNull; ``IS NOT NULL`` -> Not(IsNull)
* ``col LIKE 'abc%'`` (no other ``%``, no ``_``, no backslash, no ESCAPE) -> LikePrefix
* ``array_has_any(col, [lits])`` (and its other spellings) -> HasAny;
  ``array_has_all(col, [lits])`` -> HasAll; ``array_has(col, lit)`` -> HasAny of one

with the literal on either side.  A literal makes a leaf only when the comparison
adopts it into the column's type (:func:`lancelet.expr.filter.exact_literal`): the
leaf then means exactly what the SQL means.  A NULL literal, a float NaN, a literal
that keeps its own type (``int8_col > 1000``, ``int_col = 1.5``), an IN list holding a
NULL or a column whose name (or a struct field name on its path) contains a dot keep
the part Opaque, as does every other construct.

The list functions make a leaf only when the SQL compares the items in the list's
own item type (:func:`lancelet.expr.functions.array_has.needles`: ``array_has_any(f32_list,
[0.1])`` compares in float64 and stays Opaque) and the values are neither empty nor
NULL nor NaN; integers the item type cannot hold are left out of HasAny (no item equals
them), and make array_has_all Opaque.

Opaque parts are regenerated SQL text that :func:`parse_filter` translates to the same
expression as the part had in the whole filter.
"""

from __future__ import annotations

import functools

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from lancelet.expr.filter import (
    exact_literal,
    is_volatile,
    membership,
    node_sql,
    operand,
    parse_filter,
    syntax_tree,
)
from lancelet.expr.json_leaves import getter_subject
from lancelet.expr.nodes import (
    And,
    Contains,
    Equals,
    HasAll,
    HasAny,
    IsIn,
    IsNull,
    LikePrefix,
    Not,
    Opaque,
    Or,
    Predicate,
    Range,
)
from lancelet.file.extensions import ARROW_JSON, is_extension

__all__ = ["predicate_tree"]

# ``lit < col`` reads as ``col > lit``: the operator with its sides swapped.
_MIRRORED: dict[type[exp.Expression], type[exp.Expression]] = {
    exp.EQ: exp.EQ,
    exp.NEQ: exp.NEQ,
    exp.LT: exp.GT,
    exp.LTE: exp.GTE,
    exp.GT: exp.LT,
    exp.GTE: exp.LTE,
}


def predicate_tree(sql: str, schema: pa.Schema) -> Predicate:
    """The predicate tree of the SQL filter ``sql`` over ``schema``'s columns (cached
    like the Arrow expression: the trees are immutable, and parsing costs as much as
    an indexed lookup; filters reading the clock, ``current_date``, are not cached).

    Raises :class:`~lancelet.errors.FilterError` for any filter :func:`parse_filter`
    refuses, with the same message.
    """
    if is_volatile(sql):
        return _predicate_tree(sql, schema)
    return _cached_predicate_tree(sql, schema)


@functools.lru_cache(maxsize=256)
def _cached_predicate_tree(sql: str, schema: pa.Schema) -> Predicate:
    return _predicate_tree(sql, schema)


def _predicate_tree(sql: str, schema: pa.Schema) -> Predicate:
    parse_filter(sql, schema)
    return _Splitter(sql, schema).visit(syntax_tree(sql))


class _Splitter:
    def __init__(self, sql: str, schema: pa.Schema) -> None:
        self.sql = sql
        self.schema = schema
        # Leaf subjects that are JSON getter calls, by leaf column name: their types.
        self.getters: dict[str, pa.DataType] = {}

    def field_type(self, path: tuple[str, ...]) -> pa.DataType:
        if len(path) == 1 and path[0] in self.getters:
            return self.getters[path[0]]
        return _field_type(self.schema, path)

    def visit(self, node: exp.Expression) -> Predicate:
        if isinstance(node, exp.Paren):
            return self.visit(node.this)
        if isinstance(node, (exp.And, exp.Or)):
            children = tuple(self.visit(n) for n in _flatten(node, type(node)))
            return And(children) if isinstance(node, exp.And) else Or(children)
        if isinstance(node, exp.Not):
            return Not(self.visit(node.this))
        leaf = self.leaf(node)
        return leaf if leaf is not None else Opaque(node_sql(node))

    def leaf(self, node: exp.Expression) -> Predicate | None:
        if isinstance(node, tuple(_MIRRORED)):
            return self.comparison(node)
        if isinstance(node, exp.Between) and not node.args.get("symmetric"):
            return self.between(node)
        if isinstance(node, exp.In):
            return self.is_in(node)
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            path = self.column(node.this)
            return None if path is None else IsNull(_dotted(path))
        if type(node) is exp.Like:
            prefix = self.like_prefix(node)
            if prefix is None:
                return None
            # sqlglot marks NOT LIKE with a flag rather than a NOT node.
            return Not(prefix) if node.args.get("negate") else prefix
        if isinstance(node, exp.Contains):
            return self.contains(node)
        return self.has(node)

    def column(self, node: exp.Expression) -> tuple[str, ...] | None:
        """The resolved path of ``node`` when it names a column (or struct field) whose
        dotted name cannot be misread; or the leaf name of a JSON getter call."""
        getter = getter_subject(node, self.sql, self.schema)
        if getter is not None:
            self.getters[getter[0]] = getter[1]
            return (getter[0],)
        if not isinstance(node, (exp.Column, exp.Dot)):
            return None
        path = operand(node, self.sql, self.schema).path
        if path is None or any("." in name for name in path):
            return None
        return path

    def literal(self, node: exp.Expression, path: tuple[str, ...]) -> pa.Scalar | None:
        """``node``'s value in the column's type, when the comparison adopts it exactly."""
        if isinstance(node, (exp.Column, exp.Dot)):
            return None
        const = operand(node, self.sql, self.schema).const
        if const is None:
            return None
        # An extension column (arrow.uuid) compares as its storage.
        target = _storage_type(self.field_type(path))
        value = exact_literal(const, target, node)
        if value is None and pa.types.is_fixed_size_binary(target):
            value = _fixed_size_bytes(const, target)
        if value is None or _is_nan(value):
            return None
        return value

    def comparison(self, node: exp.Expression) -> Predicate | None:
        kind: type[exp.Expression] = type(node)
        subject, other = node.this, node.expression
        path = self.column(subject)
        if path is None:
            kind, subject, other = _MIRRORED[kind], other, subject
            path = self.column(subject)
        if path is None:
            return None
        value = self.literal(other, path)
        if value is None:
            return None
        column = _dotted(path)
        if kind is exp.EQ:
            return Equals(column, value)
        if kind is exp.NEQ:
            return Not(Equals(column, value))
        if kind in (exp.GT, exp.GTE):
            return Range(column, low=value, low_inclusive=kind is exp.GTE)
        return Range(column, high=value, high_inclusive=kind is exp.LTE)

    def between(self, node: exp.Between) -> Predicate | None:
        path = self.column(node.this)
        if path is None:
            return None
        low = self.literal(node.args["low"], path)
        high = self.literal(node.args["high"], path)
        if low is None or high is None:
            return None
        return Range(_dotted(path), low=low, high=high)

    def is_in(self, node: exp.In) -> Predicate | None:
        if any(node.args.get(key) for key in ("query", "unnest", "field")):
            return None
        path = self.column(node.this)
        if path is None or not node.expressions:
            return None
        values = [self.literal(item, path) for item in node.expressions]
        known = [v for v in values if v is not None]
        if len(known) < len(values):
            # Includes a NULL in the list: x IN (1, NULL) is NULL, not FALSE, for x <> 1.
            return None
        array = pa.array(known, _storage_type(self.field_type(path)))
        return IsIn(_dotted(path), pc.unique(array))

    def _text_against_string_column(self, node: exp.Expression) -> tuple[str, str] | None:
        """(column, text) when ``node`` applies a string constant to a string column."""
        path = self.column(node.this)
        if path is None:
            return None
        dtype = self.field_type(path)
        if not (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
            return None
        text = operand(node.expression, self.sql, self.schema).const
        if text is None or not text.is_valid or not pa.types.is_string(text.type):
            return None
        return _dotted(path), text.as_py()

    def like_prefix(self, node: exp.Like) -> LikePrefix | None:
        found = self._text_against_string_column(node)
        if found is None:
            return None
        column, text = found
        prefix = text[:-1]
        # A backslash escapes the next character in Arrow's (and DataFusion's) LIKE.
        if not text.endswith("%") or any(c in prefix for c in "%_\\"):
            return None
        return LikePrefix(column, prefix)

    def contains(self, node: exp.Contains) -> Contains | None:
        found = self._text_against_string_column(node)
        return None if found is None else Contains(*found)

    def has(self, node: exp.Expression) -> HasAny | HasAll | None:
        call = membership(node, self.sql, self.schema)
        if call is None or call.needles is None or call.lists.path is None:
            return None
        if any("." in name for name in call.lists.path):
            return None
        values, item_type = call.needles.values, call.lists.type.value_type
        if values.type != item_type or not len(values) or values.null_count:
            return None
        if pa.types.is_floating(item_type) and pc.any(pc.is_nan(values)).as_py():
            return None
        column, values = _dotted(call.lists.path), pc.unique(values)
        if call.mode == "all":
            return None if call.needles.unmatchable else HasAll(column, values)
        return HasAny(column, values)


def _flatten(node: exp.Expression, kind: type[exp.Expression]) -> list[exp.Expression]:
    """The operands of a chain of one associative operator, parentheses included."""
    out: list[exp.Expression] = []
    stack = [node]
    while stack:
        current = stack.pop()
        inner = current
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if type(inner) is kind:
            stack.extend([inner.expression, inner.this])
        else:
            out.append(current)
    return out


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(path)


def _field_type(schema: pa.Schema, path: tuple[str, ...]) -> pa.DataType:
    dtype: pa.DataType = schema.field(path[0]).type
    for name in path[1:]:
        dtype = dtype.field(name).type
    return dtype


def _is_nan(value: pa.Scalar) -> bool:
    if not pa.types.is_floating(value.type):
        return False
    number: float = value.as_py()
    return number != number


def _storage_type(dtype: pa.DataType) -> pa.DataType:
    """The type the filter compares a column's values as: an extension column's
    storage (JSON excepted), as :mod:`lancelet.expr.filter` reads it."""
    if is_extension(dtype) and dtype.extension_name != ARROW_JSON:
        return dtype.storage_type
    return dtype


def _fixed_size_bytes(const: pa.Scalar, target: pa.FixedSizeBinaryType) -> pa.Scalar | None:
    """A binary literal (``X'...'``) of exactly the column's width, as its value: the
    filter compares the bytes, so the leaf means the same.  Another width matches no
    row and stays Opaque, for the filter to say so."""
    if not const.is_valid or not (
        pa.types.is_binary(const.type) or pa.types.is_large_binary(const.type)
    ):
        return None
    data = const.as_py()
    return pa.scalar(data, target) if len(data) == target.byte_width else None
