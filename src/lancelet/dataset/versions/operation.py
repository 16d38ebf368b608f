"""``LanceOperation``: pylance's public names for the operations a caller may commit.

Writers that run on many machines call ``write_fragments`` on each, gather the
returned fragment metadata, and commit once with one of these.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from lancelet.dataset.read import blob
from lancelet.dataset.versions.index_operation import Index, stored_index
from lancelet.errors import ArgumentError, UnsupportedOptionError
from lancelet.table.fragment import DataFile, Fragment
from lancelet.table.schema import LanceSchema
from lancelet.table.schema_view import LanceSchema as PublicLanceSchema
from lancelet.transaction import operations as ops

if TYPE_CHECKING:
    from lancelet.dataset.versions.bases import DatasetBasePath


class LanceOperation:
    """Namespace of committable operations, as in ``lance.LanceOperation``."""

    class BaseOperation:
        def to_operation(self) -> ops.Operation:
            raise UnsupportedOptionError(
                f"{type(self).__name__}: lancelet cannot commit this operation"
            )

    @dataclass
    class Append(BaseOperation):
        fragments: Iterable[Fragment]

        def to_operation(self) -> ops.Operation:
            return ops.Append(tuple(self.fragments))

    @dataclass
    class Overwrite(BaseOperation):
        new_schema: pa.Schema | LanceSchema | PublicLanceSchema
        fragments: Iterable[Fragment]
        # pylance numbers bases an Overwrite registers differently from write_dataset
        # (it keeps id 0); lancelet registers bases through write_dataset only.
        initial_bases: list[DatasetBasePath] | None = None
        # lancelet's own: the config the overwrite sets (read_transaction shows it).
        config_upsert_values: dict[str, str] = field(default_factory=dict, kw_only=True)

        def to_operation(self) -> ops.Operation:
            if self.initial_bases:
                raise UnsupportedOptionError(
                    "LanceOperation.Overwrite: initial_bases is not supported; register "
                    "bases with write_dataset(initial_bases=...) or add_bases"
                )
            schema = self.new_schema
            if isinstance(schema, PublicLanceSchema):
                schema = schema.inner
            fragments = tuple(self.fragments)
            if isinstance(schema, pa.Schema):
                schema = blob.dataset_schema(schema, blob.files_version(fragments), "Overwrite")
            for fragment in fragments:
                if fragment.deletion_file is not None:
                    # As pylance: deletions belong to a Delete against existing fragments.
                    raise ArgumentError(
                        f"Overwrite fragments must be newly written, but fragment "
                        f"{fragment.id} carries a deletion file; commit deletions with Delete"
                    )
            return ops.Overwrite(fragments, schema, dict(self.config_upsert_values))

    @dataclass
    class Delete(BaseOperation):
        updated_fragments: Iterable[Fragment]
        deleted_fragment_ids: Iterable[int]
        predicate: str

        def to_operation(self) -> ops.Operation:
            return ops.Delete(
                tuple(self.updated_fragments), tuple(self.deleted_fragment_ids), self.predicate
            )

    @dataclass
    class Restore(BaseOperation):
        version: int

        def to_operation(self) -> ops.Operation:
            return ops.Restore(self.version)

    @dataclass
    class Merge(BaseOperation):
        """Fragments given new data files (``LanceFragment.merge_columns``) under the
        schema that names their columns."""

        fragments: Iterable[Fragment]
        schema: LanceSchema | PublicLanceSchema | pa.Schema
        # pylance's assertion that concurrent appends may commit alongside; it can only
        # spare a retry, so lancelet records it and checks conflicts as without.
        preserves_nullability: bool = False

        def __post_init__(self) -> None:
            if isinstance(self.schema, pa.Schema):
                warnings.warn(
                    "Passing a pyarrow schema to LanceOperation.Merge is deprecated; "
                    "pass the LanceSchema that merge_columns returned",
                    DeprecationWarning,
                    stacklevel=3,
                )

        def to_operation(self) -> ops.Operation:
            # In fragment id order, whatever the order given, as pylance commits them.
            fragments = sorted(self.fragments, key=lambda f: f.id)
            schema = self.schema
            if isinstance(schema, PublicLanceSchema):
                schema = schema.inner
            if isinstance(schema, pa.Schema):
                schema = _schema_of_files(schema, fragments)
            return ops.Merge(tuple(fragments), schema, bool(self.preserves_nullability))

    @dataclass
    class Project(BaseOperation):
        """A new schema over the same data files: columns dropped, renamed or reordered
        by field id (a field keeps the data of the field id it carries)."""

        schema: PublicLanceSchema
        # As Merge's: it can only spare a retry, so it is recorded and changes nothing.
        preserves_nullability: bool = False

        def to_operation(self) -> ops.Operation:
            if not isinstance(self.schema, PublicLanceSchema):
                raise TypeError(
                    f"LanceOperation.Project: schema must be a LanceSchema, not {self.schema!r}"
                )
            return ops.Project(self.schema.inner, bool(self.preserves_nullability))

    @dataclass
    class ReserveFragments(BaseOperation):
        num_fragments: int

        def to_operation(self) -> ops.Operation:
            return ops.ReserveFragments(self.num_fragments)

    @dataclass
    class Update(BaseOperation):
        """Rows rewritten: deletion vectors grown in ``updated_fragments`` (or whole
        fragments removed), the new values written as ``new_fragments``."""

        removed_fragment_ids: list[int] = field(default_factory=list)
        updated_fragments: list[Fragment] = field(default_factory=list)
        new_fragments: list[Fragment] = field(default_factory=list)
        fields_modified: list[int] = field(default_factory=list)
        fields_for_preserving_frag_bitmap: list[int] = field(default_factory=list)
        # "rewrite_rows" as read back; "" (the default) commits as that too.
        update_mode: str = ""
        updated_fragment_offsets: dict[int, bytes] | None = None
        # The upsert's inserted keys, when lancelet planned it (never written).
        _inserted_keys: ops.InsertedKeys | None = field(default=None, repr=False, compare=False)

        def to_operation(self) -> ops.Operation:
            if self.update_mode not in ("", "rewrite_rows") or self.updated_fragment_offsets:
                raise UnsupportedOptionError(
                    "LanceOperation.Update: only update_mode 'rewrite_rows' is supported, "
                    "and no updated_fragment_offsets"
                )
            return ops.Update(
                tuple(self.removed_fragment_ids),
                tuple(self.updated_fragments),
                tuple(self.new_fragments),
                tuple(self.fields_modified),
                tuple(self.fields_for_preserving_frag_bitmap),
                inserted_keys=self._inserted_keys,
            )

    @dataclass
    class CreateIndex(BaseOperation):
        """Index segments added (``new_indices``) and dropped (``removed_indices``, by
        uuid); a replaced index lists its old segments among the removed."""

        new_indices: list[Index]
        removed_indices: list[Index]

        def to_operation(self) -> ops.Operation:
            where = "LanceOperation.CreateIndex"
            return ops.CreateIndex(
                tuple(stored_index(i, where) for i in self.new_indices),
                tuple(stored_index(i, where) for i in self.removed_indices),
            )

    @dataclass
    class DataReplacementGroup:
        fragment_id: int
        new_file: DataFile

    @dataclass
    class DataReplacement(BaseOperation):
        """Existing data files replaced by new ones holding the same fields."""

        replacements: list[LanceOperation.DataReplacementGroup]

        def to_operation(self) -> ops.Operation:
            return ops.DataReplacement(
                tuple((g.fragment_id, g.new_file) for g in self.replacements)
            )

    @dataclass
    class UpdateMap:
        """Changes to a string map: ``None`` as a value removes the key; ``replace``
        drops every key not named first."""

        updates: dict[str, str | None]
        replace: bool = False

        def to_map_update(self) -> ops.MapUpdate:
            return ops.MapUpdate(dict(self.updates), self.replace)

    @dataclass
    class UpdateConfig(BaseOperation):
        """Changes to the dataset's config, table metadata, schema metadata, and the
        metadata of fields (by field id)."""

        config_updates: LanceOperation.UpdateMap | None = None
        table_metadata_updates: LanceOperation.UpdateMap | None = None
        schema_metadata_updates: LanceOperation.UpdateMap | None = None
        field_metadata_updates: dict[int, LanceOperation.UpdateMap] | None = None

        def to_operation(self) -> ops.Operation:
            upserts: dict[str, str] = {}
            deletes: list[str] = []
            if self.config_updates is not None:
                if self.config_updates.replace:
                    # A commit-time replace of config is not expressible as lancelet's
                    # key upserts and removals without racing other writers.
                    raise UnsupportedOptionError(
                        "LanceOperation.UpdateConfig: config_updates with replace=True "
                        "is not supported"
                    )
                for key, value in self.config_updates.updates.items():
                    if value is None:
                        deletes.append(key)
                    else:
                        upserts[key] = value
            return ops.UpdateConfig(
                upserts,
                tuple(deletes),
                _map_update(self.schema_metadata_updates),
                {int(k): v.to_map_update() for k, v in (self.field_metadata_updates or {}).items()},
                _map_update(self.table_metadata_updates),
            )

    @dataclass
    class RewriteGroup:
        old_fragments: list[Fragment]
        new_fragments: list[Fragment]

    @dataclass
    class RewrittenIndex:
        """An index rewritten by a hand-made compaction (pylance's form; a Rewrite
        carrying any is refused)."""

        old_id: str
        new_id: str
        new_details_type_url: str
        new_details_value: bytes
        new_index_version: int

    @dataclass
    class Rewrite(BaseOperation):
        """Fragments replaced by new ones holding the same rows (a compaction done by
        hand); new fragments with id 0 are numbered at commit."""

        groups: list[LanceOperation.RewriteGroup]
        rewritten_indices: list[LanceOperation.RewrittenIndex] = field(default_factory=list)

        def to_operation(self) -> ops.Operation:
            if self.rewritten_indices:
                raise UnsupportedOptionError(
                    "LanceOperation.Rewrite: rewritten_indices are not supported"
                )
            return ops.Rewrite(
                tuple(
                    ops.RewriteGroup(tuple(g.old_fragments), tuple(g.new_fragments))
                    for g in self.groups
                )
            )

    # pylance's operations lancelet does not commit: constructed with pylance's fields,
    # refused (by BaseOperation.to_operation) when committed.
    @dataclass
    class Clone(BaseOperation):
        is_shallow: bool
        ref_name: str | None
        ref_version: int
        ref_path: str
        branch_name: str | None

    @dataclass
    class DataOverlayFile:
        data_file: DataFile
        offsets: Iterable[int] | list[Iterable[int]]
        committed_version: int | None = None

    @dataclass
    class DataOverlayGroup:
        fragment_id: int
        overlays: list[LanceOperation.DataOverlayFile]

    @dataclass
    class DataOverlay(BaseOperation):
        groups: list[LanceOperation.DataOverlayGroup]


def _schema_of_files(schema: pa.Schema, fragments: list[Fragment]) -> LanceSchema:
    """A pyarrow schema given ids as pylance gives them (in order, from 0), accepted only
    when those are exactly the ids the fragments' data files store: other ids would
    read columns from the wrong files."""
    lance_schema = LanceSchema.from_arrow(schema)
    declared = {f.id for f in lance_schema.fields}
    for fragment in fragments:
        stored = {i for d in fragment.files for i in d.fields if i >= 0}
        if stored != declared:
            raise UnsupportedOptionError(
                "LanceOperation.Merge: the pyarrow schema's field ids (assigned in order) "
                f"{sorted(declared)} differ from those fragment {fragment.id} stores "
                f"{sorted(stored)}; pass the LanceSchema that merge_columns returned"
            )
    return lance_schema


def _map_update(update: LanceOperation.UpdateMap | None) -> ops.MapUpdate | None:
    return None if update is None else update.to_map_update()
