"""How a 2.1+ file's schema maps onto its columns, worked out once per schema: the
many small files of one dataset (a compaction reads a hundred) share it."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from lancelet.file.memo import Memo
from lancelet.file.v2_1.read import fields as fields21
from lancelet.file.v2_1.read import layout as layout21

__all__ = ["SHAPES", "ColumnShape"]


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
