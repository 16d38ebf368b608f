"""The invariants of a manifest, checked whenever one is loaded.

A manifest states each fact once, so a damaged byte usually decodes into another valid
protobuf that describes other rows: a deletion file gone, a fragment gone, a column
moved.  What can be caught is caught here, before anything is read:

* wire-level damage: a field that occurs twice (the decoded message is shorter than
  its bytes); a field whose number lancelet knows but whose wire type differs
  (protobuf parsers skip it as unknown, silently dropping, say, a deletion file); an
  unknown length-delimited field, into which a damaged tag turns a whole fragment or
  schema field; any unknown field inside the messages that say which rows exist
  (fragments, data files, deletion files), which only damage or a newer writer could
  put there; row id sequences without stable row ids;
* the schema: unique ids, each field after its parent, parents that can have
  children, names present and unique among siblings, types that parse;
* fragments: unique ids within ``max_fragment_id``, data files present, a row count,
  field ids that a data file may hold, safe relative paths, known format versions;
* deletion files: a known kind, a count of deleted rows within the fragment, a read
  version before this one, and the reader flag that says deletion files exist.

Errors are :class:`CorruptDatasetError` naming the manifest file and the fragment or
field at fault.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping

from google.protobuf import unknown_fields
from google.protobuf.message import Message

from lancelet._proto import file_pb2, table_pb2
from lancelet.errors import CorruptDatasetError, LanceletError
from lancelet.table import features
from lancelet.table.fragment import Fragment
from lancelet.table.manifest import Manifest

# Field ids a data file may list: -2 marks a field no longer stored there.
TOMBSTONE = -2
# Data file format versions, as (major, minor): (0, 0), (0, 1) and (0, 2) are the legacy
# format, and older writers labelled 2.0 files (0, 3).
_LEGACY_FILES = {(0, 0), (0, 1), (0, 2)}
_FILE_FORMATS = {(0, 3): (2, 0), (2, 0): (2, 0), (2, 1): (2, 1), (2, 2): (2, 2), (2, 3): (2, 3)}
_NESTED = ("struct", "list", "large_list")


def check_wire(pb: table_pb2.Manifest, size: int, path: str) -> None:
    """Damage visible in how the protobuf decoded (see the module docstring); ``size``
    is the length of the bytes ``pb`` was parsed from."""
    _check_canonical(pb, size, path)
    _tolerated_unknowns_only(pb, path, "the manifest")
    for field in pb.fields:
        _tolerated_unknowns_only(field, path, f"field {field.name!r}")
    stable_row_ids = bool(pb.reader_feature_flags & features.STABLE_ROW_IDS)
    for fragment in pb.fragments:
        where = f"fragment {fragment.id}"
        _no_unknown(fragment, path, where)
        for data_file in fragment.files:
            _no_unknown(data_file, path, f"{where}, data file {data_file.path!r}")
            if data_file.HasField("base_id"):
                _refuse_base(pb, path, where)
        if fragment.HasField("deletion_file"):
            _check_deletion_pb(pb, fragment.deletion_file, path, where)
        if not stable_row_ids and _has_sequences(fragment):
            raise CorruptDatasetError(
                f"{path}: {where}: carries row id or row version sequences, but the "
                "manifest does not declare stable row ids"
            )


def _has_sequences(fragment: table_pb2.DataFragment) -> bool:
    return any(
        (
            fragment.WhichOneof("row_id_sequence"),
            fragment.WhichOneof("last_updated_at_version_sequence"),
            fragment.WhichOneof("created_at_version_sequence"),
        )
    )


_MAPS = ("schema_metadata", "config", "table_metadata")


def _check_canonical(pb: table_pb2.Manifest, size: int, path: str) -> None:
    """Writers encode each field once, in its shortest form, so the decoded message
    encodes back to as many bytes.  A field that occurs twice (the first occurrence
    silently lost, or two messages merged) makes the bytes longer.  The reference
    leaves empty keys and values out of map entries, two bytes each, which the
    protobuf library writes back."""
    encoded = pb.ByteSize()
    empty = sum(_empty_entries(getattr(pb, name)) for name in _MAPS)
    empty += sum(_empty_entries(field.metadata) for field in pb.fields)
    if size not in (encoded, encoded - 2 * empty):
        raise CorruptDatasetError(
            f"{path}: the manifest's {size} bytes decode to a message of {encoded} bytes: "
            "a field occurs more than once, so the manifest is damaged"
        )


def _empty_entries(entries: Mapping[str, str] | Mapping[str, bytes]) -> int:
    return sum((not key) + (not value) for key, value in entries.items())


def _check_deletion_pb(
    pb: table_pb2.Manifest, deletion: table_pb2.DeletionFile, path: str, where: str
) -> None:
    _no_unknown(deletion, path, f"{where}, deletion file")
    if deletion.HasField("base_id"):
        _refuse_base(pb, path, where)
    if deletion.file_type not in table_pb2.DeletionFile.DeletionFileType.values():
        raise CorruptDatasetError(
            f"{path}: {where}: deletion file kind {deletion.file_type} is unknown"
        )


def _unknown(message: Message) -> list[tuple[int, int]]:
    found = unknown_fields.UnknownFieldSet(message)
    return [(found[i].field_number, found[i].wire_type) for i in range(len(found))]


# Wire type of length-delimited fields: strings, bytes and messages.
_LEN = 2


def _tolerated_unknowns_only(message: Message, path: str, where: str) -> None:
    """Newer writers add fields, so unknown numbers are tolerated here, but not with a
    known number (damage), nor length-delimited: a message such as a whole fragment or
    field disappears into one when a byte of its tag is damaged."""
    numbers = message.DESCRIPTOR.fields_by_number
    for number, wire in _unknown(message):
        if number in numbers:
            raise CorruptDatasetError(
                f"{path}: {where}: field {numbers[number].name!r} has wire type {wire}, "
                "which is not its type; the manifest is damaged"
            )
        if wire == _LEN:
            raise CorruptDatasetError(
                f"{path}: {where}: unknown length-delimited field {number}; the manifest "
                "is damaged or was written by a newer Lance version"
            )


def _no_unknown(message: Message, path: str, where: str) -> None:
    found = _unknown(message)
    if found:
        number, wire = found[0]
        raise CorruptDatasetError(
            f"{path}: {where}: unknown field {number} (wire type {wire}) in a "
            f"{message.DESCRIPTOR.name}; the manifest is damaged or was written by a "
            "newer Lance version whose fragments lancelet cannot read"
        )


def _refuse_base(pb: table_pb2.Manifest, path: str, where: str) -> None:
    if not pb.reader_feature_flags & features.BASE_PATHS:
        raise CorruptDatasetError(
            f"{path}: {where}: a file names a base path, but the manifest does not "
            "declare multiple base paths"
        )


def check_manifest(manifest: Manifest, path: str) -> None:
    """Every invariant of a decoded manifest that does not need another file."""
    if manifest.version < 1:
        raise CorruptDatasetError(f"{path}: version {manifest.version} is not a version")
    _check_schema(manifest.schema.fields, path)
    try:
        manifest.schema.to_arrow()
    except LanceletError as exc:
        raise CorruptDatasetError(f"{path}: the schema is invalid: {exc}") from exc
    _check_fragment_ids(manifest, path)
    storage = _storage_version(manifest.data_storage_version)
    for fragment in manifest.fragments:
        _check_fragment(fragment, manifest, storage, f"{path}: fragment {fragment.id}")
    _check_deletion_flag(manifest, path)


# -- the schema -------------------------------------------------------------------------------


def _check_schema(fields: Iterable[file_pb2.Field], path: str) -> None:
    seen: dict[int, file_pb2.Field] = {}
    names: set[tuple[int, str]] = set()
    children: dict[int, int] = {}
    for field in fields:
        where = f"{path}: field {field.name!r} (id {field.id})"
        if field.id < 0 or field.id in seen:
            raise CorruptDatasetError(f"{where}: the id is negative or used twice")
        if not field.name or (field.parent_id, field.name) in names:
            raise CorruptDatasetError(f"{where}: the name is empty or used twice in its parent")
        if field.parent_id != -1:
            parent = seen.get(field.parent_id)
            if parent is None:
                raise CorruptDatasetError(
                    f"{where}: its parent id {field.parent_id} is no field listed before it"
                )
            if parent.logical_type.split(".")[0] not in _NESTED:
                raise CorruptDatasetError(
                    f"{where}: its parent {parent.name!r} is a {parent.logical_type}, "
                    "which has no child fields"
                )
            children[parent.id] = children.get(parent.id, 0) + 1
        seen[field.id] = field
        names.add((field.parent_id, field.name))
    for field in seen.values():
        count = children.get(field.id, 0)
        is_list = field.logical_type.split(".")[0] in ("list", "large_list")
        if (is_list and count != 1) or (field.logical_type == "struct" and count == 0):
            raise CorruptDatasetError(
                f"{path}: field {field.name!r} (id {field.id}) is a {field.logical_type} "
                f"with {count} child fields"
            )


# -- fragments --------------------------------------------------------------------------------


def _check_fragment_ids(manifest: Manifest, path: str) -> None:
    ids = [f.id for f in manifest.fragments]
    if len(set(ids)) != len(ids):
        twice = sorted({i for i in ids if ids.count(i) > 1})
        raise CorruptDatasetError(f"{path}: fragment ids {twice} are used more than once")
    highest = max(ids, default=None)
    ceiling = manifest.max_fragment_id
    if highest is not None and ceiling is not None and highest > ceiling:
        raise CorruptDatasetError(f"{path}: fragment {highest} is above max_fragment_id {ceiling}")


def _storage_version(version: str) -> tuple[int, int] | None:
    major, _, minor = version.partition(".")
    if major.isdigit() and minor.isdigit():
        return int(major), int(minor)
    return None  # "legacy" and other names of the old format


def _check_fragment(
    fragment: Fragment, manifest: Manifest, storage: tuple[int, int] | None, where: str
) -> None:
    if not fragment.files:
        raise CorruptDatasetError(f"{where}: lists no data files")
    if fragment.physical_rows < 1:
        raise CorruptDatasetError(f"{where}: has {fragment.physical_rows} rows")
    held: set[int] = set()
    for data_file in fragment.files:
        _check_data_file(data_file.path, where)
        version = (data_file.file_major_version, data_file.file_minor_version)
        if not _fits(version, storage):
            raise CorruptDatasetError(
                f"{where}: data file {data_file.path!r} claims format {version[0]}.{version[1]} "
                f"in a dataset of format {manifest.data_storage_version}"
            )
        fields = [i for i in data_file.fields if i != TOMBSTONE]
        if (
            any(i < 0 for i in fields)
            or held.intersection(fields)
            or len(set(fields)) != len(fields)
        ):
            raise CorruptDatasetError(
                f"{where}: data file {data_file.path!r} lists field ids "
                f"{list(data_file.fields)}: negative, or held by two files of the fragment"
            )
        held.update(fields)
        if version[0] >= 2:
            _check_column_indices(data_file.fields, data_file.column_indices, data_file.path, where)
    deletion = fragment.deletion_file
    if deletion is not None:
        if not 1 <= deletion.num_deleted_rows <= fragment.physical_rows:
            raise CorruptDatasetError(
                f"{where}: its deletion file deletes {deletion.num_deleted_rows} of "
                f"{fragment.physical_rows} rows"
            )
        if deletion.read_version >= manifest.version:
            raise CorruptDatasetError(
                f"{where}: its deletion file was written from version "
                f"{deletion.read_version}, not before this version {manifest.version}"
            )


def _fits(version: tuple[int, int], storage: tuple[int, int] | None) -> bool:
    """Every data file of a dataset is in the dataset's format."""
    if storage is None or storage[0] < 2:
        return version in _LEGACY_FILES or version in _FILE_FORMATS
    return _FILE_FORMATS.get(version) == storage


def _check_data_file(path: str, where: str) -> None:
    """A path relative to the data directory that stays inside it."""
    parts = path.split("/")
    if (
        not path
        or "\\" in path
        or "\0" in path
        or posixpath.isabs(path)
        or any(p in ("", ".", "..") for p in parts)
    ):
        raise CorruptDatasetError(f"{where}: data file path {path!r} leaves the data directory")


def _check_column_indices(
    fields: tuple[int, ...], columns: tuple[int, ...], path: str, where: str
) -> None:
    stored = [c for c in columns if c != -1]
    if (
        len(columns) != len(fields)
        or any(c < -1 for c in columns)
        or len(set(stored)) != len(stored)
    ):
        raise CorruptDatasetError(
            f"{where}: data file {path!r} has column indices {list(columns)} for "
            f"fields {list(fields)}"
        )


def _check_deletion_flag(manifest: Manifest, path: str) -> None:
    """Writers set the deletion-files feature flags exactly when a fragment has a
    deletion file, so a flag without files (or files without the flag) is damage."""
    has_files = any(f.deletion_file is not None for f in manifest.fragments)
    flags = (
        bool(manifest.reader_feature_flags & features.DELETION_FILES),
        bool(manifest.writer_feature_flags & features.DELETION_FILES),
    )
    if flags != (has_files, has_files):
        raise CorruptDatasetError(
            f"{path}: the deletion-files feature flags {flags} contradict the fragments, "
            f"{'some' if has_files else 'none'} of which have deletion files"
        )


# -- a data file against the fragment that lists it -------------------------------------------


def stored_field_ids(descriptor_bytes: bytes, path: str) -> list[int]:
    """The field ids a data file records in its own schema (global buffer 0)."""
    descriptor = file_pb2.FileDescriptor()
    try:
        descriptor.ParseFromString(descriptor_bytes)
    except Exception as exc:  # the file reader parsed it already; this cannot fail
        raise CorruptDatasetError(f"{path}: file descriptor does not parse: {exc}") from exc
    return [f.id for f in descriptor.schema.fields]


def check_file_fields(
    listed: tuple[int, ...], stored: list[int], missing: Iterable[int], where: str
) -> None:
    """The field ids the manifest lists for a data file against those the file records.

    The reference writes the dataset's field ids into each file, so they must agree (a
    field the manifest marks as gone aside).  lancelet has written files that record
    only positions (0, 1, ...).  For those, a column the fragment lacks (``missing``:
    one added with no data since the fragment was written) cannot be numbered between
    the file's ids: it came after the file, or before every column of a file that
    added columns."""
    if len(stored) == len(listed) and all(
        mine in (theirs, TOMBSTONE) for mine, theirs in zip(listed, stored, strict=True)
    ):
        return
    if stored != list(range(len(stored))):
        raise CorruptDatasetError(
            f"{where}: the manifest lists field ids {list(listed)}, the file records {stored}"
        )
    ids = [i for i in listed if i != TOMBSTONE]
    between = sorted(n for n in missing if ids and min(ids) < n < max(ids))
    if between:
        raise CorruptDatasetError(
            f"{where}: the manifest lists field ids {list(listed)} for the file, but the "
            f"fragment holds no column {between[0]}, which no writer leaves out"
        )
