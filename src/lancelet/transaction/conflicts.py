"""What happens when my transaction meets one committed after the version I read.

The rules are a table: ``RULES[mine][theirs]`` (operation kind names as in
``transaction.proto``) gives the outcome, ``"*"`` covering the kinds not listed.

* ``OK``: the two commute; commit mine on top of theirs unchanged.
* ``RETRY``: mine was computed from data theirs changed; the caller must
  re-read the dataset and redo its work (:class:`RetryableCommitConflictError`).
* ``INCOMPATIBLE``: theirs makes mine meaningless (:class:`IncompatibleTransactionError`).
* a function: decides case by case and may return a rebased transaction, such
  as two deletes on one fragment whose deletion vectors are merged.

The table follows the reference's conflict resolver, with deliberate differences:

* a delete or update that meets a concurrent overwrite is retryable rather than
  incompatible, because re-running it on the new data is well defined;
* an upsert meeting a concurrent commit that added one of the keys it inserts
  is retryable, so that two upserts cannot both insert one new key;
* a rewrite meeting a concurrent index build is compatible: indices it did not
  remap stop claiming rewritten fragments when the manifest is built (only a build
  that replaced or dropped a segment the rewrite remapped makes it retry);
* likewise an index build meeting a concurrent rewrite, delete or update is rebased
  rather than retried: its new indices stop claiming the fragments the winner
  rewrote, removed or changed the indexed values of (those rows are scanned until the
  index is rebuilt), so it need not be built again; a segment it drops that the
  rewrite remapped is dropped under its new uuid;
* an index build and a data replacement of a column it indexes retry, in either
  order, as in the reference (other columns' replacements commute).  A replacement
  committed after the index, against a version that had it, is no conflict: folded
  onto the manifest, it makes every index over a replaced column stop claiming the
  replaced fragments, as pylance 14 does;
* a compaction that defers index remapping leaves the segments it would remap to
  the Fragment Reuse Index, so it meets an index build as any rewrite does; it
  retries only when the reuse index it extends was replaced meanwhile (by a trim,
  or another deferred compaction: :func:`.apply.fold_rewrite` checks), and a trim
  retries on any concurrent rewrite or index commit, whose segments may need a
  reuse version it would drop;
* two index commits that add, replace or drop an index of the same name clash
  (retryable): the reference lets the later one silently replace the earlier, which
  would undo a drop or replace an index its writer thought it had just created;
* two table-metadata updates clash when one sets a key the other sets or removes,
  or either replaces the whole map, as config keys do (the reference never
  compares them, so one writer's value would silently be lost).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from enum import Enum
from typing import Protocol, Union

import numpy as np

from lancelet.errors import (
    CommitConflictError,
    IncompatibleTransactionError,
    RetryableCommitConflictError,
)
from lancelet.table.fragment import Fragment
from lancelet.table.index import FRAG_REUSE_INDEX
from lancelet.table.manifest import Manifest
from lancelet.transaction.apply import uncover
from lancelet.transaction.operations import (
    Append,
    CreateIndex,
    DataReplacement,
    Delete,
    Foreign,
    MapUpdate,
    Operation,
    Overwrite,
    Rewrite,
    Transaction,
    Update,
    UpdateConfig,
)
from lancelet.transaction.registry import KINDS
from lancelet.transaction.registry import kind_of as kind_of  # re-exported


class Outcome(Enum):
    OK = "compatible"
    RETRY = "retryable"
    INCOMPATIBLE = "incompatible"


OK, RETRY, INCOMPATIBLE = Outcome.OK, Outcome.RETRY, Outcome.INCOMPATIBLE


class RebaseContext(Protocol):
    """What a rebase may read and write: the store, as far as conflicts need it."""

    def read_manifest(self, version: int) -> Manifest: ...
    def read_deletions(self, fragment: Fragment) -> np.ndarray: ...
    def delete_rows(
        self, fragment: Fragment, rows: np.ndarray, read_version: int
    ) -> Fragment | None: ...


Check = Callable[[Transaction, Operation, int, RebaseContext], Transaction]
Rule = Union[Outcome, Check]  # noqa: UP007 - a runtime alias; | needs 3.10 types


# -- case-by-case checks ------------------------------------------------------------

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


def _retry_if_overlap(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
    touched, own = _touched(theirs), _touched(mine.operation)
    assert own is not None
    if touched is None or touched & own:
        raise _retry(theirs, version, mine.operation, "rewrote fragments")
    return mine


def _rebase_row_changes(
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


def _no_duplicate_inserts(
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
        return _rebase_row_changes(mine, theirs, version, ctx)
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


def _config_overlap(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
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


def _index_rebased(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
    """New indices stop claiming the fragments theirs removed or rewrote, and those
    whose indexed values it changed in place, as they would had they been committed
    first (see :func:`.apply.uncover`)."""
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


def _index_misses_replacement(
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


def _rewritten_indices_remain(
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


def _same_index_names(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
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


def _indexed_fields_remain(
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


# -- the table ----------------------------------------------------------------------

# Deletes and updates (which delete the old copies of the rows they rewrite).
_ROW_CHANGE: dict[str, Rule] = {
    "append": OK,
    "delete": _rebase_row_changes,
    "update": _rebase_row_changes,
    "rewrite": _retry_if_overlap,
    "data_replacement": _retry_if_overlap,
    "merge": RETRY,
    "overwrite": RETRY,
    "restore": INCOMPATIBLE,
    "unknown": RETRY,
    "*": OK,
}

# Another writer's change to its in-memory write-ahead logs (lancelet keeps none):
# data changes that do not merge a log cannot be ordered against it.
_MEM_WAL = "update_mem_wal_state"

RULES: dict[str, dict[str, Rule]] = {
    "append": {
        "overwrite": INCOMPATIBLE,
        "restore": INCOMPATIBLE,
        _MEM_WAL: INCOMPATIBLE,
        "unknown": RETRY,
        "*": OK,
    },
    "delete": {**_ROW_CHANGE, _MEM_WAL: INCOMPATIBLE},
    "update": {**_ROW_CHANGE, "append": _no_duplicate_inserts, "update": _no_duplicate_inserts},
    # Compaction: retried when anything changed the fragments it rewrote.  Indices
    # it did not remap stop claiming rewritten fragments when the manifest is built,
    # so a concurrent index build is no conflict, unless it replaced or dropped a
    # segment the compaction remapped.
    "rewrite": {
        "delete": _retry_if_overlap,
        "update": _retry_if_overlap,
        "rewrite": _retry_if_overlap,
        "data_replacement": _retry_if_overlap,
        "create_index": _rewritten_indices_remain,
        "project": _rewritten_indices_remain,
        "merge": RETRY,
        "overwrite": INCOMPATIBLE,
        "restore": INCOMPATIBLE,
        "unknown": RETRY,
        "*": OK,
    },
    "overwrite": {
        "overwrite": _config_overlap,
        "update_config": _config_overlap,
        _MEM_WAL: INCOMPATIBLE,
        "*": OK,
    },
    "restore": {_MEM_WAL: INCOMPATIBLE, "*": OK},
    # Config and metadata changes are deltas, as well applied to a restored version;
    # but a winner that left no transaction may have changed the same keys.
    "update_config": {
        "overwrite": _config_overlap,
        "update_config": _config_overlap,
        "unknown": RETRY,
        "*": OK,
    },
    # New files for fragments' existing columns: a concurrent change to the same
    # fragments (or to the columns) invalidates the files written.
    "data_replacement": {
        "delete": _retry_if_overlap,
        "update": _retry_if_overlap,
        "rewrite": _retry_if_overlap,
        "data_replacement": _retry_if_overlap,
        "create_index": _index_misses_replacement,
        "merge": RETRY,
        "project": RETRY,
        "overwrite": INCOMPATIBLE,
        "restore": INCOMPATIBLE,
        _MEM_WAL: INCOMPATIBLE,
        "unknown": RETRY,
        "*": OK,
    },
    "reserve_fragments": {"overwrite": INCOMPATIBLE, "restore": INCOMPATIBLE, "*": OK},
    # New bases get their ids, and are checked for names and paths already taken,
    # when folded onto the winner's manifest, so they commute with everything.
    "update_bases": {"unknown": RETRY, "*": OK},
    # A new schema over the data this writer read: new rows or other schema changes
    # since then would be missing its columns or contradict it.
    "project": {
        "overwrite": INCOMPATIBLE,
        "restore": INCOMPATIBLE,
        _MEM_WAL: INCOMPATIBLE,
        "merge": RETRY,
        "project": RETRY,
        "unknown": RETRY,
        "*": OK,
    },
    # Index builds and drops.  New fragments are not indexed, so appends commute;
    # deletions are applied at query time, but fragments removed or rewritten leave
    # the new indices' bitmaps.
    "create_index": {
        "delete": _index_rebased,
        "update": _index_rebased,
        "rewrite": _index_rebased,
        "data_replacement": _index_misses_replacement,
        "create_index": _same_index_names,
        "project": _indexed_fields_remain,
        "merge": _indexed_fields_remain,
        "overwrite": INCOMPATIBLE,
        "restore": INCOMPATIBLE,
        _MEM_WAL: INCOMPATIBLE,
        "unknown": RETRY,
        "*": OK,
    },
    "merge": {
        "append": RETRY,
        "delete": RETRY,
        "rewrite": RETRY,
        "update": RETRY,
        "merge": RETRY,
        "data_replacement": RETRY,
        "overwrite": INCOMPATIBLE,
        "restore": INCOMPATIBLE,
        "project": INCOMPATIBLE,
        _MEM_WAL: INCOMPATIBLE,
        "unknown": RETRY,
        "*": OK,
    },
}


_UNRULED = {k.name for k in KINDS} - set(RULES)
assert not _UNRULED, f"operation kinds without a conflict rule row: {sorted(_UNRULED)}"


def rule_for(mine: Operation, theirs: Operation | None) -> Rule:
    row = RULES[kind_of(mine)]
    return row.get(kind_of(theirs), row["*"])


def rebase(
    mine: Transaction, theirs: Transaction | None, version: int, ctx: RebaseContext
) -> Transaction:
    """``mine`` made valid on top of ``theirs`` (committed as ``version``), or an error."""
    other = theirs.operation if theirs is not None else None
    rule = rule_for(mine.operation, other)
    if rule is OK:
        return mine
    if isinstance(rule, Outcome):
        error = RetryableCommitConflictError if rule is RETRY else IncompatibleTransactionError
        prefix = "Retryable commit" if rule is RETRY else "Commit"
        raise error(
            f"{prefix} conflict for version {version}: this {kind_of(mine.operation)} "
            f"conflicts with the {kind_of(other)} committed as version {version} ({rule.value})"
        )
    assert other is not None
    try:
        return rule(mine, other, version, ctx)
    except CommitConflictError as exc:
        exc.args = (_pylance_prefix(exc, version) + str(exc), *exc.args[1:])
        raise


def _pylance_prefix(error: CommitConflictError, version: int) -> str:
    """pylance's messages start so (its users match them), the version being the
    winner's."""
    kind = "Retryable commit" if error.retryable else "Commit"
    return f"{kind} conflict for version {version}: "
