"""Two writers read the same version and commit one after the other.

Each case checks the outcome the conflict table promises (rebased, retryable,
incompatible) and, where the second commit lands, the rows pylance reads.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import IncompatibleTransactionError, RetryableCommitConflictError
from lancelet.transaction import operations as ops
from lancelet.transaction.commit import commit_transaction
from lancelet.transaction.conflicts import RULES
from lancelet.transaction.store import DatasetStore
from tests.dataset.util import keyed_table
from tests.storage import list_names


@pytest.fixture
def uri(tmp_path: Path) -> str:
    path = str(tmp_path / "ds")
    ll.write_dataset(keyed_table(0, 2000), path, max_rows_per_file=1000)
    return path


def _keys(uri: str) -> np.ndarray:
    return np.sort(lance.dataset(uri).to_table(columns=["k"])["k"].to_numpy())


def test_two_appends_both_land(uri: str) -> None:
    a, b = ll.dataset(uri), ll.dataset(uri)
    fa = ll.fragment.write_fragments(keyed_table(2000, 2100), uri)
    fb = ll.fragment.write_fragments(keyed_table(3000, 3100), uri)
    ll.LanceDataset.commit(uri, ll.LanceOperation.Append(fa), read_version=a.version)
    ll.LanceDataset.commit(uri, ll.LanceOperation.Append(fb), read_version=b.version)
    want = np.concatenate([np.arange(2100), np.arange(3000, 3100)])
    assert np.array_equal(_keys(uri), want)
    ids = [f.fragment_id for f in lance.dataset(uri).get_fragments()]
    assert ids == [0, 1, 2, 3]


def test_deletes_of_different_rows_in_one_fragment_merge(uri: str) -> None:
    store = DatasetStore(uri)
    first, second = ll.dataset(uri), ll.dataset(uri)
    from lancelet.dataset.mutate.delete import plan_delete

    op_a, _ = plan_delete(store, first._manifest, "k < 10")
    op_b, _ = plan_delete(store, second._manifest, "k >= 990 AND k < 1000")
    commit_transaction(store, ops.Transaction(1, op_a))
    commit_transaction(store, ops.Transaction(1, op_b))
    keys = _keys(uri)
    assert len(keys) == 1980
    assert not np.isin(np.r_[0:10, 990:1000], keys).any()
    lance.dataset(uri).validate()


def test_delete_after_concurrent_overwrite_is_retryable(uri: str) -> None:
    reader = ll.dataset(uri)
    ll.write_dataset(keyed_table(0, 10), uri, mode="overwrite")
    from lancelet.dataset.mutate.delete import plan_delete

    store = DatasetStore(uri)
    operation, _ = plan_delete(store, reader._manifest, "k < 5")
    with pytest.raises(RetryableCommitConflictError, match="overwrite"):
        commit_transaction(store, ops.Transaction(reader.version, operation))
    assert lance.dataset(uri).count_rows() == 10


def test_delete_api_reruns_after_a_retryable_conflict(uri: str) -> None:
    stale = ll.dataset(uri)
    ll.write_dataset(keyed_table(0, 10), uri, mode="overwrite")
    assert stale.delete("k < 5") == {"num_deleted_rows": 5}
    assert np.array_equal(_keys(uri), np.arange(5, 10))


@pytest.mark.parametrize("mine", ["append", "delete", "overwrite", "config", "reserve"])
def test_anything_after_a_concurrent_restore_is_incompatible_or_wins(uri: str, mine: str) -> None:
    ll.write_dataset(keyed_table(2000, 2100), uri, mode="append")
    reader = ll.dataset(uri)  # version 2
    ll.dataset(uri, version=1).restore()  # version 3
    store = DatasetStore(uri)
    frags = tuple(ll.fragment.write_fragments(keyed_table(5000, 5001), uri))
    schema = reader._manifest.schema
    operation = {
        "append": ops.Append(frags),
        "delete": ops.Delete((), (0,), "k < 1000"),
        "overwrite": ops.Overwrite(frags, schema),
        "config": ops.UpdateConfig({"a": "b"}),
        "reserve": ops.ReserveFragments(2),
    }[mine]
    txn = ops.Transaction(reader.version, operation)
    if mine in ("overwrite", "config"):
        # An overwrite replaces everything, and a config change is a delta, so a
        # restore before either does not matter.
        assert commit_transaction(store, txn).version == 4
        return
    with pytest.raises(IncompatibleTransactionError, match="restore"):
        commit_transaction(store, txn)
    assert np.array_equal(_keys(uri), np.arange(2000))


def test_config_updates_on_the_same_key_are_incompatible(uri: str) -> None:
    store = DatasetStore(uri)
    commit_transaction(store, ops.Transaction(1, ops.UpdateConfig({"owner": "a"})))
    commit_transaction(store, ops.Transaction(1, ops.UpdateConfig({"other": "x"})))
    with pytest.raises(IncompatibleTransactionError, match="owner"):
        commit_transaction(store, ops.Transaction(1, ops.UpdateConfig({"owner": "b"})))
    assert ll.dataset(uri).config() == {"owner": "a", "other": "x"}
    assert lance.dataset(uri).config() == {"owner": "a", "other": "x"}


def test_reserved_fragment_ids_are_skipped(uri: str) -> None:
    store = DatasetStore(uri)
    commit_transaction(store, ops.Transaction(1, ops.ReserveFragments(3)))
    ds = ll.write_dataset(keyed_table(2000, 2010), uri, mode="append")
    assert [f.fragment_id for f in ds.get_fragments()] == [0, 1, 5]
    assert lance.dataset(uri).count_rows() == 2010


def test_append_after_concurrent_overwrite_is_incompatible(uri: str) -> None:
    frags = ll.fragment.write_fragments(keyed_table(2000, 2010), uri)
    ll.write_dataset(keyed_table(0, 3), uri, mode="overwrite")
    with pytest.raises(IncompatibleTransactionError):
        ll.LanceDataset.commit(uri, ll.LanceOperation.Append(frags), read_version=1)
    assert lance.dataset(uri).count_rows() == 3


def test_every_operation_has_a_rule_row() -> None:
    for kind in ("append", "delete", "overwrite", "restore", "update_config", "reserve_fragments"):
        assert "*" in RULES[kind]


def test_pylance_commits_are_understood_as_winners(uri: str) -> None:
    stale = ll.dataset(uri)
    lance.dataset(uri).delete("k < 100")  # pylance's delete transaction file
    assert stale.delete("k >= 1900") == {"num_deleted_rows": 100}
    keys = _keys(uri)
    assert len(keys) == 1800 and keys[0] == 100 and keys[-1] == 1899
    table = pa.table({"k": keys})
    assert ll.dataset(uri).to_table(columns=["k"]).sort_by("k").equals(table)


def test_pylance_config_update_conflicts_on_the_same_key(uri: str) -> None:
    stale = ll.dataset(uri)
    lance.dataset(uri).update_config({"owner": "pylance"})
    with pytest.raises(IncompatibleTransactionError, match="owner"):
        stale.update_config({"owner": "lancelet"})
    stale = ll.dataset(uri, version=1)
    stale.update_config({"other": "lancelet"})
    assert lance.dataset(uri).config() == {"owner": "pylance", "other": "lancelet"}
    stale.delete_config_keys(["owner"])
    assert lance.dataset(uri).config() == {"other": "lancelet"}


def test_stale_delete_after_cleanup_reruns_on_the_latest_version(uri: str) -> None:

    stale = ll.dataset(uri)
    for _ in range(2):
        ll.write_dataset(keyed_table(5000, 5001), uri, mode="append")
    ll.dataset(uri).cleanup_old_versions(older_than=timedelta(0))
    assert stale.delete("k < 3") == {"num_deleted_rows": 3}
    assert lance.dataset(uri).count_rows() == 1999


def test_creators_with_different_manifest_naming_cannot_both_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from lancelet.errors import DatasetAlreadyExistsError

    path = str(tmp_path / "ds")
    real = DatasetStore.write_transaction
    fired: list[int] = []

    def racing(self: DatasetStore, txn: ops.Transaction) -> str:
        name = real(self, txn)
        if not fired:  # another creator, naming manifests V1, commits inside our window
            fired.append(1)
            ll.write_dataset(pa.table({"a": [2]}), path, enable_v2_manifest_paths=False)
        return name

    monkeypatch.setattr(DatasetStore, "write_transaction", racing)
    with pytest.raises(DatasetAlreadyExistsError):
        ll.write_dataset(pa.table({"a": [1]}), path)
    manifests = [n for n in list_names(os.path.join(path, "_versions")) if n.endswith("manifest")]
    assert manifests == ["1.manifest"]
    assert lance.dataset(path).to_table().equals(pa.table({"a": [2]}))


def test_a_failed_delete_leaves_no_deletion_files(uri: str) -> None:
    stale = ll.dataset(uri)
    deletions = Path(uri) / "_deletions"
    ll.dataset(uri).restore()  # a restore makes every older reader's delete incompatible
    with pytest.raises(IncompatibleTransactionError, match="restore"):
        stale.delete("k % 2 = 0")
    assert list_names(deletions) == []
    assert np.array_equal(_keys(uri), np.arange(2000))


def _referenced_deletion_files(uri: str) -> set[str]:
    """Deletion file names any version uses, as pylance sees them."""
    names = set()
    for info in lance.dataset(uri).versions():
        for fragment in lance.dataset(uri, version=info["version"]).get_fragments():
            file = fragment.metadata.deletion_file
            if file is not None:
                names.add(os.path.basename(file.path(fragment.fragment_id)))
    return names


def test_a_rebased_delete_leaves_no_unreferenced_files(uri: str) -> None:
    first, second = ll.dataset(uri), ll.dataset(uri)
    first.delete("k < 10")
    second.delete("k >= 990 AND k < 1000")  # same fragment: rebased, its deletion file merged
    assert len(_keys(uri)) == 1980
    on_disk = set(list_names(Path(uri) / "_deletions"))
    assert on_disk == _referenced_deletion_files(uri)
    # One transaction file per version: none left over from before the rebase.
    versions = len(lance.dataset(uri).versions())
    assert len(list_names(Path(uri) / "_transactions")) == versions
