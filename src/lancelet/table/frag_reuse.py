"""The Fragment Reuse Index's details: how compactions that deferred index remapping
moved rows.

Each *reuse version* is one such compaction; each of its groups lists the fragments
it replaced and the ones it wrote (id, physical rows, deleted rows) and, as a
64-bit Roaring treemap in the portable serialization, the old addresses of the
rows that survived.  Those rows are the new fragments' rows in order: the i-th
address of the treemap became the i-th row of the new fragments taken together.
Every other row of an old fragment was deleted.

The details live inline in the index metadata while their encoding is under
200 KiB, else in ``_indices/<uuid>/details.binpb`` (the same ``InlineContent``
message), as the reference writes them.  Decoding checks what a mapping depends
on, so a damaged index is an error, never rows mapped to the wrong place.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from google.protobuf.message import DecodeError
from pyroaring import BitMap64

from lancelet._proto import table_pb2
from lancelet.errors import CorruptIndexError
from lancelet.table import row_address
from lancelet.table.fragment import ExternalFile
from lancelet.table.index import IndexDetails

TYPE_URL = "/lance.table.FragmentReuseIndexDetails"
DETAILS_FILE = "details.binpb"
INLINE_LIMIT = 200 * 1024

_Pb = table_pb2.FragmentReuseIndexDetails


@dataclass(frozen=True)
class FragmentDigest:
    id: int
    physical_rows: int
    num_deleted_rows: int = 0


@dataclass(frozen=True)
class ReuseGroup:
    """Old fragments replaced by new ones; ``changed`` holds the old addresses of the
    surviving rows, ascending (uint64)."""

    changed: np.ndarray
    old_fragments: tuple[FragmentDigest, ...]
    new_fragments: tuple[FragmentDigest, ...]

    @cached_property
    def old_ids(self) -> frozenset[int]:
        return frozenset(f.id for f in self.old_fragments)

    @cached_property
    def new_ids(self) -> frozenset[int]:
        return frozenset(f.id for f in self.new_fragments)

    def check(self, where: str, ascending: bool = False) -> None:
        """Refuse a group whose addresses cannot be the surviving rows of its old
        fragments laid out over its new ones (``ascending``: known sorted and unique,
        as a decoded treemap is)."""
        changed = self.changed
        if len(changed) != sum(f.physical_rows for f in self.new_fragments):
            raise CorruptIndexError(
                f"{where}: a group lists {len(changed)} moved rows for new fragments "
                f"{sorted(self.new_ids)} of {sum(f.physical_rows for f in self.new_fragments)} rows"
            )
        if self.old_ids & self.new_ids or len(self.old_ids) != len(self.old_fragments):
            raise CorruptIndexError(f"{where}: a group's fragment ids repeat")
        if not ascending and len(changed) > 1 and not (changed[1:] > changed[:-1]).all():
            raise CorruptIndexError(f"{where}: a group's moved rows are not ascending")
        # Sorted and unique, so counting the rows inside each old fragment's range
        # tells whether every row is one of them.
        starts = row_address.fragment_starts(np.array([f.id for f in self.old_fragments]))
        rows = np.array([f.physical_rows for f in self.old_fragments], dtype=np.uint64)
        inside = np.searchsorted(changed, starts + rows) - np.searchsorted(changed, starts)
        if int(inside.sum()) != len(changed):
            raise CorruptIndexError(
                f"{where}: a group moves rows that are not rows of its old fragments "
                f"{sorted(self.old_ids)}"
            )

    def to_proto(self) -> _Pb.Group:
        bitmap = BitMap64(self.changed)
        return _Pb.Group(
            changed_row_addrs=bitmap.serialize(),
            old_fragments=[_digest_pb(f) for f in self.old_fragments],
            new_fragments=[_digest_pb(f) for f in self.new_fragments],
        )

    @classmethod
    def from_proto(cls, pb: _Pb.Group, where: str) -> ReuseGroup:
        try:
            bitmap = BitMap64.deserialize(pb.changed_row_addrs)
        except (ValueError, OverflowError) as exc:
            raise CorruptIndexError(f"{where}: a group's moved rows do not parse: {exc}") from exc
        changed = np.frombuffer(bitmap.to_array(), dtype=np.uint64)
        group = cls(changed, _digests(pb.old_fragments), _digests(pb.new_fragments))
        group.check(where, ascending=True)
        return group


def _digests(pbs: Iterable[_Pb.FragmentDigest]) -> tuple[FragmentDigest, ...]:
    return tuple(FragmentDigest(f.id, f.physical_rows, f.num_deleted_rows) for f in pbs)


def _digest_pb(f: FragmentDigest) -> _Pb.FragmentDigest:
    return _Pb.FragmentDigest(
        id=f.id, physical_rows=f.physical_rows, num_deleted_rows=f.num_deleted_rows
    )


@dataclass(frozen=True)
class ReuseVersion:
    """One deferred compaction; ``dataset_version`` is the version it committed onto."""

    dataset_version: int
    groups: tuple[ReuseGroup, ...]

    @cached_property
    def old_ids(self) -> frozenset[int]:
        return frozenset().union(*(g.old_ids for g in self.groups))

    @cached_property
    def new_ids(self) -> frozenset[int]:
        return frozenset().union(*(g.new_ids for g in self.groups))


@dataclass(frozen=True)
class ReuseDetails:
    """Every reuse version still kept, oldest first."""

    versions: tuple[ReuseVersion, ...]

    def to_bytes(self) -> bytes:
        """The ``InlineContent`` message, as stored inline or in the details file."""
        pb = _Pb.InlineContent()
        for version in self.versions:
            pb.versions.append(
                _Pb.Version(
                    dataset_version=version.dataset_version,
                    groups=[g.to_proto() for g in version.groups],
                )
            )
        return bytes(pb.SerializeToString())

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> ReuseDetails:
        pb = _Pb.InlineContent()
        try:
            pb.ParseFromString(data)
        except DecodeError as exc:
            raise CorruptIndexError(f"{where}: the reuse details do not parse: {exc}") from exc
        return cls.from_proto(pb, where)

    @classmethod
    def from_proto(cls, pb: _Pb.InlineContent, where: str) -> ReuseDetails:
        versions = tuple(
            ReuseVersion(
                v.dataset_version,
                tuple(
                    ReuseGroup.from_proto(g, f"{where} (reuse version {v.dataset_version})")
                    for g in v.groups
                ),
            )
            for v in sorted(pb.versions, key=lambda v: v.dataset_version)
        )
        seen: set[int] = set()
        for version in versions:
            if seen & version.old_ids:
                raise CorruptIndexError(f"{where}: two reuse versions replace one fragment")
            seen |= version.old_ids
        return cls(versions)


def read_content(details: IndexDetails, where: str) -> ReuseDetails | ExternalFile:
    """The inline details, or where the details file holds them."""
    if details.type_url != TYPE_URL:
        raise CorruptIndexError(f"{where}: details of type {details.type_url!r}, not reuse details")
    pb = _Pb()
    try:
        pb.ParseFromString(details.value)
    except DecodeError as exc:
        raise CorruptIndexError(f"{where}: the reuse details do not parse: {exc}") from exc
    kind = pb.WhichOneof("content")
    if kind == "inline":
        return ReuseDetails.from_proto(pb.inline, where)
    if kind == "external":
        return ExternalFile(pb.external.path, pb.external.offset, pb.external.size)
    raise CorruptIndexError(f"{where}: the reuse details hold no content")


def index_details(content: ReuseDetails | ExternalFile) -> IndexDetails:
    """The manifest's details for inline content, or for a details file."""
    if isinstance(content, ReuseDetails):
        pb = _Pb(inline=_Pb.InlineContent.FromString(content.to_bytes()))
    else:
        pb = _Pb(
            external=table_pb2.ExternalFile(
                path=content.path, offset=content.offset, size=content.size
            )
        )
    return IndexDetails(TYPE_URL, bytes(pb.SerializeToString()))
