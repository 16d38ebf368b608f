"""The case-by-case rules of the conflict table in :mod:`.conflicts`, each named for
the conflict it looks for.

A check is called with my transaction, the operation committed as ``version`` after
the version I read, that version and a :class:`RebaseContext`.  It returns my
transaction (rebased onto theirs when the two commute only so, such as two deletes on
one fragment whose deletion vectors are merged), or raises
:class:`RetryableCommitConflictError` (re-read and redo) or
:class:`IncompatibleTransactionError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol, Union

import numpy as np

from lancelet.errors import IncompatibleTransactionError, RetryableCommitConflictError
from lancelet.table.fragment import Fragment
from lancelet.table.index import FRAG_REUSE_INDEX
from lancelet.table.manifest import Manifest
from lancelet.transaction.map_update import MapUpdate
from lancelet.transaction.operations import (
    Append,
    CreateIndex,
    DataReplacement,
    Delete,
    Foreign,
    Operation,
    Overwrite,
    Rewrite,
    Transaction,
    Update,
    UpdateConfig,
)
from lancelet.transaction.operations.folding import uncover
from lancelet.transaction.registry import kind_of


class RebaseContext(Protocol):
    """What a rebase may read and write: the store, as far as conflicts need it."""

    def read_manifest(self, version: int) -> Manifest: ...
    def read_deletions(self, fragment: Fragment) -> np.ndarray: ...
    def delete_rows(
        self, fragment: Fragment, rows: np.ndarray, read_version: int
    ) -> Fragment | None: ...


Check = Callable[[Transaction, Operation, int, RebaseContext], Transaction]

RowChange = Union[Delete, Update]  # noqa: UP007 - a runtime alias


def _changed_fragments(op: RowChange) -> tuple[tuple[Fragment, ...], tuple[int, ...]]:
    """The fragments whose deletion vector an operation grew, and those it removed."""
    if isinstance(op, Delete):
        return op.updated_fragments, op.deleted_fragment_ids
    return op.updated_fragments, op.removed_fragment_ids


def _touched(op: Operation) -> set[int] | None:
    """Existing fragments an operation rewrote, re-deleted or removed (None: maybe all)."""
    if isinstance(op, (Delete, Update)):
        updated, removed = _changed_fragments(op)
        return {f.id for f in updated} | set(removed)
    if isinstance(op, Rewrite):
        return op.old_ids()
    if isinstance(op, DataReplacement):
        return op.fragment_ids()
    if isinstance(op, Foreign):
        return None if op.touched is None else set(op.touched)
    return None


def _retry(
    theirs: Operation, version: int, mine: Operation, why: str
) -> RetryableCommitConflictError:
    return RetryableCommitConflictError(
        f"version {version} ({kind_of(theirs)}) {why} this {kind_of(mine)} "
        "read; re-read the dataset and try again"
    )


def fragments_rewritten(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
    """Theirs rewrote, re-deleted or removed a fragment mine changes (or may have)."""
    touched, own = _touched(theirs), _touched(mine.operation)
    assert own is not None
    if touched is None or touched & own:
        raise _retry(theirs, version, mine.operation, "rewrote fragments")
    return mine


def rows_changed_by_both(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
    """Deletes and updates that marked different rows of one fragment commute: mine is
    rebased onto theirs by uniting the deletion vectors.  The same row changed by
    both, or a fragment one of them removed or rewrote, needs a retry."""
    op = mine.operation
    assert isinstance(op, (Delete, Update)) and isinstance(theirs, (Delete, Update))
    their_updated, their_removed = _changed_fragments(theirs)
    my_updated, my_removed = _changed_fragments(op)
    theirs_grown, mine_grown = {f.id for f in their_updated}, {f.id for f in my_updated}
    # A removed fragment cannot take the other side's deletions.
    if set(their_removed) & (mine_grown | set(my_removed)) or theirs_grown & set(my_removed):
        raise _retry(theirs, version, op, "removed or changed rows of fragments")
    shared = theirs_grown & mine_grown
    if not shared:
        return mine
    before, after = ctx.read_manifest(version - 1), ctx.read_manifest(version)
    rebased: list[Fragment] = []
    removed = list(my_removed)
    for fragment in my_updated:
        if fragment.id not in shared:
            rebased.append(fragment)
            continue
        merged = _unite_deletions(ctx, fragment, before, after, version)
        if merged is None:
            removed.append(fragment.id)
        else:
            rebased.append(merged)
    if isinstance(op, Delete):
        new_op: Operation = Delete(tuple(rebased), tuple(removed), op.predicate)
    else:
        new_op = replace(op, updated_fragments=tuple(rebased), removed_fragment_ids=tuple(removed))
    return replace(mine, operation=new_op)


def _unite_deletions(
    ctx: RebaseContext, mine: Fragment, before: Manifest, after: Manifest, version: int
) -> Fragment | None:
    was, now = before.fragment(mine.id), after.fragment(mine.id)
    if was is None or now is None or now.files != mine.files:
        raise RetryableCommitConflictError(
            f"version {version} rewrote the data of fragment {mine.id}; re-read and retry"
        )
    earlier = ctx.read_deletions(was)
    my_rows = np.setdiff1d(ctx.read_deletions(mine), earlier)
    their_rows = np.setdiff1d(ctx.read_deletions(now), earlier)
    both = np.intersect1d(my_rows, their_rows)
    if len(both):
        raise RetryableCommitConflictError(
            f"version {version} also changed rows {both[:5].tolist()} of fragment {mine.id}; "
            "re-read the dataset and retry"
        )
    return ctx.delete_rows(now, my_rows, version)


def _added_by(op: Operation) -> tuple[Fragment, ...]:
    if isinstance(op, Append):
        return op.fragments
    if isinstance(op, Update):
        return op.new_fragments
    return ()


def keys_inserted_by_both(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
    """An upsert must not insert a key that a concurrent commit added meanwhile."""
    op = mine.operation
    assert isinstance(op, Update)
    if op.inserted_keys is not None and _added_by(theirs):
        schema = ctx.read_manifest(version).schema
        if op.inserted_keys.found_in(_added_by(theirs), schema):
            raise RetryableCommitConflictError(
                f"version {version} ({kind_of(theirs)}) inserted keys this upsert also "
                "inserts; re-read the dataset and try again"
            )
    if isinstance(theirs, Update):
        return rows_changed_by_both(mine, theirs, version, ctx)
    return mine


def _config_changes(op: Operation) -> tuple[set[str], set[str]]:
    """The config keys an operation sets, and those it removes."""
    if isinstance(op, UpdateConfig):
        return set(op.upsert_values), set(op.delete_keys)
    if isinstance(op, Overwrite):
        return set(op.config_upsert_values), set()
    return set(), set()


def _clashing_keys(mine: tuple[set[str], set[str]], theirs: tuple[set[str], set[str]]) -> set[str]:
    """Keys one side sets while the other sets or removes them.  Removing a key
    twice gives the same map in either order, so that is no clash."""
    (my_set, my_removed), (their_set, their_removed) = mine, theirs
    return (my_set & (their_set | their_removed)) | (their_set & my_removed)


def _map_changes(update: MapUpdate) -> tuple[set[str], set[str]]:
    removed = {k for k, v in update.entries.items() if v is None}
    return set(update.entries) - removed, removed


def _table_metadata_clash(op: Operation, theirs: Operation) -> bool:
    mine_update = op.table_metadata if isinstance(op, UpdateConfig) else None
    their_update = theirs.table_metadata if isinstance(theirs, UpdateConfig) else None
    if mine_update is None or their_update is None:
        return False
    if mine_update.replace or their_update.replace:
        return True
    return bool(_clashing_keys(_map_changes(mine_update), _map_changes(their_update)))


def _touches_schema_metadata(op: Operation) -> bool:
    return isinstance(op, UpdateConfig) and op.schema_metadata is not None


def _metadata_fields(op: Operation) -> set[int]:
    return set(op.field_metadata) if isinstance(op, UpdateConfig) else set()


def metadata_changed_by_both(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
    """Both set (or one set and one removed) a config key, or both changed the schema
    metadata, the metadata of one field or a table metadata key."""
    op = mine.operation
    overwrite = isinstance(theirs, Overwrite)
    same_keys = _clashing_keys(_config_changes(op), _config_changes(theirs))
    clashes = {
        f"config keys {sorted(same_keys)}": bool(same_keys),
        "the schema metadata": _touches_schema_metadata(op)
        and (_touches_schema_metadata(theirs) or overwrite),
        "the table metadata": _table_metadata_clash(op, theirs),
        "field metadata": bool(_metadata_fields(op))
        and (overwrite or bool(_metadata_fields(op) & _metadata_fields(theirs))),
    }
    for what, clash in clashes.items():
        if clash:
            raise IncompatibleTransactionError(
                f"version {version} ({kind_of(theirs)}) also changed {what}"
            )
    return mine


def indexed_fragments_changed(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
    """New indices stop claiming the fragments theirs removed or rewrote, and those
    whose indexed values it changed in place, as they would had they been committed
    first (see :func:`.operations.folding.uncover`)."""
    op = mine.operation
    assert isinstance(op, CreateIndex)
    if FRAG_REUSE_INDEX in op.names() and isinstance(theirs, Rewrite):
        # A trim judged which reuse versions the segments need before theirs.
        raise _retry(theirs, version, op, "rewrote fragments, which may change what")
    indices = op.new_indices
    if isinstance(theirs, Delete):
        indices = uncover(indices, set(theirs.deleted_fragment_ids))
    elif isinstance(theirs, Update):
        indices = uncover(indices, set(theirs.removed_fragment_ids))
        changed = {f.id for f in theirs.updated_fragments}
        indices = uncover(indices, changed, set(theirs.fields_modified))
    else:
        touched = _touched(theirs)
        if touched is None:
            raise _retry(theirs, version, op, "may have rewritten the fragments")
        indices = uncover(indices, touched)
    removed = op.removed_indices
    if isinstance(theirs, Rewrite) and theirs.rewritten_indices:
        # A segment theirs remapped lives on under its new uuid: drop that one.
        renamed = {r.old_id: r.new_id for r in theirs.rewritten_indices}
        removed = tuple(replace(i, uuid=renamed.get(i.uuid, i.uuid)) for i in removed)
    if indices == op.new_indices and removed == op.removed_indices:
        return mine
    return replace(mine, operation=replace(op, new_indices=indices, removed_indices=removed))


def _replaced_indexed_fields(replacement: DataReplacement, index: CreateIndex) -> set[int]:
    return replacement.field_ids() & {f for i in index.new_indices for f in i.fields}


def indexed_column_replaced(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
    """An index built over a column that a concurrent data replacement rewrote holds
    the old values (and the replacement could not know of the index): the reference
    retries whichever of the two commits last, whatever fragments either covers."""
    op = mine.operation
    replacement, index = (theirs, op) if isinstance(op, CreateIndex) else (op, theirs)
    assert isinstance(replacement, DataReplacement) and isinstance(index, CreateIndex)
    fields = sorted(_replaced_indexed_fields(replacement, index))
    if fields:
        raise RetryableCommitConflictError(
            f"version {version} ({kind_of(theirs)}) and this {kind_of(op)} both cover field "
            f"ids {fields}: one replaced their values, the other indexed them; re-read the "
            "dataset and try again"
        )
    return mine


def remapped_index_changed(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
    """A compaction that remapped index segments needs them still there: one that was
    replaced or dropped meanwhile would come back, or its replacement be lost."""
    op = mine.operation
    assert isinstance(op, Rewrite)
    if (
        op.frag_reuse_index is not None
        and isinstance(theirs, CreateIndex)
        and FRAG_REUSE_INDEX in theirs.names()
    ):
        raise _retry(theirs, version, op, "replaced the fragment reuse index that")
    present = {i.uuid for i in ctx.read_manifest(version).indices}
    gone = sorted(str(r.old_id) for r in op.rewritten_indices if r.old_id not in present)
    if gone:
        raise _retry(theirs, version, op, f"replaced or dropped index segments {gone} that")
    return mine


def same_index_changed(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
    """Both added, replaced or dropped an index of one name (or the reuse index)."""
    op = mine.operation
    assert isinstance(op, CreateIndex) and isinstance(theirs, CreateIndex)
    both = sorted(op.names() & theirs.names())
    if FRAG_REUSE_INDEX in op.names() | theirs.names():
        # A trim judged what every segment needs; a segment built meanwhile may need
        # a reuse version it dropped.
        both = sorted({*both, FRAG_REUSE_INDEX})
    if both:
        raise RetryableCommitConflictError(
            f"version {version} also added, replaced or dropped indices {both}; "
            "re-read the dataset and try again"
        )
    return mine


def indexed_field_removed(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
    """A schema change that kept every field the new indices cover is no conflict."""
    op = mine.operation
    assert isinstance(op, CreateIndex)
    fields = {f.id for f in ctx.read_manifest(version).schema.fields}
    gone = sorted({f for i in op.new_indices for f in i.fields} - fields)
    if gone:
        raise IncompatibleTransactionError(
            f"version {version} ({kind_of(theirs)}) removed or replaced field ids {gone}, "
            "which this index build covers"
        )
    return mine
