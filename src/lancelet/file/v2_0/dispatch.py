"""Walk a 2.0 encoding tree: map each ``ArrayEncoding`` variant to its decoder."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.errors import UnsupportedEncodingError
from lancelet.file.v2_0 import (
    binary,
    dictionary,
    fixed_size_binary,
    fixed_size_list,
    flat,
    fsst,
    integers,
    nullable,
    packed_struct,
    types,
)
from lancelet.file.v2_0.context import PageContext

DecodeFn = Callable[[PageContext, pb.ArrayEncoding, int, pa.DataType], pa.Array]


DECODERS: dict[str, DecodeFn] = {
    "flat": flat.decode,
    "nullable": nullable.decode,
    "fixed_size_list": fixed_size_list.decode,
    "binary": binary.decode,
    "packed_struct": packed_struct.decode,
    # Encodings the reference can emit but lancelet's writer never chooses.
    "dictionary": dictionary.decode,
    "fsst": fsst.decode,
    "fixed_size_binary": fixed_size_binary.decode,
    "bitpacked": integers.decode_bitpacked,
    "bitpacked_for_non_neg": integers.decode_non_neg,
    "constant": integers.decode_constant,
}

TakeFn = Callable[[PageContext, pb.ArrayEncoding, int, pa.DataType, np.ndarray], pa.Array]
TAKERS: dict[str, TakeFn] = {
    "binary": binary.take,
    "packed_struct": packed_struct.take,
    "dictionary": dictionary.take,
}


def _any(dtype: pa.DataType) -> bool:
    return True


def _dictionary_target(dtype: pa.DataType) -> bool:
    fixed_or_variable = types.is_variable_width(dtype) or types.is_fixed_width(dtype)
    return fixed_or_variable or pa.types.is_dictionary(dtype)


# The Arrow types each encoding can build; the schema and the page encodings are
# stored apart, so a pair outside this table means one of them is damaged.
ACCEPTS: dict[str, Callable[[pa.DataType], bool]] = {
    "flat": types.is_fixed_width,
    "nullable": _any,  # each variant checks (an all-null array can be of any type)
    "fixed_size_list": pa.types.is_fixed_size_list,
    "binary": types.is_variable_width,
    "fsst": types.is_variable_width,
    "fixed_size_binary": types.is_variable_width,
    "dictionary": _dictionary_target,
    "packed_struct": pa.types.is_struct,
    "bitpacked": types.is_fixed_width_bytes,
    "bitpacked_for_non_neg": types.is_fixed_width_bytes,
    "constant": types.is_fixed_width_bytes,
}


def _encoding_kind(ctx: PageContext, enc: pb.ArrayEncoding, dtype: pa.DataType) -> str:
    kind = enc.WhichOneof("array_encoding") or ""
    if kind not in DECODERS:
        raise UnsupportedEncodingError(
            f"{ctx.path}: {ctx.what} uses the 2.0 encoding {kind or None!r}, "
            "which lancelet cannot decode"
        )
    if kind == "packed_struct" and types.is_variable_width(dtype):
        # pylance's 2.0 blob columns: (position, size) descriptions of values stored
        # elsewhere in the file, which lancelet does not follow yet.
        raise UnsupportedEncodingError(
            f"{ctx.path}: {ctx.what} is a 2.0 blob column (lance-encoding:blob), which "
            "lancelet cannot read yet"
        )
    if not ACCEPTS[kind](dtype):
        raise ctx.corrupt(f"the {kind} encoding cannot hold values of type {dtype}")
    return kind


def _checked(
    ctx: PageContext, kind: str, arr: pa.Array, num_rows: int, dtype: pa.DataType
) -> pa.Array:
    if len(arr) != num_rows or arr.type != dtype:
        raise ctx.corrupt(
            f"the {kind} encoding decoded {len(arr)} values of {arr.type}, "
            f"expected {num_rows} of {dtype}"
        )
    return arr


def decode_array(
    ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType
) -> pa.Array:
    kind = _encoding_kind(ctx, enc, dtype)
    return _checked(ctx, kind, DECODERS[kind](ctx, enc, num_rows, dtype), num_rows, dtype)


def take_array(
    ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType, rows: np.ndarray
) -> pa.Array:
    """Rows ``rows`` of the page; encodings with a cheaper path than decode-then-take use it."""
    kind = _encoding_kind(ctx, enc, dtype)
    taker = TAKERS.get(kind)
    if taker is None:
        return decode_array(ctx, enc, num_rows, dtype).take(pa.array(rows))
    return _checked(ctx, kind, taker(ctx, enc, num_rows, dtype, rows), len(rows), dtype)
