"""Schema, field and table metadata and config updates, against pylance both ways."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import SchemaError
from tests.dataset.util import keyed_table
from tests.dataset.util import snapshot as _snapshot
from tests.storage import copy_tree
from tests.versions import STORAGE_VERSION


@pytest.fixture
def uri(tmp_path: Path) -> str:
    path = str(tmp_path / "ds")
    table = keyed_table(0, 300).replace_schema_metadata({"origin": "test"})
    ll.write_dataset(table, path, max_rows_per_file=100)
    ll.dataset(path).delete("k % 10 = 0")
    return path


class Twins:
    """The dataset and a copy of it: lancelet changes the first, pylance the second."""

    def __init__(self, uri: str) -> None:
        self.ours = uri
        self.theirs = uri + "-pylance"
        copy_tree(uri, self.theirs)

    def apply(self, change: Callable[[Any], Any]) -> Any:
        """Make one change on both; they must return the same and read back the same."""
        got = change(ll.dataset(self.ours))
        assert got == change(lance.dataset(self.theirs))
        self.check()
        return got

    def check(self) -> None:
        ours, theirs = lance.dataset(self.ours), lance.dataset(self.theirs)
        ours.validate()
        assert ours.schema.equals(theirs.schema, check_metadata=True)
        assert ours.metadata == theirs.metadata
        assert ours.config() == theirs.config()
        assert ours.to_table().equals(theirs.to_table())
        # And lancelet reads either the same way.
        for uri in (self.ours, self.theirs):
            mine = ll.dataset(uri)
            assert mine.schema.equals(theirs.schema, check_metadata=True)
            assert mine.schema_metadata == theirs.schema_metadata
            assert mine.metadata == theirs.metadata
            assert mine.config() == theirs.config()


def test_schema_metadata(uri: str) -> None:
    twins = Twins(uri)
    got = twins.apply(lambda ds: ds.update_schema_metadata({"a": "1", "b": "2"}))
    assert got == {"origin": "test", "a": "1", "b": "2"}
    got = twins.apply(lambda ds: ds.update_schema_metadata({"a": None, "absent": None}))
    assert got == {"origin": "test", "b": "2"}
    got = twins.apply(lambda ds: ds.update_schema_metadata({"c": "3", "d": None}, replace=True))
    assert got == {"c": "3"}
    assert lance.dataset(uri).schema.metadata == {b"c": b"3"}
    assert ll.dataset(uri, version=2).schema_metadata == {"origin": "test"}


def test_table_metadata(uri: str) -> None:
    twins = Twins(uri)
    assert ll.dataset(uri).metadata == {}
    got = twins.apply(lambda ds: ds.update_metadata({"author": "me", "x": "1"}))
    assert got == {"author": "me", "x": "1"}
    got = twins.apply(lambda ds: ds.update_metadata({"x": None}))
    assert got == {"author": "me"}
    got = twins.apply(lambda ds: ds.update_metadata({"y": "2", "z": None}, replace=True))
    assert got == {"y": "2"}
    # Table metadata lives beside the schema, not in it.
    assert lance.dataset(uri).schema.metadata == {b"origin": b"test"}


def test_field_metadata_by_path(uri: str) -> None:
    twins = Twins(uri)
    updates = {"k": {"unit": "id"}, "pt.x": {"unit": "m"}, "tags.item": {"kind": "tag"}}
    twins.apply(lambda ds: ds.update_field_metadata(updates))
    schema = lance.dataset(uri).schema
    assert schema.field("k").metadata == {b"unit": b"id"}
    assert schema.field("pt").type.field("x").metadata == {b"unit": b"m"}
    assert schema.field("tags").type.value_field.metadata == {b"kind": b"tag"}
    twins.apply(lambda ds: ds.update_field_metadata({"k": {"more": "yes", "unit": None}}))
    assert lance.dataset(uri).schema.field("k").metadata == {b"more": b"yes"}
    twins.apply(lambda ds: ds.update_field_metadata({"pt.x": {"a": "b"}}, replace=True))
    assert lance.dataset(uri).schema.field("pt").type.field("x").metadata == {b"a": b"b"}
    twins.apply(lambda ds: ds.update_field_metadata({}))


def test_deprecated_replace_methods(uri: str) -> None:
    twins = Twins(uri)
    with pytest.warns(DeprecationWarning):
        ll.dataset(uri).replace_schema_metadata({"r": "1"})
    with pytest.warns(DeprecationWarning):
        ll.dataset(uri).replace_field_metadata("s", {"f": "2"})
    with pytest.warns(DeprecationWarning):
        lance.dataset(twins.theirs).replace_schema_metadata({"r": "1"})
    with pytest.warns(DeprecationWarning):
        lance.dataset(twins.theirs).replace_field_metadata("s", {"f": "2"})
    twins.check()
    assert ll.dataset(uri).schema.field("s").metadata == {b"f": b"2"}


def test_config_updates(uri: str) -> None:
    twins = Twins(uri)
    got = twins.apply(lambda ds: ds.update_config({"a": "1", "b": "2"}))
    assert got == {"a": "1", "b": "2"}
    got = twins.apply(lambda ds: ds.update_config({"c": "3", "x": None}, replace=True))
    assert got == {"c": "3"}
    twins.apply(lambda ds: ds.delete_config_keys(["c", "absent"]))
    assert ll.dataset(uri).config() == {}


def test_metadata_survives_other_changes(uri: str) -> None:
    twins = Twins(uri)
    twins.apply(lambda ds: ds.update_field_metadata({"v": {"unit": "kg"}, "k": {"key": "1"}}))
    twins.apply(lambda ds: ds.update_metadata({"t": "1"}))
    extra = pa.table({"k": [1, 2, 3], "w": [0.5, 1.5, 2.5]})
    twins.apply(lambda ds: ds.merge(extra, "k"))
    twins.apply(lambda ds: ds.add_columns({"k2": "k * 2"}))
    twins.apply(lambda ds: ds.delete("k = 5"))
    twins.apply(lambda ds: ds.alter_columns({"path": "s", "name": "label"}))
    # A cast writes a new field; like pylance, lancelet drops the old field's metadata.
    twins.apply(lambda ds: ds.alter_columns({"path": "k", "data_type": pa.int32()}))
    schema = lance.dataset(uri).schema
    assert schema.metadata == {b"origin": b"test"}
    assert schema.field("v").metadata == {b"unit": b"kg"}
    assert schema.field("k").metadata is None
    assert lance.dataset(uri).metadata == {"t": "1"}


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda ds: ds.update_field_metadata({"nope": {"a": "1"}}), SchemaError, "'nope'"),
        (lambda ds: ds.update_field_metadata({"pt.z": {"a": "1"}}), SchemaError, "'pt.z'"),
        (lambda ds: ds.update_schema_metadata({"a": 1}), TypeError, "'a'"),
        (lambda ds: ds.update_metadata({2: "x"}), TypeError, "2"),
        (lambda ds: ds.update_field_metadata({"k": {"a": b"x"}}), TypeError, "'a'"),
    ],
)
def test_bad_metadata_changes_nothing(
    uri: str, call: Callable[[ll.LanceDataset], Any], error: type[Exception], message: str
) -> None:
    before = _snapshot(uri)
    with pytest.raises(error, match=message):
        call(ll.dataset(uri))
    assert _snapshot(uri) == before


def test_pylance_metadata_read_by_lancelet(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(keyed_table(0, 50), uri, data_storage_version=STORAGE_VERSION)
    theirs = lance.dataset(uri)
    theirs.update_schema_metadata({"s": "1"})
    theirs.update_metadata({"t": "2"})
    theirs.update_field_metadata({"pt.y": {"f": "3"}, "v": {"g": "4"}})
    theirs.update_config({"c": "5"})
    mine = ll.dataset(uri)
    assert mine.schema.equals(lance.dataset(uri).schema, check_metadata=True)
    assert mine.schema_metadata == {"s": "1"}
    assert mine.metadata == {"t": "2"}
    assert mine.config() == {"c": "5"}
    assert mine.to_table().equals(keyed_table(0, 50).cast(mine.schema))
    # And lancelet changes on top of pylance's keep what pylance set.
    mine.update_field_metadata({"v": {"h": "6"}})
    assert lance.dataset(uri).schema.field("v").metadata == {b"g": b"4", b"h": b"6"}
    assert lance.dataset(uri).metadata == {"t": "2"}
