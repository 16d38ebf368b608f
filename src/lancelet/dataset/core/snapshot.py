"""The engine's view of one version of a dataset, and the handle it gets for a
``LanceDataset`` where pylance's API takes one.

The jobs beneath the facade (``read/``, ``write/``, ``mutate/``, ``indices/``,
``versions/``, ``compaction/``) work on a :class:`Snapshot`: where the dataset is
stored (its store, with the storage options and session caches it was opened
with), and the manifest of the version being read.  It is immutable: a job that
commits returns the new manifest, and the facade moves its ``LanceDataset`` to it.

A few of pylance's calls take a dataset object itself (``Compaction.plan(dataset)``,
``write_dataset(dataset_as_data, ...)``, ``write_fragments(data, dataset)``).  The
engine sees those as a :class:`DatasetHandle`, the abstract base ``LanceDataset``
implements, so that no job imports the facade.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, replace
from typing import Any

from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore


@dataclass(frozen=True)
class Snapshot:
    """One version of a dataset: ``uri`` as the user gave it (for messages and
    events), its ``store`` and the ``manifest`` of the version."""

    uri: str
    store: DatasetStore
    manifest: Manifest

    @property
    def version(self) -> int:
        return self.manifest.version

    def at(self, manifest: Manifest) -> Snapshot:
        """The same dataset at another version (one this store read or committed)."""
        return replace(self, manifest=manifest)


class DatasetHandle(abc.ABC):
    """A dataset object passed to the engine: the version it shows, its scans, and
    moving it to a version the engine committed for it (pylance's calls that commit
    on a dataset object leave it at the new version)."""

    @property
    @abc.abstractmethod
    def uri(self) -> str: ...

    @property
    @abc.abstractmethod
    def snapshot(self) -> Snapshot: ...

    @abc.abstractmethod
    def advance_to(self, manifest: Manifest) -> None: ...

    @abc.abstractmethod
    def scanner(self, *args: Any, **kwargs: Any) -> Any: ...
