"""How a read is cut into Spark partitions: by the bytes it reads, as Spark cuts files.

Spark sizes a Parquet scan's partitions from file sizes: a split is at most
``maxPartitionBytes`` (128 MiB), and smaller when the whole read divided by the
cores would leave cores idle; small files are packed together, each counting an
"open cost" (4 MiB) besides its bytes.  The same rules here, with a fragment's data
files standing for files and the columns a query reads for its share of them: a
small table is cut so that every core gets a piece, a large one into pieces of about
128 MiB, and many small fragments share a task.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from lancelet.table.fragment import Fragment

MAX_PARTITION_BYTES = 128 << 20  # spark.sql.files.maxPartitionBytes' default
OPEN_COST_BYTES = 4 << 20  # spark.sql.files.openCostInBytes' default


@dataclass(frozen=True)
class Piece:
    """Physical rows ``[start, stop)`` of a fragment and the bytes a read of them
    is expected to take."""

    fragment: Fragment
    start: int
    stop: int
    size: int


@dataclass(frozen=True)
class Sizing:
    max_bytes: int = MAX_PARTITION_BYTES
    open_cost: int = OPEN_COST_BYTES
    # The cores a read should keep busy; the planning machine's when not given
    # (in local mode, the cores Spark runs on).
    parallelism: int = 0

    def cores(self) -> int:
        return self.parallelism or os.cpu_count() or 1

    def split_bytes(self, sizes: Iterable[int]) -> int:
        """The size of one piece of a read of files of these sizes (Spark's rule:
        each file counts its open cost too)."""
        total = sum(size + self.open_cost for size in sizes)
        return min(self.max_bytes, max(self.open_cost, total // self.cores()))


def read_bytes(fragment: Fragment, fields: set[int]) -> int:
    """The bytes of ``fragment``'s data files that hold ``fields``: each file's size
    (as the manifest records it) shared among its fields by count, since a file
    records no size per column; without a recorded size, 8 bytes per value."""
    total = 0
    for data_file in fragment.files:
        held = [f for f in data_file.fields if f >= 0]
        read = sum(1 for f in held if f in fields)
        if not read:
            continue
        if data_file.file_size_bytes:
            total += data_file.file_size_bytes * read // len(held)
        else:
            total += fragment.physical_rows * 8 * read
    return total


def partitions(
    fragments: Sequence[Fragment], sizes: Mapping[int, int], sizing: Sizing
) -> list[list[Piece]]:
    """The read's partitions: every fragment with rows cut into pieces of about one
    split's bytes (``sizes``: the bytes the read takes of each fragment, by id),
    the pieces packed into partitions of about one split."""
    live = [f for f in fragments if f.num_rows]
    split = sizing.split_bytes(sizes.get(f.id, 0) for f in live)
    return packed(pieces(live, sizes, split), split, sizing.open_cost)


def whole_fragments(
    fragments: Sequence[Fragment], sizes: Mapping[int, int], sizing: Sizing
) -> list[list[Piece]]:
    """As :func:`partitions`, but with no fragment cut: for reads that take a fragment
    whole (a scan with lance's ``filter`` option)."""
    live = [f for f in fragments if f.num_rows]
    split = sizing.split_bytes(sizes.get(f.id, 0) for f in live)
    whole = [Piece(f, 0, f.physical_rows, sizes.get(f.id, 0)) for f in live]
    return packed(whole, split, sizing.open_cost)


def pieces(fragments: Sequence[Fragment], sizes: Mapping[int, int], split: int) -> list[Piece]:
    """Each fragment with rows cut into pieces of at most about ``split`` bytes."""
    out = []
    for fragment in fragments:
        if not fragment.num_rows:
            continue
        rows, size = fragment.physical_rows, sizes.get(fragment.id, 0)
        count = max(1, min(rows, -(-size // split)))
        bounds = [rows * i // count for i in range(count + 1)]
        for start, stop in itertools.pairwise(bounds):
            out.append(Piece(fragment, start, stop, size * (stop - start) // rows))
    return out


def packed(found: Sequence[Piece], split: int, open_cost: int) -> list[list[Piece]]:
    """Pieces gathered into partitions of at most ``split`` bytes, each piece also
    counting the open cost, biggest first, as Spark packs files; a partition's
    pieces are kept in fragment order."""
    out: list[list[Piece]] = []
    current: list[Piece] = []
    held = 0
    for piece in sorted(found, key=lambda p: -p.size):
        if current and held + piece.size > split:
            out.append(current)
            current, held = [], 0
        current.append(piece)
        held += piece.size + open_cost
    if current:
        out.append(current)
    order = {id(p): i for i, p in enumerate(found)}
    return [sorted(group, key=lambda p: order[id(p)]) for group in out]
