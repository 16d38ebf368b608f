"""Schema fields written by Lance 0.19 to 0.39 carry ``storage_class`` (field 11,
since retired): the ordinary class is read, the separate blob dataset is refused, and
anything else is damage."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet._proto import table_pb2
from lancelet.errors import CorruptDatasetError, UnsupportedFeatureError
from lancelet.table import naming
from lancelet.transaction.store import DatasetStore
from tests.fuzz.hostile import edited
from tests.storage import read_file, write_file
from tests.versions import STORAGE_VERSION

# Field 11, wire type 2 (length-delimited): the tag byte (11 << 3) | 2.
_TAG = bytes([0x5A])


def _with_storage_class(path: Path, value: bytes | None, wire_tag: bytes = _TAG) -> None:
    def edit(pb: table_pb2.Manifest) -> None:
        for field in pb.fields:
            if field.name == "b":
                payload = wire_tag + (bytes([len(value)]) + value if value is not None else b"\x01")
                field.MergeFromString(payload)

    name = naming.manifest_name(DatasetStore(path).latest_version())
    manifest = path / naming.VERSIONS_DIR / name
    write_file(manifest, edited(read_file(manifest), edit))


TABLE = pa.table({"a": [1, 2, 3], "b": ["x", "y", None]})


@pytest.mark.parametrize("value", [b"default", b""])
def test_the_default_class_is_read_as_pylance_reads_it(tmp_path: Path, value: bytes) -> None:
    ll.write_dataset(TABLE, tmp_path, data_storage_version=STORAGE_VERSION)
    _with_storage_class(tmp_path, value)
    assert ll.dataset(tmp_path).to_table() == lance.dataset(tmp_path).to_table() == TABLE
    ll.dataset(tmp_path).insert(TABLE)
    assert ll.dataset(tmp_path).count_rows() == 6


def test_the_blob_class_is_refused(tmp_path: Path) -> None:
    ll.write_dataset(TABLE, tmp_path, data_storage_version=STORAGE_VERSION)
    _with_storage_class(tmp_path, b"blob")
    with pytest.raises(UnsupportedFeatureError, match="storage class 'blob'"):
        ll.dataset(tmp_path)


def test_another_class_or_wire_type_is_damage(tmp_path: Path) -> None:
    ll.write_dataset(TABLE, tmp_path, data_storage_version=STORAGE_VERSION)
    _with_storage_class(tmp_path, b"fast")
    with pytest.raises(CorruptDatasetError, match="unknown storage class"):
        ll.dataset(tmp_path)
    other = tmp_path / "other"
    ll.write_dataset(TABLE, other, data_storage_version=STORAGE_VERSION)
    _with_storage_class(other, None, wire_tag=bytes([0x58]))  # field 11 as a varint
    with pytest.raises(CorruptDatasetError, match="wire type 0"):
        ll.dataset(other)
