"""Opening a version of a dataset, reported as pylance reports it (a ``loading``
event, :mod:`lancelet.events`) whether the version is found or not."""

from __future__ import annotations

from lancelet import events
from lancelet.dataset.versions.asof import AsOf, version_asof
from lancelet.dataset.versions.tags import resolve_version
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore


def read_version(store: DatasetStore, version: int | str | AsOf | None) -> Manifest:
    """The manifest of ``version`` (a number, a tag or a moment; None: the latest)."""
    if version is None:
        number = store.latest_version()
    elif isinstance(version, AsOf):
        number = version_asof(store, version.moment)
    else:
        number = resolve_version(store, version)
    return store.read_manifest(number)


def load_manifest(store: DatasetStore, uri: str, version: int | str | AsOf | None) -> Manifest:
    """:func:`read_version`, reported as a load of ``uri`` (a moment is reported as
    a load of the version it named)."""
    try:
        manifest = read_version(store, version)
    except Exception:
        events.load_failed(uri, None if isinstance(version, AsOf) else version)
        raise
    asked = manifest.version if isinstance(version, AsOf) else version
    events.loaded(uri, asked, manifest.version)
    return manifest


def announce_latest(store: DatasetStore, uri: str) -> Manifest | None:
    """The latest manifest, if any, reported as a load of ``uri``'s latest version."""
    found = store.latest_manifest()
    if found is None:
        events.load_failed(uri, None)
        return None
    events.loaded(uri, None, found[0].version)
    return found[0]
