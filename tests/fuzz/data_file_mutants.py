"""Mutants of one Lance 2.0 data file, for :mod:`tests.fuzz.harness`.

* :func:`regions` splits the file into its data (page buffers) and its metadata
  (column metadata, offset tables, footer, the file descriptor), and finds the few
  metadata bytes the format stores without redundancy: an FSST symbol table, the
  names and nullability of nested fields, a decimal's precision and scale.  A
  changed byte there is undetectable by any reader, so its mutant is ``payload``.
* :func:`flips` picks seeded byte changes over chosen regions.
* :func:`structural` re-encodes the protobufs with hostile values (page lengths,
  buffer positions and sizes, every number and buffer reference in every page
  encoding, the schema's types and parents, the footer's counts), each as a whole
  replacement file.
"""

from __future__ import annotations

import copy
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from lancelet._proto import encodings_v2_0_pb2 as enc_pb
from tests.file import surgery
from tests.fuzz.harness import Mutant, replacement

Range = tuple[int, int]  # [start, end)


@dataclass(frozen=True)
class Regions:
    data: list[Range]
    metadata: list[Range]
    unguarded: list[Range]  # metadata bytes with no redundancy (payload)


def regions(path: Path) -> Regions:
    raw = path.read_bytes()
    parts = surgery.parse(raw)
    data = [
        (off, off + size)
        for column in parts.columns
        for page in column.pages
        for off, size in zip(page.buffer_offsets, page.buffer_sizes, strict=True)
    ]
    cm_start = len(parts.prefix)
    desc_pos, desc_size = parts.globals[0]
    metadata = [(desc_pos, desc_pos + desc_size), (cm_start, len(raw))]
    unguarded = _descriptor_unguarded(raw[desc_pos : desc_pos + desc_size], desc_pos)
    for column in parts.columns:
        for page in column.pages:
            table = _fsst_table(surgery.unpack_encoding(page))
            if table:
                at = raw.index(table, cm_start)
                unguarded.append((at, at + len(table)))
    return Regions(data, metadata, unguarded)


def _fsst_table(encoding: enc_pb.ArrayEncoding) -> bytes:
    return encoding.fsst.symbol_table if encoding.WhichOneof("array_encoding") == "fsst" else b""


def flips(
    path: Path, ranges: list[Range], count: int, seed: int, payload: list[Range]
) -> list[Mutant]:
    """``count`` single-byte changes at seeded offsets spread over ``ranges``: a random
    bit flipped, or the byte set to 0x00 / 0xff; those inside ``payload`` are marked."""
    name = path.name
    rng = np.random.default_rng(seed)
    sizes = np.array([end - start for start, end in ranges], dtype=np.int64)
    picks = rng.integers(0, int(sizes.sum()), count)
    starts = np.cumsum(sizes) - sizes
    which = np.searchsorted(np.cumsum(sizes), picks, side="right")
    out = []
    for pick, index in zip(picks.tolist(), which.tolist(), strict=True):
        offset = ranges[index][0] + pick - int(starts[index])
        choice = int(rng.integers(0, 10))
        bit = int(rng.integers(0, 8))
        kind, value = ("xor", 1 << bit) if choice < 8 else ("set", 0 if choice == 8 else 0xFF)
        hit = any(lo <= offset < hi for lo, hi in payload)
        out.append(Mutant(name, kind, offset, value, payload=hit))
    return out


# --- the descriptor's unguarded bytes ------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        shift += 7
        if byte < 0x80:
            return value, pos


def _fields(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, tag start, value start, value end) of each field in data[start:end]."""
    pos = start
    while pos < end:
        at = pos
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            _, after = _varint(data, pos)
            yield number, at, pos, after
        elif wire == 2:
            length, pos = _varint(data, pos)
            yield number, at, pos, pos + length
            after = pos + length
        elif wire == 1:
            after = pos + 8
        elif wire == 5:
            after = pos + 4
        else:
            raise ValueError(f"wire type {wire}")
        pos = after


def _descriptor_unguarded(data: bytes, base: int) -> list[Range]:
    """Nested fields' names and nullability, and decimal parameters, in the descriptor."""
    out: list[Range] = []
    for number, _, lo, hi in _fields(data, 0, len(data)):
        if number != 1:  # FileDescriptor.schema
            continue
        for inner, _, flo, fhi in _fields(data, lo, hi):
            if inner == 1:  # Schema.fields
                out += _field_unguarded(data, flo, fhi)
    return [(base + lo, base + hi) for lo, hi in out]


def _field_unguarded(data: bytes, start: int, end: int) -> list[Range]:
    """A field's name (nested only) and nullability, tags included (a damaged tag
    drops the value, as if it were absent), and a decimal's precision and scale."""
    entries = {number: (at, lo, hi) for number, at, lo, hi in _fields(data, start, end)}
    out = []
    parent = 0xFFFFFFFF
    if 4 in entries:
        value, _ = _varint(data, entries[4][1])
        parent = value & 0xFFFFFFFF
    if parent != 0xFFFFFFFF and 2 in entries:
        out.append((entries[2][0], entries[2][2]))  # a struct child's name: in its type
    if 6 in entries:
        out.append((entries[6][0], entries[6][2]))  # nullability: nested, in the type
    if 5 in entries:
        _, lo, hi = entries[5]
        if data[lo:hi].startswith(b"decimal:"):
            out.append((lo + len(b"decimal:128:"), hi))  # precision and scale
    return out


# --- structural mutants ---------------------------------------------------------------------

HOSTILE_U64 = [0, 1, 2, 7, 63, 64, 65, 255, 2**31, 2**32 - 1, 2**32, 2**63, 2**64 - 1]
HOSTILE_U32 = [0, 1, 2, 7, 63, 64, 65, 255, 2**31 - 1, 2**32 - 1]
LOGICAL_TYPES = [
    "int8",
    "int32",
    "int64",
    "uint64",
    "double",
    "float",
    "bool",
    "null",
    "string",
    "large_string",
    "binary",
    "date64:ms",
    "time32:s",
    "timestamp:us:-",
    "timestamp:us:Nowhere/Land",
    "decimal:128:5:2",
    "decimal:256:70:2",
    "fixed_size_binary:3",
    "fixed_size_binary:0",
    "fixed_size_list:int32:2",
    "fixed_size_list:int32:0",
    "fixed_size_list:int64:1000000000",
    "dict:string:int32:false",
    "dict:int32:int8:false",
    "dict:string:string:false",
    "struct",
    "list",
    "large_list",
    "list.struct",
    "",
    "garbage",
]
# Widths, sizes and precisions out of range or spelt otherwise than a writer spells
# them: pyarrow overflows on huge ones and makes a negative width variable.
BAD_WIDTHS = [
    "fixed_size_binary:18446744073709551615",
    "fixed_size_binary:-1",
    "fixed_size_binary:+3",
    "fixed_size_list:int32:18446744073709551615",
    "fixed_size_list:int64:4294967297",
    "fixed_size_list:int32:-1",
    "decimal:128:99999999999999999999:2",
    "decimal:256:5:-99999999999999999999",
]
LOGICAL_TYPES += BAD_WIDTHS
# Types no reader may take for any column: those, and a struct over a column that is
# none (its pages say otherwise).  Their mutants are errors, never a payload.
REFUSED_TYPES = frozenset(["struct", *BAD_WIDTHS])


def structural(path: Path, count: int, seed: int) -> list[Mutant]:
    """``count`` of the hostile re-encodings of ``path``, picked by ``seed``."""
    raw = path.read_bytes()
    edits = list(_all_edits(surgery.parse(raw)))
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(edits), size=min(count, len(edits)), replace=False)
    out = []
    for index in sorted(chosen.tolist()):
        label, edit = edits[index]
        parts = surgery.parse(raw)
        edit(parts)
        unguarded = any(word in label for word in UNGUARDED_EDITS) and not _refused(label)
        out.append(replacement(path.name, surgery.emit(parts), label, payload=unguarded))
    return out


def _refused(label: str) -> bool:
    return any(label.endswith(f": type {name!r}") for name in REFUSED_TYPES)


def forged_types(path: Path) -> list[Mutant]:
    """Every field of ``path`` given each of the types no reader may take (see
    :data:`REFUSED_TYPES`): each mutant must be an error."""
    raw = path.read_bytes()
    out = []
    for index, field in enumerate(surgery.parse(raw).descriptor.schema.fields):
        for name in sorted(REFUSED_TYPES - {field.logical_type}):
            parts = surgery.parse(raw)
            _set_field(parts, index, logical_type=name)
            label = f"field {field.name}: type {name!r}"
            out.append(replacement(path.name, surgery.emit(parts), label))
    return out


# Edits no reader can tell from real data: the schema alone says how to read a page's
# bytes (int64 or float64 or a timestamp, a list or a large list, any type for an
# all-null page) and which field a column belongs to (a struct's last child made a
# top-level column keeps every column in place), and nothing records the order of a
# column's pages.
UNGUARDED_EDITS = (": type ", ": parent ", "pages swapped")


Edit = Callable[[surgery.FileParts], None]


def _all_edits(parts: surgery.FileParts) -> Iterator[tuple[str, Edit]]:
    yield from _descriptor_edits(parts)
    yield from _footer_edits()
    for c, column in enumerate(parts.columns):
        for p in sorted({0, len(column.pages) - 1}) if column.pages else []:
            yield from _page_edits(c, p, parts)
        yield f"column {c}: no pages", lambda fp, c=c: fp.columns[c].ClearField("pages")
        if len(column.pages) > 1:
            yield f"column {c}: pages swapped", lambda fp, c=c: _swap_pages(fp, c)
            yield f"column {c}: page 0 twice", lambda fp, c=c: _repeat_page(fp, c)


def _swap_pages(parts: surgery.FileParts, column: int) -> None:
    pages = parts.columns[column].pages
    first, second = copy.deepcopy(pages[0]), copy.deepcopy(pages[1])
    pages[0].CopyFrom(second)
    pages[1].CopyFrom(first)


def _repeat_page(parts: surgery.FileParts, column: int) -> None:
    pages = parts.columns[column].pages
    pages[1].CopyFrom(pages[0])


def _descriptor_edits(parts: surgery.FileParts) -> Iterator[tuple[str, Edit]]:
    fields = list(parts.descriptor.schema.fields)
    ids = [f.id for f in fields]
    for i, field in enumerate(fields):
        for name in LOGICAL_TYPES:
            if name != field.logical_type:
                yield (
                    f"field {field.name}: type {name!r}",
                    lambda fp, i=i, name=name: _set_field(fp, i, logical_type=name),
                )
        for parent in {-1, field.id, 10**6, *ids[:i]} - {field.parent_id}:
            yield (
                f"field {field.name}: parent {parent}",
                lambda fp, i=i, parent=parent: _set_field(fp, i, parent_id=parent),
            )
        yield f"field {field.name}: id 10**6", lambda fp, i=i: _set_field(fp, i, id=10**6)
        yield f"field {field.name}: removed", lambda fp, i=i: _drop_field(fp, i)
    for length in (0, 1, parts.descriptor.length - 1, parts.descriptor.length + 1, 2**64 - 1):
        yield f"descriptor length {length}", lambda fp, n=length: _set_length(fp, n)


def _set_field(parts: surgery.FileParts, index: int, **values: object) -> None:
    field = parts.descriptor.schema.fields[index]
    for key, value in values.items():
        setattr(field, key, value)


def _drop_field(parts: surgery.FileParts, index: int) -> None:
    del parts.descriptor.schema.fields[index]


def _set_length(parts: surgery.FileParts, length: int) -> None:
    parts.descriptor.length = length


def _footer_edits() -> Iterator[tuple[str, Edit]]:
    for index, values in ((3, (0, 2, 2**32 - 1)), (4, (0, 1, 2**32 - 1)), (6, (1, 4))):
        for value in values:
            yield (
                f"footer field {index} = {value}",
                lambda fp, i=index, v=value: fp.footer_edits.update({i: v}),
            )


def _page_edits(c: int, p: int, parts: surgery.FileParts) -> Iterator[tuple[str, Edit]]:
    page = parts.columns[c].pages[p]
    where = f"column {c} page {p}"
    for length in (0, 1, page.length - 1, page.length + 1, 2**32 - 1, 2**32, 2**64 - 1):
        yield (
            f"{where}: length {length}",
            lambda fp, n=length: _page(fp, c, p).__setattr__("length", n),
        )
    for b in range(len(page.buffer_offsets)):
        size = page.buffer_sizes[b]
        for value in (0, size - 1, size + 1, 2**40, 2**64 - 1):
            yield (
                f"{where}: buffer {b} size {value}",
                lambda fp, b=b, v=value: _set_repeated(_page(fp, c, p).buffer_sizes, b, v),
            )
        offset = page.buffer_offsets[b]
        for value in (0, offset + 1, offset + 64, offset - 64, 2**64 - 1):
            yield (
                f"{where}: buffer {b} offset {value}",
                lambda fp, b=b, v=value: _set_repeated(_page(fp, c, p).buffer_offsets, b, v),
            )
        yield f"{where}: buffer {b} dropped", lambda fp, b=b: _drop_buffer(fp, c, p, b)
    encoding = surgery.unpack_encoding(page)
    for label, edited in encoding_edits(encoding):
        yield f"{where}: {label}", lambda fp, e=edited: fp.set_encoding(c, p, e)


def _page(parts: surgery.FileParts, c: int, p: int) -> Any:
    return parts.columns[c].pages[p]


def _set_repeated(values: Any, index: int, value: int) -> None:
    values[index] = max(value, 0)


def _drop_buffer(parts: surgery.FileParts, c: int, p: int, b: int) -> None:
    page = parts.columns[c].pages[p]
    del page.buffer_offsets[b]
    del page.buffer_sizes[b]


def encoding_edits(encoding: enc_pb.ArrayEncoding) -> Iterator[tuple[str, enc_pb.ArrayEncoding]]:
    """Every single hostile change to one number or reference of an encoding tree."""
    for path, message in _messages(encoding, ()):
        descriptor = message.DESCRIPTOR
        for field in descriptor.fields:
            if field.message_type is not None or field.is_repeated:
                continue
            values = _hostile_values(field)
            for value in values:
                if getattr(message, field.name) == value:
                    continue
                edited = copy.deepcopy(encoding)
                target = _follow(edited, path)
                try:
                    setattr(target, field.name, value)
                except (TypeError, ValueError):
                    continue
                yield f"{'.'.join(map(str, path)) or 'root'}.{field.name} = {value!r}", edited
        oneof = descriptor.oneofs[0] if descriptor.oneofs else None
        if oneof is not None and message.WhichOneof(oneof.name):
            edited = copy.deepcopy(encoding)
            _follow(edited, path).ClearField(message.WhichOneof(oneof.name))
            yield f"{'.'.join(map(str, path)) or 'root'}: {oneof.name} cleared", edited


def _hostile_values(field: FieldDescriptor) -> list[object]:
    kind = field.type
    if kind == field.TYPE_BOOL:
        return [True, False]
    if kind == field.TYPE_ENUM:
        return [0, 1, 2, 7]
    if kind == field.TYPE_UINT64:
        return list(HOSTILE_U64)
    if kind == field.TYPE_UINT32:
        return list(HOSTILE_U32)
    if kind == field.TYPE_INT32:
        return [-1, 0, 1, 2**31 - 1]
    if kind == field.TYPE_STRING:
        return ["", "zstd", "lz4", "none", "snappy"]
    if kind == field.TYPE_BYTES:
        # Empty, zeros, and an FSST table header claiming 255 symbols it lacks.
        return [b"", b"\x00" * 8, struct.pack("<Q", 0x46535354 << 32 | 1 << 24 | 255)]
    return []


FieldPath = tuple[object, ...]  # field names, and indices into repeated fields


def _messages(message: Message, path: FieldPath) -> Iterator[tuple[FieldPath, Message]]:
    yield path, message
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.is_repeated:
            for i, item in enumerate(value):
                yield from _messages(item, (*path, field.name, i))
        else:
            yield from _messages(value, (*path, field.name))


def _follow(message: Message, path: FieldPath) -> Message:
    node: Any = message
    for step in path:
        node = node[step] if isinstance(step, int) else getattr(node, str(step))
    result: Message = node
    return result
