"""``LanceDataset.commit`` and ``LanceDataset.commit_batch``: operations and whole
transactions prepared elsewhere (by ``write_fragments``, by hand) committed, with
pylance's signatures.

Keywords lancelet does not implement (namespaces, ``base_store_params``,
``enable_stable_row_ids``) are refused unless given their defaults; a
``commit_timeout`` of a minute or more is accepted, as lancelet's commit loop gives up
well within it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, cast

from lancelet.dataset.core.options import refuse_unimplemented
from lancelet.dataset.versions import transactions as commit_api
from lancelet.dataset.versions.committing import commit_transaction
from lancelet.dataset.versions.loading import announce_latest
from lancelet.dataset.versions.operation import LanceOperation
from lancelet.dataset.write.inputs import dataset_store, given_uri
from lancelet.transaction import operations as ops
from lancelet.transaction.commit import CommitLock, CommitPolicy
from lancelet.transaction.store import DatasetStore

if TYPE_CHECKING:
    from lancelet.dataset.dataset import LanceDataset

# pylance's default commit timeout.
DEFAULT_COMMIT_TIMEOUT = timedelta(seconds=1800)


class CommitMethods:
    """The commit calls, mixed into ``LanceDataset``: static methods, as pylance's,
    that return the version committed as a ``LanceDataset``."""

    # The class the commits open their new version as: LanceDataset, the first class
    # made with this mixin, which hands itself over as it is made (its module imports
    # this one, so this one cannot import it).  Its subclasses leave it as it is.
    _dataset_class: ClassVar[type[LanceDataset]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not hasattr(CommitMethods, "_dataset_class"):
            CommitMethods._dataset_class = cast("type[LanceDataset]", cls)

    @staticmethod
    def commit(
        base_uri: str | os.PathLike[str] | LanceDataset,
        operation: LanceOperation.BaseOperation | commit_api.Transaction,
        read_version: int | None = None,
        commit_lock: CommitLock | None = None,
        storage_options: dict[str, str] | None = None,
        enable_v2_manifest_paths: bool | None = None,
        detached: bool | None = False,
        max_retries: int = 20,
        *,
        commit_message: str | None = None,
        enable_stable_row_ids: bool | None = None,
        namespace_client: Any = None,
        table_id: list[str] | None = None,
        namespace_client_managed_versioning: bool = False,
        base_store_params: dict[str, dict[str, str]] | None = None,
        commit_timeout: timedelta | None = DEFAULT_COMMIT_TIMEOUT,
    ) -> LanceDataset:
        """Commit an operation prepared elsewhere (for example by ``write_fragments``),
        or a whole ``Transaction``."""

        refuse_unimplemented(
            "LanceDataset.commit",
            enable_stable_row_ids=enable_stable_row_ids,
            namespace_client=namespace_client,
            table_id=table_id,
            namespace_client_managed_versioning=namespace_client_managed_versioning,
            base_store_params=base_store_params,
            commit_timeout=commit_timeout,
        )
        store = dataset_store(base_uri, storage_options, "LanceDataset.commit")
        return commit_to_store(
            store,
            given_uri(base_uri),
            commit_api.transaction_to_commit(operation, read_version, commit_message, store),
            CommitPolicy(max_retries=max_retries, lock=commit_lock),
            enable_v2_manifest_paths,
            bool(detached),
        )

    @staticmethod
    def commit_batch(
        dest: str | os.PathLike[str] | LanceDataset,
        transactions: Sequence[commit_api.Transaction],
        commit_lock: CommitLock | None = None,
        storage_options: dict[str, str] | None = None,
        enable_v2_manifest_paths: bool | None = None,
        detached: bool | None = False,
        max_retries: int = 20,
        base_store_params: dict[str, dict[str, str]] | None = None,
        commit_timeout: timedelta | None = DEFAULT_COMMIT_TIMEOUT,
    ) -> dict[str, Any]:
        """Commit several append transactions as one; returns ``{"dataset": the new
        version, "merged": the transaction committed}``."""
        refuse_unimplemented(
            "LanceDataset.commit_batch",
            base_store_params=base_store_params,
            commit_timeout=commit_timeout,
        )
        read_version = dest.version if isinstance(dest, CommitMethods._dataset_class) else None
        store = dataset_store(dest, storage_options, "commit_batch")
        if read_version is None:
            read_version = store.latest_version()
        merged = commit_api.merged_appends(read_version, transactions)
        dataset = commit_to_store(
            store,
            given_uri(dest),
            commit_api.transaction_to_commit(merged, None, None, store),
            CommitPolicy(max_retries=max_retries, lock=commit_lock),
            enable_v2_manifest_paths,
            bool(detached),
        )
        return {"dataset": dataset, "merged": merged}


def commit_to_store(
    store: DatasetStore,
    uri: str,
    txn: ops.Transaction,
    policy: CommitPolicy,
    enable_v2_manifest_paths: bool | None,
    detached: bool,
) -> LanceDataset:
    """Commit ``txn`` to the dataset of ``store`` (``uri``: as the caller gave it)."""
    announce_latest(store, uri)  # pylance loads the dataset first
    manifest = commit_transaction(
        store,
        txn,
        policy=policy,
        new_dataset_naming=commit_api.manifest_naming(enable_v2_manifest_paths),
        detached=detached,
        announce_as=uri,
    )
    return CommitMethods._dataset_class(uri, manifest=manifest, _store=store)
