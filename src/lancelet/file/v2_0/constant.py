"""``Constant`` (ArrayEncoding field 13): one value repeated for the whole page.

``Constant.value`` holds the little-endian bytes of a single fixed-width value,
with no length or type tag; the value width comes from the column's type.  The
2.0 message exists in the proto but neither pylance 14 writes it into a 2.0 file
nor does the reference 2.0 reader accept it (its decoder treats it as 2.1-only),
so this is here for completeness and for files from other writers.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from lancelet.errors import CorruptFileError


def decode_constant(
    value: bytes | memoryview, dtype: npt.DTypeLike, num_values: int
) -> npt.NDArray[np.generic]:
    """Return ``num_values`` copies of the single value stored in ``value``."""
    target = np.dtype(dtype)
    raw = bytes(value)
    if len(raw) != target.itemsize:
        raise CorruptFileError(
            f"Constant encoding: value has {len(raw)} bytes, "
            f"a {target} value needs {target.itemsize}"
        )
    if num_values < 0:
        raise CorruptFileError(f"Constant encoding: negative value count {num_values}")
    return np.repeat(np.frombuffer(raw, dtype=target), num_values)


def encode_constant(values: npt.NDArray[np.generic]) -> bytes | None:
    """The ``Constant.value`` bytes when every element is identical, else None."""
    if values.size == 0:
        return None
    flat = np.ascontiguousarray(values.reshape(-1))
    rows = flat.view(np.uint8).reshape(flat.size, flat.dtype.itemsize)
    if not (rows == rows[0]).all():
        return None
    first: bytes = rows[0].tobytes()
    return first
