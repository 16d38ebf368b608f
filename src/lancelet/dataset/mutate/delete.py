"""Deleting rows by predicate: new deletion vectors, no data rewritten."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow.compute as pc

from lancelet.dataset.read.scanner import ROW_ADDRESS, LanceScanner
from lancelet.table import row_address, sorted_sets
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.manifest_file import check_encodable
from lancelet.transaction.operations import Delete
from lancelet.transaction.store import DatasetStore


def matching_offsets(
    store: DatasetStore, manifest: Manifest, fragment: Fragment, predicate: str | pc.Expression
) -> np.ndarray:
    """Physical offsets of the live rows of ``fragment`` that match ``predicate``."""
    scan = LanceScanner(
        store, manifest, columns=[ROW_ADDRESS], filter=predicate, fragments=[fragment]
    )
    addresses = scan.to_table().column(ROW_ADDRESS).to_numpy()
    return row_address.offsets(addresses)


def plan_delete(
    store: DatasetStore, manifest: Manifest, predicate: str | pc.Expression
) -> tuple[Delete, int]:
    """The Delete operation for ``predicate`` and the number of rows it deletes.

    Deletion files are written here (named after the version read); a fragment
    whose every row ends up deleted is removed instead.
    """
    check_encodable(manifest, store.root)  # before any deletion file is written
    scan = LanceScanner(store, manifest, columns=[ROW_ADDRESS], filter=predicate)
    addresses = scan.to_table().column(ROW_ADDRESS).to_numpy()
    updated, removed = delete_addresses(store, manifest, addresses)
    text = predicate if isinstance(predicate, str) else str(predicate)
    return Delete(updated, removed, text), len(addresses)


def delete_addresses(
    store: DatasetStore, manifest: Manifest, addresses: np.ndarray
) -> tuple[tuple[Fragment, ...], tuple[int, ...]]:
    """Delete the rows at ``addresses``: the fragments with grown deletion vectors (their
    files written, named after the version read) and the ids of fragments left empty."""
    addresses = sorted_sets.unique(np.asarray(addresses, dtype=np.uint64))
    if not len(addresses):
        return (), ()
    updated: list[Fragment] = []
    removed: list[int] = []
    try:
        for fragment_id, rows in row_address.by_fragment(addresses).items():
            fragment = manifest.fragment(fragment_id)
            assert fragment is not None, f"row address of unknown fragment {fragment_id}"
            remaining = store.delete_rows(fragment, rows, manifest.version)
            if remaining is None:
                removed.append(fragment.id)
            else:
                updated.append(remaining)
    except BaseException:
        discard_deletions(store, manifest, updated)
        raise
    return tuple(updated), tuple(removed)


def discard_deletions(store: DatasetStore, base: Manifest, fragments: Iterable[Fragment]) -> None:
    """Remove the deletion files that ``fragments`` gained since ``base`` (an uncommitted
    delete or rewrite), leaving those ``base`` already referenced."""
    for fragment in fragments:
        before = base.fragment(fragment.id)
        file = fragment.deletion_file
        if file is not None and (before is None or before.deletion_file != file):
            store.io.delete(store.deletion_path(fragment.id, file))
