"""Decoded values (:mod:`.values`) -> Arrow arrays of a leaf's type.

Nulls come later, from the definition levels; only the items of fixed-size lists
carry their own validity here.  Every buffer is checked against the type before
Arrow sees it (sizes, offsets, UTF-8, decimal and time ranges).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.errors import CorruptFileError, UnsupportedTypeError
from lancelet.file.codecs import jit
from lancelet.file.codecs.kernels import runs as run_kernels
from lancelet.file.v2_0.types import needs_value_check, value_problem
from lancelet.file.v2_1.read.values import I64, Bits, Bools, Fixed, Fsl, Packed, Values, Var


def fixed_bits(dtype: pa.DataType) -> int | None:
    """Bits per value of a byte-aligned fixed-width type (None: not one)."""
    t = pa.types
    if t.is_fixed_size_binary(dtype):
        return int(dtype.byte_width) * 8
    if t.is_integer(dtype) or t.is_floating(dtype) or t.is_decimal(dtype) or t.is_temporal(dtype):
        return int(dtype.bit_width)
    return None


def is_binary_like(dtype: pa.DataType) -> bool:
    t = pa.types
    return bool(
        t.is_string(dtype)
        or t.is_binary(dtype)
        or t.is_large_string(dtype)
        or t.is_large_binary(dtype)
    )


def validity_buffer(valid: Bools | None) -> pa.Buffer | None:
    if valid is None or bool(valid.all()):
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def to_arrow(values: Values, dtype: pa.DataType, valid: Bools | None = None) -> pa.Array:
    """The values as an array of ``dtype`` (``valid``: their validity, if any)."""
    if pa.types.is_null(dtype):
        return pa.nulls(_count(values))
    if pa.types.is_dictionary(dtype):
        return as_dictionary(to_arrow(values, dtype.value_type, valid), dtype)
    if pa.types.is_fixed_size_list(dtype):
        return _fsl(values, dtype, valid)
    if pa.types.is_struct(dtype):
        return _packed(values, dtype, valid)
    if pa.types.is_boolean(dtype):
        return _booleans(values, valid)
    bits = fixed_bits(dtype)
    if bits is not None:
        return _fixed(values, dtype, bits, valid)
    if is_binary_like(dtype):
        if not isinstance(values, Var):
            raise CorruptFileError(f"{dtype} values are stored as fixed-width values")
        return binary_array(dtype, values.offsets, values.data, valid)
    raise UnsupportedTypeError(f"reading {dtype} from a 2.1 page is not supported yet")


def _count(values: Values) -> int:
    return values.count


def _fixed(values: Values, dtype: pa.DataType, bits: int, valid: Bools | None) -> pa.Array:
    if not isinstance(values, Fixed) or values.bits != bits:
        have = values.bits if isinstance(values, Fixed) else type(values).__name__
        raise CorruptFileError(f"{dtype} values are stored as {have}-bit values")
    n = values.count
    arr = pa.Array.from_buffers(
        dtype, n, [validity_buffer(valid), pa.py_buffer(np.ascontiguousarray(values.data))]
    )
    if needs_value_check(dtype):
        problem = value_problem(arr)
        if problem is not None:
            raise CorruptFileError(f"invalid {dtype} values: {problem}")
    return arr


def _booleans(values: Values, valid: Bools | None) -> pa.Array:
    if isinstance(values, Bits) and values.bits_per_value == 1:
        bools = values.bits
    elif isinstance(values, Fixed) and values.bits == 8:
        bools = values.data != 0
    else:
        raise CorruptFileError("boolean values are stored with more than one bit each")
    data = pa.py_buffer(np.packbits(bools, bitorder="little"))
    return pa.Array.from_buffers(pa.bool_(), len(bools), [validity_buffer(valid), data])


def _fsl(values: Values, dtype: pa.DataType, valid: Bools | None) -> pa.Array:
    size = int(dtype.list_size)
    if isinstance(values, Fsl):
        if values.dimension != size:
            raise CorruptFileError(
                f"{dtype} values are stored as lists of {values.dimension} items"
            )
        items = to_arrow(values.items, dtype.value_type, values.validity)
        count = values.count
    elif isinstance(values, Bits) and values.bits_per_value == size:
        # Fixed-size lists of booleans are stored as flat runs of ``size`` bits.
        items = to_arrow(Bits(values.bits, 1, len(values.bits)), dtype.value_type)
        count = values.count
    else:
        raise CorruptFileError(f"{dtype} values are not stored as fixed-size lists")
    if len(items) != count * size:
        raise CorruptFileError(f"{dtype}: {len(items)} items for {count} lists")
    return pa.Array.from_buffers(dtype, count, [validity_buffer(valid)], children=[items])


def _packed(values: Values, dtype: pa.DataType, valid: Bools | None) -> pa.Array:
    if not isinstance(values, Packed) or len(values.fields) != dtype.num_fields:
        raise CorruptFileError(f"{dtype} values are not stored as a packed struct of its fields")
    children = [to_arrow(f, dtype.field(i).type) for i, f in enumerate(values.fields)]
    return pa.Array.from_buffers(dtype, values.count, [validity_buffer(valid)], children=children)


def binary_array(
    dtype: pa.DataType, offsets: np.ndarray, data: np.ndarray, valid: Bools | None
) -> pa.Array:
    """A string/binary array from offsets starting at 0 and the bytes; strings must be
    UTF-8 (checked with one numpy pass for ASCII, Arrow's validation otherwise)."""
    large = pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype)
    n = len(offsets) - 1
    total = int(offsets[-1]) if n >= 0 and len(offsets) else 0
    if total > len(data) or (n > 0 and int(offsets[0]) != 0):
        raise CorruptFileError(f"{dtype} offsets run past their {len(data)} bytes")
    if not large and total >= 2**31:
        raise CorruptFileError(
            f"{total} bytes of values do not fit the 32-bit offsets of {dtype}; "
            "read fewer rows at a time"
        )
    off = np.ascontiguousarray(offsets, dtype=np.int64 if large else np.int32)
    arr = pa.Array.from_buffers(
        dtype,
        n,
        [validity_buffer(valid), pa.py_buffer(off), pa.py_buffer(np.ascontiguousarray(data))],
    )
    is_text = pa.types.is_string(dtype) or pa.types.is_large_string(dtype)
    if is_text and total and int(np.asarray(data[:total]).max()) >= 0x80:
        try:
            arr.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise CorruptFileError(f"a string value is not valid UTF-8 ({exc})") from exc
    return arr


def as_dictionary(arr: pa.Array, dtype: pa.DataType) -> pa.Array:
    """Plain values of a dictionary-typed column, dictionary-encoded as its type says."""
    encoded = pc.dictionary_encode(arr)
    indices = encoded.indices.cast(dtype.index_type)
    return pa.DictionaryArray.from_arrays(indices, encoded.dictionary)


def dictionary_array(
    indices: Values, items: pa.Array, dtype: pa.DataType, valid: Bools | None
) -> pa.Array:
    """Values given as indices into a page dictionary: a dictionary array when the
    column's type is one, else the dictionary items they point at."""
    if not isinstance(indices, Fixed) or indices.bits not in (8, 16, 32, 64):
        raise CorruptFileError("dictionary indices are not stored as integers")
    raw = indices.as_uint()
    if len(raw) and int(raw.max()) >= len(items):
        raise CorruptFileError(
            f"a dictionary index {int(raw.max())} is past the {len(items)} dictionary items"
        )
    # Arrow takes unsigned indices as they are: no widened copy of every index.
    positions = pa.array(raw)
    if valid is not None and not bool(valid.all()):
        positions = pa.array(raw, mask=~valid)
    if pa.types.is_dictionary(dtype):
        return pa.DictionaryArray.from_arrays(positions.cast(dtype.index_type), items)
    return items.take(positions)


def dictionaries_array(items: pa.Array, sizes: I64, counts: list[int], indices: Fixed) -> pa.Array:
    """The items the indices of several pages point at, ``counts[i]`` of them each
    into page ``i``'s dictionary, the ``sizes[i]`` items of ``items`` after those of
    the pages before: the indices shifted, so that one take makes them all."""
    if indices.bits not in (8, 16, 32, 64):
        raise CorruptFileError("dictionary indices are not stored as integers")
    raw = indices.as_uint()
    per_page = np.asarray(counts, dtype=np.int64)
    if len(raw) != int(per_page.sum()):
        raise CorruptFileError("a dictionary index is past its page's dictionary items")
    sizes = np.asarray(sizes, dtype=np.int64)
    if len(sizes) != len(per_page):
        raise ValueError(f"{len(sizes)} dictionaries for {len(per_page)} pages")
    if jit.enabled():
        # One pass, where numpy's widening, checks, repeat and add make five.
        shifted = np.empty(len(raw), dtype=np.int64)
        if run_kernels.shift_runs(raw, per_page, np.cumsum(sizes) - sizes, sizes, shifted) >= 0:
            raise CorruptFileError("a dictionary index is past its page's dictionary items")
        return items.take(pa.array(shifted))
    shifted = raw.astype(np.int64)
    # Checked page by page, on each page's largest index: a per-row look-up of the
    # page's size cost more than the take itself.
    held = per_page > 0
    if len(shifted):
        firsts = (np.cumsum(per_page) - per_page)[held]
        too_far = np.maximum.reduceat(shifted, firsts) >= sizes[held]
        if bool(np.any(too_far)) or int(shifted.min()) < 0:  # 2**63 and up wrap negative
            raise CorruptFileError("a dictionary index is past its page's dictionary items")
    shifted += np.repeat(np.cumsum(sizes) - sizes, per_page)
    return items.take(pa.array(shifted))
