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

from lancelet._proto import file_pb2
from lancelet.dataset.write import (
    check_writable,
    discard_data_files,
    storage_version,
    write_fragment_files,
)
from lancelet.errors import DatasetAlreadyExistsError, SchemaError
from lancelet.spark.options import WriteOptions
from lancelet.spark.types import arrow_schema, natural_spark_type, same_spark_type
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema import LanceSchema
from lancelet.transaction import operations as ops
from lancelet.transaction.commit import commit_transaction
from lancelet.transaction.store import DatasetStore


@dataclass(frozen=True)
class PortableSchema:
    """A Lance schema in a form pickle can ship to tasks (its protobuf fields as bytes)."""

    fields: tuple[bytes, ...]
    metadata: Mapping[str, bytes]

    @classmethod
    def of(cls, schema: LanceSchema) -> PortableSchema:
        return cls(tuple(f.SerializeToString() for f in schema.fields), dict(schema.metadata))

    def load(self) -> LanceSchema:
        fields = tuple(file_pb2.Field.FromString(data) for data in self.fields)
        return LanceSchema(fields, dict(self.metadata))


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


def discard(uri: str, messages: Iterable[sds.WriterCommitMessage | None]) -> None:
    """Delete the data files the messages describe; nothing references them."""
    discard_data_files(DatasetStore(uri), fragments_of(messages))


def files_version(latest: Manifest | None, overwrite: bool, requested: str | None) -> str:
    """The file format a job writes: the dataset's when appending to it (another one
    asked for is refused) or overwriting it without naming one, else the one asked
    for (lancelet's default when none)."""
    if latest is not None and not overwrite:
        return check_writable(latest, requested)
    if latest is not None and requested is None:
        return storage_version(latest.data_storage_version)
    return storage_version(requested)


def target_schema(
    spark: st.StructType, dataset: Manifest | None, appends: bool, where: str
) -> LanceSchema:
    """The schema tasks write under: the dataset's when appending (after checking the
    data fits it), else a new one from the data's Spark schema."""
    if dataset is None or not appends:
        arrow = arrow_schema(spark, where)
        try:
            return LanceSchema.from_arrow(arrow)
        except SchemaError as exc:
            raise type(exc)(f"{where}: {exc}") from exc
    storage_version(dataset.data_storage_version)
    check_fits(spark, dataset.schema.to_arrow(), where)
    return dataset.schema


def check_fits(spark: st.StructType, dataset: pa.Schema, where: str) -> None:
    """Appended data must have the dataset's columns, each of the Spark type the
    column reads as, or void (nullability aside: nulls are checked as rows are written)."""
    got = {f.name: f.dataType for f in spark.fields}
    missing = [n for n in dataset.names if n not in got]
    extra = [n for n in got if n not in dataset.names]
    if missing or extra:
        raise SchemaError(
            f"{where}: the data's columns differ from the dataset's "
            f"(missing {missing}, unexpected {extra})"
        )
    for column in dataset:
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
                yield batch.select(schema.names).cast(schema)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
                raise SchemaError(f"{where}: rows do not fit the dataset's schema: {exc}") from exc

    return pa.RecordBatchReader.from_batches(schema, cast())


def write_task(
    uri: str,
    schema: LanceSchema,
    batches: Iterator[pa.RecordBatch],
    max_rows_per_file: int,
    read_version: int,
    version: str,
) -> LanceCommitMessage:
    """One task's share: its batches as data files of file format ``version`` (removed
    again if writing fails)."""
    store = DatasetStore(uri)
    reader = _conformed(batches, schema.to_arrow(), uri)
    fragments = write_fragment_files(store, reader, schema, version, max_rows_per_file)
    return LanceCommitMessage(tuple(f.to_json() for f in fragments), read_version)


def commit_fragments(
    uri: str,
    operation: ops.Operation,
    read_version: int,
    *,
    create_only: bool = False,
    properties: Mapping[str, str] | None = None,
    version: str | None = None,
) -> Manifest:
    """Commit once; on failure delete the operation's new data files and re-raise.
    ``version`` is the file format a new dataset records (default: lancelet's)."""
    store = DatasetStore(uri)
    txn = ops.Transaction(read_version, operation, properties=dict(properties or {}))
    data_format = ("lance", storage_version(version))
    try:
        return commit_transaction(store, txn, create_only=create_only, data_format=data_format)
    except BaseException:
        new = operation.fragments if isinstance(operation, (ops.Append, ops.Overwrite)) else ()
        discard_data_files(store, new)
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

    @classmethod
    def create(cls, spark: st.StructType, options: WriteOptions, overwrite: bool) -> LanceWriter:
        uri = options.path
        found = DatasetStore(uri).latest_manifest()
        latest = found[0] if found else None
        if options.write_mode is not None and overwrite:
            raise ValueError(f"{uri}: write_mode={options.write_mode} needs Spark's append mode")
        skip = latest is not None and options.write_mode == "ignore"
        if latest is not None and options.write_mode == "create":
            raise DatasetAlreadyExistsError(
                f"{uri}: a dataset already exists here (write_mode=create / errorifexists)"
            )
        schema = target_schema(spark, latest, not overwrite, uri)
        return cls(
            uri,
            PortableSchema.of(schema),
            overwrite,
            latest.version if latest else 0,
            options.max_rows_per_file,
            files_version(latest, overwrite, options.data_storage_version),
            options.write_mode,
            skip,
        )

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LanceCommitMessage:
        if self.skip:
            return LanceCommitMessage((), self.read_version)
        return write_task(
            self.uri,
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
        if self.write_mode == "ignore" and DatasetStore(self.uri).latest_location():
            discard(self.uri, messages)  # another writer created it meanwhile
            return
        operation: ops.Operation = (
            ops.Overwrite(fragments, self.schema.load())
            if creates or self.overwrite
            else ops.Append(fragments)
        )
        # Appending creates the dataset only if no other writer has created it meanwhile.
        create_only = creates and not self.overwrite
        commit_fragments(
            self.uri, operation, self.read_version, create_only=create_only, version=self.version
        )

    def abort(self, messages: Sequence[sds.WriterCommitMessage | None]) -> None:
        discard(self.uri, messages)
