"""pylance's distributed INVERTED build: ``create_scalar_index(..., fragment_ids=,
index_uuid=)`` stages a build over some fragments and commits nothing;
``merge_index_metadata(uuid, "INVERTED")`` merges the staged builds into the
index's files; the caller commits a ``CreateIndex`` listing the index (without
details: see :mod:`lancelet.table.index_layout`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lancelet.dataset.core.snapshot import Snapshot
from lancelet.dataset.indices import build
from lancelet.errors import (
    ArgumentError,
    IndexTypeError,
    UnsupportedFunctionError,
    UnsupportedOptionError,
    UnsupportedTypeError,
)
from lancelet.file import version as file_version
from lancelet.index.fts import staging
from lancelet.table import naming

INVERTED = "INVERTED"


def stage_inverted(
    snapshot: Snapshot,
    column: str,
    fragment_ids: Sequence[int],
    index_uuid: str | None,
    train: bool,
    params: Mapping[str, Any],
) -> None:
    """Stage an INVERTED build over the live rows of ``fragment_ids`` under
    ``_indices/<index_uuid>/staging/``; nothing is committed."""
    manifest = snapshot.manifest
    where = f"{snapshot.uri} version {manifest.version}"
    if not train:
        raise UnsupportedOptionError(f"{where}: a distributed INVERTED build needs train=True")
    if manifest.stable_row_ids:
        # The caller commits the index at version 0, which lists rows by address.
        raise UnsupportedOptionError(
            f"{where}: lancelet does not build distributed INVERTED indices on datasets "
            "with stable row ids"
        )
    wanted = [_fragment_id(f, where) for f in fragment_ids]
    present = {f.id for f in manifest.fragments}
    for fragment_id in wanted:
        if fragment_id not in present:
            raise ArgumentError(f"{where}: No fragment with id {fragment_id}")
    field = build.resolve_field(manifest.schema, column, where)
    uid = build._new_uuid(index_uuid, where)
    store = snapshot.store
    directory = store.place(naming.INDICES_DIR, str(uid))
    version = file_version.index_file_version(manifest.data_storage_version)
    number = staging.staged_partition_number(wanted)
    rows = build._values(store, manifest, field, wanted, False)
    try:
        staging.write_staged(rows, directory, field.type, version, number, dict(params))
    except UnsupportedTypeError as exc:
        _remove_staged(snapshot, directory, number)
        raise IndexTypeError(
            f"{where}: cannot build a {INVERTED} index on column {field.path!r}: {exc}"
        ) from exc
    except BaseException:
        _remove_staged(snapshot, directory, number)
        raise


def _fragment_id(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ArgumentError(f"{where}: fragment_ids holds {value!r}, not a fragment id")
    return value


def _remove_staged(snapshot: Snapshot, directory: Any, number: int) -> None:
    place = directory.join(staging.STAGING_DIR)
    for name in staging.staged_files(number):
        snapshot.store.io.delete(place.join(name).path)


def merge_index_metadata(
    snapshot: Snapshot,
    index_uuid: object,
    index_type: object,
    batch_readhead: object,
    progress_callback: object,
) -> None:
    """Merge the staged INVERTED builds of ``index_uuid``; other index types are
    refused (lancelet builds them in one ``create_scalar_index`` call)."""
    if not isinstance(index_type, str) or index_type.upper() != INVERTED:
        raise UnsupportedFunctionError(
            "LanceDataset.merge_index_metadata is not supported: lancelet builds each "
            f"index in one create_scalar_index call (it merges INVERTED builds only, "
            f"not {index_type!r})"
        )
    manifest = snapshot.manifest
    where = f"{snapshot.uri} version {manifest.version}"
    if progress_callback is not None:
        raise UnsupportedOptionError(f"{where}: merge_index_metadata takes no progress_callback")
    # A read-ahead depth: it changes how pylance reads, not what the merge writes.
    if batch_readhead is not None and (
        isinstance(batch_readhead, bool) or not isinstance(batch_readhead, int)
    ):
        raise ArgumentError(f"{where}: batch_readhead must be an int, not {batch_readhead!r}")
    uid = build._new_uuid(str(index_uuid), where)
    directory = snapshot.store.place(naming.INDICES_DIR, str(uid))
    version = file_version.index_file_version(manifest.data_storage_version)
    staging.merge_staged(directory, version)
