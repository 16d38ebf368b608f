"""Removing old versions, and the files only they needed, as pylance's
``cleanup_old_versions`` does.

Every manifest is read before anything is deleted, and the cleanup stops if
one cannot be: a file counts as unused only when no readable manifest names
it, so guessing about an unreadable one could delete live data.

Old manifests go first, then their files.  A crash in between leaves
unreferenced files that a later cleanup removes; a crash can never leave a
manifest naming a file that is gone.

A file no manifest names at all may belong to a write still in progress, so it
is removed only when it is older than :data:`UNVERIFIED_AGE` or the caller
passes ``delete_unverified=True`` (promising that nobody is writing).  With that
promise every unreferenced file goes, however new, temporary files of killed writers
included; pylance 14 still keeps transaction, deletion and staging files newer than
the oldest kept version then, so a killed update's files would linger until some
later commit made them old.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import NamedTuple

from lancelet import io
from lancelet.dataset.core.terminal_progress import ProgressBar, progress_bar
from lancelet.dataset.versions.tags import Tags
from lancelet.errors import ArgumentError, DatasetError, TagError, VersionNotFoundError
from lancelet.table import naming
from lancelet.table.fragment import DataFile
from lancelet.table.manifest import Manifest
from lancelet.table.manifest_file import decode_manifest
from lancelet.table.naming import ManifestLocation
from lancelet.transaction.store import DatasetStore

DEFAULT_OLDER_THAN = timedelta(days=14)
UNVERIFIED_AGE = timedelta(days=7)

# What a file is called until it is renamed into place: lancelet's io layer writes
# ".<name>.<32 hex>.tmp", object stores stage uploads as "<name>#<n>".
_TEMP = re.compile(r"^(\..+\.[0-9a-f]{32}\.tmp|.+#\d+)$")
_DETACHED_MANIFEST = re.compile(r"^d\d+\.manifest$")
_BRANCHES_DIR = "_refs/branches"
_BRANCH_TREES_DIR = "tree"


@dataclass
class CleanupStats:
    """What a cleanup removed; the attribute names are pylance's."""

    bytes_removed: int = 0
    old_versions: int = 0
    data_files_removed: int = 0
    transaction_files_removed: int = 0
    index_files_removed: int = 0
    deletion_files_removed: int = 0
    failed_deletes: int = 0


@dataclass
class _References:
    """Files named by a set of manifests, as paths relative to the dataset root
    (index directories by uuid)."""

    files: set[str] = field(default_factory=set)
    index_uuids: set[str] = field(default_factory=set)

    def add(self, store: DatasetStore, manifest: Manifest) -> None:
        for fragment in manifest.fragments:
            for data_file in fragment.files:
                self.files.add(_data_file_key(store, data_file))
            if fragment.deletion_file is not None:
                path = store.deletion_path(fragment.id, fragment.deletion_file)
                self.files.add(io.relative(path, store.root))
        if manifest.transaction_file:
            self.files.add(io.join(naming.TRANSACTIONS_DIR, manifest.transaction_file))
        for index in manifest.indices:
            self.index_uuids.add(str(index.uuid))


def _data_file_key(store: DatasetStore, data_file: DataFile) -> str:
    """A data file's path relative to the dataset root; one under a base path outside
    the root (which cleanup never lists, so never removes) keeps its full path."""
    if data_file.base_id is None:
        return io.join(naming.DATA_DIR, data_file.path)
    path = store.data_path(data_file.path, data_file.base_id)
    root = store.root.rstrip("/") + "/"
    return path[len(root) :] if path.startswith(root) else path


@dataclass
class _Plan:
    old_manifests: list[tuple[str, Manifest]] = field(default_factory=list)
    kept: _References = field(default_factory=_References)
    # Named by a removed version, so not part of a write still in progress.
    verified: _References = field(default_factory=_References)
    # Transaction, deletion and staging files modified after this are kept.
    commit_files_cutoff_ns: int | None = None


@dataclass(frozen=True)
class _Policy:
    before_ns: int | None
    before_version: int | None
    latest: int

    def is_old(self, manifest: Manifest) -> bool:
        if manifest.version >= self.latest:
            return False
        if self.before_ns is not None and manifest.timestamp_ns >= self.before_ns:
            return False
        return self.before_version is None or manifest.version < self.before_version


def cleanup_old_versions(
    store: DatasetStore,
    older_than: timedelta | None = None,
    retain_versions: int | None = None,
    *,
    delete_unverified: bool = False,
    error_if_tagged_old_versions: bool = True,
    latest: int | None = None,
) -> CleanupStats:
    """Remove versions older than ``older_than`` (default 14 days) and/or all but the
    newest ``retain_versions``, never the latest or a tagged one, then every data,
    deletion, transaction and index file no remaining version needs.  ``latest``
    (default: the latest version) and every version after it are kept."""
    if retain_versions is not None and retain_versions < 1:
        raise ArgumentError(f"retain_versions must be greater than 0, got {retain_versions}")
    _refuse_branches(store)
    now_ns = time.time_ns()
    if older_than is None and retain_versions is None:
        older_than = DEFAULT_OLDER_THAN
    # The latest version first: anything listed after it is at least as new, so kept.
    latest = store.latest_version() if latest is None else latest
    locations = store.list_versions()
    versions = [location.version for location in locations]
    policy = _Policy(
        before_ns=None if older_than is None else now_ns - _nanoseconds(older_than),
        before_version=_retain_cutoff(versions, retain_versions),
        latest=latest,
    )
    plan = _plan(store, locations, policy, error_if_tagged_old_versions)
    stats = CleanupStats()
    unverified_before_ns = None if delete_unverified else now_ns - _nanoseconds(UNVERIFIED_AGE)
    with progress_bar("Cleaning up old versions", unit="files deleted") as bar:
        _delete_manifests(store, plan, stats, bar)
        _protect_new_versions(store, versions, plan.kept)
        _delete_files(store, plan, unverified_before_ns, stats, bar)
    return stats


def _nanoseconds(delta: timedelta) -> int:
    return delta // timedelta(microseconds=1) * 1_000


def _retain_cutoff(versions: list[int], retain: int | None) -> int | None:
    """The oldest version that ``retain_versions`` keeps (tagged ones count too)."""
    if retain is None:
        return None
    return versions[0] if len(versions) <= retain else versions[len(versions) - retain]


def _refuse_branches(store: DatasetStore) -> None:
    # Branch manifests live elsewhere and may use this dataset's files; lancelet
    # does not read them, so it cannot tell which files they need.
    branches = store.io.list_dir(store.path(_BRANCHES_DIR))
    if branches or store.io.is_dir(store.path(_BRANCH_TREES_DIR)):
        raise DatasetError(
            f"{store.root}: the dataset has branches; lancelet cannot clean up a dataset "
            "with branches without risking files they use"
        )


def _plan(
    store: DatasetStore, locations: list[ManifestLocation], policy: _Policy, error_if_tagged: bool
) -> _Plan:
    tags = Tags(store).list()
    tagged = {entry["version"] for entry in tags.values()}
    plan = _Plan()
    tagged_old: set[int] = set()
    kept_times: list[int] = []
    removed_times: list[int] = []
    for location in locations:
        manifest = _read_listed_manifest(store, location, policy.latest)
        if manifest is None:
            continue
        if policy.is_old(manifest) and manifest.version not in tagged:
            path = store.path(naming.VERSIONS_DIR, location.name)
            plan.old_manifests.append((path, manifest))
            plan.verified.add(store, manifest)
            removed_times.append(manifest.timestamp_ns)
        else:
            if policy.is_old(manifest):
                tagged_old.add(manifest.version)
            plan.kept.add(store, manifest)
            kept_times.append(manifest.timestamp_ns)
    for detached in _detached_manifests(store):
        plan.kept.add(store, detached)
    plan.commit_files_cutoff_ns = _commit_files_cutoff(kept_times, removed_times)
    if tagged_old and error_if_tagged:
        named = {name: entry["version"] for name, entry in tags.items()}
        blocking = {name: v for name, v in sorted(named.items()) if v in tagged_old}
        raise TagError(
            f"{store.root}: cleanup would remove {len(tagged_old)} tagged version(s): "
            f"{blocking}. Pass error_if_tagged_old_versions=False to keep them and clean "
            "up the rest, or delete those tags"
        )
    return plan


def _read_listed_manifest(
    store: DatasetStore, location: ManifestLocation, latest: int
) -> Manifest | None:
    """The manifest, or None if it is an old one that vanished since the listing.

    Any other error ends the cleanup here, before anything is deleted."""
    try:
        return store.read_manifest(location.version)
    except VersionNotFoundError:
        if location.version < latest:
            return None  # removed by a concurrent cleanup, which also owns its files
        raise


def _commit_files_cutoff(kept_times: list[int], removed_times: list[int]) -> int | None:
    """Like pylance 14, without ``delete_unverified`` only transaction, deletion and
    staging files no newer than the oldest kept version are looked at (newer ones may
    belong to a commit in flight), unless a removed version is newer than a kept one."""
    if not kept_times:
        return None
    oldest_kept = min(kept_times)
    return None if any(t > oldest_kept for t in removed_times) else oldest_kept


def _detached_manifests(store: DatasetStore) -> Iterator[Manifest]:
    """Manifests of detached commits: never removed, and their files are kept."""
    for name in store.io.list_dir(store.path(naming.VERSIONS_DIR)):
        if _DETACHED_MANIFEST.match(name):
            path = store.path(naming.VERSIONS_DIR, name)
            yield decode_manifest(store.io.read_bytes(path), path)


def _delete_manifests(
    store: DatasetStore, plan: _Plan, stats: CleanupStats, bar: ProgressBar
) -> None:
    # Tags read again: one created since planning must still protect its version.
    tagged = {entry["version"] for entry in Tags(store).list().values()}
    for path, manifest in plan.old_manifests:
        removed = None if manifest.version in tagged else _remove(store, path, stats)
        if removed is None:
            # Tagged since, or undeletable: the version stays readable, so its files stay.
            plan.kept.add(store, manifest)
        elif removed:
            stats.old_versions += 1
            bar.advance()


def _protect_new_versions(store: DatasetStore, seen: list[int], kept: _References) -> None:
    """Keep the files of versions committed while this cleanup ran.

    They could name a file the plan counted as unused (a restore of an old
    version does exactly that)."""
    known = set(seen)
    for location in store.list_versions():
        if location.version not in known:
            kept.add(store, store.read_manifest(location.version))


def _remove(store: DatasetStore, path: str, stats: CleanupStats) -> bool | None:
    """Delete one file: True if deleted, False if already gone, None on failure."""
    try:
        size = store.io.size_of(path)
        store.io.delete(path)
    except FileNotFoundError:
        return False
    except OSError:
        stats.failed_deletes += 1
        return None
    stats.bytes_removed += size
    return True


# -- unreferenced files ---------------------------------------------------------------------


def _walk(store: DatasetStore, directory: str) -> Iterator[str]:
    """Every file under ``directory``, relative to the dataset root."""
    for relative, _ in store.io.list_tree(store.path(directory)):
        yield io.join(directory, relative)


def _is_temp(relative: str) -> bool:
    return _TEMP.match(relative.rsplit("/", 1)[-1]) is not None


class _Candidate(NamedTuple):
    relative: str  # path from the dataset root
    verified: bool
    counter: str  # the CleanupStats field it counts in, "" for none
    # Written just before a commit, so subject to _Plan.commit_files_cutoff_ns.
    commit_file: bool


def _candidates(store: DatasetStore, plan: _Plan) -> Iterator[_Candidate]:
    """Files this cleanup may remove.

    Only files whose names say what they are are considered; anything else in
    these directories is left alone, as pylance leaves it."""
    kept, verified = plan.kept, plan.verified
    for directory, suffixes, counter, commit_file in (
        (naming.DATA_DIR, (".lance",), "data_files_removed", False),
        (naming.DELETIONS_DIR, (".arrow", ".bin"), "deletion_files_removed", True),
        (naming.TRANSACTIONS_DIR, (".txn",), "transaction_files_removed", True),
    ):
        for relative in _walk(store, directory):
            if relative in kept.files:
                continue
            if relative.endswith(suffixes) or _is_temp(relative):
                yield _Candidate(relative, relative in verified.files, counter, commit_file)
    for relative in _walk(store, naming.INDICES_DIR):
        parts = relative.split("/")
        # Only files inside an index's own directory, which is named by its uuid.
        if len(parts) >= 3 and parts[1] not in kept.index_uuids:
            yield _Candidate(
                relative, parts[1] in verified.index_uuids, "index_files_removed", False
            )
    for name in store.io.list_dir(store.path(naming.VERSIONS_DIR)):
        # Staging files of commits that died: pylance's ".tmp*" and lancelet's own.
        if name.startswith(".tmp") or _is_temp(name):
            yield _Candidate(io.join(naming.VERSIONS_DIR, name), False, "", True)
    for relative in _walk(store, naming.TAGS_DIR):
        if _is_temp(relative):
            yield _Candidate(relative, False, "", False)


def _delete_files(
    store: DatasetStore,
    plan: _Plan,
    unverified_before_ns: int | None,
    stats: CleanupStats,
    bar: ProgressBar,
) -> None:
    index_dirs: set[str] = set()
    for candidate in list(_candidates(store, plan)):
        path = store.path(candidate.relative)
        modified_ns = _modified_ns(store, path)
        if modified_ns is None:
            continue  # gone already
        if not _may_remove(candidate, modified_ns, plan, unverified_before_ns):
            continue
        removed = _remove(store, path, stats)
        if removed:
            bar.advance()
        if removed and candidate.counter:
            setattr(stats, candidate.counter, getattr(stats, candidate.counter) + 1)
        if candidate.counter == "index_files_removed":
            index_dirs.add(store.path(*candidate.relative.split("/")[:2]))
    for directory in index_dirs:
        store.io.remove_empty_dirs(directory)


def _may_remove(
    candidate: _Candidate, modified_ns: int, plan: _Plan, unverified_before_ns: int | None
) -> bool:
    if unverified_before_ns is None:
        # The caller promised that nobody is writing: nothing is a commit in flight.
        return True
    cutoff = plan.commit_files_cutoff_ns
    if candidate.commit_file and cutoff is not None and modified_ns > cutoff:
        return False
    # A file no manifest names may be part of a write in progress, unless it is old.
    return candidate.verified or modified_ns < unverified_before_ns


def _modified_ns(store: DatasetStore, path: str) -> int | None:
    # Nanoseconds, as manifest timestamps are: a float of seconds loses the last digits.
    found = store.io.head(path)
    return None if found is None else found.modified_ns
