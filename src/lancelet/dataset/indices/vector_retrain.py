"""``optimize_indices(retrain=True)`` for a vector index, as pylance 14 does it
(measured on IVF_FLAT, IVF_PQ and IVF_HNSW_SQ indices): the index is built anew
over every live row of the version with the parameters its details record (the
type, metric, PQ sub-vectors and bits, HNSW ``m``, ``ef_construction`` and
``max_level``, the sample rate and shuffle concurrency hints, and the target
partition size when one was given).  The partition count is derived from the rows
(``rows // target``, with the type's default target unless one is recorded), not
kept from the first build.  The new segment replaces every segment of the index,
keeps its name and details, holds every fragment and is recorded as built from
the current version.  Details lancelet cannot read back into parameters are
refused by name.
"""

from __future__ import annotations

import uuid as uuid_lib
from dataclasses import dataclass
from typing import Any

from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.indices import catalog as indices
from lancelet.dataset.indices import vector_build
from lancelet.dataset.read import index_plan
from lancelet.errors import UnsupportedIndexError
from lancelet.index.vector import details as vector_details
from lancelet.index.vector import details_view
from lancelet.table import naming
from lancelet.table.index import IndexMetadata, index_type


@dataclass(frozen=True)
class VectorRetrain:
    """One vector index built anew; ``merged`` are all its segments, replaced."""

    name: str
    merged: tuple[IndexMetadata, ...]

    def build(self, snapshot: Snapshot, where: str) -> IndexMetadata:
        """Write the new segment's files; its metadata."""
        first = self.merged[0]
        plan = _plan(snapshot, first, f"{where}: index {self.name!r}")
        uid = uuid_lib.uuid4()
        vector_build.build_index(snapshot, plan, uid)
        try:
            assert first.index_details is not None
            return indices.new_index_metadata(
                snapshot,
                self.name,
                list(first.fields),
                uid,
                first.index_details,
                [f.id for f in snapshot.manifest.fragments],
                first.index_version or vector_details.INDEX_VERSION,
            )
        except BaseException:
            snapshot.store.io.remove_tree(snapshot.store.path(naming.INDICES_DIR, str(uid)))
            raise


def _plan(snapshot: Snapshot, segment: IndexMetadata, label: str) -> vector_build.VectorIndexPlan:
    described = (
        details_view.describe(segment.index_details.value) if segment.index_details else None
    )
    path = index_plan.field_paths(snapshot.manifest).get(segment.fields[0])
    if described is None or path is None:
        raise UnsupportedIndexError(
            f"{label}: lancelet cannot read the parameters to retrain it from its details"
        )
    options, kwargs = _arguments(described, label)
    return vector_build.plan_index(
        snapshot,
        path,
        index_type(segment.index_details),
        described["metric_type"].lower(),
        None,
        options,
        kwargs,
    )


def _arguments(
    described: dict[str, Any], label: str
) -> tuple[dict[str, tuple[Any, Any]], dict[str, Any]]:
    """create_index's options (value, default) and keyword arguments from the
    described details."""
    hints = described.get("runtime_hints", {})
    try:
        kwargs: dict[str, Any] = {"sample_rate": int(hints["lance.ivf.sample_rate"])}
        concurrency = int(hints.get("lance.ivf.shuffle_partition_concurrency", "2"))
    except (KeyError, ValueError) as exc:
        raise UnsupportedIndexError(
            f"{label}: its details record no sample rate lancelet can retrain with"
        ) from exc
    options: dict[str, tuple[Any, Any]] = {
        "shuffle_partition_concurrency": (concurrency, None),
        "target_partition_size": (described.get("target_partition_size"), None),
    }
    compression = described.get("compression")
    if compression is not None:
        kwargs["num_bits"] = compression["num_bits"]
        if compression["type"] == "pq":
            options["num_sub_vectors"] = (compression["num_sub_vectors"], None)
    hnsw = described.get("hnsw")
    if hnsw is not None:
        kwargs["m"] = hnsw["max_connections"]
        kwargs["ef_construction"] = hnsw["construction_ef"]
        kwargs["max_level"] = hnsw["max_level"]
    return options, kwargs
