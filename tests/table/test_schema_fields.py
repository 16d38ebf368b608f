"""A dataset schema holds immutable field values, converted to and from protobuf only
where manifests and transactions are encoded, and keeping what a newer writer adds.

pylance 14 writes ``lance.file.Field`` numbers lancelet's ``file.proto`` does not name
(field 15, a clustering key's position); a commit lancelet makes on such a dataset
must write every field back as pylance wrote it, or pylance loses the key.
"""

from __future__ import annotations

import dataclasses
import pickle
import struct
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from google.protobuf import unknown_fields
from hypothesis import given
from hypothesis import strategies as st

import lancelet
from lancelet._proto import file_pb2, table_pb2
from lancelet.table.schema import LanceSchema
from lancelet.table.schema_field import SchemaField
from tests import storage

_PK = "lance-schema:unenforced-primary-key"
_CK = "lance-schema:unenforced-clustering-key"


def _manifest_fields(uri: Path, version: int) -> list[file_pb2.Field]:
    """The schema fields of a version's manifest, parsed by the protobuf library."""
    names = [n for n in storage.list_names(uri / "_versions") if n.endswith(".manifest")]
    for name in names:
        data = storage.read_file(uri / "_versions" / name)
        (offset,) = struct.unpack("<Q", data[-16:-8])
        (length,) = struct.unpack("<I", data[offset : offset + 4])
        manifest = table_pb2.Manifest.FromString(data[offset + 4 : offset + 4 + length])
        if manifest.version == version:
            return list(manifest.fields)
    raise AssertionError(f"{uri}: no manifest of version {version}")


def _content(pb: file_pb2.Field) -> bytes:
    """Everything a field message holds, known and unknown fields alike."""
    return pb.SerializeToString(deterministic=True)


def _unknown(pb: file_pb2.Field) -> list[tuple[int, int, object]]:
    found = unknown_fields.UnknownFieldSet(pb)
    return [(found[i].field_number, found[i].wire_type, found[i].data) for i in range(len(found))]


def _pylance_dataset(uri: Path) -> None:
    schema = pa.schema(
        [
            pa.field("a", pa.int64(), False, {_PK: "true", _PK + ":position": "2"}),
            pa.field(
                "b",
                pa.string(),
                False,
                {_PK: "true", _PK + ":position": "1", _CK: "true", _CK + ":position": "1"},
            ),
            pa.field("c", pa.dictionary(pa.int32(), pa.string())),
            pa.field("s", pa.struct([pa.field("x", pa.float32())]), metadata={"k": "v"}),
        ]
    )
    table = pa.table(
        {
            "a": [1, 2],
            "b": ["x", "y"],
            "c": pa.array(["p", "q"]).dictionary_encode(),
            "s": [{"x": 1.0}, {"x": 2.0}],
        },
        schema=schema,
    )
    lance.write_dataset(table, str(uri))


def _key_facts(uri: Path, version: int) -> list[tuple[str, int | None, int | None]]:
    schema = lance.dataset(str(uri), version=version).lance_schema
    out = []
    for name in ("a", "b", "c", "s", "s.x"):
        f = schema.field(name)
        out.append(
            (name, f.unenforced_primary_key_position(), f.unenforced_clustering_key_position())
        )
    return out


def test_a_lancelet_commit_keeps_pylance_fields(tmp_path: Path) -> None:
    uri = tmp_path / "d"
    _pylance_dataset(uri)
    before = _manifest_fields(uri, 1)
    # pylance writes the clustering key's position as field 15, which file.proto lacks.
    assert [u[0] for u in _unknown(before[1])] == [15]

    lancelet.dataset(str(uri)).update_field_metadata({"s.x": {"note": "hi"}})

    after = _manifest_fields(uri, 2)
    assert [f.name for f in after] == ["a", "b", "c", "s", "x"]
    for old, new in zip(before[:4], after[:4], strict=True):
        assert _content(new) == _content(old), old.name
    # The changed field differs in its metadata only.
    assert dict(after[4].metadata) == {"note": b"hi"}
    after[4].metadata.clear()
    assert _content(after[4]) == _content(before[4])
    # pylance reads the new version's keys as it wrote them.
    assert _key_facts(uri, 2) == _key_facts(uri, 1)
    assert _key_facts(uri, 2)[:2] == [("a", 2, None), ("b", 1, 1)]


def test_schema_fields_are_immutable_values(tmp_path: Path) -> None:
    uri = tmp_path / "d"
    _pylance_dataset(uri)
    schema = lancelet.dataset(str(uri)).lance_schema.inner
    field = schema.fields[3]
    assert isinstance(field, SchemaField)
    with pytest.raises(dataclasses.FrozenInstanceError):
        field.name = "t"  # type: ignore[misc]
    with pytest.raises(TypeError):
        field.metadata["k"] = b"w"  # type: ignore[index]
    with pytest.raises(TypeError):
        schema.metadata["k"] = b"w"  # type: ignore[index]
    assert dict(field.metadata) == {"k": b"v"}
    # Values: equal when equal, hashable, and pickled with what file.proto lacks.
    copy = pickle.loads(pickle.dumps(schema))
    assert copy == schema and hash(copy.fields) == hash(schema.fields)
    assert copy.fields[1].unknown_fields == schema.fields[1].unknown_fields != b""
    assert {f.name: f.unenforced_primary_key_position for f in copy.fields[:2]} == {
        "a": 2,
        "b": 1,
    }


# -- the protobuf codec, against the protobuf library's own encoding ------------------

_TEXT = st.text(max_size=8)
_INT32 = st.integers(-(2**31), 2**31 - 1)
_UNKNOWN_NUMBERS = st.integers(14, 40).filter(
    lambda n: n not in file_pb2.Field.DESCRIPTOR.fields_by_number
)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


@st.composite
def _field_bytes(draw: st.DrawFn) -> bytes:
    pb = file_pb2.Field(
        type=draw(st.sampled_from([0, 1, 2])),
        name=draw(_TEXT),
        id=draw(_INT32),
        parent_id=draw(_INT32),
        logical_type=draw(_TEXT),
        nullable=draw(st.booleans()),
        metadata=draw(st.dictionaries(_TEXT, st.binary(max_size=4), max_size=3)),
        unenforced_primary_key=draw(st.booleans()),
        unenforced_primary_key_position=draw(st.integers(0, 2**32 - 1)),
        encoding=draw(st.sampled_from([0, 1, 2, 3, 4])),
        extension_name=draw(_TEXT),
    )
    if draw(st.booleans()):
        pb.dictionary.SetInParent()
        pb.dictionary.offset = draw(st.integers(0, 2**40))
        pb.dictionary.length = draw(st.integers(0, 2**20))
    extra = b"".join(
        _varint(number << 3) + _varint(value)
        for number, value in draw(
            st.lists(st.tuples(_UNKNOWN_NUMBERS, st.integers(0, 2**63)), max_size=3)
        )
    )
    return pb.SerializeToString() + extra


@given(_field_bytes())
def test_codec_round_trip(data: bytes) -> None:
    parsed = file_pb2.Field.FromString(data)
    value = SchemaField.from_proto(parsed)
    # (Map entries may come in another order unless serialized deterministically.)
    assert _content(value.to_proto()) == _content(parsed)
    assert _unknown(value.to_proto()) == _unknown(parsed)
    assert value.dictionary is None or parsed.HasField("dictionary")
    assert (value.name, value.id, value.parent_id, dict(value.metadata)) == (
        parsed.name,
        parsed.id,
        parsed.parent_id,
        dict(parsed.metadata),
    )
    schema = LanceSchema.from_proto([parsed], {"m": b"1"})
    assert [_content(f) for f in schema.proto_fields()] == [_content(parsed)]
