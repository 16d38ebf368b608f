"""Turning user data into data files and fragments.

Nothing here commits: it writes data files under ``data/`` and returns
fragment descriptions.  Until a manifest references them they are invisible,
so a writer that fails part-way removes what it wrote, and one that is killed
leaves orphans that ``cleanup_old_versions`` removes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from lancelet import events, io
from lancelet._arrow import cast as arrow_cast
from lancelet._proto import file_pb2
from lancelet.dataset.core.progress import FragmentWriteProgress
from lancelet.dataset.read import blob
from lancelet.dataset.versions.bases import WriteBases
from lancelet.errors import (
    AppendSchemaError,
    ArgumentError,
    LegacyTypeError,
    NumberOutOfRangeError,
    SchemaError,
    UnknownStorageVersionError,
    UnsupportedVersionError,
)
from lancelet.file import version as file_version
from lancelet.file.extensions import storage_batch, storage_schema
from lancelet.file.schema import to_lance_fields
from lancelet.file.v0_1.dictionaries import as_read, dictionaries_of
from lancelet.file.v0_1.pages import column_tree
from lancelet.file.v0_1.writer import check_types as check_legacy_types
from lancelet.file.writer import LanceFileWriter
from lancelet.table import blob_v2, naming
from lancelet.table.base_paths import BasePath
from lancelet.table.fragment import DataFile, Fragment
from lancelet.table.manifest import Manifest
from lancelet.table.schema import (
    LanceSchema,
    check_same_columns,
    column_field_ids,
    file_field_ids,
)
from lancelet.transaction.store import DatasetStore

DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024
DEFAULT_MAX_ROWS_PER_GROUP = 1024  # the rows of a legacy (0.1) file's batch


def storage_version(requested: str | None) -> str:
    """The file format version ("2.0", ...) a ``data_storage_version`` asks to write."""
    if requested is not None:
        try:
            file_version.by_name(requested)
        except UnsupportedVersionError as exc:
            # A name of no version is a ValueError, as in pylance.
            raise UnknownStorageVersionError(str(exc)) from exc
    return file_version.writable(requested).name


def check_writable(manifest: Manifest, requested: str | None = None) -> str:
    """The format of files added to a dataset: its own.  Refuse a dataset whose data
    file version lancelet cannot write, and another version asked for: pylance would
    add files of that version, leaving a dataset of mixed formats, which lancelet
    does not write."""
    version = storage_version(manifest.data_storage_version)
    if requested is not None and storage_version(requested) != version:
        raise UnsupportedVersionError(
            f"data_storage_version {requested!r}: the dataset holds Lance {version} files, "
            "and lancelet does not write datasets of mixed formats"
        )
    return version


def conform(reader: pa.RecordBatchReader, schema: pa.Schema, where: str) -> pa.RecordBatchReader:
    """Data appended to a dataset: its columns in the dataset's order and types."""
    check_same_columns(schema, reader.schema, where)
    required = [f.name for f in schema if not f.nullable]

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            for name in required:
                if batch.column(name).null_count:
                    raise SchemaError(f"{where}: column {name!r} is not nullable but has nulls")
            yield arrow_cast.cast(batch.select(schema.names), schema)

    return pa.RecordBatchReader.from_batches(schema, batches())


def conform_append(
    reader: pa.RecordBatchReader, schema: pa.Schema, where: str
) -> pa.RecordBatchReader:
    """Data appended to a dataset, which may leave out nullable top-level columns (as
    pylance allows: its data files then hold only the columns given, and the others
    read as nulls): the columns given, in the dataset's order and types."""
    given = set(reader.schema.names)
    missing = [f for f in schema if f.name not in given]
    if not missing:
        return conform(reader, schema, where)
    required = [f.name for f in missing if not f.nullable]
    unexpected = [n for n in reader.schema.names if schema.get_field_index(n) < 0]
    if required or unexpected:
        raise AppendSchemaError(
            f"{where}: Append with different schema: fields did not match, "
            f"missing={required}, unexpected={unexpected} (only nullable columns may "
            "be left out)"
        )
    subset = pa.schema([f for f in schema if f.name in given], metadata=schema.metadata)
    return conform(reader, subset, where)


def same_dictionaries(
    reader: pa.RecordBatchReader, schema: LanceSchema, where: str
) -> pa.RecordBatchReader:
    """Data appended to a legacy (0.1) dataset, whose first batch must hold the
    dataset's dictionaries as readers load them (an empty string null), or pylance
    refuses it."""
    if not any(f.logical_type.startswith("dict:") for f in schema.fields):
        return reader
    ids = file_field_ids(schema, reader.schema.names)
    columns = column_tree([file_pb2.Field(id=i) for i in ids], storage_schema(reader.schema))

    def batches() -> Iterator[pa.RecordBatch]:
        for number, batch in enumerate(reader):
            found = dictionaries_of(columns, storage_batch(batch).columns) if number == 0 else {}
            for field_id, values in found.items():
                known = schema.dictionaries.get(field_id)
                if known is None or not values.equals(as_read(known)):
                    raise AppendSchemaError(
                        f"{where}: Append with different schema: dictionary for "
                        f"`{schema.field_path(field_id)}` did not match expected dictionary"
                    )
            yield batch

    return pa.RecordBatchReader.from_batches(reader.schema, batches())


def check_known_dictionaries(schema: LanceSchema, ids: Sequence[int], where: str) -> None:
    """A legacy (0.1) dataset may hold dictionary columns only if their values are
    known (its manifest keeps them): pylance refuses new ones in a file of new columns
    and ones no row gave values ("missing dictionary metadata")."""
    unknown = [
        schema.field_path(f.id)
        for f in schema.fields
        if f.id in ids and f.logical_type.startswith("dict:") and f.id not in schema.dictionaries
    ]
    if unknown:
        raise LegacyTypeError(
            f"{where}: dictionary columns {unknown} have no values for a legacy (0.1) "
            "dataset's manifest to keep (new columns, or no rows)"
        )


@dataclass(frozen=True)
class Prepared:
    """Data about to be written: the stream, the schema (with field ids) to write it
    under, whether it appends to the latest version (otherwise it starts a new
    schema), and the file format version of its data files."""

    reader: pa.RecordBatchReader
    schema: LanceSchema
    appends: bool
    version: str


def prepare(
    latest: Manifest | None,
    reader: pa.RecordBatchReader,
    mode: str,
    data_storage_version: str | None,
    where: str,
) -> Prepared:
    if latest is not None and mode == "append":
        # As pylance, which converts the data's schema first: a key its metadata marks
        # is checked, though the dataset keeps its own key.
        to_lance_fields(reader.schema)
        version = check_writable(latest, data_storage_version)
        schema = latest.schema
        values = blob_v2.values_schema(schema.to_arrow())
        conformed = conform_append(reader, values, where)
        if version == "0.1":
            missing = [n for n in values.names if n not in conformed.schema.names]
            if missing:
                raise AppendSchemaError(
                    f"{where}: Append with different schema: a legacy (0.1) dataset's new "
                    f"fragments hold every column; the data lacks {missing}"
                )
            conformed = same_dictionaries(conformed, schema, where)
        return Prepared(conformed, schema, True, version)
    if data_storage_version is None and latest is not None:
        # An overwrite keeps the dataset's file format unless told otherwise, as
        # pylance's does; one lancelet cannot write must be replaced by name.
        try:
            version = storage_version(latest.data_storage_version)
        except UnsupportedVersionError as exc:
            raise UnsupportedVersionError(
                f"{where}: the dataset holds Lance {latest.data_storage_version} files, which "
                "lancelet cannot write; pass data_storage_version='2.0' to overwrite it "
                "with 2.0 files"
            ) from exc
    else:
        version = storage_version(data_storage_version)
    if version == "0.1":
        check_legacy_types(reader.schema)
    blob.check_writable(reader.schema, version, where)
    return Prepared(reader, blob.dataset_schema(reader.schema, version, where), False, version)


def data_file(
    name: str,
    schema: LanceSchema,
    version: str,
    size: int,
    names: list[str] | None = None,
    base_id: int | None = None,
) -> DataFile:
    """The manifest's record of a data file holding the columns ``names`` (default:
    all) of ``schema``, written in file format ``version``."""
    chosen = file_version.by_name(version)
    ids = column_field_ids(schema, names, structural=chosen.structural)
    major, minor = chosen.manifest_pair
    # pylance records no column indices for legacy files (their page tables go by id).
    columns = () if chosen.name == "0.1" else tuple(range(len(ids)))
    return DataFile(name, tuple(ids), columns, major, minor, size, base_id)


class _FileSink:
    """Cuts a stream of batches into data files of at most ``max_rows`` rows."""

    def __init__(
        self,
        store: DatasetStore,
        schema: LanceSchema,
        max_rows: int,
        version: str,
        bases: WriteBases | None = None,
        progress: FragmentWriteProgress | None = None,
        fragment_id: int = 0,
        max_bytes: int | None = None,
        names: list[str] | None = None,
        dictionaries: dict[int, pa.Array] | None = None,
        audited: bool = True,
    ) -> None:
        if max_rows < 0:
            raise NumberOutOfRangeError(f"max_rows_per_file must be positive, got {max_rows}")
        if max_rows == 0:
            raise ArgumentError("max_rows_per_file must be positive, got 0")
        if max_bytes is not None and max_bytes <= 0:
            raise ValueError("max_bytes_per_file must be positive")
        self._max_bytes = max_bytes
        self._store = store
        self._schema = schema
        # The columns the files hold: all of the schema's, or those an append gave.
        self._names = names
        arrow = schema.to_arrow()
        self._arrow = arrow if names is None else pa.schema([arrow.field(n) for n in names])
        self._version = version
        self._max_rows = max_rows
        self._writer: LanceFileWriter | None = None
        self._name = ""
        self._rows = 0
        self._bases = bases
        self._base: BasePath | None = None
        self.fragments: list[Fragment] = []
        self.paths: list[str] = []
        self._progress = progress
        self._fragment_id = fragment_id
        self._dictionaries = dictionaries
        # Whether finished files are reported (lancelet.events), as pylance's dataset
        # writes report them and its fragment writes do not.
        self._audited = audited

    def write_group(self, group: pa.Table) -> None:
        """A legacy file's batch: written whole, the file finished once it holds
        ``max_rows`` rows or more (pylance's legacy files may hold more)."""
        if self._writer is None:
            self._open()
        assert self._writer is not None
        self._writer.write_batch(group)
        self._rows += group.num_rows
        if self._rows >= self._max_rows or self._too_big():
            self.finish_file()

    def write(self, batch: pa.RecordBatch) -> None:
        while batch.num_rows:
            if self._writer is None:
                self._open()
            assert self._writer is not None
            room = self._max_rows - self._rows
            self._writer.write_batch(batch.slice(0, room))
            self._rows += min(room, batch.num_rows)
            batch = batch.slice(room)
            if self._rows == self._max_rows or self._too_big():
                self.finish_file()

    def write_columns(
        self,
        columns: Sequence[Callable[[], pa.Array]],
        rows: int,
        batch_rows: int,
        costs: Sequence[int] | None,
    ) -> None:
        """A file of ``rows`` rows given column by column (see
        :meth:`LanceFileWriter.write_columns`), finished."""
        if rows > self._max_rows or self._writer is not None:
            raise ValueError(f"{rows} rows given by column do not fit one new file")
        self._open()
        assert self._writer is not None
        self._writer.write_columns(columns, rows, batch_rows, costs)
        self._rows = rows
        self.finish_file()

    def _too_big(self) -> bool:
        """Whether the file's flushed pages reach ``max_bytes``; as in pylance, data
        still in the writer's column buffers does not count, so a file can end up
        larger."""
        if self._max_bytes is None or self._writer is None:
            return False
        return self._writer.tell() >= self._max_bytes

    def _open(self) -> None:
        self._name = naming.data_file_name()
        self._base = None if self._bases is None else self._bases.next_target()
        if self._base is None:
            path = self._store.data_path(self._name)
        else:  # a new dataset's bases are not registered yet: no store lookup
            path = io.join(self._base.data_dir(), self._name)
        self.paths.append(path)
        ids = file_field_ids(self._schema, self._names)
        self._writer = LanceFileWriter.for_dataset(
            path,
            self._arrow,
            ids,
            version=self._version,
            dictionaries=self._dictionaries,
            file_io=self._store.io,
        )
        self._rows = 0
        if self._progress is not None:
            opened = data_file(self._name, self._schema, self._version, 0, self._names)
            self._progress.begin(Fragment(self._fragment_id, (opened,), 0))

    def finish_file(self) -> None:
        if self._writer is None:
            return
        self._writer.close()
        size = self._writer.size_bytes
        self._writer = None
        if size is None:  # not expected: a closed writer knows its size
            size = self._store.io.size_of(self.paths[-1])
        base_id = None if self._base is None else self._base.id
        data_file_ = data_file(self._name, self._schema, self._version, size, self._names, base_id)
        fragment = Fragment(self._fragment_id, (data_file_,), self._rows)
        self.fragments.append(fragment)
        if self._audited:
            events.file_created("data", self._name)
        if self._progress is not None:
            self._progress.complete(fragment)

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.abort()
            self._writer = None
        for path in self.paths:
            self._store.io.delete(path)


def write_fragment_files(
    store: DatasetStore,
    reader: pa.RecordBatchReader,
    schema: LanceSchema,
    version: str,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    bases: WriteBases | None = None,
    *,
    progress: FragmentWriteProgress | None = None,
    fragment_id: int = 0,
    max_bytes_per_file: int | None = None,
    max_rows_per_group: int = DEFAULT_MAX_ROWS_PER_GROUP,
    dictionaries: dict[int, pa.Array] | None = None,
    audited: bool = True,
) -> list[Fragment]:
    """Write the stream as data files of file format ``version`` (under ``bases``'
    targets, if any); fragments come back with id ``fragment_id`` (0: assigned at
    commit). ``progress`` is told as each fragment is opened and finished;
    ``max_bytes_per_file`` (None: no limit) starts a new file once a file's pages
    reach that size.  A stream of some of the schema's columns (in its order; see
    :func:`conform_append`) gives files of those columns only.

    Legacy (0.1) files are written as pylance writes them: in batches of
    ``max_rows_per_group`` rows, a file ending with the batch that brings it to
    ``max_rows_per_file`` rows or more, and their dictionary columns keyed against
    ``dictionaries`` (by field id; by default the schema's), which a column without
    values takes from its first batch.  ``audited``: report each
    file (:mod:`lancelet.events`)."""
    given = reader.schema.names
    names = None if given == schema.to_arrow().names else given
    if dictionaries is None:
        dictionaries = dict(schema.dictionaries)
    sink = _FileSink(
        store,
        schema,
        max_rows_per_file,
        version,
        bases,
        progress,
        fragment_id,
        max_bytes_per_file,
        names,
        dictionaries,
        audited,
    )
    try:
        if version == "0.1":
            group_rows = min(max_rows_per_group, max_rows_per_file)
            if group_rows <= 0:
                raise ValueError("max_rows_per_group must be positive")
            for group in _groups(reader, group_rows):
                sink.write_group(group)
        else:
            for batch in reader:
                sink.write(batch)
        sink.finish_file()
    except BaseException:
        sink.abort()
        raise
    return sink.fragments


def write_fragment_columns(
    store: DatasetStore,
    schema: LanceSchema,
    version: str,
    columns: Sequence[Callable[[], pa.Array]],
    rows: int,
    batch_rows: int,
    costs: Sequence[int] | None = None,
) -> list[Fragment]:
    """One data file (as a fragment of id 0) of ``rows`` rows given column by column:
    ``columns[i]()`` makes all of the schema's column ``i``, each made and encoded
    as one job (see :meth:`LanceFileWriter.write_columns`), and the pages are those
    of :func:`write_fragment_files` given them in batches of ``batch_rows`` rows.
    Nothing is left behind when it fails."""
    sink = _FileSink(store, schema, rows, version)
    try:
        sink.write_columns(columns, rows, batch_rows, costs)
    except BaseException:
        sink.abort()
        raise
    return sink.fragments


def _groups(reader: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """The stream cut into consecutive groups of ``rows`` rows (the last may hold
    fewer), as pylance cuts a stream into a legacy file's batches."""
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in reader:
        while batch.num_rows:
            take = min(rows - count, batch.num_rows)
            pending.append(batch.slice(0, take))
            count += take
            batch = batch.slice(take)
            if count == rows:
                yield pa.Table.from_batches(pending)
                pending, count = [], 0
    if pending:
        yield pa.Table.from_batches(pending)


def discard_data_files(store: DatasetStore, fragments: Iterable[Fragment]) -> None:
    """Remove data files a failed commit left unreferenced."""
    for fragment in fragments:
        for data_file in fragment.files:
            store.io.delete(store.data_path(data_file.path, data_file.base_id))
