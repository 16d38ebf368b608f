"""Writing an IVF_FLAT, IVF_PQ, IVF_SQ, IVF_RQ or IVF_HNSW_* index segment from rows already
quantized the way an existing segment quantizes them: what ``optimize_indices`` (a delta segment, a
merge of segments) and compaction (a segment whose rows moved) write, as pylance
14 writes them (layout: ``docs/vector-index-format.md``).

New rows join the partition of their nearest centroid by l2 (cosine: their unit
vectors; dot: the centroids are unit vectors, so nearest is also largest product),
and an IVF_PQ segment encodes each sub-vector as its code word of smallest l2
distance from the residual (l2, cosine) or of largest product with the vector
itself (dot); pylance's delta segments hold exactly these partitions and codes
(measured on every row).  A segment's loss is the sum of its new rows' distances
to their centroids (squared l2; for dot ``1 - c·x``), as pylance records it.
An IVF_SQ segment keeps the first segment's bounds (pylance's deltas and merges
do, measured); an IVF_HNSW_* segment's graphs are built anew over its rows with the
first segment's ``m``, ``ef_construction`` and ``max_level``, as pylance rebuilds
them (its graphs are random: no two builds agree edge for edge).  An IVF_RQ
segment keeps the first segment's rotation and bits (pylance's deltas do, measured);
its rows' codes and factors travel as one byte row each (``ivf_rq_writer``'s
payload).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet._proto import index_pb2
from lancelet.errors import ArgumentError, CorruptIndexError
from lancelet.file import LanceFileReader
from lancelet.index import files
from lancelet.index.vector import (
    ivf_hnsw,
    ivf_rq_writer,
    ivf_sq_writer,
    kmeans,
    layout,
    legacy_layout,
    pq_train,
)
from lancelet.index.vector.hnsw_build import HnswParams
from lancelet.index.vector.ivf import IvfIndex
from lancelet.index.vector.ivf_flat_writer import auxiliary_schema
from lancelet.index.vector.layout import AUXILIARY_FILE, INDEX_FILE
from lancelet.index.vector.rabitq import RabitqStorage
from lancelet.index.vector.sq_storage import SqStorage
from lancelet.index.vector.storage import FlatStorage, PqStorage

# Rows encoded at once: bounds the (rows, sub-vectors, 256, sub-dimension) block.
_ENCODE_VALUES = 1 << 22


@dataclass(frozen=True)
class SegmentRows:
    """Rows of a segment: their keys (uint64), partitions (int64) and stored
    payload (IVF_FLAT: (n, d) float32 vectors; IVF_PQ: (n, m) uint8 codes)."""

    row_ids: np.ndarray
    partitions: np.ndarray
    payload: np.ndarray

    @staticmethod
    def concat(parts: list[SegmentRows]) -> SegmentRows:
        return SegmentRows(
            np.concatenate([p.row_ids for p in parts]).astype(np.uint64),
            np.concatenate([p.partitions for p in parts]).astype(np.int64),
            np.concatenate([p.payload for p in parts]),
        )

    def take(self, positions: np.ndarray) -> SegmentRows:
        return SegmentRows(
            self.row_ids[positions], self.partitions[positions], self.payload[positions]
        )


@dataclass(frozen=True)
class RqRotation:
    signs: np.ndarray
    num_bits: int


@dataclass(frozen=True)
class Quantizer:
    """What a segment's rows are stored by: its type, metric, centroids and (PQ)
    codebook of shape (sub-vectors, 256, sub-dimension)."""

    index_type: str
    metric: str
    centroids: np.ndarray
    codebook: np.ndarray | None
    # IVF_SQ storage: its (start, end).
    bounds: tuple[float, float] | None = None
    # IVF_HNSW_*: the graphs' build parameters.
    graph: HnswParams | None = None
    # IVF_RQ: the rotation's sign bytes and the bits per dimension.
    rotation: RqRotation | None = None

    @property
    def is_flat(self) -> bool:
        return self.codebook is None and self.bounds is None and self.rotation is None

    def partitions(self, vectors: np.ndarray) -> np.ndarray:
        """The partition of each vector (unit vectors already, for cosine)."""
        return kmeans.assign(vectors, self.centroids, kmeans.L2)

    def loss(self, vectors: np.ndarray, partitions: np.ndarray) -> float:
        chosen = self.centroids[partitions].astype(np.float64)
        if self.metric == "dot":
            return float(np.sum(1 - np.einsum("ij,ij->i", vectors, chosen)))
        difference = vectors.astype(np.float64) - chosen
        return float(np.einsum("ij,ij->", difference, difference))

    def payload(self, vectors: np.ndarray, partitions: np.ndarray) -> np.ndarray:
        if self.rotation is not None:
            signs, bits = self.rotation.signs, self.rotation.num_bits
            work = np.asarray(vectors, dtype=np.float32)
            rq = ivf_rq_writer.encode(work, partitions, self.centroids, signs, bits, self.metric)
            return ivf_rq_writer.to_payload(rq)
        if self.bounds is not None:
            return ivf_sq_writer.encode(vectors, *self.bounds)
        if self.codebook is None:
            return np.ascontiguousarray(vectors, dtype=np.float32)
        if self.metric == "dot":
            return encode(vectors, self.codebook, largest_product=True)
        residual = vectors - self.centroids[partitions]
        return encode(residual.astype(np.float32), self.codebook, largest_product=False)


def encode(vectors: np.ndarray, codebook: np.ndarray, largest_product: bool) -> np.ndarray:
    """(n, sub-vectors) uint8 PQ codes of ``vectors``."""
    sub_vectors, words, sub_dimension = codebook.shape
    parts = vectors.reshape(len(vectors), sub_vectors, 1, sub_dimension)
    codes = np.empty((len(vectors), sub_vectors), dtype=np.uint8)
    step = max(1, _ENCODE_VALUES // (words * sub_vectors * sub_dimension))
    for start in range(0, len(vectors), step):  # one step per block of rows
        block = parts[start : start + step]
        if largest_product:
            codes[start : start + step] = np.argmax(np.sum(block * codebook, axis=-1), axis=-1)
        else:
            difference = block - codebook
            distances = np.sum(difference * difference, axis=-1)
            codes[start : start + step] = np.argmin(distances, axis=-1)
    return codes


def write_segment(
    directory: io.Place,
    quantizer: Quantizer,
    rows: SegmentRows,
    loss: float,
    version: str,
) -> None:
    """Write ``index.idx`` and ``auxiliary.idx`` of a segment holding ``rows``,
    grouped by partition (row ids ascending within one)."""
    rows = rows.take(np.lexsort((rows.row_ids, rows.partitions)))
    graph = quantizer.graph
    if quantizer.rotation is not None:
        dimension = quantizer.centroids.shape[1]
        ex_bits = quantizer.rotation.num_bits - 1
        ivf_rq_writer.write_ivf_rq(
            directory,
            rows.row_ids,
            ivf_rq_writer.from_payload(rows.payload, dimension, ex_bits),
            rows.partitions,
            quantizer.centroids,
            loss,
            quantizer.rotation.signs,
            quantizer.metric,
            version,
        )
    elif quantizer.bounds is not None:
        ivf_sq_writer.write_ivf_sq(
            directory,
            rows.row_ids,
            rows.payload,
            rows.partitions,
            quantizer.centroids,
            loss,
            quantizer.bounds,
            quantizer.metric,
            version,
            index_file=graph is None,
        )
    else:
        if graph is None:
            _write_index_file(directory.join(INDEX_FILE), quantizer, loss, version)
        _write_auxiliary(directory, quantizer, rows, version)
    if graph is not None:
        ivf_hnsw.write_graphs(
            directory,
            _graph_vectors(quantizer, rows.payload),
            quantizer.metric == "dot" or (quantizer.is_flat and quantizer.metric == "cosine"),
            rows.partitions,
            quantizer.centroids,
            loss,
            quantizer.metric,
            version,
            quantizer.index_type,
            graph,
        )


def _graph_vectors(quantizer: Quantizer, payload: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """What the graphs are built on: the stored vectors, or what the codes stand for."""
    if quantizer.bounds is not None:
        return ivf_hnsw.sq_vectors(payload, *quantizer.bounds)
    if quantizer.codebook is not None:
        return ivf_hnsw.pq_vectors(payload, quantizer.codebook)
    return payload.__getitem__


def _write_auxiliary(
    directory: io.Place, quantizer: Quantizer, rows: SegmentRows, version: str
) -> None:
    count, dimension = quantizer.centroids.shape
    lengths = np.bincount(rows.partitions, minlength=count).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    ivf = index_pb2.IVF(offsets=offsets.tolist(), lengths=lengths.tolist())
    buffers = [ivf.SerializeToString()]
    meta = {"distance_type": quantizer.metric}
    row_ids = pa.array(rows.row_ids.astype(np.uint64), pa.uint64())
    if quantizer.codebook is None:
        schema = auxiliary_schema(dimension)
        values = pa.array(np.ascontiguousarray(rows.payload, dtype=np.float32).ravel())
        meta["storage_metadata"] = json.dumps([json.dumps({"dim": dimension})])
    else:
        sub_vectors, words = quantizer.codebook.shape[:2]
        # 16 code words: 4-bit codes, two to a byte.
        bits = 4 if words == 16 else 8
        codes = rows.payload if bits == 8 else pq_train.pack_nibbles(rows.payload)
        schema = pa.schema(
            [
                pa.field("_rowid", pa.uint64()),
                pa.field("__pq_code", pa.list_(pa.uint8(), codes.shape[1])),
            ]
        )
        values = pa.array(_column_major(codes, lengths))
        buffers.append(_codebook_tensor(quantizer.codebook, dimension).SerializeToString())
        meta["storage_metadata"] = json.dumps([_pq_metadata(sub_vectors, dimension, bits)])
    vectors = pa.FixedSizeListArray.from_arrays(values, schema.field(1).type.list_size)
    table = pa.table([row_ids, vectors], schema=schema)
    _write(directory.join(AUXILIARY_FILE), table, buffers, meta, version)


def _pq_metadata(sub_vectors: int, dimension: int, bits: int) -> str:
    return json.dumps(
        {
            "codebook_position": 2,
            "nbits": bits,
            "num_sub_vectors": sub_vectors,
            "dimension": dimension,
            "codebook_tensor": [],
            "transposed": True,
        },
        separators=(",", ":"),
    )


def _codebook_tensor(codebook: np.ndarray, dimension: int) -> index_pb2.Tensor:
    """The codebook as pylance stores it: declared (256, d), values sub-vector major."""
    return index_pb2.Tensor(
        data_type=index_pb2.Tensor.FLOAT32,
        shape=[codebook.shape[1], dimension],
        data=np.ascontiguousarray(codebook, dtype="<f4").tobytes(),
    )


def _column_major(codes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each partition's (rows, m) codes stored column-major, as pylance stores them."""
    out = np.empty(codes.size, dtype=np.uint8)
    start = 0
    width = codes.shape[1] if codes.ndim == 2 else 0
    for length in lengths.tolist():  # one step per partition
        block = codes[start : start + length]
        out[start * width : (start + length) * width] = block.T.ravel()
        start += length
    return out


def _write_index_file(path: io.Place, quantizer: Quantizer, loss: float, version: str) -> None:
    count, dimension = quantizer.centroids.shape
    tensor = index_pb2.Tensor(
        data_type=index_pb2.Tensor.FLOAT32,
        shape=[count, dimension],
        data=np.ascontiguousarray(quantizer.centroids, dtype="<f4").tobytes(),
    )
    ivf = index_pb2.IVF(
        offsets=[0] * count, lengths=[0] * count, centroids_tensor=tensor, loss=loss
    )
    marker = pa.schema([pa.field("__flat_marker", pa.uint64(), nullable=False)])
    meta = {
        "lance:index": json.dumps(
            {"type": quantizer.index_type, "distance_type": quantizer.metric},
            separators=(",", ":"),
        ),
        "lance:flat": json.dumps([""] * count, separators=(",", ":")),
    }
    _write(path, marker.empty_table(), [ivf.SerializeToString()], meta, version)


def _write(
    path: io.Place, table: pa.Table, buffers: list[bytes], meta: dict[str, str], version: str
) -> None:
    """One file: ``table``'s rows, ``buffers`` as global buffers 1, 2, ... (the first,
    the IVF message, named by ``lance:ivf``) and ``meta``."""
    files.write_table(path, table, version, meta, {"lance:ivf": buffers[0]}, buffers[1:])


# -- what an existing segment holds, to write it again ---------------------------------


def segment_rows(index: IvfIndex) -> SegmentRows:
    """Every row of an open segment: key, partition and what it stores."""
    partitions = np.repeat(np.arange(index.num_partitions), index.lengths)
    storage = index.storage
    if isinstance(storage, RabitqStorage):
        payload = ivf_rq_writer.stored_payload(storage)
    else:
        payload = storage.vectors if isinstance(storage, FlatStorage) else storage.codes
    return SegmentRows(index.row_ids.astype(np.uint64), partitions, payload)


def quantizer(index: IvfIndex) -> Quantizer:
    storage = index.storage
    codebook = storage.codebook if isinstance(storage, PqStorage) else None
    bounds = (storage.lower, storage.upper) if isinstance(storage, SqStorage) else None
    rotation = None
    if isinstance(storage, RabitqStorage):
        rotation = RqRotation(storage.signs, storage.num_bits)
    graph = None
    if index.graphs:
        params = index.graphs[0].params
        try:
            graph = HnswParams(params["m"], params["ef_construction"], params["max_level"])
            graph.check("its 'lance:hnsw' entry")
        except (KeyError, ArgumentError) as exc:
            raise CorruptIndexError(f"an HNSW graph's build parameters {params}: {exc}") from exc
    return Quantizer(
        index.index_type, index.metric, index.centroids, codebook, bounds, graph, rotation
    )


def recorded_loss(source: io.Place) -> float:
    """The k-means loss the segment's ``index.idx`` records."""
    path = source.join(INDEX_FILE)
    if layout.file_version(source) == "Legacy":
        return legacy_layout.loss(path)
    with files.reading(path):
        reader = LanceFileReader(path.path, file_io=path.file_io)
        position = files.metadata(reader).get("lance:ivf", "")
        if not position.isdigit():
            raise CorruptIndexError(f"{path}: 'lance:ivf' is {position!r}, not a buffer number")
        raw = reader.read_global_buffer(int(position))
    return float(index_pb2.IVF.FromString(raw).loss)
