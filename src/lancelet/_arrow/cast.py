"""``cast`` of tables and batches to a schema, casting only the columns that need it.

A column whose type already is the field's is given the field as it is, its own
nulls checked against the field's nullability.  pyarrow's cast of such a column
would do harm: it gives a list of the null type (``list<null>``, also nested) offsets
that run past its items (pyarrow 26), and it refuses nulls in a non-nullable field
of a struct where the struct itself is null, which is how pylance (and lancelet)
read such rows.
"""

from __future__ import annotations

from typing import TypeVar

import pyarrow as pa

Data = TypeVar("Data", pa.Table, pa.RecordBatch)


def cast(data: Data, schema: pa.Schema) -> Data:
    """``data.cast(schema)``, leaving alone the columns already of their field's type."""
    if data.schema.equals(schema, check_metadata=True):
        return data
    if data.schema.names != schema.names:
        return data.cast(schema)  # pyarrow says what does not match
    kept = [i for i, field in enumerate(schema) if data.schema.field(i).type == field.type]
    for i in kept:
        field = schema.field(i)
        if not field.nullable and data.column(i).null_count:
            raise ValueError(f"Casting field {field.name!r} with null values to non-nullable")
    if len(kept) == len(schema):
        return type(data).from_arrays(data.columns, schema=schema)
    others = [i for i in range(len(schema)) if i not in kept]
    done = data.select(others).cast(pa.schema([schema.field(i) for i in others]))
    columns = [
        data.column(i) if i in kept else done.column(others.index(i)) for i in range(len(schema))
    ]
    return type(data).from_arrays(columns, schema=schema)
