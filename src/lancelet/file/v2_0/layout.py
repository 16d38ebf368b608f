"""How a schema maps onto the columns of a 2.0 file.

Fields are laid out in pre-order, one column each: a struct contributes a
header column (pages with no buffers) before its children, a list contributes
an offsets column before its items, and every other field (including a
fixed-size list) is a single leaf column.  A *packed* struct (see
:func:`is_packed_struct`) is also a single leaf column holding all of its
descendants row by row, so its children get no columns of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum

import pyarrow as pa

PACKED_KEY = b"lance-encoding:packed"
LEGACY_PACKED_KEY = b"packed"
# The values pylance 14.0.2 takes as "true" for the legacy key (case-insensitive).
_TRUTHY = (b"true", b"1", b"yes", b"y", b"on")


def is_packed_struct(field: pa.Field) -> bool:
    """Whether the reference writer stores this struct field as one packed column.

    This is pylance 14.0.2's *writer* rule, found by experiment: a legacy
    ``packed`` key decides when present (truthy value -> packed); otherwise the
    mere presence of ``lance-encoding:packed``, whatever its value, packs.  Its
    reader counts columns differently for a few odd values (e.g.
    ``lance-encoding:packed=false``) and cannot read such files back; lancelet
    follows the writer so it reads what is physically there.
    """
    if not pa.types.is_struct(field.type):
        return False
    meta = field.metadata or {}
    legacy = meta.get(LEGACY_PACKED_KEY)
    if legacy is not None:
        return legacy.lower() in _TRUTHY
    return PACKED_KEY in meta


class Kind(Enum):
    LEAF = "leaf"
    STRUCT = "struct"
    LIST = "list"


@dataclass(frozen=True)
class FieldNode:
    field: pa.Field
    column: int
    children: tuple[FieldNode, ...]
    # A string or binary field stored the way early 2.0 writers (pylance 0.13) did:
    # as a list of uint8, an offsets column followed by a bytes column.
    bytes_as_list: bool = False

    @property
    def kind(self) -> Kind:
        if self.bytes_as_list:
            return Kind.LIST
        dtype = self.field.type
        if pa.types.is_struct(dtype):
            return Kind.LEAF if is_packed_struct(self.field) else Kind.STRUCT
        if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
            return Kind.LIST
        return Kind.LEAF

    def walk(self) -> Iterator[FieldNode]:
        yield self
        for child in self.children:
            yield from child.walk()


def _child_fields(field: pa.Field) -> list[pa.Field]:
    dtype = field.type
    if is_packed_struct(field):
        return []
    if pa.types.is_struct(dtype):
        return [dtype.field(i) for i in range(dtype.num_fields)]
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return [dtype.value_field]
    return []


def is_bytes_type(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(dtype)
        or pa.types.is_large_string(dtype)
        or pa.types.is_binary(dtype)
        or pa.types.is_large_binary(dtype)
    )


def build_layout(
    schema: pa.Schema, list_encoded: Callable[[int], bool] | None = None
) -> list[FieldNode]:
    """One node per top-level field, with column indices assigned in pre-order.

    ``list_encoded(column)`` says whether a file's column holds list pages: given,
    a string or binary field whose column does is taken as an early 2.0 list of
    bytes and given a second column for the bytes.
    """
    counter = [0]
    return [_node(field, counter, list_encoded) for field in schema]


def _node(
    field: pa.Field, counter: list[int], list_encoded: Callable[[int], bool] | None
) -> FieldNode:
    """``field``'s node, its columns numbered from ``counter[0]`` (advanced past them).
    A module function: a recursive closure holds itself, a cycle only the garbage
    collector frees."""
    column = counter[0]
    counter[0] += 1
    if list_encoded is not None and is_bytes_type(field.type) and list_encoded(column):
        counter[0] += 1
        item = FieldNode(pa.field("item", pa.uint8(), nullable=False), column + 1, ())
        return FieldNode(field, column, (item,), bytes_as_list=True)
    children = tuple(_node(child, counter, list_encoded) for child in _child_fields(field))
    return FieldNode(field, column, children)


def column_count(nodes: list[FieldNode]) -> int:
    return sum(1 for top in nodes for _ in top.walk())


def column_labels(nodes: list[FieldNode]) -> list[str]:
    """A name for each column, for error messages: ``column 'a.b'`` (dotted path)."""
    labels: dict[int, str] = {}
    for top in nodes:
        _label(top, "", labels)
    return [labels[i] for i in sorted(labels)]


def _label(node: FieldNode, prefix: str, labels: dict[int, str]) -> None:
    path = prefix + node.field.name
    labels[node.column] = f"column {path!r}"
    for child in node.children:
        _label(child, path + ".", labels)
