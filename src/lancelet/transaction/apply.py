"""Fold an operation into the manifest it is committed on top of.

Each kind of operation has a fold (tied to it in :mod:`.registry`): a pure function
giving the new version's manifest, before :func:`stamp` sets its version and flags,
from the latest committed one and the operation.  Conflict checks have already run;
any rebasing has already been folded into the operation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from pyroaring import FrozenBitMap

from lancelet.errors import (
    ArgumentError,
    CorruptDatasetError,
    DatasetError,
    ReuseIndexChangedError,
    VersionNotFoundError,
)
from lancelet.table import features
from lancelet.table.base_paths import BasePath, with_new_ids
from lancelet.table.fragment import Fragment
from lancelet.table.index import FRAG_REUSE_INDEX, IndexMetadata
from lancelet.table.manifest import Manifest, WriterVersion, data_file_format
from lancelet.table.row_ids import with_row_ids
from lancelet.table.schema import LanceSchema
from lancelet.table.schema_field import SchemaField
from lancelet.transaction import key_metadata
from lancelet.transaction.operations import (
    Append,
    CreateIndex,
    DataReplacement,
    Delete,
    Foreign,
    MapUpdate,
    Merge,
    Operation,
    Overwrite,
    Project,
    ReserveFragments,
    Restore,
    Rewrite,
    Update,
    UpdateBases,
    UpdateConfig,
)

ManifestLoader = Callable[[int], Manifest]


@dataclass(frozen=True)
class FoldContext:
    """What a fold may need beyond the latest manifest: earlier manifests (a restore)
    and the data format of a new dataset."""

    load: ManifestLoader
    data_format: tuple[str, str] = ("lance", "2.0")


def existing(base: Manifest | None, op: Operation) -> Manifest:
    if base is None:
        raise DatasetError(f"a {type(op).__name__} needs an existing dataset")
    return base


def _number(fragments: tuple[Fragment, ...], first_id: int) -> tuple[Fragment, ...]:
    return tuple(f.with_id(first_id + i) for i, f in enumerate(fragments))


def _max_id(current: int | None, fragments: tuple[Fragment, ...]) -> int | None:
    ids = [f.id for f in fragments]
    if current is not None:
        ids.append(current)
    return max(ids) if ids else None


def fold_append(base: Manifest | None, op: Append, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    added = _number(op.fragments, base.next_fragment_id())
    return replace(
        base,
        fragments=base.fragments + added,
        max_fragment_id=_max_id(base.max_fragment_id, added),
    )


def _files_format(fragments: tuple[Fragment, ...], fallback: tuple[str, str]) -> tuple[str, str]:
    """The data storage format the fragments' files are written in.  Readers refuse a
    manifest whose format differs from its files', so an overwrite must not inherit
    the old one; without files (or with mixed ones) nothing better is known."""
    versions = {
        data_file_format(d.file_major_version, d.file_minor_version)
        for f in fragments
        for d in f.files
    }
    if len(versions) != 1 or None in versions:
        return fallback
    ((name),) = versions
    assert name is not None
    return ("lance", name)


def fold_overwrite(base: Manifest | None, op: Overwrite, ctx: FoldContext) -> Manifest:
    data_format = ctx.data_format
    first = base.next_fragment_id() if base else 0
    fragments = _number(op.fragments, first)
    config = {**(base.config if base else {}), **op.config_upsert_values}
    previous_max = base.max_fragment_id if base else None
    return Manifest(
        schema=op.schema,
        fragments=fragments,
        version=0,
        max_fragment_id=_max_id(previous_max, fragments),
        data_format=_files_format(op.fragments, base.data_format if base else data_format),
        config=config,
        table_metadata=base.table_metadata if base else {},
        base_paths=_kept_bases(base, op.initial_bases),
    )


def _kept_bases(base: Manifest | None, initial: tuple[BasePath, ...]) -> tuple[BasePath, ...]:
    """An overwrite keeps the bases registered so far (their files may still be read
    by older versions) and adds those a new dataset registers."""
    kept = base.base_paths if base else ()
    taken = {b.id for b in kept}
    clash = next((b for b in initial if b.id in taken or b.id <= 0), None)
    if clash is not None:
        raise DatasetError(f"base path id {clash.id} ({clash.path}) is invalid or already used")
    return kept + initial


def fold_update_bases(base: Manifest | None, op: UpdateBases, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    added = with_new_ids(base.base_paths, op.new_bases)
    return replace(base, base_paths=base.base_paths + added)


def _changed(
    base: Manifest, updated: tuple[Fragment, ...], removed: tuple[int, ...]
) -> tuple[Fragment, ...]:
    """The fragments of ``base`` with ``updated`` ones swapped in and ``removed`` ones gone."""
    by_id = {f.id: f for f in updated}
    gone = set(removed)
    return tuple(by_id.get(f.id, f) for f in base.fragments if f.id not in gone)


def fold_delete(base: Manifest | None, op: Delete, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    return replace(base, fragments=_changed(base, op.updated_fragments, op.deleted_fragment_ids))


def _update_bytes_map(current: Mapping[str, bytes], update: MapUpdate) -> dict[str, bytes]:
    as_text = {k: v.decode("utf-8", "surrogateescape") for k, v in current.items()}
    return {k: v.encode("utf-8", "surrogateescape") for k, v in update.applied_to(as_text).items()}


def _with_field_metadata(
    fields: tuple[SchemaField, ...], updates: Mapping[int, MapUpdate]
) -> tuple[SchemaField, ...]:
    return tuple(
        replace(f, metadata=_update_bytes_map(f.metadata, updates[f.id])) if f.id in updates else f
        for f in fields
    )


def fold_update_config(base: Manifest | None, op: UpdateConfig, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    config = {k: v for k, v in base.config.items() if k not in op.delete_keys}
    config.update(op.upsert_values)
    schema = base.schema
    if op.schema_metadata is not None:
        schema = LanceSchema(schema.fields, _update_bytes_map(schema.metadata, op.schema_metadata))
    if op.field_metadata:
        unknown = set(op.field_metadata) - {f.id for f in schema.fields}
        if unknown:
            raise DatasetError(f"field metadata update for unknown field ids {sorted(unknown)}")
        key_metadata.check_update(schema.fields, op.field_metadata)
        fields = _with_field_metadata(schema.fields, op.field_metadata)
        schema = LanceSchema(key_metadata.rekeyed(fields, op.field_metadata), schema.metadata)
    table_metadata = base.table_metadata
    if op.table_metadata is not None:
        table_metadata = op.table_metadata.applied_to(table_metadata)
    return replace(base, config=config, schema=schema, table_metadata=table_metadata)


def fold_update(base: Manifest | None, op: Update, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    kept = _changed(base, op.updated_fragments, op.removed_fragment_ids)
    added = _number(op.new_fragments, base.next_fragment_id())
    # Fragments whose values of indexed fields changed in place leave those indices.
    updated = {f.id for f in op.updated_fragments}
    indices = uncover(base.indices, updated, set(op.fields_modified))
    return replace(
        base,
        fragments=kept + added,
        max_fragment_id=_max_id(base.max_fragment_id, added),
        indices=indices,
    )


def fold_rewrite(base: Manifest | None, op: Rewrite, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    # The manifest lists fragments in increasing id order (readers reject anything
    # else), so the new fragments, with their reserved ids, go where the ids put them.
    present = {f.id for f in base.fragments}
    for group in op.groups:
        old = [f.id for f in group.old_fragments]
        if not present.issuperset(old):
            raise CorruptDatasetError(
                f"rewrite of fragments {old}: some are not in version {base.version}"
            )
    gone = op.old_ids()
    added = _with_fresh_ids(tuple(f for g in op.groups for f in g.new_fragments), base)
    kept = tuple(f for f in base.fragments if f.id not in gone)
    taken = {f.id for f in kept} & {f.id for f in added}
    if taken:
        raise DatasetError(
            f"rewrite onto version {base.version}: new fragment ids {sorted(taken)} are "
            "already in use; reserve them with ReserveFragments first"
        )
    fragments = tuple(sorted(kept + added, key=lambda f: f.id))
    max_id = _max_id(base.max_fragment_id, added)
    numbered = iter(added)
    op = replace(
        op,
        groups=tuple(
            replace(g, new_fragments=tuple(next(numbered) for _ in g.new_fragments))
            for g in op.groups
        ),
    )
    indices = moved_indices(base, op, frozenset(f.id for f in fragments))
    if op.frag_reuse_index is not None:
        indices = _with_reuse_index(base, indices, op)
    return replace(base, fragments=fragments, max_fragment_id=max_id, indices=indices)


def _with_reuse_index(
    base: Manifest, indices: tuple[IndexMetadata, ...], op: Rewrite
) -> tuple[IndexMetadata, ...]:
    """The Fragment Reuse Index swapped for the rewrite's, which extends the one it
    read: another reuse index committed meanwhile would lose its versions."""
    assert op.frag_reuse_index is not None
    current = [i.uuid for i in base.indices if i.name == FRAG_REUSE_INDEX]
    if current != ([op.frag_reuse_base] if op.frag_reuse_base is not None else []):
        raise ReuseIndexChangedError(
            f"version {base.version} changed the fragment reuse index this compaction "
            "extends; re-read the dataset and try again"
        )
    kept = tuple(i for i in indices if i.name != FRAG_REUSE_INDEX)
    return (*kept, op.frag_reuse_index)


def moved_indices(
    base: Manifest, op: Rewrite, present: frozenset[int]
) -> tuple[IndexMetadata, ...]:
    """The indices after a rewrite: those it remapped become their new segments, those
    keyed by stable row id follow the rows, those a deferred rewrite leaves to the
    Fragment Reuse Index stay as they were, and the rest stop claiming the rewritten
    fragments (their rows are scanned until the index is rebuilt).  Segments that
    follow the rows claim only fragments ``present`` after it, as pylance's do."""
    rewritten = {r.old_id: r for r in op.rewritten_indices}
    missing = set(rewritten) - {i.uuid for i in base.indices}
    if missing:
        raise DatasetError(
            f"rewrite onto version {base.version}: it remapped indices "
            f"{sorted(str(u) for u in missing)}, which that version no longer has"
        )
    out = []
    for index in base.indices:
        found = rewritten.get(index.uuid)
        if found is not None:
            index = replace(
                index,
                uuid=found.new_id,
                index_details=found.details or index.index_details,
                index_version=found.index_version,
                files=found.files,
                fragment_bitmap=(
                    index.fragment_bitmap if found.coverage is None else found.coverage
                ),
            )
        if index.is_system or (op.deferred and index.left_to_reuse(base.stable_row_ids)):
            out.append(index)  # the reuse index maps its rows
            continue
        if found is not None or index.keyed_by_row_id(base.stable_row_ids):
            moved = _follow_rows(index, op)
            if moved.fragment_bitmap is not None:
                kept = moved.fragment_bitmap & FrozenBitMap(present)
                moved = replace(moved, fragment_bitmap=kept)
            out.append(moved)
        else:
            out.append(index.without_fragments(op.old_ids()))
    return tuple(out)


def _follow_rows(index: IndexMetadata, op: Rewrite) -> IndexMetadata:
    """The index claims the new fragments of every group whose old fragments it all
    held; of a group it held only in part, neither (its rows there are scanned)."""
    held = index.fragment_bitmap
    if held is None:
        return index
    bitmap = held
    for group in op.groups:
        old = FrozenBitMap(f.id for f in group.old_fragments)
        if not old & bitmap:
            continue
        bitmap = bitmap - old
        if old.issubset(held):
            bitmap = bitmap | FrozenBitMap(f.id for f in group.new_fragments)
    return replace(index, fragment_bitmap=bitmap)


def _with_fresh_ids(fragments: tuple[Fragment, ...], base: Manifest) -> tuple[Fragment, ...]:
    """Fragments with id 0 have none reserved: they take the next free ids."""
    fresh = iter(range(base.next_fragment_id(), base.next_fragment_id() + len(fragments)))
    return tuple(f.with_id(next(fresh)) if f.id == 0 else f for f in fragments)


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


def fold_restore(base: Manifest | None, op: Restore, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    try:
        old = ctx.load(op.version)
    except VersionNotFoundError as exc:
        raise VersionNotFoundError(f"cannot restore: {exc}") from exc
    # Fragment ids handed out since must stay reserved.
    return replace(old, max_fragment_id=_max_id(base.max_fragment_id, old.fragments))


def _with_current_metadata(schema: LanceSchema, current: LanceSchema) -> LanceSchema:
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


def _relevant_indices(
    indices: tuple[IndexMetadata, ...], schema: LanceSchema
) -> tuple[IndexMetadata, ...]:
    """Indices over fields the schema no longer has are dropped (system indices,
    which cover no field, stay)."""
    ids = {f.id for f in schema.fields}
    return tuple(i for i in indices if i.is_system or set(i.fields) <= ids)


def fold_project(base: Manifest | None, op: Project, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    # No data is rewritten: files keep their field ids, and ids the schema drops go
    # unread; only files left holding no field at all are unlisted.
    schema = _with_current_metadata(op.schema, base.schema)
    ids = {f.id for f in schema.fields}
    fragments = tuple(_without_unread_files(f, ids) for f in base.fragments)
    indices = _relevant_indices(base.indices, schema)
    return replace(base, schema=schema, fragments=fragments, indices=indices)


def _without_unread_files(fragment: Fragment, field_ids: set[int]) -> Fragment:
    """A fragment no longer listing files that hold no field of the schema, as the
    reference does (so that cleanup can remove them); at least one file stays, as the
    fragment's row count is read from its files."""
    kept = tuple(d for d in fragment.files if field_ids.intersection(d.fields))
    if len(kept) == len(fragment.files) or not kept:
        return fragment
    return replace(fragment, files=kept)


def fold_merge(base: Manifest | None, op: Merge, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    schema = _with_current_metadata(op.schema, base.schema)
    # New columns bring the schema metadata keys of their data, as in pylance.
    brought = {k: v for k, v in op.schema.metadata.items() if k not in schema.metadata}
    if brought:
        schema = LanceSchema(schema.fields, {**brought, **schema.metadata})
    indices = _relevant_indices(base.indices, schema)
    # A merge may bring new fragments (new rows along with the new columns).
    max_id = _max_id(base.max_fragment_id, op.fragments)
    return replace(
        base, fragments=op.fragments, schema=schema, indices=indices, max_fragment_id=max_id
    )


def fold_reserve(base: Manifest | None, op: ReserveFragments, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    return replace(base, max_fragment_id=base.next_fragment_id() + op.num_fragments - 1)


def fold_create_index(base: Manifest | None, op: CreateIndex, ctx: FoldContext) -> Manifest:
    """New indices join the others, as in pylance 14 (a new segment of an index keeps
    its other segments); removed ones go by uuid, and one already gone (dropped
    concurrently) is no error."""
    base = existing(base, op)
    fields = {f for i in op.new_indices for f in i.fields}
    missing = sorted(fields - {f.id for f in base.schema.fields})
    if missing:
        raise DatasetError(
            f"cannot add an index on field ids {missing}: version {base.version} has no such field"
        )
    removed = {i.uuid for i in (*op.removed_indices, *op.new_indices)}
    kept = tuple(i for i in base.indices if i.uuid not in removed)
    return replace(base, indices=kept + op.new_indices)


def fold_data_replacement(base: Manifest | None, op: DataReplacement, ctx: FoldContext) -> Manifest:
    base = existing(base, op)
    by_id = {f.id: f for f in base.fragments}
    replaced: dict[int, Fragment] = {}
    for fragment_id, new_file in op.replacements:
        fragment = replaced.get(fragment_id, by_id.get(fragment_id))
        if fragment is None:
            raise ArgumentError(f"DataReplacement: fragment {fragment_id} does not exist")
        old = [d for d in fragment.files if d.fields == new_file.fields]
        if not old:
            raise ArgumentError(
                f"DataReplacement: fragment {fragment_id} has no data file holding exactly "
                f"fields {list(new_file.fields)}; a replacement must match an existing file"
            )
        files = tuple(new_file if d is old[0] else d for d in fragment.files)
        replaced[fragment_id] = replace(fragment, files=files)
    # An index over a replaced column holds the old values of the replaced fragments.
    indices = uncover(base.indices, set(replaced), op.field_ids())
    fragments = tuple(replaced.get(f.id, f) for f in base.fragments)
    return replace(base, fragments=fragments, indices=indices)


def fold_foreign(base: Manifest | None, op: Foreign, ctx: FoldContext) -> Manifest:
    raise DatasetError(f"lancelet cannot commit a {op.name} operation")


def _mixed_versions(manifest: Manifest) -> bool:
    """Whether a data file's format differs from the dataset's (which then only names
    the format of new files)."""
    own = manifest.data_storage_version
    return any(
        data_file_format(d.file_major_version, d.file_minor_version) != own
        for f in manifest.fragments
        for d in f.files
    )


def _corrected_format(manifest: Manifest) -> Manifest:
    """A dataset marked legacy (0.1) whose data files all share one newer format is
    marked with that format, as pylance corrects the manifests some old writers left
    wrong.  Files of several formats are left as they are."""
    if manifest.data_storage_version != "0.1":
        return manifest
    found = {
        data_file_format(d.file_major_version, d.file_minor_version)
        for f in manifest.fragments
        for d in f.files
    }
    if len(found) != 1:
        return manifest
    (actual,) = found
    if actual is None or actual == "0.1":
        return manifest
    return replace(manifest, data_format=("lance", actual))


def _stable_row_ids(base: Manifest | None, op: Operation) -> bool:
    if isinstance(op, Overwrite) and op.stable_row_ids is not None:
        return op.stable_row_ids
    return base is not None and base.stable_row_ids


def stamp(
    derived: Manifest, base: Manifest | None, op: Operation, transaction_file: str
) -> Manifest:
    """The folded manifest as version ``base.version + 1`` (or 1 for a new dataset),
    with row ids for new rows when the dataset keeps them, this writer's name and the
    feature flags its content needs."""
    derived = _corrected_format(derived)
    if base is not None and base.schema.dictionaries and not isinstance(op, Overwrite | Restore):
        # A legacy dataset's dictionary values stay with their columns (an overwrite
        # brings its own, a restore the old version's).
        kept = derived.schema.with_dictionaries(base.schema.dictionaries)
        derived = replace(derived, schema=kept)
    stable = _stable_row_ids(base, op)
    if stable:
        derived = with_row_ids(
            derived, base.next_row_id if base else 0, (base.version if base else 0) + 1
        )
    reader, writer = features.flags_for(
        any(f.deletion_file is not None for f in derived.fragments),
        derived.config,
        _mixed_versions(derived),
        stable,
        bool(derived.base_paths),
    )
    return replace(
        derived,
        version=(base.version if base else 0) + 1,
        timestamp_ns=time.time_ns(),
        writer_version=WriterVersion(),
        tag="",
        reader_feature_flags=reader,
        writer_feature_flags=writer,
        transaction_file=transaction_file,
    )
