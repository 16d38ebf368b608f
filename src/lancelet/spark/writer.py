"""Batch writes: tasks write fragments, the driver commits them in one transaction.

Spark creates the writer on the driver, where it reads the dataset's latest version
and checks the data's schema against it before any task runs.  Each task writes its
Arrow batches as data files and returns their fragment metadata; ``commit`` turns the
fragments of the messages Spark hands it (one per successful task attempt, so a retried
or speculative attempt is never counted twice) into one Append or Overwrite, read at
the version the writer saw, so a conflicting concurrent commit surfaces as lancelet's
conflict error.  ``abort``, and a failed ``commit``, delete the files of every message.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import datasource as sds
from pyspark.sql import types as st

from lancelet.dataset.engine import (
    Append,
    Location,
    Merge,
    Operation,
    Overwrite,
    Snapshot,
    commit,
    data_format,
    discard_written,
    extend_schema,
    latest_version,
    open_snapshot,
    write_fragments,
)
from lancelet.errors import DatasetAlreadyExistsError, SchemaError
from lancelet.spark.options import WriteOptions
from lancelet.spark.types import (
    arrow_schema,
    natural_spark_type,
    nullable_schema,
    same_spark_type,
)
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.table.schema_field import SchemaField


@dataclass(frozen=True)
class PortableSchema:
    """A Lance schema as tasks get it: its fields and metadata (a legacy dataset's
    dictionary values stay behind)."""

    fields: tuple[SchemaField, ...]
    metadata: Mapping[str, bytes]

    @classmethod
    def of(cls, schema: LanceSchema) -> PortableSchema:
        return cls(schema.fields, dict(schema.metadata))

    def load(self) -> LanceSchema:
        return LanceSchema(self.fields, self.metadata)


@dataclass(frozen=True)
class LanceCommitMessage(sds.WriterCommitMessage):
    """What one task wrote: its fragments (as JSON, ids unassigned) and the dataset
    version whose schema it wrote them under (0: the dataset did not exist)."""

    fragments: tuple[dict[str, Any], ...]
    read_version: int


def fragments_of(messages: Iterable[sds.WriterCommitMessage | None]) -> list[Fragment]:
    return [
        Fragment.from_json(data)
        for message in messages
        if isinstance(message, LanceCommitMessage)
        for data in message.fragments
    ]


def discard(location: Location, messages: Iterable[sds.WriterCommitMessage | None]) -> None:
    """Delete the data files the messages describe; nothing references them."""
    discard_written(location, fragments_of(messages))


def latest_manifest(location: Location) -> Manifest | None:
    """The latest version's manifest; None when there is no dataset."""
    version = latest_version(location)
    return None if version is None else open_snapshot(location, version).manifest


def files_version(latest: Manifest | None, overwrite: bool, requested: str | None) -> str:
    """The file format a job writes: the dataset's when appending to it (another one
    asked for is refused) or overwriting it without naming one, else the one asked
    for (lancelet's default when none)."""
    if latest is not None and not overwrite:
        return data_format(requested, latest)
    if latest is not None and requested is None:
        return data_format(latest.data_storage_version)
    return data_format(requested)


def new_dataset_schema(spark: st.StructType, where: str) -> LanceSchema:
    """The schema a DataFrame's columns get in a new dataset: every field nullable, as
    Spark's file sources and Delta store them, so later writes may carry nulls."""
    arrow = nullable_schema(arrow_schema(spark, where))
    try:
        return LanceSchema.from_arrow(arrow)
    except SchemaError as exc:
        raise type(exc)(f"{where}: {exc}") from exc


def target_schema(
    spark: st.StructType,
    dataset: Manifest | None,
    appends: bool,
    where: str,
    *,
    merge: bool = False,
    replace: bool = False,
) -> LanceSchema:
    """The schema tasks write under.  A new dataset, or an overwrite that ``replace``s
    the schema, takes the data's; otherwise the dataset's, after checking the data fits
    it, extended by the data's new columns when ``merge`` allows them (Delta's
    ``mergeSchema``).  Columns the data omits must be nullable: they are written as
    nulls."""
    if dataset is None or (replace and not appends):
        return new_dataset_schema(spark, where)
    data_format(dataset.data_storage_version)
    existing = dataset.schema.to_arrow()
    added = [f for f in spark.fields if f.name not in existing.names]
    if added and not merge:
        hint = "" if appends else ", or overwriteSchema=true to replace the schema"
        raise SchemaError(
            f"{where}: the data has columns the dataset lacks: {[f.name for f in added]}; "
            f"set option mergeSchema=true to add them{hint}"
        )
    kept = st.StructType([f for f in spark.fields if f.name in existing.names])
    check_fits(kept, existing, where)
    if not added:
        return dataset.schema
    return extend_schema(dataset, new_dataset_schema(st.StructType(added), where).to_arrow(), where)


def check_fits(spark: st.StructType, dataset: pa.Schema, where: str) -> None:
    """Written data must have the dataset's columns, each of the Spark type the column
    reads as, or void; a nullable column may be left out (nullability aside: nulls are
    checked as rows are written)."""
    got = {f.name: f.dataType for f in spark.fields}
    extra = [n for n in got if n not in dataset.names]
    required = [f.name for f in dataset if f.name not in got and not f.nullable]
    if extra or required:
        raise SchemaError(
            f"{where}: the data's columns differ from the dataset's (missing non-nullable "
            f"{required}, unexpected {extra})"
        )
    for column in dataset:
        if column.name not in got:
            continue  # written as nulls
        if isinstance(got[column.name], st.NullType) and column.nullable:
            continue  # an all-null column (``lit(None)``) fits any nullable one
        natural = natural_spark_type(column)
        if natural is None or not same_spark_type(natural, got[column.name]):
            expected = natural.simpleString() if natural else str(column.type)
            raise SchemaError(
                f"{where}: column {column.name!r} is {got[column.name].simpleString()} in the "
                f"data but {expected} in the dataset"
            )


def _conformed(
    batches: Iterator[pa.RecordBatch], schema: pa.Schema, where: str
) -> pa.RecordBatchReader:
    def cast() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            try:
                yield _filled(batch, schema).cast(schema)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
                raise SchemaError(f"{where}: rows do not fit the dataset's schema: {exc}") from exc

    return pa.RecordBatchReader.from_batches(schema, cast())


def _filled(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """The batch's columns in the schema's order, nulls for those it omits."""
    arrays = [
        batch.column(f.name) if f.name in batch.schema.names else pa.nulls(batch.num_rows, f.type)
        for f in schema
    ]
    return pa.RecordBatch.from_arrays(arrays, names=schema.names)


def write_task(
    location: Location,
    schema: LanceSchema,
    batches: Iterator[pa.RecordBatch],
    max_rows_per_file: int,
    read_version: int,
    version: str,
) -> LanceCommitMessage:
    """One task's share: its batches as data files of file format ``version`` (removed
    again if writing fails)."""
    reader = _conformed(batches, schema.to_arrow(), location.uri)
    fragments = write_fragments(location, reader, schema, version, max_rows_per_file)
    return LanceCommitMessage(tuple(f.to_json() for f in fragments), read_version)


def commit_fragments(
    location: Location,
    operation: Operation,
    read_version: int,
    *,
    create_only: bool = False,
    properties: Mapping[str, str] | None = None,
    version: str | None = None,
) -> Snapshot:
    """Commit once; on failure delete the operation's new data files and re-raise.
    ``version`` is the file format a new dataset records (default: lancelet's)."""
    try:
        return commit(
            location,
            operation,
            read_version,
            properties=properties,
            create_only=create_only,
            file_format=version,
        )
    except BaseException:
        new: tuple[Fragment, ...] = ()
        if isinstance(operation, (Append, Overwrite)):
            new = tuple(operation.fragments)
        elif isinstance(operation, Merge):
            kept = {f.id for f in open_snapshot(location, read_version).manifest.fragments}
            new = tuple(f for f in operation.fragments if f.id not in kept)
        discard_written(location, new)
        raise


@dataclass
class LanceWriter(sds.DataSourceArrowWriter):
    """The writer of one ``df.write.format("lance")`` job."""

    uri: str
    schema: PortableSchema
    overwrite: bool
    read_version: int
    max_rows_per_file: int
    version: str  # the file format of the data files
    write_mode: str | None = None
    # The dataset existed and write_mode is "ignore": tasks write nothing.
    skip: bool = False
    # mergeSchema added columns to the schema tasks write under.
    adds_columns: bool = False
    # How the driver and the tasks reach the dataset (see lancelet.spark.storage).
    storage_options: dict[str, str] | None = None

    @classmethod
    def create(cls, spark: st.StructType, options: WriteOptions, overwrite: bool) -> LanceWriter:
        uri = options.path
        latest = latest_manifest(options.location())
        if options.write_mode is not None and overwrite:
            raise ValueError(f"{uri}: write_mode={options.write_mode} needs Spark's append mode")
        if options.overwrite_schema and not overwrite:
            raise ValueError(f"{uri}: overwriteSchema=true needs Spark's overwrite mode")
        skip = latest is not None and options.write_mode == "ignore"
        if latest is not None and options.write_mode == "create":
            raise DatasetAlreadyExistsError(
                f"{uri}: a dataset already exists here (write_mode=create / errorifexists)"
            )
        schema = target_schema(
            spark,
            latest,
            not overwrite,
            uri,
            merge=options.merge_schema,
            replace=options.overwrite_schema,
        )
        adds = latest is not None and len(schema.fields) > len(latest.schema.fields)
        return cls(
            uri,
            PortableSchema.of(schema),
            overwrite,
            latest.version if latest else 0,
            options.max_rows_per_file,
            files_version(latest, overwrite, options.data_storage_version),
            options.write_mode,
            skip,
            adds,
            options.storage_options,
        )

    def _location(self) -> Location:
        return Location(self.uri, self.storage_options)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        if self.skip:
            return LanceCommitMessage((), self.read_version)
        return write_task(
            self._location(),
            self.schema.load(),
            iterator,
            self.max_rows_per_file,
            self.read_version,
            self.version,
        )

    def commit(self, messages: Sequence[sds.WriterCommitMessage | None]) -> None:
        if self.skip:
            return
        fragments = tuple(fragments_of(messages))
        creates = self.read_version == 0
        if not fragments and not creates and not self.overwrite:
            return  # appending no rows makes no version
        location = self._location()
        if self.write_mode == "ignore" and latest_version(location):
            discard(location, messages)  # another writer created it meanwhile
            return
        operation = self._operation(fragments, creates)
        # Appending creates the dataset only if no other writer has created it meanwhile.
        create_only = creates and not self.overwrite
        commit_fragments(
            location, operation, self.read_version, create_only=create_only, version=self.version
        )

    def _operation(self, fragments: tuple[Fragment, ...], creates: bool) -> Operation:
        if creates or self.overwrite:
            return Overwrite(fragments, self.schema.load())
        if not self.adds_columns:
            return Append(fragments)
        # New columns and new rows in one commit: the fragments read have no data for
        # the new columns, which read as nulls; any commit since is a conflict.
        read = open_snapshot(self._location(), self.read_version).manifest
        first = read.next_fragment_id()
        added = tuple(f.with_id(first + i) for i, f in enumerate(fragments))
        return Merge(read.fragments + added, self.schema.load())

    def abort(self, messages: Sequence[sds.WriterCommitMessage | None]) -> None:
        discard(self._location(), messages)
