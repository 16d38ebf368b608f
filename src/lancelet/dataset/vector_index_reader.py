"""pylance's ``lance.dataset.VectorIndexReader``: the partitions of a vector index,
as tables of the row ids they hold (and, asked, what the index keeps of each
vector: ``flat`` vectors for IVF_FLAT, ``__pq_code`` for IVF_PQ as stored).
Like pylance it reads the index's first segment."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lancelet.dataset.read.ivf_search import opened
from lancelet.errors import (
    ArgumentError,
    IndexNotFoundError,
    PartitionOutOfRangeError,
    UnsupportedFunctionError,
)
from lancelet.index.vector import IvfIndex
from lancelet.index.vector.storage import FlatStorage, PqStorage
from lancelet.table.index import index_type

_VECTOR_PREFIXES = ("IVF_", "HNSW")


class VectorIndexReader:
    """Reads the partitions of the vector index ``index_name`` of ``dataset``."""

    def __init__(self, dataset: Any, index_name: str) -> None:
        snapshot = dataset.snapshot
        segments = [i for i in snapshot.manifest.indices if i.name == index_name]
        if not segments:
            raise IndexNotFoundError(f'Index "{index_name}" not found')
        kind = index_type(segments[0].index_details)
        if not kind.startswith(_VECTOR_PREFIXES):
            raise ArgumentError(f"Index {index_name} is not vector index")
        self.dataset = dataset
        self.index_name = index_name
        self._index: IvfIndex = opened(snapshot.store, segments[0])

    def num_partitions(self) -> int:
        return self._index.num_partitions

    def read_partition(self, partition_id: int, *, with_vector: bool = False) -> pa.Table:
        """The rows of partition ``partition_id``: ``_rowid``, and with
        ``with_vector`` what the index stores for each."""
        count = self.num_partitions()
        if not isinstance(partition_id, int) or not 0 <= partition_id < count:
            raise PartitionOutOfRangeError(
                f"Partition id {partition_id} is out of range, expected 0 <= partition_id < {count}"
            )
        row_ids = pa.array(self._index.partition_row_ids(partition_id), pa.uint64())
        if not with_vector:
            return pa.table({"_rowid": row_ids})
        name, values = self._stored(partition_id)
        # pylance's flat vectors are a non-nullable field; its PQ codes are not.
        field = pa.field(name, values.type, nullable=name != "flat")
        schema = pa.schema([pa.field("_rowid", pa.uint64()), field])
        return pa.Table.from_arrays([row_ids, values], schema=schema)

    def _stored(self, partition_id: int) -> tuple[str, pa.Array]:
        storage, rows = self._index.storage, self._index.partition(partition_id)
        if isinstance(storage, FlatStorage):
            vectors = storage.vectors[rows]
            flat = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1])
            return "flat", flat
        if isinstance(storage, PqStorage):
            # As pylance returns them: the file's bytes, which hold the partition's
            # codes column-major (all first codes, then all second codes...), cut
            # into rows of num_sub_vectors.
            codes = storage.codes[rows]
            return "__pq_code", pa.FixedSizeListArray.from_arrays(
                pa.array(codes.T.ravel(), pa.uint8()), codes.shape[1]
            )
        raise UnsupportedFunctionError(
            f"VectorIndexReader: lancelet does not read the stored vectors of a "
            f"{self._index.index_type} index (index {self.index_name!r})"
        )
