"""Opening a version of a dataset, reported as pylance reports it (a ``loading``
event, :mod:`lancelet.events`) whether the version is found or not."""

from __future__ import annotations

from lancelet import events
from lancelet.dataset.versions.tags import resolve_version
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore


def read_version(store: DatasetStore, version: int | str | None) -> Manifest:
    """The manifest of ``version`` (a number or a tag; None: the latest)."""
    number = store.latest_version() if version is None else resolve_version(store, version)
    return store.read_manifest(number)


def load_manifest(store: DatasetStore, uri: str, version: int | str | None) -> Manifest:
    """:func:`read_version`, reported as a load of ``uri``."""
    try:
        manifest = read_version(store, version)
    except Exception:
        events.load_failed(uri, version)
        raise
    events.loaded(uri, version, manifest.version)
    return manifest


def announce_latest(store: DatasetStore, uri: str) -> Manifest | None:
    """The latest manifest, if any, reported as a load of ``uri``'s latest version."""
    found = store.latest_manifest()
    if found is None:
        events.load_failed(uri, None)
        return None
    events.loaded(uri, None, found[0].version)
    return found[0]
