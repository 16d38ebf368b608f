"""``LanceDataset.delta()``: the rows inserted and updated between two versions, the
row ids deleted, and the transactions committed, answered as pylance 14 answers them
on the same dataset, written by either library."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelet as ll
from lancelet.errors import ChangeFeedError, VersionNotFoundError
from lancelet.table.manifest_file import encode_manifest
from lancelet.transaction.store import DatasetStore
from tests.dataset import histories
from tests.storage import remove_file, write_file
from tests.versions import STORAGE_VERSION

LIBRARIES = {"lancelet": ll, "pylance": lance}
# pylance shows the kinds of operation its binding does not convert this way.
OPAQUE = "BaseOperation"


def _rows(keys: list[int], value: int = 0) -> pa.Table:
    return pa.table(
        {"k": pa.array(keys, pa.int64()), "v": pa.array([value] * len(keys), pa.int64())}
    )


def _create(library: Any, uri: str, keys: list[int], *, stable: bool = True) -> None:
    library.write_dataset(
        _rows(keys),
        uri,
        enable_stable_row_ids=stable,
        max_rows_per_file=4,
        data_storage_version=STORAGE_VERSION,
    )


@dataclass(frozen=True)
class Answers:
    inserted: pa.Table
    updated: pa.Table
    deleted: list[int]
    operations: list[str]


def _answers(ds: Any, *args: Any, **kwargs: Any) -> Answers:
    delta = ds.delta(*args, **kwargs)
    return Answers(
        delta.get_inserted_rows().read_all(),
        delta.get_updated_rows().read_all(),
        delta.get_deleted_row_ids().read_all().column("_rowid").to_pylist(),
        [type(t.operation).__name__ for t in delta.list_transactions()],
    )


def _assert_same(ours: Answers, theirs: Answers, where: object) -> None:
    assert ours.inserted.equals(theirs.inserted), where
    assert ours.updated.equals(theirs.updated), where
    # pylance's order follows a hash map where no anti join runs; lancelet's ascends.
    assert ours.deleted == sorted(theirs.deleted), where
    assert len(ours.operations) == len(theirs.operations), where
    for mine, their in zip(ours.operations, theirs.operations, strict=True):
        assert their in (OPAQUE, mine), where


def _assert_delta_as_pylance(uri: str, begin: int, end: int) -> None:
    """lancelet's delta of ``begin``..``end`` against pylance's.  pylance reads
    inserted and updated rows from the version ``delta()`` is called on, so it is
    opened at ``end``; lancelet reads the end version's rows wherever it is opened."""
    theirs = _answers(lance.dataset(uri, version=end), begin_version=begin, end_version=end)
    for at in (None, end):
        ours = _answers(ll.dataset(uri, version=at), begin_version=begin, end_version=end)
        _assert_same(ours, theirs, (uri, begin, end, at))
    # The shorthand: the dataset's own version against an older one.
    ours = _answers(ll.dataset(uri, version=end), begin)
    _assert_same(ours, _answers(lance.dataset(uri, version=end), begin), (uri, begin, end))


def _independent_deletes(uri: str, begin: int, end: int) -> list[int]:
    """The row ids pylance scans at ``begin`` and not at ``end``."""

    def ids(version: int) -> set[int]:
        if version == 0:
            return set()
        table = lance.dataset(uri, version=version).to_table(columns=[], with_row_id=True)
        return set(table.column("_rowid").to_pylist())

    return sorted(ids(begin) - ids(end))


# -- one history of every kind of operation, by each library ------------------------


def _history(library: Any, uri: str) -> None:
    """Appends, deletes, updates, upserts, a compaction, a new column, an overwrite
    and a restore, each a version (a compaction may reserve fragment ids first)."""
    _create(library, uri, list(range(10)))
    library.write_dataset(_rows([10, 11, 12, 13], 1), uri, mode="append", max_rows_per_file=4)
    library.dataset(uri).delete("k % 4 = 1")
    library.dataset(uri).update({"v": "2"}, where="k < 3")
    upsert = library.dataset(uri).merge_insert("k")
    upsert.when_matched_update_all().when_not_matched_insert_all().execute(
        _rows([2, 11, 20, 21], 3)
    )
    library.dataset(uri).optimize.compact_files(target_rows_per_fragment=100)
    library.dataset(uri).add_columns({"w": "k * 2"})
    library.dataset(uri).delete("k = 20")  # inserted and deleted within some ranges
    library.dataset(uri).update({"v": "4"}, where="k = 21")
    table = _rows([30, 31, 32], 5).append_column("w", pa.array([0, 0, 0], pa.int64()))
    library.write_dataset(table, uri, mode="overwrite", max_rows_per_file=4)
    library.write_dataset(table.slice(0, 1), uri, mode="append")
    library.dataset(uri, version=5).restore()  # rows the overwrite deleted are back
    library.dataset(uri).delete("k = 3")


@pytest.mark.parametrize("writer", LIBRARIES)
def test_every_range_of_a_history_answers_as_pylance(tmp_path: Path, writer: str) -> None:
    uri = str(tmp_path / "ds")
    _history(LIBRARIES[writer], uri)
    latest = lance.dataset(uri).version
    for end in range(1, latest + 1):
        for begin in range(end + 1):
            _assert_delta_as_pylance(uri, begin, end)
            ours = ll.dataset(uri).delta(begin_version=begin, end_version=end)
            ids = ours.get_deleted_row_ids().read_all().column("_rowid").to_pylist()
            assert ids == _independent_deletes(uri, begin, end), (begin, end)


def test_answers_of_a_small_history(tmp_path: Path) -> None:
    """The rows of each answer, spelled out (values pylance 14 gives)."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(_rows(list(range(10))), uri, enable_stable_row_ids=True)
    lance.write_dataset(_rows([10, 11], 1), uri, mode="append")
    lance.dataset(uri).update({"v": "2"}, where="k < 3")
    lance.dataset(uri).delete("k = 5")
    ds = ll.dataset(uri)

    def ids(reader: pa.RecordBatchReader) -> list[int]:
        return sorted(reader.read_all().column("_rowid").to_pylist())

    delta = ds.delta(1)
    assert ids(delta.get_inserted_rows()) == [10, 11]
    updated = delta.get_updated_rows().read_all().sort_by("_rowid")
    assert updated.column("_rowid").to_pylist() == [0, 1, 2]
    assert updated.column("_row_created_at_version").to_pylist() == [1, 1, 1]
    assert updated.column("_row_last_updated_at_version").to_pylist() == [3, 3, 3]
    assert ids(delta.get_deleted_row_ids()) == [5]
    assert [type(t.operation).__name__ for t in delta.list_transactions()] == [
        "Append",
        "Update",
        "Delete",
    ]
    everything = ds.delta(begin_version=0, end_version=4)
    assert ids(everything.get_inserted_rows()) == [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11]
    assert ids(everything.get_deleted_row_ids()) == []
    assert everything.get_updated_rows().read_all().schema.names == [
        "k",
        "v",
        "_rowid",
        "_row_created_at_version",
        "_row_last_updated_at_version",
    ]


def test_compared_against_a_newer_version_swaps_as_pylance(tmp_path: Path) -> None:
    """The older of the two versions begins the range.  pylance then reads inserted
    and updated rows from the older version (finding none); lancelet from the newer,
    as pylance does when called on it."""
    uri = str(tmp_path / "ds")
    _history(lance, uri)
    latest = lance.dataset(uri).version
    for at, other in [(2, latest), (3, 5), (4, 4)]:
        ours = _answers(ll.dataset(uri, version=at), other)
        theirs = _answers(lance.dataset(uri, version=other), at)
        _assert_same(ours, theirs, (at, other))
        assert ll.dataset(uri, version=at).delta(other).begin_version == min(at, other)
        from_older = _answers(lance.dataset(uri, version=at), other)
        assert sorted(from_older.deleted) == ours.deleted
        assert from_older.operations == theirs.operations


# -- random histories, written by either library ---------------------------------------


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.sampled_from(sorted(LIBRARIES)),
    steps=histories.steps(keys=30, compact_targets=(4, 100)),
    ranges=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=5),
)
def test_random_histories_answer_as_pylance(
    tmp_path_factory: pytest.TempPathFactory,
    first: str,
    steps: list[histories.Step],
    ranges: list[tuple[float, float]],
) -> None:
    uri = str(tmp_path_factory.mktemp("delta") / "ds")
    _create(LIBRARIES[first], uri, list(range(12)))
    for number, step in enumerate(steps):
        histories.apply(step, uri, number + 1)
    latest = lance.dataset(uri).version
    for a, b in ranges:
        begin, end = sorted((round(a * latest), max(1, round(b * latest))))
        _assert_delta_as_pylance(uri, begin, end)
        deleted = _answers(ll.dataset(uri), begin_version=begin, end_version=end).deleted
        assert deleted == _independent_deletes(uri, begin, end), (steps, begin, end)


# -- arguments and what cannot be answered --------------------------------------------


@pytest.fixture
def small(tmp_path: Path) -> str:
    uri = str(tmp_path / "ds")
    _create(lance, uri, list(range(6)))
    lance.write_dataset(_rows([6, 7]), uri, mode="append")
    lance.dataset(uri).delete("k = 0")
    return uri


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "either compared_against or both"),
        ((), {"begin_version": 1}, "both begin_version and end_version"),
        ((), {"end_version": 2}, "both begin_version and end_version"),
        ((1,), {"begin_version": 1, "end_version": 2}, "not both"),
        ((1,), {"end_version": 2}, "not both"),
        ((), {"begin_version": 3, "end_version": 1}, "begin version 3 is newer than end version 1"),
    ],
)
def test_arguments_pylance_refuses_or_should(
    small: str, args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    """pylance refuses the first three alike; it ignores the range given beside
    ``compared_against``, and refuses a reversed range only for deleted row ids."""
    with pytest.raises(ValueError, match=message):
        ll.dataset(small).delta(*args, **kwargs)
    if "not both" not in message and "newer" not in message:
        with pytest.raises(ValueError):
            lance.dataset(small).delta(*args, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"begin_version": -1, "end_version": 2}, OverflowError),
        ({"begin_version": 1, "end_version": -2}, OverflowError),
        ({"begin_version": 1.5, "end_version": 2}, TypeError),
        ({"begin_version": "1", "end_version": 2}, TypeError),
        ({"compared_against": -1}, OverflowError),
        ({"compared_against": 1.0}, TypeError),
    ],
)
def test_version_numbers_are_unsigned_integers_as_in_pylance(
    small: str, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        lance.dataset(small).delta(**kwargs)
    with pytest.raises(error, match="compared_against|begin_version|end_version"):
        ll.dataset(small).delta(**kwargs)


def test_versions_missing_are_errors_naming_them(small: str) -> None:
    ds = ll.dataset(small)
    beyond = ds.delta(begin_version=1, end_version=6)
    with pytest.raises(VersionNotFoundError, match="version 4 is not found"):
        beyond.list_transactions()
    for read in (beyond.get_inserted_rows, beyond.get_updated_rows, beyond.get_deleted_row_ids):
        with pytest.raises(ValueError, match="version 6 is not found"):
            read()
    # Version 1 cleaned up: what needs its rows or its transaction fails, the rest answers.
    store = DatasetStore(small)
    location = store.manifest_location(1)
    assert location is not None
    remove_file(store.path("_versions", location.name))
    cleaned = ll.dataset(small).delta(begin_version=1, end_version=3)
    with pytest.raises(ValueError, match="version 1 is not found"):
        cleaned.get_deleted_row_ids()
    assert cleaned.get_inserted_rows().read_all().column("k").to_pylist() == [6, 7]
    assert [type(t.operation).__name__ for t in cleaned.list_transactions()] == [
        "Append",
        "Delete",
    ]
    with pytest.raises(ValueError, match="version 1 is not found"):
        ll.dataset(small).delta(begin_version=0, end_version=3).list_transactions()
    with pytest.raises(ValueError):
        lance.dataset(small).delta(begin_version=0, end_version=3).list_transactions()


def test_without_stable_row_ids_nothing_is_answered_from_missing_lineage(
    tmp_path: Path,
) -> None:
    """pylance records no lineage there and answers no inserted or updated rows
    (wrongly: rows were inserted); lancelet refuses, as both do for deleted ids."""
    uri = str(tmp_path / "ds")
    _create(lance, uri, list(range(6)), stable=False)
    lance.write_dataset(_rows([6, 7]), uri, mode="append")
    theirs = lance.dataset(uri).delta(1)
    assert theirs.get_inserted_rows().read_all().num_rows == 0
    ours = ll.dataset(uri).delta(1)
    for read in (ours.get_inserted_rows, ours.get_updated_rows):
        with pytest.raises(ChangeFeedError, match="enable_stable_row_ids=True"):
            read()
    with pytest.raises(ValueError, match="version 1 does not use them"):
        theirs.get_deleted_row_ids()
    with pytest.raises(ChangeFeedError, match="version 1 does not use them"):
        ours.get_deleted_row_ids()
    assert isinstance(ChangeFeedError("x"), ValueError)
    # What needs no lineage still answers: the transactions.
    assert [type(t.operation).__name__ for t in ours.list_transactions()] == ["Append"]


def test_fragments_recording_no_lineage_are_refused(tmp_path: Path) -> None:
    """Stable row ids, but fragments written before lineage was recorded: their rows
    would all read as created at version 1."""
    uri = str(tmp_path / "ds")
    _create(lance, uri, list(range(6)))
    lance.write_dataset(_rows([6, 7]), uri, mode="append")
    store = DatasetStore(uri)
    manifest = store.read_manifest(2)
    first, *rest = manifest.fragments
    bare = replace(first, created_at_version_meta=None, last_updated_at_version_meta=None)
    location = store.latest_location()
    assert location is not None
    write_file(
        store.path("_versions", location.name),
        encode_manifest(replace(manifest, fragments=(bare, *rest))),
    )
    delta = ll.dataset(uri).delta(1)
    with pytest.raises(ChangeFeedError, match=f"fragment {first.id} of version 2"):
        delta.get_inserted_rows()
    assert delta.get_deleted_row_ids().read_all().num_rows == 0
