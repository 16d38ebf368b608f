"""Fragments, their data files and deletion files, as immutable values.

A fragment is a horizontal slice of the dataset: ``physical_rows`` rows stored
column-wise across one or more data files (each holding some of the fields),
minus the rows its deletion file marks as deleted.
"""

from __future__ import annotations

import json as _json
import warnings
from collections import abc
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Literal, NoReturn, Protocol, runtime_checkable

from lancelet._proto import table_pb2
from lancelet.errors import ArgumentError, UnsupportedFeatureError, UnsupportedOptionError
from lancelet.table.naming import DELETIONS_DIR, DeletionKind, deletion_file_name

_KIND_TO_PB = {
    DeletionKind.ARROW: table_pb2.DeletionFile.ARROW_ARRAY,
    DeletionKind.BITMAP: table_pb2.DeletionFile.BITMAP,
}
_KIND_FROM_PB = {v: k for k, v in _KIND_TO_PB.items()}


# Manifest.fragments is field 2, length-delimited (wire type 2): (2 << 3) | 2.
_FRAGMENTS_TAG = 0x12


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# pylance's names of the two deletion file kinds.
DELETION_KIND_NAMES = {DeletionKind.ARROW: "array", DeletionKind.BITMAP: "bitmap"}
_DELETION_KINDS = {name: kind for kind, name in DELETION_KIND_NAMES.items()}


@dataclass(frozen=True)
class DeletionFile:
    """A fragment's deleted rows, with pylance's fields and order: ``file_type`` is
    "array" (an Arrow array of offsets) or "bitmap"; ``base_id`` names the base path
    it lies under (None: the dataset's own)."""

    read_version: int
    id: int
    file_type: str
    num_deleted_rows: int
    base_id: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.file_type, DeletionKind):  # lancelet's own enum, accepted
            object.__setattr__(self, "file_type", DELETION_KIND_NAMES[self.file_type])
        if self.file_type not in _DELETION_KINDS:
            raise ValueError(
                f"deletion file type must be 'array' or 'bitmap', not {self.file_type!r}"
            )

    @property
    def kind(self) -> DeletionKind:
        return _DELETION_KINDS[self.file_type]

    def asdict(self) -> dict[str, int | str | None]:
        return {
            "read_version": self.read_version,
            "id": self.id,
            "file_type": self.file_type,
            "num_deleted_rows": self.num_deleted_rows,
            "base_id": self.base_id,
        }

    def json(self) -> str:
        """This deletion file as pylance's compact JSON."""
        return _json.dumps(self.asdict(), separators=(",", ":"))

    @staticmethod
    def from_json(json: str) -> DeletionFile:
        """A deletion file from pylance's JSON form (``DeletionFile.json``)."""
        return _deletion_file_from_json(json)

    def path(self, fragment_id: int, base_uri: str | None = None) -> str:
        """Where the file is for fragment ``fragment_id``: under ``_deletions/`` of the
        dataset, or of ``base_uri`` (a plain path; pylance takes no URI scheme here)."""
        file = deletion_file_name(fragment_id, self.read_version, self.id, self.kind)
        name = f"{DELETIONS_DIR}/{file}"
        if base_uri is None:
            return name
        base = base_uri.strip("/")
        if "//" in base or ":" in base.split("/")[0]:
            raise ArgumentError(f"DeletionFile.path: invalid base URI {base_uri!r}")
        return f"{base}/{name}" if base else name

    def to_proto(self) -> table_pb2.DeletionFile:
        return table_pb2.DeletionFile(
            file_type=_KIND_TO_PB[self.kind],
            read_version=self.read_version,
            id=self.id,
            num_deleted_rows=self.num_deleted_rows,
            base_id=self.base_id,
        )

    @classmethod
    def from_proto(cls, pb: table_pb2.DeletionFile) -> DeletionFile:
        base_id = pb.base_id if pb.HasField("base_id") else None
        kind = DELETION_KIND_NAMES[_KIND_FROM_PB[pb.file_type]]
        return cls(pb.read_version, pb.id, kind, pb.num_deleted_rows, base_id)


def _deletion_file_from_json(text: str) -> DeletionFile:
    try:
        data = _json.loads(text)
        base_id = data.get("base_id")
        return DeletionFile(
            int(data["read_version"]),
            int(data["id"]),
            str(data["file_type"]),
            int(data["num_deleted_rows"]),
            None if base_id is None else int(base_id),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ArgumentError(f"Could not load DeletionFile from JSON: {exc!r}") from exc


class _CallablePath(str):
    """A data file's path that can still be called, as ``path()`` was in old pylance."""

    def __call__(self) -> str:
        warnings.warn(
            "DataFile.path() is deprecated, use DataFile.path instead",
            DeprecationWarning,
            stacklevel=2,
        )
        return str(self)


class IntList(list[int]):
    """A list of ints that cannot be changed in place.

    pylance's ``DataFile.fields`` and ``column_indices`` are lists.  lancelet's data
    files are shared values (a version's manifest is cached and read by every scan),
    so a change in place would alter the dataset's view of itself: such lists refuse
    every change, and hash as tuples so that data files and fragments can be compared
    and hashed as values.  A new list comes from ``+`` or ``list(...)``; a changed data
    file from ``dataclasses.replace``."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(
            "a DataFile's fields and column_indices cannot be changed in place; "
            "build a new DataFile (dataclasses.replace(data_file, fields=[...]))"
        )

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> tuple[type[IntList], tuple[list[int]]]:
        return (IntList, (list(self),))


@runtime_checkable
class DescribesDataFiles(Protocol):
    """A dataset that can describe a data file written into it (``LanceDataset``)."""

    def describe_data_file(self, path: str, base_id: int | None = None) -> DataFile: ...


@dataclass(frozen=True)
class DataFile:
    """A data file of a fragment, with pylance's fields, order and defaults:
    ``fields[i]`` is stored in column ``column_indices[i]`` of the file (pre-order);
    ``file_size_bytes`` is None when the manifest does not record it; ``base_id``
    names the manifest's base path the file lives under (None: the dataset's own
    ``data/``)."""

    path: str
    # Any sequence of ints is taken; an IntList is kept (see __post_init__).
    fields: abc.Sequence[int]
    column_indices: abc.Sequence[int] = ()
    file_major_version: int = 0
    file_minor_version: int = 0
    file_size_bytes: int | None = None
    base_id: int | None = None

    def __post_init__(self) -> None:
        if type(self.path) is str:
            object.__setattr__(self, "path", _CallablePath(self.path))
        if self.column_indices is None:  # pylance's default
            object.__setattr__(self, "column_indices", ())
        if self.file_size_bytes == 0:  # unknown, as pylance shows it
            object.__setattr__(self, "file_size_bytes", None)
        # Lists, as pylance's; read-only and hashable, so that a data file compares
        # and hashes with the manifest's whatever sequence the caller built it from.
        for name in ("fields", "column_indices"):
            value = getattr(self, name)
            if type(value) is not IntList:
                object.__setattr__(self, name, IntList(int(i) for i in value))

    def field_ids(self) -> list[int]:
        warnings.warn(
            "DataFile.field_ids is deprecated, use DataFile.fields instead",
            DeprecationWarning,
            stacklevel=2,
        )
        return list(self.fields)

    @classmethod
    def create(
        cls, dataset: DescribesDataFiles, path: str, *, base_id: int | None = None
    ) -> DataFile:
        """The record of a Lance file already written under ``dataset``'s ``data/``
        (its fields matched to the dataset's schema by name), as pylance makes it.
        Reading the file is the dataset's job (``describe_data_file``): this layer
        holds plain records and reaches no storage."""
        if not isinstance(dataset, DescribesDataFiles):
            raise TypeError(
                f"DataFile.create: dataset must be a LanceDataset, not {type(dataset).__name__}"
            )
        return dataset.describe_data_file(path, base_id)

    def to_proto(self) -> table_pb2.DataFile:
        pb = table_pb2.DataFile(
            path=self.path,
            fields=self.fields,
            column_indices=self.column_indices,
            file_major_version=self.file_major_version,
            file_minor_version=self.file_minor_version,
            file_size_bytes=self.file_size_bytes or 0,
        )
        if self.base_id is not None:
            pb.base_id = self.base_id
        return pb

    @classmethod
    def from_proto(cls, pb: table_pb2.DataFile) -> DataFile:
        return cls(
            pb.path,
            IntList(pb.fields),  # a protobuf's repeated ints are ints already
            IntList(pb.column_indices),
            pb.file_major_version,
            pb.file_minor_version,
            pb.file_size_bytes,
            pb.base_id if pb.HasField("base_id") else None,
        )


@dataclass(frozen=True)
class ExternalFile:
    """Bytes ``[offset, offset + size)`` of a file named relative to the dataset root."""

    path: str
    offset: int
    size: int


@dataclass(frozen=True)
class Sequence:
    """A per-row sequence a fragment carries (row ids, row versions): serialized bytes
    inline in the manifest, or a range of an external file."""

    inline: bytes | None = None
    external: ExternalFile | None = None

    def fill(self, pb: table_pb2.DataFragment, inline_field: str, external_field: str) -> None:
        if self.external is not None:
            target = getattr(pb, external_field)
            target.path, target.offset, target.size = (
                self.external.path,
                self.external.offset,
                self.external.size,
            )
        else:
            setattr(pb, inline_field, self.inline or b"")

    @classmethod
    def read(cls, pb: table_pb2.DataFragment, oneof: _Oneof) -> Sequence | None:
        which = pb.WhichOneof(oneof)
        if which is None:
            return None
        value = getattr(pb, which)
        if which.startswith("inline"):
            return cls(inline=bytes(value))
        return cls(external=ExternalFile(value.path, value.offset, value.size))


_Oneof = Literal[
    "row_id_sequence", "last_updated_at_version_sequence", "created_at_version_sequence"
]
# (oneof name, inline field, external field) of each sequence, by Fragment attribute.
_SEQUENCES: dict[str, tuple[_Oneof, str, str]] = {
    "row_id_meta": ("row_id_sequence", "inline_row_ids", "external_row_ids"),
    "last_updated_at_version_meta": (
        "last_updated_at_version_sequence",
        "inline_last_updated_at_versions",
        "external_last_updated_at_versions",
    ),
    "created_at_version_meta": (
        "created_at_version_sequence",
        "inline_created_at_versions",
        "external_created_at_versions",
    ),
}


@dataclass(frozen=True)
class Fragment:
    """A fragment's metadata: pylance's ``FragmentMetadata``, with its fields in its
    order."""

    id: int
    files: tuple[DataFile, ...]
    physical_rows: int
    deletion_file: DeletionFile | None = None
    # Stable row ids: the rows' ids, and the versions that created and last updated
    # them (see lancelet.table.lineage).
    row_id_meta: Sequence | None = None
    created_at_version_meta: Sequence | None = None
    last_updated_at_version_meta: Sequence | None = None
    # pylance's data overlay files; lancelet neither reads nor writes them, so a
    # fragment is only ever built without any.
    overlays: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.files, tuple):  # pylance's form is a list
            object.__setattr__(self, "files", tuple(self.files))
        if self.overlays:
            raise UnsupportedOptionError(
                f"FragmentMetadata: fragment {self.id}: overlays= (data overlay files) "
                "is not supported"
            )
        if not isinstance(self.overlays, tuple):
            object.__setattr__(self, "overlays", ())

    @property
    def num_deletions(self) -> int:
        """The number of deleted rows (pylance's name)."""
        return self.num_deleted_rows

    @property
    def num_deleted_rows(self) -> int:
        return self.deletion_file.num_deleted_rows if self.deletion_file else 0

    @property
    def num_rows(self) -> int:
        return self.physical_rows - self.num_deleted_rows

    def data_files(self) -> list[DataFile]:
        warnings.warn(
            "FragmentMetadata.data_files is deprecated. Use .files instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return list(self.files)

    def with_id(self, fragment_id: int) -> Fragment:
        return replace(self, id=fragment_id)

    def to_json(self) -> dict[str, Any]:
        """This fragment as pylance's ``FragmentMetadata.to_json`` gives it."""
        return fragment_to_json(self)

    @staticmethod
    def from_json(json_data: str | dict[str, Any]) -> Fragment:
        """A fragment from pylance's JSON form (a string, or the parsed dict)."""
        return fragment_from_json(json_data)

    @cached_property
    def file_versions(self) -> frozenset[tuple[int, int]]:
        """The (major, minor) format versions its data files record: known once, as
        every commit looks at every fragment's to tell whether formats are mixed."""
        return frozenset((d.file_major_version, d.file_minor_version) for d in self.files)

    def to_proto(self) -> table_pb2.DataFragment:
        """The protobuf form; built once, since every commit re-serializes every fragment."""
        return self._proto

    @cached_property
    def _proto(self) -> table_pb2.DataFragment:
        pb = table_pb2.DataFragment(
            id=self.id,
            files=[f.to_proto() for f in self.files],
            physical_rows=self.physical_rows,
        )
        if self.deletion_file is not None:
            pb.deletion_file.CopyFrom(self.deletion_file.to_proto())
        for attribute, (_, inline, external) in _SEQUENCES.items():
            sequence: Sequence | None = getattr(self, attribute)
            if sequence is not None:
                sequence.fill(pb, inline, external)
        return pb

    @cached_property
    def manifest_field(self) -> bytes:
        """This fragment as one entry of ``Manifest.fragments`` (field 2), on the wire."""
        body = self._proto.SerializeToString()
        return bytes([_FRAGMENTS_TAG]) + _varint(len(body)) + body

    @classmethod
    def from_proto(cls, pb: table_pb2.DataFragment) -> Fragment:
        deletion = (
            DeletionFile.from_proto(pb.deletion_file) if pb.HasField("deletion_file") else None
        )
        return cls(
            pb.id,
            tuple(DataFile.from_proto(f) for f in pb.files),
            pb.physical_rows,
            deletion,
            row_id_meta=Sequence.read(pb, "row_id_sequence"),
            created_at_version_meta=Sequence.read(pb, "created_at_version_sequence"),
            last_updated_at_version_meta=Sequence.read(pb, "last_updated_at_version_sequence"),
        )


# -- pylance's JSON form (``FragmentMetadata.to_json`` / ``from_json``) -----------------
# A dict of ``id``, ``files``, ``overlays``, ``physical_rows``, ``deletion_file``,
# ``row_id_meta``, ``created_at_version_meta`` and ``last_updated_at_version_meta``;
# sequences are their protobuf bytes as lists of ints, tagged ``Inline``/``External``
# (row ids) or ``inline``/``external`` (versions).

# Fragment attribute -> (pylance key, inline tag, external tag).
_SEQUENCE_KEYS = {
    "row_id_meta": ("row_id_meta", "Inline", "External"),
    "created_at_version_meta": ("created_at_version_meta", "inline", "external"),
    "last_updated_at_version_meta": ("last_updated_at_version_meta", "inline", "external"),
}


def _data_file(f: DataFile) -> dict[str, Any]:
    return {
        "fields": list(f.fields),
        "column_indices": list(f.column_indices),
        "file_major_version": f.file_major_version,
        "file_minor_version": f.file_minor_version,
        "file_size_bytes": f.file_size_bytes or None,
        "base_id": f.base_id,
        "path": f.path,
    }


def _deletion_file(d: DeletionFile) -> dict[str, Any]:
    return d.asdict()


def _sequence(s: Sequence, inline: str, external: str) -> dict[str, Any]:
    if s.external is not None:
        e = s.external
        return {external: {"path": e.path, "offset": e.offset, "size": e.size}}
    return {inline: list(s.inline or b"")}


def fragment_to_json(fragment: Fragment) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": fragment.id,
        "files": [_data_file(f) for f in fragment.files],
        "overlays": [],
        "physical_rows": fragment.physical_rows,
        "deletion_file": (
            _deletion_file(fragment.deletion_file) if fragment.deletion_file else None
        ),
    }
    for attribute, (key, inline, external) in _SEQUENCE_KEYS.items():
        sequence: Sequence | None = getattr(fragment, attribute)
        out[key] = None if sequence is None else _sequence(sequence, inline, external)
    return out


def _read_data_file(data: dict[str, Any]) -> DataFile:
    base_id = data.get("base_id")
    return DataFile(
        str(data["path"]),
        tuple(int(i) for i in data["fields"]),
        tuple(int(i) for i in data.get("column_indices") or ()),
        int(data.get("file_major_version", 0)),
        int(data.get("file_minor_version", 0)),
        int(data.get("file_size_bytes") or 0),
        None if base_id is None else int(base_id),
    )


def _read_deletion_file(data: dict[str, Any]) -> DeletionFile:
    file_type = data.get("file_type", "array")
    if file_type not in _DELETION_KINDS:
        raise ArgumentError(f"unknown deletion file type {file_type!r}")
    base_id = data.get("base_id")
    return DeletionFile(
        int(data["read_version"]),
        int(data["id"]),
        file_type,
        int(data.get("num_deleted_rows") or 0),
        None if base_id is None else int(base_id),
    )


def _read_sequence(data: dict[str, Any], inline: str, external: str) -> Sequence:
    if set(data) == {inline}:
        return Sequence(inline=bytes(data[inline]))
    if set(data) == {external}:
        e = data[external]
        return Sequence(external=ExternalFile(str(e["path"]), int(e["offset"]), int(e["size"])))
    raise ArgumentError(f"not a sequence in pylance's form: {data!r}")


def fragment_from_json(data: str | dict[str, Any]) -> Fragment:
    parsed: Any = _json.loads(data) if isinstance(data, str) else data
    if not isinstance(parsed, dict):
        raise ArgumentError("fragment JSON must be an object")
    if parsed.get("overlays"):
        raise UnsupportedFeatureError("fragments with data overlay files")
    deletion = parsed.get("deletion_file")
    sequences: dict[str, Sequence | None] = {}
    for attribute, (key, inline, external) in _SEQUENCE_KEYS.items():
        value = parsed.get(key)
        sequences[attribute] = None if value is None else _read_sequence(value, inline, external)
    return Fragment(
        int(parsed["id"]),
        tuple(_read_data_file(f) for f in parsed["files"]),
        int(parsed["physical_rows"]),
        None if deletion is None else _read_deletion_file(deletion),
        row_id_meta=sequences["row_id_meta"],
        created_at_version_meta=sequences["created_at_version_meta"],
        last_updated_at_version_meta=sequences["last_updated_at_version_meta"],
    )
