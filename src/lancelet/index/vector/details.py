"""The ``index_details`` pylance 14 records in the manifest for an IVF index: a
``/lance.index.pb.VectorIndexDetails`` message, which lancelet's own copy of the
protocol does not describe field by field, so its bytes are written here.

Measured on pylance-built indices (``describe_indices().details`` shows them):

* field 1, the metric (enum: l2 0, the default and so left out; cosine 1; dot 2;
  hamming 3);
* field 8, an empty message: the sub-index is FLAT;
* field 9, the ``runtime_hints`` map (string to string): ``lance.ivf.sample_rate``
  (the sample rate given), ``lance.ivf.max_iters`` (``50``: pylance records 50
  whatever ``max_iterations`` it was given), ``lance.ivf.shuffle_partition_batches``
  (``10240``), ``lance.ivf.shuffle_partition_concurrency`` (``2``) and
  ``lance.skip_transpose`` (``false``).

IVF_PQ has, instead of field 8, field 4: a message of ``num_bits`` (1) and
``num_sub_vectors`` (2); its hints add ``lance.pq.sample_rate`` (the sample rate
given), ``lance.pq.max_iters`` (``50``) and ``lance.pq.kmeans_redos`` (``1``).
IVF_SQ has field 5: a message of ``num_bits`` (1); its hints add
``lance.sq.sample_rate``.
"""

from __future__ import annotations

from lancelet.table.index import IndexDetails

TYPE_URL = "/lance.index.pb.VectorIndexDetails"
# The index_version pylance 14 records for an IVF_FLAT index (and all but IVF_RQ).
INDEX_VERSION = 1
_RQ_INDEX_VERSION = 2

_METRICS = {"l2": 0, "cosine": 1, "dot": 2, "hamming": 3}
_HNSW_FIELD = 3
_PQ_FIELD = 4
_SQ_FIELD = 5
_RQ_FIELD = 6
_FLAT_FIELD = 8
_HINTS_FIELD = 9
_VARINT, _BYTES = 0, 2


def ivf_flat_details(metric: str, sample_rate: int, shuffle_concurrency: int = 2) -> IndexDetails:
    hints = _ivf_hints(sample_rate, shuffle_concurrency)
    return _details(metric, _key(_FLAT_FIELD, _BYTES) + _varint(0), hints)


def ivf_pq_details(
    metric: str,
    sample_rate: int,
    num_bits: int,
    num_sub_vectors: int,
    shuffle_concurrency: int = 2,
) -> IndexDetails:
    compression = _key(1, _VARINT) + _varint(num_bits) + _key(2, _VARINT)
    compression += _varint(num_sub_vectors)
    hints = {
        **_ivf_hints(sample_rate, shuffle_concurrency),
        "lance.pq.sample_rate": str(sample_rate),
        "lance.pq.max_iters": "50",
        "lance.pq.kmeans_redos": "1",
    }
    return _details(metric, _message(_PQ_FIELD, compression), hints)


def loaded_ivf_pq_details(metric: str, num_bits: int, num_sub_vectors: int) -> IndexDetails:
    """What pylance records for an IVF_PQ index made from shuffled files
    (``IndicesBuilder.load_shuffled_vectors``): no training hints."""
    compression = _key(1, _VARINT) + _varint(num_bits) + _key(2, _VARINT)
    compression += _varint(num_sub_vectors)
    return _details(metric, _message(_PQ_FIELD, compression), {})


def ivf_sq_details(
    metric: str, sample_rate: int, num_bits: int, shuffle_concurrency: int = 2
) -> IndexDetails:
    compression = _key(1, _VARINT) + _varint(num_bits)
    hints = {**_ivf_hints(sample_rate, shuffle_concurrency)}
    hints["lance.sq.sample_rate"] = str(sample_rate)
    return _details(metric, _message(_SQ_FIELD, compression), hints)


def ivf_rq_details(
    metric: str, sample_rate: int, num_bits: int, shuffle_concurrency: int = 2
) -> IndexDetails:
    """Field 6: a message of ``num_bits`` (1; the fast rotation, 0, left out);
    the IVF hints only."""
    compression = _key(1, _VARINT) + _varint(num_bits)
    hints = _ivf_hints(sample_rate, shuffle_concurrency)
    return _details(metric, _message(_RQ_FIELD, compression), hints)


def index_version(index_type: str) -> int:
    """The ``index_version`` pylance 14 records for an index of ``index_type``."""
    return _RQ_INDEX_VERSION if index_type == "IVF_RQ" else INDEX_VERSION


def ivf_hnsw_details(
    base: IndexDetails, metric: str, m: int, ef_construction: int, max_level: int
) -> IndexDetails:
    """The details of ``base`` (the IVF type of the same storage) with the HNSW
    message (field 3: 1 ``m``, 2 ``ef_construction``, 3 ``max_level``) before the
    storage's field, and the hint ``lance.hnsw.prefetch_distance`` (``2``), as
    pylance 14 records an IVF_HNSW_* index."""
    hnsw = _key(1, _VARINT) + _varint(m) + _key(2, _VARINT) + _varint(ef_construction)
    hnsw += _key(3, _VARINT) + _varint(max_level)
    metric_bytes = _key(1, _VARINT) + _varint(_METRICS[metric]) if _METRICS[metric] else b""
    rest = base.value[len(metric_bytes) :]
    hint = _message(_HINTS_FIELD, _string(1, "lance.hnsw.prefetch_distance") + _string(2, "2"))
    return IndexDetails(TYPE_URL, metric_bytes + _message(_HNSW_FIELD, hnsw) + rest + hint)


def _ivf_hints(sample_rate: int, shuffle_concurrency: int) -> dict[str, str]:
    # pylance records the shuffle_partition_concurrency given, never the batches.
    return {
        "lance.ivf.sample_rate": str(sample_rate),
        "lance.ivf.max_iters": "50",
        "lance.ivf.shuffle_partition_batches": "10240",
        "lance.ivf.shuffle_partition_concurrency": str(shuffle_concurrency),
        "lance.skip_transpose": "false",
    }


def _details(metric: str, sub_index: bytes, hints: dict[str, str]) -> IndexDetails:
    """The message: the metric, the sub-index / compression field, the hints."""
    out = bytearray()
    if _METRICS[metric]:
        out += _key(1, _VARINT) + _varint(_METRICS[metric])
    out += sub_index
    for name, value in hints.items():
        out += _message(_HINTS_FIELD, _string(1, name) + _string(2, value))
    return IndexDetails(TYPE_URL, bytes(out))


def _message(field: int, body: bytes) -> bytes:
    return _key(field, _BYTES) + _varint(len(body)) + body


def _string(field: int, text: str) -> bytes:
    data = text.encode("utf-8")
    return _key(field, _BYTES) + _varint(len(data)) + data


def _key(field: int, wire_type: int) -> bytes:
    return _varint(field << 3 | wire_type)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def with_target_partition_size(details: IndexDetails, size: int | None) -> IndexDetails:
    """``details`` recording the ``target_partition_size`` given (field 2), as
    pylance records it; unchanged when none was given."""
    if size is None:
        return details
    field = _key(2, _VARINT) + _varint(size)
    return IndexDetails(details.type_url, details.value + field)
