"""The invariants of a manifest, checked whenever one is loaded.

A manifest states each fact once, so a damaged byte usually decodes into another valid
protobuf that describes other rows: a deletion file gone, a fragment gone, a column
moved.  What can be caught is caught before anything is read; each fragment on its
own in :mod:`.fragment_check`, the rest here:

* wire-level damage: a field that occurs twice (the decoded message is shorter than
  its bytes); a field whose number lancelet knows but whose wire type differs
  (protobuf parsers skip it as unknown); an unknown length-delimited field, into which
  a damaged tag byte turns a whole fragment or schema field;
* the schema: unique ids, each field after its parent, parents that can have
  children, names present and unique among siblings, types that parse;
* fragments against the manifest: unique ids within ``max_fragment_id``, data files
  in the dataset's format, deletion files written from an earlier version, row id
  sequences and base paths only where the feature flags declare them, and the
  deletion-files flag exactly when some fragment has a deletion file;
* a data file's own record of its field ids against the manifest's
  (:func:`check_file_fields`, when the file is opened).

Errors are :class:`CorruptDatasetError` naming the manifest file and the fragment or
field at fault.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter

from google.protobuf import unknown_fields
from google.protobuf.message import Message

from lancelet._proto import file_pb2, table_pb2
from lancelet.errors import (
    CorruptDatasetError,
    LanceletError,
    UnsupportedFeatureError,
    UnsupportedTypeError,
)
from lancelet.file import retired
from lancelet.table import features
from lancelet.table.fragment_check import TOMBSTONE, Checked
from lancelet.table.manifest import Manifest, data_file_format
from lancelet.table.schema_field import SchemaField

# Logical types (before any ":" or "."-suffix) that can never have child fields.  A
# container lancelet does not know (a map, a fixed-size list of structs) is left to
# the schema conversion, which says it is unsupported rather than damaged.
_PRIMITIVES = frozenset(
    {
        *(f"{sign}int{bits}" for sign in ("", "u") for bits in (8, 16, 32, 64)),
        *("bool", "null", "halffloat", "float", "double", "string", "large_string"),
        *("binary", "large_binary", "fixed_size_binary", "decimal", "date32", "date64"),
        *("time32", "time64", "timestamp", "duration"),
    }
)


def _is_primitive(logical_type: str) -> bool:
    return logical_type.split(":")[0].split(".")[0] in _PRIMITIVES


def check_wire(pb: table_pb2.Manifest, size: int, path: str) -> None:
    """Damage visible in how the protobuf decoded (see the module docstring); ``size``
    is the length of the bytes ``pb`` was parsed from.  Fragments are checked in
    :mod:`.fragment_check`."""
    _check_canonical(pb, size, path)
    tolerated_unknowns_only(pb, path, "the manifest")
    for field in pb.fields:
        where = f"field {field.name!r}"
        _check_storage_class(field, path, where)
        tolerated_unknowns_only(field, path, where, (retired.STORAGE_CLASS_NUMBER,))


_MAPS = ("schema_metadata", "config", "table_metadata")


def _check_canonical(pb: table_pb2.Manifest, size: int, path: str) -> None:
    """Writers encode each field once, in its shortest form, so the decoded message
    encodes back to as many bytes.  A field that occurs twice (the first occurrence
    silently lost, or two messages merged) makes the bytes longer.  The reference
    leaves empty keys and values out of map entries, two bytes each, which the
    protobuf library writes back (and a shorter schema field may need a shorter
    length prefix)."""
    encoded = pb.ByteSize()
    saved = sum(_omitted_bytes(getattr(pb, name)) for name in _MAPS)
    for field in pb.fields:
        saved += _prefixed(field.ByteSize()) - _prefixed(
            field.ByteSize() - _omitted_bytes(field.metadata)
        )
    if size not in (encoded, encoded - saved):
        raise CorruptDatasetError(
            f"{path}: the manifest's {size} bytes decode to a message of {encoded} bytes: "
            "a field occurs more than once, so the manifest is damaged"
        )


def _omitted_bytes(entries: Mapping[str, str] | Mapping[str, bytes]) -> int:
    """How many bytes shorter the reference encodes a map's entries."""
    saved = 0
    for key, value in entries.items():
        parts = [len(key.encode() if isinstance(key, str) else key)]
        parts.append(len(value.encode() if isinstance(value, str) else value))
        full = sum(_prefixed(n) + 1 for n in parts)
        kept = sum(_prefixed(n) + 1 for n in parts if n)
        saved += _prefixed(full) - _prefixed(kept)
    return saved


def _prefixed(length: int) -> int:
    """The bytes of a length-delimited value with its length prefix."""
    return length + max(1, (length.bit_length() + 6) // 7)


# Wire type of length-delimited fields: strings, bytes and messages.
_LEN = 2


def _unknown(message: Message) -> list[tuple[int, int]]:
    found = unknown_fields.UnknownFieldSet(message)
    return [(found[i].field_number, found[i].wire_type) for i in range(len(found))]


def _check_storage_class(field: file_pb2.Field, path: str, where: str) -> None:
    found = retired.storage_class(field)
    if found is None:
        return
    wire, data = found
    if wire != _LEN:
        raise CorruptDatasetError(
            f"{path}: {where}: storage_class has wire type {wire}; the manifest is damaged"
        )
    if data == retired.BLOB_CLASS:
        raise UnsupportedFeatureError(
            f"{path}: {where}: the column has storage class 'blob' (stored in a "
            "separate blob dataset), which lancelet does not read"
        )
    if data not in retired.DEFAULT_CLASSES:
        raise CorruptDatasetError(
            f"{path}: {where}: unknown storage class {data!r}; the manifest is damaged"
        )


def tolerated_unknowns_only(
    message: Message, path: str, where: str, retired_numbers: tuple[int, ...] = ()
) -> None:
    """Newer writers add fields, so unknown numbers are tolerated here, but not with a
    known number (damage), nor length-delimited: a message such as a whole fragment or
    field disappears into one when a byte of its tag is damaged.  ``retired_numbers``,
    fields older writers set, are checked by the caller."""
    numbers = message.DESCRIPTOR.fields_by_number
    for number, wire in _unknown(message):
        if number in retired_numbers:
            continue
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


def check_manifest(manifest: Manifest, checked: list[Checked], path: str) -> None:
    """Every invariant of a decoded manifest that does not need another file;
    ``checked`` are its fragments as :func:`.fragment_check.decode_fragments` gave them."""
    if manifest.version < 1:
        raise CorruptDatasetError(f"{path}: version {manifest.version} is not a version")
    _check_schema(manifest.schema.fields, path)
    try:
        manifest.schema.to_arrow()
    except (UnsupportedTypeError, UnsupportedFeatureError):
        raise  # a type or column kind lancelet cannot hold yet (a map, say) is no damage
    except LanceletError as exc:
        raise CorruptDatasetError(f"{path}: the schema is invalid: {exc}") from exc
    _check_fragment_ids(manifest, path)
    if not _fragments_fit(manifest, checked):
        # Rare: find the fragment at fault, to name it.
        for each in checked:
            _check_fragment(each, manifest, f"{path}: fragment {each.fragment.id}")
        # The quick passes and the fragment-by-fragment checks must agree; should they
        # not, the manifest is refused rather than let through.
        raise CorruptDatasetError(f"{path}: the fragments do not fit the manifest")
    _check_deletion_flag(manifest, checked, path)
    if any(map(_BASE_PATHS, checked)):
        _check_base_ids(manifest, path)


def _check_base_ids(manifest: Manifest, path: str) -> None:
    ids = [b.id for b in manifest.base_paths]
    # pylance numbers a shallow clone's source base 0.
    if len(set(ids)) != len(ids) or any(i < 0 for i in ids):
        raise CorruptDatasetError(f"{path}: base path ids {ids} are not distinct ids")
    for fragment in manifest.fragments:
        for data_file in fragment.files:
            if data_file.base_id is not None and data_file.base_id not in ids:
                raise CorruptDatasetError(
                    f"{path}: fragment {fragment.id}: data file {data_file.path!r} names base "
                    f"path {data_file.base_id}, which the manifest does not list"
                )


def _fragments_fit(manifest: Manifest, checked: list[Checked]) -> bool:
    """Whether every fragment agrees with the rest of the manifest, in a few passes
    that run in C (a manifest may hold thousands of fragments)."""
    flags = manifest.reader_feature_flags
    if flags & features.STABLE_ROW_IDS:
        if not all(map(_ROW_IDS, checked)):
            return False
    elif any(map(_SEQUENCES, checked)):
        return False
    if not flags & features.BASE_PATHS and any(map(_BASE_PATHS, checked)):
        return False
    if _misfits(frozenset().union(*map(_FORMATS, checked)), manifest):
        return False
    return max(map(_READ_VERSION, checked), default=-1) < manifest.version


_SEQUENCES = attrgetter("sequences")
_ROW_IDS = attrgetter("row_ids")
_BASE_PATHS = attrgetter("base_paths")
_FORMATS = attrgetter("formats")
_READ_VERSION = attrgetter("deletion_read_version")


# -- the schema -------------------------------------------------------------------------------


def _check_schema(fields: Iterable[SchemaField], path: str) -> None:
    seen: dict[int, SchemaField] = {}
    names: set[tuple[int, str]] = set()
    children: dict[int, int] = {}
    for field in fields:
        where = f"{path}: field {field.name!r} (id {field.id})"
        if field.id < 0 or field.id in seen:
            raise CorruptDatasetError(f"{where}: the id is negative or used twice")
        if (field.parent_id, field.name) in names:
            raise CorruptDatasetError(f"{where}: the name is used twice in its parent")
        if field.parent_id != -1:
            parent = seen.get(field.parent_id)
            if parent is None:
                raise CorruptDatasetError(
                    f"{where}: its parent id {field.parent_id} is no field listed before it"
                )
            if _is_primitive(parent.logical_type):
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
        if is_list and count != 1:
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


def _misfits(found: frozenset[tuple[int, int]], manifest: Manifest) -> list[tuple[int, int]]:
    """The data file versions in ``found`` that the dataset may not hold: any but its
    own format, unless the manifest declares mixed 2.x versions (pylance 14's reader
    flag), which admits every 2.x format.  Legacy (0.1) files never mix with 2.x ones,
    and a pair that names no format fits nowhere.  A manifest marked legacy over 2.x
    files (as pylance 0.16 could leave it) is read, as pylance reads it, and its next
    commit corrects the mark."""
    version = manifest.data_storage_version
    mixed = bool(manifest.reader_feature_flags & features.MIXED_FILE_VERSIONS)
    return sorted(v for v in found if not _fits(data_file_format(*v), version, mixed))


def _fits(name: str | None, version: str, mixed: bool) -> bool:
    if name is None:
        return False
    if version == "0.1":
        return name == version or _is_v2(name)
    return name == version or (mixed and _is_v2(name) and _is_v2(version))


def _is_v2(name: str) -> bool:
    major = name.partition(".")[0]
    return major.isdigit() and int(major) >= 2


def _check_fragment(checked: Checked, manifest: Manifest, where: str) -> None:
    """What a fragment must agree on with the rest of the manifest."""
    flags = manifest.reader_feature_flags
    if checked.sequences and not flags & features.STABLE_ROW_IDS:
        raise CorruptDatasetError(
            f"{where}: carries row id or row version sequences, but the manifest does "
            "not declare stable row ids"
        )
    if flags & features.STABLE_ROW_IDS and not checked.row_ids:
        raise CorruptDatasetError(
            f"{where}: lists no row ids, but the manifest declares stable row ids"
        )
    if checked.base_paths and not flags & features.BASE_PATHS:
        raise CorruptDatasetError(
            f"{where}: a file names a base path, but the manifest does not declare "
            "multiple base paths"
        )
    misfits = _misfits(checked.formats, manifest)
    if misfits:
        major, minor = misfits[0]
        raise CorruptDatasetError(
            f"{where}: a data file claims format {major}.{minor} in a dataset of format "
            f"{manifest.data_storage_version}"
        )
    if checked.deletion_read_version >= manifest.version:
        raise CorruptDatasetError(
            f"{where}: its deletion file was written from version "
            f"{checked.deletion_read_version}, not before this version {manifest.version}"
        )


def _check_deletion_flag(manifest: Manifest, checked: list[Checked], path: str) -> None:
    """Writers set the deletion-files feature flags exactly when a fragment has a
    deletion file, so a flag without files (or files without the flag) is damage."""
    has_files = max(map(_READ_VERSION, checked), default=-1) >= 0
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


def check_file_fields(
    listed: Sequence[int],
    stored: list[int],
    missing: Iterable[int] | Callable[[], Iterable[int]],
    where: str,
) -> None:
    """The field ids the manifest lists for a data file against those the file records.

    The reference writes the dataset's field ids into each file, so they must agree (a
    field the manifest marks as gone aside).  lancelet has written files that record
    only positions (0, 1, ...).  For those, a column the fragment lacks (``missing``:
    one added with no data since the fragment was written) cannot be numbered between
    the file's ids: it came after the file, or before every column of a file that
    added columns.  ``missing`` may be given as a function, asked only when needed."""
    if len(stored) == len(listed) and all(
        mine in (theirs, TOMBSTONE) for mine, theirs in zip(listed, stored, strict=True)
    ):
        return
    if stored != list(range(len(stored))):
        raise CorruptDatasetError(
            f"{where}: the manifest lists field ids {list(listed)}, the file records {stored}"
        )
    ids = [i for i in listed if i != TOMBSTONE]
    if callable(missing):
        missing = missing()
    between = sorted(n for n in missing if ids and min(ids) < n < max(ids))
    if between:
        raise CorruptDatasetError(
            f"{where}: the manifest lists field ids {list(listed)} for the file, but the "
            f"fragment holds no column {between[0]}, which no writer leaves out"
        )
