"""Where each field of a protobuf message lies in its bytes, for aiming mutants.

A small reader of the protobuf wire format, independent of the protobuf library:
:func:`spans` lists every field occurrence of a message (and of the messages nested
in it) with its byte range, named by its path of field names.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from google.protobuf.descriptor import Descriptor, FieldDescriptor

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


@dataclass(frozen=True)
class Span:
    # Field names from the outermost message, e.g. ("fragments", "deletion_file", "id").
    path: tuple[str, ...]
    start: int  # the tag's first byte
    value: int  # the value's first byte (after the tag, and the length for LEN fields)
    end: int

    @property
    def name(self) -> str:
        return ".".join(self.path)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def spans(
    data: bytes, descriptor: Descriptor, start: int = 0, end: int | None = None
) -> Iterator[Span]:
    """Every field in ``data[start:end]``, a ``descriptor`` message, nested ones after
    the field that holds them.  Unknown fields are named by their number."""
    yield from _walk(data, descriptor, start, len(data) if end is None else end, ())


def _walk(
    data: bytes, descriptor: Descriptor, pos: int, end: int, prefix: tuple[str, ...]
) -> Iterator[Span]:
    while pos < end:
        tag_start = pos
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        field = descriptor.fields_by_number.get(number)
        path = (*prefix, field.name if field is not None else str(number))
        if wire == _VARINT:
            _, after = _varint(data, pos)
        elif wire == _I64:
            after = pos + 8
        elif wire == _I32:
            after = pos + 4
        elif wire == _LEN:
            length, pos = _varint(data, pos)
            after = pos + length
        else:
            raise ValueError(f"wire type {wire} at {tag_start}")
        yield Span(path, tag_start, pos, after)
        if wire == _LEN and field is not None and field.type == FieldDescriptor.TYPE_MESSAGE:
            yield from _walk(data, field.message_type, pos, after, path)
        pos = after
