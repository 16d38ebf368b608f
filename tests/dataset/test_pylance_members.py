"""Methods lancelet gained to match pylance's surface, each checked against pylance on
the same input: tag references in pylance's forms and tag metadata, a blob file's
ranged reads, a schema's unenforced primary key, a namespace's operation counts, and
the file calls refused by name."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import lance
import lance.namespace
import lance.schema
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancelet as ll
import lancelet.namespace
import lancelet.schema
from lancelet.errors import UnsupportedFunctionError
from tests.storage import copy_tree

TABLE = pa.table({"a": [1, 2, 3]})


def _three_versions(module: ModuleType, uri: Path) -> None:
    module.write_dataset(TABLE, uri)
    module.write_dataset(TABLE, uri, mode="append")
    module.write_dataset(TABLE, uri, mode="append")


# -- tags -------------------------------------------------------------------------------

REFERENCES: list[Any] = [None, 1, 3, "first", ("main", None), (None, 1), ("main", 2)]


@pytest.mark.parametrize("reference", REFERENCES, ids=repr)
@pytest.mark.parametrize("call", ["create", "update"])
def test_tag_references_take_pylance_forms(tmp_path: Path, reference: Any, call: str) -> None:
    # Checked out at version 2 of 3: None means the checked-out version, (branch, None)
    # the branch's latest.
    seen = {}
    for module in (lance, ll):
        uri = tmp_path / module.__name__
        _three_versions(module, uri)
        tags = module.dataset(uri, version=2).tags
        tags.create("first", 1)
        if call == "update":
            tags.create("t", 3)
        getattr(tags, call)("t", reference)
        seen[module.__name__] = tags.get_version("t")
    assert seen["lancelet"] == seen["lance"]


def test_tags_on_another_branch_are_refused(tmp_path: Path) -> None:
    _three_versions(ll, tmp_path / "l")
    _three_versions(lance, tmp_path / "p")
    with pytest.raises(ValueError):
        lance.dataset(tmp_path / "p").tags.create("t", ("dev", 1))
    with pytest.raises(ValueError, match="dev"):
        ll.dataset(tmp_path / "l").tags.create("t", ("dev", 1))
    assert ll.dataset(tmp_path / "l").tags.list() == {}


def test_replace_tag_metadata_as_pylance(tmp_path: Path) -> None:
    _three_versions(lance, tmp_path / "p")
    lance.dataset(tmp_path / "p").tags.create("t", 2)
    copy_tree(tmp_path / "p", tmp_path / "l")
    theirs, ours = lance.dataset(tmp_path / "p").tags, ll.dataset(tmp_path / "l").tags
    for tags in (theirs, ours):
        tags.replace_metadata("t", {"owner": "x", "k": "v"})
        tags.replace_metadata("t", {"k": "w"})  # the whole map is replaced
    assert ours.list() == theirs.list()
    assert ours.list()["t"]["metadata"] == {"k": "w"}
    # pylance reads the tag lancelet rewrote.
    assert lance.dataset(tmp_path / "l").tags.list() == theirs.list()
    for tags, error in ((theirs, TypeError), (ours, TypeError)):
        with pytest.raises(error):
            tags.replace_metadata("t", {"k": 1})
    for tags in (theirs, ours):
        with pytest.raises(ValueError):
            tags.replace_metadata("missing", {})


# -- blob files -------------------------------------------------------------------------

BLOB = bytes(range(256)) * 3
_BLOB_SCHEMA = pa.schema(
    [pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})]
)


@pytest.fixture(scope="module")
def blob_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    root = tmp_path_factory.mktemp("blobs")
    data = pa.table({"b": pa.array([BLOB], pa.large_binary())}, schema=_BLOB_SCHEMA)
    # Blob columns need 2.1 or later (the suite's 2.0 run included).
    theirs = lance.write_dataset(data, root / "p", data_storage_version="2.2").take_blobs(
        "b", indices=[0]
    )[0]
    ours = ll.write_dataset(data, root / "l", data_storage_version="2.2").take_blobs(
        "b", indices=[0]
    )[0]
    return theirs, ours


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ranges=st.lists(
        st.tuples(st.integers(-2, len(BLOB) + 2), st.integers(-2, len(BLOB) + 2)),
        min_size=1,
        max_size=4,
    ),
    position=st.integers(0, len(BLOB)),
)
def test_blob_read_ranges_as_pylance(
    blob_files: tuple[Any, Any], ranges: list[tuple[int, int]], position: int
) -> None:
    theirs, ours = blob_files
    for blob in (theirs, ours):
        blob.seek(position)
    for offset, length in ranges:
        got = _error_or_value(ours.read_range, offset, length)
        assert got == _error_or_value(theirs.read_range, offset, length)
    got_all = _error_or_value(ours.read_ranges, ranges)
    assert got_all == _error_or_value(theirs.read_ranges, ranges)
    assert ours.tell() == theirs.tell() == position  # neither moves the cursor


def _error_or_value(method: Any, *args: Any) -> Any:
    """The value, or the builtin class of the error (OverflowError, ValueError)."""
    try:
        return method(*args)
    except OverflowError:
        return OverflowError
    except ValueError:
        return ValueError


# -- unenforced primary keys ------------------------------------------------------------

_KEY = {"lance-schema:unenforced-primary-key": "true"}


def _at(position: int) -> dict[str, str]:
    return {"lance-schema:unenforced-primary-key:position": str(position)}


def _int(name: str, metadata: dict[str, str] | None = None) -> pa.Field:
    return pa.field(name, pa.int64(), nullable=False, metadata=metadata)


KEYED_SCHEMAS = {
    "none": pa.schema([_int("a")]),
    "one": pa.schema([_int("x"), _int("a", _KEY)]),
    "two in schema order": pa.schema([_int("b", _KEY), _int("a", _KEY)]),
    "positions first": pa.schema([_int("c", _KEY), _int("b", _at(2)), _int("a", _at(1))]),
    "position 0 is unset": pa.schema([_int("b", _at(1)), _int("a", _at(0))]),
    "nested": pa.schema(
        [_int("b", _at(2)), pa.field("s", pa.struct([_int("a", _at(1))]), nullable=False)]
    ),
    "not a key": pa.schema([_int("a", {"lance-schema:unenforced-primary-key": "false"})]),
}


@pytest.mark.parametrize("schema", KEYED_SCHEMAS.values(), ids=KEYED_SCHEMAS.keys())
def test_primary_key_of_a_pylance_dataset(tmp_path: Path, schema: pa.Schema) -> None:
    lance.write_dataset(schema.empty_table(), tmp_path / "p")
    want = [f.name() for f in lance.dataset(tmp_path / "p").lance_schema.unenforced_primary_key()]
    got = [f.name() for f in ll.dataset(tmp_path / "p").lance_schema.unenforced_primary_key()]
    assert got == want


@pytest.mark.parametrize("schema", KEYED_SCHEMAS.values(), ids=KEYED_SCHEMAS.keys())
def test_primary_key_from_field_metadata(schema: pa.Schema) -> None:
    # Both turn the metadata into the key when they convert the schema.
    def described(module: ModuleType) -> list[tuple[str, bool, int | None]]:
        fields = module.schema.LanceSchema.from_pyarrow(schema).unenforced_primary_key()
        return [
            (f.name(), f.is_unenforced_primary_key(), f.unenforced_primary_key_position())
            for f in fields
        ]

    assert described(ll) == described(lance)


def test_clustering_keys_are_refused() -> None:
    schema = ll.schema.LanceSchema.from_pyarrow(KEYED_SCHEMAS["one"])
    with pytest.raises(UnsupportedFunctionError, match="clustering"):
        schema.unenforced_clustering_key()
    field = schema.fields()[0]
    with pytest.raises(UnsupportedFunctionError, match="clustering"):
        field.is_unenforced_clustering_key()
    with pytest.raises(UnsupportedFunctionError, match="clustering"):
        field.unenforced_clustering_key_position()


# -- namespaces and files ---------------------------------------------------------------


def test_namespace_ops_metrics_are_empty_as_pylance_without_them(tmp_path: Path) -> None:
    theirs = lance.namespace.DirectoryNamespace(root=str(tmp_path / "p"))
    ours = lancelet.namespace.DirectoryNamespace(root=str(tmp_path / "l"))
    for namespace in (theirs, ours):
        namespace.reset_ops_metrics()
    assert ours.retrieve_ops_metrics() == theirs.retrieve_ops_metrics() == {}
    with pytest.raises(ll.errors.UnsupportedOptionError, match="ops_metrics_enabled"):
        lancelet.namespace.DirectoryNamespace(root=str(tmp_path), ops_metrics_enabled="true")


def test_file_calls_lancelet_lacks_are_refused_by_name(tmp_path: Path) -> None:
    session = ll.file.LanceFileSession(str(tmp_path))
    for name in ("open_dedicated_blob_writer", "open_packed_blob_writer"):
        with pytest.raises(UnsupportedFunctionError, match=name):
            getattr(session, name)("blob.lance", 1)
    path = str(tmp_path / "f.lance")
    with pytest.raises(ll.errors.UnsupportedOptionError, match="namespace_client"):
        ll.file.LanceFileWriter(path, TABLE.schema, table_id=["t"])
    with ll.file.LanceFileWriter(path, TABLE.schema) as writer:
        writer.write_batch(TABLE)
    with pytest.raises(ll.errors.UnsupportedOptionError, match="namespace_client"):
        ll.file.LanceFileReader(path, table_id=["t"])
    assert ll.file.LanceFileReader(path).read_all().to_table().equals(TABLE)
