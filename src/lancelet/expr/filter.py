"""SQL filter strings, as ``to_table(filter=...)`` takes them, translated to Arrow expressions.

pylance hands filter strings to DataFusion.  Here sqlglot parses them and the syntax tree
is translated, node class by node class, into a :class:`pyarrow.compute.Expression` that
``pyarrow.Table.filter`` and the dataset scanner evaluate vectorized.

Typing follows DataFusion, as pylance exhibits it, where pyarrow's defaults differ:

* A literal compared with a column takes the column's type when it can do so exactly, so
  ``int8_col = 5`` compares int8 values while ``int8_col > 1000`` still works (in int64).
  Float literals are rounded to a float32 column's precision, so ``f32 = 0.1`` matches.
* Arithmetic on numbers is typed and computed as :mod:`lancelet.expr.sql.types`
  describes (decimal precisions, float16, uint64 with signed integers).
* Strings compared with dates or timestamps are parsed as dates or timestamps; time
  zones, timestamp literals and units as :mod:`lancelet.expr.sql.timestamps` describes.
* Floats compare in IEEE 754's total order, as DataFusion's do: ``-NaN`` is below every
  number and ``NaN`` above, ``-0.0`` is below ``0.0`` except when compared with a
  constant.
* AND, OR, NOT, IN and comparisons use SQL's three-valued logic.  A filter drops the rows
  where the predicate is NULL, as a ``WHERE`` clause does.

Identifiers may be quoted with backticks or double quotes.  pylance reads a double-quoted
word as a string literal (``s = "apple"``); a double-quoted word that names no column is
read that way here too.  Unquoted names that match no column exactly may match one column
ignoring case, as pylance allows.
"""

from __future__ import annotations

import decimal
import functools
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp, generator, parser, tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokenizer_core import Token, TokenType

from lancelet.errors import FilterError
from lancelet.expr.functions import arguments as sql_functions
from lancelet.expr.functions import array_has
from lancelet.expr.functions import case_mapping as sql_case
from lancelet.expr.functions import json as json_functions
from lancelet.expr.sql import catalog as sql_catalog
from lancelet.expr.sql import kernels
from lancelet.expr.sql import timestamps as sql_time
from lancelet.expr.sql import types as sql_types
from lancelet.file.extensions import ARROW_JSON, is_extension

__all__ = [
    "Membership",
    "Operand",
    "exact_literal",
    "is_volatile",
    "membership",
    "node_sql",
    "operand",
    "parse_filter",
    "parse_value",
    "referenced_columns",
    "syntax_tree",
    "to_expression",
    "value_nullable",
]


_TYPED_LITERAL_TOKENS = frozenset({TokenType.TIMESTAMP, TokenType.DATE, TokenType.DATETIME})


class _FilterDialect(Dialect):
    """Generic SQL in which backticks and double quotes both delimit identifiers."""

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS: ClassVar[list[str | tuple[str, str]]] = ['"', "`"]
        # Binary literals, X'0A0B'.
        HEX_STRINGS: ClassVar[list[str | tuple[str, str]]] = [("X'", "'"), ("x'", "'")]

        def tokenize(self, sql: str) -> list[Token]:
            found = super().tokenize(sql)
            # DataFusion reads TIMESTAMP "2021-01-02 00:00:00" (and DATE "...") as the
            # typed literal it reads with single quotes.
            for before, token in itertools.pairwise(found):
                typed = before.token_type in _TYPED_LITERAL_TOKENS
                if typed and token.token_type == TokenType.IDENTIFIER:
                    token.token_type = TokenType.STRING
            return found

    class Parser(parser.Parser):
        # sqlglot reads these names as the functions DataFusion spells array_has_all,
        # array_has_any and make_array; DataFusion does not know them, so they stay
        # unknown functions here too.
        # Other names (pylance's functions, and those it does not know) are plain calls
        # of the name, translated or refused by name in _anonymous.
        FUNCTIONS: ClassVar[dict[str, Any]] = {
            name: build
            for name, build in parser.Parser.FUNCTIONS.items()
            if name not in ("ARRAY", "ARRAY_CONTAINS_ALL", "ARRAY_OVERLAPS")
            and name.lower() in sql_catalog.SQLGLOT_CALLS
        }
        # DataFusion's functions that sqlglot reads its own way are plain calls of the name.
        FUNCTION_PARSERS: ClassVar[dict[str, Callable[..., Any]]] = {
            name: parse
            for name, parse in parser.Parser.FUNCTION_PARSERS.items()
            if name not in sql_catalog.PLAIN_CALLS
        }

    class Generator(generator.Generator):
        # Spellings that parse back to the same tree (sqlglot's defaults, ARRAY(1) and
        # l @> ARRAY(1), do not).
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **generator.Generator.TRANSFORMS,
            exp.Array: lambda self, e: f"[{self.expressions(e, flat=True)}]",
            exp.ArrayContains: lambda self, e: self.func("ARRAY_HAS", e.this, e.expression),
            exp.ArrayContainsAll: lambda self, e: self.func("ARRAY_HAS_ALL", e.this, e.expression),
        }


def parse_filter(sql: str, schema: pa.Schema) -> pc.Expression:
    """Translate a SQL predicate over ``schema``'s columns into an Arrow expression.

    Raises :class:`FilterError` when ``sql`` does not parse, names a column ``schema``
    lacks, uses a construct this module does not translate, or is not boolean.
    """
    expr, dtype, _ = parse_value(sql, schema)
    if not pa.types.is_boolean(dtype):
        raise FilterError(f"filter {sql!r} does not return a boolean (it returns {dtype})")
    return expr


def parse_value(
    sql: str, schema: pa.Schema, *, computes: bool = False
) -> tuple[pc.Expression, pa.DataType, frozenset[str]]:
    """A SQL value expression (``k * 2``, ``lower(s)``): the Arrow expression, its type,
    and the top-level columns it reads.

    ``computes``: the expression computes a column (a projection, an update, a new
    column) rather than a filter.  pylance types those differently: a literal meeting a
    column takes the column's type in the places :func:`sql_types.coerced_literals`
    lists (``int8_col + 100`` is int8; a literal that does not fit is an error), where
    a filter widens.  Where pylance's int8 would wrap around, lancelet raises instead of
    returning the wrapped value.

    Cached: a scan asks for the expression and its columns separately, and a delete
    scans fragment by fragment with the same filter.  Filters that read the clock
    (``current_date``) are translated anew each time.
    """
    if is_volatile(sql):
        return _parse_value(sql, schema, computes)
    return _cached_parse_value(sql, schema, computes)


@functools.lru_cache(maxsize=256)
def value_nullable(sql: str, schema: pa.Schema) -> bool:
    """Whether the SQL value ``sql`` may be NULL, as pylance records it for a projected or
    added column (:func:`sql_types.nullable`)."""
    translator = _Translator(sql, schema, computes=True)
    return sql_types.nullable(_parse(sql), translator.column_nullable)


def is_volatile(sql: str) -> bool:
    """Whether ``sql`` may read the clock, so that its translation must not be cached."""
    lowered = sql.lower()
    return any(word in lowered for word in sql_catalog.CLOCK_WORDS)


@functools.lru_cache(maxsize=256)
def _cached_parse_value(
    sql: str, schema: pa.Schema, computes: bool
) -> tuple[pc.Expression, pa.DataType, frozenset[str]]:
    return _parse_value(sql, schema, computes)


def _parse_value(
    sql: str, schema: pa.Schema, computes: bool
) -> tuple[pc.Expression, pa.DataType, frozenset[str]]:
    translator = _Translator(sql, schema, computes)
    tree = _parse(sql)
    if computes:
        translator.coerced = sql_types.coerced_literals(tree, translator.column_type)
    value = translator.visit(tree)
    return value.expr, value.type, frozenset(translator.columns)


def to_expression(filter: str | pc.Expression | None, schema: pa.Schema) -> pc.Expression | None:
    """Normalize the ``filter`` argument of a scan: SQL text, an Expression, or nothing."""
    if filter is None:
        return None
    if isinstance(filter, str):
        return parse_filter(filter, schema)
    if isinstance(filter, pc.Expression):
        _check_expression(filter, schema)
        return filter
    raise TypeError(f"filter must be a SQL string or a pyarrow Expression, not {filter!r}")


def referenced_columns(sql: str, schema: pa.Schema | None = None) -> set[str]:
    """The top-level columns ``sql`` reads, e.g. ``{"s"}`` for ``s.a > 1``.

    Without ``schema`` the names are as written.  With it they are resolved the way
    :func:`parse_filter` resolves them (case, double-quoted strings), and the filter is
    validated.
    """
    if schema is not None:
        return set(parse_value(sql, schema)[2])
    tree = _parse(sql)
    return {column.parts[0].name for column in tree.find_all(exp.Column)}


# --- the parts of a filter, for readers of its structure (lancelet.expr) ----------------


def syntax_tree(sql: str) -> exp.Expression:
    """The sqlglot tree of ``sql`` as :func:`parse_filter` parses it."""
    return _parse(sql)


def node_sql(node: exp.Expression) -> str:
    """SQL text for a sub-tree of :func:`syntax_tree` that parses back to the same tree."""
    return _sql(node)


@dataclass(frozen=True)
class Operand:
    """A value sub-expression of a filter, typed as :func:`parse_filter` types it.

    ``path``: the resolved column (and struct field) names when the sub-expression
    names a column; ``const``: its value when it is known while parsing.
    """

    type: pa.DataType
    path: tuple[str, ...] | None
    const: pa.Scalar | None


def operand(node: exp.Expression, sql: str, schema: pa.Schema) -> Operand:
    """Translate the value sub-expression ``node`` of the filter ``sql``."""
    value = _Translator(sql, schema).visit(node)
    return Operand(value.type, value.path, value.const)


def exact_literal(const: pa.Scalar, target: pa.DataType, node: exp.Expression) -> pa.Scalar | None:
    """``const`` in the type ``target`` as a comparison with a ``target`` column adopts
    it (floats rounded to the column's precision, strings parsed as dates...); None when
    the comparison would keep another type (``int8_col > 1000``) or ``const`` is NULL."""
    adopted = _adopt(_const(const), target, node).const
    if adopted is None or not adopted.is_valid or adopted.type != target:
        return None
    return adopted


@dataclass(frozen=True)
class Membership:
    """A call of ``array_has_any``, ``array_has_all`` or ``array_has`` (``mode`` "any"
    of its one value) as :func:`parse_filter` reads it: the list, and the values typed
    for it (:func:`lancelet.expr.functions.array_has.needles`); ``needles`` is None when the
    call is NULL on every row (a NULL array or value)."""

    lists: Operand
    mode: array_has.Mode
    needles: array_has.Needles | None


def membership(node: exp.Expression, sql: str, schema: pa.Schema) -> Membership | None:
    """``node`` of the filter ``sql`` as a :class:`Membership`; None for other nodes."""
    call = _membership_call(node)
    if call is None:
        return None
    subject, mode, needles = _read_membership(_Translator(sql, schema), node, *call)
    return Membership(Operand(subject.type, subject.path, subject.const), mode, needles)


def _check_expression(expression: pc.Expression, schema: pa.Schema) -> None:
    # Binding against an empty table reports missing fields and non-boolean results for
    # the cost of planning a zero-row scan.
    try:
        schema.empty_table().filter(expression)
    except (pa.ArrowException, TypeError) as e:
        raise FilterError(f"filter {expression} does not apply to this dataset: {e}") from e


def _parse(sql: str) -> exp.Expression:
    if not sql.strip():
        raise FilterError("the filter is empty")
    try:
        tree = sqlglot.parse_one(sql, read=_FilterDialect, into=exp.Condition)
    except ParseError as e:
        raise FilterError(f"cannot parse filter {sql!r}: {_describe(e)}") from None
    except TokenError as e:
        raise FilterError(f"cannot parse filter {sql!r}: {e}") from None
    if not isinstance(tree, exp.Expression) or tree.key == "block":
        raise FilterError(f"cannot parse filter {sql!r}: expected a single boolean expression")
    return tree


def _describe(error: ParseError) -> str:
    if not error.errors:
        return str(error)
    first = error.errors[0]
    return f"{first['description']} at column {first['col']} (near {first['highlight']!r})"


@dataclass(frozen=True)
class _Value:
    """A translated sub-expression and its Arrow type.

    ``const`` holds the value of sub-expressions known while parsing.  It lets a literal
    take the type of the column it is compared with, and makes errors such as a malformed
    date literal surface while parsing rather than while scanning.
    """

    expr: pc.Expression
    type: pa.DataType
    const: pa.Scalar | None = None
    # A column (or struct field) as named, not computed from one.
    is_column: bool = False
    # The resolved names of that column and struct fields, when is_column.
    path: tuple[str, ...] | None = None


def _const(value: pa.Scalar) -> _Value:
    return _Value(pc.scalar(value), value.type, value)


_NULL_BOOL = _const(pa.scalar(None, pa.bool_()))
_FALSE = _const(pa.scalar(False))
_TRUE = _const(pa.scalar(True))


def _apply(
    fn: Callable[..., Any], args: Sequence[_Value], node: exp.Expression, **options: Any
) -> _Value:
    """Apply a compute function to translated arguments, folding constants.

    ``fn`` accepts arrays, scalars and expressions alike (pyarrow's compute wrappers do).
    """
    try:
        if all(a.const is not None for a in args):
            return _const(fn(*[a.const for a in args], **options))
        # The kernel applied to empty arrays gives the type pyarrow's expression binder will
        # infer, and rejects mismatched types now rather than at scan time.
        probe = fn(*[pa.array([], a.type) for a in args], **options)
        return _Value(fn(*_operands(args), **options), probe.type)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        types = ", ".join(str(a.type) for a in args)
        raise FilterError(f"{_sql(node)!r} does not accept arguments of type ({types})") from e
    except pa.ArrowInvalid as e:
        raise FilterError(f"cannot evaluate {_sql(node)!r}: {e}") from e


def _operands(args: Sequence[_Value]) -> list[pc.Expression]:
    # When binding, Arrow casts a literal to the type of the other argument, unlike kernel
    # dispatch on arrays (int8_col * 100 would wrap around in int8).  A literal wrapped in
    # a cast is no longer a literal to the binder, so ordinary type promotion applies.
    variable_types = {a.type for a in args if a.const is None}
    return [
        a.expr.cast(a.type) if _is_literal_to_guard(a, variable_types) else a.expr for a in args
    ]


def _is_literal_to_guard(value: _Value, variable_types: set[pa.DataType]) -> bool:
    # An untyped NULL literal needs no guard: any type the binder gives it is right.
    if value.const is None or pa.types.is_null(value.type):
        return False
    return bool(variable_types - {value.type})


def _sql(node: exp.Expression) -> str:
    return node.sql(dialect=_FilterDialect)


def _cast(value: _Value, target: pa.DataType, node: exp.Expression, *, safe: bool = True) -> _Value:
    return _apply(lambda x: x.cast(target, safe=safe), [value], node)


class _Translator:
    def __init__(self, sql: str, schema: pa.Schema, computes: bool = False) -> None:
        self.sql = sql
        self.schema = schema
        self.computes = computes
        self.columns: set[str] = set()
        # The literals pylance gives a column's type (computed values only).
        self.coerced: dict[int, pa.DataType] = {}

    def visit(self, node: exp.Expression) -> _Value:
        handler = _HANDLERS.get(type(node))
        if handler is None:
            raise FilterError(
                f"unsupported SQL construct {_construct_name(node)} in filter {self.sql!r}"
            )
        value = handler(self, node)
        if id(node) in self.coerced:
            value = _coerce_literal(self, value, self.coerced[id(node)], node)
        # sqlglot marks NOT LIKE / NOT ILIKE with a flag instead of wrapping them in NOT.
        if node.args.get("negate"):
            value = _apply(pc.invert, [value], node)
        return value

    def column_type(self, node: exp.Expression) -> pa.DataType | None:
        """The type of the column (or struct field) ``node`` names, else None."""
        if not isinstance(node, (exp.Column, exp.Dot)):
            return None
        value = self.visit(node)
        return value.type if value.is_column else None

    def column_nullable(self, node: exp.Expression) -> bool | None:
        """Whether the column or struct field ``node`` names may be NULL (it may when a
        struct on its path may), else None."""
        if isinstance(node, exp.Bracket):  # struct['field']
            parent, key = self.column_nullable(node.this), self.visit(node.expressions[0])
            struct = self.visit(node.this).type
            if parent is None or key.const is None or not pa.types.is_struct(struct):
                return None
            return parent or struct.field(key.const.as_py()).nullable
        path = self.visit(node).path if isinstance(node, (exp.Column, exp.Dot)) else None
        return None if path is None else sql_types.path_nullable(self.schema, path)

    def unsupported(self, node: exp.Expression, what: str) -> FilterError:
        return FilterError(f"unsupported SQL construct {what} in filter {self.sql!r}: {_sql(node)}")

    def resolve(self, path: Sequence[object], node: exp.Expression) -> _Value:
        """Resolve ``col`` or ``col.field.subfield`` against the schema."""
        parts = [p for p in path if isinstance(p, exp.Identifier)]
        if len(parts) != len(path):
            raise self.unsupported(node, "a column reference that is not a plain name")
        field = _find_field(self.schema, parts[0])
        if field is None:
            if len(parts) == 1 and self._quote(parts[0]) == '"':
                # pylance reads "word" as a string literal; keep that reading for words
                # that name no column.
                return _const(pa.scalar(parts[0].name, pa.string()))
            names = ", ".join(self.schema.names)
            column = _sql(node)
            raise FilterError(
                f"No field named {column}: unknown column {column!r} in filter {self.sql!r}; "
                f"the columns are: {names}"
            )
        self.columns.add(field.name)
        resolved = [field.name]
        for part in parts[1:]:
            field = self._child(field, part, resolved)
            resolved.append(field.name)
        expression, dtype = pc.field(*resolved), field.type
        if is_extension(dtype) and dtype.extension_name != ARROW_JSON:
            # pylance's filters see an extension column as its storage (uuid as
            # FixedSizeBinary(16), an image URI as a string); JSON stays JSON.
            expression, dtype = expression.cast(dtype.storage_type), dtype.storage_type
        return _Value(expression, dtype, is_column=True, path=tuple(resolved))

    def _child(self, field: pa.Field, part: exp.Identifier, path: list[str]) -> pa.Field:
        dotted = ".".join(path)
        if not pa.types.is_struct(field.type):
            raise FilterError(
                f"column {dotted!r} is not a struct, so it has no field {part.name!r} "
                f"(filter {self.sql!r})"
            )
        child = _find_field(field.type, part)
        if child is None:
            names = ", ".join(field.type.field(i).name for i in range(len(field.type)))
            raise FilterError(
                f"struct column {dotted!r} has no field {part.name!r} (filter {self.sql!r}); "
                f"its fields are: {names}"
            )
        return child

    def _quote(self, identifier: exp.Expression) -> str:
        """The character that quoted ``identifier`` in the SQL text, or ``""``."""
        if not identifier.args.get("quoted"):
            return ""
        start = identifier.meta.get("start")
        if isinstance(start, int) and 0 <= start < len(self.sql):
            return self.sql[start]
        return "`"


def _find_field(
    container: pa.Schema | pa.StructType, identifier: exp.Expression
) -> pa.Field | None:
    fields = [container.field(i) for i in range(len(container))]
    name = identifier.name
    for field in fields:
        if field.name == name:
            return field
    if identifier.args.get("quoted"):
        return None
    folded = [f for f in fields if f.name.lower() == name.lower()]
    if len(folded) > 1:
        choices = ", ".join(f.name for f in folded)
        raise FilterError(f"column name {name!r} is ambiguous; quote one of: {choices}")
    return folded[0] if folded else None


def _construct_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return f"function {node.name}()"
    if isinstance(node, exp.TryCast):
        return "TRY_CAST"
    if isinstance(node, exp.Func):
        return f"function {node.sql_name()}()"
    return node.key.upper()


# --- type coercion ---------------------------------------------------------------------


def _family(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_temporal(t):
        return "time"
    return str(t)


def _adopt(literal: _Value, target: pa.DataType, node: exp.Expression) -> _Value:
    """Give a literal the type of what it is compared with, when that keeps its value."""
    value = literal.const
    if value is None or value.type == target:
        return literal
    if pa.types.is_null(value.type):
        return _const(pa.scalar(None, target))
    if pa.types.is_timestamp(target):
        return _adopt_time(literal, target, node)
    source, dest = _family(value.type), _family(target)
    if source == "string" and dest == "time":
        return _cast(literal, target, node)
    if source != dest:
        return literal
    if pa.types.is_decimal(target) and pa.types.is_integer(value.type):
        # Arrow casts integers only to decimals with room for any int64 value.
        try:
            return _const(pa.scalar(decimal.Decimal(value.as_py()), target))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return literal
    if pa.types.is_floating(target):
        # SQL engines round the literal to the column's precision: f32 = 0.1 matches.
        return _const(value.cast(target, safe=False))
    try:
        cast = value.cast(target)
        exact = cast.cast(value.type) == value
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return literal
    return _const(cast) if exact else literal


def _adopt_time(literal: _Value, target: pa.TimestampType, node: exp.Expression) -> _Value:
    """A constant compared with a timestamp, as :func:`sql_time.adopt` reads it."""
    assert literal.const is not None
    if pa.types.is_timestamp(literal.type) and literal.type.tz is None and target.tz:
        sql_time.check_zone_reading(node, target.tz)
    adopted = sql_time.adopt(literal.const, target)
    return literal if adopted is None else _const(adopted)


def _align_times(left: _Value, right: _Value, node: exp.Expression) -> tuple[_Value, _Value]:
    """Two timestamps as pylance compares them: one without a zone read in the other's
    zone; of different units, refused (pylance truncates to the coarser)."""
    values = [left, right]
    for i, (value, other) in enumerate(((left, right), (right, left))):
        if value.type.tz is None and other.type.tz is not None:
            sql_time.check_zone_reading(node, other.type.tz)
            zoned = pa.timestamp(value.type.unit, other.type.tz)
            values[i] = _Value(sql_time.localize(value.expr, other.type.tz), zoned)
    if left.type.unit != right.type.unit:
        constant = left.const if left.const is not None else right.const
        raise sql_time.unit_error(_sql(node), left.type, right.type, constant)
    return values[0], values[1]


def _coerce(left: _Value, right: _Value, node: exp.Expression) -> tuple[_Value, _Value]:
    if pa.types.is_null(left.type) and pa.types.is_null(right.type):
        # No kernel compares two untyped NULLs; the answer is NULL whatever the type.
        return _NULL_BOOL, _NULL_BOOL
    if left.const is not None and right.const is None:
        left = _adopt(left, right.type, node)
    elif right.const is not None and left.const is None:
        right = _adopt(right, left.type, node)
    # DataFusion compares a string column with a date by parsing the strings.
    if _family(left.type) == "string" and _family(right.type) == "time":
        left = _cast(left, right.type, node)
    elif _family(right.type) == "string" and _family(left.type) == "time":
        right = _cast(right, left.type, node)
    if pa.types.is_timestamp(left.type) and pa.types.is_timestamp(right.type):
        left, right = _align_times(left, right, node)
    return left, right


def _float_operands(left: _Value, right: _Value, node: exp.Expression) -> tuple[_Value, _Value]:
    """Convert the integer side of an integer/float pair to the float type.

    Arrow would too, but with a safe cast that refuses integers beyond 2**24 (float32) or
    2**53 (float64); SQL engines just round.
    """
    if pa.types.is_integer(left.type) and pa.types.is_floating(right.type):
        left = _cast(left, right.type, node, safe=False)
    elif pa.types.is_floating(left.type) and pa.types.is_integer(right.type):
        right = _cast(right, left.type, node, safe=False)
    return left, right


def _compare(fn: Callable[..., Any], left: _Value, right: _Value, node: exp.Expression) -> _Value:
    left, right = _float_operands(*_coerce(left, right, node), node)
    if not (pa.types.is_floating(left.type) and pa.types.is_floating(right.type)):
        return _apply(fn, [left, right], node)
    # DataFusion orders floats totally (-NaN first, NaN last, -0.0 before 0.0), except
    # that a constant compares with -0.0 and 0.0 alike.  Arrow's kernels follow IEEE,
    # so both sides become integer keys that sort in the total order.
    wide = left.type if left.type.bit_width >= right.type.bit_width else right.type
    signed_zero = left.const is None and right.const is None
    keys = [
        _order_key(v if v.type == wide else _cast(v, wide, node), signed_zero, node)
        for v in (left, right)
    ]
    return _apply(fn, keys, node)


def _order_key(value: _Value, signed_zero: bool, node: exp.Expression) -> _Value:
    if value.const is not None:
        key = kernels.float_order_key(value.const.as_py(), value.type, signed_zero=signed_zero)
        return _const(key)
    expr = kernels.float_order_key_expr(value.expr, value.type, signed_zero=signed_zero)
    return _Value(expr, kernels.order_key_type(value.type))


# --- node handlers ---------------------------------------------------------------------

_Handler = Callable[[_Translator, Any], _Value]


def _column(t: _Translator, node: exp.Column) -> _Value:
    return t.resolve(node.parts, node)


def _dot(t: _Translator, node: exp.Dot) -> _Value:
    # sqlglot spells a.b.c.d.e as Dot(Column(a.b.c.d), e).
    tail: list[object] = []
    base: object = node
    while isinstance(base, exp.Dot):
        tail.insert(0, base.expression)
        base = base.this
    if isinstance(base, exp.Column):
        return t.resolve([*base.parts, *tail], node)
    if not isinstance(base, exp.Expression) or not all(isinstance(p, exp.Identifier) for p in tail):
        raise t.unsupported(node, "field access on something other than a struct")
    value = t.visit(base)
    for part in tail:
        assert isinstance(part, exp.Identifier)
        value = _struct_field(t, value, part.name, node)
    return value


def _struct_field(t: _Translator, value: _Value, name: str, node: exp.Expression) -> _Value:
    if not pa.types.is_struct(value.type) or value.type.get_field_index(name) < 0:
        raise FilterError(f"{_sql(node)!r}: {value.type} has no field {name!r} ({t.sql!r})")
    index = value.type.get_field_index(name)
    return _Value(pc.struct_field(value.expr, [index]), value.type.field(index).type)


def _bracket(t: _Translator, node: exp.Bracket) -> _Value:
    """``list[i]`` (1-based, negative from the end, NULL when out of range) and
    ``struct['name']``."""
    if len(node.expressions) != 1:
        raise t.unsupported(node, "a subscript with more than one index")
    subject = t.visit(node.this)
    key = t.visit(node.expressions[0])
    if key.const is None:
        raise t.unsupported(node, "a subscript that is not a literal")
    if pa.types.is_struct(subject.type) and _family(key.type) == "string":
        return _struct_field(t, subject, key.const.as_py(), node)
    is_list = pa.types.is_list(subject.type) or pa.types.is_large_list(subject.type)
    if (is_list or pa.types.is_fixed_size_list(subject.type)) and pa.types.is_integer(key.type):
        if subject.const is not None:
            raise t.unsupported(node, "a subscript of a constant")
        index = key.const.as_py()
        if index is None:
            return _const(pa.scalar(None, subject.type.value_type))
        if not -(2**63) <= index < 2**63:
            raise FilterError(f"{_sql(node)!r}: index {index} is out of range ({t.sql!r})")
        expr = kernels.list_item_expr(subject.expr, subject.type, index)
        return _Value(expr, subject.type.value_type)
    raise FilterError(
        f"{_sql(node)!r}: cannot subscript {subject.type} with {key.type} ({t.sql!r})"
    )


def _literal(t: _Translator, node: exp.Literal) -> _Value:
    if node.is_string:
        return _const(pa.scalar(node.this, pa.string()))
    return _const(_number(node.this))


def _number(text: str) -> pa.Scalar:
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


def _array(t: _Translator, node: exp.Array) -> _Value:
    """``[1.0, 2.0]``: a list literal, its items literals of one type, as DataFusion
    takes them (an update casts it to the column's list type)."""
    items = [t.visit(item) for item in node.expressions]
    where = f"{_sql(node)!r} (in {t.sql!r})"
    if not items:
        raise FilterError(f"{where}: an empty array literal has no type")
    if any(item.const is None for item in items):
        raise FilterError(f"{where}: the items of an array literal must be literals")
    types = sorted({str(item.type) for item in items})
    if len(types) > 1 or pa.types.is_null(items[0].type):
        raise FilterError(f"{where}: Array expressions must have a consistent datatype: {types}")
    values = [item.const.as_py() for item in items if item.const is not None]
    return _const(pa.scalar(values, pa.list_(items[0].type)))


def _boolean(t: _Translator, node: exp.Boolean) -> _Value:
    return _const(pa.scalar(bool(node.this)))


def _null(t: _Translator, node: exp.Null) -> _Value:
    return _const(pa.scalar(None))


def _paren(t: _Translator, node: exp.Paren) -> _Value:
    return t.visit(node.this)


def _neg(t: _Translator, node: exp.Neg) -> _Value:
    operand = node.this
    if isinstance(operand, exp.Literal) and not operand.is_string:
        # Folding the sign into the text keeps -9223372036854775808 an int64.
        return _const(_number("-" + operand.this))
    return _apply(pc.negate_checked if t.computes else pc.negate, [t.visit(operand)], node)


def _boolean_operand(value: _Value) -> _Value:
    # Arrow's logical kernels take no null-typed arguments; SQL's bare NULL is a boolean
    # NULL there.
    return _NULL_BOOL if pa.types.is_null(value.type) else value


def _not(t: _Translator, node: exp.Not) -> _Value:
    return _apply(pc.invert, [_boolean_operand(t.visit(node.this))], node)


def _logical(fn: Callable[..., Any]) -> _Handler:
    def handler(t: _Translator, node: exp.Expression) -> _Value:
        operands = [_boolean_operand(t.visit(n)) for n in (node.this, node.expression)]
        return _apply(fn, operands, node)

    return handler


# Arithmetic that raises on overflow, where the plain kernels wrap around.
_CHECKED: dict[Callable[..., Any], Callable[..., Any]] = {
    pc.add: pc.add_checked,
    pc.subtract: pc.subtract_checked,
    pc.multiply: pc.multiply_checked,
    pc.divide: pc.divide_checked,
    pc.negate: pc.negate_checked,
}


def _arithmetic(fn: Callable[..., Any]) -> _Handler:
    def handler(t: _Translator, node: exp.Expression) -> _Value:
        left, right = t.visit(node.this), t.visit(node.expression)
        if fn in _OPERATORS and _is_number(left.type) and _is_number(right.type):
            return _numeric(t, _OPERATORS[fn], left, right, node)
        if t.computes:
            return _apply(_CHECKED.get(fn, fn), _float_operands(left, right, node), node)
        return _apply(fn, _float_operands(left, right, node), node)

    return handler


_OPERATORS = {pc.add: "+", pc.subtract: "-", pc.multiply: "*", pc.divide: "/", pc.remainder: "%"}


def _numeric(t: _Translator, op: str, left: _Value, right: _Value, node: exp.Expression) -> _Value:
    """Arithmetic on two numbers, typed and computed as pylance does it."""
    try:
        arithmetic = sql_types.arithmetic(op, left.type, right.type, checked=t.computes)
    except FilterError as e:
        raise FilterError(f"{_sql(node)!r} (in {t.sql!r}): {e}") from None
    value = _apply(arithmetic.function, [left, right], node)
    return _Value(value.expr, arithmetic.type, value.const)


def _is_number(t: pa.DataType) -> bool:
    return _family(t) == "number"


def _coerce_literal(
    t: _Translator, value: _Value, target: pa.DataType, node: exp.Expression
) -> _Value:
    """A literal in the type of the column it meets, in a computed value, as pylance
    converts it (an error where pylance refuses)."""
    assert value.const is not None
    coerced = sql_types.coerce_literal(value.const, target)
    if coerced is None:
        raise FilterError(
            f"{_sql(node)!r}: the literal {value.const.as_py()!r} does not fit the column's "
            f"type {target} (in {t.sql!r})"
        )
    return _const(coerced)


def _comparison(fn: Callable[..., Any]) -> _Handler:
    def handler(t: _Translator, node: exp.Expression) -> _Value:
        return _compare(fn, t.visit(node.this), t.visit(node.expression), node)

    return handler


def _mod(t: _Translator, node: exp.Mod) -> _Value:
    dividend, divisor = t.visit(node.this), t.visit(node.expression)
    if _is_number(dividend.type) and _is_number(divisor.type):
        return _numeric(t, "%", dividend, divisor, node)
    dividend, divisor = _float_operands(dividend, divisor, node)
    # Truncated remainder, the sign following the dividend, as SQL's % has it.
    remainder = pc.remainder_checked if t.computes else pc.remainder
    return _apply(remainder, [dividend, divisor], node)


def _null_safe_equal(t: _Translator, node: exp.Expression) -> _Value:
    left, right = t.visit(node.this), t.visit(node.expression)
    left_null = _apply(pc.is_null, [left], node)
    right_null = _apply(pc.is_null, [right], node)
    either = _apply(pc.or_kleene, [left_null, right_null], node)
    both = _apply(pc.and_kleene, [left_null, right_null], node)
    return _apply(pc.if_else, [either, both, _compare(pc.equal, left, right, node)], node)


def _null_safe_not_equal(t: _Translator, node: exp.Expression) -> _Value:
    return _apply(pc.invert, [_null_safe_equal(t, node)], node)


def _is(t: _Translator, node: exp.Is) -> _Value:
    subject, target = t.visit(node.this), node.expression
    if isinstance(target, exp.Null):
        return _apply(pc.is_null, [subject], node)
    if isinstance(target, exp.Boolean):
        # x IS TRUE is never NULL: NULL counts as "not true".
        subject = _boolean_operand(subject)
        if not target.this:
            subject = _apply(pc.invert, [subject], node)
        return _apply(pc.coalesce, [subject, _FALSE], node)
    raise t.unsupported(node, "IS with something other than NULL, TRUE or FALSE")


def _between(t: _Translator, node: exp.Between) -> _Value:
    if node.args.get("symmetric"):
        raise t.unsupported(node, "BETWEEN SYMMETRIC")
    subject = t.visit(node.this)
    low, high = t.visit(node.args["low"]), t.visit(node.args["high"])
    sql_time.check_mixed_list(subject.type, [low.type, high.type], _sql(node), "BETWEEN")
    above = _compare(pc.greater_equal, subject, low, node)
    below = _compare(pc.less_equal, subject, high, node)
    return _apply(pc.and_kleene, [above, below], node)


def _in(t: _Translator, node: exp.In) -> _Value:
    if any(node.args.get(key) for key in ("query", "unnest", "field")):
        raise t.unsupported(node, "IN with a subquery")
    subject = t.visit(node.this)
    items = [t.visit(item) for item in node.expressions]
    if not items:
        raise t.unsupported(node, "IN with an empty list")
    sql_time.check_mixed_list(subject.type, [item.type for item in items], _sql(node), "IN")
    if subject.const is None and all(item.const is not None for item in items):
        fast = _in_value_set(subject, items, node)
        if fast is not None:
            return fast
    # A chain of ORed equalities has SQL's NULL semantics for IN by construction.
    result = _compare(pc.equal, subject, items[0], node)
    for item in items[1:]:
        result = _apply(pc.or_kleene, [result, _compare(pc.equal, subject, item, node)], node)
    return result


def _in_value_set(subject: _Value, items: list[_Value], node: exp.Expression) -> _Value | None:
    """``subject IN (literals...)`` as one hash lookup, when every literal fits its type."""
    adopted = [_adopt(item, subject.type, node).const for item in items]
    values = [v for v in adopted if v is not None and v.is_valid]
    if any(v.type != subject.type for v in values):
        return None
    list_has_null = len(values) < len(items)
    if pa.types.is_floating(subject.type) and any(v.as_py() != v.as_py() for v in values):
        return None  # the hash lookup does not tell -NaN from NaN; the total order does
    if pa.types.is_floating(subject.type) and any(v.as_py() == 0 for v in values):
        # The hash lookup tells -0.0 from 0.0; SQL's equality does not.
        values += [pa.scalar(0.0, subject.type), pa.scalar(-0.0, subject.type)]
    value_set = pa.array(values, subject.type)
    hit = _apply(pc.is_in, [subject], node, value_set=value_set, skip_nulls=True)
    # is_in never returns NULL; SQL does when the subject is NULL, or when the list
    # holds a NULL and nothing matched.
    if list_has_null:
        hit = _apply(pc.or_kleene, [hit, _NULL_BOOL], node)
    valid = _apply(pc.is_valid, [subject], node)
    return _apply(pc.if_else, [valid, hit, _NULL_BOOL], node)


def _like(t: _Translator, node: exp.Expression, escape: str | None = None) -> _Value:
    subject, pattern = t.visit(node.this), t.visit(node.expression)
    if pattern.const is None or _family(pattern.type) not in ("string", "null"):
        raise t.unsupported(node, "LIKE with a pattern that is not a string literal")
    if not pattern.const.is_valid:
        return _NULL_BOOL
    text = pattern.const.as_py()
    if escape is not None:
        text = _backslash_escapes(text, escape)
    ignore_case = isinstance(node, exp.ILike)
    return _apply(pc.match_like, [subject], node, pattern=text, ignore_case=ignore_case)


def _like_handler(t: _Translator, node: exp.Expression) -> _Value:
    return _like(t, node)


def _escape(t: _Translator, node: exp.Escape) -> _Value:
    like, escape = node.this, t.visit(node.expression).const
    if not isinstance(like, (exp.Like, exp.ILike)):
        raise t.unsupported(node, "ESCAPE outside LIKE")
    if escape is None or _family(escape.type) != "string" or len(escape.as_py()) != 1:
        raise t.unsupported(node, "ESCAPE with something other than one character")
    value = _like(t, like, escape.as_py())
    if like.args.get("negate"):
        value = _apply(pc.invert, [value], node)
    return value


def _backslash_escapes(pattern: str, escape: str) -> str:
    """Rewrite a LIKE pattern that uses ``escape`` into Arrow's backslash-escaped form."""
    out: list[str] = []
    chars = iter(pattern)
    for char in chars:
        if char == escape:
            out.append("\\" + next(chars, ""))
        elif char == "\\":
            out.append("\\\\")
        else:
            out.append(char)
    return "".join(out)


def _cast_handler(t: _Translator, node: exp.Cast) -> _Value:
    value, target = t.visit(node.this), _arrow_type(t, node.to)
    if sql_time.coarsens(value.type, target):
        if not t.computes:
            raise sql_time.coarsening_error(_sql(node), t.sql)
        # pylance truncates toward zero (the unsafe cast does too).
        return _cast(value, target, node, safe=False)
    return _sql_cast(value, target, node)


def _sql_cast(value: _Value, target: pa.DataType, node: exp.Expression) -> _Value:
    """CAST as SQL engines do it where Arrow's safe cast is stricter."""
    source = value.type
    if value.const is not None and sql_time.casts_text(source, target, value.const):
        return _const(sql_time.cast_text(value.const, target))
    if pa.types.is_integer(target) and pa.types.is_floating(source):
        # SQL truncates toward zero; Arrow's safe cast refuses fractional values.
        value = _apply(pc.trunc, [value], node)
    elif pa.types.is_integer(target) and pa.types.is_decimal(source):
        # Dropping the scale unsafely truncates, and cannot overflow.
        value = _cast(value, _decimal(source.precision, 0), node, safe=False)
    elif pa.types.is_floating(target) and pa.types.is_integer(source):
        # Integer to float is lossy by nature; Arrow's safe cast refuses beyond 2**24 or 2**53.
        return _cast(value, target, node, safe=False)
    elif pa.types.is_decimal(target) and pa.types.is_integer(source):
        # Arrow casts integers only to decimals with room for any 64-bit value; the second,
        # narrowing cast then checks that the actual values fit.
        value = _cast(value, _decimal(20 + target.scale, target.scale), node)
    return _cast(value, target, node)


def _decimal(precision: int, scale: int) -> pa.DataType:
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


def _arrow_type(t: _Translator, sql_type: exp.DataType) -> pa.DataType:
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
        return _decimal(precision, scale)
    raise t.unsupported(sql_type, f"cast to {_sql(sql_type)}")


def _function(fn: Callable[..., Any]) -> _Handler:
    def handler(t: _Translator, node: exp.Expression) -> _Value:
        return _apply(fn, [t.visit(node.this)], node)

    return handler


def _case_mapping(direction: sql_case.Direction) -> _Handler:
    def handler(t: _Translator, node: exp.Expression) -> _Value:
        value = t.visit(node.this)
        return _apply(sql_case.function(direction, value.type), [value], node)

    return handler


def _abs(t: _Translator, node: exp.Abs) -> _Value:
    value = t.visit(node.this)
    half = sql_types.unary("abs", value.type, checked=True)
    return _apply(pc.abs_checked if half is None else half.function, [value], node)


def _concat(a: Any, b: Any) -> Any:
    return pc.binary_join_element_wise(a, b, "")


# --- list membership: array_has_any, array_has_all, array_has ---------------------------

# DataFusion's names that sqlglot leaves as unknown functions (it reads array_has,
# array_contains and array_has_all itself), and what each asks.
_MEMBERSHIP_NAMES = {
    "array_has_any": "any",
    "list_has_any": "any",
    "arrays_overlap": "any",
    "list_has_all": "all",
    "list_has": "value",
    "list_contains": "value",
}
_ARRAY_BUILDERS = ("make_array", "make_list")


def _membership_call(node: exp.Expression) -> tuple[str, list[exp.Expression]] | None:
    """What a membership call asks ("any", "all" or "value") and its arguments."""
    if isinstance(node, exp.ArrayContains | exp.ArrayContainsAll):
        extra = [
            k for k, v in node.args.items() if v is not None and k not in ("this", "expression")
        ]
        args = [node.this, node.expression, *(node.args[k] for k in extra)]
        return ("value" if isinstance(node, exp.ArrayContains) else "all"), args
    if isinstance(node, exp.Anonymous) and node.name.lower() in _MEMBERSHIP_NAMES:
        return _MEMBERSHIP_NAMES[node.name.lower()], list(node.expressions)
    return None


def _function_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    return "array_has" if isinstance(node, exp.ArrayContains) else "array_has_all"


def _read_membership(
    t: _Translator, node: exp.Expression, kind: str, args: list[exp.Expression]
) -> tuple[_Value, array_has.Mode, array_has.Needles | None]:
    name = _function_name(node)
    where = f"{_sql(node)!r} (filter {t.sql!r})"
    wanted = "a value" if kind == "value" else "an array of values"
    if len(args) != 2:
        raise FilterError(f"{where}: {name} takes a list and {wanted}")
    subject = t.visit(args[0])
    if subject.const is not None or not array_has.is_list(subject.type):
        raise FilterError(f"{where}: {name} looks in a list column, not a {subject.type}")
    if kind == "any" and isinstance(args[1], exp.Null):
        literals: list[pa.Scalar] | None = None  # pylance: NULL on every row
    else:
        literals = _membership_literals(t, args[1], kind == "value", where, name)
    try:
        needles = array_has.needles(
            subject.type.value_type, literals or [], element=kind == "value"
        )
    except FilterError as e:
        raise FilterError(f"{where}: {e}") from None
    if literals is None or (kind == "value" and not literals[0].is_valid):
        return subject, "any", None
    return subject, ("all" if kind == "all" else "any"), needles


def _membership_literals(
    t: _Translator, node: exp.Expression, single: bool, where: str, name: str
) -> list[pa.Scalar]:
    if single:
        elements = [node]
    elif isinstance(node, exp.Array) or (
        isinstance(node, exp.Anonymous) and node.name.lower() in _ARRAY_BUILDERS
    ):
        elements = list(node.expressions)
    else:
        raise FilterError(f"{where}: {name} takes an array of literals such as [1, 2]")
    out: list[pa.Scalar] = []
    for element in elements:
        value = t.visit(element)
        if value.const is None:
            raise FilterError(f"{where}: lancelet's {name} takes literal values only")
        out.append(value.const)
    return out


def _membership(t: _Translator, node: exp.Expression) -> _Value:
    call = _membership_call(node)
    if call is None:
        raise FilterError(f"unsupported SQL construct {_construct_name(node)} in filter {t.sql!r}")
    subject, mode, needles = _read_membership(t, node, *call)
    if needles is None:
        return _NULL_BOOL
    expr = array_has.expression(subject.expr, subject.type, needles, mode)
    return _Value(expr, pa.bool_())


# --- other DataFusion functions: regexp_match, arrow_cast, current_date, X'..' ----------


def _anonymous(t: _Translator, node: exp.Anonymous) -> _Value:
    name = node.name.lower()
    if name == "regexp_match":
        return _regexp(t, node, "regexp_match", list(node.expressions))
    if name == "arrow_cast":
        return _arrow_cast(t, node)
    if name in json_functions.NAMES:
        return _json_function(t, node)
    if name in sql_catalog.IMPLEMENTED_HERE or sql_catalog.refusal(name):
        return _scalar_function(t, node)
    return _membership(t, node)


def _scalar_function(t: _Translator, node: exp.Expression) -> _Value:
    # The functions build on this module's translator, so their registry is imported
    # when first needed rather than while this module is.
    from lancelet.expr.functions import registry

    return registry.call(t, node)


def _json_function(t: _Translator, node: exp.Expression) -> _Value:
    name, subject_node, params = json_functions.call_parts(node)
    subject = t.visit(subject_node)
    expression, dtype = json_functions.expression(name, subject.expr, subject.type, params)
    return _Value(expression, dtype)


def _regexp_like(t: _Translator, node: exp.RegexpLike) -> _Value:
    args = [node.this, node.expression]
    if node.args.get("flag") is not None:
        args.append(node.args["flag"])
    return _regexp(t, node, "regexp_like", args)


def _regexp(t: _Translator, node: exp.Expression, name: str, args: list[exp.Expression]) -> _Value:
    """``regexp_like(s, pattern[, flags])``: true where ``pattern`` matches somewhere in
    ``s``, NULL where ``s`` is NULL; ``regexp_match`` as a condition: the same, but
    false (never NULL) where regexp_like is NULL."""
    where = f"{_sql(node)!r} (filter {t.sql!r})"
    if name == "regexp_match" and not _coerced_to_boolean(node):
        raise FilterError(
            f"{where}: lancelet takes regexp_match only as a condition (the whole filter "
            "or an operand of AND, OR, NOT); use regexp_like for a boolean value"
        )
    if len(args) not in (2, 3):
        raise FilterError(f"{where}: {name} takes a string, a pattern and optional flags")
    subject = t.visit(args[0])
    literals = [t.visit(a) for a in args[1:]]
    if any(v.const is None or _family(v.type) not in ("string", "null") for v in literals):
        raise FilterError(f"{where}: lancelet's {name} takes a string literal pattern and flags")
    if _family(subject.type) not in ("string", "null"):
        raise FilterError(f"{where}: {name} matches strings, not {subject.type}")
    if any(v.const is not None and not v.const.is_valid for v in literals):
        return _FALSE if name == "regexp_match" else _NULL_BOOL
    texts = [v.const.as_py() for v in literals if v.const is not None]
    flags = texts[1] if len(texts) > 1 else None
    try:
        pattern = sql_functions.regex_pattern(texts[0], flags, name)
    except FilterError as e:
        raise FilterError(f"{where}: {e}") from None
    try:
        pc.match_substring_regex(pa.array([""]), pattern=pattern)  # compiles it
    except pa.ArrowInvalid as e:
        raise FilterError(
            f"{where}: lancelet's regular expressions (RE2) do not take this pattern: {e}"
        ) from None
    if pa.types.is_null(subject.type):
        matched = _NULL_BOOL
    else:
        matched = _apply(pc.match_substring_regex, [subject], node, pattern=pattern)
    if name == "regexp_match":
        # pylance reads the list of groups as "matched" (NULL when nothing matched, or s
        # or the pattern is NULL), and only where a boolean is expected.
        return _apply(pc.coalesce, [matched, _FALSE], node)
    return matched


def _contains(t: _Translator, node: exp.Contains) -> _Value:
    """DataFusion's ``contains(s, sub)``: whether ``s`` holds ``sub`` (case-sensitive),
    NULL where ``s`` is NULL; lancelet takes a literal ``sub`` only."""
    where = f"{_sql(node)!r} (filter {t.sql!r})"
    subject, needle = t.visit(node.this), t.visit(node.expression)
    if needle.const is None or _family(needle.type) not in ("string", "null"):
        raise FilterError(f"{where}: lancelet's contains takes a string literal to look for")
    if _family(subject.type) not in ("string", "null"):
        raise FilterError(f"{where}: contains looks in strings, not {subject.type}")
    if not needle.const.is_valid or pa.types.is_null(subject.type):
        return _NULL_BOOL
    return _apply(pc.match_substring, [subject], node, pattern=needle.const.as_py())


def _coerced_to_boolean(node: exp.Expression) -> bool:
    """Whether ``node`` stands where pylance coerces regexp_match's list to a boolean:
    the whole filter, or an operand of AND, OR or NOT."""
    parent = node.parent
    while isinstance(parent, exp.Paren):
        parent = parent.parent
    return parent is None or isinstance(parent, (exp.And, exp.Or, exp.Not))


def _arrow_cast(t: _Translator, node: exp.Anonymous) -> _Value:
    where = f"{_sql(node)!r} (filter {t.sql!r})"
    if len(node.expressions) != 2:
        raise FilterError(f"{where}: arrow_cast takes a value and a type name")
    value, name = t.visit(node.expressions[0]), t.visit(node.expressions[1])
    if name.const is None or not name.const.is_valid or _family(name.type) != "string":
        raise FilterError(f"{where}: arrow_cast takes a type name as a string literal")
    try:
        target = sql_functions.arrow_type(name.const.as_py())
    except FilterError as e:
        raise FilterError(f"{where}: {e}") from None
    if pa.types.is_timestamp(value.type) and pa.types.is_date32(target):
        # arrow-rs drops the time of day (rounding toward the earlier day).
        return _cast(value, target, node, safe=False)
    if pa.types.is_timestamp(value.type) and pa.types.is_timestamp(target):
        if value.type.tz is not None or _UNIT_ORDER[target.unit] < _UNIT_ORDER[value.type.unit]:
            # pylance compares a timestamp cast to a coarser unit as if uncast.
            raise FilterError(
                f"{where}: lancelet casts only timestamps without a time zone to as fine a unit"
            )
        return _cast(value, target, node)
    if _is_list_type(target) and not (pa.types.is_null(value.type) or _is_list_type(value.type)):
        raise FilterError(f"{where}: only NULL and lists cast to {target}")
    if pa.types.is_fixed_size_binary(target) and not pa.types.is_binary(value.type):
        raise FilterError(f"{where}: lancelet casts only binary values to {target}")
    from_string = _family(value.type) == "string"
    if pa.types.is_integer(target) and not from_string and not _holds_all(target, value.type):
        # pylance neither raises nor gives NULL for values out of range (or NaN).
        raise FilterError(
            f"{where}: lancelet's arrow_cast converts to an integer type only from strings "
            f"and integers it holds all of, not from {value.type}"
        )
    return _sql_cast(value, target, node)


_UNIT_ORDER = {"s": 0, "ms": 1, "us": 2, "ns": 3}


def _is_list_type(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
    )


def _holds_all(target: pa.DataType, source: pa.DataType) -> bool:
    """Whether the integer type ``target`` holds every value of the integer ``source``."""
    if not pa.types.is_integer(source):
        return False
    source_signed = pa.types.is_signed_integer(source)
    target_signed = pa.types.is_signed_integer(target)
    if source_signed == target_signed:
        return bool(target.bit_width >= source.bit_width)
    return target_signed and bool(target.bit_width > source.bit_width)


def _current_date(t: _Translator, node: exp.CurrentDate) -> _Value:
    if node.this is not None:
        raise t.unsupported(node, "current_date with an argument")
    return _const(sql_functions.current_date())


def _hex_string(t: _Translator, node: exp.HexString) -> _Value:
    try:
        return _const(pa.scalar(bytes.fromhex(node.this), pa.binary()))
    except ValueError:
        raise FilterError(f"{_sql(node)!r} is not a binary literal (filter {t.sql!r})") from None


_HANDLERS: dict[type[exp.Expression], _Handler] = {
    exp.Column: _column,
    exp.Dot: _dot,
    exp.Bracket: _bracket,
    exp.Literal: _literal,
    exp.Array: _array,
    exp.Boolean: _boolean,
    exp.Null: _null,
    exp.Paren: _paren,
    exp.Neg: _neg,
    exp.Not: _not,
    exp.And: _logical(pc.and_kleene),
    exp.Or: _logical(pc.or_kleene),
    exp.EQ: _comparison(pc.equal),
    exp.NEQ: _comparison(pc.not_equal),
    exp.LT: _comparison(pc.less),
    exp.LTE: _comparison(pc.less_equal),
    exp.GT: _comparison(pc.greater),
    exp.GTE: _comparison(pc.greater_equal),
    exp.NullSafeEQ: _null_safe_equal,
    exp.NullSafeNEQ: _null_safe_not_equal,
    exp.Is: _is,
    exp.Between: _between,
    exp.In: _in,
    exp.Like: _like_handler,
    exp.ILike: _like_handler,
    exp.Escape: _escape,
    exp.Add: _arithmetic(pc.add),
    exp.Sub: _arithmetic(pc.subtract),
    exp.Mul: _arithmetic(pc.multiply),
    exp.Div: _arithmetic(pc.divide),
    exp.Mod: _mod,
    exp.DPipe: _arithmetic(_concat),
    exp.Cast: _cast_handler,
    exp.Lower: _case_mapping("lower"),
    exp.Upper: _case_mapping("upper"),
    exp.Length: _function(pc.utf8_length),
    exp.Abs: _abs,
    exp.Anonymous: _anonymous,
    exp.Contains: _contains,
    exp.RegexpLike: _regexp_like,
    exp.CurrentDate: _current_date,
    exp.HexString: _hex_string,
    exp.ArrayContains: _membership,
    exp.ArrayContainsAll: _membership,
    exp.JSONExtract: _json_function,
    exp.JSONArrayContains: _json_function,
    # DataFusion functions that keep sqlglot's syntax: EXTRACT(.. FROM ..) and the like.
    **dict.fromkeys(
        (
            exp.Extract,
            exp.Substring,
            exp.Trim,
            exp.Overlay,
            exp.CurrentTimestamp,
            exp.CurrentTime,
        ),
        _scalar_function,
    ),
}
