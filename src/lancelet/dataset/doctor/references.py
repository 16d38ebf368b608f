"""What versions point at besides fragments: index files, transaction files and tags;
and, the other way round, files under the dataset that no version on disk uses."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from functools import partial

from lancelet import io
from lancelet.dataset.doctor.batch import CheckBatch
from lancelet.dataset.doctor.fragments import relative_path
from lancelet.dataset.doctor.lance_files import open_lance_file
from lancelet.dataset.doctor.manifests import decode_file
from lancelet.dataset.doctor.problems import Problem, Problems
from lancelet.dataset.versions.tags import TagContents
from lancelet.errors import UnsupportedFeatureError
from lancelet.table import naming
from lancelet.table.index import IndexFile, IndexMetadata
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore

# Temporary names of files being written: lancelet's ".<name>.<32 hex>.tmp", object
# stores' "<name>#<n>", pylance's ".tmp..." staging manifests.
_TEMP = re.compile(r"^(\..+\.[0-9a-f]{32}\.tmp|.+#\d+|\.tmp.*)$")
_DETACHED_MANIFEST = re.compile(r"^d\d+\.manifest$")
_BRANCHES = ("_refs/branches", "tree")
# Directory, the suffixes of the files a version names there.
_FILE_DIRS = (
    (naming.DATA_DIR, (".lance",)),
    (naming.DELETIONS_DIR, (".arrow", ".bin")),
    (naming.TRANSACTIONS_DIR, (".txn",)),
)


@dataclass
class References:
    """Files the versions on disk name, relative to the dataset root, and their
    indices' directories by uuid."""

    files: set[str] = field(default_factory=set)
    index_uuids: set[str] = field(default_factory=set)

    def add(self, store: DatasetStore, manifest: Manifest) -> None:
        for fragment in manifest.fragments:
            for data_file in fragment.files:
                if data_file.base_id is None:
                    self.files.add(io.join(naming.DATA_DIR, data_file.path))
            if fragment.deletion_file is not None:
                path = store.deletion_path(fragment.id, fragment.deletion_file)
                self.files.add(relative_path(store, path))
        if manifest.transaction_file:
            self.files.add(io.join(naming.TRANSACTIONS_DIR, manifest.transaction_file))
        self.index_uuids.update(str(index.uuid) for index in manifest.indices)


_TXN = (
    "The version reads as before; only the record of what its commit did "
    "(read_transaction) is lost, and a writer that started from an earlier version "
    "cannot check this commit for conflicts."
)


# -- indices and transactions ---------------------------------------------------------------


@dataclass
class ReferenceChecks:
    """Asks for the checks of each version's index and transaction files in a batch."""

    store: DatasetStore
    problems: Problems
    batch: CheckBatch

    def check(self, manifest: Manifest) -> None:
        version = manifest.version
        for index in manifest.indices:
            key: Hashable = ("index", index.uuid, index.files, index.base_id)
            self.batch.add(key, version, partial(self._index_files, index))
        if manifest.transaction_file:
            key = ("transaction", manifest.transaction_file)
            self.batch.add(key, version, partial(self._transaction, manifest.transaction_file))

    def _transaction(self, name: str) -> list[Problem]:
        relative = io.join(naming.TRANSACTIONS_DIR, name)
        path = self.store.path(relative)
        try:
            self.store.read_transaction(name)
        except (UnsupportedFeatureError, NotImplementedError) as exc:
            self.problems.note(f"{relative}: lancelet cannot decode it, so it was not checked: "
                               f"{exc}")  # fmt: skip
            return []
        except Exception as exc:  # damaged bytes surface as many exception types
            if io.store_failed(exc):
                raise
            if not self.store.io.exists(path):
                return [
                    Problem(
                        "missing-transaction-file",
                        relative,
                        "The version records this transaction file, which is gone. " + _TXN,
                    )
                ]
            reason = str(exc).removeprefix(path + ": ")
            return [
                Problem(
                    "unreadable-transaction-file",
                    relative,
                    f"The version's transaction file does not decode ({reason}). " + _TXN,
                )
            ]
        return []

    def _index_files(self, index: IndexMetadata) -> list[Problem]:
        label = f"index {index.name!r} ({index.uuid})"
        if index.base_id is not None:
            self.problems.note(
                f"{label} lies under base path {index.base_id}; its files were not checked"
            )
            return []
        directory = io.join(naming.INDICES_DIR, str(index.uuid))
        if not index.files:
            # Older writers list no files: the index's directory must hold some.
            # System indices (fragment reuse, MemWAL) may keep everything inline.
            if index.is_system or self.store.io.list_dir(self.store.path(directory)):
                return []
            return [
                Problem(
                    "missing-index-file",
                    directory,
                    f"The directory of {label} is empty or gone: queries that use the index fail.",
                )
            ]
        return [p for f in index.files for p in self._index_file(label, directory, f)]

    def _index_file(self, label: str, directory: str, file: IndexFile) -> Iterator[Problem]:
        relative, size = io.join(directory, file.path), file.size_bytes
        found = self.store.io.head(self.store.path(relative))
        if found is None:
            yield Problem(
                "missing-index-file",
                relative,
                f"A file of {label} is not there: queries that use the index fail.",
            )
        elif size and found.size != size:
            yield Problem(
                "index-file-size-mismatch",
                relative,
                f"A file of {label} is {found.size} bytes, the manifest records {size}: "
                "it was truncated or replaced.",
            )
        elif relative.endswith(".lance"):
            # Only files named as Lance files are opened: some index kinds (and older
            # writers) keep files of other formats, which lancelet would misjudge.
            yield from self._lance_index_file(label, relative)

    def _lance_index_file(self, label: str, relative: str) -> Iterator[Problem]:
        opened = open_lance_file(self.store.io, self.store.path(relative))
        if opened.undecided is not None:
            self.problems.note(
                f"{relative}: lancelet cannot read this file, so it was not checked: "
                f"{opened.undecided}"
            )
        if opened.damage is not None:
            yield Problem(
                "unreadable-index-file",
                relative,
                f"A file of {label} is damaged (its footer or metadata does not decode): "
                f"{opened.damage}",
            )


# -- tags ---------------------------------------------------------------------------------


def check_tags(store: DatasetStore, on_disk: set[int], problems: Problems) -> dict[str, int]:
    """Every tag file under ``_refs/tags/``; the main branch's tags by name."""
    tagged: dict[str, int] = {}
    directory = naming.TAGS_DIR
    for name in sorted(store.io.list_dir(store.path(directory))):
        relative = io.join(directory, name)
        if _TEMP.match(name) or not name.endswith(".json"):
            continue
        tag = urllib.parse.unquote(name.removesuffix(".json"))
        try:
            contents = TagContents.from_json(store.io.read_bytes(store.path(relative)), relative)
        except FileNotFoundError:
            continue  # deleted since the listing
        except Exception as exc:
            if io.store_failed(exc):
                raise
            problems.add(
                Problem(
                    "unreadable-tag",
                    relative,
                    f"Tag {tag!r} cannot be read, and listing the dataset's tags fails "
                    f"while it is there: {str(exc).removeprefix(relative + ': ')}",
                )
            )
            continue
        if contents.branch is not None:
            problems.note(f"tag {tag!r} names branch {contents.branch!r}; it was not checked")
            continue
        tagged[tag] = contents.version
        if contents.version not in on_disk:
            problems.add(
                Problem(
                    "dangling-tag",
                    relative,
                    f"Tag {tag!r} points at version {contents.version}, which is not on "
                    "disk: opening the dataset by this tag fails.",
                )
            )
    return tagged


# -- orphaned files -----------------------------------------------------------------------


def check_orphans(
    store: DatasetStore, manifests: list[Manifest], all_decoded: bool, problems: Problems
) -> None:
    """Files that no version on disk names.  Only decided when every manifest
    decoded (one that did not may name any file) and the dataset has no branches
    (lancelet does not read branch manifests, which may use the dataset's files)."""
    if not all_decoded:
        problems.note(
            "orphaned files were not looked for: a manifest that does not decode may name any file"
        )
        return
    if any(store.io.is_dir(store.path(d)) and store.io.list_dir(store.path(d)) for d in _BRANCHES):
        problems.note(
            "orphaned files were not looked for: the dataset has branches, whose "
            "manifests lancelet does not read"
        )
        return
    used = References()
    for manifest in manifests:
        used.add(store, manifest)
    if not _add_detached(store, used, problems):
        return
    for relative in _unused_files(store, used):
        problems.add(Problem("orphaned-file", relative, _orphan_explanation(relative)))


def _add_detached(store: DatasetStore, used: References, problems: Problems) -> bool:
    """Count the files of detached versions as used; False if one does not decode."""
    for name in store.io.list_dir(store.path(naming.VERSIONS_DIR)):
        if not _DETACHED_MANIFEST.match(name):
            continue
        scratch = Problems()
        manifest = decode_file(store, io.join(naming.VERSIONS_DIR, name), scratch, None)
        if manifest is None:
            problems.note(
                f"orphaned files were not looked for: the detached manifest {name} does not decode"
            )
            return False
        used.add(store, manifest)
    return True


def _walk(store: DatasetStore, directory: str) -> Iterator[str]:
    for relative, _ in store.io.list_tree(store.path(directory)):
        yield io.join(directory, relative)


def _unused_files(store: DatasetStore, used: References) -> Iterator[str]:
    """Files this dataset's versions would name, that none of them names; an index's
    directory once for all its files."""
    for directory, suffixes in _FILE_DIRS:
        for relative in _walk(store, directory):
            name = relative.rsplit("/", 1)[-1]
            if relative not in used.files and (name.endswith(suffixes) or _TEMP.match(name)):
                yield relative
    seen_dirs: set[str] = set()
    for relative in _walk(store, naming.INDICES_DIR):
        parts = relative.split("/")
        if len(parts) >= 3 and parts[1] not in used.index_uuids:
            directory = io.join(*parts[:2])
            if directory not in seen_dirs:
                seen_dirs.add(directory)
                yield directory
    for name in store.io.list_dir(store.path(naming.VERSIONS_DIR)):
        if _TEMP.match(name):
            yield io.join(naming.VERSIONS_DIR, name)


def _orphan_explanation(relative: str) -> str:
    name = relative.rsplit("/", 1)[-1]
    if _TEMP.match(name):
        what = "a temporary file of a write that did not finish"
    elif relative.startswith(naming.INDICES_DIR):
        what = "the directory of an index that no version on disk lists"
    elif relative.startswith(naming.TRANSACTIONS_DIR):
        what = (
            "a transaction file no version on disk records (of a commit that lost a "
            "race, or of a removed version)"
        )
    else:
        what = "a file that no version on disk uses"
    return (
        f"This is {what}. It costs storage only: readers never open it. A write "
        "still in progress also leaves such files until it commits."
    )
