"""Schema evolution: adding, dropping, renaming and casting columns.

Dropping, renaming and relaxing nullability change only the schema (a Project
operation): data files keep their field ids, and ids the schema no longer
names are simply not read.  Adding columns writes one new data file per
fragment holding just the new columns under fresh field ids (a Merge).  A cast
is an added column too: the converted values get a new field id in new data
files, and the old values stay behind, unreferenced, until compaction.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet.dataset.mutate.udf import (
    BatchUDF as BatchUDFClass,
)
from lancelet.dataset.mutate.udf import (
    RecordBatchFunction,
    apply_in_batches,
    batch_function,
)
from lancelet.dataset.mutate.udf_checkpoint import BatchCheckpoint
from lancelet.dataset.read.fragment_reader import FragmentReader
from lancelet.dataset.read.row_keys import read_physical
from lancelet.dataset.write.data_files import check_known_dictionaries, check_writable, data_file
from lancelet.errors import ColumnChangeError, RowCountMismatchError, SchemaError, ValueCastError
from lancelet.expr.compute import evaluate
from lancelet.expr.filter import parse_value, value_nullable
from lancelet.file import primary_key
from lancelet.file.v0_1 import batch_offsets as legacy_batch_offsets
from lancelet.file.writer import LanceFileWriter
from lancelet.table import naming
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema, file_field_ids
from lancelet.table.schema_field import SchemaField
from lancelet.transaction.operations import MapUpdate, Merge, Project
from lancelet.transaction.store import DatasetStore

BatchUDF = Callable[[pa.RecordBatch], pa.RecordBatch]
NewColumns = Union[Mapping[str, str], BatchUDF, pa.Field, Sequence[pa.Field], pa.Schema]  # noqa: UP007
Field = SchemaField

# -- fields by path -------------------------------------------------------------------


def field_paths(schema: LanceSchema) -> dict[str, Field]:
    """Every field under its dotted path: ``"a"``, ``"a.b"``, ``"l.item"``."""
    by_id = {f.id: f for f in schema.fields}

    def path(f: Field) -> str:
        return f.name if f.parent_id == -1 else f"{path(by_id[f.parent_id])}.{f.name}"

    return {path(f): f for f in schema.fields}


def resolve_field(schema: LanceSchema, path: str, where: str) -> Field:
    paths = field_paths(schema)
    if path not in paths:
        raise SchemaError(f"{where}: no field {path!r}; fields are {list(paths)}")
    return paths[path]


def next_field_id(manifest: Manifest) -> int:
    """The first id free for a new field.  Data files may still hold ids of dropped
    columns, which must not be handed out again."""
    in_files = (i for f in manifest.fragments for d in f.files for i in d.fields)
    return max(manifest.schema.max_field_id, *in_files, -1) + 1


# -- dropping ---------------------------------------------------------------------------


def drop_columns(manifest: Manifest, columns: Sequence[str], where: str) -> Project:
    schema = manifest.schema
    doomed = {
        i for path in columns for i in schema.subtree_ids(resolve_field(schema, path, where).id)
    }
    kept = _without_empty_parents([f for f in schema.fields if f.id not in doomed], schema)
    if not any(f.parent_id == -1 for f in kept):
        raise SchemaError(f"{where}: cannot drop every column of the dataset")
    return Project(LanceSchema(tuple(kept), schema.metadata), preserves_nullability=True)


def _without_empty_parents(kept: list[Field], schema: LanceSchema) -> list[Field]:
    """A struct or list whose children were all dropped goes too, as in pylance."""
    had_children = {f.parent_id for f in schema.fields}
    while True:
        has_children = {f.parent_id for f in kept}
        emptied = {f.id for f in kept if f.id in had_children and f.id not in has_children}
        if not emptied:
            return kept
        kept = [f for f in kept if f.id not in emptied]


# -- altering -----------------------------------------------------------------------------

_ALTERATION_KEYS = ("name", "nullable", "data_type")


@dataclass(frozen=True)
class Cast:
    """A top-level column whose values are rewritten as another type."""

    old: Field
    new: pa.Field


@dataclass(frozen=True)
class Alterations:
    schema: LanceSchema
    casts: tuple[Cast, ...]
    # Paths of the fields made non-nullable: their values must be checked for nulls.
    made_required: tuple[str, ...]


def plan_alterations(
    manifest: Manifest, alterations: Sequence[Mapping[str, Any]], where: str
) -> Alterations:
    """The schema after renames, nullability changes and casts; every path names a field
    of the schema as it was before any of the alterations."""
    schema = manifest.schema
    updated: dict[int, Field] = {}
    types: dict[int, pa.DataType] = {}
    required: list[str] = []
    for alteration in alterations:
        target = _check_alteration(schema, alteration, where)
        field = updated.get(target.id, target)
        if alteration.get("name") is not None:
            field = replace(field, name=str(alteration["name"]))
        if alteration.get("nullable") is not None:
            field = replace(field, nullable=bool(alteration["nullable"]))
            if not field.nullable:
                required.append(str(alteration["path"]))
        updated[target.id] = field
        if "data_type" in alteration:
            types[target.id] = alteration["data_type"]
    if required and types:
        # As pylance: the null check reads the values as they are before the cast.
        raise SchemaError(
            f"{where}: cannot make {required[0]!r} non-nullable and cast columns in the same "
            "call; cast first, then change the nullability"
        )
    altered = LanceSchema(tuple(updated.get(f.id, f) for f in schema.fields), schema.metadata)
    altered, casts = _with_casts(altered, schema, types, next_field_id(manifest), where)
    _check_unique_names(altered, where)
    # A key column (or one above it) made nullable; a cast column is no longer a key.
    primary_key.check(altered.fields)
    return Alterations(altered, casts, tuple(required))


def _check_alteration(schema: LanceSchema, alteration: Mapping[str, Any], where: str) -> Field:
    unknown = sorted(set(alteration) - {"path", *_ALTERATION_KEYS})
    if unknown or "path" not in alteration:
        raise SchemaError(
            f"{where}: Unknown key: {unknown[0] if unknown else 'path missing'}; an "
            f"alteration has 'path' and some of {list(_ALTERATION_KEYS)}, not {sorted(alteration)}"
        )
    if "data_type" in alteration and not isinstance(alteration["data_type"], pa.DataType):
        raise TypeError(
            f"{where}: data_type of {alteration['path']!r} must be a pyarrow.DataType, "
            f"got {type(alteration['data_type']).__name__}"
        )
    if not any(alteration.get(key) is not None for key in _ALTERATION_KEYS):
        raise SchemaError(
            f"{where}: alteration of {alteration['path']!r} changes nothing: "
            "At least one of name, nullable, or data_type must be specified"
        )
    if str(alteration["path"]) not in field_paths(schema):
        raise ColumnChangeError(f'{where}: Column "{alteration["path"]}" does not exist')
    target = resolve_field(schema, str(alteration["path"]), where)
    if target.parent_id != -1 and "data_type" in alteration:
        # A nested cast would split a struct over two files (pylance 14 fails at it too).
        raise SchemaError(
            f"{where}: lancelet can cast only top-level columns, "
            f"not the nested field {alteration['path']!r}"
        )
    return target


def _with_casts(
    schema: LanceSchema,
    original: LanceSchema,
    types: Mapping[int, pa.DataType],
    first_id: int,
    where: str,
) -> tuple[LanceSchema, tuple[Cast, ...]]:
    """Each cast column's fields replaced in place by fresh ones (new ids, no metadata:
    the old field's metadata describes the old values, and pylance drops it too)."""
    old_arrow = original.to_arrow()
    fields = list(schema.fields)
    casts = []
    for field_id, dtype in types.items():
        old = next(f for f in original.fields if f.id == field_id)
        old_type = old_arrow.field(old.name).type
        if not castable(old_type, dtype):
            raise ColumnChangeError(
                f'{where}: Cannot cast column "{old.name}" from {arrow_type_name(old_type)} '
                f"to {arrow_type_name(dtype)}"
            )
        current = next(f for f in fields if f.id == field_id)
        new = pa.field(current.name, dtype, current.nullable)
        fresh = LanceSchema.from_arrow(pa.schema([new]), first_id=first_id).fields
        first_id += len(fresh)
        fields = _splice(fields, schema.subtree_ids(field_id), fresh)
        casts.append(Cast(old, new))
    return LanceSchema(tuple(fields), schema.metadata), tuple(casts)


def _splice(fields: list[Field], gone: list[int], fresh: Sequence[Field]) -> list[Field]:
    at = next(i for i, f in enumerate(fields) if f.id == gone[0])
    before = [f for f in fields[:at] if f.id not in gone]
    after = [f for f in fields[at:] if f.id not in gone]
    return [*before, *fresh, *after]


def _check_unique_names(schema: LanceSchema, where: str) -> None:
    siblings: dict[int, list[str]] = {}
    for f in schema.fields:
        siblings.setdefault(f.parent_id, []).append(f.name)
    for names in siblings.values():
        if len(set(names)) != len(names):
            raise ColumnChangeError(f"{where}: the renamed columns would collide: {names}")


def _is_list(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
    )


_TYPE_FAMILIES: tuple[Callable[[pa.DataType], bool], ...] = (
    pa.types.is_integer,
    pa.types.is_floating,
    pa.types.is_temporal,
    pa.types.is_boolean,
    lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
    lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t),
    pa.types.is_decimal,
)


def castable(old: pa.DataType, new: pa.DataType) -> bool:
    """Casts within one family of types only (integers to integers, strings to strings,
    lists to lists of a castable item, ...), as pylance allows: a cast across families
    (string to int, int to string) is almost always a mistake."""
    if _is_list(old):
        return _is_list(new) and castable(old.value_type, new.value_type)
    return any(bool(same(old)) and bool(same(new)) for same in _TYPE_FAMILIES)


def alter_columns(
    store: DatasetStore, manifest: Manifest, plan: Alterations, where: str
) -> Project | Merge:
    preserves = keeps_nullability(manifest.schema, plan.schema)
    if not plan.casts:
        return Project(plan.schema, preserves)
    wanted = {f.id for f in plan.schema.fields}
    fragments = []
    with new_data_files(store, manifest) as files:
        for fragment in manifest.fragments:
            reader = FragmentReader(store, manifest.schema, fragment)
            old = reader.read([c.old.name for c in plan.casts], 0, fragment.physical_rows)
            values = _cast_values(old, plan.casts, reader.deleted, where)
            fragment = files.add(fragment, values, plan.schema)
            # A data file left holding no field of the schema is dropped, as pylance does.
            kept = tuple(d for d in fragment.files if wanted.intersection(d.fields))
            fragments.append(replace(fragment, files=kept))
    return Merge(tuple(fragments), plan.schema, preserves)


def keeps_nullability(old: LanceSchema, new: LanceSchema) -> bool:
    """Whether no field that admitted nulls refuses them in ``new``: what pylance
    records as a schema change's ``preserves_nullability``."""
    was_nullable = {f.id for f in old.fields if f.nullable}
    return all(f.nullable for f in new.fields if f.id in was_nullable)


def _cast_values(old: pa.Table, casts: Sequence[Cast], deleted: np.ndarray, where: str) -> pa.Table:
    gone = None
    if len(deleted):
        # Deleted rows keep their slot in the new file, but their values must not make
        # the cast fail.
        mask = np.zeros(old.num_rows, dtype=bool)
        mask[deleted] = True
        gone = pa.array(mask)
    columns = []
    for cast in casts:
        column = old.column(cast.old.name).combine_chunks()
        if gone is not None:
            column = pc.if_else(gone, pa.scalar(None, column.type), column)
        try:
            # Times may lose precision (timestamp to date) but never overflow.
            options = pc.CastOptions(cast.new.type, allow_time_truncate=True)
            columns.append(pc.cast(column, options=options))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ValueCastError(
                f"{where}: cannot cast column {cast.old.name!r} to {cast.new.type}: "
                f"{_unfit_value(column, cast.new.type) or exc}"
            ) from exc
    return pa.Table.from_arrays(columns, schema=pa.schema([c.new for c in casts]))


def _unfit_value(column: pa.Array, target: pa.DataType) -> str | None:
    """pylance's words for the first integer that does not fit an integer ``target``."""
    if not (pa.types.is_integer(column.type) and pa.types.is_integer(target)):
        return None
    wrapped = pc.cast(pc.cast(column, target, safe=False), column.type, safe=False)
    unfit = np.flatnonzero(np.asarray(pc.fill_null(pc.not_equal(wrapped, column), False)))
    if not len(unfit):
        return None
    return f"Can't cast value {column[int(unfit[0])].as_py()} to type {arrow_type_name(target)}"


# Rust's arrow names of types whose pyarrow name differs only in more than case.
_RUST_NAMES = {
    "string": "Utf8",
    "large_string": "LargeUtf8",
    "bool": "Boolean",
    "halffloat": "Float16",
    "float": "Float32",
    "double": "Float64",
    "large_binary": "LargeBinary",
}


def arrow_type_name(dtype: pa.DataType) -> str:
    """A primitive type as pylance's messages name it (Rust's arrow: Int8, Utf8, ...)."""
    text = str(dtype)
    if text in _RUST_NAMES:
        return _RUST_NAMES[text]
    if pa.types.is_integer(dtype) or text == "binary":
        named = text.replace("uint", "UInt").replace("int", "Int")
        return named[0].upper() + named[1:]
    return text


# -- adding -----------------------------------------------------------------------------


def _null_columns(new: pa.Schema, manifest: Manifest, where: str) -> Merge:
    """Columns of nulls need no data: a column no data file holds reads as nulls."""
    schema = extend_schema(manifest, new, where)
    required = [f.name for f in new if not f.nullable]
    if required:
        # A non-nullable column of nulls would break its own schema (pylance refuses it).
        raise ColumnChangeError(
            f"{where}: All-null columns must be nullable, but field {required[0]!r} is not."
        )
    return Merge(manifest.fragments, schema, preserves_nullability=True)


class ColumnComputer:
    """Computes the new columns for one fragment's rows (deleted rows included, so the
    new file lines up with the fragment's existing files): SQL expressions, or a
    function applied in batches of ``batch_size`` rows."""

    def __init__(
        self,
        manifest: Manifest,
        transforms: NewColumns,
        read_columns: Sequence[str] | None,
        where: str,
        batch_size: int | None = None,
        checkpoint: BatchCheckpoint | None = None,
    ) -> None:
        self.where = where
        self.batch_size = batch_size
        self.checkpoint = checkpoint
        self.arrow = manifest.schema.to_arrow()
        if isinstance(transforms, Mapping):
            parsed = {
                name: parse_value(sql, self.arrow, computes=True)
                for name, sql in transforms.items()
            }
            # pylance stores a SQL result of type string_view (left(), substr()...) as a
            # string column.
            self.expressions = {
                name: expr.cast(pa.string()) if pa.types.is_string_view(dtype) else expr
                for name, (expr, dtype, _) in parsed.items()
            }
            # pylance records NOT NULL for the values it proves never NULL.
            self.nullable = {n: value_nullable(sql, self.arrow) for n, sql in transforms.items()}
            self.reads = sorted({c for _, _, cols in parsed.values() for c in cols})
            self.udf: RecordBatchFunction | None = None
        else:
            self.expressions = {}
            self.udf = batch_function(transforms, where)  # type: ignore[arg-type]
            self.reads = list(read_columns) if read_columns is not None else self.arrow.names

    def null_literals(self) -> pa.Schema | None:
        """The new columns' schema when every expression is a NULL literal (such as
        ``CAST(NULL AS INT)``), else None."""
        if self.udf is not None or not self.expressions:
            return None
        fields = []
        for name, expr in self.expressions.items():
            # A literal's form is "value[type]"; anything computed is a call "f(...)".
            text = str(expr)
            if not text.startswith("null[") or "(" in text:
                return None
            value = evaluate(pa.table({"_": [0]}), {name: expr}, "add_columns").column(0)
            fields.append(pa.field(name, value.type))
        return pa.schema(fields)

    def compute(self, table: pa.Table, fragment_id: int = 0) -> pa.Table:
        if self.udf is None:
            values = evaluate(table, self.expressions, "add_columns")
            fields = [f.with_nullable(self.nullable[f.name]) for f in values.schema]
            return pa.Table.from_arrays(values.columns, schema=pa.schema(fields))
        saved = None if self.checkpoint is None else (self.checkpoint, fragment_id)
        return apply_in_batches(table, self.udf, self.batch_size, self.where, saved)


def add_columns(
    store: DatasetStore,
    manifest: Manifest,
    transforms: NewColumns,
    read_columns: Sequence[str] | None,
    where: str,
    batch_size: int | None = None,
) -> Merge:
    if isinstance(transforms, (pa.Field, pa.Schema)) or (
        isinstance(transforms, Sequence) and all(isinstance(f, pa.Field) for f in transforms)
    ):
        fields = [transforms] if isinstance(transforms, pa.Field) else list(transforms)
        return _null_columns(pa.schema(fields), manifest, where)
    computer = ColumnComputer(manifest, transforms, read_columns, where, batch_size)
    if isinstance(transforms, BatchUDFClass) and transforms.checkpoint_file is not None:
        key = f"{store.root}@{manifest.version}:{computer.reads}:{batch_size}"
        computer.checkpoint = BatchCheckpoint(transforms.checkpoint_file, key)
    nulls = computer.null_literals()
    if nulls is not None:
        # As pylance: columns that are NULL for every row need no data files.
        return _null_columns(nulls, manifest, where)
    new_schema: LanceSchema | None = None
    fragments: list[Fragment] = []
    with new_data_files(store, manifest) as files:
        for fragment in manifest.fragments:
            table = read_physical(store, manifest, fragment, computer.reads, where)
            values = computer.compute(table, fragment.id)
            if new_schema is None:
                new_schema = extend_schema(manifest, values.schema, where)
            fragments.append(files.add(fragment, values, new_schema))
    if new_schema is None:  # no fragments: only the schema changes
        raise SchemaError(f"{where}: cannot compute new columns of an empty dataset")
    return Merge(tuple(fragments), new_schema, preserves_nullability=True)


def is_transform(transforms: Any) -> bool:
    """Whether ``add_columns`` computes its new columns (SQL, a function) or makes them
    null (fields), rather than reading them from data, as pylance tells them apart."""
    if isinstance(transforms, (Mapping, pa.Field, pa.Schema)) or callable(transforms):
        return True
    return isinstance(transforms, list) and bool(transforms) and isinstance(transforms[0], pa.Field)


class _RowStream:
    """Consecutive runs of rows from a reader."""

    def __init__(self, reader: pa.RecordBatchReader) -> None:
        self._batches = iter(reader)
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0

    def _fill(self, rows: int) -> None:
        while self._pending_rows < rows:
            batch = next(self._batches, None)
            if batch is None:
                return
            self._pending.append(batch)
            self._pending_rows += batch.num_rows

    def take(self, rows: int, schema: pa.Schema) -> pa.Table | None:
        """The next ``rows`` rows; None when the stream ends first."""
        self._fill(rows)
        if self._pending_rows < rows:
            return None
        table = pa.Table.from_batches(self._pending, schema=schema)
        self._pending = table.slice(rows).to_batches()
        self._pending_rows -= rows
        return table.slice(0, rows)

    def has_more(self) -> bool:
        self._fill(1)
        return self._pending_rows > 0


def add_columns_from_reader(
    store: DatasetStore, manifest: Manifest, reader: pa.RecordBatchReader, where: str
) -> Merge:
    """New columns read from ``reader``: one row for each live row of the dataset, in
    its order; deleted rows get nulls in the new data files."""
    new_schema = extend_schema(manifest, reader.schema, where)
    stream = _RowStream(reader)
    fragments: list[Fragment] = []
    with new_data_files(store, manifest) as files:
        for fragment in manifest.fragments:
            deleted = store.read_deletions(fragment)
            live = stream.take(fragment.physical_rows - len(deleted), reader.schema)
            if live is None:
                raise RowCountMismatchError(
                    f"{where}: add_columns: Stream ended before producing values for all "
                    "rows in dataset"
                )
            positions = np.full(fragment.physical_rows, -1, dtype=np.int64)
            keep = np.ones(fragment.physical_rows, dtype=bool)
            keep[deleted] = False
            positions[keep] = np.arange(live.num_rows, dtype=np.int64)
            values = live.take(pa.array(positions, mask=~keep))
            fragments.append(files.add(fragment, values, new_schema))
        if stream.has_more():
            raise RowCountMismatchError(
                f"{where}: add_columns: Stream produced more values than expected for "
                f"dataset ({manifest.num_rows} rows)"
            )
    return Merge(tuple(fragments), new_schema, preserves_nullability=True)


def extend_schema(manifest: Manifest, new: pa.Schema, where: str) -> LanceSchema:
    """The dataset's schema with the columns of ``new`` appended under fresh field ids."""
    clash = set(new.names) & set(manifest.schema.top_level_names())
    if clash:
        first = next(n for n in new.names if n in clash)
        raise ColumnChangeError(
            f"{where}: Column {first} already exists in the dataset "
            f"(columns {sorted(clash)} already exist)"
        )
    if len(set(new.names)) != len(new.names):
        raise ColumnChangeError(f"{where}: the new columns repeat a name: {new.names}")
    added = LanceSchema.from_arrow(new, first_id=next_field_id(manifest))
    # As pylance: the new columns' schema metadata joins the dataset's, whose keys win.
    metadata = {**added.metadata, **manifest.schema.metadata}
    return LanceSchema(manifest.schema.fields + added.fields, metadata)


class _DataFiles:
    """Adds one data file of new columns to each fragment, remembering what it wrote."""

    def __init__(self, store: DatasetStore, version: str) -> None:
        self.store = store
        self.version = version  # the dataset's data file format
        self.written: list[str] = []

    def add(self, fragment: Fragment, values: pa.Table, schema: LanceSchema) -> Fragment:
        name = naming.data_file_name()
        path = self.store.data_path(name)
        ids = file_field_ids(schema, values.schema.names)
        legacy = self.version == "0.1"
        if legacy:
            check_known_dictionaries(schema, ids, path)
        with LanceFileWriter.for_dataset(
            path,
            values.schema,
            ids,
            version=self.version,
            dictionaries=dict(schema.dictionaries),
            file_io=self.store.io,
        ) as writer:
            if legacy:
                # pylance's new legacy files take the batches of the fragment's first.
                first = fragment.files[0]
                where = self.store.data_path(first.path, first.base_id)
                for start, stop in itertools.pairwise(legacy_batch_offsets(where, self.store.io)):
                    writer.write_batch(values.slice(int(start), int(stop - start)))
            else:
                writer.write_batch(values)
        self.written.append(path)
        size = writer.size_bytes if writer.size_bytes is not None else self.store.io.size_of(path)
        new_file = data_file(name, schema, self.version, size, values.schema.names)
        return replace(fragment, files=(*fragment.files, new_file))


@contextmanager
def new_data_files(store: DatasetStore, manifest: Manifest) -> Iterator[_DataFiles]:
    """Data files for one operation on ``manifest``; if planning it fails part-way, they
    are removed."""
    check_writable(manifest)
    files = _DataFiles(store, manifest.data_storage_version)
    try:
        yield files
    except BaseException:
        for path in files.written:
            store.io.delete(path)
        raise


# -- metadata -----------------------------------------------------------------------------


def map_update(values: Mapping[str, str | None], replace: bool, where: str) -> MapUpdate:
    """Changes to a string map; ``None`` removes a key (and means nothing when replacing)."""
    for key, value in values.items():
        if not isinstance(key, str) or not (value is None or isinstance(value, str)):
            raise TypeError(
                f"{where}: metadata keys and values are strings (or None to remove a key); "
                f"got {key!r}: {value!r}"
            )
    return MapUpdate(dict(values), replace)


def field_metadata_updates(
    schema: LanceSchema,
    updates: Mapping[str, Mapping[str, str | None]],
    replace: bool,
    where: str,
) -> dict[int, MapUpdate]:
    """Per field id, the changes to the metadata of the field at each (dotted) path."""
    return {
        resolve_field(schema, path, where).id: map_update(values, replace, where)
        for path, values in updates.items()
    }
