"""Schema evolution: adding, dropping and altering columns.

Dropping, renaming and relaxing nullability change only the schema (a Project
operation): data files keep their field ids, and ids the schema no longer
names are simply not read.  Adding columns writes one new data file per
fragment holding just the new columns under fresh field ids (a Merge).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Union

import pyarrow as pa
import pyarrow.dataset as pds

from lancelet.dataset.filter import parse_value
from lancelet.dataset.fragment_reader import FragmentReader
from lancelet.errors import SchemaError
from lancelet.file.writer import LanceFileWriter
from lancelet.table import naming
from lancelet.table.fragment import DataFile, Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema, column_field_ids
from lancelet.transaction.operations import Merge, Project
from lancelet.transaction.store import DatasetStore

BatchUDF = Callable[[pa.RecordBatch], pa.RecordBatch]
NewColumns = Union[Mapping[str, str], BatchUDF, pa.Field, Sequence[pa.Field], pa.Schema]  # noqa: UP007


def drop_columns(manifest: Manifest, columns: Sequence[str], where: str) -> Project:
    schema = manifest.schema
    doomed = schema.resolve(columns, where)
    if len(doomed) == len(schema.top_level()):
        raise SchemaError(f"{where}: cannot drop every column of the dataset")
    ids = {i for f in doomed for i in schema.subtree_ids(f.id)}
    kept = tuple(f for f in schema.fields if f.id not in ids)
    return Project(LanceSchema(kept, schema.metadata))


def alter_columns(
    manifest: Manifest, alterations: Sequence[Mapping[str, Any]], where: str
) -> Project:
    """Renames and nullability changes; ``data_type`` needs a rewrite lancelet lacks yet."""
    schema = manifest.schema
    fields = {f.id: f for f in schema.fields}
    for alteration in alterations:
        unknown = set(alteration) - {"path", "name", "nullable", "data_type"}
        if unknown or "path" not in alteration:
            raise ValueError(
                f"{where}: an alteration has 'path' and optionally 'name', "
                f"'nullable'; got {sorted(alteration)}"
            )
        if alteration.get("data_type") is not None:
            raise NotImplementedError(f"{where}: lancelet cannot change a column's type yet")
        (target,) = schema.resolve([alteration["path"]], where)
        updated = type(target)()
        updated.CopyFrom(fields[target.id])
        if alteration.get("name") is not None:
            updated.name = alteration["name"]
        if alteration.get("nullable") is not None:
            updated.nullable = bool(alteration["nullable"])
        fields[target.id] = updated
    altered = LanceSchema(tuple(fields[f.id] for f in schema.fields), schema.metadata)
    names = altered.top_level_names()
    if len(set(names)) != len(names):
        raise SchemaError(f"{where}: the renamed columns would collide: {names}")
    return Project(altered)


def _null_columns(new: pa.Schema, manifest: Manifest) -> Merge:
    """Columns of nulls need no data: a column no data file holds reads as nulls."""
    added = LanceSchema.from_arrow(new, first_id=manifest.schema.max_field_id + 1)
    schema = LanceSchema(manifest.schema.fields + added.fields, manifest.schema.metadata)
    return Merge(manifest.fragments, schema)


class _Computer:
    """Computes the new columns for one fragment's rows (deleted rows included, so the
    new file lines up with the fragment's existing files)."""

    def __init__(
        self, manifest: Manifest, transforms: NewColumns, read_columns: Sequence[str] | None
    ) -> None:
        self.arrow = manifest.schema.to_arrow()
        if isinstance(transforms, Mapping):
            parsed = {name: parse_value(sql, self.arrow) for name, sql in transforms.items()}
            self.expressions = {name: expr for name, (expr, _, _) in parsed.items()}
            self.reads = sorted({c for _, _, cols in parsed.values() for c in cols})
            self.udf: BatchUDF | None = None
        else:
            self.expressions = {}
            self.udf = transforms  # type: ignore[assignment]
            self.reads = list(read_columns) if read_columns is not None else self.arrow.names

    def compute(self, table: pa.Table) -> pa.Table:
        if self.udf is None:
            return pds.dataset(table).to_table(columns=self.expressions)
        return pa.Table.from_batches([self.udf(batch) for batch in table.to_batches()])


def add_columns(
    store: DatasetStore,
    manifest: Manifest,
    transforms: NewColumns,
    read_columns: Sequence[str] | None,
    where: str,
) -> Merge:
    if isinstance(transforms, (pa.Field, pa.Schema)) or (
        isinstance(transforms, Sequence) and all(isinstance(f, pa.Field) for f in transforms)
    ):
        fields = [transforms] if isinstance(transforms, pa.Field) else list(transforms)
        return _null_columns(pa.schema(fields), manifest)
    computer = _Computer(manifest, transforms, read_columns)
    new_schema: LanceSchema | None = None
    fragments: list[Fragment] = []
    for fragment in manifest.fragments:
        reader = FragmentReader(store, manifest.schema, fragment)
        values = computer.compute(reader.read(computer.reads, 0, fragment.physical_rows))
        if new_schema is None:
            new_schema = _extend(manifest, values.schema, where)
        fragments.append(_with_file(store, fragment, values, new_schema))
    if new_schema is None:  # no fragments: only the schema changes
        raise SchemaError(f"{where}: cannot compute new columns of an empty dataset")
    return Merge(tuple(fragments), new_schema)


def _extend(manifest: Manifest, new: pa.Schema, where: str) -> LanceSchema:
    clash = set(new.names) & set(manifest.schema.top_level_names())
    if clash:
        raise SchemaError(f"{where}: columns {sorted(clash)} already exist")
    added = LanceSchema.from_arrow(new, first_id=manifest.schema.max_field_id + 1)
    return LanceSchema(manifest.schema.fields + added.fields, manifest.schema.metadata)


def _with_file(
    store: DatasetStore, fragment: Fragment, values: pa.Table, schema: LanceSchema
) -> Fragment:
    name = naming.data_file_name()
    with LanceFileWriter(store.data_path(name), values.schema) as writer:
        writer.write_batch(values)
    ids = column_field_ids(schema, values.schema.names)
    size = os.path.getsize(store.data_path(name))
    data_file = DataFile(name, tuple(ids), tuple(range(len(ids))), 2, 0, size)
    return replace(fragment, files=(*fragment.files, data_file))
