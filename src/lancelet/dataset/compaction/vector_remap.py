"""An IVF_FLAT / IVF_PQ segment rewritten for the rows a compaction moved, as
pylance 14 rewrites it in the compaction's commit (measured): the same centroids,
codebook and loss; each row under its new address, in its partition, storing what
it stored; rows the compaction dropped (deleted) left out; no partition joined or
split.  (On a dataset with stable row ids the segment lists row ids, which a
compaction does not change: it is not rewritten.)"""

from __future__ import annotations

import numpy as np

from lancelet import io
from lancelet._proto import index_pb2
from lancelet.errors import CorruptIndexError
from lancelet.file import LanceFileReader
from lancelet.index import files
from lancelet.index.remapping import AddressMapping
from lancelet.index.vector import IvfIndex
from lancelet.index.vector.layout import INDEX_FILE
from lancelet.index.vector.segment_writer import Quantizer, SegmentRows, write_segment
from lancelet.index.vector.storage import FlatStorage, PqStorage


def remap_vector_segment(
    source: io.Place, mapping: AddressMapping, directory: io.Place, version: str
) -> None:
    """Write the segment in ``source`` with its rows moved by ``mapping`` into
    ``directory``, in Lance file format ``version``."""
    index = IvfIndex.open(source)
    rows = segment_rows(index)
    moved, kept = mapping.apply(rows.row_ids)
    rows = SegmentRows(moved, rows.partitions, rows.payload).take(np.flatnonzero(kept))
    write_segment(directory, quantizer(index), rows, recorded_loss(source), version)


def segment_rows(index: IvfIndex) -> SegmentRows:
    """Every row of an open segment: key, partition and what it stores."""
    partitions = np.repeat(np.arange(index.num_partitions), index.lengths)
    storage = index.storage
    payload = storage.vectors if isinstance(storage, FlatStorage) else storage.codes
    return SegmentRows(index.row_ids.astype(np.uint64), partitions, payload)


def quantizer(index: IvfIndex) -> Quantizer:
    codebook = index.storage.codebook if isinstance(index.storage, PqStorage) else None
    return Quantizer(index.index_type, index.metric, index.centroids, codebook)


def recorded_loss(source: io.Place) -> float:
    """The k-means loss the segment's ``index.idx`` records."""
    path = source.join(INDEX_FILE)
    with files.reading(path):
        reader = LanceFileReader(path.path, file_io=path.file_io)
        position = files.metadata(reader).get("lance:ivf", "")
        if not position.isdigit():
            raise CorruptIndexError(f"{path}: 'lance:ivf' is {position!r}, not a buffer number")
        raw = reader.read_global_buffer(int(position))
    return float(index_pb2.IVF.FromString(raw).loss)
