"""Operations written by another implementation that lancelet does not perform
(``update_mem_wal_state``, ``clone``, ...), kept with just enough detail to judge
conflicts against them.  They are decoded, never encoded or folded."""

from __future__ import annotations

from dataclasses import dataclass

from lancelet.errors import DatasetError
from lancelet.table.manifest import Manifest
from lancelet.transaction.claims import Claims
from lancelet.transaction.operations.folding import FoldContext
from lancelet.transaction.operations.kind import Message


@dataclass(frozen=True)
class Foreign:
    """``touched`` holds the fragment ids it rewrote or removed, ``None`` meaning
    "possibly all of them"."""

    name: str
    touched: frozenset[int] | None
    # What pylance's API shows of it: a clone's source (None for other kinds).
    clone: CloneSource | None = None


@dataclass(frozen=True)
class CloneSource:
    """The dataset and version a clone was made from, as its first transaction says."""

    is_shallow: bool
    ref_name: str | None
    ref_version: int
    ref_path: str
    branch_name: str | None


def decode(name: str, pb: Message = None) -> Foreign:
    """An operation lancelet does not perform, with the fragments it may have changed."""
    if name == "update_mem_wal_state":
        return Foreign(name, frozenset())
    if name == "clone" and pb is not None:
        return Foreign(name, None, _clone_source(pb))
    return Foreign(name, None)


def _clone_source(pb: Message) -> CloneSource:
    return CloneSource(
        pb.is_shallow,
        pb.ref_name if pb.HasField("ref_name") else None,
        pb.ref_version,
        pb.ref_path,
        pb.branch_name if pb.HasField("branch_name") else None,
    )


def fold(base: Manifest | None, op: Foreign, ctx: FoldContext) -> Manifest:
    raise DatasetError(f"lancelet cannot commit a {op.name} operation")


def claims(op: Foreign) -> Claims | None:
    return None if op.touched is None else Claims(op.touched, changes_fields=True)
