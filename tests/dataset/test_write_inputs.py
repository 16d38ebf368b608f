"""The kinds of data pylance's ``write_dataset`` accepts, written by pylance and by
lancelet alike: each writes the same input, and both datasets read back the same
table, by pylance and by lancelet.  A ``LanceDataset`` passed where a URI is expected
writes to that dataset."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pyarrow.dataset as pa_ds
import pytest

import lancelet as ll
from tests.versions import STORAGE_VERSION

ROWS = [
    {"id": 1, "name": "a", "score": 0.5},
    {"id": 2, "name": None, "score": 1.5},
    {"id": 3, "name": "c", "score": None},
]
SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()), ("score", pa.float32())])


class DataFrame:
    """A stand-in for a polars DataFrame: pylance knows one by its module and class
    name and reads it with ``to_arrow()``."""

    __module__ = "polars.dataframe.frame"

    def __init__(self, table: pa.Table) -> None:
        self._table = table

    def to_arrow(self) -> pa.Table:
        return self._table


def _batches() -> Iterator[pa.RecordBatch]:
    table = pa.Table.from_pylist(ROWS)  # int64, string, double
    yield from table.to_batches(max_chunksize=2)


def _write_both(
    tmp_path: Path, make: Callable[[str], Any], **kwargs: Any
) -> tuple[lance.LanceDataset, ll.LanceDataset]:
    """``make("lance")`` and ``make("lancelet")`` build the input for each writer."""
    theirs = lance.write_dataset(
        make("lance"), tmp_path / "theirs", data_storage_version=STORAGE_VERSION, **kwargs
    )
    ours = ll.write_dataset(
        make("lancelet"), tmp_path / "ours", data_storage_version=STORAGE_VERSION, **kwargs
    )
    return theirs, ours


def _assert_same(theirs: lance.LanceDataset, ours: ll.LanceDataset) -> None:
    expected = theirs.to_table()
    got = ours.to_table()
    assert got.schema == expected.schema
    assert got.equals(expected)
    # pylance reads what lancelet wrote.
    read_back = lance.dataset(ours.uri)
    read_back.validate()
    assert read_back.to_table().equals(expected)


def _source(tmp_path: Path) -> Path:
    uri = tmp_path / "source"
    table = pa.Table.from_pylist(ROWS * 50, schema=SCHEMA)
    lance.write_dataset(table, uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=40)
    return uri


@pytest.mark.parametrize("with_schema", [False, True])
def test_list_of_dicts(tmp_path: Path, with_schema: bool) -> None:
    kwargs = {"schema": SCHEMA} if with_schema else {}
    theirs, ours = _write_both(tmp_path, lambda _: list(ROWS), **kwargs)
    _assert_same(theirs, ours)
    if with_schema:
        assert ours.schema == SCHEMA


@pytest.mark.parametrize("with_schema", [False, True])
def test_dict_of_lists(tmp_path: Path, with_schema: bool) -> None:
    columns = {name: [row[name] for row in ROWS] for name in ROWS[0]}
    kwargs = {"schema": SCHEMA} if with_schema else {}
    theirs, ours = _write_both(tmp_path, lambda _: dict(columns), **kwargs)
    _assert_same(theirs, ours)


def test_polars_like_frame(tmp_path: Path) -> None:
    table = pa.Table.from_pylist(ROWS, schema=SCHEMA)
    theirs, ours = _write_both(tmp_path, lambda _: DataFrame(table))
    _assert_same(theirs, ours)


def test_polars_frame(tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"id": [1, 2, 3], "name": ["a", None, "c"]})
    theirs, ours = _write_both(tmp_path, lambda _: frame)
    _assert_same(theirs, ours)


def test_lance_dataset(tmp_path: Path) -> None:
    src = _source(tmp_path)
    sources = {"lance": lance.dataset(src), "lancelet": ll.dataset(src)}
    theirs, ours = _write_both(tmp_path, lambda who: sources[who], max_rows_per_file=64)
    _assert_same(theirs, ours)
    assert len(ours.get_fragments()) == len(theirs.get_fragments())


def test_lance_scanner(tmp_path: Path) -> None:
    src = _source(tmp_path)

    def make(who: str) -> Any:
        opened = lance.dataset(src) if who == "lance" else ll.dataset(src)
        return opened.scanner(columns=["name", "id"], filter="id > 1")

    theirs, ours = _write_both(tmp_path, make)
    _assert_same(theirs, ours)
    assert ours.schema.names == ["name", "id"]


def test_pyarrow_dataset(tmp_path: Path) -> None:
    table = pa.Table.from_pylist(ROWS * 3, schema=SCHEMA)
    theirs, ours = _write_both(tmp_path, lambda _: pa_ds.dataset(table))
    _assert_same(theirs, ours)


def test_pyarrow_scanner(tmp_path: Path) -> None:
    table = pa.Table.from_pylist(ROWS * 3, schema=SCHEMA)

    def make(_: str) -> pa_ds.Scanner:
        return pa_ds.dataset(table).scanner(columns=["score", "id"], filter=pa_ds.field("id") < 3)

    theirs, ours = _write_both(tmp_path, make)
    _assert_same(theirs, ours)


def test_pylance_dataset_is_a_pyarrow_dataset(tmp_path: Path) -> None:
    """pylance's own dataset is a ``pyarrow.dataset.Dataset``, which lancelet reads
    through its scanner."""
    src = _source(tmp_path)
    ours = ll.write_dataset(lance.dataset(src), tmp_path / "ours")
    assert ours.to_table().equals(lance.dataset(src).to_table())


def test_batches_cast_to_schema(tmp_path: Path) -> None:
    theirs, ours = _write_both(tmp_path, lambda _: _batches(), schema=SCHEMA)
    _assert_same(theirs, ours)
    assert ours.schema == SCHEMA


def test_batches_cast_from_a_list(tmp_path: Path) -> None:
    theirs, ours = _write_both(tmp_path, lambda _: list(_batches()), schema=SCHEMA)
    _assert_same(theirs, ours)


def test_empty_iterable_with_schema(tmp_path: Path) -> None:
    theirs, ours = _write_both(tmp_path, lambda _: iter([]), schema=SCHEMA)
    _assert_same(theirs, ours)
    assert ours.count_rows() == 0


def test_uncastable_batches_refused(tmp_path: Path) -> None:
    bad = pa.schema([("id", pa.int32()), ("name", pa.int64()), ("score", pa.float32())])
    # pylance's error comes back through its Rust writer as an OSError.
    with pytest.raises((ValueError, OSError), match="does not match the expected schema"):
        lance.write_dataset(_batches(), tmp_path / "theirs", schema=bad)
    with pytest.raises(ll.errors.SchemaError, match="cannot be cast"):
        ll.write_dataset(_batches(), tmp_path / "ours", schema=bad)
    assert not (tmp_path / "ours" / "_versions").exists()


def test_batches_with_other_columns_refused(tmp_path: Path) -> None:
    other = pa.schema([("id", pa.int32()), ("label", pa.string()), ("score", pa.float32())])
    with pytest.raises((ValueError, OSError)):
        lance.write_dataset(_batches(), tmp_path / "theirs", schema=other)
    with pytest.raises(ll.errors.SchemaError):
        ll.write_dataset(_batches(), tmp_path / "ours", schema=other)


def test_non_batches_in_iterable_refused(tmp_path: Path) -> None:
    with pytest.raises((TypeError, OSError), match="Expected RecordBatch"):
        lance.write_dataset([1, 2], tmp_path / "theirs", schema=SCHEMA)
    with pytest.raises(TypeError):
        ll.write_dataset([1, 2], tmp_path / "ours", schema=SCHEMA)


def test_unknown_kind_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        lance.write_dataset(42, tmp_path / "theirs")
    with pytest.raises(TypeError):
        ll.write_dataset(42, tmp_path / "ours")


def test_rows_not_matching_schema_refused(tmp_path: Path) -> None:
    rows = [{"id": "x", "name": "a", "score": 1.0}]
    with pytest.raises((ValueError, TypeError)):
        lance.write_dataset(rows, tmp_path / "theirs", schema=SCHEMA)
    with pytest.raises(ll.errors.SchemaError):
        ll.write_dataset(rows, tmp_path / "ours", schema=SCHEMA)


# -- a LanceDataset where a URI is expected --------------------------------------------


def test_dataset_as_write_uri(tmp_path: Path) -> None:
    first = pa.Table.from_pylist(ROWS, schema=SCHEMA)
    more = pa.Table.from_pylist(ROWS[:2], schema=SCHEMA)
    theirs = lance.write_dataset(first, tmp_path / "theirs", data_storage_version=STORAGE_VERSION)
    ours = ll.write_dataset(first, tmp_path / "ours", data_storage_version=STORAGE_VERSION)
    theirs = lance.write_dataset(more, theirs, mode="append")
    ours = ll.write_dataset(more, ours, mode="append")
    assert ours.version == theirs.version == 2
    _assert_same(theirs, ours)
    theirs = lance.write_dataset(more, theirs, mode="overwrite")
    ours = ll.write_dataset(more, ours, mode="overwrite")
    _assert_same(theirs, ours)


def test_dataset_as_fragments_and_commit_uri(tmp_path: Path) -> None:
    first = pa.Table.from_pylist(ROWS, schema=SCHEMA)
    results: dict[str, Any] = {}
    for name, mod in (("theirs", lance), ("ours", ll)):
        opened = mod.write_dataset(first, tmp_path / name, data_storage_version=STORAGE_VERSION)
        fragments = mod.fragment.write_fragments(first, opened)
        operation = mod.LanceOperation.Append(fragments)
        results[name] = mod.LanceDataset.commit(opened, operation, read_version=1)
    assert results["ours"].version == results["theirs"].version == 2
    _assert_same(results["theirs"], results["ours"])


def test_other_uri_kinds_refused(tmp_path: Path) -> None:
    table = pa.Table.from_pylist(ROWS)
    with pytest.raises(TypeError):
        lance.write_dataset(table, 42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ll.write_dataset(table, 42)  # type: ignore[arg-type]


# -- add_columns from data -------------------------------------------------------------

B_SCHEMA = pa.schema([("b", pa.int64())])


def _open_both(tmp_path: Path, deletes: bool) -> tuple[lance.LanceDataset, ll.LanceDataset]:
    table = pa.table({"a": list(range(10))})
    opened = []
    for name in ("theirs", "ours"):
        uri = tmp_path / name
        lance.write_dataset(table, uri, data_storage_version=STORAGE_VERSION, max_rows_per_file=4)
        if deletes:
            lance.dataset(uri).delete("a = 1 OR a = 6")
        opened.append(uri)
    return lance.dataset(opened[0]), ll.dataset(opened[1])


def _b_batches(rows: int) -> Iterator[pa.RecordBatch]:
    table = pa.table({"b": pa.array(range(100, 100 + rows), pa.int32())})
    yield from table.to_batches(max_chunksize=3)


@pytest.mark.parametrize("deletes", [False, True])
def test_add_columns_from_generator(tmp_path: Path, deletes: bool) -> None:
    theirs, ours = _open_both(tmp_path, deletes)
    rows = theirs.count_rows()
    theirs.add_columns(_b_batches(rows), reader_schema=B_SCHEMA)
    ours.add_columns(_b_batches(rows), reader_schema=B_SCHEMA)
    assert ours.version == theirs.version
    _assert_same(theirs, ours)
    assert ours.schema.field("b").type == pa.int64()


def test_add_columns_from_table(tmp_path: Path) -> None:
    theirs, ours = _open_both(tmp_path, deletes=True)
    values = pa.table({"b": [f"v{i}" for i in range(8)], "c": list(range(8))})
    theirs.add_columns(values)
    ours.add_columns(values)
    _assert_same(theirs, ours)


@pytest.mark.parametrize("rows", [5, 9])
def test_add_columns_wrong_length_refused(tmp_path: Path, rows: int) -> None:
    theirs, ours = _open_both(tmp_path, deletes=True)  # 8 live rows
    values = pa.table({"b": list(range(rows))})
    with pytest.raises(OSError, match="Invalid user input"):
        theirs.add_columns(values)
    with pytest.raises(ll.errors.ArgumentError):
        ours.add_columns(values)
    assert ours.version == theirs.version == 2
    assert ours.schema.names == ["a"]


def test_add_columns_generator_without_schema_refused(tmp_path: Path) -> None:
    theirs, ours = _open_both(tmp_path, deletes=False)
    with pytest.raises(ValueError, match="Must provide schema"):
        theirs.add_columns(_b_batches(10))
    # lancelet takes the schema of the first batch, as its write_dataset does.
    ours.add_columns(_b_batches(10))
    assert ours.to_table().column("b").to_pylist() == list(range(100, 110))


def test_add_columns_options_of_the_other_kind_refused(tmp_path: Path) -> None:
    """pylance passes over ``reader_schema`` given with SQL and ``read_columns`` given
    with data; lancelet refuses what it would not use."""
    _, ours = _open_both(tmp_path, deletes=False)
    with pytest.raises(ll.errors.ArgumentError, match="reader_schema"):
        ours.add_columns({"b": "a * 2"}, reader_schema=B_SCHEMA)
    with pytest.raises(ll.errors.ArgumentError, match="read_columns"):
        ours.add_columns(pa.table({"b": list(range(10))}), read_columns=["a"])
    assert ours.schema.names == ["a"]
