"""The values of a full-zip page: per-value compressions and the Arrow arrays they become.

A full-zip page's ``value_compression`` must be *transparent*: it keeps every value
apart, so one value can be read alone.  Fixed-width values are ``Flat`` (whole bytes)
or a ``FixedSizeList`` of ``Flat`` items, where a list with nullable items carries,
before the items of each value, a validity bitmap per nullable layer (outermost
first, ``ceil(items so far / 8)`` bytes each).  Variable-width values are ``Variable``
bytes, ``Fsst`` (one symbol table, every value compressed on its own), ``General``
(every value a zstd / lz4 buffer of its own) or, in 2.2, a ``VariablePackedStruct``
whose fields use those same encodings.

Everything here works on all values of a read at once, except ``General``, whose
values are independent compressed buffers (writers use it for values of 32 KiB and
more, so a loop per value costs little next to the decompression).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file.codecs.fsst import fsst_decompress, parse_symbol_table
from lancelet.file.codecs.general import decompress_buffer
from lancelet.file.codecs.packed import (
    FixedField,
    VariableColumn,
    VariableField,
    decode_variable_packed,
)
from lancelet.file.v2_0.types import needs_value_check, value_problem

IntArray = npt.NDArray[np.int64]
Bytes = npt.NDArray[np.uint8]
BoolArray = npt.NDArray[np.bool_]
# (offsets, bytes, which values are valid) -> (offsets, bytes) after decompression.
ByteDecoder = Callable[[IntArray, Bytes, BoolArray], tuple[IntArray, Bytes]]

_SCHEMES = {pb.COMPRESSION_ALGORITHM_ZSTD: "zstd", pb.COMPRESSION_ALGORITHM_LZ4: "lz4"}
_BINARY = (pa.binary(), pa.string(), pa.large_binary(), pa.large_string())


def _unsupported(what: str, thing: str) -> UnsupportedEncodingError:
    return UnsupportedEncodingError(f"{what}: {thing} is not supported in a full-zip page")


# ---------------------------------------------------------------------------
# fixed-width values
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FixedValues:
    """How one fixed-width value is laid out: ``width`` bytes in all, FSL layers
    ``(dimension, has_validity)`` from the outside in, and the items' bit width.

    With ``null_items``, the items of the innermost layer are all null and stored
    as nothing (pylance writes a ``Constant`` without a value in place of their
    encoding, also in place of inner fixed-size lists): only the bitmaps remain.
    """

    width: int
    layers: tuple[tuple[int, bool], ...]
    item_bits: int
    null_items: bool = False

    def build(self, raw: Bytes, count: int, arrow_type: pa.DataType, what: str) -> pa.Array:
        """``count`` values from ``raw`` (``count * width`` bytes) as ``arrow_type``."""
        rows = raw.reshape(count, self.width)
        data_bytes = self.width - sum(self._validity_bytes())
        data = np.ascontiguousarray(rows[:, self.width - data_bytes :]).reshape(-1)
        if not self.layers:
            if pa.types.is_boolean(arrow_type):
                return _byte_booleans(data, count, what)
            return _primitive(arrow_type, data, count)
        return self._nested(rows, data, count, arrow_type)

    def _validity_bytes(self) -> list[int]:
        sizes, items = [], 1
        for dim, has_validity in self.layers:
            items *= dim
            sizes.append((items + 7) // 8 if has_validity else 0)
        return sizes

    def _nested(self, rows: Bytes, data: Bytes, count: int, arrow_type: pa.DataType) -> pa.Array:
        types = [arrow_type]
        for _ in self.layers:
            types.append(types[-1].value_type)
        items = [count]
        for dim, _ in self.layers:
            items.append(items[-1] * dim)
        bitmaps = self._bitmaps(rows, count)
        if self.null_items:
            child = pa.nulls(items[-1], types[-1])
        else:
            child = _primitive(types[-1], data, items[-1], bitmaps[-1])
        for depth in range(len(self.layers) - 1, 0, -1):
            child = pa.Array.from_buffers(
                types[depth], items[depth], [bitmaps[depth - 1]], children=[child]
            )
        return pa.Array.from_buffers(types[0], count, [None], children=[child])

    def _bitmaps(self, rows: Bytes, count: int) -> list[pa.Buffer | None]:
        """Each layer's item validity, one Arrow bitmap over all rows' items."""
        out: list[pa.Buffer | None] = []
        at, items = 0, 1
        for (dim, has_validity), size in zip(self.layers, self._validity_bytes(), strict=True):
            items *= dim
            if not has_validity:
                out.append(None)
                continue
            bits = np.unpackbits(rows[:, at : at + size], axis=1, bitorder="little")[:, :items]
            out.append(pa.py_buffer(np.packbits(bits.reshape(-1), bitorder="little")))
            at += size
        return out


def _byte_width(arrow_type: pa.DataType) -> int | None:
    """Bytes per value of a plain fixed-width Arrow type (None for booleans and others)."""
    t = pa.types
    plain = (
        t.is_integer(arrow_type)
        or t.is_floating(arrow_type)
        or t.is_decimal(arrow_type)
        or t.is_temporal(arrow_type)
        or t.is_fixed_size_binary(arrow_type)
    ) and not t.is_interval(arrow_type)
    return arrow_type.bit_width // 8 if plain else None


def _byte_booleans(data: Bytes, count: int, what: str) -> pa.Array:
    """Booleans stored a byte each (0 or 1), as pylance zips them."""
    if data.size and int(data.max()) > 1:
        raise CorruptFileError(f"{what}: a boolean value is stored as {int(data.max())}")
    bitmap = np.packbits(data.astype(bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), count, [None, pa.py_buffer(bitmap)])


def _primitive(
    arrow_type: pa.DataType, data: Bytes, count: int, bitmap: pa.Buffer | None = None
) -> pa.Array:
    return pa.Array.from_buffers(arrow_type, count, [bitmap, pa.py_buffer(data)])


def fixed_values(
    enc: pb.CompressiveEncoding, bits_per_value: int, arrow_type: pa.DataType, what: str
) -> FixedValues:
    """The layout of a fixed-width page's values, checked against the Arrow type."""
    layers: list[tuple[int, bool]] = []
    target = arrow_type
    while enc.WhichOneof("compression") == "fixed_size_list":
        fsl = enc.fixed_size_list
        if not pa.types.is_fixed_size_list(target) or target.list_size != fsl.items_per_value:
            raise CorruptFileError(
                f"{what}: a fixed-size list of {fsl.items_per_value} items is stored for a "
                f"{arrow_type} column"
            )
        layers.append((int(fsl.items_per_value), bool(fsl.has_validity)))
        target, enc = target.value_type, fsl.values
    null_items = _null_constant(enc) and bool(layers) and layers[-1][1]
    if null_items:
        item_bits = 0
    elif enc.WhichOneof("compression") != "flat" or enc.flat.HasField("data"):
        raise _unsupported(what, f"value compression {enc.WhichOneof('compression')}")
    else:
        item_bits = int(enc.flat.bits_per_value)
        _check_item(target, item_bits, arrow_type, bool(layers), what)
    values = FixedValues(0, tuple(layers), item_bits)
    items = int(np.prod([d for d, _ in layers], dtype=np.int64)) if layers else 1
    data_bits = item_bits * items
    width = sum(values._validity_bytes()) + data_bits // 8
    if data_bits % 8 or width * 8 != bits_per_value or width == 0:
        raise CorruptFileError(
            f"{what}: values of {bits_per_value} bits do not match their encoding "
            f"({items} items of {item_bits} bits)"
        )
    return FixedValues(width, tuple(layers), item_bits, null_items)


def _null_constant(enc: pb.CompressiveEncoding) -> bool:
    return enc.WhichOneof("compression") == "constant" and not enc.constant.HasField("value")


def _check_item(
    target: pa.DataType, item_bits: int, arrow_type: pa.DataType, in_list: bool, what: str
) -> None:
    """Items are the type's width; booleans are bits inside a fixed-size list and a
    byte each on their own."""
    width = _byte_width(target)
    fits = (width is not None and width * 8 == item_bits) or (
        pa.types.is_boolean(target) and item_bits == (1 if in_list else 8)
    )
    if not fits:
        raise CorruptFileError(
            f"{what}: {item_bits}-bit values are stored for a {arrow_type} column"
        )


# ---------------------------------------------------------------------------
# variable-width values
# ---------------------------------------------------------------------------


def _plain(offsets: IntArray, data: Bytes, valid: BoolArray) -> tuple[IntArray, Bytes]:
    return offsets, data


def _fsst(symbol_table: bytes, what: str) -> ByteDecoder:
    try:
        table = parse_symbol_table(symbol_table)
    except CorruptFileError as exc:
        raise CorruptFileError(f"{what}: {exc}") from exc

    def decode(offsets: IntArray, data: Bytes, valid: BoolArray) -> tuple[IntArray, Bytes]:
        try:
            return fsst_decompress(table, data, offsets)
        except CorruptFileError as exc:
            raise CorruptFileError(f"{what}: {exc}") from exc

    return decode


def _general(scheme: str, what: str) -> ByteDecoder:
    def decode(offsets: IntArray, data: Bytes, valid: BoolArray) -> tuple[IntArray, Bytes]:
        parts: list[bytes] = []
        sizes = np.zeros(offsets.size - 1, dtype=np.int64)
        raw = data.tobytes()
        for i in np.flatnonzero(valid).tolist():
            try:
                part = decompress_buffer(scheme, raw[offsets[i] : offsets[i + 1]])
            except CorruptFileError as exc:
                raise CorruptFileError(f"{what}: value {i}: {exc}") from exc
            parts.append(part)
            sizes[i] = len(part)
        out = np.zeros(offsets.size, dtype=np.int64)
        np.cumsum(sizes, out=out[1:])
        return out, np.frombuffer(b"".join(parts), dtype=np.uint8)

    return decode


def variable_decoder(enc: pb.CompressiveEncoding, what: str) -> ByteDecoder:
    """The per-value decompression of ``Variable`` / ``Fsst`` / ``General`` values."""
    kind = enc.WhichOneof("compression")
    if kind == "variable":
        _check_offsets(enc.variable, what)
        return _plain
    if kind == "fsst" and enc.fsst.values.WhichOneof("compression") == "variable":
        _check_offsets(enc.fsst.values.variable, what)
        return _fsst(enc.fsst.symbol_table, what)
    if kind == "general" and enc.general.values.WhichOneof("compression") == "variable":
        scheme = _SCHEMES.get(enc.general.compression.scheme)
        if scheme is None:
            raise _unsupported(what, f"compression scheme {enc.general.compression.scheme}")
        return _general(scheme, what)
    raise _unsupported(what, f"value compression {kind}")


def _check_offsets(variable: pb.Variable, what: str) -> None:
    if variable.HasField("values"):
        raise _unsupported(what, "a compressed Variable value buffer")


def binary_array(arrow_type: pa.DataType, offsets: IntArray, data: Bytes, what: str) -> pa.Array:
    """A binary / string array from checked offsets (count + 1, from 0) and bytes."""
    large = pa.types.is_large_binary(arrow_type) or pa.types.is_large_string(arrow_type)
    if not large and offsets.size and int(offsets[-1]) >= 2**31:
        raise UnsupportedEncodingError(
            f"{what}: more than 2 GiB of values for a {arrow_type} column"
        )
    kind = np.int64 if large else np.int32
    count = offsets.size - 1
    arr = pa.Array.from_buffers(
        arrow_type, count, [None, pa.py_buffer(offsets.astype(kind)), pa.py_buffer(data)]
    )
    is_text = pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
    if is_text and data.size and int(data.max()) >= 0x80:
        try:
            arr.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise CorruptFileError(f"{what}: a string value is not valid UTF-8 ({exc})") from exc
    return arr


@dataclass(frozen=True)
class VariableValues:
    """Variable-width values: a byte decoder, and for a packed struct its fields."""

    decode: ByteDecoder
    fields: tuple[_PackedField, ...] | None = None

    def build(
        self,
        offsets: IntArray,
        data: Bytes,
        valid: BoolArray,
        arrow_type: pa.DataType,
        what: str,
    ) -> pa.Array:
        """The values ``data[offsets[i]:offsets[i + 1]]`` as ``arrow_type``; values that
        are not ``valid`` (null items) are empty and become placeholders."""
        if self.fields is None:
            plain_offsets, plain = self.decode(offsets, data, valid)
            return binary_array(arrow_type, plain_offsets, plain, what)
        return _packed_struct(self.fields, offsets, data, valid, arrow_type, what)


@dataclass(frozen=True)
class _PackedField:
    layout: FixedField | VariableField
    fixed: FixedValues | None
    decode: ByteDecoder | None


def variable_values(
    enc: pb.CompressiveEncoding, arrow_type: pa.DataType, what: str
) -> VariableValues:
    """The layout of a variable-width page's values, checked against the Arrow type."""
    if enc.WhichOneof("compression") == "variable_packed_struct":
        if not pa.types.is_struct(arrow_type):
            raise CorruptFileError(f"{what}: a packed struct is stored for a {arrow_type} column")
        fields = enc.variable_packed_struct.fields
        if len(fields) != arrow_type.num_fields:
            raise CorruptFileError(
                f"{what}: the packed struct stores {len(fields)} fields, "
                f"the schema has {arrow_type.num_fields}"
            )
        packed = tuple(
            _packed_field(f, arrow_type.field(i).type, f"{what}: field {i}")
            for i, f in enumerate(fields)
        )
        return VariableValues(_plain, packed)
    if arrow_type not in _BINARY:
        raise CorruptFileError(
            f"{what}: variable-width values are stored for a {arrow_type} column"
        )
    return VariableValues(variable_decoder(enc, what))


def _packed_field(
    field: pb.VariablePackedStruct.FieldEncoding, arrow_type: pa.DataType, what: str
) -> _PackedField:
    layout = field.WhichOneof("layout")
    if layout == "bits_per_value":
        fixed = fixed_values(field.value, int(field.bits_per_value), arrow_type, what)
        return _PackedField(FixedField(fixed.width), fixed, None)
    if layout == "bits_per_length" and field.bits_per_length in (32, 64):
        if arrow_type not in _BINARY:
            raise CorruptFileError(f"{what}: variable-width values for a {arrow_type} field")
        prefix = VariableField(int(field.bits_per_length) // 8)
        return _PackedField(prefix, None, variable_decoder(field.value, what))
    raise CorruptFileError(f"{what}: packed struct field has no usable layout ({layout})")


def _packed_struct(
    fields: tuple[_PackedField, ...],
    offsets: IntArray,
    data: Bytes,
    valid: BoolArray,
    arrow_type: pa.DataType,
    what: str,
) -> pa.Array:
    count = offsets.size - 1
    parts = decode_variable_packed(
        data, offsets, [f.layout for f in fields], valid=valid, what=what
    )
    children = []
    for index, (field, part) in enumerate(zip(fields, parts, strict=True)):
        child_type = arrow_type.field(index).type
        label = f"{what}: field {index}"
        if isinstance(part, VariableColumn):
            assert field.decode is not None
            plain_offsets, plain = field.decode(part.offsets, part.data, valid)
            children.append(binary_array(child_type, plain_offsets, plain, label))
        else:
            assert field.fixed is not None
            children.append(field.fixed.build(part.reshape(-1), count, child_type, label))
    return pa.StructArray.from_arrays(children, fields=list(arrow_type))


def check_values(arr: pa.Array, valid: BoolArray, what: str) -> None:
    """Refuse valid values Arrow would reject (decimals too wide, times past a day)."""
    if not needs_value_check(arr.type):
        return
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    children = _children(arr)
    if children is None:
        masked = pa.Array.from_buffers(arr.type, len(arr), [bitmap, *arr.buffers()[1:]])
    else:
        masked = pa.Array.from_buffers(arr.type, len(arr), [bitmap], children=children)
    problem = value_problem(masked)
    if problem is not None:
        raise CorruptFileError(f"{what}: {problem}")


def _children(arr: pa.Array) -> list[pa.Array] | None:
    if pa.types.is_fixed_size_list(arr.type):
        return [arr.values]
    if pa.types.is_struct(arr.type):
        return [arr.field(i) for i in range(arr.type.num_fields)]
    return None


def select_ranges(
    buf: npt.NDArray[np.uint8], starts: IntArray, sizes: IntArray
) -> npt.NDArray[np.uint8]:
    """The bytes of ascending, disjoint ranges, concatenated (one mask, no index array)."""
    if not starts.size:
        return np.zeros(0, dtype=np.uint8)
    ends = starts + sizes
    gaps = starts - np.concatenate([[0], ends[:-1]])
    runs = np.empty(2 * starts.size + 1, dtype=np.int64)
    runs[0:-1:2] = gaps
    runs[1::2] = sizes
    runs[-1] = buf.size - int(ends[-1])
    pattern = np.zeros(runs.size, dtype=bool)
    pattern[1::2] = True
    selected: npt.NDArray[np.uint8] = buf[np.repeat(pattern, runs)]
    return selected
