"""Manifest bytes, names and schema mapping, checked against pylance's own files."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import lance
import pyarrow as pa
import pytest

from lancelet._proto import table_pb2
from lancelet.file import version as file_version
from lancelet.table import naming
from lancelet.table.manifest_file import decode_manifest, encode_manifest
from lancelet.table.schema import LanceSchema, column_field_ids
from tests.dataset.util import keyed_table
from tests.storage import list_names, read_file, write_file
from tests.versions import STORAGE_VERSION


def _manifests(uri: str) -> list[str]:
    folder = os.path.join(uri, "_versions")
    return [os.path.join(folder, n) for n in sorted(list_names(folder)) if n.endswith(".manifest")]


@pytest.fixture
def pylance_uri(tmp_path: Path) -> str:
    uri = str(tmp_path / "ds")
    ds = lance.write_dataset(keyed_table(0, 100), uri, data_storage_version=STORAGE_VERSION)
    ds.delete("k < 5")
    ds.update_config({"a": "1"})
    return uri


def test_pylance_manifest_fields(pylance_uri: str) -> None:
    path = _manifests(pylance_uri)[0]  # V2 names sort newest first
    manifest = decode_manifest(read_file(path), path)
    assert manifest.version == 3
    assert manifest.writer_version.library == "lance"
    assert manifest.config == {"a": "1"}
    assert manifest.reader_feature_flags == 1 and manifest.writer_feature_flags == 1 | 8
    assert manifest.max_fragment_id == 0
    assert manifest.data_format == ("lance", STORAGE_VERSION)
    assert manifest.transaction_file.startswith("2-") and manifest.transaction_file.endswith(".txn")
    deletion = manifest.fragments[0].deletion_file
    assert deletion is not None and deletion.num_deleted_rows == 5 and deletion.read_version == 1
    assert manifest.schema.to_arrow().equals(keyed_table(0, 1).schema)


def test_footer_layout(pylance_uri: str) -> None:
    path = _manifests(pylance_uri)[0]
    ours = encode_manifest(decode_manifest(read_file(path), path))
    offset, major, minor, magic = struct.unpack("<QHH4s", ours[-16:])
    assert (major, minor, magic) == (0, 2, b"LANC")
    (length,) = struct.unpack_from("<I", ours, offset)
    assert offset + 4 + length == len(ours) - 16  # pylance requires it to abut the footer
    pb = table_pb2.Manifest()
    pb.ParseFromString(ours[offset + 4 : offset + 4 + length])
    assert pb.version == 3


def test_reencoded_manifest_is_accepted_by_pylance(pylance_uri: str) -> None:
    expected = lance.dataset(pylance_uri).to_table()
    for path in _manifests(pylance_uri):
        data = read_file(path)
        write_file(path, encode_manifest(decode_manifest(data, path)))
    reopened = lance.dataset(pylance_uri)
    reopened.validate()
    assert reopened.to_table().equals(expected)
    assert reopened.config() == {"a": "1"}


def test_manifest_names() -> None:
    assert naming.manifest_name(1) == "18446744073709551614.manifest"
    assert naming.manifest_name(7, naming.ManifestNaming.V1) == "7.manifest"
    for version in (1, 2, 999, 2**40):
        for scheme in naming.ManifestNaming:
            parsed = naming.parse_manifest_name(naming.manifest_name(version, scheme))
            assert parsed is not None and parsed.version == version and parsed.scheme is scheme
    assert naming.parse_manifest_name("latest_version_hint.json") is None
    assert naming.parse_manifest_name(".tmp.manifest") is None


def test_data_file_names_look_like_pylance_ones(pylance_uri: str) -> None:
    theirs = list_names(os.path.join(pylance_uri, "data"))[0]
    ours = naming.data_file_name()
    assert len(ours) == len(theirs) == 56
    assert set(ours[:24]) <= {"0", "1"} and int(ours[24:50], 16) >= 0


def test_schema_field_ids_match_pylance(tmp_path: Path) -> None:
    packed = pa.field(
        "p",
        pa.struct([("q", pa.int32()), ("r", pa.float64())]),
        metadata={"packed": "true"},
    )
    schema = pa.schema(
        [
            pa.field("a", pa.int64()),
            pa.field("s", pa.struct([("x", pa.int64()), ("y", pa.string())])),
            pa.field("l", pa.list_(pa.int64())),
            packed,
            pa.field("f", pa.list_(pa.int32(), 2)),
            pa.field("ls", pa.list_(pa.struct([("z", pa.int64())]))),
        ]
    )
    table = pa.table(
        {
            "a": [1],
            "s": [{"x": 1, "y": "a"}],
            "l": [[1]],
            "p": [{"q": 1, "r": 2.0}],
            "f": [[1, 2]],
            "ls": [[{"z": 1}]],
        },
        schema=schema,
    )
    ds = lance.write_dataset(table, str(tmp_path / "ds"), data_storage_version=STORAGE_VERSION)
    data_file = ds.get_fragments()[0].metadata.files[0]
    ours = LanceSchema.from_arrow(schema)
    structural = file_version.by_name(STORAGE_VERSION).structural
    assert column_field_ids(ours, structural=structural) == list(data_file.fields)
    assert ours.to_arrow().equals(schema, check_metadata=True)


def test_encoded_fragments_are_the_message_protobuf_would_write(pylance_uri: str) -> None:
    """The encoder appends each fragment's cached bytes after the other fields; parsed
    back, that is the same message protobuf's own serializer gives."""
    for path in _manifests(pylance_uri):
        manifest = decode_manifest(read_file(path), path)
        data = encode_manifest(manifest)
        offset = struct.unpack_from("<Q", data, len(data) - 16)[0]
        (length,) = struct.unpack_from("<I", data, offset)
        parsed = table_pb2.Manifest.FromString(data[offset + 4 : offset + 4 + length])
        expected = manifest.to_proto()
        if manifest.indices:
            expected.index_section = 0
        assert parsed == expected
        assert len(parsed.fragments) == len(manifest.fragments) > 0
