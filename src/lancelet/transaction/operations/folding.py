"""What the folds of several kinds share.

A fold is a pure function giving the new version's manifest (before
:func:`lancelet.transaction.apply.stamp` sets its version and flags) from the latest
committed one and the operation.  Conflict checks have already run; any rebasing has
already been folded into the operation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from lancelet.errors import DatasetError
from lancelet.table.fragment import Fragment
from lancelet.table.index import IndexMetadata
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema

ManifestLoader = Callable[[int], Manifest]


@dataclass(frozen=True)
class FoldContext:
    """What a fold may need beyond the latest manifest: earlier manifests (a restore)
    and the data format of a new dataset."""

    load: ManifestLoader
    data_format: tuple[str, str] = ("lance", "2.0")


def existing(base: Manifest | None, op: object) -> Manifest:
    if base is None:
        raise DatasetError(f"a {type(op).__name__} needs an existing dataset")
    return base


def numbered(fragments: tuple[Fragment, ...], first_id: int) -> tuple[Fragment, ...]:
    return tuple(f.with_id(first_id + i) for i, f in enumerate(fragments))


def max_id(current: int | None, fragments: tuple[Fragment, ...]) -> int | None:
    ids = [f.id for f in fragments]
    if current is not None:
        ids.append(current)
    return max(ids) if ids else None


def changed(
    base: Manifest, updated: tuple[Fragment, ...], removed: tuple[int, ...]
) -> tuple[Fragment, ...]:
    """The fragments of ``base`` with ``updated`` ones swapped in and ``removed`` ones gone."""
    by_id = {f.id: f for f in updated}
    gone = set(removed)
    return tuple(by_id.get(f.id, f) for f in base.fragments if f.id not in gone)


def uncover(
    indices: tuple[IndexMetadata, ...], gone: set[int], fields: set[int] | None = None
) -> tuple[IndexMetadata, ...]:
    """Indices no longer claim fragments that were rewritten (only those indexing one
    of ``fields``, when given): their rows are found by scanning until the index is
    rebuilt, never through stale row addresses or values."""
    return tuple(
        i.without_fragments(gone) if fields is None or fields & set(i.fields) else i
        for i in indices
    )


def with_current_metadata(schema: LanceSchema, current: LanceSchema) -> LanceSchema:
    """A schema built from the version a writer read, with the schema and field
    metadata of the latest one: config updates committed since are compatible with
    schema changes, so they must not be undone by them."""
    metadata = {f.id: f.metadata for f in current.fields}
    fields = tuple(
        replace(f, metadata=metadata[f.id])
        if f.id in metadata and f.metadata != metadata[f.id]
        else f
        for f in schema.fields
    )
    return LanceSchema(fields, current.metadata)


def relevant_indices(
    indices: tuple[IndexMetadata, ...], schema: LanceSchema
) -> tuple[IndexMetadata, ...]:
    """Indices over fields the schema no longer has are dropped (system indices,
    which cover no field, stay)."""
    ids = {f.id for f in schema.fields}
    return tuple(i for i in indices if i.is_system or set(i.fields) <= ids)
