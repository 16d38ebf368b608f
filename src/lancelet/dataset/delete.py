"""Deleting rows by predicate: new deletion vectors, no data rewritten."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow.compute as pc

from lancelet import io
from lancelet.dataset.scanner import ROW_ADDRESS, LanceScanner
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.operations import Delete
from lancelet.transaction.store import DatasetStore

_OFFSET_MASK = np.uint64(0xFFFFFFFF)


def matching_offsets(
    store: DatasetStore, manifest: Manifest, fragment: Fragment, predicate: str | pc.Expression
) -> np.ndarray:
    """Physical offsets of the live rows of ``fragment`` that match ``predicate``."""
    scan = LanceScanner(
        store, manifest, columns=[ROW_ADDRESS], filter=predicate, fragments=[fragment]
    )
    addresses = scan.to_table().column(ROW_ADDRESS).to_numpy()
    offsets: np.ndarray = (addresses & _OFFSET_MASK).astype(np.uint32)
    return offsets


def plan_delete(
    store: DatasetStore, manifest: Manifest, predicate: str | pc.Expression
) -> tuple[Delete, int]:
    """The Delete operation for ``predicate`` and the number of rows it deletes.

    Deletion files are written here (named after the version read); a fragment
    whose every row ends up deleted is removed instead.
    """
    updated: list[Fragment] = []
    removed: list[int] = []
    count = 0
    try:
        for fragment in manifest.fragments:
            hits = matching_offsets(store, manifest, fragment, predicate)
            if not len(hits):
                continue
            count += len(hits)
            remaining = store.delete_rows(fragment, hits, manifest.version)
            if remaining is None:
                removed.append(fragment.id)
            else:
                updated.append(remaining)
    except BaseException:
        discard_deletions(store, manifest, updated)
        raise
    text = predicate if isinstance(predicate, str) else str(predicate)
    return Delete(tuple(updated), tuple(removed), text), count


def discard_deletions(store: DatasetStore, base: Manifest, fragments: Iterable[Fragment]) -> None:
    """Remove the deletion files that ``fragments`` gained since ``base`` (an uncommitted
    delete or rewrite), leaving those ``base`` already referenced."""
    for fragment in fragments:
        before = base.fragment(fragment.id)
        file = fragment.deletion_file
        if file is not None and (before is None or before.deletion_file != file):
            io.delete(store.deletion_path(fragment.id, file))
