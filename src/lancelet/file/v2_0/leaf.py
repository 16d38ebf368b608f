"""Choosing the encoding tree for a leaf column's page (what lancelet writes)."""

from __future__ import annotations

import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.file.codecs.general import BufferCompression
from lancelet.file.v2_0 import (
    binary,
    dictionary,
    flat,
    nullable,
    packed_struct,
)

VARIABLE_WIDTH = (pa.string(), pa.binary(), pa.large_string(), pa.large_binary())


def encode_values(
    arr: pa.Array, add_buffer: flat.AddBuffer, compression: BufferCompression | None = None
) -> pb.ArrayEncoding:
    """The encoding tree for one page of a leaf column.

    A leaf is a primitive, string, fixed-size-list or packed-struct column.
    ``compression`` (from the field's metadata) applies to string/binary bytes only,
    as in the reference.
    """
    if pa.types.is_dictionary(arr.type):
        return encode_arrow_dictionary(arr, add_buffer)
    if dictionary.worth_encoding(arr):
        # Low-cardinality string pages: the reference prefers a dictionary even when
        # the field asks for compression, and so do we.
        return dictionary.encode(arr, add_buffer)
    if arr.type in VARIABLE_WIDTH:
        # Binary carries its own nulls in the offsets; the reference does not wrap it.
        return binary.encode(arr, add_buffer, compression)
    if pa.types.is_struct(arr.type):
        # Only packed structs reach here; the reference writes them without Nullable.
        return packed_struct.encode(arr, add_buffer)
    if pa.types.is_fixed_size_list(arr.type):
        return nullable.encode(arr, add_buffer, encode_fixed_size_list)
    return nullable.encode(arr, add_buffer, flat.encode)


# The encoders of arrays that hold arrays: their children are leaves of their own.


def encode_arrow_dictionary(
    arr: pa.DictionaryArray, add_buffer: flat.AddBuffer
) -> pb.ArrayEncoding:
    """An Arrow dictionary column as the reference stores it: nulls point at a null item."""
    indices, items = arr.indices, arr.dictionary
    if indices.null_count:
        null_item = pa.nulls(1, items.type)
        indices = indices.fill_null(len(items))
        items = pa.concat_arrays([items, null_item])
    return pb.ArrayEncoding(
        dictionary=pb.Dictionary(
            indices=nullable.encode(indices, add_buffer, flat.encode),
            items=encode_values(items, add_buffer),
            num_dictionary_items=len(items),
        )
    )


def encode_fixed_size_list(arr: pa.Array, add_buffer: flat.AddBuffer) -> pb.ArrayEncoding:
    """``dimension`` items per row, the items one child array."""
    dim = arr.type.list_size
    child = arr.values.slice(arr.offset * dim, len(arr) * dim)
    inner = encode_values(child, add_buffer)
    return pb.ArrayEncoding(fixed_size_list=pb.FixedSizeList(dimension=dim, items=inner))
