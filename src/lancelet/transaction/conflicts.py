"""What happens when my transaction meets one committed after the version I read.

The rules are a table: ``RULES[mine][theirs]`` (operation kind names as in
``transaction.proto``) gives the outcome, ``"*"`` covering the kinds not listed.

* ``OK``: the two commute; commit mine on top of theirs unchanged.
* ``RETRY``: mine was computed from data theirs changed; the caller must
  re-read the dataset and redo its work (:class:`RetryableCommitConflictError`).
* ``INCOMPATIBLE``: theirs makes mine meaningless (:class:`IncompatibleTransactionError`).
* a check (in :mod:`.conflict_checks`, named for the conflict it looks for):
  decides case by case and may return a rebased transaction, such as two deletes on
  one fragment whose deletion vectors are merged.

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
  or another deferred compaction: :func:`.operations.rewrite.fold` checks), and a trim
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

from enum import Enum
from typing import Union

from lancelet.errors import (
    CommitConflictError,
    IncompatibleTransactionError,
    RetryableCommitConflictError,
)
from lancelet.transaction import conflict_checks as check
from lancelet.transaction.conflict_checks import Check, RebaseContext
from lancelet.transaction.operations import Operation, Transaction
from lancelet.transaction.registry import KINDS
from lancelet.transaction.registry import kind_of as kind_of  # re-exported

__all__ = [
    "INCOMPATIBLE",
    "OK",
    "RETRY",
    "RULES",
    "Outcome",
    "RebaseContext",
    "Rule",
    "kind_of",
    "rebase",
    "rule_for",
]


class Outcome(Enum):
    OK = "compatible"
    RETRY = "retryable"
    INCOMPATIBLE = "incompatible"


OK, RETRY, INCOMPATIBLE = Outcome.OK, Outcome.RETRY, Outcome.INCOMPATIBLE

Rule = Union[Outcome, Check]  # noqa: UP007 - a runtime alias; | needs 3.10 types


# -- the table ----------------------------------------------------------------------

# Deletes and updates (which delete the old copies of the rows they rewrite).
_ROW_CHANGE: dict[str, Rule] = {
    "append": OK,
    "delete": check.rows_changed_by_both,
    "update": check.rows_changed_by_both,
    "rewrite": check.fragments_rewritten,
    "data_replacement": check.fragments_rewritten,
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
    "update": {
        **_ROW_CHANGE,
        "append": check.keys_inserted_by_both,
        "update": check.keys_inserted_by_both,
    },
    # Compaction: retried when anything changed the fragments it rewrote.  Indices
    # it did not remap stop claiming rewritten fragments when the manifest is built,
    # so a concurrent index build is no conflict, unless it replaced or dropped a
    # segment the compaction remapped.
    "rewrite": {
        "delete": check.fragments_rewritten,
        "update": check.fragments_rewritten,
        "rewrite": check.fragments_rewritten,
        "data_replacement": check.fragments_rewritten,
        "create_index": check.remapped_index_changed,
        "project": check.remapped_index_changed,
        "merge": RETRY,
        "overwrite": INCOMPATIBLE,
        "restore": INCOMPATIBLE,
        "unknown": RETRY,
        "*": OK,
    },
    "overwrite": {
        "overwrite": check.metadata_changed_by_both,
        "update_config": check.metadata_changed_by_both,
        _MEM_WAL: INCOMPATIBLE,
        "*": OK,
    },
    "restore": {_MEM_WAL: INCOMPATIBLE, "*": OK},
    # Config and metadata changes are deltas, as well applied to a restored version;
    # but a winner that left no transaction may have changed the same keys.
    "update_config": {
        "overwrite": check.metadata_changed_by_both,
        "update_config": check.metadata_changed_by_both,
        "unknown": RETRY,
        "*": OK,
    },
    # New files for fragments' existing columns: a concurrent change to the same
    # fragments (or to the columns) invalidates the files written.
    "data_replacement": {
        "delete": check.fragments_rewritten,
        "update": check.fragments_rewritten,
        "rewrite": check.fragments_rewritten,
        "data_replacement": check.fragments_rewritten,
        "create_index": check.indexed_column_replaced,
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
        "delete": check.indexed_fragments_changed,
        "update": check.indexed_fragments_changed,
        "rewrite": check.indexed_fragments_changed,
        "data_replacement": check.indexed_column_replaced,
        "create_index": check.same_index_changed,
        "project": check.indexed_field_removed,
        "merge": check.indexed_field_removed,
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
