"""Blob columns (``lance-encoding:blob``) in files 2.1 and later, laid out as pylance
lays them out.

Each value's bytes go into the file as its own 64-byte aligned buffer as soon as its
batch arrives; the column's pages then hold only a *description* per value, a
``(position, size)`` pair, as a mini-block page of a packed struct wrapped in a
``BlobLayout`` (whose layers carry the column's nullability).  An empty value is
``(0, 0)``; a null one has size 0 and its levels in the position: definition level
``<< 16`` (blob columns are never inside lists, so the repetition level is 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from lancelet._proto import encodings_v2_1_pb2 as pb
from lancelet.file.container import ALIGNMENT
from lancelet.file.v2_1.write.blocks import Packed, to_block
from lancelet.file.v2_1.write.page import EncodedPage, Options, packed_page
from lancelet.file.v2_1.write.shred import LeafBatch, LeafPath, page_levels
from lancelet.file.writing import PAD_BYTE, PageSink

__all__ = ["DESCRIPTION_BYTES", "describe", "encode"]

_DESCRIPTION: Final = pa.struct(
    [
        pa.field("position", pa.uint64(), nullable=False),
        pa.field("size", pa.uint64(), nullable=False),
    ]
)
_INNER_PATH: Final = LeafPath(pa.field("description", _DESCRIPTION, nullable=False), "", (False,))
_LEVEL_BITS: Final = 16
DESCRIPTION_BYTES: Final = 16
"""What one value costs the page (what the column's write buffer counts)."""


def describe(batch: LeafBatch, sink: PageSink) -> LeafBatch:
    """Write the batch's values to the file; the batch with their descriptions in
    place of the values (a null value's position is filled in per page)."""
    values = batch.values
    n = len(values)
    valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    raw_offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)
    offsets = raw_offsets[values.offset : values.offset + n + 1]
    sizes = np.where(valid, np.diff(offsets), 0).astype(np.uint64)
    positions = np.zeros(n, dtype=np.uint64)
    live = np.flatnonzero(sizes > 0)
    if live.size:
        first, _ = sink.write_buffer(region(values, offsets, valid, sizes[live]))
        lengths = sizes[live].astype(np.int64)
        slots = -(-lengths // ALIGNMENT) * ALIGNMENT
        positions[live] = (first + np.concatenate(([0], np.cumsum(slots)[:-1]))).astype(np.uint64)
    descriptions = pa.StructArray.from_arrays(
        [pa.array(positions, pa.uint64()), pa.array(sizes, pa.uint64())], fields=list(_DESCRIPTION)
    )
    return LeafBatch(
        descriptions, batch.rep, batch.codes, batch.nulls, batch.empties, batch.num_rows,
        batch.lists,
    )  # fmt: skip


def encode(
    path: LeafPath, batches: Sequence[LeafBatch], options: Options, where: str
) -> EncodedPage:
    """One blob page of the described batches."""
    page = page_levels(path, batches)
    chunks = [b.values for b in batches]
    described = pa.concat_arrays(chunks) if len(chunks) != 1 else chunks[0]
    positions = np.asarray(described.field(0).to_numpy(zero_copy_only=False), dtype=np.uint64)
    sizes = np.asarray(described.field(1).to_numpy(zero_copy_only=False), dtype=np.uint64)
    if page.defs is not None:
        # A null here or above (a child under a null struct may still hold bytes)
        # has only its levels: size 0, levels in the position.
        null = page.defs > 0
        positions = np.where(null, page.defs.astype(np.uint64) << np.uint64(_LEVEL_BITS), positions)
        sizes = np.where(null, np.uint64(0), sizes)
    inner_values = pa.StructArray.from_arrays(
        [pa.array(positions, pa.uint64()), pa.array(sizes, pa.uint64())],
        fields=list(_DESCRIPTION),
    )
    n = len(inner_values)
    inner_batch = LeafBatch(inner_values, None, None, (False,), (False,), n, (False,))
    inner_levels = page_levels(_INNER_PATH, [inner_batch])
    block = to_block(inner_values)
    assert isinstance(block, Packed)  # a struct of fixed-width fields always packs
    inner = packed_page(inner_levels, block, options, where)
    layout = pb.BlobLayout(inner_layout=inner.layout, layers=page.layers)
    return EncodedPage(inner.buffers, pb.PageLayout(blob_layout=layout), page.num_rows)


def region(
    values: pa.Array,
    offsets: npt.NDArray[np.int64],
    valid: npt.NDArray[np.bool_],
    lengths: npt.NDArray[np.uint64],
) -> bytes:
    """The non-empty values' bytes back to back, each but the last padded to a
    multiple of 64 bytes (so each starts aligned, as the file aligns its buffers)."""
    data = np.frombuffer(values.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    if not valid.all():  # a null's slot may still hold bytes
        data = data[np.repeat(valid, np.diff(offsets))]
    ends = np.cumsum(lengths.astype(np.int64))[:-1]
    pads = (-lengths[:-1].astype(np.int64)) % ALIGNMENT
    return np.insert(data, np.repeat(ends, pads), PAD_BYTE).tobytes()
