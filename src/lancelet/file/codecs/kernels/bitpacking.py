"""FastLanes bit packing as a compiled loop; same output as
``bitpacking._pack_chunks``."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from lancelet.file.codecs.jit import kernel

UInt = NDArray[np.unsignedinteger]
Positions = NDArray[np.intp]


@kernel
def pack(chunks: UInt, bits: int, positions: Positions, words: UInt) -> None:
    """Pack ``chunks`` (chunks, 1024) into ``words`` (chunks, bits, lanes), zeroed by
    the caller: value row ``r`` of lane ``l`` is ``chunks[:, positions[r, l]]``.

    Values are handled as 64-bit words; storing into a narrower ``words`` drops the
    bits above its width, which the next word receives."""
    width, lanes = positions.shape
    mask = (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    for c in range(chunks.shape[0]):
        for row in range(width):
            word = row * bits // width
            shift = row * bits % width
            spill = shift + bits > width
            for lane in range(lanes):
                value = np.uint64(chunks[c, positions[row, lane]]) & mask
                words[c, word, lane] |= value << np.uint64(shift)
                if spill:
                    words[c, word + 1, lane] |= value >> np.uint64(width - shift)
