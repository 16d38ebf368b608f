"""Manifests re-encoded with hostile values, for the validation tests and the fuzz suite.

Both fixtures these apply to have fragments 0, 1 and 2 (0 and 1 with deletion files)
and a schema that starts ``k, s{x, y}, l[item]``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

import numpy as np
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from lancelet._proto import table_pb2

Edit = Callable[[table_pb2.Manifest], None]


def message_range(data: bytes) -> tuple[int, int]:
    """Offset and length of the manifest message in a manifest file's bytes."""
    offset = struct.unpack_from("<Q", data, len(data) - 16)[0]
    return offset + 4, struct.unpack_from("<I", data, offset)[0]


def decode(data: bytes) -> table_pb2.Manifest:
    start, length = message_range(data)
    return table_pb2.Manifest.FromString(data[start : start + length])


def encode(pb: table_pb2.Manifest) -> bytes:
    """A manifest file holding ``pb`` alone (no index or transaction section)."""
    body = pb.SerializeToString()
    return struct.pack("<I", len(body)) + body + struct.pack("<QHH4s", 0, 0, 2, b"LANC")


def edited(data: bytes, edit: Edit) -> bytes:
    pb = decode(data)
    edit(pb)
    return encode(pb)


def fragment(pb: table_pb2.Manifest, fragment_id: int) -> table_pb2.DataFragment:
    return next(f for f in pb.fragments if f.id == fragment_id)


def _no_deletion_files(pb: table_pb2.Manifest) -> None:
    for each in pb.fragments:
        each.ClearField("deletion_file")


def _second_list_child(pb: table_pb2.Manifest) -> None:
    listed = next(f for f in pb.fields if f.name == "l")
    pb.fields.add(name="extra", id=99, parent_id=listed.id, logical_type="int32")


def _set_file_type(pb: table_pb2.Manifest) -> None:
    # An enum value no writer uses; the protobuf library keeps it as a plain number.
    fragment(pb, 0).deletion_file.file_type = 5  # type: ignore[assignment]


def _set(path: Callable[[table_pb2.Manifest], Message], name: str, value: object) -> Edit:
    return lambda pb: setattr(path(pb), name, value)


def _item(path: Callable[[table_pb2.Manifest], Message], name: str, i: int, value: int) -> Edit:
    return lambda pb: getattr(path(pb), name).__setitem__(i, value)


def _deletion(i: int) -> Callable[[table_pb2.Manifest], Message]:
    return lambda pb: fragment(pb, i).deletion_file


def _file(i: int) -> Callable[[table_pb2.Manifest], Message]:
    return lambda pb: fragment(pb, i).files[0]


# name: (edit, what the error says)
CASES: dict[str, tuple[Edit, str]] = {
    "no data files": (lambda pb: fragment(pb, 2).ClearField("files"), "fragment 2: lists no"),
    "no rows": (_set(lambda pb: fragment(pb, 2), "physical_rows", 0), "fragment 2: has 0"),
    "more deleted than rows": (
        _set(_deletion(0), "num_deleted_rows", 100_000),
        "fragment 0: its deletion file deletes 100000 of",
    ),
    "no deleted rows": (
        _set(_deletion(0), "num_deleted_rows", 0),
        "fragment 0: its deletion file deletes 0",
    ),
    "deletion kind unknown": (_set_file_type, "fragment 0: deletion file kind 5"),
    "deletion from the future": (
        _set(_deletion(0), "read_version", 2**40),
        "fragment 0: its deletion file was written from version",
    ),
    "duplicate fragment ids": (
        _set(lambda pb: fragment(pb, 2), "id", 1),
        r"fragment ids \[1\] are used more than once",
    ),
    "max fragment id too low": (
        _set(lambda pb: pb, "max_fragment_id", 1),
        "fragment 2 is above max_fragment_id 1",
    ),
    "empty path": (_set(_file(1), "path", ""), "fragment 1: data file path '' leaves"),
    "absolute path": (
        _set(_file(1), "path", "/etc/passwd"),
        "fragment 1: data file path '/etc/passwd' leaves",
    ),
    "parent path": (
        _set(_file(1), "path", "../_versions/x.lance"),
        "fragment 1: data file path '../_versions/x.lance' leaves",
    ),
    "negative field id in a data file": (
        _item(_file(1), "fields", 0, -1),
        "fragment 1: data file .* lists field ids",
    ),
    "field id twice in a fragment": (
        _item(_file(1), "fields", 1, 0),
        "fragment 1: data file .* lists field ids",
    ),
    "column indices of another length": (
        lambda pb: fragment(pb, 1).files[0].column_indices.append(9),
        "fragment 1: data file .* has column indices",
    ),
    "file format unlike the dataset's": (
        _set(_file(1), "file_minor_version", 1),
        "fragment 1: a data file claims format 2.1 in a dataset of format 2.[02]",
    ),
    "parent that does not exist": (
        _set(lambda pb: pb.fields[2], "parent_id", 77),
        "field 'x' .*: its parent id 77 is no field listed before it",
    ),
    "parent that is a leaf": (
        _set(lambda pb: pb.fields[2], "parent_id", 0),
        "field 'x' .*: its parent 'k' is a int64",
    ),
    "duplicate field ids": (
        _set(lambda pb: pb.fields[3], "id", 2),
        "field 'y' .*: the id is negative or used twice",
    ),
    "list with two children": (_second_list_child, "field 'l' .* is a list with 2 child"),
    "deletion flag without deletion files": (_no_deletion_files, "the deletion-files feature"),
    "row ids without stable row ids": (
        _set(lambda pb: fragment(pb, 2), "inline_created_at_versions", b"\x00"),
        "fragment 2: carries row id or row version sequences",
    ),
    "base path without the feature": (
        _set(_file(1), "base_id", 1),
        "fragment 1: a file names a base path",
    ),
}


# -- random hostile values ----------------------------------------------------------------

_INTEGERS = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
}
# Fields that change nothing a reader returns, or say what the format states once with
# nothing to check it against (a leaf field's id, a field's nullability): see
# test_fuzz_metadata.py.
UNCHECKABLE = {
    "fields.nullable",
    "fields.encoding",
    "fields.unenforced_primary_key",
    "fields.unenforced_primary_key_position",
    "version_aux_data",
    "next_row_id",
    "timestamp.seconds",
    "timestamp.nanos",
    "fragments.files.file_size_bytes",
    "index_section",
}


def integer_slots(message: Message, prefix: str = "") -> Iterator[tuple[str, Message, str, int]]:
    """Every integer a manifest holds: (dotted name, message, field name, index or -1)."""
    for field, value in message.ListFields():
        name = f"{prefix}{field.name}"
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            if field.message_type.GetOptions().map_entry:
                continue
            for child in value if field.is_repeated else [value]:
                yield from integer_slots(child, f"{name}.")
        elif field.type in _INTEGERS:
            count = len(value) if field.is_repeated else 1
            for i in range(count):
                yield name, message, field.name, i if field.is_repeated else -1


def hostile_values(data: bytes, count: int, seed: int) -> Iterator[tuple[str, bytes, bool]]:
    """``count`` manifests, each with one integer set to a hostile value: (label, file
    bytes, whether the value is one nothing can check)."""
    rng = np.random.default_rng(seed)
    slots = list(integer_slots(decode(data)))
    for _ in range(count):
        name, _, field_name, index = slots[int(rng.integers(len(slots)))]
        pb = decode(data)
        target = next(
            m for n, m, f, i in integer_slots(pb) if (n, f, i) == (name, field_name, index)
        )
        field = target.DESCRIPTOR.fields_by_name[field_name]
        low, high = _INTEGERS[field.type]
        current = getattr(target, field_name)
        old = current[index] if index >= 0 else current
        choices = [low, high, 0, 1, -1, -2, old + 1, old - 1, old ^ 8, 2**31 - 1]
        value = min(max(int(choices[int(rng.integers(len(choices)))]), low), high)
        if index >= 0:
            current[index] = value
        else:
            setattr(target, field_name, value)
        leaf_id = name == "fields.id" and _is_leaf(pb, old)
        yield f"{name}[{index}] {old} -> {value}", encode(pb), name in UNCHECKABLE or leaf_id


def _is_leaf(pb: table_pb2.Manifest, field_id: int) -> bool:
    return not any(f.parent_id == field_id for f in pb.fields)
