"""What ``lancelet history`` reports of each version: the kind of operation that
made it, when, and the rows it added and removed, through public methods only.

Rows added and removed compare a version's fragments with those of the version
before it still on disk: the live rows of a fragment new in this version are added;
the live rows of a fragment gone, and rows newly deleted in a fragment kept, are
removed.  A rewrite counts its rows both ways (a compaction moves rows, an update
in the rows' mode deletes and re-adds them); a change of columns in place (adding a
column, an update of whole columns) adds and removes none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lancelet.cli.values import utc
from lancelet.dataset import LanceDataset, LanceOperation
from lancelet.errors import LanceletError

# The transaction property a commit message is kept in (pylance's key).
_COMMIT_MESSAGE = "__lance_commit_message"


@dataclass(frozen=True)
class FragmentRows:
    """A fragment as the diff sees it: its rows on disk and the live ones."""

    physical: int
    live: int


def fragment_rows(ds: LanceDataset) -> dict[int, FragmentRows]:
    return {
        f.fragment_id: FragmentRows(f.physical_rows, f.physical_rows - f.num_deletions)
        for f in ds.get_fragments()
    }


def rows_added_removed(
    before: dict[int, FragmentRows], after: dict[int, FragmentRows]
) -> tuple[int, int]:
    added = removed = 0
    for fragment_id, now in after.items():
        then = before.get(fragment_id)
        if then is None or then.physical != now.physical:
            # A new fragment (an id reused for other rows counts as new, too).
            added += now.live
            removed += 0 if then is None else then.live
        else:  # deletions made, or undone by a restore
            added += max(now.live - then.live, 0)
            removed += max(then.live - now.live, 0)
    removed += sum(then.live for i, then in before.items() if i not in after)
    return added, removed


def operation_of(ds: LanceDataset, version: int) -> tuple[str | None, str | None]:
    """The kind of operation that made ``version`` and its commit message.  The kind
    is None when no transaction can be read."""
    try:
        transaction = ds.read_transaction(version)
    except LanceletError:
        return None, None
    if transaction is None:
        return None, None
    message = (transaction.transaction_properties or {}).get(_COMMIT_MESSAGE)
    return operation_kind(transaction.operation), message


def operation_kind(operation: LanceOperation.BaseOperation) -> str:
    """The operation's class name (``Append``, ``Rewrite``, ...), as pylance's
    ``read_transaction`` classes name the kinds; "other" for the kinds it shows
    opaquely (``UpdateBases``, ``UpdateMemWalState``)."""
    kind = type(operation)
    return "other" if kind is LanceOperation.BaseOperation else kind.__name__


def history(ds: LanceDataset, limit: int | None = None) -> list[dict[str, Any]]:
    """The newest ``limit`` versions (all when None), newest first."""
    listed = ds.versions()
    shown = listed if limit is None else listed[max(len(listed) - limit, 0) :]
    tags: dict[int, list[str]] = {}
    for name, entry in sorted(ds.tags.list().items()):
        tags.setdefault(entry["version"], []).append(name)
    first = len(listed) - len(shown)
    previous = listed[first - 1]["version"] if first > 0 else None
    before = {} if previous is None else fragment_rows(ds.checkout_version(previous))
    entries = []
    for entry in shown:
        version = entry["version"]
        after = fragment_rows(ds.checkout_version(version))
        added, removed = rows_added_removed(before, after)
        kind, message = operation_of(ds, version)
        entries.append(
            {
                "version": version,
                "timestamp": utc(entry["timestamp"]).isoformat(),
                "operation": kind,
                "rows": sum(f.live for f in after.values()),
                "rows_added": added,
                "rows_removed": removed,
                "compared_with": previous,
                "tags": tags.get(version, []),
                "message": message,
            }
        )
        previous, before = version, after
    return entries[::-1]
