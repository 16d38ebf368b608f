"""How a schema maps onto the columns of a 2.0 file.

Fields are laid out in pre-order, one column each: a struct contributes a
header column (pages with no buffers) before its children, a list contributes
an offsets column before its items, and every other field (including a
fixed-size list) is a single leaf column.  So a field's column index is its
position in the flattened field list.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

import pyarrow as pa


class Kind(Enum):
    LEAF = "leaf"
    STRUCT = "struct"
    LIST = "list"


@dataclass(frozen=True)
class FieldNode:
    field: pa.Field
    column: int
    children: tuple[FieldNode, ...]

    @property
    def kind(self) -> Kind:
        dtype = self.field.type
        if pa.types.is_struct(dtype):
            return Kind.STRUCT
        if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
            return Kind.LIST
        return Kind.LEAF

    def walk(self) -> Iterator[FieldNode]:
        yield self
        for child in self.children:
            yield from child.walk()


def _child_fields(dtype: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(dtype):
        return [dtype.field(i) for i in range(dtype.num_fields)]
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return [dtype.value_field]
    return []


def build_layout(schema: pa.Schema) -> list[FieldNode]:
    """One node per top-level field, with column indices assigned in pre-order."""
    counter = [0]

    def node(field: pa.Field) -> FieldNode:
        column = counter[0]
        counter[0] += 1
        children = tuple(node(child) for child in _child_fields(field.type))
        return FieldNode(field, column, children)

    return [node(field) for field in schema]


def column_count(nodes: list[FieldNode]) -> int:
    return sum(1 for top in nodes for _ in top.walk())
