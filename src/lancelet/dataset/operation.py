"""``LanceOperation``: pylance's public names for the operations a caller may commit.

Writers that run on many machines call ``write_fragments`` on each, gather the
returned fragment metadata, and commit once with one of these.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa

from lancelet.errors import ArgumentError, UnsupportedOptionError
from lancelet.table.fragment import Fragment
from lancelet.table.schema import LanceSchema
from lancelet.transaction import operations as ops


class LanceOperation:
    """Namespace of committable operations, as in ``lance.LanceOperation``."""

    class BaseOperation:
        def to_operation(self) -> ops.Operation:
            raise NotImplementedError

    @dataclass
    class Append(BaseOperation):
        fragments: Iterable[Fragment]

        def to_operation(self) -> ops.Operation:
            return ops.Append(tuple(self.fragments))

    @dataclass
    class Overwrite(BaseOperation):
        new_schema: pa.Schema | LanceSchema
        fragments: Iterable[Fragment]
        config_upsert_values: dict[str, str] = field(default_factory=dict)

        def to_operation(self) -> ops.Operation:
            schema = self.new_schema
            if isinstance(schema, pa.Schema):
                schema = LanceSchema.from_arrow(schema)
            fragments = tuple(self.fragments)
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
        schema: LanceSchema

        def to_operation(self) -> ops.Operation:
            if not isinstance(self.schema, LanceSchema):
                raise UnsupportedOptionError(
                    "LanceOperation.Merge: the schema must be the LanceSchema that "
                    "merge_columns returned, with its field ids"
                )
            # In fragment id order, whatever the order given, as pylance commits them.
            fragments = sorted(self.fragments, key=lambda f: f.id)
            return ops.Merge(tuple(fragments), self.schema)

    @dataclass
    class ReserveFragments(BaseOperation):
        num_fragments: int

        def to_operation(self) -> ops.Operation:
            return ops.ReserveFragments(self.num_fragments)

    @dataclass
    class UpdateConfig(BaseOperation):
        upsert_values: dict[str, str] = field(default_factory=dict)
        delete_keys: list[str] = field(default_factory=list)

        def to_operation(self) -> ops.Operation:
            return ops.UpdateConfig(dict(self.upsert_values), tuple(self.delete_keys))

    @dataclass
    class Update(BaseOperation):
        """Fragments changed in place (``updated_fragments``, e.g. from
        ``LanceFragment.update_columns``), removed, or added."""

        removed_fragment_ids: list[int] = field(default_factory=list)
        updated_fragments: list[Fragment] = field(default_factory=list)
        new_fragments: list[Fragment] = field(default_factory=list)
        fields_modified: list[int] = field(default_factory=list)
        fields_for_preserving_frag_bitmap: list[int] = field(default_factory=list)
        update_mode: str = ""
        updated_fragment_offsets: dict[int, bytes] | None = None

        def to_operation(self) -> ops.Operation:
            if self.update_mode not in ("", "rewrite_rows"):
                raise UnsupportedOptionError(
                    f"LanceOperation.Update: update_mode={self.update_mode!r} is not supported"
                )
            if self.updated_fragment_offsets is not None:
                raise UnsupportedOptionError(
                    "LanceOperation.Update: updated_fragment_offsets is not supported"
                )
            return ops.Update(
                tuple(self.removed_fragment_ids),
                tuple(self.updated_fragments),
                tuple(self.new_fragments),
                tuple(self.fields_modified),
                tuple(self.fields_for_preserving_frag_bitmap),
            )

    @dataclass
    class RewriteGroup:
        old_fragments: list[Fragment]
        new_fragments: list[Fragment]

    @dataclass
    class Rewrite(BaseOperation):
        """Fragments replaced by new ones holding the same rows (a compaction done by
        hand); new fragments with id 0 are numbered at commit."""

        groups: list[LanceOperation.RewriteGroup]
        rewritten_indices: list[object] = field(default_factory=list)

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
