"""The optimistic commit loop.

A writer prepares a transaction against the version it read.  To commit it
tries to create the manifest of ``latest + 1`` with put-if-not-exists.  Losing
that race is normal: it reads the transactions that won since its read version,
checks each against its own with the rules in :mod:`.conflicts` (rebasing it
when they are compatible), and tries again with a short, growing, jittered
backoff.  Nothing becomes visible until the manifest exists, so a writer that
dies at any point leaves only unreferenced files behind.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from lancelet.errors import (
    CommitRetriesExhaustedError,
    DatasetAlreadyExistsError,
    DatasetNotFoundError,
    RetryableCommitConflictError,
    VersionNotFoundError,
)
from lancelet.table import features
from lancelet.table.manifest import Manifest
from lancelet.table.naming import ManifestNaming
from lancelet.transaction.apply import build_manifest
from lancelet.transaction.conflicts import rebase
from lancelet.transaction.operations import Overwrite, Transaction
from lancelet.transaction.store import DatasetStore


@dataclass(frozen=True)
class CommitPolicy:
    max_retries: int = 20
    first_backoff_s: float = 0.01
    max_backoff_s: float = 1.0

    def sleep(self, attempt: int) -> None:
        cap = min(self.max_backoff_s, self.first_backoff_s * 2**attempt)
        time.sleep(random.uniform(0, cap))


def _rebase_onto(
    store: DatasetStore, txn: Transaction, checked: int, latest: Manifest
) -> Transaction:
    """Check ``txn`` against every transaction committed after version ``checked``."""
    for version in range(checked + 1, latest.version + 1):
        try:
            winner = store.read_manifest(version)
        except VersionNotFoundError as exc:
            raise RetryableCommitConflictError(
                f"{store.root}: version {version}, committed after this transaction's read "
                f"version {txn.read_version}, was cleaned up; re-read the dataset and retry"
            ) from exc
        theirs = (
            store.read_transaction(winner.transaction_file) if winner.transaction_file else None
        )
        txn = rebase(txn, theirs, version, store)
    return txn


def commit_transaction(
    store: DatasetStore,
    txn: Transaction,
    *,
    create_only: bool = False,
    data_format: tuple[str, str] = ("lance", "2.0"),
    policy: CommitPolicy | None = None,
    new_dataset_naming: ManifestNaming = ManifestNaming.V2,
) -> Manifest:
    """Commit ``txn`` and return the manifest of the version it became.

    ``create_only`` refuses when any version exists (``mode="create"``).
    """
    policy = policy or CommitPolicy()
    written: tuple[Transaction, str] | None = None
    # Winners already checked in an earlier attempt need no second look; the
    # transaction keeps its original read version, as its file name records.
    checked = txn.read_version
    for attempt in range(policy.max_retries + 1):
        found = store.latest_manifest()
        latest, scheme = found if found else (None, new_dataset_naming)
        if latest is not None and create_only:
            raise DatasetAlreadyExistsError(f"{store.root}: a dataset already exists here")
        if latest is None and not isinstance(txn.operation, Overwrite):
            raise DatasetNotFoundError(f"{store.root}: no Lance dataset here")
        if latest is not None:
            features.check_writable(latest.writer_feature_flags, store.root)
            txn = _rebase_onto(store, txn, checked, latest)
            checked = latest.version
        if written is None or written[0] is not txn:
            # A rebase changes the operation, so the file must describe the new one.
            written = (txn, store.write_transaction(txn))
        manifest = build_manifest(
            latest,
            txn,
            transaction_file=written[1],
            load=store.read_manifest,
            data_format=data_format,
        )
        if store.publish_manifest(manifest, scheme):
            return manifest
        policy.sleep(attempt)
    raise CommitRetriesExhaustedError(
        f"{store.root}: gave up after {policy.max_retries + 1} attempts; "
        "other writers kept committing first"
    )
