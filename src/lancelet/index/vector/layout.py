"""Reading the two Lance files of a pylance IVF index directory.

``index.idx`` holds no rows for IVF_FLAT / IVF_PQ / IVF_SQ / IVF_RQ (its one column
is ``__flat_marker``) and the HNSW graphs for IVF_HNSW_* (see ``hnsw``); its schema
metadata names the type and metric (``lance:index``) and the global buffer
(``lance:ivf``) with the IVF message whose ``centroids_tensor`` holds the
centroids.  ``auxiliary.idx`` holds one row per indexed vector, partition after
partition, as ``_rowid`` and ``flat``, ``__pq_code``, ``__sq_code`` or the RaBitQ
columns (:mod:`rabitq`); its own IVF message gives each partition's offset and
length, and for PQ the global buffer ``codebook_position`` names holds the codebook
tensor.  Any inconsistency is a CorruptIndexError naming the file.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
from google.protobuf.message import DecodeError

from lancelet import io
from lancelet._proto import index_pb2
from lancelet.errors import CorruptIndexError, UnsupportedIndexError
from lancelet.file import LanceFileReader
from lancelet.index import files
from lancelet.index.vector import (
    float32_distance,
    hnsw,
    legacy_layout,
    pq_train,
    rabitq,
    serde_floats,
)
from lancelet.index.vector.hnsw import HnswGraph
from lancelet.index.vector.rabitq import RabitqStorage
from lancelet.index.vector.sq_storage import SqStorage
from lancelet.index.vector.storage import FlatStorage, PqStorage, Storage

INDEX_FILE = "index.idx"
AUXILIARY_FILE = "auxiliary.idx"
SUPPORTED_TYPES = (
    "IVF_FLAT",
    "IVF_PQ",
    "IVF_SQ",
    "IVF_RQ",
    "IVF_HNSW_FLAT",
    "IVF_HNSW_PQ",
    "IVF_HNSW_SQ",
)
_TENSOR_DTYPES: dict[int, np.dtype] = {
    index_pb2.Tensor.FLOAT16: np.dtype("<f2"),
    index_pb2.Tensor.FLOAT32: np.dtype("<f4"),
    index_pb2.Tensor.FLOAT64: np.dtype("<f8"),
    index_pb2.Tensor.UINT8: np.dtype("u1"),
}
# The stored vectors of an IVF_FLAT index: the column's element type.
_FLAT_TYPES = (pa.float16(), pa.float32(), pa.float64(), pa.uint8())


@dataclass(frozen=True)
class Layout:
    index_type: str
    metric: str
    # (partitions, dimension) float32
    centroids: np.ndarray
    # Start row and row count of each partition in the auxiliary file.
    offsets: np.ndarray
    lengths: np.ndarray
    row_ids: np.ndarray
    storage: Storage
    # IVF_HNSW_*: each partition's graph.
    graphs: list[HnswGraph] | None = None
    # Whether the column's vectors are float16 (searched in float32, but the
    # query rounded to float16 where pylance rounds it).
    half: bool = False


def read(directory: io.Place) -> Layout:
    index_path = directory.join(INDEX_FILE)
    if _is_legacy(index_path):
        metric, centroids, offsets, lengths, row_ids, pq = legacy_layout.read(index_path)
        return Layout("IVF_PQ", metric, centroids, offsets, lengths, row_ids, pq)
    index_file = _open(index_path)
    meta = files.metadata(index_file)
    header = _json(index_path, meta, "lance:index")
    index_type = str(header.get("type"))
    if index_type not in SUPPORTED_TYPES:
        raise UnsupportedIndexError(
            f"{directory}: lancelet does not read {index_type} vector indices yet "
            f"(it reads {', '.join(SUPPORTED_TYPES)})"
        )
    metric = _metric(index_path, header.get("distance_type"))
    index_ivf = _ivf(index_file, meta)
    centroids = _tensor(index_path, index_ivf.centroids_tensor, ndim=2)
    aux_path = directory.join(AUXILIARY_FILE)
    aux_file = _open(aux_path)
    aux_meta = files.metadata(aux_file)
    aux_ivf = _ivf(aux_file, aux_meta)
    offsets = np.asarray(aux_ivf.offsets, dtype=np.int64)
    lengths = np.asarray(aux_ivf.lengths, dtype=np.int64)
    _check_partitions(aux_path, offsets, lengths, len(centroids), aux_file.num_rows())
    with files.reading(aux_path):
        table = aux_file.read_all().to_table().combine_chunks()
    row_ids = _column(aux_path, table, "_rowid", pa.uint64()).to_numpy()
    dimension = centroids.shape[1]
    if index_type.endswith("_FLAT"):
        storage: Storage = _flat(aux_path, table, dimension)
    elif index_type.endswith("_SQ"):
        storage = _sq(aux_path, aux_meta, table, dimension)
    elif index_type == "IVF_RQ":
        storage = _rq(aux_path, aux_meta, table, dimension, lengths)
    else:
        storage = _pq(aux_path, aux_file, aux_meta, table, dimension, lengths)
    graphs = None
    if index_type.startswith("IVF_HNSW_"):
        graphs = _graphs(index_path, index_file, meta, index_ivf, lengths)
    half = index_ivf.centroids_tensor.data_type == index_pb2.Tensor.FLOAT16
    return Layout(index_type, metric, centroids, offsets, lengths, row_ids, storage, graphs, half)


def _graphs(
    path: io.Place, reader: LanceFileReader, meta: dict[str, str], ivf: Any, nodes: np.ndarray
) -> list[HnswGraph]:
    offsets = np.asarray(ivf.offsets, dtype=np.int64)
    lengths = np.asarray(ivf.lengths, dtype=np.int64)
    _check_partitions(path, offsets, lengths, len(nodes), reader.num_rows())
    with files.reading(path):
        table = reader.read_all().to_table()
    entries = _json(path, meta, "lance:hnsw")
    return hnsw.read_graphs(str(path), table, entries, offsets, lengths, nodes)


def _sq(path: io.Place, meta: dict[str, str], table: pa.Table, dimension: int) -> SqStorage:
    params = _storage_params(path, meta, "SQ")
    bounds = params.get("bounds")
    low = bounds.get("start") if isinstance(bounds, dict) else None
    high = bounds.get("end") if isinstance(bounds, dict) else None
    if not all(isinstance(b, (int, float)) and math.isfinite(b) for b in (low, high)):
        raise CorruptIndexError(f"{path}: the SQ bounds are {bounds!r}")
    assert isinstance(low, (int, float)) and isinstance(high, (int, float))
    if low > high:
        raise CorruptIndexError(f"{path}: the SQ bounds are {bounds!r}")
    bits = _int(path, params, "num_bits")
    if bits != 8:
        raise UnsupportedIndexError(f"{path}: lancelet reads 8-bit SQ codes, not {bits}-bit")
    if _int(path, params, "dim") != dimension:
        raise CorruptIndexError(f"{path}: SQ of dimension {params['dim']} for {dimension}")
    column = _column(path, table, "__sq_code", pa.list_(pa.uint8(), dimension))
    codes = column.values.to_numpy(zero_copy_only=False).reshape(len(column), dimension)
    return SqStorage(codes, float(low), float(high))


def first_graph_entry(directory: io.Place) -> dict[str, Any]:
    """The first partition's ``lance:hnsw`` entry of the IVF_HNSW_* index in
    ``directory`` (what pylance's statistics show of its graphs)."""
    index_path = directory.join(INDEX_FILE)
    entries = _json(index_path, files.metadata(_open(index_path)), "lance:hnsw")
    if not isinstance(entries, list) or not entries:
        raise CorruptIndexError(f"{index_path}: 'lance:hnsw' lists no graph")
    try:
        first = json.loads(entries[0])
    except (TypeError, ValueError) as exc:
        raise CorruptIndexError(f"{index_path}: a 'lance:hnsw' entry is not JSON: {exc}") from exc
    if not isinstance(first, dict):
        raise CorruptIndexError(f"{index_path}: a 'lance:hnsw' entry is not an object")
    return first


def storage_parameters(directory: io.Place, kind: str) -> dict[str, Any]:
    """The storage's parameters its ``auxiliary.idx`` records (``storage_metadata``),
    as pylance reads them."""
    path = directory.join(AUXILIARY_FILE)
    return _storage_params(path, files.metadata(_open(path)), kind)


def _storage_params(path: io.Place, meta: dict[str, str], kind: str) -> dict[str, Any]:
    listed = _json(path, meta, "storage_metadata")
    params = serde_floats.loads(listed[0]) if isinstance(listed, list) and listed else None
    if not isinstance(params, dict):
        raise CorruptIndexError(f"{path}: 'storage_metadata' does not hold the {kind} parameters")
    return params


def file_version(directory: io.Place) -> str:
    """pylance's name for the layout of the index in ``directory``: ``Legacy`` (one
    file, :mod:`legacy_layout`) or ``V3`` (the two Lance files)."""
    return "Legacy" if _is_legacy(directory.join(INDEX_FILE)) else "V3"


def _is_legacy(path: io.Place) -> bool:
    """Whether ``path`` is a legacy (single-file IVF_PQ) index file, by its footer."""
    with files.reading(path):
        found = path.file_io.open_input(path.path)
        try:
            size = min(found.size, legacy_layout.footer_size())
            tail = found.read(found.size - size, size).to_pybytes()
        finally:
            found.close()
    return legacy_layout.is_legacy(tail)


def _open(path: io.Place) -> LanceFileReader:
    with files.reading(path):
        return LanceFileReader(path.path, file_io=path.file_io)


def _json(path: io.Place, meta: dict[str, str], key: str) -> Any:
    if key not in meta:
        raise CorruptIndexError(f"{path}: the schema metadata has no {key!r}")
    try:
        return json.loads(meta[key])
    except ValueError as exc:
        raise CorruptIndexError(f"{path}: {key!r} is not JSON: {exc}") from exc


def _metric(path: io.Place, value: Any) -> str:
    known = (*float32_distance.METRICS, "hamming")
    if not isinstance(value, str) or value.lower() not in known:
        raise UnsupportedIndexError(f"{path}: lancelet does not read indices of metric {value!r}")
    return value.lower()


def _ivf(reader: LanceFileReader, meta: dict[str, str]) -> Any:
    position = meta.get("lance:ivf", "")
    if not position.isdigit():
        raise CorruptIndexError(f"{reader.path}: 'lance:ivf' is {position!r}, not a buffer number")
    with files.reading(reader.path):
        raw = reader.read_global_buffer(int(position))
    try:
        return index_pb2.IVF.FromString(raw)
    except DecodeError as exc:
        raise CorruptIndexError(f"{reader.path}: the IVF message cannot be read: {exc}") from exc


def _tensor(path: io.Place, tensor: Any, ndim: int) -> np.ndarray:
    dtype = _TENSOR_DTYPES.get(tensor.data_type)
    if dtype is None:
        name = index_pb2.Tensor.DataType.Name(tensor.data_type)
        raise UnsupportedIndexError(f"{path}: lancelet does not read {name} index tensors")
    shape = tuple(int(n) for n in tensor.shape)
    if len(shape) != ndim or int(np.prod(shape)) * dtype.itemsize != len(tensor.data):
        raise CorruptIndexError(
            f"{path}: a tensor of shape {list(shape)} has {len(tensor.data)} bytes"
        )
    values: np.ndarray = np.frombuffer(tensor.data, dtype=dtype).reshape(shape)
    # float16 is searched in float32 (exactly); float64 and uint8 stay as they are.
    if dtype.kind == "f" and dtype.itemsize <= 4:
        return values.astype(np.float32)
    copied: np.ndarray = values.copy()
    return copied


def _check_partitions(
    path: io.Place, offsets: np.ndarray, lengths: np.ndarray, partitions: int, rows: int
) -> None:
    if len(offsets) != partitions or len(lengths) != partitions:
        raise CorruptIndexError(
            f"{path}: {len(offsets)} offsets and {len(lengths)} lengths for {partitions} centroids"
        )
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if partitions else offsets
    if not np.array_equal(offsets, starts) or int(lengths.sum()) != rows:
        raise CorruptIndexError(f"{path}: the partitions do not tile the file's {rows} rows")


def _column(path: io.Place, table: pa.Table, name: str, dtype: pa.DataType) -> pa.Array:
    if name not in table.column_names:
        raise CorruptIndexError(f"{path}: the file has no column {name!r}")
    column = table.column(name)
    if column.type != dtype:
        raise UnsupportedIndexError(f"{path}: column {name!r} has the type {column.type}")
    return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)


def _flat(path: io.Place, table: pa.Table, dimension: int) -> FlatStorage:
    if "flat" not in table.column_names:
        raise CorruptIndexError(f"{path}: the file has no column 'flat'")
    stored = table.schema.field("flat").type
    element = stored.value_type if pa.types.is_fixed_size_list(stored) else None
    column = _column(path, table, "flat", pa.list_(element or pa.float32(), dimension))
    if element not in _FLAT_TYPES:
        raise UnsupportedIndexError(f"{path}: lancelet does not read {element} vectors")
    values = column.values.to_numpy(zero_copy_only=False)
    return FlatStorage(values.reshape(len(column), dimension))


def _pq(
    path: io.Place,
    reader: LanceFileReader,
    meta: dict[str, str],
    table: pa.Table,
    dimension: int,
    lengths: np.ndarray,
) -> PqStorage:
    listed = _json(path, meta, "storage_metadata")
    params = serde_floats.loads(listed[0]) if isinstance(listed, list) and listed else None
    if not isinstance(params, dict):
        raise CorruptIndexError(f"{path}: 'storage_metadata' does not hold the PQ parameters")
    sub_vectors, bits = _int(path, params, "num_sub_vectors"), _int(path, params, "nbits")
    if bits not in (4, 8):
        raise UnsupportedIndexError(f"{path}: lancelet reads 8- and 4-bit PQ codes, not {bits}-bit")
    if _int(path, params, "dimension") != dimension or dimension % sub_vectors:
        raise CorruptIndexError(f"{path}: PQ of dimension {params['dimension']} for {dimension}")
    if bits == 4 and sub_vectors % 2:
        raise CorruptIndexError(f"{path}: 4-bit PQ codes of {sub_vectors} sub-vectors")
    with files.reading(path):
        raw = reader.read_global_buffer(_int(path, params, "codebook_position"))
    tensor = index_pb2.Tensor.FromString(raw)
    flat = _tensor(path, tensor, ndim=2).ravel()
    words = 1 << bits
    if flat.size != sub_vectors * words * (dimension // sub_vectors):
        raise CorruptIndexError(f"{path}: the PQ codebook has {flat.size} values")
    # The tensor says (codes, dimension) but its values run sub-vector by sub-vector.
    codebook = flat.reshape(sub_vectors, words, dimension // sub_vectors)
    # 4-bit codes: two sub-vectors per byte (see pq_train.pack_nibbles).
    code_bytes = sub_vectors if bits == 8 else sub_vectors // 2
    column = _column(path, table, "__pq_code", pa.list_(pa.uint8(), code_bytes))
    codes = _row_major(column.values.to_numpy(zero_copy_only=False), lengths, code_bytes)
    codes = codes if bits == 8 else pq_train.unpack_nibbles(codes)
    return PqStorage(codebook, codes, half=tensor.data_type == index_pb2.Tensor.FLOAT16)


def _rq(
    path: io.Place,
    meta: dict[str, str],
    table: pa.Table,
    dimension: int,
    lengths: np.ndarray,
) -> RabitqStorage:
    params = rabitq.parse_params(path, meta.get("storage_metadata"))
    rabitq.check_params(path, params, dimension)
    return rabitq.read_storage(path, params, partial(_column, path, table), dimension, lengths)


def _int(path: io.Place, params: dict[str, Any], key: str) -> int:
    value = params.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise CorruptIndexError(f"{path}: the PQ parameter {key!r} is {value!r}")
    return value


def _row_major(flat: np.ndarray, lengths: np.ndarray, sub_vectors: int) -> np.ndarray:
    """Each partition's codes are stored column-major: all its first codes, then all
    its second codes...; return them as (rows, sub_vectors)."""
    codes = np.empty((int(lengths.sum()), sub_vectors), dtype=np.uint8)
    start = 0
    for length in lengths.tolist():  # one step per partition
        block = flat[start * sub_vectors : (start + length) * sub_vectors]
        codes[start : start + length] = block.reshape(sub_vectors, length).T
        start += length
    return codes
