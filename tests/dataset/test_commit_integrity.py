"""The commit loop against pylance's: retries, strict overwrites, and winners whose
transaction files do not describe what their manifests did."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from lance.commit import CommitConflictError as PylanceConflict

import lancelet as ll
from lancelet._proto import transaction_pb2
from lancelet.dataset.mutate.delete import plan_delete
from lancelet.errors import (
    CommitConflictError,
    CorruptDatasetError,
    RetryableCommitConflictError,
    VersionNotFoundError,
)
from lancelet.table import naming
from lancelet.table.manifest_file import encode_manifest
from lancelet.transaction import operations as ops
from lancelet.transaction.commit import commit_transaction
from lancelet.transaction.registry import encode_transaction
from lancelet.transaction.store import DatasetStore
from lancelet.transaction.verify import check_winner
from tests.dataset.util import snapshot
from tests.storage import read_file, remove_file, write_file
from tests.versions import STORAGE_VERSION

TABLE = pa.table({"x": list(range(10))})


def _twins(tmp_path: Path) -> dict[str, tuple[Any, str]]:
    """A dataset of two versions per library, each with the library's own fragments
    written for a later commit."""
    out: dict[str, tuple[Any, str]] = {}
    for lib in (ll, lance):
        uri = str(tmp_path / lib.__name__)
        lib.write_dataset(TABLE, uri, data_storage_version=STORAGE_VERSION)
        lib.write_dataset(TABLE, uri, mode="append")
        out[lib.__name__] = (lib, uri)
    return out


def _operation(lib: Any, uri: str, kind: str) -> Any:
    fragments = lib.fragment.write_fragments(TABLE, uri)
    if kind == "append":
        return lib.LanceOperation.Append(fragments)
    if kind == "overwrite":
        return lib.LanceOperation.Overwrite(TABLE.schema, fragments)
    assert kind == "restore"
    return lib.LanceOperation.Restore(1)


def _outcome(lib: Any, uri: str, kind: str, **kwargs: Any) -> tuple[str, int]:
    """("ok", rows of the new version) or ("conflict", rows of the unchanged latest)."""
    operation = _operation(lib, uri, kind)
    try:
        ds = lib.LanceDataset.commit(uri, operation, **kwargs)
    except (CommitConflictError, PylanceConflict):
        return "conflict", lib.dataset(uri).count_rows()
    return "ok", ds.count_rows()


@pytest.mark.parametrize(
    ("kind", "read_version", "max_retries"),
    [
        ("append", 1, 0),
        ("restore", 1, 0),
        ("overwrite", 1, 0),
        ("overwrite", 2, 0),
        ("overwrite", 1, 1),
        ("overwrite", 1, 3),
    ],
)
def test_commit_with_few_retries_as_pylance(
    tmp_path: Path, kind: str, read_version: int, max_retries: int
) -> None:
    """pylance makes one attempt, rebased onto the latest version, unless no retry is
    allowed for an overwrite: that one is strict, committed on its read version or not
    at all."""
    outcomes = {
        name: _outcome(lib, uri, kind, read_version=read_version, max_retries=max_retries)
        for name, (lib, uri) in _twins(tmp_path).items()
    }
    assert outcomes["lancelet"] == outcomes["lance"]


def test_strict_overwrite_leaves_the_dataset_unchanged(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(TABLE, uri)
    ll.write_dataset(TABLE, uri, mode="append")
    operation = _operation(ll, uri, "overwrite")
    before = snapshot(uri)
    with pytest.raises(CommitConflictError, match="version 1.*version 2"):
        ll.LanceDataset.commit(uri, operation, read_version=1, max_retries=0)
    assert snapshot(uri) == before
    assert ll.dataset(uri).version == 2


def test_read_version_from_the_future_is_refused(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(TABLE, uri)
    operation = _operation(ll, uri, "append")
    with pytest.raises(VersionNotFoundError, match="read version 7"):
        ll.LanceDataset.commit(uri, operation, read_version=7)
    assert ll.dataset(uri).version == 1


# -- winners whose transaction files lie (item 12) ----------------------------------------


def _keyed(uri: str, writer: Any = ll) -> None:
    """Keys 0..1999 in two fragments of 1,000 rows."""
    table = pa.table({"k": pa.array(range(2000), pa.int64())})
    writer.write_dataset(table, uri, max_rows_per_file=1000, data_storage_version=STORAGE_VERSION)


def _keys(uri: str) -> list[int]:
    return sorted(lance.dataset(uri).to_table(columns=["k"])["k"].to_pylist())


def _rewrite_winner_transaction(uri: str, version: int, lie: str) -> None:
    """Replace the transaction file of ``version`` (a Delete of fragment 0) by one that
    tells another story: the delete moved to fragment 1, or another kind of operation."""
    store = DatasetStore(uri)
    name = store.read_manifest(version).transaction_file
    txn = store.read_transaction(name)
    op = txn.operation
    assert isinstance(op, ops.Delete) and [f.id for f in op.updated_fragments] == [0]
    if lie == "index":  # an operation lancelet does not write itself
        pb = transaction_pb2.Transaction(read_version=txn.read_version, uuid=txn.uuid)
        pb.create_index.SetInParent()
        data = pb.SerializeToString()
    else:
        fake: ops.Operation = {
            "renumbered": replace(
                op, updated_fragments=tuple(f.with_id(1) for f in op.updated_fragments)
            ),
            "config": ops.UpdateConfig({"x": "y"}),
            "append": ops.Append(()),
        }[lie]
        data = encode_transaction(replace(txn, operation=fake))
    write_file(store.transaction_path(name), data)


@pytest.mark.parametrize("winner", [ll, lance], ids=["lancelet", "pylance"])
@pytest.mark.parametrize("lie", ["renumbered", "config", "append", "index"])
def test_a_winner_transaction_that_names_the_wrong_fragment_is_not_trusted(
    tmp_path: Path, winner: Any, lie: str
) -> None:
    uri = str(tmp_path / "ds")
    _keyed(uri, winner)
    store = DatasetStore(uri)
    stale = ll.dataset(uri)
    mine, _ = plan_delete(store, stale._manifest, "k < 5")
    winner.dataset(uri).delete("k >= 5 AND k < 10")  # version 2, fragment 0
    _rewrite_winner_transaction(uri, 2, lie)
    with pytest.raises(CorruptDatasetError, match="version 2"):
        commit_transaction(store, ops.Transaction(1, mine))
    # Nothing committed, and the winner's rows stay deleted.
    assert lance.dataset(uri).version == 2
    survivors = [*range(5), *range(10, 2000)]
    assert _keys(uri) == survivors and ll.dataset(uri).count_rows() == 1995


def test_a_winner_without_transaction_file_is_not_compatible(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _keyed(uri)
    store = DatasetStore(uri)
    stale = ll.dataset(uri)
    ll.dataset(uri).delete("k >= 5 AND k < 10")  # version 2
    name = naming.manifest_name(2)
    path = Path(uri, naming.VERSIONS_DIR, name)
    damaged = replace(store.read_manifest(2), transaction_file="")
    write_file(path, encode_manifest(damaged))
    mine, _ = plan_delete(DatasetStore(uri), stale._manifest, "k < 5")
    for operation in (mine, ops.UpdateConfig({"owner": "me"})):
        with pytest.raises(RetryableCommitConflictError, match="unknown"):
            commit_transaction(DatasetStore(uri), ops.Transaction(1, operation))
    assert _keys(uri) == [*range(5), *range(10, 2000)]


def test_pylance_winners_agree_with_their_manifests(tmp_path: Path) -> None:
    """Every kind of commit pylance makes passes the check (no false alarms)."""
    uri = str(tmp_path / "ds")
    table = pa.table({"k": pa.array(range(2000), pa.int64()), "v": [float(i) for i in range(2000)]})
    lance.write_dataset(table, uri, max_rows_per_file=500, data_storage_version=STORAGE_VERSION)
    ds = lance.dataset(uri)
    ds.delete("k < 3")
    ds.update({"v": "v + 1"}, where="k > 1990")
    upserts = pa.table({"k": pa.array(range(1500, 2100), pa.int64()), "v": [0.5] * 600})
    ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(upserts)
    ds.create_scalar_index("k", "BTREE")
    ds.add_columns({"w": "k * 2"})
    ds.drop_columns(["w"])
    ds.alter_columns({"path": "v", "name": "v2"})
    ds.update_config({"a": "b"})
    ds.optimize.compact_files(target_rows_per_fragment=5000)
    lance.write_dataset(table.slice(0, 10).rename_columns(["k", "v2"]), uri, mode="append")
    ds = lance.dataset(uri)
    lance.dataset(uri, version=2).restore()
    lance.write_dataset(table, uri, mode="overwrite")
    store = DatasetStore(uri)
    for version in range(2, lance.dataset(uri).version + 1):
        after = store.read_manifest(version)
        txn = store.read_transaction(after.transaction_file)
        check_winner(txn, store.read_manifest(version - 1), after, f"version {version}")


def _stale_reader_of_a_delete(uri: str) -> tuple[ll.LanceDataset, Path]:
    """A dataset opened at version 1, and the transaction file of version 2, a delete
    committed after it was opened."""
    _keyed(uri)
    stale = ll.dataset(uri)
    ll.dataset(uri).delete("k >= 5 AND k < 10")  # version 2
    store = DatasetStore(uri)
    return stale, Path(store.transaction_path(store.read_manifest(2).transaction_file))


def test_a_winner_transaction_with_an_unknown_deletion_kind_is_corrupt(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    stale, txn_path = _stale_reader_of_a_delete(uri)
    name = txn_path.name
    pb = transaction_pb2.Transaction.FromString(read_file(txn_path))
    pb.delete.updated_fragments[0].deletion_file.file_type = 7  # type: ignore[assignment]
    write_file(txn_path, pb.SerializeToString())
    with pytest.raises(CorruptDatasetError, match=f"{name}: transaction content is invalid"):
        stale.delete("k < 5")
    assert _keys(uri) == [*range(5), *range(10, 2000)]


def test_a_winner_whose_transaction_file_is_gone_is_not_rebased_over(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    stale, txn_path = _stale_reader_of_a_delete(uri)
    name = txn_path.name
    remove_file(txn_path)
    with pytest.raises(CorruptDatasetError, match=f"{name}: cannot read transaction file"):
        stale.delete("k < 5")
    assert _keys(uri) == [*range(5), *range(10, 2000)]
