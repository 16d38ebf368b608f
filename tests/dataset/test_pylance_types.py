"""pylance's result and metadata types as users build and read them: constructor
keywords and positions, attribute names, helper methods and defaults, compared with
pylance's own objects."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import lance
import lance.fragment
import pyarrow as pa
import pytest

import lancelet as ll
import lancelet.fragment
from lancelet.errors import ArgumentError, SchemaError, UnsupportedOptionError
from lancelet.file import LanceFileWriter
from tests.versions import STORAGE_VERSION

_SEQUENCE_NAMES = ("row_id_meta", "created_at_version_meta", "last_updated_at_version_meta")


def test_fragment_metadata_fields_are_pylances() -> None:
    names = [f.name for f in dataclasses.fields(lance.fragment.FragmentMetadata)]
    assert [f.name for f in dataclasses.fields(ll.FragmentMetadata)] == names


@pytest.mark.parametrize("stable", [False, True])
def test_fragment_metadata_attributes_read_as_pylances(tmp_path: Path, stable: bool) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(
        pa.table({"x": range(10)}),
        uri,
        data_storage_version=STORAGE_VERSION,
        enable_stable_row_ids=stable,
    ).delete("x < 3")
    theirs = lance.dataset(uri).get_fragments()[0].metadata
    ours = ll.dataset(uri).get_fragments()[0].metadata
    for name in _SEQUENCE_NAMES:
        assert (getattr(ours, name) is None) == (getattr(theirs, name) is None)
    assert list(ours.overlays) == theirs.overlays == []
    assert ours.num_deletions == theirs.num_deletions == 3
    assert ours.num_rows == theirs.num_rows == 7
    with pytest.warns(DeprecationWarning):
        assert [f.path for f in ours.data_files()] == [f.path for f in theirs.data_files()]
    # A fragment built from the metadata read, by pylance's keywords, is the same one.
    kwargs = {n: getattr(ours, n) for n in ("id", "files", "physical_rows", "deletion_file")}
    rebuilt = ll.FragmentMetadata(**kwargs, **{n: getattr(ours, n) for n in _SEQUENCE_NAMES})
    assert rebuilt == ours
    assert ll.FragmentMetadata.from_json(json_data=json.dumps(theirs.to_json())) == ours


def test_fragment_metadata_refuses_overlays() -> None:
    overlay = ll.LanceOperation.DataOverlayFile(ll.fragment.DataFile("a.lance", [0]), [0])
    with pytest.raises(UnsupportedOptionError, match="overlays"):
        ll.FragmentMetadata(0, [], 1, overlays=[overlay])


def test_data_file_defaults_are_pylances() -> None:
    theirs = lance.fragment.DataFile("a.lance", [0, 1])
    ours = ll.fragment.DataFile("a.lance", [0, 1])
    for name in ("column_indices", "file_major_version", "file_minor_version"):
        assert list(getattr(ours, name) or []) == list(getattr(theirs, name) or [])
        assert getattr(ours, name) == getattr(theirs, name) or name == "column_indices"
    assert ours.file_size_bytes is theirs.file_size_bytes is None
    with pytest.warns(DeprecationWarning):
        assert list(ours.field_ids()) == list(theirs.field_ids()) == [0, 1]


def test_data_file_create_is_pylances(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    table = pa.table({"a": [1, 2], "b": ["x", "y"], "c": [1.0, 2.0]})
    lance.write_dataset(table, uri, data_storage_version=STORAGE_VERSION)
    with LanceFileWriter(f"{uri}/data/extra.lance", version=STORAGE_VERSION) as writer:
        writer.write_batch(table.select(["a", "c"]))
    theirs = lance.fragment.DataFile.create(lance.dataset(uri), "extra.lance")
    ours = ll.fragment.DataFile.create(ll.dataset(uri), "extra.lance")
    for name in ("fields", "column_indices"):
        assert list(getattr(ours, name)) == list(getattr(theirs, name))
    for name in ("path", "file_major_version", "file_minor_version", "base_id"):
        assert getattr(ours, name) == getattr(theirs, name)
    assert ours.file_size_bytes == theirs.file_size_bytes
    with LanceFileWriter(f"{uri}/data/other.lance", version=STORAGE_VERSION) as writer:
        writer.write_batch(pa.table({"z": [1]}))
    with pytest.raises(SchemaError, match="'z'"):
        ll.fragment.DataFile.create(ll.dataset(uri), "other.lance")


def test_deletion_file_helpers_are_pylances() -> None:
    for args in ((1, 2, "array", 3, None), (4, 5, "bitmap", 6, 7)):
        theirs = lance.fragment.DeletionFile(*args)
        ours = ll.fragment.DeletionFile(*args)
        assert ours.json() == theirs.json()
        assert ours.path(9) == theirs.path(9)
        assert ours.path(9, base_uri="/tmp/base") == theirs.path(9, base_uri="/tmp/base")
        back = ll.fragment.DeletionFile.from_json(theirs.json())
        assert back == ours
    with pytest.raises(ValueError, match="DeletionFile"):
        ll.fragment.DeletionFile.from_json('{"read_version": 1, "id": 2}')
    with pytest.raises(ArgumentError):
        ll.fragment.DeletionFile(1, 2, "array", 3).path(1, base_uri="s3://bucket/x")


def test_operations_take_pylances_fields() -> None:
    for name in ("Merge", "Project", "Overwrite", "Clone", "DataOverlay", "RewrittenIndex"):
        theirs = [f.name for f in dataclasses.fields(getattr(lance.LanceOperation, name))]
        ours = [f.name for f in dataclasses.fields(getattr(ll.LanceOperation, name))]
        assert ours[: len(theirs)] == theirs


def test_operations_lancelet_does_not_commit_are_refused(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    ds = ll.write_dataset(pa.table({"x": [1]}), uri)
    fragments = ds.get_fragments()
    refused = [
        ll.LanceOperation.Overwrite(
            ds.schema, [f.metadata for f in fragments], [ll.DatasetBasePath(str(tmp_path / "b"))]
        ),
        ll.LanceOperation.Clone(True, None, 1, uri, None),
        ll.LanceOperation.DataOverlay([]),
    ]
    for operation in refused:
        with pytest.raises(NotImplementedError):
            ll.LanceDataset.commit(uri, operation, read_version=1)
    assert ll.dataset(uri).version == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        merged = ll.LanceOperation.Merge([f.metadata for f in fragments], ds.lance_schema, True)
    assert merged.preserves_nullability
