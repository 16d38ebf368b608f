"""How a schema maps onto the columns of a 2.1 / 2.2 file.

Only leaves have columns, numbered in pre-order: a primitive, string or binary
field, a fixed-size list of primitives, a packed struct, and an empty struct (a
column with a constant page that only carries the row count).  Structs and lists
have no column of their own: every leaf below them carries their validity (and a
list's offsets) in its repetition and definition levels, one layer per ancestor.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

import pyarrow as pa

from lancelet.file.schema import is_list_like, item_field
from lancelet.file.v2_0.layout import is_packed_struct


class Kind(Enum):
    LEAF = "leaf"
    EMPTY_STRUCT = "empty struct"
    STRUCT = "struct"
    LIST = "list"


_STRUCT_ID = pa.struct([]).id


def kind_of(field: pa.Field) -> Kind:
    dtype = field.type
    if dtype.id == _STRUCT_ID:
        if is_packed_struct(field):
            return Kind.LEAF
        return Kind.STRUCT if dtype.num_fields else Kind.EMPTY_STRUCT
    if is_list_like(dtype):
        return Kind.LIST  # a map is stored as a list of its entries
    return Kind.LEAF


@dataclass(frozen=True)
class Node:
    """A field, its leaf column (leaves only), its children and its depth (0: top)."""

    field: pa.Field
    column: int | None
    children: tuple[Node, ...]
    depth: int
    path: str
    # Worked out once, as the node is made: reads ask it of every node again and again.
    kind: Kind = dataclasses.field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", kind_of(self.field))

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()

    def leaves(self) -> list[Node]:
        return [n for n in self.walk() if n.column is not None]

    def renamed(self, name: str) -> Node:
        return Node(self.field.with_name(name), self.column, self.children, self.depth, self.path)


def _children(field: pa.Field, kind: Kind) -> list[pa.Field]:
    dtype = field.type
    if kind is Kind.STRUCT:
        return [dtype.field(i) for i in range(dtype.num_fields)]
    if kind is Kind.LIST:
        return [item_field(dtype)]
    return []


def build_layout(schema: pa.Schema) -> list[Node]:
    """One node per top-level field, leaf columns numbered in pre-order."""
    counter = [0]
    return [_node(field, 0, "", counter) for field in schema]


def _node(field: pa.Field, depth: int, prefix: str, counter: list[int]) -> Node:
    """``field``'s node, its leaf columns numbered from ``counter[0]`` (advanced past
    them).  A module function: a recursive closure holds itself, a cycle only the
    garbage collector frees."""
    path = prefix + field.name
    column = None
    kind = kind_of(field)
    if kind in (Kind.LEAF, Kind.EMPTY_STRUCT):
        column = counter[0]
        counter[0] += 1
    kids = tuple(_node(c, depth + 1, path + ".", counter) for c in _children(field, kind))
    return Node(field, column, kids, depth, path)


def column_labels(nodes: list[Node]) -> list[str]:
    """A name for each column, for error messages: ``column 'a.b'`` (dotted path)."""
    labels: dict[int, str] = {}
    for top in nodes:
        for n in top.walk():
            if n.column is not None:
                labels[n.column] = f"column {n.path!r}"
    return [labels[i] for i in sorted(labels)]


def _nested_fields(dtype: pa.DataType) -> int:
    """How many fields a schema stores below a field of type ``dtype`` (a fixed-size
    list of primitives is one field)."""
    if pa.types.is_struct(dtype):
        return sum(1 + _nested_fields(dtype.field(i).type) for i in range(dtype.num_fields))
    if is_list_like(dtype):
        return 1 + _nested_fields(item_field(dtype).type)
    return 0


def field_owners(nodes: list[Node]) -> list[bool]:
    """For each field of the schema, in pre-order (the order of its field ids): whether
    it owns a column.  A packed struct's fields are fields of the schema stored inside
    the struct's column, so they own none."""
    out: list[bool] = []
    for top in nodes:
        for node in top.walk():
            out.append(node.column is not None)
            if node.kind is Kind.LEAF:
                out += [False] * _nested_fields(node.field.type)
    return out
