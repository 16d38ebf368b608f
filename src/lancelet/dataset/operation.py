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
from lancelet.table.schema_view import LanceSchema as PublicLanceSchema
from lancelet.table.schema_view import inner_schema
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
        new_schema: pa.Schema | LanceSchema | PublicLanceSchema
        fragments: Iterable[Fragment]
        config_upsert_values: dict[str, str] = field(default_factory=dict)

        def to_operation(self) -> ops.Operation:
            schema = self.new_schema
            if isinstance(schema, pa.Schema | PublicLanceSchema):
                schema = inner_schema(schema, "LanceOperation.Overwrite")
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
        schema: LanceSchema | PublicLanceSchema

        def to_operation(self) -> ops.Operation:
            schema = self.schema
            if isinstance(schema, PublicLanceSchema):
                schema = schema.inner
            if not isinstance(schema, LanceSchema):
                raise UnsupportedOptionError(
                    "LanceOperation.Merge: the schema must be the LanceSchema that "
                    "merge_columns returned, with its field ids"
                )
            # In fragment id order, whatever the order given, as pylance commits them.
            fragments = sorted(self.fragments, key=lambda f: f.id)
            return ops.Merge(tuple(fragments), schema)

    @dataclass
    class Project(BaseOperation):
        """A new schema over the same data files: columns dropped, renamed or reordered
        by field id (a field keeps the data of the field id it carries)."""

        schema: PublicLanceSchema

        def to_operation(self) -> ops.Operation:
            if not isinstance(self.schema, PublicLanceSchema):
                raise TypeError(
                    f"LanceOperation.Project: schema must be a LanceSchema, not {self.schema!r}"
                )
            return ops.Project(self.schema.inner)

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
