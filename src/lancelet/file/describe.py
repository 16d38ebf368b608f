"""Page encodings described in words, the way pylance describes them.

pylance's ``LanceFileReader.metadata()`` gives each page's encoding as the Rust
``{:#?}`` (pretty ``Debug``) text of the decoded protobuf message, as the prost code
generator derives it; callers look for names in it (``"FullZipLayout" in
page.encoding``).  This module writes the same text from the Python message:

* a message is ``Name { field: value, ... }`` (just ``Name`` without fields); its
  plain fields come in declaration order, then each ``oneof`` as one field named
  after it, ``Some(Variant(value))`` or ``None``;
* a message field, or a scalar declared ``optional``, is ``Some(value)`` or ``None``;
* a repeated field is ``[a, b]``; an enum value is its variant's name (a number
  when the value has none); bytes are ``b"..."`` with Rust's byte escapes;
* type, variant and enum names are the protobuf names in UpperCamelCase, an enum's
  own name stripped from the front of its values' names; pretty printing puts every
  field and item on its own line, four spaces deeper than its parent.
"""

from __future__ import annotations

import re
from functools import cache
from typing import cast

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.descriptor_pb2 import DescriptorProto
from google.protobuf.message import Message

__all__ = ["rust_debug"]

_INDENT = "    "
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+|[A-Z0-9]+")


def rust_debug(message: Message) -> str:
    """``message`` as Rust's ``format!("{:#?}", message)`` prints its prost type."""
    return _message(message)


def upper_camel(name: str) -> str:
    """A protobuf name as prost names the Rust item: words (split at underscores and
    where the case changes) capitalised and joined."""
    words: list[str] = []
    for part in re.split(r"[^A-Za-z0-9]+", name):
        words += _WORDS.findall(part)
    return "".join(w[:1].upper() + w[1:].lower() for w in words)


@cache
def _layout(descriptor: Descriptor) -> tuple[tuple[FieldDescriptor, ...], tuple[str, ...]]:
    """The struct's fields in prost's order: plain fields (``optional`` scalars among
    them) as declared, then the real oneofs, by name."""
    proto = DescriptorProto()
    descriptor.CopyToProto(proto)
    optional = {f.name for f in proto.field if f.proto3_optional}
    plain = tuple(f for f in descriptor.fields if f.containing_oneof is None or f.name in optional)
    oneofs = tuple(
        o.name for o in descriptor.oneofs if not all(f.name in optional for f in o.fields)
    )
    return plain, oneofs


def _message(message: Message) -> str:
    descriptor = message.DESCRIPTOR
    plain, oneofs = _layout(descriptor)
    fields = [(f.name, _field(message, f)) for f in plain]
    for oneof in oneofs:
        chosen = message.WhichOneof(oneof)
        if chosen is None:
            fields.append((oneof, "None"))
            continue
        field = cast(FieldDescriptor, descriptor.fields_by_name[chosen])
        variant = _tuple(upper_camel(chosen), _value(field, getattr(message, chosen)))
        fields.append((oneof, _tuple("Some", variant)))
    return _struct(upper_camel(descriptor.name), fields)


def _field(message: Message, field: FieldDescriptor) -> str:
    value = getattr(message, field.name)
    if field.is_repeated:
        return _list([_value(field, item) for item in value])
    if field.has_presence:  # a message, or a scalar declared optional
        return _tuple("Some", _value(field, value)) if message.HasField(field.name) else "None"
    return _value(field, value)


def _value(field: FieldDescriptor, value: object) -> str:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        assert isinstance(value, Message)
        return _message(value)
    if field.type == FieldDescriptor.TYPE_ENUM:
        assert isinstance(value, int) and field.enum_type is not None
        return _enum(field.enum_type, value)
    if field.type == FieldDescriptor.TYPE_BYTES:
        assert isinstance(value, bytes)
        return _bytes(value)
    if field.type == FieldDescriptor.TYPE_STRING:
        assert isinstance(value, str)
        return _string(value)
    if field.type == FieldDescriptor.TYPE_BOOL:
        return "true" if value else "false"
    return str(value)  # integers (the encodings declare no floating-point fields)


def _enum(enum: EnumDescriptor, number: int) -> str:
    value = enum.values_by_number.get(number)
    if value is None:
        return str(number)
    name, prefix = upper_camel(value.name), upper_camel(enum.name)
    stripped = name[len(prefix) :] if name.startswith(prefix) else name
    return name if not stripped or stripped[0].isdigit() else stripped


_BYTE_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord("\\"): "\\\\",
                 ord('"'): '\\"', 0: "\\0"}  # fmt: skip


def _bytes(data: bytes) -> str:
    """The ``Debug`` text of a ``bytes::Bytes``."""
    text = "".join(
        _BYTE_ESCAPES.get(b) or (chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02x}") for b in data
    )
    return f'b"{text}"'


def _string(text: str) -> str:
    escaped = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", '"': '\\"', "\0": "\\0"}
    out = "".join(
        escaped.get(c) or (f"\\u{{{ord(c):x}}}" if ord(c) < 0x20 or ord(c) == 0x7F else c)
        for c in text
    )
    return f'"{out}"'


def _indent(text: str) -> str:
    return _INDENT + text.replace("\n", "\n" + _INDENT)


def _struct(name: str, fields: list[tuple[str, str]]) -> str:
    if not fields:
        return name
    body = "".join(_indent(f"{key}: {value},") + "\n" for key, value in fields)
    return f"{name} {{\n{body}}}"


def _tuple(name: str, value: str) -> str:
    return f"{name}(\n{_indent(value + ',')}\n)"


def _list(items: list[str]) -> str:
    if not items:
        return "[]"
    return "[\n" + "".join(_indent(item + ",") + "\n" for item in items) + "]"
