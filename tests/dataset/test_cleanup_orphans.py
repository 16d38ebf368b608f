"""What a killed writer leaves behind, and the cleanup that removes it.

``cleanup_old_versions(delete_unverified=True)`` promises that nobody is writing, so
every file no version references goes, however new; without the promise, files younger
than seven days stay, as pylance leaves them.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.dataset.mutate.update import plan_update
from lancelet.transaction import operations as ops
from lancelet.transaction.store import DatasetStore
from tests.storage import file_names, list_names, read_file, write_file

HEX = "0123456789abcdef" * 2
# Temporary files a writer killed mid-write leaves: lancelet's io layer names them
# ".<target>.<32 hex>.tmp"; object stores stage "<target>#<n>"; pylance stages manifests
# as "_versions/.tmp*".
TEMPS = [
    f"data/.abc.lance.{HEX}.tmp",
    "data/abc.lance#1",
    f"_deletions/.0-2-5.arrow.{HEX}.tmp",
    f"_transactions/.2-x.txn.{HEX}.tmp",
    f"_versions/.{2**64 - 4:020d}.manifest.{HEX}.tmp",
    f"_versions/.latest_version_hint.json.{HEX}.tmp",
    "_versions/.tmp_3_manifest",
    f"_refs/tags/.keep.json.{HEX}.tmp",
]
EIGHT_DAYS_AGO = time.time() - 8 * 86400


def _table(start: int, stop: int) -> pa.Table:
    keys = pa.array(range(start, stop), pa.int64())
    return pa.table({"k": keys, "v": pa.array([float(k) for k in range(start, stop)])})


def _files(root: Path) -> set[str]:
    return file_names(root)


def _manifests(uri: Path) -> list[str]:
    return [n for n in list_names(uri / "_versions") if n.endswith(".manifest")]


def _referenced(uri: Path) -> set[str]:
    """The files pylance says the versions on disk need, plus each manifest's transaction
    file, the manifests themselves, the hint and the tags."""
    names = {"_versions/latest_version_hint.json"}
    names |= {f"_versions/{n}" for n in _manifests(uri)}
    names |= {f"_refs/{n}" for n in file_names(uri / "_refs") if n.endswith(".json")}
    for info in lance.dataset(uri).versions():
        ds = lance.dataset(uri, version=info["version"])
        for fragment in ds.get_fragments():
            names |= {f"data/{f.path}" for f in fragment.metadata.files}
            deletion = fragment.metadata.deletion_file
            if deletion is not None:
                names.add(f"_deletions/{os.path.basename(deletion.path(fragment.fragment_id))}")
    for name in list_names(uri / "_transactions"):
        if name.endswith(".txn") and _named_by_a_manifest(uri, name):
            names.add(f"_transactions/{name}")
    return names


def _named_by_a_manifest(uri: Path, name: str) -> bool:
    return any(name.encode() in read_file(uri / "_versions" / n) for n in _manifests(uri))


def _killed_update(uri: Path) -> None:
    """An update that wrote its data, deletion and transaction files, then died."""
    store = DatasetStore(uri)
    manifest = store.read_manifest(store.latest_version())
    planned = plan_update(store, manifest, {"v": "v + 1"}, "k % 7 = 0", None)
    store.write_transaction(ops.Transaction(manifest.version, planned.operation))
    for relative in TEMPS:
        write_file(uri / relative, b"half a file")


@pytest.fixture
def uri(tmp_path: Path) -> Path:
    path = tmp_path / "ds"
    ll.write_dataset(_table(0, 2000), path, max_rows_per_file=1000)
    ll.dataset(path).delete("k < 10")
    ll.dataset(path).tags.create("keep", 2)
    return path


def _tables(uri: Path) -> dict[int, pa.Table]:
    return {v: lance.dataset(uri, version=v).to_table() for v in (1, 2)}


@pytest.mark.parametrize("older_than", [None, timedelta(0)])
def test_cleanup_removes_everything_a_killed_update_left(
    uri: Path, older_than: timedelta | None
) -> None:
    before = _tables(uri)
    referenced = _referenced(uri)
    _killed_update(uri)
    orphans = _files(uri) - referenced
    # Data and deletion files of the update, its transaction file, and the temps.
    assert {p.split("/")[0] for p in orphans} == {
        "data",
        "_deletions",
        "_transactions",
        "_versions",
        "_refs",
    }
    ll.dataset(uri).cleanup_old_versions(older_than=older_than, delete_unverified=True)
    kept = [1, 2] if older_than is None else [2]
    assert [v["version"] for v in lance.dataset(uri).versions()] == kept
    assert _files(uri) == _referenced(uri)
    for version in kept:
        assert ll.dataset(uri, version=version).to_table().equals(before[version])
        lance.dataset(uri, version=version).validate()


@pytest.mark.local_files("ages files with os.utime; store objects cannot be")
def test_young_unverified_files_stay_without_the_promise(uri: Path) -> None:
    _killed_update(uri)
    orphans = _files(uri) - _referenced(uri)
    ll.dataset(uri).cleanup_old_versions(older_than=timedelta(0))
    assert orphans <= _files(uri)
    for relative in orphans:
        os.utime(uri / relative, (EIGHT_DAYS_AGO, EIGHT_DAYS_AGO))
    ll.dataset(uri).cleanup_old_versions(older_than=timedelta(0))
    assert _files(uri) == _referenced(uri)
