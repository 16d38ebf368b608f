"""Transactions as pylance exposes them: commit messages and properties, reading
transactions back, detached commits, commit locks, ``Transaction`` commits (UpdateConfig
with UpdateMaps, DataReplacement, batched appends, uncommitted merge_insert), ``asof``
checkout and auto-cleanup.  Each is written by one library and read by the other."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import lance
import lance.commit
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.commit import CommitConflictError
from lancelet.dataset import LANCE_COMMIT_MESSAGE_KEY, AutoCleanupConfig
from lancelet.dataset.versions.auto_cleanup import parse_duration
from lancelet.errors import SchemaError, UnsupportedOptionError
from tests.storage import list_names
from tests.versions import STORAGE_VERSION

TABLE = pa.table({"x": list(range(10)), "s": [str(i) for i in range(10)]})


def _write(lib: object, uri: Path, **kwargs: object) -> None:
    lib.write_dataset(TABLE, uri, data_storage_version=STORAGE_VERSION, **kwargs)  # type: ignore[attr-defined]


def _versions(lib: object, uri: Path) -> list[int]:
    return [v["version"] for v in lib.dataset(uri).versions()]  # type: ignore[attr-defined]


# -- commit messages and transaction properties ---------------------------------------


@pytest.mark.parametrize(("writer", "reader"), [(ll, lance), (lance, ll)])
def test_commit_properties_cross_libraries(writer: object, reader: object, tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(writer, uri, commit_message="first", transaction_properties={"k": "v"})
    writer.write_dataset(TABLE, uri, mode="append")  # type: ignore[attr-defined]
    ds = reader.dataset(uri)  # type: ignore[attr-defined]
    first = ds.read_transaction(1)
    assert first.transaction_properties == {LANCE_COMMIT_MESSAGE_KEY: "first", "k": "v"}
    assert first.read_version == 0
    assert type(first.operation).__name__ == "Overwrite"
    newest, oldest = ds.get_transactions()
    assert newest.transaction_properties == {}
    assert type(newest.operation).__name__ == "Append"
    assert newest.read_version == 1
    assert oldest.uuid == first.uuid
    assert len(newest.operation.fragments) == 1


def test_get_transactions_matches_pylance(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(ll, uri)
    ll.dataset(uri).delete("x < 3")
    ll.dataset(uri).update_config({"a": "1"})
    ours = ll.dataset(uri).get_transactions(2)
    theirs = lance.dataset(uri).get_transactions(2)
    assert [t.uuid for t in ours] == [t.uuid for t in theirs]
    assert [type(t.operation).__name__ for t in ours] == ["UpdateConfig", "Delete"]
    assert ours[0].operation.config_updates.updates == {"a": "1"}
    assert theirs[0].operation.config_updates.updates == {"a": "1"}
    assert ours[1].operation.predicate == theirs[1].operation.predicate == "x < 3"


def test_commit_with_message_and_transaction(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(ll, uri)
    frags = ll.fragment.write_fragments(TABLE, str(uri))
    with pytest.raises(ValueError, match="read_version"):
        ll.LanceDataset.commit(uri, ll.LanceOperation.Append(frags))
    ds = ll.LanceDataset.commit(
        uri, ll.LanceOperation.Append(frags), read_version=1, commit_message="more"
    )
    assert lance.dataset(uri).read_transaction(2).transaction_properties == {
        LANCE_COMMIT_MESSAGE_KEY: "more"
    }
    txn = ll.Transaction(2, ll.LanceOperation.Delete([], [0], "x >= 0"), uuid="u-1")
    with pytest.raises(ValueError, match="commit_message"):
        ll.LanceDataset.commit(ds, txn, commit_message="no")
    ll.LanceDataset.commit(ds, txn)
    assert lance.dataset(uri).read_transaction(3).uuid == "u-1"
    assert lance.dataset(uri).count_rows() == 10


# -- detached commits -------------------------------------------------------------------


def _detached_append(lib: object, uri: Path, read_version: int, value: int) -> object:
    frag = lib.LanceFragment.create(str(uri), pa.table({"x": [value], "s": ["d"]}))  # type: ignore[attr-defined]
    op = lib.LanceOperation.Append([frag])  # type: ignore[attr-defined]
    return lib.LanceDataset.commit(str(uri), op, read_version=read_version, detached=True)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("writer", "reader"), [(ll, lance), (lance, ll)])
def test_detached_commits_cross_libraries(writer: object, reader: object, tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(writer, uri)
    detached = _detached_append(writer, uri, 1, 100)
    assert detached.version & (1 << 63)  # type: ignore[attr-defined]
    assert reader.dataset(uri).version == 1  # type: ignore[attr-defined]
    assert _versions(reader, uri) == [1]
    seen = reader.dataset(uri, version=detached.version)  # type: ignore[attr-defined]
    assert seen.to_table()["x"].to_pylist() == [*range(10), 100]
    # A detached commit on top of a detached one, by the other library.
    second = _detached_append(reader, uri, detached.version, 200)  # type: ignore[attr-defined]
    again = writer.dataset(uri, version=second.version)  # type: ignore[attr-defined]
    assert again.to_table()["x"].to_pylist() == [*range(10), 100, 200]
    assert again.read_transaction(second.version).read_version == detached.version  # type: ignore[attr-defined]
    writer.write_dataset(TABLE, uri, mode="append")  # type: ignore[attr-defined]
    assert reader.dataset(uri).version == 2  # type: ignore[attr-defined]


def test_detached_commit_refused_on_v1_paths(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(ll, uri, enable_v2_manifest_paths=False)
    with pytest.raises(OSError, match="v1 manifest paths"):
        _detached_append(ll, uri, 1, 5)


# -- commit locks -------------------------------------------------------------------------


def test_commit_lock_wraps_each_commit(tmp_path: Path) -> None:
    held: list[int] = []

    @contextlib.contextmanager
    def lock(version: int) -> Iterator[None]:
        held.append(version)
        yield

    uri = tmp_path / "ds"
    _write(ll, uri, commit_lock=lock)
    ds = ll.dataset(uri, commit_lock=lock)
    ds.delete("x < 2")
    assert held == [1, 2]

    @contextlib.contextmanager
    def refusing(version: int) -> Iterator[None]:
        raise CommitConflictError("taken")
        yield

    with pytest.raises(CommitConflictError, match="CommitConflictError") as caught:
        ll.dataset(uri, commit_lock=refusing).delete("x < 5")
    assert isinstance(caught.value, OSError) and not caught.value.retryable
    assert lance.dataset(uri).version == 2
    with pytest.raises(TypeError, match="commit_lock"):
        ll.dataset(uri, commit_lock=object())  # type: ignore[arg-type]


def test_lancelet_conflicts_are_commit_conflict_errors() -> None:
    assert issubclass(ll.errors.RetryableCommitConflictError, CommitConflictError)
    assert ll.errors.RetryableCommitConflictError("x").retryable
    assert not ll.errors.IncompatibleTransactionError("x").retryable
    # One built directly (as a commit lock may) is retryable unless told, as pylance's.
    assert ll.commit.CommitConflictError("x").retryable
    assert lance.commit.CommitConflictError("x").retryable
    assert not ll.commit.CommitConflictError("x", retryable=False).retryable


# -- operations committed as transactions ----------------------------------------------


def _update_config(lib: object, uri: Path, read_version: int) -> None:
    op = lib.LanceOperation  # type: ignore[attr-defined]
    update = op.UpdateConfig(
        config_updates=op.UpdateMap({"c1": "1", "c2": "2"}),
        table_metadata_updates=op.UpdateMap({"t": "x"}, replace=True),
        schema_metadata_updates=op.UpdateMap({"s1": "a", "s0": None}),
        field_metadata_updates={1: op.UpdateMap({"f": "v"})},
    )
    lib.LanceDataset.commit(str(uri), lib.Transaction(read_version, update))  # type: ignore[attr-defined]


def test_update_config_transaction_matches_pylance(tmp_path: Path) -> None:
    schema = pa.schema(
        [pa.field("x", pa.int64()), pa.field("s", pa.string(), metadata={"old": "1"})],
        metadata={"s0": "gone"},
    )
    for lib, name in ((ll, "ours"), (lance, "theirs")):
        uri = tmp_path / name
        lib.write_dataset(TABLE.cast(schema), uri, data_storage_version=STORAGE_VERSION)
        lance.dataset(uri).update_metadata({"before": "1"})
        _update_config(lib, uri, 2)
    ours, theirs = lance.dataset(tmp_path / "ours"), lance.dataset(tmp_path / "theirs")
    assert ours.version == theirs.version == 3
    assert ours.config() == theirs.config() == {"c1": "1", "c2": "2"}
    assert ours.metadata == theirs.metadata == {"t": "x"}
    assert ours.schema == theirs.schema
    assert ours.schema.field("s").metadata == {b"old": b"1", b"f": b"v"}
    mine = ll.dataset(tmp_path / "theirs").read_transaction(3).operation
    assert mine.field_metadata_updates[1].updates == {"f": "v"}
    assert mine.schema_metadata_updates.updates == {"s1": "a", "s0": None}
    assert mine.table_metadata_updates.replace


def test_config_replace_by_transaction_is_refused(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(ll, uri)
    op = ll.LanceOperation.UpdateConfig(config_updates=ll.LanceOperation.UpdateMap({}, True))
    with pytest.raises(UnsupportedOptionError):
        ll.LanceDataset.commit(uri, ll.Transaction(1, op))


@pytest.mark.parametrize("lib", [ll, lance])
def test_data_replacement(lib: object, tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(lib, uri)
    new = pa.table({"x": list(range(100, 110)), "s": [f"n{i}" for i in range(10)]})
    frag = lib.LanceFragment.create(str(uri), new)  # type: ignore[attr-defined]
    op = lib.LanceOperation  # type: ignore[attr-defined]
    replacement = op.DataReplacement([op.DataReplacementGroup(0, frag.files[0])])
    lib.LanceDataset.commit(str(uri), replacement, read_version=1)  # type: ignore[attr-defined]
    for reader in (ll, lance):
        ds = reader.dataset(uri)
        assert ds.to_table() == new
        groups = ds.read_transaction(2).operation.replacements
        assert [g.fragment_id for g in groups] == [0]
        assert groups[0].new_file.path == frag.files[0].path


def test_data_replacement_needs_matching_fields(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(ll, uri)
    frag = ll.LanceFragment.create(str(uri), TABLE)
    only_x = replace(frag.files[0], fields=(0,), column_indices=(0,))
    op = ll.LanceOperation.DataReplacement([ll.LanceOperation.DataReplacementGroup(0, only_x)])
    with pytest.raises(ValueError, match="exactly"):
        ll.LanceDataset.commit(uri, op, read_version=1)


def test_commit_batch_appends(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(ll, uri)
    ds = ll.dataset(uri)
    parts = [pa.table({"x": [i], "s": ["b"]}) for i in (50, 60)]
    txns = [
        ll.Transaction(1, ll.LanceOperation.Append(ll.fragment.write_fragments(p, ds)))
        for p in parts
    ]
    result = ll.LanceDataset.commit_batch(ds, txns)
    assert result["dataset"].version == 2
    assert result["merged"].operation.fragments == [f for t in txns for f in t.operation.fragments]
    assert lance.dataset(uri).to_table() == pa.concat_tables([TABLE, *parts])
    delete = ll.Transaction(2, ll.LanceOperation.Delete([], [0], "x >= 0"))
    with pytest.raises(UnsupportedOptionError):
        ll.LanceDataset.commit_batch(uri, [delete])


def test_merge_insert_uncommitted(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(ll, uri)
    ds = ll.dataset(uri)
    source = pa.table({"x": [1, 50], "s": ["one", "fifty"]})
    txn, stats = (
        ds.merge_insert("x")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute_uncommitted(source)
    )
    assert stats == {"num_inserted_rows": 1, "num_updated_rows": 1, "num_deleted_rows": 0}
    assert isinstance(txn.operation, ll.LanceOperation.Update)
    assert ll.dataset(uri).version == 1
    ll.LanceDataset.commit(ds, txn)
    got = lance.dataset(uri).to_table().sort_by("x")
    want = lance.write_dataset(TABLE, tmp_path / "twin")
    want.merge_insert("x").when_matched_update_all().when_not_matched_insert_all().execute(source)
    assert got == lance.dataset(tmp_path / "twin").to_table().sort_by("x")


# -- asof, and write-time checks -------------------------------------------------------


def test_asof_picks_the_version_latest_then(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(ll, uri)
    time.sleep(0.05)
    between = datetime.now()
    time.sleep(0.05)
    ll.write_dataset(TABLE, uri, mode="append")
    assert ll.dataset(uri, asof=between).version == lance.dataset(uri, asof=between).version == 1
    later = datetime.now()
    assert ll.dataset(uri, asof=later).version == 2
    assert ll.dataset(uri, asof=later.isoformat()).version == 2
    with pytest.raises(ValueError):
        ll.dataset(uri, asof=datetime(2000, 1, 1))
    with pytest.raises(ValueError, match="asof"):
        ll.dataset(uri, version=1, asof=later)


def test_schema_metadata_must_be_text(tmp_path: Path) -> None:
    data = TABLE.replace_schema_metadata({"b": b"\x80\x81"})
    with pytest.raises(ValueError):
        lance.write_dataset(data, tmp_path / "theirs")
    with pytest.raises(SchemaError):
        ll.write_dataset(data, tmp_path / "ours")


def test_data_file_path_still_callable(tmp_path: Path) -> None:
    frag = ll.LanceFragment.create(str(tmp_path / "ds"), TABLE)
    path = frag.files[0].path
    assert isinstance(path, str)
    with pytest.warns(DeprecationWarning):
        assert path() == path


# -- auto cleanup -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        {"lance.auto_cleanup.interval": "1", "lance.auto_cleanup.older_than": "0s"},
        {"lance.auto_cleanup.interval": "3", "lance.auto_cleanup.older_than": "0ms"},
        {"lance.auto_cleanup.interval": "1", "lance.auto_cleanup.retain_versions": "2"},
        {"lance.auto_cleanup.interval": "1"},
        {"lance.auto_cleanup.interval": "1", "lance.auto_cleanup.older_than": "1h"},
    ],
)
def test_auto_cleanup_keeps_what_pylance_keeps(config: dict[str, str], tmp_path: Path) -> None:
    history = {}
    for lib, name in ((ll, "ours"), (lance, "theirs")):
        uri = tmp_path / name
        _write(lib, uri)
        lib.dataset(uri).update_config(config)
        seen = []
        for _ in range(4):
            lib.write_dataset(TABLE, uri, mode="append")
            seen.append(_versions(lance, uri))
        history[name] = seen
    assert history["ours"] == history["theirs"]


def test_auto_cleanup_options_on_create_only(tmp_path: Path) -> None:
    options = AutoCleanupConfig(interval=2, older_than_seconds=30)
    for lib, name in ((ll, "ours"), (lance, "theirs")):
        _write(lib, tmp_path / name, auto_cleanup_options=options)
        lib.write_dataset(
            TABLE,
            tmp_path / name,
            mode="append",
            auto_cleanup_options={"interval": 5, "older_than_seconds": 1},
        )
    assert ll.dataset(tmp_path / "ours").config() == lance.dataset(tmp_path / "theirs").config()
    assert lance.dataset(tmp_path / "ours").config() == {
        "lance.auto_cleanup.interval": "2",
        "lance.auto_cleanup.older_than": "30s",
    }


def test_enable_and_disable_auto_cleanup(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(ll, uri)
    ds = ll.dataset(uri)
    ds.optimize.enable_auto_cleanup(AutoCleanupConfig(interval=1, older_than_seconds=0))
    ll.write_dataset(TABLE, uri, mode="append")
    assert _versions(lance, uri) == [2, 3]
    ds.optimize.disable_auto_cleanup()  # ds read version 2: re-made on the latest
    assert ds.config() == {}
    ll.write_dataset(TABLE, uri, mode="append")
    assert _versions(lance, uri) == [2, 3, 4, 5]


def test_bad_auto_cleanup_config_warns_after_committing(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(ll, uri)
    bad = {"lance.auto_cleanup.interval": "1", "lance.auto_cleanup.older_than": "soon"}
    with pytest.warns(RuntimeWarning, match="auto cleanup failed after version 2"):
        ll.dataset(uri).update_config(bad)
    with pytest.warns(RuntimeWarning, match="auto cleanup failed after version 3"):
        ll.write_dataset(TABLE, uri, mode="append")
    assert _versions(lance, uri) == [1, 2, 3]


def test_parse_duration() -> None:
    assert parse_duration("1ms") == timedelta(milliseconds=1)
    assert parse_duration("1h 30m") == timedelta(minutes=90)
    assert parse_duration("14days") == timedelta(days=14)
    assert parse_duration("2w1d") == timedelta(days=15)
    for bad in ("", "10", "s", "1 parsec", "1h x"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_transaction_files_are_listed(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(ll, uri, commit_message="m")
    assert len(list_names(uri / "_transactions")) == 1


@pytest.mark.parametrize("lib", [ll, lance])
def test_merge_with_pyarrow_schema_is_deprecated(lib: object, tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(lib, uri)
    fragment = lib.dataset(uri).get_fragments()[0]  # type: ignore[attr-defined]
    merged, _ = fragment.merge_columns(lambda b: pa.record_batch([b["x"]], ["y"]), columns=["x"])
    schema = TABLE.schema.append(pa.field("y", pa.int64()))
    with pytest.deprecated_call():
        op = lib.LanceOperation.Merge([merged], schema)  # type: ignore[attr-defined]
    lib.LanceDataset.commit(str(uri), op, read_version=1)  # type: ignore[attr-defined]
    for reader in (ll, lance):
        assert reader.dataset(uri).to_table() == TABLE.append_column("y", TABLE["x"])


def test_merge_with_pyarrow_schema_refuses_other_ids(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(ll, uri)
    ll.dataset(uri).drop_columns(["s"])
    ll.dataset(uri).add_columns({"t": "x * 2"})  # field id 2: ids 0 and 2 in use
    fragment = ll.dataset(uri).get_fragments()[0]
    merged, _ = fragment.merge_columns(lambda b: pa.record_batch([b["x"]], ["y"]), columns=["x"])
    schema = pa.schema([("x", pa.int64()), ("t", pa.int64()), ("y", pa.int64())])
    with pytest.deprecated_call():
        op = ll.LanceOperation.Merge([merged], schema)
    with pytest.raises(UnsupportedOptionError, match="field ids"):
        ll.LanceDataset.commit(uri, op, read_version=3)
    assert ll.dataset(uri).version == 3


def test_kinds_without_a_class_read_as_opaque_operations(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(lance, uri)
    lance.dataset(uri).add_bases([lance.DatasetBasePath(str(tmp_path / "b1"), name="b1")])
    theirs = lance.dataset(uri).read_transaction(2).operation
    ours = ll.dataset(uri).read_transaction(2)
    # pylance has no class for UpdateBases either, and shows a bare BaseOperation.
    assert type(theirs).__name__ == type(ours.operation).__name__ == "BaseOperation"
    with pytest.raises(UnsupportedOptionError, match="cannot commit"):
        ll.LanceDataset.commit(uri, ll.Transaction(2, ours.operation))
    assert ll.dataset(uri).version == 2
