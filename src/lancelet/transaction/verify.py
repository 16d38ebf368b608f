"""A winner's transaction checked against what its manifest did.

The conflict rules decide from what a winner's transaction file says it changed.  A
file that names the wrong fragments (damaged, or written by a buggy writer) would let a
rebase keep a stale copy of a fragment the winner really changed, bringing deleted rows
back.  So before a rule reads a winner's claims, they are compared with the difference
between the winner's manifest and its predecessor's, which is what readers will see.
"""

from __future__ import annotations

from dataclasses import dataclass

from lancelet.errors import CorruptDatasetError
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.transaction.claims import Claims, files_of
from lancelet.transaction.operations import Append, Operation, Transaction
from lancelet.transaction.registry import claims_of, kind_of


@dataclass(frozen=True)
class _Difference:
    """What changed from one manifest to the next, as far as rows are concerned."""

    # Fragments of the older manifest changed in any way, or gone.
    changed: dict[int, tuple[Fragment, Fragment | None]]
    # Data files of the fragments new in the newer manifest.
    added_files: frozenset[str]
    # Field ids, parents and types (names and metadata aside).
    fields_changed: bool


def _field_shapes(manifest: Manifest) -> list[tuple[int, int, str]]:
    return [(f.id, f.parent_id, f.logical_type) for f in manifest.schema.fields]


def _difference(before: Manifest, after: Manifest) -> _Difference:
    now = {f.id: f for f in after.fragments}
    # Fragments a manifest kept are usually the very values the one before it held.
    changed = {f.id: (f, g) for f in before.fragments if (g := now.get(f.id)) is not f and g != f}
    old_ids = {f.id for f in before.fragments}
    return _Difference(
        changed,
        files_of(f for f in after.fragments if f.id not in old_ids),
        _field_shapes(before) != _field_shapes(after),
    )


def _allowed(claims: Claims, old: Fragment, new: Fragment | None) -> bool:
    """A change to a fragment the operation did not list, which it may still make."""
    same_rows = new is not None and new.physical_rows == old.physical_rows
    if new is None or not same_rows or new.deletion_file != old.deletion_file:
        return False
    kept, was = set(new.files), set(old.files)
    if claims.only_files_dropped:
        return kept < was
    return claims.only_files_added and was < kept


def winners_need_checking(mine: Operation) -> bool:
    """Whether ``mine`` must have each winner's claims checked against its manifests.

    An append only adds fragments of its own to the latest manifest: whatever a winner
    did, it carries no copy of a fragment the winner changed, so no row can come back
    however the winner's transaction file is wrong.  Its outcome follows from the
    winner's kind alone, and its commit needs none of the winners' manifests."""
    return not isinstance(mine, Append)


def check_read_version(theirs: Transaction | None, version: int, where: str) -> None:
    """Raise if ``theirs``, committed as ``version``, claims to have read a version
    that is not older."""
    if theirs is not None and theirs.read_version >= version:
        _refuse(
            where,
            theirs.operation,
            [f"its transaction claims to have read version {theirs.read_version}"],
        )


def check_winner(theirs: Transaction | None, before: Manifest, after: Manifest, where: str) -> None:
    """Raise unless ``theirs`` (committed as ``after`` on top of ``before``) describes
    every fragment and field change between the two.  ``where`` names the version."""
    if theirs is None:
        return  # the rules treat an unknown operation as one that changed anything
    op = theirs.operation
    check_read_version(theirs, after.version, where)
    claims = claims_of(op)
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
    if seen.fields_changed and not claims.changes_fields:
        problems.append("the schema's fields changed")
    if problems:
        _refuse(where, op, problems)


def _refuse(where: str, op: Operation, problems: list[str]) -> None:
    raise CorruptDatasetError(
        f"{where}: the manifest disagrees with its transaction ({kind_of(op)}): "
        + "; ".join(problems)
        + "; refusing to rebase over it"
    )
