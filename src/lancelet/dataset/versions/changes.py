"""What one committed version did to a dataset's rows, as a change feed needs it.

A streaming reader turns each version's new rows into a micro-batch.  That is safe
only for versions that added rows without touching the ones before: appends (and
inserts of a merge that updated nothing).  Compactions move rows without changing
them; index, config and tag commits touch no rows at all.  Everything else (deletes,
updates, overwrites, restores, schema changes) changes rows a reader already
delivered, and the reader must fail or skip it by the user's choice, as Delta's
streaming source does.

The change is read from the difference between the version's manifest and its
predecessor's, which every writer leaves; the transaction file is consulted only to
tell a compaction (rows moved) from a delete and re-insert (rows changed).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from lancelet.errors import VersionNotFoundError
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.transaction import operations as ops
from lancelet.transaction.registry import kind_of
from lancelet.transaction.store import DatasetStore


class ChangeKind(enum.Enum):
    APPEND = "append"  # new fragments, nothing else touched
    NONE = "none"  # no row touched: indices, config, tags, empty commits
    REWRITE = "rewrite"  # rows moved (compaction), none changed
    DELETE = "delete"  # rows removed, none added or rewritten
    CHANGE = "change"  # rows updated, replaced or restored
    SCHEMA = "schema"  # columns added, dropped, renamed or retyped


@dataclass(frozen=True)
class VersionChange:
    version: int
    kind: ChangeKind
    # The fragments holding the version's new rows (appends only), as that version
    # lists them, in id order.
    added: tuple[Fragment, ...]
    operation: str  # the transaction's kind, for messages ("unknown" without one)
    schema: LanceSchema  # the version's


def schema_shape(schema: LanceSchema) -> tuple[tuple[int, int, str, str, bool], ...]:
    """What a reader of the rows depends on: field ids, nesting, names, types and
    nullability (metadata may change under a reader)."""
    return tuple((f.id, f.parent_id, f.name, f.logical_type, f.nullable) for f in schema.fields)


def version_change(store: DatasetStore, version: int) -> VersionChange:
    """What ``version`` changed relative to ``version - 1`` (version 1 appends its rows)."""
    current = _manifest(store, version)
    previous = _manifest(store, version - 1) if version > 1 else None
    operation = _operation(store, current)
    name = kind_of(operation) if current.transaction_file else "unknown"
    kind, added = _classify(previous, current, operation)
    return VersionChange(version, kind, added, name, current.schema)


def _manifest(store: DatasetStore, version: int) -> Manifest:
    try:
        return store.read_manifest(version)
    except VersionNotFoundError as exc:
        raise VersionNotFoundError(
            f"{store.root}: version {version} is gone (cleaned up?), so what it changed "
            "cannot be read"
        ) from exc


def _operation(store: DatasetStore, manifest: Manifest) -> ops.Operation | None:
    if not manifest.transaction_file:
        return None
    return store.read_transaction(manifest.transaction_file).operation


def _classify(
    previous: Manifest | None, current: Manifest, operation: ops.Operation | None
) -> tuple[ChangeKind, tuple[Fragment, ...]]:
    if previous is None:
        live = tuple(f for f in current.fragments if f.num_rows)
        return ChangeKind.APPEND if live else ChangeKind.NONE, live
    if schema_shape(previous.schema) != schema_shape(current.schema):
        return ChangeKind.SCHEMA, ()
    before = {f.id: f for f in previous.fragments}
    after = {f.id: f for f in current.fragments}
    added = tuple(after[i] for i in sorted(after.keys() - before.keys()))
    removed = before.keys() - after.keys()
    modified = [i for i in before.keys() & after.keys() if before[i] != after[i]]
    if isinstance(operation, ops.Restore):
        return ChangeKind.CHANGE, ()
    if not removed and not modified:
        return (ChangeKind.APPEND if added else ChangeKind.NONE), added
    if isinstance(operation, ops.Rewrite):
        return ChangeKind.REWRITE, ()
    if not added and all(_only_deletes(before[i], after[i]) for i in modified):
        return ChangeKind.DELETE, ()
    return ChangeKind.CHANGE, ()


def _only_deletes(before: Fragment, after: Fragment) -> bool:
    """The fragment lost rows and nothing else: same files, more rows deleted."""
    return before.files == after.files and after.num_deleted_rows > before.num_deleted_rows
