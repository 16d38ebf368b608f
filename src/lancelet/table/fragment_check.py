"""A manifest's fragments, decoded and checked once per process.

Successive manifests of a dataset repeat nearly all of their fragments, and a writer
that lost a commit race reads every manifest committed since, so each fragment is
looked up by its protobuf bytes first: one seen before is the same value, checked
already.  The checks here are those a fragment's own bytes decide (see
:mod:`.validate` for those that need the rest of the manifest):

* no unknown field in the fragment, its data files or its deletion file: damage (a
  deletion file whose tag byte changed is skipped as unknown) or a newer writer;
* at least one data file, at least one row;
* data file paths relative to the data directory, staying inside it;
* field ids a data file may list (-2 marks one no longer stored there), none held by
  two files; one column index per field, none used twice;
* a deletion file of a known kind, deleting between one row and all of them;
* an inline row id sequence that decodes to one id per physical row.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, replace

from google.protobuf import unknown_fields
from google.protobuf.message import Message

from lancelet._proto import table_pb2
from lancelet.errors import CorruptDatasetError, UnsupportedFeatureError
from lancelet.table import row_ids
from lancelet.table.fragment import DataFile, Fragment

TOMBSTONE = -2
# Enough for the fragments of a few large datasets; beyond it, decoding is just slower.
_CAPACITY = 20_000
_KINDS = frozenset(table_pb2.DeletionFile.DeletionFileType.values())


@dataclass(frozen=True)
class Checked:
    fragment: Fragment
    # Facts the rest of the manifest must allow: row id or version sequences (stable
    # row ids), files under another base path (multiple base paths), and the data
    # files' format versions, as (major, minor).
    sequences: bool
    # Whether it lists its rows' stable ids (a dataset with stable row ids needs them).
    row_ids: bool
    base_paths: bool
    formats: frozenset[tuple[int, int]]
    # The version its deletion file was written from (-1: it has none).
    deletion_read_version: int


# By protobuf bytes, and by the identity of the Fragment value (which the entry keeps
# alive, so its id is not reused while it is here).
_SEEN: dict[bytes, Checked] = {}
_BY_ID: dict[int, tuple[bytes, Checked]] = {}


def decode_fragments(pb: table_pb2.Manifest, path: str) -> list[Checked]:
    """Every fragment of ``pb``, checked; errors name the manifest ``path``."""
    return [_lookup(f.SerializeToString(), f, path) for f in pb.fragments]


def check_fragments(fragments: tuple[Fragment, ...], where: str) -> list[Checked]:
    """Fragments built in memory, as a manifest about to be written holds them: those
    decoded before are known by identity, the others checked through their bytes."""
    out = []
    for fragment in fragments:
        known = _BY_ID.get(id(fragment))
        if known is not None and known[1].fragment is fragment:
            out.append(known[1])
        else:
            pb = fragment.to_proto()
            key = pb.SerializeToString()
            checked = replace(_lookup(key, pb, where), fragment=fragment)
            _remember_identity(fragment, key, checked)
            out.append(checked)
    return out


def _remember_identity(fragment: Fragment, key: bytes, checked: Checked) -> None:
    """Know a fragment built in memory by identity too: the next commit's manifest
    holds the same object.  The entry keeps it alive, so its id is not reused."""
    if len(_BY_ID) >= 2 * _CAPACITY:
        _BY_ID.clear()  # only a shortcut: fragments are found by their bytes again
    _BY_ID[id(fragment)] = (key, checked)


def _lookup(key: bytes, pb: table_pb2.DataFragment, path: str) -> Checked:
    checked = _SEEN.get(key)
    if checked is None:
        checked = _decode(pb, f"{path}: fragment {pb.id}")
        if len(_SEEN) >= _CAPACITY:
            _evict_oldest()
        _SEEN[key] = checked
        _BY_ID[id(checked.fragment)] = (key, checked)
    return checked


def _evict_oldest() -> None:
    try:
        evicted = _SEEN.pop(next(iter(_SEEN)), None)
    except (StopIteration, RuntimeError):  # emptied or changed by another thread
        return
    if evicted is not None:
        _BY_ID.pop(id(evicted.fragment), None)


def _decode(pb: table_pb2.DataFragment, where: str) -> Checked:
    _no_unknown(pb, where)
    for data_file in pb.files:
        _no_unknown(data_file, f"{where}, data file {data_file.path!r}")
    base = any(d.HasField("base_id") for d in pb.files)
    if pb.HasField("deletion_file"):
        _no_unknown(pb.deletion_file, f"{where}, deletion file")
        if pb.deletion_file.HasField("base_id"):
            raise UnsupportedFeatureError(
                f"{where}: its deletion file lies under a base path; lancelet reads and "
                "writes deletion files under the dataset root only"
            )
        if pb.deletion_file.file_type not in _KINDS:
            raise CorruptDatasetError(
                f"{where}: deletion file kind {pb.deletion_file.file_type} is unknown"
            )
    fragment = Fragment.from_proto(pb)
    _check(fragment, where)
    sequences = any(
        (
            pb.WhichOneof("row_id_sequence"),
            pb.WhichOneof("last_updated_at_version_sequence"),
            pb.WhichOneof("created_at_version_sequence"),
        )
    )
    if fragment.row_id_meta is not None and fragment.row_id_meta.inline is not None:
        row_ids.decode(fragment.row_id_meta.inline, fragment.physical_rows, where)
    formats = frozenset((d.file_major_version, d.file_minor_version) for d in fragment.files)
    deletion = fragment.deletion_file
    return Checked(
        fragment,
        sequences,
        fragment.row_id_meta is not None,
        base,
        formats,
        -1 if deletion is None else deletion.read_version,
    )


def _no_unknown(message: Message, where: str) -> None:
    found = unknown_fields.UnknownFieldSet(message)
    if len(found):
        raise CorruptDatasetError(
            f"{where}: unknown field {found[0].field_number} (wire type "
            f"{found[0].wire_type}) in a {message.DESCRIPTOR.name}; the manifest is damaged "
            "or was written by a newer Lance version whose fragments lancelet cannot read"
        )


def _check(fragment: Fragment, where: str) -> None:
    if not fragment.files:
        raise CorruptDatasetError(f"{where}: lists no data files")
    if fragment.physical_rows < 1:
        raise CorruptDatasetError(f"{where}: has {fragment.physical_rows} rows")
    held: set[int] = set()
    for data_file in fragment.files:
        _check_path(data_file.path, where)
        fields = [i for i in data_file.fields if i != TOMBSTONE]
        if (
            (fields and min(fields) < 0)
            or held.intersection(fields)
            or len(set(fields)) != len(fields)
        ):
            raise CorruptDatasetError(
                f"{where}: data file {data_file.path!r} lists field ids "
                f"{list(data_file.fields)}: negative, or held by two files of the fragment"
            )
        held.update(fields)
        if data_file.file_major_version >= 2:
            _check_column_indices(data_file, where)
    deletion = fragment.deletion_file
    if deletion is not None and not 1 <= deletion.num_deleted_rows <= fragment.physical_rows:
        raise CorruptDatasetError(
            f"{where}: its deletion file deletes {deletion.num_deleted_rows} of "
            f"{fragment.physical_rows} rows"
        )


def _check_path(path: str, where: str) -> None:
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


def _check_column_indices(data_file: DataFile, where: str) -> None:
    columns = data_file.column_indices
    stored = [c for c in columns if c != -1]
    if (
        len(columns) != len(data_file.fields)
        or (columns and min(columns) < -1)
        or len(set(stored)) != len(stored)
    ):
        raise CorruptDatasetError(
            f"{where}: data file {data_file.path!r} has column indices {list(columns)} for "
            f"fields {list(data_file.fields)}"
        )
