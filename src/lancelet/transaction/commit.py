"""The optimistic commit loop.

A writer prepares a transaction against the version it read.  To commit it
tries to create the manifest of ``latest + 1`` with put-if-not-exists.  Losing
that race is normal: it reads the transactions that won since its read version,
checks each against its own with the rules in :mod:`.conflicts` (rebasing it
when they are compatible), and tries again after a random wait measured in
commit attempts (:class:`CommitPolicy`).  Nothing becomes visible until the
manifest exists, so a writer that dies at any point leaves only unreferenced
files behind.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace

from lancelet import events, io, log
from lancelet.errors import (
    CommitConflictError,
    CommitRetriesExhaustedError,
    DatasetAlreadyExistsError,
    DatasetNotFoundError,
    ManifestNamingError,
    RetryableCommitConflictError,
    VersionNotFoundError,
)
from lancelet.table import features, naming
from lancelet.table.fragment import Fragment
from lancelet.table.index_layout import with_inferred_details
from lancelet.table.manifest import Manifest
from lancelet.table.naming import ManifestLocation, ManifestNaming
from lancelet.transaction.apply import build_manifest
from lancelet.transaction.conflicts import rebase
from lancelet.transaction.operations import Delete, Overwrite, Transaction, Update
from lancelet.transaction.registry import kind_of
from lancelet.transaction.store import DatasetStore
from lancelet.transaction.verify import check_read_version, check_winner, winners_need_checking

# pylance's ``commit_lock``: given the version about to be created, a context manager
# held while its manifest is published (for stores without atomic put-if-absent).
CommitLock = Callable[[int], AbstractContextManager[None]]


_LOCAL_MAX_SLOT_S = 0.005
_STORE_MAX_SLOT_S = 0.1


@dataclass(frozen=True)
class CommitPolicy:
    """``max_retries`` counts attempts as pylance does: at least one, each rebased onto
    the latest version.  With none allowed, an overwrite is strict: it commits on its
    read version or not at all.

    A writer that lost a race waits a random time within ``first_slots`` slots after
    the first loss and twice as many after each further one (at most ``max_slots``,
    each wait at most ``max_backoff_s``).  A slot lasts as long as the first attempt's
    commit window took (a tenth more, at least ``min_slot_s``): the writers that lost
    together spread over as many commit windows, instead of colliding again as they
    would with a fixed, short backoff.  The wait is drawn anywhere in the range, not at
    a slot's start (pylance's slots): writers that drew the same slot would start again
    together and collide again.  A slot lasts at most ``max_slot_s`` (None: 5 ms on a
    local disk, 100 ms on an object store, about one commit window each): on a busy
    machine the first window measures the wait for a processor more than the commit,
    and slots that long leave the dataset idle while every writer that lost sleeps.
    The slot count stops doubling at ``max_slots`` (as in newer Lance): more slots
    than writers only lengthen the wait of one that keeps losing."""

    max_retries: int = 20
    first_slots: int = 4
    max_slots: int = 128
    min_slot_s: float = 0.001
    max_slot_s: float | None = None
    max_backoff_s: float = 10.0
    lock: CommitLock | None = None

    def __post_init__(self) -> None:
        check_lock(self.lock)

    @property
    def attempts(self) -> int:
        return max(self.max_retries, 1)

    def is_strict(self, txn: Transaction) -> bool:
        return self.max_retries == 0 and isinstance(txn.operation, Overwrite)

    def backoff(self, attempt: int, window_s: float, local: bool = False) -> float:
        longest = self.max_slot_s
        if longest is None:
            longest = _LOCAL_MAX_SLOT_S if local else _STORE_MAX_SLOT_S
        slot = max(min(window_s * 1.1, longest), self.min_slot_s)
        slots = min(self.first_slots * 2 ** min(attempt, 20), self.max_slots)
        return min(random.uniform(0.0, slots * slot), self.max_backoff_s)


def check_lock(lock: object) -> None:
    if lock is not None and not callable(lock):
        raise TypeError(f"commit_lock must be a function, got {type(lock)}")


def _rebase_onto(store: DatasetStore, txn: Transaction, checked: int, latest: int) -> Transaction:
    """Check ``txn`` against every transaction committed after version ``checked`` up
    to ``latest``."""
    for version in range(checked + 1, latest + 1):
        try:
            theirs = _winner(store, txn, version)
        except VersionNotFoundError as exc:
            raise RetryableCommitConflictError(
                f"{store.root}: version {version - 1} or {version}, read or committed after "
                f"this transaction's read version {txn.read_version}, was cleaned up; re-read "
                "the dataset and retry"
            ) from exc
        txn = rebase(txn, theirs, version, store)
    return txn


def _winner(store: DatasetStore, txn: Transaction, version: int) -> Transaction | None:
    """The transaction committed as ``version`` (None: its manifest names none), first
    checked against what its manifest did when ``txn``'s operation needs that
    (:func:`.verify.winners_need_checking`); otherwise that manifest is not decoded."""
    where = f"{store.root} version {version}"
    if winners_need_checking(txn.operation):
        before, winner = store.read_manifest(version - 1), store.read_manifest(version)
        features.check_writable(winner.writer_feature_flags, store.root)
        theirs = _transaction_of(store, winner.transaction_file)
        check_winner(theirs, before, winner, where)
        return theirs
    summary = store.read_summary(version)
    features.check_writable(summary.writer_feature_flags, store.root)
    theirs = _transaction_of(store, summary.transaction_file)
    check_read_version(theirs, version, where)
    return theirs


def _transaction_of(store: DatasetStore, name: str) -> Transaction | None:
    return store.read_transaction(name) if name else None


@dataclass
class _Attempts:
    """What the commit loop has written so far, so that what no version will reference
    can be removed: transaction files of superseded rebases, and deletion files."""

    txn: Transaction
    txn_files: list[str] = field(default_factory=list)
    # Deletion files of every version of the transaction, the original's included.
    deletion_files: set[str] = field(default_factory=set)
    publishing: bool = False


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
    attempts = _Attempts(txn, deletion_files=_deletion_files(store, txn))
    try:
        # The transaction file syncs while the manifest is prepared; the manifest's
        # publish waits for it.
        with io.deferred_syncs():
            manifest = _commit_loop(
                store,
                attempts,
                create_only,
                data_format,
                policy or CommitPolicy(),
                new_dataset_naming,
            )
    except BaseException:
        if not attempts.publishing:
            # Files a rebase wrote; the caller removes those of its own transaction.
            _discard(store, attempts.deletion_files - _deletion_files(store, txn))
            _discard(store, {store.transaction_path(n) for n in attempts.txn_files})
        raise
    # Rebases replaced deletion files of the transaction by merged ones.  Files that
    # versions before it still use are kept, however the transaction came to list them.
    replaced = attempts.deletion_files - _referenced_deletions(store, manifest)
    if replaced:
        _discard(store, replaced - _referenced_deletions(store, _read_manifest(store, txn)))
    _discard(store, {store.transaction_path(n) for n in attempts.txn_files[:-1]})
    return with_inferred_details(manifest, store.io, store.root)


def _deletion_files(store: DatasetStore, txn: Transaction) -> set[str]:
    op = txn.operation
    return _deletion_paths(store, op.updated_fragments if isinstance(op, (Delete, Update)) else ())


def _read_manifest(store: DatasetStore, txn: Transaction) -> Manifest | None:
    try:
        return store.read_manifest(txn.read_version) if txn.read_version else None
    except VersionNotFoundError:
        return None


def _referenced_deletions(store: DatasetStore, manifest: Manifest | None) -> set[str]:
    return _deletion_paths(store, manifest.fragments if manifest else ())


def _deletion_paths(store: DatasetStore, fragments: Iterable[Fragment]) -> set[str]:
    return {
        store.deletion_path(f.id, f.deletion_file) for f in fragments if f.deletion_file is not None
    }


def _discard(store: DatasetStore, paths: set[str]) -> None:
    for path in paths:
        store.io.delete(path)


def _commit_loop(
    store: DatasetStore,
    attempts: _Attempts,
    create_only: bool,
    data_format: tuple[str, str],
    policy: CommitPolicy,
    new_dataset_naming: ManifestNaming,
) -> Manifest:
    txn = attempts.txn
    written: tuple[Transaction, str] | None = None
    if txn.read_version:
        # Into a dataset that existed, before its latest version is read: the window
        # in which another writer can win the race is as short as can be.
        written = _write_transaction(store, attempts, txn)
    # Winners already checked in an earlier attempt need no second look; the
    # transaction keeps its original read version, as its file name records.
    checked = txn.read_version
    window_s = 0.0
    for attempt in range(policy.attempts):
        # Local writers take turns from reading the latest version to publishing
        # (:mod:`lancelet.io.queue`), so they do not lose to one another; one that
        # loses to a writer outside the queue waits for its retry out of turn.
        with store.writers_turn():
            started = time.perf_counter()
            latest, scheme, checked, catching_up = _caught_up(
                store, attempts, checked, create_only, policy, new_dataset_naming
            )
            txn = attempts.txn
            if written is None or written[0] is not txn:
                # A rebase changes the operation, so the file must describe the new one.
                written = _write_transaction(store, attempts, txn)
            manifest = build_manifest(
                latest,
                txn,
                transaction_file=written[1],
                load=store.read_manifest,
                data_format=data_format,
            )
            if _try_publish(store, attempts, manifest, scheme, policy.lock):
                return manifest
        # The window another writer can win in: the first attempt, less the time it
        # spent catching up with versions committed while this one was being prepared.
        window_s = window_s or time.perf_counter() - started - catching_up
        wait_s = policy.backoff(attempt, window_s, io.is_local(store.root))
        _wait_to_retry(store, manifest, attempt, wait_s)
    raise CommitRetriesExhaustedError(
        f"{store.root}: gave up after {policy.attempts} attempt(s) "
        f"(max_retries={policy.max_retries}); other writers kept committing first"
    )


def _write_transaction(
    store: DatasetStore, attempts: _Attempts, txn: Transaction
) -> tuple[Transaction, str]:
    """Write ``txn``'s transaction file; the transaction and the file's name."""
    name = store.write_transaction(txn)
    attempts.txn_files.append(name)
    return txn, name


# Looks for the latest version per attempt, each after checking the versions the
# previous one found.
_LOOKS = 4


def _caught_up(
    store: DatasetStore,
    attempts: _Attempts,
    checked: int,
    create_only: bool,
    policy: CommitPolicy,
    new_dataset_naming: ManifestNaming,
) -> tuple[Manifest | None, ManifestNaming, int, float]:
    """The latest version, its naming scheme, the version the transaction is now
    checked up to (``attempts.txn`` rebased onto it) and the seconds the rebases took.

    Checking the winners takes a while (a transaction to read for each), in which more
    may commit: the latest version is looked up again until none did, so the window
    another writer can win in is only that of building and publishing the manifest.
    Only the manifest built on is decoded."""
    catching_up = 0.0
    for look in range(_LOOKS):
        location = store.latest_location()
        _check_base(store, attempts.txn, location, create_only, policy)
        if location is None or location.version <= checked or look == _LOOKS - 1:
            break
        catching_up += _catch_up(store, attempts, checked, location.version)
        checked = location.version
    if location is None:
        return None, new_dataset_naming, checked, catching_up
    if location.version > checked:
        # Writers that kept committing: this attempt is built on what it has seen.
        catching_up += _catch_up(store, attempts, checked, location.version)
        checked = location.version
    latest = store.read_manifest(location.version)
    # Also when nothing committed since the read: the version written on top of must
    # not carry a feature this writer cannot maintain.
    features.check_writable(latest.writer_feature_flags, store.root)
    return latest, location.scheme, checked, catching_up


def _catch_up(store: DatasetStore, attempts: _Attempts, checked: int, latest: int) -> float:
    """Rebase the transaction onto version ``latest`` (the versions after ``checked``
    checked for conflicts); the seconds the rebase took."""
    before = time.perf_counter()
    txn = attempts.txn = _rebase_onto(store, attempts.txn, checked, latest)
    catching_up = time.perf_counter() - before
    attempts.deletion_files |= _deletion_files(store, txn)
    return catching_up


def _try_publish(
    store: DatasetStore,
    attempts: _Attempts,
    manifest: Manifest,
    scheme: ManifestNaming,
    lock: CommitLock | None,
) -> bool:
    """Publish ``manifest``; False when another writer took its version first."""
    data = store.checked_manifest_bytes(manifest)
    attempts.publishing = True
    if not _publish(store, manifest, scheme, data, lock):
        attempts.publishing = False
        return False
    events.file_created("manifest", "dummy")  # what pylance 14 reports as its path
    log.LOGGER.debug(
        "%s: committed version %d (%s, read version %d)",
        store.root, manifest.version, kind_of(attempts.txn.operation),
        attempts.txn.read_version,
    )  # fmt: skip
    return True


def _wait_to_retry(store: DatasetStore, manifest: Manifest, attempt: int, wait_s: float) -> None:
    log.LOGGER.debug(
        "%s: another writer committed version %d first; attempt %d retries in %.3fs",
        store.root, manifest.version, attempt + 1, wait_s,
    )  # fmt: skip
    time.sleep(wait_s)


def _publish(
    store: DatasetStore,
    manifest: Manifest,
    scheme: ManifestNaming,
    data: bytes,
    lock: CommitLock | None,
) -> bool:
    if lock is None:
        return store.publish_manifest(manifest, scheme, data)
    try:
        with lock(manifest.version):
            return store.publish_manifest(manifest, scheme, data)
    except CommitConflictError as exc:
        # The lock's own verdict: another writer holds, or took, this version.
        raise CommitConflictError(
            f"{store.root}: the commit lock refused version {manifest.version}: "
            f"{type(exc).__name__}: {exc}",
            retryable=False,
        ) from exc


def commit_detached(
    store: DatasetStore, txn: Transaction, data_format: tuple[str, str] = ("lance", "2.0")
) -> Manifest:
    """Commit ``txn`` on top of its read version (attached or detached) as a detached
    version: a random number outside the lineage, never the latest, readable only by
    its number.  Nothing can conflict with it, so it is neither checked nor rebased."""
    location = store.latest_location()
    if location is None:
        raise DatasetNotFoundError(f"{store.root}: no Lance dataset here")
    if location.scheme is not ManifestNaming.V2:
        raise ManifestNamingError(
            f"{store.root}: detached commits are not supported on a dataset with v1 manifest "
            "paths; migrate it to v2 manifest paths first"
        )
    base = store.read_manifest(txn.read_version)
    features.check_writable(base.writer_feature_flags, store.root)
    name = store.write_transaction(txn)
    try:
        built = build_manifest(
            base, txn, transaction_file=name, load=store.read_manifest, data_format=data_format
        )
        for _ in range(8):  # 63 random bits: a collision is all but impossible
            manifest = replace(built, version=naming.new_detached_version())
            if store.publish_detached(manifest):
                events.file_created("manifest", "dummy")
                return with_inferred_details(manifest, store.io, store.root)
    except BaseException:
        store.io.delete(store.transaction_path(name))
        raise
    raise CommitConflictError(f"{store.root}: no free detached version number found")


def _check_base(
    store: DatasetStore,
    txn: Transaction,
    latest: ManifestLocation | None,
    create_only: bool,
    policy: CommitPolicy,
) -> None:
    """Refuse a commit that the latest version rules out before anything is written."""
    if latest is None:
        if not isinstance(txn.operation, Overwrite):
            raise DatasetNotFoundError(f"{store.root}: no Lance dataset here")
        return
    if create_only:
        raise DatasetAlreadyExistsError(f"{store.root}: a dataset already exists here")
    if txn.read_version > latest.version:
        raise VersionNotFoundError(
            f"{store.root}: read version {txn.read_version} does not exist; "
            f"the latest version is {latest.version}"
        )
    if policy.is_strict(txn) and txn.read_version != latest.version:
        raise CommitRetriesExhaustedError(
            f"{store.root}: Commit conflict for version {txn.read_version + 1}: an overwrite "
            f"with max_retries=0 commits on its read version "
            f"{txn.read_version} or not at all, and version {latest.version} exists; "
            "nothing was committed"
        )
