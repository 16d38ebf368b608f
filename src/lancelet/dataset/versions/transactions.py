"""pylance's ``Transaction``: an operation with the version it read, an id and free-form
properties, as written to ``_transactions/`` with every commit; and the calls that
read them back or commit several at once."""

from __future__ import annotations

import uuid as uuid_module
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from lancelet.dataset.versions.operation import LanceOperation
from lancelet.dataset.versions.operation_view import public_operation
from lancelet.errors import ArgumentError, UnsupportedOptionError, VersionNotFoundError
from lancelet.table import naming
from lancelet.table.fragment import Fragment
from lancelet.table.index import IndexFile, IndexMetadata
from lancelet.table.naming import ManifestNaming
from lancelet.transaction import operations as ops
from lancelet.transaction.store import DatasetStore

# The transaction property holding a commit message.
LANCE_COMMIT_MESSAGE_KEY = "__lance_commit_message"


@dataclass
class Transaction:
    read_version: int
    operation: LanceOperation.BaseOperation
    uuid: str = field(default_factory=lambda: str(uuid_module.uuid4()))
    transaction_properties: dict[str, str] | None = field(default_factory=dict)

    def to_transaction(self) -> ops.Transaction:
        if not isinstance(self.operation, LanceOperation.BaseOperation):
            raise TypeError(
                f"Transaction.operation must be a LanceOperation, not {type(self.operation)}"
            )
        return ops.Transaction(
            self.read_version,
            self.operation.to_operation(),
            self.uuid,
            properties=dict(self.transaction_properties or {}),
        )


def public_transaction(txn: ops.Transaction) -> Transaction:
    return Transaction(
        txn.read_version, public_operation(txn.operation), txn.uuid, dict(txn.properties)
    )


def commit_properties(
    commit_message: str | None, transaction_properties: Mapping[str, str] | None
) -> dict[str, str]:
    """The properties a commit records: the message is one of them."""
    properties = dict(transaction_properties or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in properties.items()):
        raise TypeError("transaction_properties must map strings to strings")
    if commit_message is not None:
        if not isinstance(commit_message, str):
            raise TypeError(f"commit_message must be a string, not {type(commit_message)}")
        properties[LANCE_COMMIT_MESSAGE_KEY] = commit_message
    return properties


def read_transaction(store: DatasetStore, version: int) -> Transaction | None:
    """The transaction that made ``version``; None if its manifest names none."""
    manifest = store.read_manifest(version)
    if not manifest.transaction_file:
        return None
    return public_transaction(store.read_transaction(manifest.transaction_file))


def recent_transactions(store: DatasetStore, version: int, count: int) -> list[Transaction | None]:
    """The transactions of ``version`` and the ``count - 1`` before it, newest first;
    None for a version cleaned up or committed without a transaction file."""
    if count < 0:
        raise ArgumentError(f"recent_transactions must be at least 0, not {count}")
    out: list[Transaction | None] = []
    for number in range(version, max(version - count, 0), -1):
        try:
            out.append(read_transaction(store, number))
        except VersionNotFoundError:
            out.append(None)
    return out


def merged_appends(read_version: int, transactions: Sequence[Transaction]) -> Transaction:
    """Several append transactions as one, as ``commit_batch`` commits them."""
    if not transactions:
        raise ArgumentError("commit_batch: no transactions given")
    fragments: list[Fragment] = []
    for txn in transactions:
        if not isinstance(txn, Transaction):
            raise TypeError(f"commit_batch takes Transactions, not {type(txn)}")
        if not isinstance(txn.operation, LanceOperation.Append):
            raise UnsupportedOptionError(
                "commit_batch: only Append transactions can be committed together, not "
                f"{type(txn.operation).__name__}"
            )
        if txn.transaction_properties:
            raise UnsupportedOptionError(
                "commit_batch: lancelet does not merge transaction_properties"
            )
        fragments.extend(txn.operation.fragments)
    return Transaction(read_version, LanceOperation.Append(fragments))


def transaction_to_commit(
    operation: LanceOperation.BaseOperation | Transaction,
    read_version: int | None,
    commit_message: str | None,
    store: DatasetStore,
) -> ops.Transaction:
    """What ``LanceDataset.commit`` commits: a whole transaction, or an operation on
    ``read_version`` (which only an overwrite or a restore may leave out).  New
    indices that list no files get their directory's files, as pylance 14 records
    them when it commits such an index (measured on a distributed INVERTED build)."""
    txn = _transaction_to_commit(operation, read_version, commit_message, store)
    op = txn.operation
    if isinstance(op, ops.CreateIndex) and any(not i.files for i in op.new_indices):
        listed = tuple(_with_listed_files(i, store) for i in op.new_indices)
        txn = replace(txn, operation=replace(op, new_indices=listed))
    return txn


def _with_listed_files(index: IndexMetadata, store: DatasetStore) -> IndexMetadata:
    if index.files or index.base_id is not None:
        return index
    directory = store.path(naming.INDICES_DIR, str(index.uuid))
    found = sorted(store.io.list_tree(directory))
    return replace(index, files=tuple(IndexFile(path, info.size) for path, info in found))


def _transaction_to_commit(
    operation: LanceOperation.BaseOperation | Transaction,
    read_version: int | None,
    commit_message: str | None,
    store: DatasetStore,
) -> ops.Transaction:
    if isinstance(operation, Transaction):
        if commit_message is not None:
            raise ArgumentError(
                "commit_message cannot be given with a Transaction; set it in the "
                "transaction's properties"
            )
        if read_version is not None and read_version != operation.read_version:
            raise ArgumentError(
                f"read_version {read_version} contradicts the transaction's "
                f"{operation.read_version}"
            )
        return operation.to_transaction()
    if not isinstance(operation, LanceOperation.BaseOperation):
        raise TypeError(
            f"operation must be a LanceOperation or a Transaction, not {type(operation)}"
        )
    if read_version is None:
        if not isinstance(operation, (LanceOperation.Overwrite, LanceOperation.Restore)):
            raise ArgumentError(
                "read_version is required for all operations except Overwrite and Restore"
            )
        location = store.latest_location()
        read_version = location.version if location else 0
    properties = commit_properties(commit_message, None)
    return ops.Transaction(read_version, operation.to_operation(), properties=properties)


def manifest_naming(enable_v2_manifest_paths: bool | None) -> ManifestNaming:
    """The naming of a new dataset's manifests: v2 unless v1 is asked for."""
    return ManifestNaming.V1 if enable_v2_manifest_paths is False else ManifestNaming.V2
