"""Seeded generators of Arrow data covering every type a Lance 2.0 file stores."""

from __future__ import annotations

import decimal
import zlib

import numpy as np
import pyarrow as pa

LEAF_TYPES: list[pa.DataType] = [
    pa.null(),
    pa.bool_(),
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.float16(),
    pa.float32(),
    pa.float64(),
    pa.decimal128(12, 3),
    pa.decimal256(45, 7),
    pa.date32(),
    pa.date64(),
    pa.time32("s"),
    pa.time32("ms"),
    pa.time64("us"),
    pa.time64("ns"),
    *[pa.timestamp(u) for u in ("s", "ms", "us", "ns")],
    *[pa.timestamp(u, "UTC") for u in ("s", "ms", "us", "ns")],
    pa.timestamp("us", "America/New_York"),
    pa.timestamp("ms", "+05:30"),
    *[pa.duration(u) for u in ("s", "ms", "us", "ns")],
    pa.binary(7),
    pa.binary(),
    pa.large_binary(),
    pa.string(),
    pa.large_string(),
    pa.dictionary(pa.int32(), pa.string()),
    pa.dictionary(pa.int8(), pa.int64()),
]

NESTED_TYPES: list[pa.DataType] = [
    pa.list_(pa.float32(), 8),
    pa.list_(pa.int16(), 3),
    pa.list_(pa.list_(pa.float64(), 2), 2),
    pa.list_(pa.int32()),
    pa.large_list(pa.string()),
    pa.list_(pa.list_(pa.int64())),
    pa.list_(pa.list_(pa.uint8(), 4)),
    pa.struct([("a", pa.int32()), ("b", pa.string())]),
    pa.struct(
        [("a", pa.struct([("x", pa.float64()), ("y", pa.list_(pa.bool_()))])), ("z", pa.date32())]
    ),
    pa.list_(pa.struct([("k", pa.string()), ("v", pa.int64())])),
    pa.large_list(pa.struct([("p", pa.list_(pa.int8()))])),
]

ALL_TYPES = LEAF_TYPES + NESTED_TYPES


def _mask(rng: np.random.Generator, n: int, null_rate: float) -> np.ndarray | None:
    if null_rate <= 0:
        return None
    return rng.random(n) < null_rate


def _strings(rng: np.random.Generator, n: int) -> list[str]:
    alphabet = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789 éü漢字🙂"))
    lengths = rng.integers(0, 12, n)
    return ["".join(rng.choice(alphabet, k)) for k in lengths]


def _leaf(
    dtype: pa.DataType, n: int, rng: np.random.Generator, mask: np.ndarray | None
) -> pa.Array:
    if pa.types.is_null(dtype):
        return pa.nulls(n)
    if pa.types.is_dictionary(dtype):
        values = _leaf(dtype.value_type, 7, rng, None).unique()
        indices = rng.integers(0, len(values), n).astype(dtype.index_type.to_pandas_dtype())
        return pa.DictionaryArray.from_arrays(pa.array(indices, mask=mask), values)
    if pa.types.is_boolean(dtype):
        return pa.array(rng.random(n) < 0.5, type=dtype, mask=mask)
    if pa.types.is_integer(dtype):
        info = np.iinfo(dtype.to_pandas_dtype())
        values = rng.integers(info.min, info.max, n, dtype=dtype.to_pandas_dtype(), endpoint=True)
        return pa.array(values, type=dtype, mask=mask)
    if pa.types.is_floating(dtype):
        values = (rng.standard_normal(n) * 1000).astype(dtype.to_pandas_dtype())
        return pa.array(values, type=dtype, mask=mask)
    if pa.types.is_decimal(dtype):
        scale = dtype.scale
        digits = min(dtype.precision, 30)
        ints = rng.integers(-(10**15), 10**15, n)
        values = [decimal.Decimal(int(v) % 10**digits).scaleb(-scale) for v in ints]
        return pa.array(values, type=dtype, mask=mask)
    if pa.types.is_date32(dtype):
        return pa.array(rng.integers(-20000, 40000, n).astype(np.int32), type=dtype, mask=mask)
    if pa.types.is_date64(dtype):
        days = rng.integers(-20000, 40000, n).astype(np.int64)
        return pa.array(days * 86_400_000, type=dtype, mask=mask)
    if pa.types.is_time32(dtype):
        limit = 86_400 if dtype.unit == "s" else 86_400_000
        return pa.array(rng.integers(0, limit, n).astype(np.int32), type=dtype, mask=mask)
    if pa.types.is_time64(dtype):
        limit = 86_400_000_000 if dtype.unit == "us" else 86_400_000_000_000
        return pa.array(rng.integers(0, limit, n), type=dtype, mask=mask)
    if pa.types.is_timestamp(dtype) or pa.types.is_duration(dtype):
        return pa.array(rng.integers(-(2**40), 2**40, n), type=dtype, mask=mask)
    if pa.types.is_fixed_size_binary(dtype):
        raw = rng.integers(0, 256, n * dtype.byte_width, dtype=np.uint8).tobytes()
        w = dtype.byte_width
        return pa.array([raw[i * w : (i + 1) * w] for i in range(n)], type=dtype, mask=mask)
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return pa.array(_strings(rng, n), type=dtype, mask=mask)
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        lengths = rng.integers(0, 20, n)
        return pa.array([rng.bytes(int(k)) for k in lengths], type=dtype, mask=mask)
    raise TypeError(dtype)


def random_array(
    dtype: pa.DataType, n: int, rng: np.random.Generator, null_rate: float = 0.2
) -> pa.Array:
    """``n`` random values of ``dtype`` with nulls everywhere but at the struct level."""
    mask = _mask(rng, n, null_rate)
    if pa.types.is_struct(dtype):
        children = [random_array(f.type, n, rng, null_rate) for f in dtype]
        return pa.StructArray.from_arrays(children, fields=list(dtype))
    if pa.types.is_fixed_size_list(dtype):
        child = random_array(dtype.value_type, n * dtype.list_size, rng, null_rate)
        mask_arr = None if mask is None else pa.array(mask)
        return pa.FixedSizeListArray.from_arrays(child, type=dtype, mask=mask_arr)
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        lengths = rng.integers(0, 5, n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        child = random_array(dtype.value_type, int(offsets[-1]), rng, null_rate)
        cls = pa.LargeListArray if pa.types.is_large_list(dtype) else pa.ListArray
        otype = pa.int64() if pa.types.is_large_list(dtype) else pa.int32()
        mask_arr = None if mask is None else pa.array(mask)
        return cls.from_arrays(pa.array(offsets, otype), child, type=dtype, mask=mask_arr)
    return _leaf(dtype, n, rng, mask)


def seed_of(text: str) -> int:
    """A seed that, unlike ``hash``, is the same in every process."""
    return zlib.crc32(text.encode())


def random_table(types: list[pa.DataType], n: int, seed: int, null_rate: float = 0.2) -> pa.Table:
    rng = np.random.default_rng(seed)
    columns = {f"c{i}": random_array(t, n, rng, null_rate) for i, t in enumerate(types)}
    return pa.table(columns)


def repeated_keys(seed: int, n: int) -> pa.Table:
    """A column ``k`` of ``n`` sorted int64 keys, each repeated 1-7 times (the shape
    of TPC-H's l_orderkey: run-length encoded indices into a dictionary of keys)."""
    rng = np.random.default_rng(seed)
    keys = np.repeat(np.arange(n, dtype=np.int64) * 37 + 5, rng.integers(1, 8, n))[:n]
    return pa.table({"k": keys})
