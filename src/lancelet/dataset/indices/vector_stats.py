"""The per-segment entries of ``stats.index_stats`` for IVF_FLAT, IVF_PQ, IVF_SQ
and IVF_HNSW_* indices, as pylance 14 gives them (measured): for each segment ``index_type``,
``uuid``, ``uri`` (its ``index.idx``), ``metric_type``, ``num_partitions``,
``sub_index`` (FLAT: ``dim``, ``index_type``, ``metric_type`` the index's; PQ:
``metric_type`` (``l2`` for l2 and cosine, ``dot`` for dot), ``nbits``,
``num_sub_vectors``, ``dimension``, ``index_type``, ``transposed``; SQ: ``dim``,
``num_bits``, ``bounds`` (``start``, ``end``), ``index_type``, ``metric_type``; an
RQ: its ``storage_metadata`` as recorded, then ``index_type``, ``metric_type``; an
HNSW index's: its first partition's ``lance:hnsw`` entry (``entry_point``,
``params``, ``level_offsets``) followed by its storage's, named ``HNSW``), ``partitions``
(each ``{"size": rows}``), ``centroids`` (left out when the environment sets
``LANCE_INCLUDE_VECTOR_CENTROIDS=false``, as pylance does), ``loss`` and
``index_file_version`` (``V3``, or ``Legacy`` for the one-file IVF_PQ layout).  A
segment that covers nothing is ``{}``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from lancelet import io
from lancelet.dataset.read import ivf_search
from lancelet.dataset.read.ivf_search import opened
from lancelet.index.vector import IvfIndex, layout
from lancelet.index.vector.rabitq import RabitqStorage
from lancelet.index.vector.segment_writer import recorded_loss
from lancelet.index.vector.sq_storage import SqStorage
from lancelet.index.vector.storage import PqStorage
from lancelet.table import naming
from lancelet.table.index import IndexMetadata
from lancelet.transaction.store import DatasetStore

READ_TYPES = ivf_search.READ_TYPES
_CENTROIDS_SWITCH = "LANCE_INCLUDE_VECTOR_CENTROIDS"


def segment_statistics(
    store: DatasetStore, segments: Sequence[IndexMetadata]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for segment in segments:
        if segment.fragment_bitmap is not None and not len(segment.fragment_bitmap):
            out.append({})  # pylance does not open a segment that covers nothing
        else:
            out.append(_statistics(store, segment, opened(store, segment)))
    return out


def _statistics(store: DatasetStore, segment: IndexMetadata, index: IvfIndex) -> dict[str, Any]:
    directory = store.place(naming.INDICES_DIR, str(segment.uuid))
    stats: dict[str, Any] = {
        "index_type": index.index_type,
        "uuid": str(segment.uuid),
        "uri": directory.join("index.idx").path,
        "metric_type": index.metric,
        "num_partitions": index.num_partitions,
        "sub_index": _sub_index(directory, index),
        "partitions": [{"size": int(n)} for n in index.lengths.tolist()],
    }
    if os.environ.get(_CENTROIDS_SWITCH, "").strip().lower() != "false":
        stats["centroids"] = index.centroids.astype(float).tolist()
    stats["loss"] = recorded_loss(directory)
    stats["index_file_version"] = layout.file_version(directory)
    if stats["index_file_version"] == "Legacy":
        # pylance's legacy PQ stores its codes row-major and says nothing of it,
        # and names the index's own metric (cosine too).
        stats["sub_index"].pop("transposed", None)
        stats["sub_index"]["metric_type"] = index.metric
    return stats


def _sub_index(directory: io.Place, index: IvfIndex) -> dict[str, Any]:
    if isinstance(index.storage, RabitqStorage):
        stored = layout.storage_parameters(directory, "RQ")
        return {**stored, "index_type": "RQ", "metric_type": index.metric}
    storage = _storage_sub_index(index)
    if index.graphs is None:
        return storage
    return {**layout.first_graph_entry(directory), **storage, "index_type": "HNSW"}


def _storage_sub_index(index: IvfIndex) -> dict[str, Any]:
    if isinstance(index.storage, SqStorage):
        return {
            "dim": index.dimension,
            "num_bits": 8,
            "bounds": {"start": index.storage.lower, "end": index.storage.upper},
            "index_type": "SQ",
            "metric_type": index.metric,
        }
    if not isinstance(index.storage, PqStorage):
        return {"dim": index.dimension, "index_type": "FLAT", "metric_type": index.metric}
    sub_vectors = index.storage.codebook.shape[0]
    return {
        "metric_type": "dot" if index.metric == "dot" else "l2",
        "nbits": index.storage.num_bits,
        "num_sub_vectors": sub_vectors,
        "dimension": index.dimension,
        "index_type": "PQ",
        "transposed": True,
    }
