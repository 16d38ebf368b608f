"""An IVF_FLAT / IVF_PQ / IVF_SQ / IVF_HNSW_* segment rewritten for the rows a compaction moved, as
pylance 14 rewrites it in the compaction's commit (measured): the same centroids,
codebook and loss; each row under its new address, in its partition, storing what
it stored; rows the compaction dropped (deleted) left out; no partition joined or
split; an HNSW segment's graphs built anew over its remaining rows, as pylance
rebuilds them.  (On a dataset with stable row ids the segment lists row ids, which a
compaction does not change: it is not rewritten.)"""

from __future__ import annotations

import numpy as np

from lancelet import io
from lancelet.index.remapping import AddressMapping
from lancelet.index.vector import IvfIndex, layout, legacy_layout
from lancelet.index.vector.segment_writer import (
    SegmentRows,
    quantizer,
    recorded_loss,
    segment_rows,
    write_segment,
)


def remap_vector_segment(
    source: io.Place, mapping: AddressMapping, directory: io.Place, version: str
) -> None:
    """Write the segment in ``source`` with its rows moved by ``mapping`` into
    ``directory``, in Lance file format ``version``."""
    if layout.file_version(source) == "Legacy":
        # pylance keeps a legacy index legacy through a compaction.
        legacy_layout.remap(
            source.join(layout.INDEX_FILE), directory.join(layout.INDEX_FILE), mapping
        )
        return
    index = IvfIndex.open(source)
    rows = segment_rows(index)
    moved, kept = mapping.apply(rows.row_ids)
    rows = SegmentRows(moved, rows.partitions, rows.payload).take(np.flatnonzero(kept))
    write_segment(directory, quantizer(index), rows, recorded_loss(source), version)
