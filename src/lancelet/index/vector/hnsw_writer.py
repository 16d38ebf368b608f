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
    """The rows of ``levels``, one after another, in batches that share the levels'
    arrays (no copy: the graphs of a large index are most of a build's memory)."""
    schema = graph_schema()
    batches = []
    for level in levels:  # one step per level of each partition's graph
        for start in range(
            0, len(level.nodes), _BATCH_ROWS
        ):  # the writer's peak grows with a batch
            batches.append(_rows(level, start, min(start + _BATCH_ROWS, len(level.nodes))))
    return pa.Table.from_batches(batches, schema)


def _rows(level: GraphLevel, start: int, stop: int) -> pa.RecordBatch:
    first, last = int(level.offsets[start]), int(level.offsets[stop])
    offsets = pa.array(np.asarray(level.offsets[start : stop + 1] - first, dtype=np.int32))
    return pa.record_batch(
        [
            pa.array(level.nodes[start:stop], pa.uint32()),
            pa.ListArray.from_arrays(offsets, pa.array(level.neighbours[first:last], pa.uint32())),
            pa.ListArray.from_arrays(offsets, pa.array(level.distances[first:last], pa.float32())),
        ],
        schema=graph_schema(),
    )


def graph_schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("__vector_id", pa.uint32()),
            pa.field("__neighbors", pa.list_(pa.uint32())),
            pa.field("_distance", pa.list_(pa.float32())),
        ]
    )
