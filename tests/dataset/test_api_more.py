"""pylance's smaller dataset calls: ``len(ds)``, ``ds.stats``, ``ds.insert``,
``ds.sample`` and ``ds.tags.list_ordered``, each checked against pylance on the same
dataset."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from tests.dataset.util import keyed_table

TABLE = keyed_table(0, 50)


@pytest.fixture
def uri(tmp_path: Path) -> str:
    """50 rows in fragments of 20, 20 and 10 rows, rows 0-4 and 20-21 deleted."""
    path = str(tmp_path / "ds")
    ll.write_dataset(TABLE, path, max_rows_per_file=20)
    ll.dataset(path).delete("k < 5 OR k = 20 OR k = 21")
    return path


def _twin(uri: str, tmp_path: Path) -> str:
    """A byte-for-byte copy, for a call that changes the dataset to be made by both."""
    copy = str(tmp_path / "twin")
    shutil.copytree(uri, copy)
    return copy


def test_len_counts_live_rows(uri: str) -> None:
    assert len(ll.dataset(uri)) == len(lance.dataset(uri)) == 43


@pytest.mark.parametrize("max_rows_per_group", [1, 10, 11, 19, 20, 21, 1024])
def test_dataset_stats(uri: str, max_rows_per_group: int) -> None:
    ours = ll.dataset(uri).stats.dataset_stats(max_rows_per_group)
    assert ours == lance.dataset(uri).stats.dataset_stats(max_rows_per_group)


def test_dataset_stats_default(uri: str) -> None:
    ours = ll.dataset(uri).stats.dataset_stats()
    assert ours == lance.dataset(uri).stats.dataset_stats()
    assert ours == {"num_deleted_rows": 7, "num_fragments": 3, "num_small_files": 3}


@pytest.mark.local_files("lays out or copies directories with shutil for both libraries")
@pytest.mark.parametrize("mode", ["append", "overwrite"])
def test_insert_moves_the_dataset_to_the_new_version(uri: str, tmp_path: Path, mode: str) -> None:
    new = keyed_table(100, 130)
    twin = _twin(uri, tmp_path)
    theirs = lance.dataset(twin)
    theirs.insert(new, mode=mode, max_rows_per_file=7)
    ours = ll.dataset(uri)
    ours.insert(new, mode=mode, max_rows_per_file=7)

    assert ours.version == theirs.version
    assert ours.to_table().equals(theirs.to_table())
    assert ours.stats.dataset_stats() == theirs.stats.dataset_stats()
    # pylance reads what lancelet wrote as it reads its own.
    assert lance.dataset(uri).to_table().equals(theirs.to_table())


def test_insert_default_mode_appends(uri: str) -> None:
    ours = ll.dataset(uri)
    ours.insert(keyed_table(100, 110))
    want = pa.concat_tables([lance.dataset(uri, version=2).to_table(), keyed_table(100, 110)])
    assert lance.dataset(uri).to_table().equals(want)
    assert ours.version == 3 and len(ours) == 53


def test_insert_refuses_options(uri: str) -> None:
    ours = ll.dataset(uri)
    with pytest.raises(TypeError):
        ours.insert(keyed_table(100, 110), not_an_option=1)
    with pytest.raises(TypeError, match="commit_lock"):
        ours.insert(keyed_table(100, 110), commit_lock=object())
    # pylance raises OSError here too.
    with pytest.raises(OSError, match="already exists"):
        lance.dataset(uri).insert(keyed_table(100, 110), mode="create")
    with pytest.raises(OSError, match="already exists"):
        ours.insert(keyed_table(100, 110), mode="create")
    assert ll.dataset(uri).version == ours.version == 2


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    return list(zip(*(table[name].to_pylist() for name in table.column_names), strict=True))


@pytest.mark.parametrize("num_rows", [0, 1, 10, 43])
def test_sample_draws_distinct_rows_of_the_table(uri: str, num_rows: int) -> None:
    whole = lance.dataset(uri).to_table()
    got = ll.dataset(uri).sample(num_rows)
    theirs = lance.dataset(uri).sample(num_rows)
    assert got.schema == theirs.schema == whole.schema
    assert got.num_rows == theirs.num_rows == num_rows
    keys = got["k"].to_pylist()
    assert len(set(keys)) == num_rows
    by_key = {row[0]: row for row in _rows(whole)}
    assert all(by_key[row[0]] == row for row in _rows(got))


def test_sample_is_uniform_enough(uri: str) -> None:
    ds = ll.dataset(uri)
    seen: set[int] = set()
    # 250 draws of 5 of the 43 rows miss a given row with probability (38/43)^250,
    # about 4e-14 (60 draws, as before, missed one of the rows in 4% of runs).
    for _ in range(250):
        seen.update(ds.sample(5, columns=["k"])["k"].to_pylist())
    assert seen == set(lance.dataset(uri).to_table()["k"].to_pylist())


def test_sample_in_order_and_projected(uri: str) -> None:
    columns = ["s", "k"]
    got = ll.dataset(uri).sample(12, columns=columns, randomize_order=False)
    theirs = lance.dataset(uri).sample(12, columns=columns, randomize_order=False)
    assert got.schema == theirs.schema
    keys = got["k"].to_pylist()
    assert keys == sorted(keys) and len(set(keys)) == 12


def test_sample_with_expressions(uri: str) -> None:
    columns = {"k2": "k * 2"}
    got = ll.dataset(uri).sample(5, columns=columns)
    theirs = lance.dataset(uri).sample(5, columns=columns)
    assert got.schema == theirs.schema
    live = {2 * k for k in lance.dataset(uri).to_table()["k"].to_pylist()}
    assert set(got["k2"].to_pylist()) <= live


@pytest.mark.parametrize("num_rows", [44, -1])
def test_sample_too_many_rows(uri: str, num_rows: int) -> None:
    with pytest.raises(ValueError):
        lance.dataset(uri).sample(num_rows)
    with pytest.raises(ValueError):
        ll.dataset(uri).sample(num_rows)


def test_sample_refuses_keywords(uri: str) -> None:
    with pytest.raises(TypeError):
        lance.dataset(uri).sample(3, filter="k > 3")
    with pytest.raises(TypeError):
        ll.dataset(uri).sample(3, filter="k > 3")  # type: ignore[call-arg]


@pytest.mark.parametrize("order", [None, "asc", "desc"])
def test_tags_list_ordered(uri: str, order: str | None) -> None:
    ds = ll.dataset(uri)
    ds.tags.create("x", 1)
    lance.dataset(uri).tags.create("y", 2)
    ds.tags.create("w", 1)
    ds.tags.create("b", 2)
    ours = ll.dataset(uri).tags.list_ordered(order)
    theirs = lance.dataset(uri).tags.list_ordered(order)
    assert ours == theirs
    if order == "asc":
        assert [name for name, _ in ours] == ["w", "x", "b", "y"]


def test_tags_list_ordered_empty_and_bad_order(uri: str) -> None:
    assert ll.dataset(uri).tags.list_ordered() == lance.dataset(uri).tags.list_ordered() == []
    with pytest.raises(ValueError, match="Invalid sort order"):
        lance.dataset(uri).tags.list_ordered("up")
    with pytest.raises(ValueError, match="Invalid sort order"):
        ll.dataset(uri).tags.list_ordered("up")


# -- LanceDataset.drop: delete a whole dataset -------------------------------------------


def _dataset_with_extra_file(path: Path) -> str:
    ll.write_dataset(TABLE, str(path), max_rows_per_file=20)
    (path / "notes.txt").write_text("kept next to the dataset")
    return str(path)


@pytest.mark.local_files("lays out or copies directories with shutil for both libraries")
@pytest.mark.parametrize("drop", [lance.LanceDataset.drop, ll.LanceDataset.drop])
def test_drop_removes_the_dataset_and_everything_under_it(tmp_path: Path, drop: Any) -> None:
    uri = _dataset_with_extra_file(tmp_path / "ds")
    drop(uri)
    assert not (tmp_path / "ds").exists()


def test_drop_what_pylance_wrote(tmp_path: Path) -> None:
    lance.write_dataset(TABLE, str(tmp_path / "ds"))
    ll.LanceDataset.drop(tmp_path / "ds")
    assert not (tmp_path / "ds").exists()
    with pytest.raises(ValueError):
        lance.dataset(str(tmp_path / "ds"))


@pytest.mark.parametrize("drop", [lance.LanceDataset.drop, ll.LanceDataset.drop])
def test_drop_missing_path(tmp_path: Path, drop: Any) -> None:
    with pytest.raises(OSError):
        drop(str(tmp_path / "nope"))
    drop(str(tmp_path / "nope"), ignore_not_found=True)


@pytest.mark.local_files("lays out or copies directories with shutil for both libraries")
@pytest.mark.parametrize("drop", [lance.LanceDataset.drop, ll.LanceDataset.drop])
def test_drop_refuses_what_is_not_a_dataset_root(tmp_path: Path, drop: Any) -> None:
    plain = tmp_path / "plain" / "data"
    plain.mkdir(parents=True)
    (plain / "x.lance").write_bytes(b"data")
    bad = tmp_path / "bad" / "_versions"
    bad.mkdir(parents=True)
    (bad / "1.manifest").write_bytes(b"garbage")
    _dataset_with_extra_file(tmp_path / "parent" / "ds")
    for path in ("plain", "bad", "parent"):
        with pytest.raises(ValueError, match="Refusing to drop"):
            drop(str(tmp_path / path), ignore_not_found=True)
    assert (plain / "x.lance").exists() and (bad / "1.manifest").exists()
    assert ll.dataset(str(tmp_path / "parent" / "ds")).to_table().equals(TABLE)


# -- ds.stats.data_stats: bytes on disk per field ----------------------------------------


def _data_stats(ds: Any) -> list[tuple[int, int]]:
    return [(f.id, f.bytes_on_disk) for f in ds.stats.data_stats().fields]


NESTED = pa.table(
    {
        "a": pa.array(range(3000), pa.int64()),
        "b": [str(i) * 3 for i in range(3000)],
        "s": [{"x": i, "y": [i] * (i % 3)} for i in range(3000)],
        "v": pa.FixedSizeListArray.from_arrays(pa.array(range(6000), pa.float32()), 2),
    }
)


@pytest.mark.parametrize("version", ["legacy", "2.0", "2.1", "2.2"])
def test_data_stats(tmp_path: Path, version: str) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(NESTED, uri, max_rows_per_file=1000, data_storage_version=version)
    lance.dataset(uri).add_columns({"z": "a * 2"})
    lance.dataset(uri).delete("a < 10")
    assert _data_stats(ll.dataset(uri)) == _data_stats(lance.dataset(uri))


def test_data_stats_of_what_lancelet_wrote_after_a_drop(uri: str) -> None:
    ll.dataset(uri).drop_columns(["s"])
    ours = _data_stats(ll.dataset(uri))
    assert ours == _data_stats(lance.dataset(uri))
    assert [i for i, _ in ours] == [f.id for f in ll.dataset(uri).lance_schema.inner.fields]
