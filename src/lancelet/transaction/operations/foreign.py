"""Operations written by another implementation that lancelet does not perform
(``update_mem_wal_state``, ``clone``, ...), kept with just enough detail to judge
conflicts against them.  They are decoded, never encoded or folded."""

from __future__ import annotations

from dataclasses import dataclass

from lancelet.errors import DatasetError
from lancelet.table.manifest import Manifest
from lancelet.transaction.claims import Claims
from lancelet.transaction.operations.folding import FoldContext


@dataclass(frozen=True)
class Foreign:
    """``touched`` holds the fragment ids it rewrote or removed, ``None`` meaning
    "possibly all of them"."""

    name: str
    touched: frozenset[int] | None


def decode(name: str) -> Foreign:
    """An operation lancelet does not perform, with the fragments it may have changed."""
    if name == "update_mem_wal_state":
        return Foreign(name, frozenset())
    return Foreign(name, None)


def fold(base: Manifest | None, op: Foreign, ctx: FoldContext) -> Manifest:
    raise DatasetError(f"lancelet cannot commit a {op.name} operation")


def claims(op: Foreign) -> Claims | None:
    return None if op.touched is None else Claims(op.touched, changes_fields=True)
