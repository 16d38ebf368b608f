"""Constant pages: every visible value is one scalar, or null.

2.1 writes only the layers (``AllNullLayout``, the same field): all values are null,
and when the layers need levels, buffers 0 and 1 hold the raw u16 repetition and
definition levels (either may be empty).  2.2 (``ConstantLayout``) adds the scalar:
``inline_value`` for a fixed-width value of at most 32 bytes, else a leading page
buffer ``u32 n, n x u32 length, the n Arrow buffers of a one-value array``; its
levels may be compressed (``rep_compression``/``def_compression``, with their value
counts).  So the buffers are ``[]``, ``[rep, def]``, ``[scalar]`` or
``[scalar, rep, def]``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import CorruptFileError
from lancelet.file.v2_1.read import compression
from lancelet.file.v2_1.read.arrow import fixed_bits, is_binary_like, to_arrow
from lancelet.file.v2_1.read.bounds import max_values
from lancelet.file.v2_1.read.context import PageRef, guarded
from lancelet.file.v2_1.read.levels import LayerShape, check_levels, visible
from lancelet.file.v2_1.read.page import LevelledPage
from lancelet.file.v2_1.read.values import I64, U8, Bits, Fixed, Values, Var, gather_ranges

_INLINE_MAX = 32


class ConstantPage:
    """A :class:`~.page.PageDecoder` for a constant (or all-null) page."""

    def __init__(
        self,
        ref: PageRef,
        layout: pb.ConstantLayout,
        buffers: list[U8],
        num_rows: int,
        dtype: pa.DataType,
    ) -> None:
        self.ref = ref
        self.dtype = dtype
        self._rows = num_rows
        self.shape = LayerShape.of(tuple(layout.layers))
        guarded(ref, lambda: self._setup(layout, buffers))

    def _setup(self, layout: pb.ConstantLayout, buffers: list[U8]) -> None:
        inline = bytes(layout.inline_value) if layout.HasField("inline_value") else None
        if inline is not None and len(buffers) not in (0, 2):
            raise CorruptFileError(f"an inline constant with {len(buffers)} buffers")
        if inline is None and len(buffers) not in (0, 1, 2, 3):
            raise CorruptFileError(f"a constant page with {len(buffers)} buffers")
        scalar_buffer = buffers[0] if inline is None and len(buffers) in (1, 3) else None
        levels = buffers[-2:] if len(buffers) in (2, 3) else []
        self.scalar = self._scalar(inline, scalar_buffer)
        self.rep = self.defs = None
        if levels:
            self.rep = self._levels(levels[0], layout, "rep", "repetition", None)
            entries = self._rows if self.rep is None else len(self.rep)
            self.defs = self._levels(levels[1], layout, "def", "definition", entries)
        check_levels(self.shape, self.rep, self.defs)
        self._index_rows()

    def _scalar(self, inline: bytes | None, buffer: U8 | None) -> bytes | None:
        """The constant's bytes (None: every value is null)."""
        dtype = self.dtype.value_type if pa.types.is_dictionary(self.dtype) else self.dtype
        if inline is not None:
            bits = 8 if pa.types.is_boolean(dtype) else fixed_bits(dtype)
            if bits is None or len(inline) != bits // 8 or len(inline) > _INLINE_MAX:
                raise CorruptFileError(f"an inline constant of {len(inline)} bytes for {dtype}")
            return inline
        if buffer is None:
            return None
        parts = _scalar_buffers(buffer)
        if is_binary_like(dtype):
            return _binary_scalar(parts)
        bits = fixed_bits(dtype)
        if len(parts) != 1 or bits is None or len(parts[0]) != bits // 8:
            raise CorruptFileError(f"a constant's buffers do not hold one {dtype} value")
        return parts[0]

    def _levels(
        self, data: U8, layout: pb.ConstantLayout, name: str, what: str, entries: int | None
    ) -> np.ndarray | None:
        """Levels of one kind; ``entries`` is how many there must be (None: at least
        one per row)."""
        if not len(data):
            return None
        enc = layout.rep_compression if name == "rep" else layout.def_compression
        if enc.WhichOneof("compression") is not None:
            count = int(layout.num_rep_values if name == "rep" else layout.num_def_values)
            self._check_count(enc, len(data), count, entries, what)
            codec = compression.block_codec(enc)
            return compression.levels_of(codec.decode(data, count), count, what)
        if len(data) % 2:
            raise CorruptFileError(f"{what} levels of {len(data)} bytes are not u16 values")
        return np.ascontiguousarray(data).view("<u2")

    def _check_count(
        self, enc: pb.CompressiveEncoding, nbytes: int, count: int, entries: int | None, what: str
    ) -> None:
        """Refuse a level count the page cannot have, before decoding allocates for it:
        without lists (or after the repetition levels) it is known; with lists there are
        at least as many as rows, and at most what the buffer holds (rows alone when
        its encoding packs any number of values into no bytes)."""
        if entries is not None:
            if count != entries:
                raise CorruptFileError(f"{count} {what} levels for {entries} entries")
            return
        most = max_values(enc, nbytes)
        if count < self._rows or (most is not None and count > max(most, self._rows)):
            raise CorruptFileError(
                f"{count} {what} levels for {self._rows} rows in a buffer of {nbytes} bytes"
            )

    def _index_rows(self) -> None:
        if self.rep is not None:
            starts = np.flatnonzero(self.rep == self.shape.max_rep)
            if len(starts) != self._rows or (len(self.rep) and starts[0] != 0):
                raise CorruptFileError(
                    f"the repetition levels hold {len(starts)} rows, the page {self._rows}"
                )
            self.row_starts: I64 = np.append(starts, len(self.rep)).astype(np.int64)
            entries = len(self.rep)
        else:
            self.row_starts = np.arange(self._rows + 1, dtype=np.int64)
            entries = self._rows
        if self.defs is not None and len(self.defs) != entries:
            raise CorruptFileError(f"{len(self.defs)} definition levels for {entries} entries")
        self.entries = entries
        no_value = self.scalar is None and self.defs is None and self.shape.max_def == 0
        if no_value and not pa.types.is_null(self.dtype) and self._rows:
            raise CorruptFileError("an all-null page whose layers allow no null")

    @property
    def num_rows(self) -> int:
        return self._rows

    def read(self, start: int, end: int) -> LevelledPage:
        if not 0 <= start <= end <= self._rows:
            raise IndexError(f"rows [{start}, {end}) are outside the page's {self._rows}")
        lo, hi = int(self.row_starts[start]), int(self.row_starts[end])
        return guarded(self.ref, lambda: self._entries(slice(lo, hi), hi - lo))

    def take(self, rows: np.ndarray) -> LevelledPage:
        rows = np.asarray(rows, dtype=np.int64)
        lo = self.row_starts[rows]
        picks = gather_ranges(lo, self.row_starts[rows + 1] - lo)
        return guarded(self.ref, lambda: self._entries(picks, len(picks)))

    def _entries(self, picks: slice | I64, count: int) -> LevelledPage:
        rep = None if self.rep is None else self.rep[picks]
        defs = None if self.defs is None else self.defs[picks]
        if defs is None and self.scalar is None and self.shape.max_def:
            # All null with no levels stored: every entry is a null item.
            defs = np.ones(count, dtype=np.uint16)
        n_values = int(visible(self.shape, defs, count).sum())
        return LevelledPage(rep, defs, self._values(n_values), self.shape.layers)

    def _values(self, count: int) -> pa.Array:
        if self.scalar is None:
            return pa.nulls(count, self.dtype)
        return to_arrow(_repeat(self.scalar, self.dtype, count), self.dtype)


def _scalar_buffers(buffer: U8) -> list[bytes]:
    raw = bytes(buffer)
    if len(raw) < 4:
        raise CorruptFileError("a constant's value buffer is too short for its header")
    n = int.from_bytes(raw[:4], "little")
    head = 4 + 4 * n
    if n > 3 or len(raw) < head:
        raise CorruptFileError(f"a constant's value buffer claims {n} buffers")
    lengths = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "little") for i in range(n)]
    if head + sum(lengths) != len(raw):
        raise CorruptFileError("a constant's value buffers do not fill its page buffer")
    out, pos = [], head
    for length in lengths:
        out.append(raw[pos : pos + length])
        pos += length
    return out


def _binary_scalar(parts: list[bytes]) -> bytes:
    if len(parts) != 2 or len(parts[0]) not in (8, 16):
        raise CorruptFileError("a constant string or binary value without its two buffers")
    width = len(parts[0]) // 2
    first = int.from_bytes(parts[0][:width], "little", signed=True)
    last = int.from_bytes(parts[0][width:], "little", signed=True)
    if not 0 <= first <= last <= len(parts[1]):
        raise CorruptFileError("a constant string or binary value's offsets leave its bytes")
    return parts[1][first:last]


def _repeat(scalar: bytes, dtype: pa.DataType, count: int) -> Values:
    value = np.frombuffer(scalar, dtype=np.uint8)
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    if is_binary_like(dtype):
        offsets = np.arange(count + 1, dtype=np.int64) * len(scalar)
        return Var(offsets, np.tile(value, count))
    if pa.types.is_boolean(dtype):
        return Bits(np.full(count, bool(value.any())), 1, count)
    return Fixed(np.tile(value, count), 8 * len(scalar), count)
