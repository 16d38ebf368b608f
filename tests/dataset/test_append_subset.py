"""Appends that leave out nullable columns, pylance's LanceSchema and Project, and
literals in updates and filters (typed literals in double quotes, array literals,
``arrow_cast`` to list types), each checked against pylance."""

from __future__ import annotations

import datetime
import pickle
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from lance.schema import LanceSchema as TheirSchema

import lancelet as ll
from lancelet.errors import AppendSchemaError, FilterError
from lancelet.schema import LanceSchema
from tests.versions import STORAGE_VERSION

FULL = pa.table(
    {
        "a": pa.array([1, 2, 3], pa.int64()),
        "b": pa.array(["x", "y", "z"]),
        "s": pa.array([{"p": 1, "q": "u"}] * 3),
        "v": pa.array([[1.0, 2.0]] * 3, pa.list_(pa.float32(), 2)),
    }
)


def _data_fields(ds: lance.LanceDataset | ll.LanceDataset) -> list[list[list[int]]]:
    return [[list(f.fields) for f in frag.data_files()] for frag in ds.get_fragments()]


@pytest.mark.parametrize("given", [["a"], ["s", "a"], ["b", "v"]], ids=str)
def test_append_leaving_out_columns_as_pylance(tmp_path: Path, given: list[str]) -> None:
    part = FULL.select(given)
    theirs = lance.write_dataset(FULL, tmp_path / "p", data_storage_version=STORAGE_VERSION)
    ours = ll.write_dataset(FULL, tmp_path / "l", data_storage_version=STORAGE_VERSION)
    theirs.insert(part)
    ours.insert(part)
    want = lance.dataset(tmp_path / "p").to_table()
    assert ll.dataset(tmp_path / "l").to_table() == want
    assert lance.dataset(tmp_path / "l").to_table() == want  # pylance reads lancelet's
    assert ll.dataset(tmp_path / "p").to_table() == want  # and lancelet pylance's
    # The new fragment's file holds the given columns only (in the dataset's order).
    assert sorted(_data_fields(ours)[-1][0]) == sorted(_data_fields(theirs)[-1][0])
    theirs.delete("a = 2 OR b = 'z'")
    ours.delete("a = 2 OR b = 'z'")
    assert ours.to_table(columns=["b", "a"]) == theirs.to_table(columns=["b", "a"])


def test_append_to_an_empty_dataset_with_deletes(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("other", pa.int64())])
    ds = ll.write_dataset([], tmp_path / "ds", schema=schema)
    ds.insert(pa.table({"id": [1, 2, 3, 4, 5]}))
    ds.delete("id in (1, 2)")
    assert ds.to_table() == pa.table({"id": [3, 4, 5], "other": pa.nulls(3, pa.int64())})


def test_append_must_carry_required_and_known_columns(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("a", pa.int64()), pa.field("b", pa.string(), nullable=False)])
    ds = ll.write_dataset(pa.table({"a": [1], "b": ["x"]}, schema=schema), tmp_path / "ds")
    with pytest.raises(AppendSchemaError, match=r"missing=\['b'\]"):
        ds.insert(pa.table({"a": [2]}))
    with pytest.raises(AppendSchemaError, match=r"unexpected=\['c'\]"):
        ds.insert(pa.table({"b": ["y"], "c": [2]}))
    theirs = lance.write_dataset(pa.table({"a": [1], "b": ["x"]}, schema=schema), tmp_path / "p")
    with pytest.raises(OSError, match="missing"):
        theirs.insert(pa.table({"a": [2]}))
    assert ds.version == 1


def test_lance_schema_as_pylance(tmp_path: Path) -> None:
    ll.write_dataset(FULL, tmp_path / "ds")
    ours, theirs = (
        ll.dataset(tmp_path / "ds").lance_schema,
        lance.dataset(tmp_path / "ds").lance_schema,
    )

    def shape(fields: list[Any]) -> list[Any]:
        return [(f.name(), f.id(), shape(f.children())) for f in fields]

    assert shape(ours.fields()) == shape(theirs.fields())
    assert ours.to_pyarrow() == theirs.to_pyarrow() == FULL.schema
    assert LanceSchema.from_pyarrow(FULL.schema) == ours
    assert shape(LanceSchema.from_pyarrow(FULL.schema).fields()) == shape(
        TheirSchema.from_pyarrow(FULL.schema).fields()
    )
    assert pickle.loads(pickle.dumps(ours)) == ours
    assert repr(ours).startswith("Schema {")
    field = ours.field("s.q")
    assert field is not None and field.id() == theirs.field("s.q").id()
    assert field.to_arrow() == pa.field("q", pa.string())
    assert ours.field("nope") is None


@pytest.mark.parametrize("names", [["a"], ["b", "a"], ["c", "d"]], ids=str)
def test_project_as_pylance(tmp_path: Path, names: list[str]) -> None:
    table = pa.table({"a": [1, 2, 3], "b": [4, 5, 6]})
    new = pa.schema([(n, pa.int64()) for n in names])
    theirs = lance.write_dataset(table, tmp_path / "p")
    ours = ll.write_dataset(table, tmp_path / "l")
    theirs = lance.LanceDataset.commit(
        theirs, lance.LanceOperation.Project(TheirSchema.from_pyarrow(new)), read_version=1
    )
    ours = ll.LanceDataset.commit(
        ours, ll.LanceOperation.Project(LanceSchema.from_pyarrow(new)), read_version=1
    )
    assert ours.to_table() == theirs.to_table()
    assert lance.dataset(tmp_path / "l").to_table() == theirs.to_table()


def test_merge_columns_schema_commits(tmp_path: Path) -> None:
    ds = ll.write_dataset(pa.table({"a": [1, 2]}), tmp_path / "ds")
    fragment = ds.get_fragments()[0]
    metadata, schema = fragment.merge_columns(
        lambda b: pa.record_batch([pa.compute.multiply(b["a"], 2)], ["c"]), columns=["a"]
    )
    assert isinstance(schema, LanceSchema)
    merged = ll.LanceDataset.commit(
        tmp_path / "ds", ll.LanceOperation.Merge([metadata], schema), read_version=1
    )
    assert merged.to_table() == pa.table({"a": [1, 2], "c": [2, 4]})


TYPED = pa.table(
    {
        "d": pa.array([datetime.date(2021, 1, 1), datetime.date(2021, 1, 3)]),
        "ts": pa.array(
            [datetime.datetime(2021, 1, 1), datetime.datetime(2021, 1, 3)], pa.timestamp("ms")
        ),
        "v": pa.array([[1.0, 2.0]] * 2, pa.list_(pa.float32(), 2)),
        "l": pa.array([[1], [2, 3]]),
    }
)


@pytest.mark.parametrize(
    "filter", ['ts > TIMESTAMP "2021-01-02 00:00:00"', 'd > DATE "2021-01-02"', '"d" IS NULL']
)
def test_typed_literals_in_double_quotes(tmp_path: Path, filter: str) -> None:
    lance.write_dataset(TYPED, tmp_path / "ds")
    assert ll.dataset(tmp_path / "ds").to_table(filter=filter) == lance.dataset(
        tmp_path / "ds"
    ).to_table(filter=filter)


def test_array_literals_in_updates(tmp_path: Path) -> None:
    updates = {"v": "[42.0, 43.0]", "l": "[5, 6]", "ts": 'TIMESTAMP "2022-02-02 00:00:00"'}
    theirs = lance.write_dataset(TYPED, tmp_path / "p")
    ours = ll.write_dataset(TYPED, tmp_path / "l")
    assert ours.update(updates, where="d < DATE '2021-01-02'") == theirs.update(
        updates, where="d < DATE '2021-01-02'"
    )
    assert ours.to_table() == theirs.to_table()
    for bad in ("[1, 2.5]", "[]", "[NULL, 1]", "[l]"):
        with pytest.raises(FilterError):
            ours.update({"l": bad})


def test_arrow_cast_of_null_to_list_types(tmp_path: Path) -> None:
    theirs = lance.write_dataset(pa.table({"id": [1, 2]}), tmp_path / "p")
    ours = ll.write_dataset(pa.table({"id": [1, 2]}), tmp_path / "l")
    for name in ("FixedSizeList(4, Float32)", "List(Int64)"):
        column = {name.split("(")[0].lower(): f"arrow_cast(NULL, '{name}')"}
        theirs.add_columns(column)
        ours.add_columns(column)
    assert ours.to_table() == theirs.to_table()
    with pytest.raises(FilterError, match="only NULL and lists"):
        ours.to_table(columns={"x": "arrow_cast(id, 'List(Int64)')"})


def test_filter_errors_read_as_pylance_s(tmp_path: Path) -> None:
    ds = ll.write_dataset(pa.table({"str": ["a"], "i": [1]}), tmp_path / "ds")
    for bad in ("str BETWEEN 10 AND 20", "str > 10", "str AN"):
        with pytest.raises(FilterError, match="^Invalid user input: ") as raised:
            ds.to_table(filter=bad)
        assert str(raised.value).count("Invalid user input") == 1
    with pytest.raises(FilterError, match="No field named foo"):
        ds.to_table(filter="foo = 7")
    with pytest.raises(ValueError, match="Offset must be non-negative"):
        ds.to_table(offset=-1)
    with pytest.raises(ValueError, match="Limit must be non-negative"):
        ds.to_table(limit=-1)


def test_field_metadata_as_pylance(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("a", pa.int64(), metadata={"key": "value"})])
    ll.write_dataset(pa.table({"a": [1]}, schema=schema), tmp_path / "ds")
    ours = ll.dataset(tmp_path / "ds").lance_schema.fields()[0]
    theirs = lance.dataset(tmp_path / "ds").lance_schema.fields()[0]
    assert ours.metadata == theirs.metadata == {"key": "value"}
