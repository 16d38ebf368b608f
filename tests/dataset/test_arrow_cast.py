"""``lancelet._arrow.cast``: pyarrow's cast where pyarrow is right, the columns left as
they are where pyarrow's cast would damage them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lancelet._arrow.cast import cast

DATA = pa.table({"a": pa.array([1, None], pa.int64()), "b": ["x", "y"]})


@pytest.mark.parametrize(
    "schema",
    [
        pa.schema([("a", pa.int64()), ("b", pa.string())], metadata={"k": "v"}),
        pa.schema([("a", pa.int32()), ("b", pa.large_string())]),
        pa.schema([("a", pa.float64()), pa.field("b", pa.string(), nullable=False)]),
    ],
    ids=["metadata", "types", "a type and nullability"],
)
def test_as_pyarrow_casts(schema: pa.Schema) -> None:
    want = DATA.cast(schema)
    got = cast(DATA, schema)
    assert got.equals(want, check_metadata=True)
    batch = DATA.to_batches()[0]
    assert cast(batch, schema).equals(batch.cast(schema), check_metadata=True)


@pytest.mark.parametrize(
    "schema",
    [
        pa.schema([pa.field("a", pa.int64(), nullable=False), ("b", pa.string())]),
        pa.schema([pa.field("a", pa.int32(), nullable=False), ("b", pa.string())]),
        pa.schema([("b", pa.string()), ("a", pa.int64())]),
    ],
    ids=["nulls in a non-nullable field", "and a cast", "other names"],
)
def test_refuses_what_pyarrow_refuses(schema: pa.Schema) -> None:
    with pytest.raises(ValueError):
        DATA.cast(schema)
    with pytest.raises(ValueError):
        cast(DATA, schema)


def test_lists_of_the_null_type_keep_their_offsets() -> None:
    dtype = pa.large_list(pa.list_(pa.null()))
    values = pa.array([[[None, None], [None]], [], [[]]], dtype)
    schema = pa.schema([pa.field("n", dtype, nullable=False)])
    got = cast(pa.table({"n": values}), schema)
    got.validate(full=True)
    assert got.schema == schema
    assert got.column(0).to_pylist() == values.to_pylist()


def test_non_nullable_fields_under_null_structs() -> None:
    struct = pa.struct([pa.field("x", pa.int32(), nullable=False)])
    # How both libraries read a null struct: its field is null there too.
    items = pa.StructArray.from_arrays(
        [pa.array([1, None], pa.int32())], fields=[struct.field(0)], mask=pa.array([False, True])
    )
    values = pa.ListArray.from_arrays(pa.array([0, 2], pa.int32()), items)
    schema = pa.schema([pa.field("l", values.type, nullable=False)])
    with pytest.raises(ValueError):
        pa.table({"l": values}).cast(schema)
    got = cast(pa.table({"l": values}), schema)
    assert got.schema == schema
    assert got.column(0).to_pylist() == [[{"x": 1}, None]]
