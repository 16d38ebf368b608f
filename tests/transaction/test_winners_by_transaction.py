"""An append rebased over concurrent commits decides from the winners' transaction
files alone (as pylance does), decoding only the manifest it builds on; conflicts
those files reveal are refused exactly as when the winners' manifests were read."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import (
    CorruptDatasetError,
    IncompatibleTransactionError,
    RetryableCommitConflictError,
    UnsupportedFeatureError,
)
from lancelet.table import naming
from lancelet.table.manifest import Manifest
from lancelet.table.manifest_file import decode_summary, encode_manifest
from lancelet.transaction import operations as ops
from lancelet.transaction.commit import commit_transaction
from lancelet.transaction.registry import encode_transaction
from lancelet.transaction.store import DatasetStore
from tests.dataset.util import keyed_table
from tests.storage import read_file, write_file
from tests.versions import STORAGE_VERSION


def _dataset(uri: str, writer: object = ll) -> None:
    writer.write_dataset(  # type: ignore[attr-defined]
        keyed_table(0, 100), uri, max_rows_per_file=50, data_storage_version=STORAGE_VERSION
    )


def _append(uri: str, start: int) -> ops.Transaction:
    """An append of keys ``start`` .. ``start + 9`` that read version 1."""
    fragments = ll.fragment.write_fragments(keyed_table(start, start + 10), uri)
    assert isinstance(fragments, list)
    return ops.Transaction(1, ops.Append(tuple(fragments)))


def _keys(uri: str) -> list[int]:
    return sorted(lance.dataset(uri).to_table(columns=["k"])["k"].to_pylist())


def _manifests_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The versions whose manifests commits read (decoded) from now on."""
    seen: list[int] = []
    read = DatasetStore.read_manifest

    def recording(self: DatasetStore, version: int) -> Manifest:
        seen.append(version)
        return read(self, version)

    monkeypatch.setattr(DatasetStore, "read_manifest", recording)
    return seen


@pytest.mark.parametrize("winner", [ll, lance], ids=["lancelet", "pylance"])
def test_an_append_over_winners_decodes_only_the_latest_manifest(
    tmp_path: Path, winner: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    uri = str(tmp_path / "ds")
    _dataset(uri)
    txn = _append(uri, 1000)
    for start in (200, 300, 400):  # versions 2, 3 and 4, committed after the read
        winner.write_dataset(keyed_table(start, start + 5), uri, mode="append")  # type: ignore[attr-defined]
    decoded = _manifests_read(monkeypatch)
    manifest = commit_transaction(DatasetStore(uri), txn)
    assert manifest.version == 5
    assert set(decoded) == {4}
    want = [*range(100), *range(200, 205), *range(300, 305), *range(400, 405)]
    assert _keys(uri) == sorted([*want, *range(1000, 1010)])
    lance.dataset(uri).validate()


def test_an_append_over_an_overwrite_known_by_its_transaction_is_refused(
    tmp_path: Path,
) -> None:
    uri = str(tmp_path / "ds")
    _dataset(uri)
    txn = _append(uri, 1000)
    ll.write_dataset(keyed_table(200, 205), uri, mode="append")  # version 2
    ll.write_dataset(keyed_table(0, 3), uri, mode="overwrite")  # version 3
    with pytest.raises(IncompatibleTransactionError, match="version 3.*overwrite"):
        commit_transaction(DatasetStore(uri), txn)
    assert lance.dataset(uri).version == 3 and _keys(uri) == [0, 1, 2]


def _replace_winner_transaction(uri: str, version: int, operation: ops.Operation) -> None:
    """Make the transaction file of ``version`` say it did ``operation``; its manifest
    is left as it was."""
    store = DatasetStore(uri)
    name = store.read_manifest(version).transaction_file
    txn = store.read_transaction(name)
    write_file(store.transaction_path(name), encode_transaction(replace(txn, operation=operation)))


def test_a_conflict_only_the_transaction_file_tells_is_refused(tmp_path: Path) -> None:
    """The winner's manifest is that of an append; its transaction file, the only
    thing read of it, says it restored version 1: the append is refused."""
    uri = str(tmp_path / "ds")
    _dataset(uri)
    txn = _append(uri, 1000)
    ll.write_dataset(keyed_table(200, 205), uri, mode="append")  # version 2
    _replace_winner_transaction(uri, 2, ops.Restore(1))
    with pytest.raises(IncompatibleTransactionError, match="version 2.*restore"):
        commit_transaction(DatasetStore(uri), txn)
    assert lance.dataset(uri).version == 2


def test_a_winner_without_transaction_file_makes_an_append_retry(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _dataset(uri)
    txn = _append(uri, 1000)
    ll.write_dataset(keyed_table(200, 205), uri, mode="append")  # version 2
    store = DatasetStore(uri)
    damaged = replace(store.read_manifest(2), transaction_file="")
    write_file(Path(uri, naming.VERSIONS_DIR, naming.manifest_name(2)), encode_manifest(damaged))
    with pytest.raises(RetryableCommitConflictError, match="unknown"):
        commit_transaction(DatasetStore(uri), txn)
    assert lance.dataset(uri).version == 2


def test_a_winner_claiming_a_read_version_not_older_is_corrupt(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _dataset(uri)
    txn = _append(uri, 1000)
    ll.write_dataset(keyed_table(200, 205), uri, mode="append")  # version 2
    store = DatasetStore(uri)
    name = store.read_manifest(2).transaction_file
    winner = store.read_transaction(name)
    write_file(store.transaction_path(name), encode_transaction(replace(winner, read_version=2)))
    with pytest.raises(CorruptDatasetError, match="version 2.*read version 2"):
        commit_transaction(DatasetStore(uri), txn)
    assert lance.dataset(uri).version == 2


def test_a_winner_requiring_an_unknown_writer_feature_is_not_rebased_over(
    tmp_path: Path,
) -> None:
    """Checked on each winner, not only on the manifest built on."""
    uri = str(tmp_path / "ds")
    _dataset(uri)
    txn = _append(uri, 1000)
    ll.write_dataset(keyed_table(200, 205), uri, mode="append")  # version 2
    ll.write_dataset(keyed_table(300, 305), uri, mode="append")  # version 3
    store = DatasetStore(uri)
    flagged = replace(store.read_manifest(2), writer_feature_flags=1 << 40)
    write_file(Path(uri, naming.VERSIONS_DIR, naming.manifest_name(2)), encode_manifest(flagged))
    with pytest.raises(UnsupportedFeatureError, match="writer feature"):
        commit_transaction(DatasetStore(uri), txn)
    assert lance.dataset(uri).version == 3


def test_the_summary_agrees_with_the_manifest_pylance_wrote(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _dataset(uri, lance)
    lance.write_dataset(pa.table({"k": np.arange(5, dtype=np.int64)}), uri, mode="append")
    lance.dataset(uri).delete("k < 3")
    store = DatasetStore(uri)
    for location in store.list_versions():
        path = store.path(naming.VERSIONS_DIR, location.name)
        summary = decode_summary(read_file(Path(path)), path)
        manifest = store.read_manifest(location.version)
        assert summary.version == manifest.version
        assert summary.transaction_file == manifest.transaction_file != ""
        assert summary.writer_feature_flags == manifest.writer_feature_flags
        assert summary == store.read_summary(location.version)
