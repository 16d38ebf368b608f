"""Committing an IVF_PQ index whose parts were made step by step (pylance's
``IndicesBuilder``: trained centroids and codebook, rows already assigned to
partitions and encoded): the files written under ``_indices/<uuid>/`` as
``create_index`` writes them, one ``CreateIndex`` commit over every fragment, and
the directory removed if anything fails."""

from __future__ import annotations

import uuid as uuid_lib
from dataclasses import dataclass

import numpy as np

from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.indices import build as index_build
from lancelet.dataset.indices import catalog as indices
from lancelet.errors import ArgumentError
from lancelet.file import version as file_version
from lancelet.index.vector import details as vector_details
from lancelet.index.vector import ivf_pq_writer
from lancelet.table import naming
from lancelet.table.manifest import Manifest


@dataclass(frozen=True)
class PreparedPq:
    """The parts of an IVF_PQ index: (P, D) centroids and (M, 256, D / M) codebook
    (float32), and per row its key, partition and (M,) codes."""

    metric: str
    centroids: np.ndarray
    codebook: np.ndarray
    row_ids: np.ndarray
    partitions: np.ndarray
    codes: np.ndarray


def commit_prepared_ivf_pq(
    snapshot: Snapshot, column: str, name: str | None, prepared: PreparedPq
) -> Manifest:
    """Write and commit the index ``name`` (default ``<column>_idx``) of ``column``."""
    manifest = snapshot.manifest
    where = f"{snapshot.uri} version {manifest.version}"
    field = index_build.resolve_field(manifest.schema, column, where)
    name = name or f"{field.path}_idx"
    partitions = np.asarray(prepared.partitions, dtype=np.int64)
    if len(partitions) and not 0 <= int(partitions.min()) <= int(partitions.max()) < len(
        prepared.centroids
    ):
        raise ArgumentError(f"{where}: a row's partition is not one of the IVF model's")
    indices.check_new_index(manifest, name, [field.id], False, where)
    uid = uuid_lib.uuid4()
    directory = snapshot.store.place(naming.INDICES_DIR, str(uid))
    version = file_version.index_file_version(manifest.data_storage_version)
    try:
        ivf_pq_writer.write_ivf_pq(
            directory,
            np.asarray(prepared.row_ids, dtype=np.uint64),
            prepared.codes,
            partitions,
            prepared.centroids,
            0.0,
            prepared.codebook,
            prepared.metric,
            version,
        )
        num_bits, sub_vectors = 8, prepared.codebook.shape[0]
        details = vector_details.loaded_ivf_pq_details(prepared.metric, num_bits, sub_vectors)
        return indices.commit_index(
            snapshot,
            name,
            [field.id],
            uid,
            details,
            [f.id for f in manifest.fragments],
            index_version=vector_details.INDEX_VERSION,
        )
    except BaseException:
        snapshot.store.io.remove_tree(directory.path)
        raise
