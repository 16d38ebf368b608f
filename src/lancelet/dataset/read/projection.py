"""What a scan or take returns: columns by name, nested paths, or SQL expressions.

``columns`` takes pylance's two forms.  A list names columns; a name that is no
top-level column but a path into structs (``"s.x"``) returns that field under the
dotted name.  A mapping gives each output column a SQL expression over the dataset's
columns (``{"twice": "b * 2", "first": "l[1]['x']"}``).  Either way the projection
says which top-level columns must be read and how to build the output from them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import SchemaError, UnsupportedOptionError
from lancelet.expr.compute import evaluate
from lancelet.expr.filter import parse_value, value_nullable

ROW_ID = "_rowid"
ROW_ADDRESS = "_rowaddr"
# A row's position among the dataset's live rows: what ``take`` takes it by.
ROW_OFFSET = "_rowoffset"
# Row lineage: the versions that created and last updated a row.
CREATED_AT = "_row_created_at_version"
UPDATED_AT = "_row_last_updated_at_version"
LINEAGE = (CREATED_AT, UPDATED_AT)
SPECIAL = (ROW_ID, ROW_ADDRESS, ROW_OFFSET, *LINEAGE)
# Those a filter or an expression may read; pylance has no _rowoffset there.
IN_EXPRESSIONS = (ROW_ID, ROW_ADDRESS)
# A filter may also read a row's lineage (pylance refuses it in a computed column).
IN_FILTERS = (*IN_EXPRESSIONS, *LINEAGE)

Columns = Sequence[str] | Mapping[str, str]


@dataclass(frozen=True)
class Projection:
    # The columns computed (or selected) from the dataset's, in output order.
    fields: tuple[pa.Field, ...]
    # Top-level dataset columns to read, in schema order; never a SPECIAL column.
    reads: tuple[str, ...]
    # The output in order: an int is the position of one of ``fields``, a string is
    # a SPECIAL column named in a list of columns.
    layout: tuple[int | str, ...]
    # SPECIAL columns that expressions read.
    special_reads: frozenset[str]
    # None: the output is the read columns selected by name.
    expressions: Mapping[str, pc.Expression] | None = None

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    @property
    def special_outputs(self) -> frozenset[str]:
        return frozenset(item for item in self.layout if isinstance(item, str))

    def apply(self, table: pa.Table, where: str) -> pa.Table:
        """The output columns computed from ``table`` (which holds ``reads``)."""
        if self.expressions is None:
            return table.select(self.names)
        if not self.expressions:
            return table.select([])
        out = evaluate(table, self.expressions, where)
        # Only the columns whose type changes are cast: a cast to the same struct type
        # refuses the null rows of a struct with non-nullable children (blob columns).
        columns = [
            column if column.type == field.type else column.cast(field.type)
            for column, field in zip(out.columns, self.fields, strict=True)
        ]
        return pa.Table.from_arrays(columns, schema=pa.schema(self.fields))


def refuse_lineage(shape: Projection, search: str, where: str) -> None:
    """A search returns no lineage columns: pylance 14 fails on them there."""
    asked = sorted(shape.special_outputs & set(LINEAGE))
    if asked:
        raise UnsupportedOptionError(f"{where}: columns {asked} in a {search}")


def projection(columns: Columns | None, schema: pa.Schema, where: str) -> Projection:
    """``schema`` is the dataset's Arrow schema; the SPECIAL columns (``_rowid``,
    ``_rowaddr``, ``_rowoffset`` and the lineage ones) are known besides its columns."""
    if columns is None:
        fields = tuple(schema)
        return Projection(fields, tuple(schema.names), tuple(range(len(fields))), frozenset())
    if isinstance(columns, Mapping):
        return _of_expressions(columns, schema, where)
    if isinstance(columns, (str, bytes)) or not isinstance(columns, Sequence):
        raise TypeError(
            f"{where}: columns must be a list of names or a dict of SQL expressions, "
            f"not {columns!r}"
        )
    if not all(isinstance(name, str) for name in columns):
        return _of_names(columns, schema, where)  # which says what is wrong
    # Projections are immutable: a scan repeated on one schema object reuses its own.
    key = (tuple(columns), id(schema))
    found = _PROJECTIONS.get(key)
    if found is not None and found[0] is schema:
        return found[1]
    made = _of_names(columns, schema, where)
    _PROJECTIONS[key] = (schema, made)
    while len(_PROJECTIONS) > 64:
        _PROJECTIONS.pop(next(iter(_PROJECTIONS)), None)
    return made


# (column names, id(schema)) -> (schema, its projection); the entry holds the schema, so
# its id names no other while it lives.
_PROJECTIONS: dict[tuple[tuple[str, ...], int], tuple[pa.Schema, Projection]] = {}


def with_specials(schema: pa.Schema, names: tuple[str, ...] = IN_EXPRESSIONS) -> pa.Schema:
    """``schema`` with the system columns expressions may read (``names``: those of
    filters are IN_FILTERS); the same object for the same ``schema`` object, while it
    is among the last few asked for: filters are parsed once per schema, and a
    schema's hash costs as much as that."""
    found = _WITH_SPECIALS.get((id(schema), names))
    if found is not None and found[0] is schema:
        return found[1]
    out = pa.schema([*schema, *(pa.field(n, pa.uint64()) for n in names)])
    _WITH_SPECIALS[(id(schema), names)] = (schema, out)
    while len(_WITH_SPECIALS) > 16:
        _WITH_SPECIALS.pop(next(iter(_WITH_SPECIALS)), None)
    return out


# id(schema) -> (schema, with its special columns); the entry holds the schema, so its
# id names no other while it lives.
_WITH_SPECIALS: dict[tuple[int, tuple[str, ...]], tuple[pa.Schema, pa.Schema]] = {}


def _of_names(names: Sequence[str], schema: pa.Schema, where: str) -> Projection:
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{where}: column names must be strings, not {name!r}")
    repeated = sorted(n for n, count in Counter(names).items() if count > 1)
    if repeated:
        raise SchemaError(f"{where}: columns {repeated} are asked for more than once")
    plain = [n for n in names if n not in SPECIAL]
    computed = iter(range(len(plain)))
    layout = tuple(n if n in SPECIAL else next(computed) for n in names)
    found = {n: _resolve(n, schema, where) for n in plain}
    tops = {path[0] for path, _ in found.values()}
    reads = tuple(n for n in schema.names if n in tops)
    fields = tuple(field.with_name(n) for n, (_, field) in found.items())
    if all(len(path) == 1 for path, _ in found.values()):
        return Projection(fields, reads, layout, frozenset())
    expressions = {n: pc.field(*path) for n, (path, _) in found.items()}
    return Projection(fields, reads, layout, frozenset(), expressions)


def _resolve(name: str, schema: pa.Schema, where: str) -> tuple[list[str], pa.Field]:
    """A top-level column, else ``"s.x.y"`` as a path of struct fields; the path and
    the field it ends at.  A SchemaError names a column that is neither."""
    if schema.get_field_index(name) >= 0:
        return [name], schema.field(name)
    parts = name.split(".")
    container: pa.Schema | pa.DataType = schema
    field: pa.Field | None = None
    for part in parts:
        nested = isinstance(container, pa.Schema) or pa.types.is_struct(container)
        index = container.get_field_index(part) if nested else -1
        if index < 0:
            raise SchemaError(f"{where}: no column named {name!r}; columns are {schema.names}")
        field = container.field(index)
        container = field.type
    assert field is not None
    return parts, field


def _of_expressions(columns: Mapping[str, str], schema: pa.Schema, where: str) -> Projection:
    known = with_specials(schema)
    expressions: dict[str, pc.Expression] = {}
    fields: list[pa.Field] = []
    reads: set[str] = set()
    for name, sql in columns.items():
        if not isinstance(name, str) or not isinstance(sql, str):
            raise TypeError(
                f"{where}: a columns mapping must map names to SQL expressions (strings), "
                f"not {name!r}: {sql!r}"
            )
        expr, dtype, read = parse_value(sql, known, computes=True)
        expressions[name] = expr
        fields.append(_output_field(name, sql, dtype, schema, known))
        reads |= read
    return Projection(
        tuple(fields),
        tuple(n for n in schema.names if n in reads),
        tuple(range(len(fields))),
        frozenset(reads & set(SPECIAL)),
        expressions,
    )


def _output_field(
    name: str, sql: str, dtype: pa.DataType, schema: pa.Schema, known: pa.Schema
) -> pa.Field:
    """A column given by its bare name keeps its field, renamed (metadata, such as the
    mark of a blob column, and nullability), as in pylance; a computed value is
    nullable as pylance types it."""
    index = schema.get_field_index(sql)
    if index >= 0 and schema.field(index).type == dtype:
        return schema.field(index).with_name(name)
    return pa.field(name, dtype, nullable=value_nullable(sql, known))
