"""A winner's transaction checked against what its manifest did.

The conflict rules decide from what a winner's transaction file says it changed.  A
file that names the wrong fragments (damaged, or written by a buggy writer) would let a
rebase keep a stale copy of a fragment the winner really changed, bringing deleted rows
back.  So before a rule reads a winner's claims, they are compared with the difference
between the winner's manifest and its predecessor's, which is what readers will see.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lancelet.errors import CorruptDatasetError
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.conflicts import kind_of
from lancelet.transaction.operations import (
    Append,
    Delete,
    Foreign,
    Merge,
    Operation,
    Overwrite,
    Project,
    ReserveFragments,
    Restore,
    Rewrite,
    Transaction,
    Update,
    UpdateConfig,
)


@dataclass(frozen=True)
class _Difference:
    """What changed from one manifest to the next, as far as rows are concerned."""

    # Fragments of the older manifest changed in any way, or gone.
    changed: dict[int, tuple[Fragment, Fragment | None]]
    # Data files of the fragments new in the newer manifest.
    added_files: frozenset[str]
    # Field ids, parents and types (names and metadata aside).
    fields_changed: bool


def _files(fragments: Iterable[Fragment]) -> frozenset[str]:
    return frozenset(d.path for f in fragments for d in f.files)


def _field_shapes(manifest: Manifest) -> list[tuple[int, int, str]]:
    return [(f.id, f.parent_id, f.logical_type) for f in manifest.schema.fields]


def _difference(before: Manifest, after: Manifest) -> _Difference:
    now = {f.id: f for f in after.fragments}
    # Fragments a manifest kept are usually the very values the one before it held.
    changed = {f.id: (f, g) for f in before.fragments if (g := now.get(f.id)) is not f and g != f}
    old_ids = {f.id for f in before.fragments}
    return _Difference(
        changed,
        _files(f for f in after.fragments if f.id not in old_ids),
        _field_shapes(before) != _field_shapes(after),
    )


@dataclass(frozen=True)
class _Claims:
    """What an operation says it did.  ``touched`` are the existing fragments it may
    change or remove; ``added_files`` the data files of the fragments it adds."""

    touched: frozenset[int]
    added_files: frozenset[str] = frozenset()
    # Kinds of change allowed to the touched fragments beyond the listed ones.
    only_files_dropped: bool = False
    only_files_added: bool = False


def _claims(op: Operation) -> _Claims | None:
    """None: the operation may change anything (so the rules treat it as such)."""
    if isinstance(op, (Overwrite, Restore)):
        return None
    if isinstance(op, Append):
        return _Claims(frozenset(), _files(op.fragments))
    if isinstance(op, Delete):
        return _Claims(
            frozenset({f.id for f in op.updated_fragments} | set(op.deleted_fragment_ids))
        )
    if isinstance(op, Update):
        touched = {f.id for f in op.updated_fragments} | set(op.removed_fragment_ids)
        return _Claims(frozenset(touched), _files(op.new_fragments))
    if isinstance(op, Rewrite):
        new = _files(f for g in op.groups for f in g.new_fragments)
        return _Claims(frozenset(op.old_ids()), new)
    if isinstance(op, Project):
        return _Claims(frozenset(), only_files_dropped=True)
    if isinstance(op, Merge):
        return _Claims(frozenset(), _files(op.fragments), only_files_added=True)
    if isinstance(op, (UpdateConfig, ReserveFragments)):
        return _Claims(frozenset())
    assert isinstance(op, Foreign)
    return None if op.touched is None else _Claims(op.touched)


def _changes_fields(op: Operation) -> bool:
    return isinstance(op, (Overwrite, Restore, Project, Merge, Foreign))


def _allowed(claims: _Claims, old: Fragment, new: Fragment | None) -> bool:
    """A change to a fragment the operation did not list, which it may still make."""
    same_rows = new is not None and new.physical_rows == old.physical_rows
    if new is None or not same_rows or new.deletion_file != old.deletion_file:
        return False
    kept, was = set(new.files), set(old.files)
    if claims.only_files_dropped:
        return kept < was
    return claims.only_files_added and was < kept


def check_winner(theirs: Transaction | None, before: Manifest, after: Manifest, where: str) -> None:
    """Raise unless ``theirs`` (committed as ``after`` on top of ``before``) describes
    every fragment and field change between the two.  ``where`` names the version."""
    if theirs is None:
        return  # the rules treat an unknown operation as one that changed anything
    op = theirs.operation
    if theirs.read_version >= after.version:
        _refuse(where, op, [f"its transaction claims to have read version {theirs.read_version}"])
    claims = _claims(op)
    if claims is None:
        return
    seen = _difference(before, after)
    unlisted = sorted(
        fid
        for fid, (old, new) in seen.changed.items()
        if fid not in claims.touched and not _allowed(claims, old, new)
    )
    problems = []
    if unlisted:
        problems.append(f"fragments {unlisted[:10]} changed, which its transaction does not list")
    if seen.added_files - claims.added_files:
        extra = sorted(seen.added_files - claims.added_files)
        problems.append(f"data files {extra[:3]} were added, which its transaction does not list")
    if seen.fields_changed and not _changes_fields(op):
        problems.append("the schema's fields changed")
    if problems:
        _refuse(where, op, problems)


def _refuse(where: str, op: Operation, problems: list[str]) -> None:
    raise CorruptDatasetError(
        f"{where}: the manifest disagrees with its transaction ({kind_of(op)}): "
        + "; ".join(problems)
        + "; refusing to rebase over it"
    )
