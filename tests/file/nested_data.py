"""Random nested Arrow schemas (hypothesis strategies) and tables for them (numpy).

A schema is drawn by hypothesis, so a failure shrinks to a small one; the data is made
from a drawn seed by numpy (fast), each node picking its own shape: how many nulls
(none, some, all), how many empty lists, how long the lists are, how many distinct
values a leaf has (constant, a few, random) and, for null lists, whether their slots
still span items (Arrow allows it; a writer must skip them).

:func:`type_code` prints a type as the Python that makes it, for reproducers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

# Leaves of several widths, every variable-width kind, dictionaries and the null type.
LEAVES: tuple[pa.DataType, ...] = (
    pa.bool_(),
    pa.int8(),
    pa.uint8(),
    pa.int16(),
    pa.uint16(),
    pa.int32(),
    pa.uint32(),
    pa.int64(),
    pa.uint64(),
    pa.float16(),
    pa.float32(),
    pa.float64(),
    pa.date32(),
    pa.timestamp("us"),
    pa.decimal128(12, 3),
    pa.binary(3),
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.large_binary(),
    pa.dictionary(pa.int32(), pa.string()),
    pa.dictionary(pa.int8(), pa.string()),
    pa.null(),
)
# Items of fixed-size lists (fixed width, as Lance stores them).
FSL_ITEMS: tuple[pa.DataType, ...] = (
    pa.bool_(),
    pa.int8(),
    pa.int32(),
    pa.uint16(),
    pa.int64(),
    pa.float32(),
    pa.float64(),
)
MAP_KEYS: tuple[pa.DataType, ...] = (pa.string(), pa.int32(), pa.int64())


@dataclass(frozen=True)
class Options:
    """What the drawn schemas may hold: maps (written at format 2.2 only)."""

    maps: bool = True


def _field(name: str, dtype: pa.DataType, nullable: bool) -> pa.Field:
    # A null-typed field is always nullable.
    return pa.field(name, dtype, nullable=nullable or pa.types.is_null(dtype))


def fields(
    name: st.SearchStrategy[str], dtype: st.SearchStrategy[pa.DataType]
) -> st.SearchStrategy[pa.Field]:
    return st.builds(_field, name, dtype, st.booleans())


def fixed_size_lists() -> st.SearchStrategy[pa.DataType]:
    item = fields(st.just("item"), st.sampled_from(FSL_ITEMS))
    # 40 items of 8 bytes make values over 256 bytes: full-zip pages.
    flat = st.builds(pa.list_, item, st.sampled_from([1, 2, 3, 4, 40]))
    nested = st.builds(pa.list_, fields(st.just("item"), flat), st.integers(1, 3))
    return flat | nested


def data_types(options: Options, max_leaves: int = 6) -> st.SearchStrategy[pa.DataType]:
    """A leaf, or lists / large lists / fixed-size lists / structs / maps of them."""
    dictionaries = st.sampled_from([t for t in LEAVES if pa.types.is_dictionary(t)])
    leaf = st.one_of(
        st.sampled_from(LEAVES), st.sampled_from(LEAVES), dictionaries, fixed_size_lists()
    )

    def extend(inner: st.SearchStrategy[pa.DataType]) -> st.SearchStrategy[pa.DataType]:
        item = fields(st.sampled_from(["item", "element"]), inner)
        lists = st.builds(pa.list_, item) | st.builds(pa.large_list, item)
        names = st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=3, unique=True)
        structs = names.flatmap(lambda ns: st.tuples(*[fields(st.just(n), inner) for n in ns])).map(
            lambda fs: pa.struct(list(fs))
        )
        choices = st.one_of(lists, structs, lists, structs)
        if options.maps:
            key_type = st.sampled_from(MAP_KEYS)
            key = st.builds(pa.field, st.sampled_from(["key", "k"]), key_type, st.just(False))
            value = fields(st.sampled_from(["value", "v"]), inner)
            choices = choices | st.builds(pa.map_, key, value)
        return choices

    return st.recursive(leaf, extend, max_leaves=max_leaves)


def schemas(options: Options) -> st.SearchStrategy[pa.Schema]:
    column = fields(st.just("c"), data_types(options))
    columns = st.lists(column, min_size=1, max_size=3).map(
        lambda fs: [f.with_name(f"c{i}") for i, f in enumerate(fs)]
    )
    return columns.map(pa.schema)


# -- data -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """How the data of one example looks."""

    struct_nulls: bool  # may structs be null themselves (not in format 2.0)
    junk_under_nulls: bool  # may null lists span items


class _Maker:
    def __init__(self, seed: int, shape: Shape) -> None:
        self.rng = np.random.default_rng(seed)
        self.shape = shape

    def mask(self, field: pa.Field, n: int) -> np.ndarray | None:
        """Where ``field`` is null (None: nowhere)."""
        if not field.nullable or n == 0:
            return None
        rate = self.rng.choice([0.0, 0.0, 0.1, 0.4, 1.0])
        if rate == 0.0:
            return None
        return self.rng.random(n) < rate

    def array(self, field: pa.Field, n: int) -> pa.Array:
        dtype = field.type
        mask = self.mask(field, n)
        if pa.types.is_struct(dtype):
            if not self.shape.struct_nulls:
                mask = None
            children = [self.array(dtype.field(i), n) for i in range(dtype.num_fields)]
            return pa.Array.from_buffers(dtype, n, [_bitmap(mask)], children=children)
        if pa.types.is_fixed_size_list(dtype):
            child = self.array(dtype.value_field, n * dtype.list_size)
            return pa.Array.from_buffers(dtype, n, [_bitmap(mask)], children=[child])
        if pa.types.is_map(dtype):
            offsets = self.offsets(n, mask, pa.int32())
            total = int(offsets[-1].as_py()) if n else 0
            keys = self.leaf(dtype.key_type, total, None)
            items = self.array(dtype.item_field, total)
            entries = pa.StructArray.from_arrays(
                [keys, items], fields=[dtype.key_field, dtype.item_field]
            )
            return pa.Array.from_buffers(
                dtype, n, [_bitmap(mask), offsets.buffers()[1]], children=[entries]
            )
        if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
            width = pa.int64() if pa.types.is_large_list(dtype) else pa.int32()
            offsets = self.offsets(n, mask, width)
            total = int(offsets[-1].as_py()) if n else 0
            child = self.array(dtype.value_field, total)
            return pa.Array.from_buffers(
                dtype, n, [_bitmap(mask), offsets.buffers()[1]], children=[child]
            )
        return self.leaf(dtype, n, mask)

    def offsets(self, n: int, mask: np.ndarray | None, width: pa.DataType) -> pa.Array:
        longest = int(self.rng.choice([1, 3, 6]))
        lengths = self.rng.integers(0, longest + 1, n)
        empty_rate = self.rng.choice([0.0, 0.3, 1.0])
        lengths[self.rng.random(n) < empty_rate] = 0
        if mask is not None and not self.shape.junk_under_nulls:
            lengths[mask] = 0
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return pa.array(offsets, type=width)

    def leaf(self, dtype: pa.DataType, n: int, mask: np.ndarray | None) -> pa.Array:
        rng = self.rng
        if pa.types.is_null(dtype):
            return pa.nulls(n)
        # How many distinct values: one (constant pages), a few (dictionaries, runs), any.
        distinct = int(rng.choice([1, 4, 1 << 62]))
        if pa.types.is_dictionary(dtype):
            words = pa.array(_words(rng, min(distinct, 6)), dtype.value_type)
            indices = rng.integers(0, len(words), n).astype(dtype.index_type.to_pandas_dtype())
            return pa.DictionaryArray.from_arrays(pa.array(indices, mask=mask), words)
        if pa.types.is_boolean(dtype):
            return pa.array(rng.random(n) < (0.5 if distinct > 1 else 2.0), mask=mask)
        if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
            words = _words(rng, n if distinct > n else distinct)
            return pa.array([words[i % len(words)] for i in range(n)], dtype, mask=mask)
        if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
            long = rng.random() < 0.15  # values over 256 bytes go to full-zip pages
            blobs = [
                rng.bytes(int(k)) for k in rng.integers(0, 400 if long else 12, min(n, distinct))
            ]
            return pa.array([blobs[i % len(blobs)] for i in range(n)], dtype, mask=mask)
        if pa.types.is_fixed_size_binary(dtype):
            raw = rng.integers(0, 256, (n, dtype.byte_width), dtype=np.uint8)
            if distinct < n:
                raw = raw[np.arange(n) % distinct]
            return pa.array([bytes(r) for r in raw], dtype, mask=mask)
        if pa.types.is_decimal(dtype):
            ints = self.integers(pa.int64(), n, distinct) % (10**9)
            return _decimals(ints, dtype, mask)
        if pa.types.is_floating(dtype):
            values = rng.standard_normal(n) * 1000
            if distinct < n:
                values = values[np.arange(n) % distinct]
            return pa.array(values.astype(dtype.to_pandas_dtype()), dtype, mask=mask)
        storage = {
            pa.date32(): pa.int32(),
            pa.timestamp("us"): pa.int64(),
        }.get(dtype, dtype)
        values = self.integers(storage, n, distinct)
        if storage != dtype:  # dates and times Python can hold (the reproducers print them)
            values = values % (100_000 if pa.types.is_date32(dtype) else 10**15)
        return pa.array(values.astype(storage.to_pandas_dtype()), storage, mask=mask).cast(dtype)

    def integers(self, dtype: pa.DataType, n: int, distinct: int) -> np.ndarray:
        info = np.iinfo(dtype.to_pandas_dtype())
        narrow = self.rng.random() < 0.5  # small values bit-pack
        low, high = (0, min(int(info.max), 100)) if narrow else (int(info.min), int(info.max))
        values = self.rng.integers(
            low, high, n, dtype=np.int64 if high < 2**63 else np.uint64, endpoint=True
        )
        if distinct < n:
            values = values[np.arange(n) % distinct]
        return values


def _decimals(ints: np.ndarray, dtype: pa.DataType, mask: np.ndarray | None) -> pa.Array:
    scaled = pa.array(ints.astype(np.int64), pa.int64()).cast(pa.decimal128(19, 0))
    return pa.array(scaled.cast(dtype).to_pylist(), dtype, mask=mask)


def _words(rng: np.random.Generator, count: int) -> list[str]:
    alphabet = np.array(list("abcxyz019 éü漢🙂"))
    long = rng.random() < 0.1
    lengths = rng.integers(0, 300 if long else 10, max(count, 1))
    return ["".join(rng.choice(alphabet, int(k))) for k in lengths]


def _bitmap(mask: np.ndarray | None) -> pa.Buffer | None:
    if mask is None:
        return None
    return pa.py_buffer(np.packbits(~mask, bitorder="little"))


def table(schema: pa.Schema, num_rows: int, seed: int, shape: Shape) -> pa.Table:
    maker = _Maker(seed, shape)
    columns = [maker.array(field, num_rows) for field in schema]
    for column in columns:
        column.validate(full=True)
    return pa.Table.from_arrays(columns, schema=schema)


# -- reproducers ----------------------------------------------------------------------


def type_code(dtype: pa.DataType) -> str:
    """Python that makes ``dtype``."""
    if pa.types.is_map(dtype):
        return f"pa.map_({field_code(dtype.key_field)}, {field_code(dtype.item_field)})"
    if pa.types.is_fixed_size_list(dtype):
        return f"pa.list_({field_code(dtype.value_field)}, {dtype.list_size})"
    if pa.types.is_large_list(dtype):
        return f"pa.large_list({field_code(dtype.value_field)})"
    if pa.types.is_list(dtype):
        return f"pa.list_({field_code(dtype.value_field)})"
    if pa.types.is_struct(dtype):
        inner = ", ".join(field_code(dtype.field(i)) for i in range(dtype.num_fields))
        return f"pa.struct([{inner}])"
    if pa.types.is_dictionary(dtype):
        return f"pa.dictionary({type_code(dtype.index_type)}, {type_code(dtype.value_type)})"
    if pa.types.is_fixed_size_binary(dtype):
        return f"pa.binary({dtype.byte_width})"
    if pa.types.is_decimal(dtype):
        return f"pa.decimal128({dtype.precision}, {dtype.scale})"
    if pa.types.is_timestamp(dtype):
        return f"pa.timestamp({dtype.unit!r})"
    names = {
        pa.bool_(): "bool_",
        pa.float16(): "float16",
        pa.float32(): "float32",
        pa.float64(): "float64",
    }
    return f"pa.{names.get(dtype, str(dtype))}()"


def field_code(field: pa.Field) -> str:
    return f"pa.field({field.name!r}, {type_code(field.type)}, nullable={field.nullable})"


def reproducer(data: pa.Table) -> str:
    """Python that rebuilds ``data`` (the values; null lists' spans are not kept)."""
    fields = ",\n    ".join(field_code(f) for f in data.schema)
    return (
        f"schema = pa.schema([\n    {fields},\n])\nrows = {data.to_pylist()!r}\n"
        "table = pa.Table.from_pylist(rows, schema=schema)"
    )


def stored_type(dtype: pa.DataType) -> pa.DataType:
    """``dtype`` as a Lance schema keeps it, and as both libraries read it back: a
    fixed-size list's items are one logical type string, so they come back named
    ``item`` and nullable; a map's fields come back named ``key`` and ``value``."""
    if pa.types.is_fixed_size_list(dtype):
        return pa.list_(stored_type(dtype.value_type), dtype.list_size)
    if pa.types.is_map(dtype):
        key, item = dtype.key_field, dtype.item_field
        return pa.map_(
            key.with_name("key").with_type(stored_type(key.type)),
            item.with_name("value").with_type(stored_type(item.type)),
        )
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        make = pa.large_list if pa.types.is_large_list(dtype) else pa.list_
        item = dtype.value_field
        return make(item.with_type(stored_type(item.type)))
    if pa.types.is_struct(dtype):
        return pa.struct([f.with_type(stored_type(f.type)) for f in dtype])
    return dtype


def stored_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_type(stored_type(f.type)) for f in schema], metadata=schema.metadata)
