"""What each kind of operation says it changed, for :mod:`.verify` to hold against
the difference between a winner's manifest and its predecessor's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lancelet.table.fragment import Fragment
from lancelet.transaction.operations import (
    Append,
    CreateIndex,
    DataReplacement,
    Delete,
    Foreign,
    Merge,
    Operation,
    Project,
    ReserveFragments,
    Rewrite,
    Update,
    UpdateBases,
    UpdateConfig,
)


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


def anything(op: Operation) -> Claims | None:
    """None: the operation may change anything (so the rules treat it as such)."""
    return None


def nothing(op: ReserveFragments | UpdateConfig | UpdateBases | CreateIndex) -> Claims:
    return Claims(frozenset())


def append(op: Append) -> Claims:
    return Claims(frozenset(), files_of(op.fragments))


def delete(op: Delete) -> Claims:
    return Claims(frozenset({f.id for f in op.updated_fragments} | set(op.deleted_fragment_ids)))


def update(op: Update) -> Claims:
    touched = {f.id for f in op.updated_fragments} | set(op.removed_fragment_ids)
    return Claims(frozenset(touched), files_of(op.new_fragments))


def rewrite(op: Rewrite) -> Claims:
    new = files_of(f for g in op.groups for f in g.new_fragments)
    return Claims(frozenset(op.old_ids()), new)


def project(op: Project) -> Claims:
    return Claims(frozenset(), only_files_dropped=True, changes_fields=True)


def merge(op: Merge) -> Claims:
    return Claims(frozenset(), files_of(op.fragments), only_files_added=True, changes_fields=True)


def data_replacement(op: DataReplacement) -> Claims:
    return Claims(frozenset(op.fragment_ids()))


def foreign(op: Foreign) -> Claims | None:
    return None if op.touched is None else Claims(op.touched, changes_fields=True)
