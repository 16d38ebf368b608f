"""What happens when my transaction meets one committed after the version I read.

The rules are a table: ``RULES[mine][theirs]`` (operation kind names as in
``transaction.proto``) gives the outcome, ``"*"`` covering the kinds not listed.

* ``OK``: the two commute; commit mine on top of theirs unchanged.
* ``RETRY``: mine was computed from data theirs changed; the caller must
  re-read the dataset and redo its work (:class:`RetryableCommitConflictError`).
* ``INCOMPATIBLE``: theirs makes mine meaningless (:class:`IncompatibleTransactionError`).
* a function: decides case by case and may return a rebased transaction, such
  as two deletes on one fragment whose deletion vectors are merged.

The table follows the reference's conflict resolver, with one deliberate
difference: a delete that meets a concurrent overwrite is retryable rather than
incompatible, because re-running the delete on the new data is well defined.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from enum import Enum
from typing import Protocol, Union

import numpy as np

from lancelet.errors import IncompatibleTransactionError, RetryableCommitConflictError
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
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
    Transaction,
    UpdateConfig,
)


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


def kind_of(op: Operation | None) -> str:
    if op is None:
        return "unknown"
    if isinstance(op, Foreign):
        return op.name
    names: dict[type, str] = {
        Append: "append",
        Delete: "delete",
        Overwrite: "overwrite",
        Restore: "restore",
        ReserveFragments: "reserve_fragments",
        UpdateConfig: "update_config",
        Project: "project",
        Merge: "merge",
    }
    return names[type(op)]


# -- case-by-case checks ------------------------------------------------------------


def _touched_by_me(op: Delete) -> set[int]:
    return {f.id for f in op.updated_fragments} | set(op.deleted_fragment_ids)


def _touched_by_them(op: Operation) -> set[int] | None:
    if isinstance(op, Delete):
        return _touched_by_me(op)
    if isinstance(op, Foreign):
        return None if op.touched is None else set(op.touched)
    return None


def _retry_if_overlap(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
    assert isinstance(mine.operation, Delete)
    touched = _touched_by_them(theirs)
    if touched is None or touched & _touched_by_me(mine.operation):
        raise RetryableCommitConflictError(
            f"version {version} ({kind_of(theirs)}) rewrote fragments this "
            f"{kind_of(mine.operation)} read; re-read the dataset and try again"
        )
    return mine


def _merge_deletes(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
    """Two deletes on one fragment commute: the result deletes the union of their rows."""
    op, other = mine.operation, theirs
    assert isinstance(op, Delete) and isinstance(other, Delete)
    shared = _touched_by_me(op) & _touched_by_me(other)
    if not shared:
        return mine
    winner = ctx.read_manifest(version)
    updated: list[Fragment] = []
    removed = set(op.deleted_fragment_ids) | (shared & set(other.deleted_fragment_ids))
    for fragment in op.updated_fragments:
        theirs_now = winner.fragment(fragment.id)
        if fragment.id in removed or theirs_now is None:
            removed.add(fragment.id)
            continue
        if theirs_now.files != fragment.files:
            raise RetryableCommitConflictError(
                f"version {version} rewrote the data of fragment {fragment.id}; re-read and retry"
            )
        if fragment.id not in shared:
            updated.append(fragment)
            continue
        both = ctx.delete_rows(fragment, ctx.read_deletions(theirs_now), version)
        if both is None:
            removed.add(fragment.id)
        else:
            updated.append(both)
    merged = Delete(tuple(updated), tuple(sorted(removed)), op.predicate)
    return replace(mine, operation=merged)


def _config_keys(op: Operation) -> set[str]:
    if isinstance(op, UpdateConfig):
        return set(op.upsert_values) | set(op.delete_keys)
    if isinstance(op, Overwrite):
        return set(op.config_upsert_values)
    return set()


def _touches_schema_metadata(op: Operation) -> bool:
    return isinstance(op, UpdateConfig) and op.schema_metadata is not None


def _config_overlap(
    mine: Transaction, theirs: Operation, version: int, ctx: RebaseContext
) -> Transaction:
    same_keys = _config_keys(mine.operation) & _config_keys(theirs)
    both_metadata = _touches_schema_metadata(mine.operation) and (
        _touches_schema_metadata(theirs) or isinstance(theirs, Overwrite)
    )
    if same_keys or both_metadata:
        what = f"config keys {sorted(same_keys)}" if same_keys else "the schema metadata"
        raise IncompatibleTransactionError(
            f"version {version} ({kind_of(theirs)}) also changed {what}"
        )
    return mine


# -- the table ----------------------------------------------------------------------

RULES: dict[str, dict[str, Rule]] = {
    "append": {"overwrite": INCOMPATIBLE, "restore": INCOMPATIBLE, "unknown": RETRY, "*": OK},
    "delete": {
        "delete": _merge_deletes,
        "update": _retry_if_overlap,
        "rewrite": _retry_if_overlap,
        "data_replacement": _retry_if_overlap,
        "merge": RETRY,
        "overwrite": RETRY,
        "restore": INCOMPATIBLE,
        "unknown": RETRY,
        "*": OK,
    },
    "overwrite": {"overwrite": _config_overlap, "update_config": _config_overlap, "*": OK},
    "restore": {"*": OK},
    "update_config": {
        "overwrite": _config_overlap,
        "update_config": _config_overlap,
        "restore": INCOMPATIBLE,
        "*": OK,
    },
    "reserve_fragments": {"overwrite": INCOMPATIBLE, "restore": INCOMPATIBLE, "*": OK},
    # A new schema over the data this writer read: new rows or other schema changes
    # since then would be missing its columns or contradict it.
    "project": {
        "overwrite": INCOMPATIBLE,
        "restore": INCOMPATIBLE,
        "merge": RETRY,
        "project": RETRY,
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
        "unknown": RETRY,
        "*": OK,
    },
}


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
        raise error(
            f"this {kind_of(mine.operation)} conflicts with the {kind_of(other)} "
            f"committed as version {version} ({rule.value})"
        )
    assert other is not None
    return rule(mine, other, version, ctx)
