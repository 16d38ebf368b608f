"""Blob pages (``BlobLayout``, files 2.1 and later): large binary values stored outside
the page.

The page itself holds one *description* per value, ``struct<position: uint64, size:
uint64>``, encoded by an inner layout (pylance: a mini-block page of a packed struct)
that is never null.  ``position`` is the absolute file offset of the value's bytes and
``size`` their count.  The value's levels are smuggled into the description: size 0
and position 0 is an empty value, size 0 and a non-zero position a null one whose
repetition level is ``position & 0xFFFF`` and definition level ``position >> 16``.  The
blob layout's own ``layers`` give the levels' meaning.

pylance's file reader returns the values (``large_binary``); a decoder built with
``descriptions=True`` returns the descriptions instead, as pylance's 2.1 datasets do.
Values are read one range per value (neighbouring ranges share a read); the
descriptions read must be disjoint ranges inside the file, so a read never asks for
more bytes than the file holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.errors import CorruptFileError, UnsupportedEncodingError
from lancelet.file.codecs._chunks import IntArray, gather_ranges
from lancelet.file.container import RangeSource
from lancelet.file.v2_1.read.fullzip import Levels, PageInfo
from lancelet.file.v2_1.read.fullzip_values import binary_array, select_ranges
from lancelet.file.v2_1.read.page import LevelledPage, PageDecoder
from lancelet.file.v2_1.read.page_buffer import read_whole

__all__ = ["DESCRIPTION_TYPE", "BlobPageDecoder", "InnerDecoder", "decoder"]

DESCRIPTION_TYPE: Final = pa.struct(
    [
        pa.field("position", pa.uint64(), nullable=False),
        pa.field("size", pa.uint64(), nullable=False),
    ]
)
"""The Arrow type of a blob description (what the inner layout decodes to)."""

# Builds the decoder of the descriptions from the inner layout (same page buffers).
InnerDecoder = Callable[[pb.PageLayout, pa.DataType], PageDecoder]

_MERGE_GAP: Final = 4096
_LEVEL_BITS: Final = 16


def decoder(
    source: RangeSource,
    page: PageInfo,
    layout: pb.BlobLayout,
    column_label: str,
    arrow_type: pa.DataType,
    inner: InnerDecoder,
    *,
    page_index: int | None = None,
    descriptions: bool = False,
) -> BlobPageDecoder:
    """A decoder for one blob page of the leaf column ``column_label``.

    ``inner(layout.inner_layout, DESCRIPTION_TYPE)`` must return the decoder of the
    descriptions.  ``arrow_type`` is the column's type: binary / large_binary for
    values, or (with ``descriptions=True``) the descriptions' struct type.
    """
    where = column_label if page_index is None else f"{column_label} page {page_index}"
    what = f"{source.path}: {where}"
    levels = Levels.of(tuple(layout.layers), what)
    if levels.max_rep:
        raise UnsupportedEncodingError(f"{what}: blob values inside lists are not supported")
    if not layout.HasField("inner_layout"):
        raise CorruptFileError(f"{what}: blob page has no inner layout")
    if descriptions:
        if not pa.types.is_struct(arrow_type) or arrow_type.num_fields != 2:
            raise UnsupportedEncodingError(
                f"{what}: blob descriptions cannot be read as {arrow_type}"
            )
    elif arrow_type not in (pa.binary(), pa.large_binary()):
        raise CorruptFileError(f"{what}: a blob page is stored for a {arrow_type} column")
    inner_decoder = inner(layout.inner_layout, DESCRIPTION_TYPE)
    return BlobPageDecoder(source, inner_decoder, levels, arrow_type, what, descriptions)


class BlobPageDecoder:
    """Reads rows of one blob page (see :class:`~lancelet.file.v2_1.read.page.PageDecoder`)."""

    def __init__(
        self,
        source: RangeSource,
        inner: PageDecoder,
        levels: Levels,
        arrow_type: pa.DataType,
        what: str,
        descriptions: bool,
    ) -> None:
        self._source = source
        self._inner = inner
        self._levels = levels
        self._type = arrow_type
        self._what = what
        self._descriptions = descriptions

    @property
    def num_rows(self) -> int:
        return self._inner.num_rows

    def read(self, start: int, end: int) -> LevelledPage:
        return self._decode(self._inner.read(start, end))

    def take(self, rows: npt.NDArray[np.int64]) -> LevelledPage:
        return self._decode(self._inner.take(rows))

    def _decode(self, inner: LevelledPage) -> LevelledPage:
        positions, sizes = self._split(inner)
        null = (sizes == 0) & (positions != 0)
        defs = np.where(null, positions >> np.uint64(_LEVEL_BITS), 0)
        reps = np.where(null, positions & np.uint64(0xFFFF), 0)
        if null.any() and (
            int(defs.max()) > self._levels.max_def or int(reps.max()) or int(defs[null].min()) == 0
        ):
            raise CorruptFileError(
                f"{self._what}: a blob description holds levels the page's layers do not allow"
            )
        if self._descriptions:
            values = inner.values.cast(self._type)
        else:
            values = self._values(positions, np.where(null, 0, sizes))
        needs_defs = self._levels.max_def > 0
        return LevelledPage(
            None, defs.astype(np.uint16) if needs_defs else None, values, self._levels.layers
        )

    def _split(self, inner: LevelledPage) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
        values = inner.values
        if (
            inner.rep is not None
            or (inner.defs is not None and bool(inner.defs.any()))
            or not pa.types.is_struct(values.type)
            or values.type.num_fields != 2
            or values.null_count
        ):
            raise CorruptFileError(
                f"{self._what}: blob descriptions are not plain (position, size) pairs"
            )
        columns = [values.field(i) for i in range(2)]
        if any(c.type != pa.uint64() or c.null_count for c in columns):
            raise CorruptFileError(
                f"{self._what}: blob descriptions are not 64-bit positions and sizes"
            )
        positions, sizes = (
            np.asarray(c.to_numpy(zero_copy_only=False), dtype=np.uint64) for c in columns
        )
        return positions, sizes

    def _values(self, positions: npt.NDArray[np.uint64], sizes: npt.NDArray[np.uint64]) -> pa.Array:
        live = np.flatnonzero(sizes > 0)
        self._check_ranges(positions[live], sizes[live])
        starts = positions[live].astype(np.int64)
        lengths = sizes[live].astype(np.int64)
        all_sizes = np.zeros(sizes.size, dtype=np.int64)
        all_sizes[live] = lengths
        offsets = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(all_sizes, out=offsets[1:])
        return binary_array(self._type, offsets, self._read(starts, lengths), self._what)

    def _check_ranges(self, starts: npt.NDArray[np.uint64], sizes: npt.NDArray[np.uint64]) -> None:
        limit = np.uint64(self._source.size)
        outside = (starts > limit) | (sizes > limit - np.minimum(starts, limit))
        if outside.any():
            i = int(np.argmax(outside))
            raise CorruptFileError(
                f"{self._what}: a blob of {int(sizes[i])} bytes at {int(starts[i])} runs past "
                f"the end of the file ({self._source.size} bytes)"
            )
        order = np.argsort(starts, kind="stable")
        ends = starts[order] + sizes[order]
        if bool(np.any(starts[order][1:] < ends[:-1])):
            raise CorruptFileError(f"{self._what}: blob descriptions name overlapping byte ranges")

    def _read(self, starts: IntArray, lengths: IntArray) -> npt.NDArray[np.uint8]:
        """The ranges' bytes in row order; ranges close together in the file share a
        read (one read per group, the bytes then gathered with whole-array operations)."""
        if not starts.size:
            return np.zeros(0, dtype=np.uint8)
        order = np.argsort(starts, kind="stable")
        first, last = starts[order], starts[order] + lengths[order]
        group = np.concatenate([[0], np.cumsum(first[1:] - last[:-1] > _MERGE_GAP)])
        cuts = np.flatnonzero(np.diff(group)) + 1
        lows = first[np.concatenate([[0], cuts])]
        highs = last[np.concatenate([cuts - 1, [first.size - 1]])]
        chunks = [
            read_whole(self._source, lo, hi - lo)
            for lo, hi in zip(lows.tolist(), highs.tolist(), strict=True)
        ]
        buf = chunks[0] if len(chunks) == 1 else np.concatenate(chunks)
        base = np.cumsum(highs - lows) - (highs - lows) - lows
        at = np.empty(starts.size, dtype=np.int64)
        at[order] = first + base[group]
        if bool(np.all(np.diff(at) >= 0)):
            return select_ranges(buf, at, lengths)
        gathered: npt.NDArray[np.uint8] = buf[gather_ranges(at, lengths)]
        return gathered
