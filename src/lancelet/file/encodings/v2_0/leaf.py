"""Choosing the encoding tree for a leaf column's page (what lancelet writes)."""

from __future__ import annotations

import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.file.encodings.v2_0 import binary, fixed_size_list, flat, nullable

VARIABLE_WIDTH = (pa.string(), pa.binary(), pa.large_string(), pa.large_binary())


def encode_values(arr: pa.Array, add_buffer: flat.AddBuffer) -> pb.ArrayEncoding:
    """The encoding tree for one page of a leaf (primitive, string or fixed-size-list) column."""
    if arr.type in VARIABLE_WIDTH:
        # Binary carries its own nulls in the offsets; the reference does not wrap it.
        return binary.encode(arr, add_buffer)
    if pa.types.is_fixed_size_list(arr.type):
        return nullable.encode(arr, add_buffer, fixed_size_list.encode)
    return nullable.encode(arr, add_buffer, flat.encode)
