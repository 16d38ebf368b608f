"""Whether a dataset's latest manifest lacks facts that newer writers record (pylance's
``lance.lance.manifest_needs_migration``)."""

from __future__ import annotations

from lancelet.dataset.core.snapshot import DatasetHandle
from lancelet.table.manifest import Manifest


def _manifest_lacks_facts(manifest: Manifest) -> bool:
    """Facts that early writers left out and a reader has to work out again: who wrote
    the manifest, a fragment's row count, a deletion file's count of deleted rows, the
    fragments an index covers."""
    if not manifest.writer_version.library:
        return True
    for fragment in manifest.fragments:
        if fragment.physical_rows == 0 and fragment.files:
            return True
        deletion = fragment.deletion_file
        if deletion is not None and deletion.num_deleted_rows == 0:
            return True
    return any(index.fragment_bitmap is None for index in manifest.indices)


def manifest_needs_migration(dataset: DatasetHandle) -> bool:
    """Whether the dataset's latest manifest lacks facts a current writer records."""
    found = dataset.snapshot.store.latest_manifest()
    if found is None:
        return False
    return _manifest_lacks_facts(found[0])
