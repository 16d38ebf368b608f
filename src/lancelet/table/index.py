"""Index metadata: what a manifest's index section says about each index.

An index lives in ``_indices/<uuid>/`` and is described in the manifest by an
:class:`IndexMetadata`: the fields it covers, the version it was built from, the
fragments whose rows it holds, and its type (a protobuf ``Any``, whose ``type_url``
names the kind of index).  An index lancelet does not implement keeps its details
as bytes, unread, so committing on top of it writes them back unchanged.

Fragment bitmaps are 32-bit Roaring bitmaps in the portable serialization, as the
reference writes them; an empty ``bytes`` field means "not recorded" (``None``),
which is not the same as an empty bitmap.
"""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Iterable
from dataclasses import dataclass, replace

from google.protobuf import unknown_fields
from google.protobuf.message import DecodeError
from pyroaring import FrozenBitMap

from lancelet._proto import table_pb2
from lancelet.errors import CorruptDatasetError

# System indices cover no field; the reference keeps them through schema changes.
FRAG_REUSE_INDEX = "__lance_frag_reuse"
MEM_WAL_INDEX = "__lance_mem_wal"
SYSTEM_INDICES = frozenset({FRAG_REUSE_INDEX, MEM_WAL_INDEX})

# On a dataset with stable row ids, the index versions (per details type) that list
# rows by stable row id rather than by row address, as pylance 14 writes them: such
# an index needs no rewriting when compaction moves rows, only its fragments change.
ROW_ID_KEYED_VERSIONS: dict[str, frozenset[int]] = {
    "/lance.table.BTreeIndexDetails": frozenset({0}),
    "/lance.table.BitmapIndexDetails": frozenset({0}),
    "/lance.table.LabelListIndexDetails": frozenset({1}),
    "/lance.table.NGramIndexDetails": frozenset({0}),
    # INVERTED (version 2): its docs' ``_rowid`` holds stable row ids (measured).
    "/lance.table.InvertedIndexDetails": frozenset({2}),
    # Vector indices (IVF_*): their ``_rowid`` column holds stable row ids.
    "/lance.index.pb.VectorIndexDetails": frozenset({1}),
}


# The segment types a compaction that defers remapping leaves to the Fragment Reuse
# Index (vector indices too: pylance 14 leaves them as they are).  Zone maps and
# Bloom filters are not among them: pylance answers from their
# zones as recorded, missing rows (lance#8221, #8504), so lancelet uncovers their
# rewritten fragments instead.  (Reading, lancelet maps any segment's addresses.)
REUSE_DEFERRED_TYPES = frozenset(
    {
        "/lance.table.BTreeIndexDetails",
        "/lance.table.BitmapIndexDetails",
        "/lance.table.LabelListIndexDetails",
        "/lance.index.pb.VectorIndexDetails",
        # INVERTED too (measured: its documents keep their old addresses).
        "/lance.table.InvertedIndexDetails",
    }
)


@dataclass(frozen=True)
class IndexDetails:
    """A ``google.protobuf.Any``: the kind of index and its type-specific parameters."""

    type_url: str
    value: bytes = b""

    @property
    def message_name(self) -> str:
        """The details message's name without its package (``BTreeIndexDetails``)."""
        return self.type_url.rsplit("/", 1)[-1].rsplit(".", 1)[-1]


@dataclass(frozen=True)
class IndexFile:
    """A file of the index, relative to its directory, with its size."""

    path: str
    size_bytes: int


@dataclass(frozen=True)
class IndexMetadata:
    uuid: uuid_lib.UUID
    # Field ids the index covers (none for system indices).
    fields: tuple[int, ...]
    name: str
    # The version whose data the index was built from.
    dataset_version: int
    # Fragments whose rows the index holds; None: not recorded (very old writers).
    fragment_bitmap: FrozenBitMap | None
    index_details: IndexDetails | None = None
    index_version: int | None = None
    # Milliseconds since the epoch.
    created_at: int | None = None
    # The base path the index files live under (shallow clones); None: this dataset.
    base_id: int | None = None
    # The index's files (pylance 14 lists them; earlier writers do not).
    files: tuple[IndexFile, ...] = ()
    # True when the manifest records no details and ``index_details`` was inferred
    # from the index's files (see ``table.index_layout``): never written back.
    details_inferred: bool = False

    @property
    def recorded_details(self) -> IndexDetails | None:
        """The details as the manifest records them."""
        return None if self.details_inferred else self.index_details

    @property
    def is_system(self) -> bool:
        return self.name in SYSTEM_INDICES

    def keyed_by_row_id(self, stable_row_ids: bool) -> bool:
        """Whether the index lists rows by stable row id (else by row address)."""
        if not stable_row_ids or self.index_details is None:
            return False
        versions = ROW_ID_KEYED_VERSIONS.get(self.index_details.type_url, frozenset())
        return (self.index_version or 0) in versions

    def mapped_by_reuse(self, stable_row_ids: bool) -> bool:
        """Whether the Fragment Reuse Index maps this segment's rows: it lists them
        by address."""
        return not self.is_system and not self.keyed_by_row_id(stable_row_ids)

    def left_to_reuse(self, stable_row_ids: bool) -> bool:
        """Whether a compaction that defers remapping leaves this segment as it is."""
        return (
            self.mapped_by_reuse(stable_row_ids)
            and self.index_details is not None
            and self.index_details.type_url in REUSE_DEFERRED_TYPES
        )

    def covers(self, fragment_id: int) -> bool:
        """Whether the index holds the rows of the fragment (an unrecorded bitmap is
        taken as covering everything, as the reference does for old indices)."""
        return self.fragment_bitmap is None or fragment_id in self.fragment_bitmap

    def without_fragments(self, gone: Iterable[int]) -> IndexMetadata:
        """The same index no longer claiming ``gone``: their rows are found by scanning
        until the index is rebuilt, never through stale row addresses or values."""
        if self.fragment_bitmap is None:
            return self
        dropped = self.fragment_bitmap & FrozenBitMap(gone)
        if not dropped:
            return self
        return replace(self, fragment_bitmap=self.fragment_bitmap - dropped)

    def to_proto(self) -> table_pb2.IndexMetadata:
        pb = table_pb2.IndexMetadata(
            fields=list(self.fields), name=self.name, dataset_version=self.dataset_version
        )
        pb.uuid.uuid = self.uuid.bytes
        if self.fragment_bitmap is not None:
            pb.fragment_bitmap = self.fragment_bitmap.serialize()
        if self.recorded_details is not None:
            assert self.index_details is not None
            pb.index_details.type_url = self.index_details.type_url
            pb.index_details.value = self.index_details.value
        if self.index_version is not None:
            pb.index_version = self.index_version
        if self.created_at is not None:
            pb.created_at = self.created_at
        if self.base_id is not None:
            pb.base_id = self.base_id
        pb.files.extend(
            table_pb2.IndexFile(path=f.path, size_bytes=f.size_bytes) for f in self.files
        )
        return pb

    @classmethod
    def from_proto(cls, pb: table_pb2.IndexMetadata, where: str) -> IndexMetadata:
        """Decode one index; damage that decoding alone reveals (a uuid of the wrong
        length, a bitmap that does not parse, no name) is a CorruptDatasetError
        naming ``where`` (the manifest)."""
        label = f"{where}: index {pb.name!r}"
        if not pb.name:
            raise CorruptDatasetError(f"{where}: an index has an empty name")
        if len(pb.uuid.uuid) != 16:
            raise CorruptDatasetError(f"{label}: its uuid is {len(pb.uuid.uuid)} bytes, not 16")
        details = None
        if pb.HasField("index_details"):
            details = IndexDetails(pb.index_details.type_url, pb.index_details.value)
        return cls(
            uuid=uuid_lib.UUID(bytes=pb.uuid.uuid),
            fields=tuple(pb.fields),
            name=pb.name,
            dataset_version=pb.dataset_version,
            fragment_bitmap=_bitmap(pb.fragment_bitmap, label),
            index_details=details,
            index_version=pb.index_version if pb.HasField("index_version") else None,
            created_at=pb.created_at if pb.HasField("created_at") else None,
            base_id=pb.base_id if pb.HasField("base_id") else None,
            files=tuple(IndexFile(f.path, f.size_bytes) for f in pb.files),
        )


def _bitmap(data: bytes, label: str) -> FrozenBitMap | None:
    if not data:
        return None
    try:
        bitmap = FrozenBitMap.deserialize(data)
    except (ValueError, OverflowError) as exc:
        raise CorruptDatasetError(f"{label}: its fragment bitmap does not parse: {exc}") from exc
    return bitmap


def check_indices(
    indices: tuple[IndexMetadata, ...],
    field_ids: frozenset[int],
    version: int,
    max_fragment_id: int | None,
    path: str,
) -> None:
    """What the indices of a manifest must agree on with the rest of it: unique uuids,
    fields of the schema, a build version no later than the manifest's, and fragment
    ids within ``max_fragment_id``."""
    seen: set[uuid_lib.UUID] = set()
    for index in indices:
        label = f"{path}: index {index.name!r} ({index.uuid})"
        if index.uuid in seen:
            raise CorruptDatasetError(f"{label}: the uuid is used by another index too")
        seen.add(index.uuid)
        unknown = sorted(set(index.fields) - field_ids)
        if unknown:
            raise CorruptDatasetError(f"{label}: covers field ids {unknown}, not in the schema")
        if not index.fields and not index.is_system:
            raise CorruptDatasetError(f"{label}: covers no field")
        if index.base_id is None and index.dataset_version > version:
            raise CorruptDatasetError(
                f"{label}: built from version {index.dataset_version}, after this version {version}"
            )
        bitmap = index.fragment_bitmap
        if bitmap and max_fragment_id is not None and bitmap.max() > max_fragment_id:
            raise CorruptDatasetError(
                f"{label}: claims fragment {bitmap.max()}, above max_fragment_id {max_fragment_id}"
            )


# -- index types, as the reference names them ---------------------------------------

_VECTOR_DETAILS = "VectorIndexDetails"
# Fields of the reference's VectorIndexDetails that name the sub-index and the
# quantizer (its field 1 is the metric, 9 runtime hints).
_HNSW = 3
_QUANTIZERS = {4: "PQ", 5: "SQ", 6: "RQ", 8: "FLAT"}


def index_type(details: IndexDetails | None) -> str:
    """The type name the reference's ``list_indices`` gives: ``BTree``, ``Bitmap``,
    ``IVF_PQ``...  Scalar types are their details message less ``IndexDetails``."""
    if details is None:
        return "Unknown"
    name = details.message_name
    if name == _VECTOR_DETAILS:
        return _vector_type(details.value)
    return name.removesuffix("IndexDetails") or "Unknown"


def _vector_type(value: bytes) -> str:
    """``IVF_[HNSW_]PQ|SQ|RQ|FLAT``, from which fields the details hold; ``Vector``
    when they name no quantizer (writers before the details had content)."""
    present = _top_level_fields(value)
    quantizers = [_QUANTIZERS[n] for n in sorted(_QUANTIZERS) if n in present]
    if len(quantizers) != 1:
        return "Vector"
    return "IVF_" + ("HNSW_" if _HNSW in present else "") + quantizers[0]


def _top_level_fields(value: bytes) -> set[int]:
    # The details message lancelet knows has no fields, so all of them parse as unknown.
    pb = table_pb2.VectorIndexDetails()
    try:
        pb.ParseFromString(value)
    except DecodeError:
        return set()
    found = unknown_fields.UnknownFieldSet(pb)
    return {found[i].field_number for i in range(len(found))}
