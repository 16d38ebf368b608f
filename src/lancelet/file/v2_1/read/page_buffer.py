"""A page buffer read range by range, as decoding needs its bytes.

A mini-block page's chunk buffer holds every chunk of the page; a read of a few rows
decodes only the chunks that hold them (:mod:`.miniblock`), so only those chunks'
bytes are read from storage: a point lookup through an index reads a chunk, not the
page, and the reads counted (``ScanStatistics.bytes_read``, ``lance.bytes_read_counter``)
are the bytes decoded, as in pylance.  The page's other buffers (chunk sizes,
dictionary, repetition index) are small or needed whole and are read at once.
"""

from __future__ import annotations

import numpy as np

from lancelet.file.container import RangeSource
from lancelet.file.v2_1.read.values import I64, U8


class PageBuffer:
    """``size`` bytes of ``source`` at ``offset``, not read until asked for."""

    def __init__(self, source: RangeSource, offset: int, size: int) -> None:
        self.source = source
        self.offset = offset
        self.size = size

    def __len__(self) -> int:
        return self.size

    def whole(self) -> U8:
        """The buffer's bytes, read at once (a small buffer needed whole)."""
        return read_whole(self.source, self.offset, self.size)

    def gather(self, starts: I64, sizes: I64) -> tuple[U8, I64]:
        """The ranges ``[starts, starts + sizes)`` of the buffer (ascending, not
        overlapping, inside it) in one array, and where each starts in that array.
        Ranges that touch are read as one; one run of them comes back without a copy."""
        if not len(starts):
            return np.zeros(0, dtype=np.uint8), starts
        lo, hi = int(starts[0]), int(starts[-1] + sizes[-1])
        if hi - lo == int(sizes.sum()):
            # One run (ascending ranges that fill their span touch): a whole buffer or
            # page, the common case, read without working out the runs.
            return read_whole(self.source, self.offset + lo, hi - lo), starts - lo
        firsts, lasts = _runs(starts, sizes)
        run_starts, run_ends = starts[firsts], starts[lasts] + sizes[lasts]
        pieces = [
            read_whole(self.source, self.offset + int(lo), int(hi - lo))
            for lo, hi in zip(run_starts.tolist(), run_ends.tolist(), strict=True)
        ]
        if len(pieces) == 1:
            return pieces[0], starts - run_starts[0]
        lengths = run_ends - run_starts
        placed = np.cumsum(lengths) - lengths  # where each run lands in the joined array
        run_of = np.repeat(np.arange(len(pieces)), lasts - firsts + 1)
        return np.concatenate(pieces), starts - run_starts[run_of] + placed[run_of]

    def ranges(self, starts: I64, sizes: I64) -> list[tuple[int, int]]:
        """Where in the file :meth:`gather` of these ranges reads: ``(offset, length)``
        of each run of touching ranges (what a take announces before it reads)."""
        if not len(starts):
            return []
        firsts, lasts = _runs(starts, sizes)
        lo = starts[firsts] + self.offset
        hi = starts[lasts] + sizes[lasts] + self.offset
        return list(zip(lo.tolist(), (hi - lo).tolist(), strict=True))


def _runs(starts: I64, sizes: I64) -> tuple[I64, I64]:
    """The first and last range of each run of ranges that touch."""
    breaks = np.flatnonzero(starts[1:] != starts[:-1] + sizes[:-1]) + 1
    firsts = np.concatenate([[0], breaks])
    lasts = np.concatenate([breaks - 1, [len(starts) - 1]])
    return firsts, lasts


def read_whole(source: RangeSource, offset: int, size: int) -> U8:
    """``size`` bytes of ``source`` at ``offset`` (range-checked by the caller), read
    at once (as a numpy view where the source has one: a local file)."""
    as_array = getattr(source, "read_array", None)
    if as_array is not None:
        found: U8 = as_array(offset, size)
        return found
    return np.frombuffer(source.read(offset, size), dtype=np.uint8)
