"""How a 2.1+ file's schema maps onto its columns, worked out once per schema: the
many small files of one dataset (a compaction reads a hundred) share it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

import pyarrow as pa

from lancelet.file.container import Columns
from lancelet.file.memo import Memo
from lancelet.file.v2_1.read import fields as fields21
from lancelet.file.v2_1.read import layout as layout21
from lancelet.io.base import InputFile

__all__ = ["SHAPES", "ColumnShape", "Leaves"]


@dataclass(frozen=True)
class ColumnShape:
    """The schema's field tree, its leaves' column labels and lineages, each leaf by
    column, and which fields own a column (in pre-order).  Shared: never mutated."""

    nodes: tuple[layout21.Node, ...]
    labels: list[str]
    kinds: dict[int, tuple[layout21.Kind, ...]]
    by_column: dict[int, layout21.Node]
    owners: list[bool]

    @staticmethod
    def of(schema: pa.Schema) -> ColumnShape:
        nodes = layout21.build_layout(schema)
        by_column = {n.column: n for top in nodes for n in top.walk() if n.column is not None}
        return ColumnShape(
            tuple(nodes),
            layout21.column_labels(nodes),
            fields21.lineages(nodes),
            by_column,
            layout21.field_owners(nodes),
        )


# By a reader's schema key (format family and stored schema).
SHAPES: Memo[ColumnShape] = Memo(64)


class Leaves(Sequence[fields21.LeafColumn]):
    """A 2.1+ file's leaf columns, each made when first asked for (with its column's
    pages: see :class:`~lancelet.file.container.Columns`)."""

    def __init__(self, source: InputFile, columns: Columns, shape: ColumnShape) -> None:
        self._source = source
        self._columns = columns
        self._shape = shape
        self._made: dict[int, fields21.LeafColumn] = {}

    def __len__(self) -> int:
        return len(self._columns)

    @overload
    def __getitem__(self, index: int) -> fields21.LeafColumn: ...

    @overload
    def __getitem__(self, index: slice) -> list[fields21.LeafColumn]: ...

    def __getitem__(self, index: int | slice) -> fields21.LeafColumn | list[fields21.LeafColumn]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        if index < 0:
            index += len(self)
        found = self._made.get(index)
        if found is None:
            shape = self._shape
            found = fields21.LeafColumn(
                self._source,
                self._columns[index],
                index,
                shape.labels[index],
                shape.by_column[index],
                shape.kinds[index],
                release=self._source.release,
            )
            # Two threads may both make it, alike: the first kept is the one used.
            found = self._made.setdefault(index, found)
        return found
