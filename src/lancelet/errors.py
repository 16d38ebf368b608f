"""The lancelet error hierarchy.

Every error lancelet raises on purpose derives from :class:`LanceletError`, so
callers can catch one class.  Messages name the file, column or version that is
at fault.

Where pylance raises a builtin exception for the same failure, lancelet's class also
derives from that builtin (besides the bases it always had), so code written for
pylance catches lancelet's errors: a missing dataset is a ``ValueError`` there, a
commit conflict an ``OSError``, a missing or duplicate index a ``RuntimeError``.
"""

from __future__ import annotations


class LanceletError(Exception):
    """Base class of every error lancelet raises deliberately."""


class LanceFileError(LanceletError):
    """A Lance data file cannot be read or written."""


class CorruptFileError(LanceFileError):
    """A file's bytes contradict the format: bad magic, offsets out of range, bad protobuf."""


class FileRowOutOfRangeError(LanceFileError, IndexError, ValueError):
    """Rows asked of a Lance file lie outside it (a ``ValueError`` in pylance)."""


class UnsupportedVersionError(LanceFileError):
    """A file uses a format version this reader does not implement."""


class UnknownStorageVersionError(UnsupportedVersionError, ValueError):
    """A ``data_storage_version`` names no Lance file format version (a ``ValueError``
    in pylance)."""


class UnwritableVersionError(UnsupportedVersionError, NotImplementedError):
    """A file format version pylance's ``LanceFileWriter`` does not write (legacy 0.1
    files: a ``NotImplementedError`` there)."""


class UnsupportedEncodingError(LanceFileError):
    """A page uses an encoding this reader does not implement."""


class SchemaError(LanceletError, ValueError):
    """A schema is invalid, unsupported, or does not match the data given."""


class EmptyWriteError(SchemaError, OSError):
    """Data to write as a fragment has no columns or no rows (an ``OSError`` in pylance)."""


class AppendSchemaError(SchemaError, OSError):
    """Data to append does not carry the dataset's columns and types (an ``OSError``
    in pylance too)."""


class IndexColumnNotFoundError(SchemaError, KeyError):
    """The column to index is not in the schema (a ``KeyError`` in pylance)."""

    def __str__(self) -> str:  # a KeyError would print its message quoted
        return str(self.args[0]) if self.args else ""


class DataColumnNotFoundError(SchemaError, KeyError):
    """A column the schema given names is not in the data (a ``KeyError`` in pylance,
    from ``pyarrow.Table.from_pandas``)."""

    def __str__(self) -> str:  # a KeyError would print its message quoted
        return str(self.args[0]) if self.args else ""


class DataTypeError(SchemaError, TypeError):
    """Values of the data given cannot be converted to Arrow (a ``TypeError`` in
    pylance: pyarrow's ``ArrowTypeError``)."""


class ValueCastError(SchemaError, OSError):
    """A stored value does not fit the type its column is altered to (an ``OSError``
    in pylance)."""


class UnsupportedTypeError(SchemaError):
    """An Arrow type cannot be stored in the requested Lance format version."""


class IndexTypeError(UnsupportedTypeError, TypeError):
    """A column's type does not suit the index type asked for (a ``TypeError`` in
    pylance for BTREE, BITMAP, LABEL_LIST and NGRAM indices)."""


class ColumnChangeError(SchemaError, OSError):
    """A schema change names a column that does not exist or already does, makes two
    columns collide, or casts or constrains values that do not allow it
    (``alter_columns``, ``add_columns``, ``merge``): an ``OSError`` in pylance."""


class PrimaryKeyError(SchemaError, OSError, RuntimeError):
    """An unenforced primary key pylance refuses: a key column that is not a leaf, or
    is (or sits in) a nullable, list or map field; or a change to the key of a dataset
    that has one through field metadata.  pylance raises an ``OSError`` when writing
    or changing a dataset, a ``ValueError`` from ``LanceSchema.from_pyarrow`` and a
    ``RuntimeError`` from ``LanceFileWriter``."""


class LegacyTypeError(UnsupportedTypeError, OSError):
    """An Arrow type pylance's legacy (0.1) writer does not store (an ``OSError`` there,
    a ``ValueError`` for some)."""


class TypeVersionError(UnsupportedTypeError, NotImplementedError, OSError):
    """Data that only a newer Lance file format stores: the map type before 2.2
    (pylance's file writer raises ``NotImplementedError``), null structs in 2.0 (a
    ``ValueError``); pylance's ``write_dataset`` raises ``OSError`` for both."""


class FilterError(LanceletError, ValueError, OSError):
    """A filter or SQL expression does not parse, names a column the dataset lacks, or
    does not type-check.  pylance raises a ``ValueError`` for these in scans
    (``to_table``, ``scanner``) and an ``OSError`` in ``count_rows``, ``delete``,
    merge_insert conditions and ``add_columns``, so this is both.

    Its message starts as pylance's do for the same mistakes, ``Invalid user input:``
    (once, however often the message is wrapped in another)."""

    PREFIX = "Invalid user input: "

    def __init__(self, message: str) -> None:
        super().__init__(self.PREFIX + message.replace(self.PREFIX, ""))


class FilterEvaluationError(FilterError):
    """A filter's function fails on a row's value (pylance: ``ArrowInvalid``, a
    ``ValueError``)."""


class SqlQueryError(FilterError):
    """A ``LanceDataset.sql`` query names no such table or column, or breaks a rule of
    SQL (a column neither grouped nor aggregated, duplicate output names): a
    ``ValueError`` in pylance."""


class UnsupportedSqlError(LanceletError, NotImplementedError, ValueError):
    """A ``LanceDataset.sql`` query uses SQL that lancelet does not run (joins,
    subqueries, window functions, ...).  pylance runs it; a caller catching pylance's
    ``ValueError`` for a bad query catches this too."""


class ArgumentError(LanceletError, ValueError):
    """An argument of a lancelet call has the right type but an impossible value."""


class NumberOutOfRangeError(ArgumentError, OverflowError):
    """A number pylance takes as an unsigned 64-bit integer (a version, a row
    position, a count) is negative or too large: an ``OverflowError`` in pylance,
    whose binding cannot convert it."""


class RowCountMismatchError(ArgumentError, OSError):
    """Data for new columns holds fewer or more rows than the dataset (an ``OSError``
    in pylance)."""


class InvalidJSONError(ArgumentError, OSError):
    """A value written to a JSON column is not one JSON document (pylance: ``OSError``)."""


class UnknownIndexTypeError(ArgumentError, NotImplementedError):
    """An index type name that names no index (a ``NotImplementedError`` in pylance)."""


class VectorQueryError(ArgumentError):
    """A ``nearest=`` query pylance refuses with a ``ValueError``: k or another count
    out of range, a query vector of the wrong size, NaN in it, an unknown metric or one
    the column's element type does not take, a ``distance_range`` that is no pair."""


class VectorQueryTypeError(LanceletError, TypeError):
    """A ``nearest=`` query pylance refuses with a ``TypeError``: a key it does not
    know, a column that holds no vectors, a value of the wrong type."""


class FullTextQueryError(ArgumentError):
    """A ``full_text_query`` pylance refuses with a ``ValueError``: no index to search,
    a column that is not text, a phrase on an index without positions, a boolean
    query of MUST_NOT clauses only."""


class PartitionOutOfRangeError(ArgumentError, IndexError):
    """A vector index partition number outside the index (pylance: ``IndexError``)."""


class ModelStateError(LanceletError, RuntimeError):
    """A model used before it holds what the call needs (pylance: ``RuntimeError``),
    such as ``KMeans.predict`` before ``fit``."""


class TrainingError(ArgumentError, RuntimeError):
    """Training that cannot start, such as k-means asked for more clusters than
    there are vectors (pylance: ``RuntimeError``)."""


class UnsupportedOptionError(LanceletError, NotImplementedError):
    """A pylance option that lancelet does not implement was given a non-default value."""


class UnsupportedFunctionError(LanceletError, NotImplementedError):
    """A pylance function whose work lancelet does not do (vector search, features of
    pylance's native build such as datagen); it exists only to refuse clearly."""


class URIError(LanceletError, ValueError):
    """A location is malformed (a NUL byte) or uses a storage scheme lancelet lacks."""


class StorageError(LanceletError, OSError):
    """A storage backend refused or failed a request (credentials, network, a store
    without conditional writes); the message names the location."""


class StorageNotFoundError(StorageError, FileNotFoundError):
    """An object that should exist in a store does not."""


class ResourcesExhaustedError(LanceletError, OSError):
    """Work needs more memory than its budget (an index build's sort under
    ``LANCE_MEM_POOL_SIZE``); pylance raises an ``OSError`` "Resources exhausted"."""


class DatasetError(LanceletError):
    """A dataset cannot be opened, read or changed."""


class MergeInsertError(DatasetError, OSError):
    """A merge_insert meets rows it may not change: several source rows matching one
    target row, or a match under ``when_matched_fail`` (an ``OSError`` in pylance)."""


class DatasetNotFoundError(DatasetError, FileNotFoundError, ValueError):
    """The path holds no Lance dataset (no manifest under ``_versions/``)."""


class DatasetAlreadyExistsError(DatasetError, FileExistsError):
    """``mode="create"`` was asked for a path that already holds a dataset."""


class VersionNotFoundError(DatasetError, ValueError, OSError):
    """A version number names no manifest of the dataset (pylance raises ``ValueError``
    when opening it, ``OSError`` from ``checkout_version``)."""


class TagError(DatasetError, ValueError):
    """A tag does not exist, already exists, or points at a missing version."""


class TagNotFoundError(TagError, OSError):
    """No tag has the name given (pylance: a ``ValueError`` when opening a version by
    it or changing it, an ``OSError`` from ``checkout_version``)."""


class InvalidTagNameError(TagError, OSError):
    """A tag name pylance refuses (an ``OSError`` in pylance)."""


class CorruptDatasetError(DatasetError, ValueError):
    """A manifest, transaction, deletion or tag file is missing or unreadable."""


class ChangeFeedError(DatasetError, ValueError):
    """What changed between versions cannot be told from their metadata: rows
    without stable ids or lineage (both recorded only when the dataset is created
    with ``enable_stable_row_ids=True``), column data replaced in place."""


class UnsupportedFeatureError(DatasetError):
    """The manifest sets a reader or writer feature flag lancelet does not implement."""


class CommitConflictError(DatasetError, OSError):
    """A commit lost the race to a concurrent one and could not be rebased onto it.

    pylance's ``lance.commit.CommitConflictError`` (an ``OSError``, which a custom
    ``commit_lock`` raises): ``retryable`` says whether re-reading the dataset and
    trying again can succeed."""

    retryable: bool = False

    def __init__(self, message: str = "", retryable: bool | None = None) -> None:
        # None: the class's verdict; one built directly is retryable, as pylance's.
        super().__init__(message)
        if retryable is not None:
            self.retryable = retryable
        elif type(self) is CommitConflictError:
            self.retryable = True


class RetryableCommitConflictError(CommitConflictError):
    """The concurrent change touched data this one read; re-read and try again."""

    retryable = True


class ReuseIndexChangedError(RetryableCommitConflictError):
    """A compaction that defers index remapping extends the Fragment Reuse Index it
    read, and another commit replaced that index meanwhile."""


class IncompatibleTransactionError(CommitConflictError):
    """The concurrent change makes this one meaningless (for example a restore)."""


class CommitRetriesExhaustedError(CommitConflictError):
    """Every allowed retry lost the race to another writer."""

    retryable = True


class ScalarIndexError(LanceletError):
    """A scalar index cannot be read, searched or written."""


class UnsupportedIndexError(ScalarIndexError):
    """An index uses a layout or option this implementation does not read or write."""


class UnsupportedVectorIndexError(UnsupportedIndexError, NotImplementedError):
    """A nearest-neighbour query would use a vector index, which lancelet does not
    read yet (pylance would answer from the index, approximately): refused, never
    answered by an exact search instead."""


class CorruptIndexError(ScalarIndexError, CorruptDatasetError):
    """An index file under ``_indices/`` is missing, or contradicts its format or the
    dataset."""


class IndexNotFoundError(DatasetError, KeyError, RuntimeError):
    """No index of the dataset has the name given."""

    def __str__(self) -> str:  # a KeyError would print its message quoted
        return str(self.args[0]) if self.args else ""


class IndexExistsError(DatasetError, ValueError, RuntimeError):
    """An index of that name exists already, and replacing it was not asked for."""


class ManifestNamingError(DatasetError, OSError):
    """The dataset's manifest naming scheme does not allow what was asked (a detached
    commit needs v2 manifest paths)."""


class RowOutOfRangeError(DatasetError, IndexError, OSError):
    """A row position given to ``take`` is negative or past the dataset's last row."""
