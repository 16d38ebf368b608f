"""Dictionary: small-integer indices into a page-local array of distinct values."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.file.v2_0 import binary, flat
from lancelet.file.v2_0.context import PageContext


def decode(ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType) -> pa.Array:
    return take(ctx, enc, num_rows, dtype, None)


def take(
    ctx: PageContext,
    enc: pb.ArrayEncoding,
    num_rows: int,
    dtype: pa.DataType,
    rows: np.ndarray | None,
) -> pa.Array:
    """Rows ``rows`` (all when None): pick the indices first, then look up only those."""
    if pa.types.is_dictionary(dtype):
        full = _decode_arrow_dictionary(ctx, enc.dictionary, num_rows, dtype)
        return full if rows is None else full.take(pa.array(rows))
    msg = enc.dictionary
    items = ctx.decode(msg.items, msg.num_dictionary_items, dtype)
    indices = ctx.decode_u64(msg.indices, num_rows)
    if rows is not None:
        indices = indices[rows]
    indices = indices.astype(np.int64)
    # Index 0 is null; real items are numbered from 1.
    valid = indices > 0
    positions = np.where(valid, indices - 1, 0)
    if len(positions) and positions.max() >= len(items):
        raise ctx.corrupt(f"dictionary index {int(positions.max()) + 1} exceeds {len(items)} items")
    mask = None if valid.all() else ~valid
    return items.take(pa.array(positions, mask=mask))


def _decode_arrow_dictionary(
    ctx: PageContext, msg: pb.Dictionary, num_rows: int, dtype: pa.DictionaryType
) -> pa.Array:
    """A column that was an Arrow dictionary: zero-based indices of the original type.

    The reference stores a null row as an index to a null dictionary item; such
    rows come back as null indices, the way the reference reads them, and the null
    item is left out of the dictionary (pyarrow cannot put together, to concatenate
    or take from, chunks whose dictionaries hold nulls).
    """
    items = ctx.decode(msg.items, msg.num_dictionary_items, dtype.value_type)
    indices = ctx.decode(msg.indices, num_rows, dtype.index_type)
    positions = np.asarray(indices.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    if len(positions) and (positions.min() < 0 or positions.max() >= len(items)):
        raise ctx.corrupt(f"a dictionary index lies outside the {len(items)} items")
    if items.null_count:
        item_valid = np.asarray(items.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        valid = item_valid[positions] & np.asarray(
            indices.is_valid().to_numpy(zero_copy_only=False)
        )
        # Each valid item's position once the null ones are gone.
        compacted = np.cumsum(item_valid) - 1
        indices = pa.array(compacted[positions], type=dtype.index_type, mask=~valid)
        items = items.filter(pa.array(item_valid))
    return pa.DictionaryArray.from_arrays(indices, items)


# The reference dictionary-encodes a string page of at least this many rows when it
# has fewer than this many distinct values; lancelet follows it so files match in size.
DICTIONARY_MIN_ROWS = 100
DICTIONARY_MAX_VALUES = 100


def worth_encoding(arr: pa.Array) -> bool:
    if arr.type != pa.string() or len(arr) < DICTIONARY_MIN_ROWS or arr.null_count == len(arr):
        return False
    # A cheap look at the head rejects high-cardinality pages before a full pass.
    if pc.count_distinct(arr.slice(0, 4 * DICTIONARY_MAX_VALUES)).as_py() >= DICTIONARY_MAX_VALUES:
        return False
    return bool(pc.count_distinct(arr).as_py() < DICTIONARY_MAX_VALUES)


def encode(arr: pa.Array, add_buffer: flat.AddBuffer) -> pb.ArrayEncoding:
    """Indices are u8 with 0 for null and k for the k-th distinct value (first appearance)."""
    encoded = pc.dictionary_encode(arr)
    positions = encoded.indices.to_numpy(zero_copy_only=False)
    codes = np.where(encoded.indices.is_valid().to_numpy(zero_copy_only=False), positions + 1, 0)
    index = add_buffer(pa.py_buffer(codes.astype(np.uint8)))
    flat_codes = pb.ArrayEncoding(
        flat=pb.Flat(bits_per_value=8, buffer=pb.Buffer(buffer_index=index))
    )
    indices = pb.ArrayEncoding(nullable=pb.Nullable(no_nulls=pb.Nullable.NoNull(values=flat_codes)))
    items = binary.encode(encoded.dictionary, add_buffer)
    return pb.ArrayEncoding(
        dictionary=pb.Dictionary(
            indices=indices, items=items, num_dictionary_items=len(encoded.dictionary)
        )
    )
