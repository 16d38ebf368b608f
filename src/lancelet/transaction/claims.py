"""What an operation says it changed, for :mod:`.verify` to hold against the
difference between a winner's manifest and its predecessor's.  Each kind states
its claims in its module under :mod:`.operations`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lancelet.table.fragment import Fragment


@dataclass(frozen=True)
class Claims:
    """``touched`` are the existing fragments an operation may change or remove;
    ``added_files`` the data files of the fragments it adds."""

    touched: frozenset[int]
    added_files: frozenset[str] = frozenset()
    # Kinds of change allowed to the touched fragments beyond the listed ones.
    only_files_dropped: bool = False
    only_files_added: bool = False
    # Whether the schema's fields (ids, parents, types) may change.
    changes_fields: bool = False


def files_of(fragments: Iterable[Fragment]) -> frozenset[str]:
    return frozenset(d.path for f in fragments for d in f.files)


def anything(op: object) -> Claims | None:
    """None: the operation may change anything (so the rules treat it as such)."""
    return None


def nothing(op: object) -> Claims:
    """No fragment touched and no file added (indices, config, bases, reservations)."""
    return Claims(frozenset())
