"""Arrow <-> Spark SQL types for the ``lance`` data source.

Reading maps each Arrow type of a dataset to the Spark type that holds its values
without loss; the batches are then cast to the Arrow form Spark expects for that type
(``spark_arrow_schema``).  Types Spark cannot hold are refused by name, not
approximated.  Writing goes the other way through pyspark's own Spark -> Arrow mapping.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
from pyspark.sql import types as st
from pyspark.sql.pandas.types import to_arrow_schema

from lancelet.errors import UnsupportedTypeError

# Spark has no unsigned integers: each widens to the next signed type, and uint64 to
# the smallest decimal holding all of its values.
_SIMPLE: dict[pa.DataType, st.DataType] = {
    pa.null(): st.NullType(),
    pa.bool_(): st.BooleanType(),
    pa.int8(): st.ByteType(),
    pa.int16(): st.ShortType(),
    pa.int32(): st.IntegerType(),
    pa.int64(): st.LongType(),
    pa.uint8(): st.ShortType(),
    pa.uint16(): st.IntegerType(),
    pa.uint32(): st.LongType(),
    pa.uint64(): st.DecimalType(20, 0),
    pa.float16(): st.FloatType(),
    pa.float32(): st.FloatType(),
    pa.float64(): st.DoubleType(),
    pa.string(): st.StringType(),
    pa.large_string(): st.StringType(),
    pa.string_view(): st.StringType(),
    pa.binary(): st.BinaryType(),
    pa.large_binary(): st.BinaryType(),
    pa.binary_view(): st.BinaryType(),
    pa.date32(): st.DateType(),
    pa.date64(): st.DateType(),
}
_MAX_DECIMAL_PRECISION = 38


def _decimal(dtype: pa.DataType, column: str) -> st.DataType:
    if dtype.precision > _MAX_DECIMAL_PRECISION:
        raise UnsupportedTypeError(
            f"column {column!r}: {dtype} has more digits than Spark decimals hold "
            f"({_MAX_DECIMAL_PRECISION})"
        )
    return st.DecimalType(dtype.precision, dtype.scale)


def _timestamp(dtype: pa.DataType, column: str) -> st.DataType:
    # An instant (with a time zone) or a wall-clock time (without one); Spark keeps
    # microseconds, so nanosecond values that are not whole microseconds fail to cast.
    return st.TimestampType() if dtype.tz else st.TimestampNTZType()


def _struct(dtype: pa.DataType, column: str) -> st.DataType:
    fields = [dtype.field(i) for i in range(dtype.num_fields)]
    return st.StructType([spark_field(f, f"{column}.{f.name}") for f in fields])


def _list(dtype: pa.DataType, column: str) -> st.DataType:
    item = dtype.value_field
    return st.ArrayType(spark_type(item.type, f"{column}[]"), item.nullable)


def _map(dtype: pa.DataType, column: str) -> st.DataType:
    key = spark_type(dtype.key_type, f"{column}.key")
    value = spark_type(dtype.item_type, f"{column}.value")
    return st.MapType(key, value, dtype.item_field.nullable)


_Convert = Callable[[pa.DataType, str], st.DataType]
_BY_KIND: tuple[tuple[Callable[[pa.DataType], bool], _Convert], ...] = (
    (pa.types.is_decimal, _decimal),
    (pa.types.is_timestamp, _timestamp),
    (pa.types.is_duration, lambda d, c: st.DayTimeIntervalType()),
    (pa.types.is_fixed_size_binary, lambda d, c: st.BinaryType()),
    (pa.types.is_struct, _struct),
    (pa.types.is_map, _map),
    (
        lambda d: (
            pa.types.is_list(d) or pa.types.is_large_list(d) or pa.types.is_fixed_size_list(d)
        ),
        _list,
    ),
    (pa.types.is_dictionary, lambda d, c: spark_type(d.value_type, c)),
)


def spark_type(dtype: pa.DataType, column: str) -> st.DataType:
    """The Spark type holding every value of ``dtype``; refuses the types it cannot."""
    if dtype in _SIMPLE:
        return _SIMPLE[dtype]
    for matches, convert in _BY_KIND:
        if matches(dtype):
            return convert(dtype, column)
    raise UnsupportedTypeError(f"column {column!r}: Spark has no type for Arrow type {dtype}")


def spark_field(field: pa.Field, column: str | None = None) -> st.StructField:
    return st.StructField(field.name, spark_type(field.type, column or field.name), field.nullable)


def natural_spark_type(field: pa.Field) -> st.DataType | None:
    """The Spark type a column reads as; None when Spark has none.  The row id and
    row address (uint64 in Lance) read as longs: their values stay below 2**63."""
    if field.name in ("_rowid", "_rowaddr") and field.type == pa.uint64():
        return st.LongType()
    try:
        return spark_type(field.type, field.name)
    except UnsupportedTypeError:
        return None


def spark_schema(schema: pa.Schema, where: str) -> st.StructType:
    """A dataset's Arrow schema as a Spark schema; errors name ``where`` (the dataset)."""
    try:
        return st.StructType([spark_field(f) for f in schema])
    except UnsupportedTypeError as exc:
        raise UnsupportedTypeError(f"{where}: {exc}") from exc


def spark_arrow_schema(schema: st.StructType) -> pa.Schema:
    """The Arrow schema Spark expects batches of ``schema`` in (and gives them in)."""
    out: pa.Schema = to_arrow_schema(schema, timezone="UTC")
    return out


def arrow_schema(schema: st.StructType, where: str) -> pa.Schema:
    """The Arrow schema a new dataset gets from a Spark schema."""
    try:
        return spark_arrow_schema(schema)
    except Exception as exc:  # pyspark raises its own classes per unsupported type
        raise UnsupportedTypeError(
            f"{where}: cannot store Spark schema {schema.simpleString()} in Lance: {exc}"
        ) from exc


def same_spark_type(a: st.DataType, b: st.DataType) -> bool:
    """Equal as Spark types, whatever the nullability of nested fields."""
    return bool(a.simpleString() == b.simpleString())


def nullable_schema(schema: pa.Schema) -> pa.Schema:
    """Every field nullable, nested ones too (Spark's ``asNullable``); map keys stay
    required, as Arrow demands."""
    return pa.schema([_nullable(f) for f in schema], metadata=schema.metadata)


def _nullable(field: pa.Field) -> pa.Field:
    return field.with_type(_nullable_type(field.type)).with_nullable(True)


def _nullable_type(dtype: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(dtype):
        return pa.struct([_nullable(dtype.field(i)) for i in range(dtype.num_fields)])
    if pa.types.is_map(dtype):
        return pa.map_(dtype.key_field, _nullable(dtype.item_field), dtype.keys_sorted)
    if pa.types.is_large_list(dtype):
        return pa.large_list(_nullable(dtype.value_field))
    if pa.types.is_fixed_size_list(dtype):
        return pa.list_(_nullable(dtype.value_field), dtype.list_size)
    if pa.types.is_list(dtype):
        return pa.list_(_nullable(dtype.value_field))
    return dtype
