"""Every commit the dataset layer makes: the transaction layer's commit loop, then the
cleanup the dataset's config asks for (:mod:`.auto_cleanup`)."""

from __future__ import annotations

from lancelet.dataset.auto_cleanup import after_commit
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
) -> Manifest:
    """Commit ``txn`` (as a detached version if asked) and return its manifest."""
    if detached:
        return _commit.commit_detached(store, txn, data_format)
    manifest = _commit.commit_transaction(
        store,
        txn,
        create_only=create_only,
        data_format=data_format,
        policy=policy,
        new_dataset_naming=new_dataset_naming,
    )
    after_commit(store, manifest)
    return manifest
