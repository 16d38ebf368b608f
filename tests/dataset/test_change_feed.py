"""``LanceDataset.changes()``: every commit's inserts, updates (pre- and post-images)
and deletes, checked against the difference of consecutive snapshots as pylance
reads them, keyed by stable row id."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelet as ll
from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.errors import ArgumentError, ChangeFeedError, SchemaError, VersionNotFoundError
from lancelet.transaction.store import DatasetStore
from tests.dataset import histories
from tests.versions import STORAGE_VERSION

Change = tuple[Any, ...]


def _rows(keys: list[int], value: int = 0) -> pa.Table:
    return pa.table(
        {"k": pa.array(keys, pa.int64()), "v": pa.array([value] * len(keys), pa.int64())}
    )


def _create(library: Any, uri: str, keys: list[int], **kwargs: Any) -> None:
    library.write_dataset(
        _rows(keys),
        uri,
        enable_stable_row_ids=True,
        max_rows_per_file=5,
        data_storage_version=STORAGE_VERSION,
        **kwargs,
    )


def _snapshot(uri: str, version: int) -> dict[int, tuple[Any, ...]]:
    """pylance's view of a version: row id -> the row's values."""
    if version == 0:
        return {}
    table = lance.dataset(uri, version=version).to_table(with_row_id=True)
    names = [n for n in table.column_names if n != "_rowid"]
    ids = table.column("_rowid").to_pylist()
    values = zip(*(table.column(n).to_pylist() for n in names), strict=True)
    return dict(zip(ids, values, strict=True))


def _expected(uri: str, version: int) -> Counter[Change]:
    """What ``version`` changed, from the two snapshots alone."""
    old, new = _snapshot(uri, version - 1), _snapshot(uri, version)
    out: Counter[Change] = Counter()
    for rid in old.keys() - new.keys():
        out[(*old[rid], rid, "delete", version)] += 1
    for rid in new.keys() - old.keys():
        out[(*new[rid], rid, "insert", version)] += 1
    for rid in old.keys() & new.keys():
        if old[rid] != new[rid]:
            out[(*old[rid], rid, "update_preimage", version)] += 1
            out[(*new[rid], rid, "update_postimage", version)] += 1
    return out


def _feed(uri: str, start: int, end: int | None = None, **kwargs: Any) -> Counter[Change]:
    table = ll.dataset(uri).changes(start, end, with_row_id=True, **kwargs).read_all()
    table = table.drop_columns(["_commit_timestamp"])
    return Counter(zip(*(c.to_pylist() for c in table.columns), strict=True))


# -- random histories, by either library ---------------------------------------------


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=histories.steps(), by_pylance=st.booleans())
def test_the_feed_is_the_difference_of_consecutive_snapshots(
    tmp_path_factory: pytest.TempPathFactory, steps: list[histories.Step], by_pylance: bool
) -> None:
    """Random histories written step by step by either library: for every range of
    versions, the feed is the union of each commit's snapshot difference."""
    uri = str(tmp_path_factory.mktemp("feed") / "ds")
    _create(lance if by_pylance else ll, uri, list(range(12)))
    for number, step in enumerate(steps):
        histories.apply(step, uri, number + 1)
    latest = ll.dataset(uri).version
    per_commit = {v: _expected(uri, v) for v in range(1, latest + 1)}
    for start in range(1, latest + 1):
        for end in range(start, latest + 1):
            want: Counter[Change] = Counter()
            for version in range(start, end + 1):
                want += per_commit[version]
            assert _feed(uri, start, end) == want, (start, end, steps)


# -- shape of the feed -----------------------------------------------------------------


def _history(tmp_path: Path) -> str:
    """v1 create 0..9 (two fragments), v2 append 10..11, v3 delete k=10, v4 update
    k in (2, 11), v5 upsert 3 and a new 101."""
    uri = str(tmp_path / "ds")
    _create(ll, uri, list(range(10)))
    ll.write_dataset(_rows([10, 11], 0), uri, mode="append")
    ds = ll.dataset(uri)
    ds.delete("k = 10")
    ds.update({"v": "7"}, where="k = 2 or k = 11")
    ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(
        _rows([3, 101], 9)
    )
    return uri


def test_columns_change_types_and_commit_columns(tmp_path: Path) -> None:
    uri = _history(tmp_path)
    reader = ll.dataset(uri).changes(2, columns=["v"], filter="_change_type <> 'insert'")
    assert reader.schema == pa.schema(
        [
            pa.field("v", pa.int64()),
            pa.field("_change_type", pa.string(), nullable=False),
            pa.field("_commit_version", pa.int64(), nullable=False),
            pa.field("_commit_timestamp", pa.timestamp("us", tz="UTC"), nullable=False),
        ]
    )
    table = reader.read_all()
    assert table.column("_change_type").to_pylist() == [
        "delete",
        "update_preimage",
        "update_preimage",
        "update_postimage",
        "update_postimage",
        "update_preimage",
        "update_postimage",
    ]
    assert table.column("v").to_pylist() == [0, 0, 0, 7, 7, 0, 9]
    assert table.column("_commit_version").to_pylist() == [3, 4, 4, 4, 4, 5, 5]
    # Each commit's time, as pylance lists its versions (to the millisecond: pylance
    # rounds its datetimes through a float).
    listed = {
        v["version"]: v["timestamp"].astimezone(timezone.utc) for v in lance.dataset(uri).versions()
    }
    for version, stamp in zip(
        table.column("_commit_version").to_pylist(),
        table.column("_commit_timestamp").to_pylist(),
        strict=True,
    ):
        assert abs((stamp - listed[version]).total_seconds()) < 1e-3


def test_the_filter_reads_columns_it_does_not_output(tmp_path: Path) -> None:
    uri = _history(tmp_path)
    table = ll.dataset(uri).changes(1, columns=["v"], filter="k >= 11").read_all()
    assert table.column("_change_type").to_pylist() == [
        "insert",
        "update_preimage",
        "update_postimage",
        "insert",
    ]
    assert table.column_names[0] == "v"
    assert table.column("v").to_pylist() == [0, 0, 7, 9]


def test_batches_are_cut_at_batch_size(tmp_path: Path) -> None:
    uri = _history(tmp_path)
    batches = list(ll.dataset(uri).changes(1, 1, batch_size=3))
    assert all(0 < b.num_rows <= 3 for b in batches)
    assert pa.Table.from_batches(batches).column("k").to_pylist() == list(range(10))


def test_a_commit_that_moves_or_touches_no_rows_shows_nothing(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _create(ll, uri, list(range(20)))
    ds = ll.dataset(uri)
    ds.create_scalar_index("k", "BTREE")
    ds.tags.create("t", 1)
    ds.optimize.compact_files(target_rows_per_fragment=100)
    assert ll.dataset(uri).version >= 3
    assert ll.dataset(uri).changes(2).read_all().num_rows == 0


def test_only_touched_fragments_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uri = str(tmp_path / "ds")
    _create(ll, uri, list(range(50)))  # ten fragments of five rows
    ll.dataset(uri).update({"v": "1"}, where="k = 12")
    opened: list[int] = []
    taken: list[int] = []
    real_ids, real_take, real_read = (
        DatasetStore.read_row_ids,
        FragmentReader.take,
        FragmentReader.read,
    )

    def read_row_ids(self: DatasetStore, fragment: Any) -> Any:
        opened.append(fragment.id)
        return real_ids(self, fragment)

    def take(self: FragmentReader, names: Any, rows: Any) -> Any:
        taken.append(self.fragment.id)
        return real_take(self, names, rows)

    def read(self: FragmentReader, names: Any, start: int, stop: int) -> Any:
        taken.append(self.fragment.id)
        return real_read(self, names, start, stop)

    monkeypatch.setattr(DatasetStore, "read_row_ids", read_row_ids)
    monkeypatch.setattr(FragmentReader, "take", take)
    monkeypatch.setattr(FragmentReader, "read", read)
    table = ll.dataset(uri).changes(2).read_all()
    assert table.column("_change_type").to_pylist() == ["update_preimage", "update_postimage"]
    assert sorted(set(opened)) == [2, 10]  # the row's old fragment and its new one
    assert sorted(taken) == [2, 10]


def test_an_added_column_is_null_before_it_existed_and_adding_it_updates(
    tmp_path: Path,
) -> None:
    """pylance records ``add_columns`` as an update of every row (its lineage and its
    ``delta()`` say so); the feed follows the lineage."""
    uri = str(tmp_path / "ds")
    _create(ll, uri, [1, 2])
    ll.write_dataset(_rows([3]), uri, mode="append")
    ll.dataset(uri).add_columns({"w": "k * 10"})
    table = ll.dataset(uri).changes(2).read_all()
    assert table.column_names[:3] == ["k", "v", "w"]
    rows = list(
        zip(
            table.column("k").to_pylist(),
            table.column("w").to_pylist(),
            table.column("_change_type").to_pylist(),
            strict=True,
        )
    )
    assert rows[0] == (3, None, "insert")
    assert (1, None, "update_preimage") in rows
    assert (1, 10, "update_postimage") in rows
    updated = lance.dataset(uri).delta(begin_version=2, end_version=3).get_updated_rows()
    assert updated.read_all().num_rows == 3


def test_overwrite_deletes_every_row_and_inserts_the_new_ones(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _create(ll, uri, [1, 2])
    ll.write_dataset(_rows([5], 1), uri, mode="overwrite")
    assert _feed(uri, 2) == _expected(uri, 2)
    types = Counter(ll.dataset(uri).changes(2).read_all().column("_change_type").to_pylist())
    assert types == {"delete": 2, "insert": 1}


def test_restore_undoes_deletes_and_updates(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _create(ll, uri, list(range(6)))
    ds = ll.dataset(uri)
    ds.delete("k = 1")
    ds.update({"v": "5"}, where="k = 4")
    ll.dataset(uri, version=1).restore()
    assert ll.dataset(uri).version == 4
    assert _feed(uri, 4) == _expected(uri, 4)
    assert sorted(c[3] for c in _feed(uri, 4)) == [
        "insert",
        "update_postimage",
        "update_preimage",
    ]


# -- what cannot be told is refused --------------------------------------------------


def test_without_stable_row_ids_the_feed_is_refused(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ll.write_dataset(_rows([1, 2]), uri)
    ll.write_dataset(_rows([3]), uri, mode="append")
    with pytest.raises(ChangeFeedError, match="enable_stable_row_ids=True"):
        ll.dataset(uri).changes(2).read_all()


def test_a_cleaned_up_version_is_named(tmp_path: Path) -> None:
    uri = _history(tmp_path)
    ll.dataset(uri).cleanup_old_versions(older_than=timedelta(0), retain_versions=2)
    with pytest.raises(VersionNotFoundError, match="version 3"):
        ll.dataset(uri).changes(4)
    assert _feed(uri, 5) == _expected(uri, 5)


def test_a_column_dropped_and_added_again_is_refused_across_the_change(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    _create(ll, uri, [1, 2])
    ds = ll.dataset(uri)
    ds.update({"v": "3"}, where="k = 1")  # v2
    ds.drop_columns(["v"])  # v3
    ds.add_columns({"v": "k + 100"})  # v4
    ds.update({"v": "0"}, where="k = 2")  # v5
    with pytest.raises(ChangeFeedError, match="column 'v' is not the same column in version 1"):
        ll.dataset(uri).changes(2).read_all()
    assert _feed(uri, 5) == _expected(uri, 5)
    # Without the replaced column, the range reads.
    assert ll.dataset(uri).changes(2, columns=["k"]).read_all().num_rows > 0


def test_an_overwrite_with_another_schema_is_refused_across_it(tmp_path: Path) -> None:
    """The overwrite numbers its fields afresh: field 0 was ``k`` and is ``name`` now,
    so the deleted rows cannot be shown in the new columns."""
    uri = str(tmp_path / "ds")
    _create(ll, uri, [1, 2])
    other = pa.table({"name": ["a"], "k": pa.array([5], pa.int64())})
    ll.write_dataset(other, uri, mode="overwrite")
    for columns in (None, ["k"]):
        with pytest.raises(ChangeFeedError, match="is not the same column in version 1"):
            ll.dataset(uri).changes(2, columns=columns).read_all()
    ll.write_dataset(other, uri, mode="append")
    assert _feed(uri, 3) == _expected(uri, 3)


@pytest.mark.parametrize(
    ("start", "end", "error", "match"),
    [
        (0, None, ArgumentError, "versions start at 1"),
        (3, 2, ArgumentError, "after end_version 2"),
        (1, 9, VersionNotFoundError, "version 9"),
        ("1", None, ArgumentError, "must be a version number"),
    ],
)
def test_bad_ranges(tmp_path: Path, start: Any, end: Any, error: type, match: str) -> None:
    uri = _history(tmp_path)
    with pytest.raises(error, match=match):
        ll.dataset(uri).changes(start, end)


def test_bad_arguments(tmp_path: Path) -> None:
    uri = _history(tmp_path)
    ds = ll.dataset(uri)
    with pytest.raises(SchemaError, match="no column named 'nope'"):
        ds.changes(1, columns=["nope"])
    with pytest.raises(ArgumentError, match="batch_size"):
        ds.changes(1, batch_size=0)
    with pytest.raises(ValueError, match="unknown column"):
        ds.changes(1, filter="nope = 1")
    with pytest.raises(TypeError):
        ds.changes(1, colums=["k"])  # type: ignore[call-arg]
