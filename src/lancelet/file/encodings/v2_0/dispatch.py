"""Walk a 2.0 encoding tree: map each ``ArrayEncoding`` variant to its decoder."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from lancelet._proto import encodings_v2_0_pb2 as pb
from lancelet.errors import UnsupportedEncodingError
from lancelet.file.encodings.v2_0 import (
    binary,
    dictionary,
    fixed_size_list,
    flat,
    nullable,
    packed_struct,
)
from lancelet.file.encodings.v2_0.context import PageContext

DecodeFn = Callable[[PageContext, pb.ArrayEncoding, int, pa.DataType], pa.Array]


def _load_optional() -> dict[str, DecodeFn]:
    # Encodings the reference can emit but lancelet's writer never chooses.
    table: dict[str, DecodeFn] = {}
    from lancelet.file.encodings.v2_0 import fixed_size_binary, fsst, integers

    table["dictionary"] = dictionary.decode
    table["fsst"] = fsst.decode
    table["fixed_size_binary"] = fixed_size_binary.decode
    table["bitpacked"] = integers.decode_bitpacked
    table["bitpacked_for_non_neg"] = integers.decode_non_neg
    table["constant"] = integers.decode_constant
    return table


DECODERS: dict[str, DecodeFn] = {
    "flat": flat.decode,
    "nullable": nullable.decode,
    "fixed_size_list": fixed_size_list.decode,
    "binary": binary.decode,
    "packed_struct": packed_struct.decode,
    **_load_optional(),
}

TakeFn = Callable[[PageContext, pb.ArrayEncoding, int, pa.DataType, np.ndarray], pa.Array]
TAKERS: dict[str, TakeFn] = {
    "binary": binary.take,
    "packed_struct": packed_struct.take,
    "dictionary": dictionary.take,
}


def decode_array(
    ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType
) -> pa.Array:
    kind = enc.WhichOneof("array_encoding")
    decoder = DECODERS.get(kind or "")
    if decoder is None:
        raise UnsupportedEncodingError(
            f"{ctx.path}: {ctx.what} uses the 2.0 encoding {kind!r}, which lancelet cannot decode"
        )
    return decoder(ctx, enc, num_rows, dtype)


def take_array(
    ctx: PageContext, enc: pb.ArrayEncoding, num_rows: int, dtype: pa.DataType, rows: np.ndarray
) -> pa.Array:
    """Rows ``rows`` of the page; encodings with a cheaper path than decode-then-take use it."""
    kind = enc.WhichOneof("array_encoding") or ""
    taker = TAKERS.get(kind)
    if taker is not None:
        return taker(ctx, enc, num_rows, dtype, rows)
    return decode_array(ctx, enc, num_rows, dtype).take(pa.array(rows))
