"""``LanceDataset.drop``: delete a whole dataset, only where one is."""

from __future__ import annotations

import os

from lancelet.errors import ArgumentError, LanceletError
from lancelet.transaction.store import DatasetStore


def drop_dataset(
    base_uri: str | os.PathLike[str],
    storage_options: dict[str, str] | None,
    ignore_not_found: bool | None,
) -> None:
    """Remove everything under ``base_uri`` if it holds a readable manifest.

    A path with nothing under it is not found (an error unless ``ignore_not_found``);
    one holding anything but no manifest that can be read is refused, as pylance
    refuses it, so a mistyped parent directory is never wiped.
    """
    store = DatasetStore(base_uri, storage_options)
    root = store.root
    if not store.io.is_dir(root):
        if not ignore_not_found:
            raise FileNotFoundError(f"Not found: {root}")
        return
    if not _has_readable_manifest(store):
        raise ArgumentError(
            f"Refusing to drop {root!r}: no readable Lance manifest was found under "
            "'_versions', so this is not a dataset root"
        )
    store.io.remove_tree(root)


def _has_readable_manifest(store: DatasetStore) -> bool:
    for location in reversed(store.list_versions()):
        try:
            store.read_manifest(location.version)
        except (LanceletError, ValueError):
            continue
        return True
    return False
