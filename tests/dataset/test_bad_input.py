"""Bad input and damaged datasets: a specific error naming the culprit, nothing changed."""

from __future__ import annotations

import os
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import (
    CorruptDatasetError,
    DatasetAlreadyExistsError,
    DatasetNotFoundError,
    FilterError,
    SchemaError,
    TagError,
    UnsupportedFeatureError,
    UnsupportedVersionError,
    VersionNotFoundError,
)
from lancelet.table.manifest_file import decode_manifest, encode_manifest
from tests.dataset.util import keyed_table
from tests.dataset.util import snapshot as _snapshot
from tests.storage import list_names, present, read_file, remove_file, write_file


@pytest.fixture
def uri(tmp_path: Path) -> str:
    path = str(tmp_path / "ds")
    ll.write_dataset(keyed_table(0, 300), path, max_rows_per_file=100)
    ll.dataset(path).delete("k % 10 = 0")
    return path


def _manifest_path(uri: str, version: int) -> str:
    return os.path.join(uri, "_versions", f"{2**64 - 1 - version:020d}.manifest")


def test_not_a_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match="no Lance dataset"):
        ll.dataset(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetNotFoundError, match="empty"):
        ll.dataset(str(tmp_path / "empty"))


def test_create_over_an_existing_dataset(uri: str) -> None:
    before = _snapshot(uri)
    with pytest.raises(DatasetAlreadyExistsError, match="already exists"):
        ll.write_dataset(keyed_table(0, 5), uri)
    assert _snapshot(uri) == before


def test_append_with_another_schema(uri: str) -> None:
    before = _snapshot(uri)
    wrong = pa.table({"k": [1], "unknown": [1]})
    with pytest.raises(SchemaError, match="unknown"):
        ll.write_dataset(wrong, uri, mode="append")
    retyped = keyed_table(0, 5).set_column(0, "k", pa.array(range(5), pa.int32()))
    with pytest.raises(SchemaError, match="'k'"):
        ll.write_dataset(retyped, uri, mode="append")
    assert _snapshot(uri) == before


@pytest.mark.parametrize(
    ("predicate", "message"),
    [("nope > 3", "nope"), ("k >", "k >"), ("k = = 1", "k = = 1")],
)
def test_bad_filters(uri: str, predicate: str, message: str) -> None:
    before = _snapshot(uri)
    ds = ll.dataset(uri)
    with pytest.raises(FilterError, match=message):
        ds.to_table(filter=predicate)
    with pytest.raises(FilterError):
        ds.delete(predicate)
    assert _snapshot(uri) == before


def test_missing_version_and_tag(uri: str) -> None:
    with pytest.raises(VersionNotFoundError, match="version 9"):
        ll.dataset(uri, version=9)
    with pytest.raises(TagError, match="no-such-tag"):
        ll.dataset(uri, version="no-such-tag")
    with pytest.raises(VersionNotFoundError):
        ll.dataset(uri, version=1).checkout_version(42)


def test_corrupt_latest_manifest(uri: str) -> None:
    path = _manifest_path(uri, 2)
    write_file(path, read_file(path)[:-5])
    with pytest.raises(CorruptDatasetError, match=os.path.basename(path)):
        ll.dataset(uri)
    assert ll.dataset(uri, version=1).count_rows() == 300


def test_manifest_with_garbage_body(uri: str) -> None:
    path = _manifest_path(uri, 2)
    data = bytearray(read_file(path))
    data[4:40] = b"\xff" * 36
    write_file(path, bytes(data))
    with pytest.raises(CorruptDatasetError, match="manifest"):
        ll.dataset(uri)


def test_missing_manifest_of_an_old_version(uri: str) -> None:
    remove_file(_manifest_path(uri, 1))
    with pytest.raises(VersionNotFoundError, match="version 1"):
        ll.dataset(uri, version=1)
    assert ll.dataset(uri).version == 2


def _deletion_files(uri: str) -> list[str]:
    folder = os.path.join(uri, "_deletions")
    return [os.path.join(folder, name) for name in list_names(folder)]


def test_missing_deletion_file_is_an_error_not_empty(uri: str) -> None:
    victim = _deletion_files(uri)[0]
    remove_file(victim)
    with pytest.raises(CorruptDatasetError, match=os.path.basename(victim)):
        ll.dataset(uri).to_table()
    with pytest.raises(CorruptDatasetError):
        ll.dataset(uri).delete("k = 1")


def test_corrupt_deletion_file(uri: str) -> None:
    victim = _deletion_files(uri)[0]
    write_file(victim, b"ARROW1 this is not an arrow file")
    with pytest.raises(CorruptDatasetError, match="deletion file"):
        ll.dataset(uri).to_table()


def test_missing_data_file(uri: str) -> None:
    fragment = ll.dataset(uri).get_fragments()[1]
    name = fragment.data_files()[0].path
    remove_file(os.path.join(uri, "data", name))
    with pytest.raises(CorruptDatasetError, match=name):
        ll.dataset(uri).to_table()
    with pytest.raises(CorruptDatasetError, match=name):
        ll.dataset(uri).validate()


def _set_flags(uri: str, reader: int, writer: int) -> None:
    path = _manifest_path(uri, 2)
    manifest = decode_manifest(read_file(path), path)
    from dataclasses import replace

    patched = replace(manifest, reader_feature_flags=reader, writer_feature_flags=writer)
    write_file(path, encode_manifest(patched))


def test_unknown_reader_flag_is_refused_by_name(uri: str) -> None:
    _set_flags(uri, reader=1 | 64, writer=1)
    with pytest.raises(UnsupportedFeatureError, match="64"):
        ll.dataset(uri)


def test_writer_flag_lancelet_cannot_maintain(uri: str) -> None:
    _set_flags(uri, reader=1, writer=1 | 64)
    before = _snapshot(uri)
    assert ll.dataset(uri).count_rows() == 270  # reading is still fine
    with pytest.raises(UnsupportedFeatureError, match="64"):
        ll.write_dataset(keyed_table(300, 310), uri, mode="append")
    assert _snapshot(uri) == before


def test_unwritable_storage_versions(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedVersionError, match="2.3"):
        ll.write_dataset(keyed_table(0, 5), str(tmp_path / "a"), data_storage_version="next")
    assert not present(tmp_path / "a" / "_versions")


def test_appending_to_an_unwritable_format_is_refused(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(keyed_table(0, 5), uri, data_storage_version="2.3")
    with pytest.raises(UnsupportedVersionError, match=r"2\.3"):
        ll.write_dataset(keyed_table(5, 10), uri, mode="append")
    assert lance.dataset(uri).version == 1


def test_nulls_in_a_non_nullable_column(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False)])
    ll.write_dataset(pa.table({"k": [1, 2]}, schema=schema), uri)
    with pytest.raises(SchemaError, match="not nullable"):
        ll.write_dataset(pa.table({"k": [3, None]}), uri, mode="append")
    assert lance.dataset(uri).count_rows() == 2
    assert len(list_names(os.path.join(uri, "data"))) == 1


def test_options_that_would_change_results_are_refused(uri: str) -> None:
    ds = ll.dataset(uri)
    with pytest.raises(TypeError, match="'v' must be a vector column"):
        ds.to_table(nearest={"column": "v", "q": [1.0]})
    assert ds.to_table(batch_readahead=4, io_buffer_size=1 << 20).num_rows == 270
