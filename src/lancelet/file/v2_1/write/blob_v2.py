"""Blob v2 values written into the data file itself (``kind`` inline): each value's
bytes as its own 64-byte aligned region, the column's pages holding descriptors.

pylance reads an inline value of any size, so lancelet keeps every value inline
rather than choosing sidecar files by size as pylance does.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancelet.file.blob_v2 import DESCRIPTOR_TYPE, INLINE
from lancelet.file.container import ALIGNMENT
from lancelet.file.v2_1.write.blob import region
from lancelet.file.writing import PageSink

__all__ = ["inline_descriptors"]


def inline_descriptors(values: pa.Array, sink: PageSink) -> pa.StructArray:
    """Write the values' bytes to the file; their descriptors (null where a value is)."""
    if pa.types.is_binary(values.type):
        values = values.cast(pa.large_binary())
    n = len(values)
    valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    raw_offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)
    offsets = raw_offsets[values.offset : values.offset + n + 1]
    sizes = np.where(valid, np.diff(offsets), 0).astype(np.uint64)
    live = np.flatnonzero(sizes > 0)
    # An empty value points where the next value would start, as pylance's do.
    slots = -(-sizes.astype(np.int64) // ALIGNMENT) * ALIGNMENT
    if live.size:
        first, _ = sink.write_buffer(region(values, offsets, valid, sizes[live]))
    else:
        first = sink.aligned_position()
    positions = (first + np.concatenate(([0], np.cumsum(slots)[:-1]))).astype(np.uint64)
    children = [
        pa.array(np.full(n, INLINE, dtype=np.uint8)),
        pa.array(positions),
        pa.array(sizes),
        pa.array(np.zeros(n, dtype=np.uint32)),
        pa.array(np.full(n, "", dtype=object), pa.string()),
    ]
    mask = None if valid.all() else pa.array(~valid)
    return pa.StructArray.from_arrays(children, fields=list(DESCRIPTOR_TYPE), mask=mask)
