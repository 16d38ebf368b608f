"""The legacy IVF_PQ index file (pylance's ``index_file_version="Legacy"``, and the
only layout of indices older releases wrote), read and written.

One file, ``index.idx`` (no ``auxiliary.idx``), measured from the bytes pylance
14.0.2 writes:

* from byte 0, partition after partition: the partition's PQ codes, **row-major**
  (``length * M`` bytes: row 0's M codes, then row 1's...), then its row ids
  (``length`` little-endian uint64);
* at byte ``position``: a little-endian uint32 length, then that many bytes of a
  ``lance.index.pb.Index`` message whose ``vector_index`` holds two stages, the IVF
  (``offsets``: each partition's byte offset; ``lengths``: its row count;
  ``centroids_tensor``) and the PQ (``num_bits``, ``num_sub_vectors``,
  ``dimension``, ``codebook_tensor`` shaped ``[256, D]`` but ordered sub-vector by
  sub-vector, as in the current layout);
* the last 16 bytes: ``position`` (uint64), the format version 0.1 (two uint16s)
  and ``LANC``.

Within a partition the row ids are in no particular order.  The manifest entry is
the same as the current layout's.  Everything else (metric, distances, search) is
as for IVF_PQ; pylance writes this layout for IVF_PQ only (asked for another type
it writes the current one).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from lancelet import io
from lancelet._proto import index_pb2
from lancelet.errors import CorruptIndexError, UnsupportedIndexError
from lancelet.index import files
from lancelet.index.remapping import AddressMapping
from lancelet.index.vector.storage import PqStorage

FILE = "index.idx"
MAGIC = b"LANC"
# position (uint64), major and minor version (uint16 each), magic.
_FOOTER = struct.Struct("<QHH4s")
_VERSION = (0, 1)
_LENGTH = struct.Struct("<I")
_METRICS = {
    index_pb2.VectorMetricType.L2: "l2",
    index_pb2.VectorMetricType.Cosine: "cosine",
    index_pb2.VectorMetricType.Dot: "dot",
}
_METRIC_CODES = {name: code for code, name in _METRICS.items()}
_ROW_ID = np.dtype("<u8")


def is_legacy(data: bytes) -> bool:
    """Whether ``data``, the end of an ``index.idx`` (at least 16 bytes), is a legacy
    index file's footer."""
    if len(data) < _FOOTER.size:
        return False
    _, major, minor, magic = _FOOTER.unpack(data[-_FOOTER.size :])
    return magic == MAGIC and (major, minor) == _VERSION


def footer_size() -> int:
    return _FOOTER.size


def read(path: io.Place) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray, PqStorage]:
    """(metric, centroids, row offsets, lengths, row ids, PQ storage) of the legacy
    index file at ``path``."""
    with files.reading(path):
        data = path.file_io.read_bytes(path.path)
    index = _message(path, data)
    ivf, pq = _stages(path, index.vector_index)
    metric = _METRICS.get(index.vector_index.metric_type)
    if metric is None:
        raise UnsupportedIndexError(
            f"{path}: lancelet does not read indices of metric {index.vector_index.metric_type}"
        )
    dimension = int(index.vector_index.dimension)
    centroids = _tensor(path, ivf.centroids_tensor, "IVF centroids")
    sub_vectors = int(pq.num_sub_vectors)
    _check(path, pq, dimension, centroids)
    codebook = _tensor(path, pq.codebook_tensor, "PQ codebook")
    if codebook.size != 256 * dimension:
        raise CorruptIndexError(f"{path}: the PQ codebook has {codebook.size} values")
    codebook = codebook.reshape(sub_vectors, 256, dimension // sub_vectors)
    byte_offsets = np.asarray(ivf.offsets, dtype=np.int64)
    lengths = np.asarray(ivf.lengths, dtype=np.int64)
    codes, row_ids = _partitions(path, data, byte_offsets, lengths, sub_vectors, len(centroids))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return metric, centroids, starts, lengths, row_ids, PqStorage(codebook, codes)


def loss(path: io.Place) -> float:
    """The k-means loss the legacy index file at ``path`` records."""
    with files.reading(path):
        data = path.file_io.read_bytes(path.path)
    ivf, _ = _stages(path, _message(path, data).vector_index)
    return float(ivf.loss)


def _message(path: io.Place, data: bytes) -> Any:
    if not is_legacy(data):
        raise CorruptIndexError(f"{path}: not a legacy index file (no 0.1 footer)")
    position = _FOOTER.unpack(data[-_FOOTER.size :])[0]
    end = len(data) - _FOOTER.size
    if position + _LENGTH.size > end:
        raise CorruptIndexError(f"{path}: the index message at {position} is past the footer")
    (length,) = _LENGTH.unpack_from(data, position)
    start = position + _LENGTH.size
    if start + length > end:
        raise CorruptIndexError(f"{path}: the index message of {length} bytes overruns the file")
    try:
        message = index_pb2.Index.FromString(data[start : start + length])
    except DecodeError as exc:
        raise CorruptIndexError(f"{path}: the index message cannot be read: {exc}") from exc
    if message.WhichOneof("implementation") != "vector_index":
        raise UnsupportedIndexError(f"{path}: the legacy index is not a vector index")
    return message


def _stages(path: io.Place, vector_index: Any) -> tuple[Any, Any]:
    kinds = [stage.WhichOneof("stage") for stage in vector_index.stages]
    if kinds != ["ivf", "pq"]:
        # OPQ transforms and DiskANN graphs were legacy index kinds too.
        raise UnsupportedIndexError(
            f"{path}: lancelet reads legacy IVF_PQ indices (stages ivf, pq), not stages {kinds}"
        )
    return vector_index.stages[0].ivf, vector_index.stages[1].pq


def _check(path: io.Place, pq: Any, dimension: int, centroids: np.ndarray) -> None:
    sub_vectors = int(pq.num_sub_vectors)
    if pq.num_bits != 8:
        raise UnsupportedIndexError(f"{path}: lancelet reads 8-bit PQ codes, not {pq.num_bits}-bit")
    if sub_vectors <= 0 or dimension <= 0 or dimension % sub_vectors:
        raise CorruptIndexError(f"{path}: {sub_vectors} PQ sub-vectors of dimension {dimension}")
    if pq.dimension != dimension or centroids.ndim != 2 or centroids.shape[1] != dimension:
        raise CorruptIndexError(
            f"{path}: centroids of shape {list(centroids.shape)} and PQ of dimension "
            f"{pq.dimension} for vectors of dimension {dimension}"
        )


def _tensor(path: io.Place, tensor: Any, what: str) -> np.ndarray:
    if tensor.data_type != index_pb2.Tensor.FLOAT32 or not tensor.data:
        # Older releases kept these as repeated floats, in an order not checked here.
        raise UnsupportedIndexError(f"{path}: lancelet reads the {what} as a FLOAT32 tensor only")
    shape = [int(n) for n in tensor.shape]
    if len(shape) != 2 or shape[0] * shape[1] * 4 != len(tensor.data):
        raise CorruptIndexError(
            f"{path}: the {what} tensor of shape {shape} has {len(tensor.data)} bytes"
        )
    return np.frombuffer(tensor.data, dtype="<f4").astype(np.float32).reshape(shape)


def _partitions(
    path: io.Place,
    data: bytes,
    byte_offsets: np.ndarray,
    lengths: np.ndarray,
    sub_vectors: int,
    partitions: int,
) -> tuple[np.ndarray, np.ndarray]:
    """All partitions' (rows, M) codes and row ids, in partition order."""
    if len(byte_offsets) != partitions or len(lengths) != partitions:
        raise CorruptIndexError(
            f"{path}: {len(byte_offsets)} offsets and {len(lengths)} lengths for "
            f"{partitions} centroids"
        )
    row_bytes = sub_vectors + _ROW_ID.itemsize
    limit = _FOOTER.unpack(data[-_FOOTER.size :])[0]
    if np.any(byte_offsets < 0) or np.any(byte_offsets + lengths * row_bytes > limit):
        raise CorruptIndexError(f"{path}: a partition lies outside the file's data")
    codes = np.empty((int(lengths.sum()), sub_vectors), dtype=np.uint8)
    row_ids = np.empty(len(codes), dtype=np.uint64)
    view = np.frombuffer(data, dtype=np.uint8)
    row = 0
    for offset, length in zip(
        byte_offsets.tolist(), lengths.tolist(), strict=True
    ):  # per partition
        code_bytes = length * sub_vectors
        codes[row : row + length] = view[offset : offset + code_bytes].reshape(length, sub_vectors)
        ids = view[offset + code_bytes : offset + code_bytes + length * _ROW_ID.itemsize]
        row_ids[row : row + length] = ids.view(_ROW_ID)
        row += length
    return codes, row_ids


def write(
    path: io.Place,
    name: str,
    column: str,
    dataset_version: int,
    metric: str,
    centroids: np.ndarray,
    loss: float,
    codebook: np.ndarray,
    codes: np.ndarray,
    row_ids: np.ndarray,
    partitions: np.ndarray,
) -> int:
    """Write the legacy index file of rows ``row_ids`` (uint64) with PQ ``codes``
    ((n, M) uint8) in ``partitions``; its size in bytes."""
    message = _index_message(name, column, dataset_version, metric, centroids, loss, codebook)
    return _write(path, message, codes, row_ids, partitions)


def remap(source: io.Place, path: io.Place, mapping: AddressMapping) -> None:
    """Write at ``path`` the legacy index file ``source`` with its rows moved by
    ``mapping`` (rows it drops left out), as pylance rewrites one in a compaction:
    the same message (name, column, dataset version, centroids, codebook, loss) with
    new partition offsets and lengths."""
    with files.reading(source):
        data = source.file_io.read_bytes(source.path)
    message = _message(source, data)
    ivf, pq = _stages(source, message.vector_index)
    lengths = np.asarray(ivf.lengths, dtype=np.int64)
    codes, row_ids = _partitions(
        source,
        data,
        np.asarray(ivf.offsets, dtype=np.int64),
        lengths,
        int(pq.num_sub_vectors),
        len(lengths),
    )
    moved, kept = mapping.apply(row_ids)
    partitions = np.repeat(np.arange(len(lengths)), lengths)[kept]
    del ivf.offsets[:], ivf.lengths[:]
    _write(path, message, codes[kept], moved[kept], partitions)


def _write(
    path: io.Place, message: Any, codes: np.ndarray, row_ids: np.ndarray, partitions: np.ndarray
) -> int:
    """Write ``message`` (without partition offsets and lengths, which this adds)
    after the partitions' codes and row ids; the file's size."""
    ivf = message.vector_index.stages[0].ivf
    count = int(ivf.centroids_tensor.shape[0])
    order = np.argsort(partitions, kind="stable")
    lengths = np.bincount(partitions, minlength=count).astype(np.int64)
    row_bytes = codes.shape[1] + _ROW_ID.itemsize
    body = bytearray()
    sorted_codes = np.ascontiguousarray(codes[order], dtype=np.uint8)
    sorted_ids = np.asarray(row_ids, dtype=np.uint64)[order].astype(_ROW_ID)
    row = 0
    for length in lengths.tolist():  # one step per partition
        body += sorted_codes[row : row + length].tobytes()
        body += sorted_ids[row : row + length].tobytes()
        row += length
    ivf.offsets.extend((np.concatenate([[0], np.cumsum(lengths)[:-1]]) * row_bytes).tolist())
    ivf.lengths.extend(lengths.tolist())
    raw = message.SerializeToString()
    position = len(body)
    body += _LENGTH.pack(len(raw)) + raw + _FOOTER.pack(position, *_VERSION, MAGIC)
    path.file_io.put(path.path, bytes(body))
    return len(body)


def _index_message(
    name: str,
    column: str,
    dataset_version: int,
    metric: str,
    centroids: np.ndarray,
    loss: float,
    codebook: np.ndarray,
) -> Any:
    count, dimension = centroids.shape
    sub_vectors, words, width = codebook.shape
    ivf = index_pb2.IVF(
        centroids_tensor=_float_tensor(centroids, [count, dimension]), loss=float(loss)
    )
    pq = index_pb2.PQ(
        num_bits=8,
        num_sub_vectors=sub_vectors,
        dimension=dimension,
        codebook_tensor=_float_tensor(codebook, [words, sub_vectors * width]),
    )
    vector_index = index_pb2.VectorIndex(
        spec_version=1,
        dimension=dimension,
        stages=[index_pb2.VectorIndexStage(ivf=ivf), index_pb2.VectorIndexStage(pq=pq)],
        metric_type=_METRIC_CODES[metric],
    )
    return index_pb2.Index(
        name=name,
        columns=[column],
        dataset_version=dataset_version,
        index_type=index_pb2.IndexType.VECTOR,
        vector_index=vector_index,
    )


def _float_tensor(values: np.ndarray, shape: list[int]) -> Any:
    return index_pb2.Tensor(
        data_type=index_pb2.Tensor.FLOAT32,
        shape=shape,
        data=np.ascontiguousarray(values, dtype="<f4").tobytes(),
    )
