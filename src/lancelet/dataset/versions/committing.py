"""Every commit the dataset layer makes: the transaction layer's commit loop, then the
cleanup the dataset's config asks for (:mod:`.auto_cleanup`)."""

from __future__ import annotations

from lancelet import events
from lancelet.dataset.versions.auto_cleanup import after_commit
from lancelet.table.manifest import Manifest
from lancelet.table.naming import ManifestNaming
from lancelet.transaction import commit as _commit
from lancelet.transaction.commit import CommitPolicy
from lancelet.transaction.operations import Transaction
from lancelet.transaction.store import DatasetStore


def commit_transaction(
    store: DatasetStore,
    txn: Transaction,
    *,
    create_only: bool = False,
    data_format: tuple[str, str] = ("lance", "2.0"),
    policy: CommitPolicy | None = None,
    new_dataset_naming: ManifestNaming = ManifestNaming.V2,
    detached: bool = False,
    announce_as: str | None = None,
) -> Manifest:
    """Commit ``txn`` (as a detached version if asked) and return its manifest.

    ``announce_as``: the dataset's URI, to report the commit as pylance reports the
    commits of its commit builder (writes, deletes, updates, merge_inserts and
    ``LanceDataset.commit``): one more look for a dataset when there is none yet, then
    a ``committed`` event (:mod:`lancelet.events`)."""
    if announce_as is not None and not txn.read_version:
        events.load_failed(announce_as, None)
    if detached:
        manifest = _commit.commit_detached(store, txn, data_format)
    else:
        manifest = _commit.commit_transaction(
            store,
            txn,
            create_only=create_only,
            data_format=data_format,
            policy=policy,
            new_dataset_naming=new_dataset_naming,
        )
        after_commit(store, manifest)
    if announce_as is not None:
        operation = type(txn.operation).__name__
        events.committed(announce_as, txn.read_version, manifest.version, detached, operation)
    return manifest
