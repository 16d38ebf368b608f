"""What dataset operations do to an unenforced primary key, against pylance: appends
and overwrites with data marking another key, added and altered columns, field
metadata updates (the key's metadata keys are reserved), merge_insert on the key, and
reading manifests whose key fields disagree with their metadata."""

from __future__ import annotations

import struct
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet._proto import table_pb2
from tests.dataset.test_primary_key import (
    KEY,
    LIBRARIES,
    K,
    P,
    _agree,
    _at,
    _facts,
    _int,
    _key,
    _manifest,
    _outcome,
    _rows,
    _struct,
)
from tests.storage import list_names, read_file, write_file
from tests.versions import STORAGE_VERSION

Step = Callable[[ModuleType, Path], Any]


def _both(tmp_path: Path, schema: pa.Schema, step: Step) -> None:
    """Write ``schema``'s rows with each library, run ``step`` on each dataset with the
    same library, and compare: the same error, or the same manifest fields and key,
    each library reading the other's dataset alike."""
    outcomes = {}
    for name, module in LIBRARIES.items():
        uri = tmp_path / name
        module.write_dataset(_rows(schema), uri, data_storage_version=STORAGE_VERSION)
        outcomes[name] = _outcome(lambda m=module, u=uri: step(m, u))
    _agree(outcomes["lancelet"], outcomes["pylance"])
    theirs, ours = tmp_path / "pylance", tmp_path / "lancelet"
    want = _key(lance, theirs)
    assert _key(lance, ours) == _key(ll, theirs) == _key(ll, ours) == want
    assert _facts(_manifest(ours).fields) == _facts(_manifest(theirs).fields)


KEYED = pa.schema([_int("a", KEY), _int("b")])
PLAIN = pa.schema([_int("a"), _int("b")])
OTHER_KEY = pa.schema([_int("a"), _int("b", _at(1))])
NULLABLE_KEY = pa.schema([_int("a"), _int("b", KEY, nullable=True)])
DATA = {"plain": PLAIN, "other key": OTHER_KEY, "nullable key": NULLABLE_KEY}


@pytest.mark.parametrize("mode", ["append", "overwrite"])
@pytest.mark.parametrize("data", DATA.values(), ids=DATA.keys())
@pytest.mark.parametrize("first", [KEYED, PLAIN], ids=["keyed", "plain"])
def test_append_keeps_the_key_overwrite_replaces_it(
    tmp_path: Path, first: pa.Schema, data: pa.Schema, mode: str
) -> None:
    # The data's marks are checked either way.
    _both(tmp_path, first, lambda m, u: m.write_dataset(_rows(data), u, mode=mode))


NEW_COLUMNS = {
    "key": _int("c", KEY),
    "positioned key": _int("c", _at(1)),
    "nullable key": _int("c", KEY, nullable=True),
    "not a key": _int("c", {K: "no"}),
}


@pytest.mark.parametrize("new", NEW_COLUMNS.values(), ids=NEW_COLUMNS.keys())
def test_computed_columns_join_the_key(tmp_path: Path, new: pa.Field) -> None:
    def compute(batch: pa.RecordBatch) -> pa.RecordBatch:
        values = pa.array(range(batch.num_rows), pa.int64())
        return pa.RecordBatch.from_arrays([values], schema=pa.schema([new]))

    _both(tmp_path, KEYED, lambda m, u: m.dataset(u).add_columns(compute))


@pytest.mark.parametrize("new", NEW_COLUMNS.values(), ids=NEW_COLUMNS.keys())
def test_merged_and_read_columns_join_the_key(tmp_path: Path, new: pa.Field) -> None:
    other = pa.table({"a2": [0, 1], "c": [5, 6]}, schema=pa.schema([_int("a2"), new]))

    def merge_then_add(module: ModuleType, uri: Path) -> None:
        module.dataset(uri).merge(other, left_on="a", right_on="a2")
        added = new.with_name("d")
        values = pa.record_batch([pa.array([7, 8], pa.int64())], schema=pa.schema([added]))
        module.dataset(uri).add_columns(pa.RecordBatchReader.from_batches(values.schema, [values]))

    _both(tmp_path, KEYED, merge_then_add)


@pytest.mark.parametrize("new", NEW_COLUMNS.values(), ids=NEW_COLUMNS.keys())
def test_null_columns_are_checked_too(tmp_path: Path, new: pa.Field) -> None:
    _both(tmp_path, PLAIN, lambda m, u: m.dataset(u).add_columns(new))


NESTED = pa.schema([_struct("s", [_int("x", KEY)]), _int("v")])
ALTERATIONS = {
    "key made nullable": (KEYED, {"path": "a", "nullable": True}),
    "struct above the key made nullable": (NESTED, {"path": "s", "nullable": True}),
    "other column made nullable": (KEYED, {"path": "b", "nullable": True}),
    "key renamed": (KEYED, {"path": "a", "name": "z"}),
    "nested key renamed": (NESTED, {"path": "s.x", "name": "z"}),
    "key cast": (KEYED, {"path": "a", "data_type": pa.int32()}),
}


@pytest.mark.parametrize(("schema", "change"), ALTERATIONS.values(), ids=ALTERATIONS.keys())
def test_alter_columns(tmp_path: Path, schema: pa.Schema, change: dict[str, Any]) -> None:
    _both(tmp_path, schema, lambda m, u: m.dataset(u).alter_columns(change))


WITH_KEY = pa.schema(
    [
        _int("a", KEY),
        _int("b", {"o": "1", K: "false"}),
        _int("n", nullable=True),
        _struct("s", [_int("x")]),
        pa.field("l", pa.list_(pa.field("item", pa.int64(), False)), False),
    ]
)
WITHOUT_KEY = pa.schema([f.remove_metadata() if f.name == "a" else f for f in WITH_KEY])
UPDATES: dict[str, tuple[pa.Schema, dict[str, dict[str, str | None]], bool]] = {
    "keyed: another field marked": (WITH_KEY, {"n": {K: "true"}}, False),
    "keyed: the key's flag set again": (WITH_KEY, {"a": {K: "true"}}, False),
    "keyed: the key's metadata replaced": (WITH_KEY, {"a": {"o": "2"}}, True),
    "keyed: the key's other metadata": (WITH_KEY, {"a": {"o": "2"}}, False),
    "keyed: a non-key's metadata replaced": (WITH_KEY, {"b": {"o": "2"}}, True),
    "plain: flag": (WITHOUT_KEY, {"b": {K: "yes"}}, False),
    "plain: position": (WITHOUT_KEY, {"b": {P: "1"}}, False),
    "plain: position 0": (WITHOUT_KEY, {"b": {P: "0"}}, False),
    "plain: two at once": (WITHOUT_KEY, {"b": {K: "true"}, "a": {P: "1"}}, False),
    "plain: bad position, flag": (WITHOUT_KEY, {"a": {K: "true", P: "x"}}, False),
    "plain: replaced": (WITHOUT_KEY, {"b": {K: "true"}}, True),
    "plain: nested": (WITHOUT_KEY, {"s.x": {K: "true"}}, False),
    "plain: false": (WITHOUT_KEY, {"b": {K: "false"}}, False),
    "plain: bad position": (WITHOUT_KEY, {"a": {P: "x"}}, False),
    "plain: removed": (WITHOUT_KEY, {"a": {K: None}}, False),
    "plain: nullable": (WITHOUT_KEY, {"n": {K: "true"}}, False),
    "plain: a struct": (WITHOUT_KEY, {"s": {K: "true"}}, False),
    "plain: in a list": (WITHOUT_KEY, {"l.item": {K: "true"}}, False),
}


@pytest.mark.parametrize(("schema", "update", "replace"), UPDATES.values(), ids=UPDATES.keys())
def test_field_metadata_updates(
    tmp_path: Path, schema: pa.Schema, update: dict[str, dict[str, str | None]], replace: bool
) -> None:
    def step(module: ModuleType, uri: Path) -> None:
        module.dataset(uri).update_field_metadata(update, replace=replace)

    _both(tmp_path, schema, step)


def test_replace_field_metadata_of_the_key(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        _both(tmp_path, KEYED, lambda m, u: m.dataset(u).replace_field_metadata("a", {}))


# -- merge_insert on the key ---------------------------------------------------------------


def test_merge_insert_joins_on_the_whole_key(tmp_path: Path) -> None:
    schema = pa.schema([_int("a", _at(2)), _int("b", _at(1)), _int("v")])
    rows = pa.table({"a": [1, 1, 2], "b": [1, 2, 1], "v": [0, 0, 0]}, schema=schema)
    new = pa.table({"a": [1, 3], "b": [2, 3], "v": [9, 9]}, schema=schema)
    got = {}
    for name, module in LIBRARIES.items():
        module.write_dataset(rows, tmp_path / name)
        builder = module.dataset(tmp_path / name).merge_insert(None)
        builder.when_matched_update_all().when_not_matched_insert_all().execute(new)
        got[name] = module.dataset(tmp_path / name).to_table().sort_by([("a", "ascending")])
    assert got["lancelet"].equals(got["pylance"])


def test_merge_insert_on_a_nested_key_fails_as_pylance(tmp_path: Path) -> None:
    # A top-level key field too: joining on it alone would be a wrong answer.
    schema = pa.schema([_struct("s", [_int("x", KEY)]), _int("k", KEY), _int("v")])
    for name, module in LIBRARIES.items():
        module.write_dataset(_rows(schema), tmp_path / name)
        with pytest.raises(OSError, match='No field named "s.x"'):
            builder = module.dataset(tmp_path / name).merge_insert(None)
            builder.when_matched_update_all().execute(_rows(schema))


# -- manifests whose key fields and metadata disagree ---------------------------------------


def _edit_manifest(uri: Path, edit: Callable[[table_pb2.Manifest], None]) -> None:
    """Rewrite the only manifest of ``uri`` with ``edit`` applied (no index section)."""
    (name,) = [n for n in list_names(uri / "_versions") if n.endswith(".manifest")]
    path = uri / "_versions" / name
    data = read_file(path)
    offset, major, minor, magic = struct.unpack("<QHH4s", data[-16:])
    (length,) = struct.unpack("<I", data[offset : offset + 4])
    manifest = table_pb2.Manifest.FromString(data[offset + 4 : offset + 4 + length])
    edit(manifest)
    body = manifest.SerializeToString()
    footer = struct.pack("<QHH4s", offset, major, minor, magic)
    write_file(path, data[:offset] + struct.pack("<I", len(body)) + body + footer)


def _set(name: str, **values: Any) -> Callable[[table_pb2.Manifest], None]:
    def edit(manifest: table_pb2.Manifest) -> None:
        field = next(f for f in manifest.fields if f.name == name)
        for attribute, value in values.items():
            setattr(field, attribute, value)

    return edit


EDITS = {
    # Only the two fields count, not the metadata.
    "position, no flag": (KEYED, _set("b", unenforced_primary_key_position=1)),
    "position over metadata": (
        pa.schema([_int("a", _at(2)), _int("b", _at(3))]),
        _set("a", unenforced_primary_key_position=4),
    ),
    "flag cleared under metadata": (KEYED, _set("a", unenforced_primary_key=False)),
}


@pytest.mark.parametrize(("schema", "edit"), EDITS.values(), ids=EDITS.keys())
def test_keys_are_read_from_the_fields(
    tmp_path: Path, schema: pa.Schema, edit: Callable[[table_pb2.Manifest], None]
) -> None:
    lance.write_dataset(schema.empty_table(), tmp_path)
    _edit_manifest(tmp_path, edit)
    assert _key(ll, tmp_path) == _key(lance, tmp_path)
