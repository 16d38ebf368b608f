"""``index.idx`` of an IVF_HNSW_* index as pylance 14 writes it (the layout is in
``docs/vector-index-format.md``, "HNSW sub-index", and is what
:mod:`lancelet.index.vector.hnsw` reads).

Columns ``__vector_id: uint32``, ``__neighbors: list<uint32>`` and ``_distance:
list<float32>``: each partition's graph, level after level (a level's nodes in node
order), partition after partition.  Schema metadata ``lance:index`` (the type and
metric), ``lance:ivf`` (the IVF message: the centroids, the loss, and each
partition's offset and row count in this file) and ``lance:hnsw`` (a JSON list of
one JSON text per partition: its entry point, the build parameters and where its
levels start).  ``auxiliary.idx`` is the IVF type's of the same storage.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet._proto import index_pb2
from lancelet.index.vector.hnsw_build import Graph, GraphLevel, HnswParams
from lancelet.index.vector.ivf_flat_writer import write_file

_COMPACT = (",", ":")
_BATCH_ROWS = 8192


def write_index_file(
    path: io.Place,
    graphs: list[Graph],
    params: HnswParams,
    centroids: np.ndarray,
    loss: float,
    metric: str,
    version: str,
    index_type: str,
) -> None:
    """``index.idx`` holding one graph per partition (in partition order)."""
    count, dimension = centroids.shape
    levels = [level for graph in graphs for level in graph.levels]
    lengths = np.array([graph.level_offsets[-1] for graph in graphs], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    tensor = index_pb2.Tensor(
        data_type=index_pb2.Tensor.FLOAT32,
        shape=[count, dimension],
        data=np.ascontiguousarray(centroids, dtype="<f4").tobytes(),
    )
    ivf = index_pb2.IVF(
        offsets=offsets.tolist(), lengths=lengths.tolist(), centroids_tensor=tensor, loss=loss
    )
    entries = [entry(graph, params) for graph in graphs]
    meta = {
        "lance:index": json.dumps(
            {"type": index_type, "distance_type": metric}, separators=_COMPACT
        ),
        "lance:hnsw": json.dumps(entries, separators=_COMPACT),
    }
    write_file(path, graph_table(levels), ivf, meta, version)


def entry(graph: Graph, params: HnswParams) -> str:
    """One graph's ``lance:hnsw`` JSON text."""
    metadata = {
        "entry_point": graph.entry_point,
        "params": params.metadata(),
        "level_offsets": graph.level_offsets,
    }
    return json.dumps(metadata, separators=_COMPACT)


def graph_table(levels: list[GraphLevel]) -> pa.Table:
    """The rows of ``levels``, one after another."""
    if not levels:
        return graph_schema().empty_table()
    ids = np.concatenate([level.nodes for level in levels])
    lists = [np.diff(level.offsets) for level in levels]
    offsets = np.concatenate([[0], np.cumsum(np.concatenate(lists))]).astype(np.int32)
    neighbours = np.concatenate([level.neighbours for level in levels])
    distances = np.concatenate([level.distances for level in levels])
    table = pa.table(
        [
            pa.array(ids, pa.uint32()),
            pa.ListArray.from_arrays(
                pa.array(offsets, pa.int32()), pa.array(neighbours, pa.uint32())
            ),
            pa.ListArray.from_arrays(
                pa.array(offsets, pa.int32()), pa.array(distances, pa.float32())
            ),
        ],
        schema=graph_schema(),
    )
    # Written in batches: the file writer's peak memory grows with the batch.
    return pa.Table.from_batches(table.to_batches(max_chunksize=_BATCH_ROWS), graph_schema())


def graph_schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("__vector_id", pa.uint32()),
            pa.field("__neighbors", pa.list_(pa.uint32())),
            pa.field("_distance", pa.list_(pa.float32())),
        ]
    )
