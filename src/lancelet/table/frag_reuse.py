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

import array
import itertools
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from typing import NamedTuple

import numpy as np
from google.protobuf.message import DecodeError
from pyroaring import BitMap, FrozenBitMap64

from lancelet._proto import table_pb2
from lancelet.errors import CorruptIndexError
from lancelet.table import row_address
from lancelet.table.fragment import ExternalFile
from lancelet.table.index import IndexDetails

TYPE_URL = "/lance.table.FragmentReuseIndexDetails"
DETAILS_FILE = "details.binpb"
INLINE_LIMIT = 200 * 1024

_Pb = table_pb2.FragmentReuseIndexDetails


def _treemap(addresses: np.ndarray) -> FrozenBitMap64:
    """Ascending unique addresses as a treemap, built from its serialized form: a
    32-bit bitmap per fragment (a treemap's high half is the fragment id) at once,
    several times faster than adding the addresses one by one."""
    addresses = np.asarray(addresses, dtype=np.uint64)
    if not len(addresses):
        return FrozenBitMap64()
    fragments, offsets = row_address.unpack(addresses)
    starts = np.flatnonzero(np.r_[True, fragments[1:] != fragments[:-1]]).tolist()
    return _joined(
        [int(fragments[lo]) for lo in starts],
        [
            BitMap(array.array("I", offsets[lo:hi].tobytes()))
            for lo, hi in itertools.pairwise([*starts, len(addresses)])
        ],
    )


def live_rows(fragments: Iterable[tuple[int, int, np.ndarray]]) -> FrozenBitMap64:
    """The addresses of the rows not deleted of ``fragments`` (id, physical rows,
    deleted offsets: ascending ids, offsets within the rows), as a treemap: each
    fragment's range of rows less its deleted ones, without an address per row."""
    ids, bitmaps = [], []
    for fragment_id, rows, deleted in fragments:
        if rows <= _CONTAINER:
            # One container: made from the offsets themselves, as the addresses' own
            # bitmap is (two calls, where thinning a range takes six).
            keep = np.ones(rows, dtype=bool)
            keep[deleted] = False
            live = np.flatnonzero(keep).astype(np.uint32)
            if len(live):
                ids.append(fragment_id)
                bitmaps.append(BitMap(array.array("I", live.tobytes())))
            continue
        bitmap = BitMap(range(rows))
        if len(deleted):
            bitmap -= BitMap(array.array("I", deleted.astype(np.uint32).tobytes()))
        if bitmap:
            # In runs where they are smaller, as a bitmap built from the offsets is
            # serialized: the same bytes either way.
            bitmap.run_optimize()
            ids.append(fragment_id)
            bitmaps.append(_small_containers_from_values(bitmap, rows))
    return _joined(ids, bitmaps)


# A container of at most this many values is an array, or runs where they are smaller.
_ARRAY_MOST = 4096
_CONTAINER = 1 << 16


def _small_containers_from_values(bitmap: BitMap, rows: int) -> BitMap:
    """``bitmap`` with each container of at most 4,096 values made from its values,
    as a bitmap built from an array makes it.  A bitmap built from a range holds runs,
    and where runs and an array serialize to as many bytes (three rows in one run),
    run optimization keeps the runs it started from, a bitmap of the values the
    array: the bytes would differ."""
    for low in range(0, rows, _CONTAINER):
        high = min(low + _CONTAINER, rows)
        if 0 < bitmap.range_cardinality(low, high) <= _ARRAY_MOST:
            values = (bitmap & BitMap(range(low, high))).to_array()
            bitmap.remove_range(low, high)
            bitmap |= BitMap(values)
    return bitmap


def _joined(fragment_ids: list[int], bitmaps: list[BitMap]) -> FrozenBitMap64:
    """The treemap of each fragment's (ascending ids) bitmap of row offsets."""
    parts = [struct.pack("<Q", len(fragment_ids))]
    for fragment_id, bitmap in zip(fragment_ids, bitmaps, strict=True):
        parts.append(struct.pack("<I", fragment_id))
        parts.append(bitmap.serialize())
    return FrozenBitMap64.deserialize(b"".join(parts))


class FragmentDigest(NamedTuple):
    id: int
    physical_rows: int
    num_deleted_rows: int = 0


_ID = itemgetter(0)  # a digest's id


@dataclass(frozen=True, init=False)
class ReuseGroup:
    """Old fragments replaced by new ones.  ``survivors`` holds the old addresses of
    the surviving rows: an ascending uint64 array, or the treemap they were decoded
    from (kept as it is: a lookup of a few rows asks the treemap, and only a walk of
    many rows needs the array, see :attr:`changed`)."""

    survivors: np.ndarray | FrozenBitMap64
    old_fragments: tuple[FragmentDigest, ...]
    new_fragments: tuple[FragmentDigest, ...]
    # Worked out as the group is made: a lookup after many deferred compactions asks
    # every group for them once, where a cached property's first call costs more.
    old_ids: frozenset[int] = field(init=False, repr=False, compare=False)
    new_ids: frozenset[int] = field(init=False, repr=False, compare=False)

    def __init__(
        self,
        survivors: np.ndarray | FrozenBitMap64,
        old_fragments: tuple[FragmentDigest, ...],
        new_fragments: tuple[FragmentDigest, ...],
    ) -> None:
        # One update of the instance's dict: a lookup after many deferred compactions
        # makes a group per version, and a frozen dataclass sets its fields one by one.
        self.__dict__.update(
            survivors=survivors,
            old_fragments=old_fragments,
            new_fragments=new_fragments,
            old_ids=frozenset(map(_ID, old_fragments)),
            new_ids=frozenset(map(_ID, new_fragments)),
        )

    @cached_property
    def changed(self) -> np.ndarray:
        """The surviving rows' old addresses, ascending (uint64)."""
        if isinstance(self.survivors, np.ndarray):
            return self.survivors
        return np.frombuffer(self.survivors.to_array(), dtype=np.uint64)

    @property
    def bitmap(self) -> FrozenBitMap64:
        """The same addresses as a treemap: membership and rank without an array."""
        survivors = self.survivors
        return survivors if isinstance(survivors, FrozenBitMap64) else self._array_treemap

    @cached_property
    def _array_treemap(self) -> FrozenBitMap64:
        assert isinstance(self.survivors, np.ndarray)
        return _treemap(self.survivors)

    def check(self, where: str) -> None:
        """Refuse a group whose addresses cannot be the surviving rows of its old
        fragments laid out over its new ones."""
        survivors = self.survivors
        if isinstance(survivors, np.ndarray):
            if len(survivors) > 1 and not (survivors[1:] > survivors[:-1]).all():
                raise CorruptIndexError(f"{where}: a group's moved rows are not ascending")
            survivors = self.bitmap
        _check_layout(self, survivors, where)

    def to_proto(self) -> _Pb.Group:
        return _Pb.Group(
            changed_row_addrs=self.bitmap.serialize(),
            old_fragments=[_digest_pb(f) for f in self.old_fragments],
            new_fragments=[_digest_pb(f) for f in self.new_fragments],
        )

    @classmethod
    def from_proto(cls, pb: _Pb.Group, where: str) -> ReuseGroup:
        try:
            bitmap = FrozenBitMap64.deserialize(pb.changed_row_addrs)
        except (ValueError, OverflowError) as exc:
            raise CorruptIndexError(f"{where}: a group's moved rows do not parse: {exc}") from exc
        group = cls(bitmap, _digests(pb.old_fragments), _digests(pb.new_fragments))
        _check_layout(group, bitmap, where)
        return group


def _check_layout(group: ReuseGroup, bitmap: FrozenBitMap64, where: str) -> None:
    """Refuse a group whose moved rows (``bitmap``: ascending and unique, as a
    treemap's are) cannot be the surviving rows of its old fragments laid out over
    its new ones."""
    old, new = group.old_fragments, group.new_fragments
    # Plain loops: a lookup after many deferred compactions checks every group of
    # every version when it opens the index.
    survivors = len(bitmap)
    new_rows = 0
    for f in new:
        new_rows += f.physical_rows
    if survivors != new_rows:
        raise CorruptIndexError(
            f"{where}: a group lists {survivors} moved rows for new fragments "
            f"{sorted(f.id for f in new)} of {new_rows} rows"
        )
    if (
        len(group.old_ids) != len(old)
        or len(group.new_ids) != len(new)
        or not group.old_ids.isdisjoint(group.new_ids)
    ):
        raise CorruptIndexError(f"{where}: a group's fragment ids repeat")
    # Counting the rows inside each old fragment's range tells whether every row is one
    # of them.
    inside = 0
    for f in old:
        first = row_address.of_row(f.id, 0)
        inside += bitmap.range_cardinality(first, first + f.physical_rows)
    if inside != survivors:
        raise CorruptIndexError(
            f"{where}: a group moves rows that are not rows of its old fragments "
            f"{sorted(f.id for f in old)}"
        )


def _digests(pbs: Sequence[_Pb.FragmentDigest]) -> tuple[FragmentDigest, ...]:
    # A slice of a repeated field is a list (iterating the field costs twice as
    # much), and ``tuple.__new__`` skips the named tuple's own constructor.
    return tuple(
        [_new(FragmentDigest, (f.id, f.physical_rows, f.num_deleted_rows)) for f in pbs[:]]
    )


_new = tuple.__new__


def _digest_pb(f: FragmentDigest) -> _Pb.FragmentDigest:
    return _Pb.FragmentDigest(
        id=f.id, physical_rows=f.physical_rows, num_deleted_rows=f.num_deleted_rows
    )


@dataclass(frozen=True, init=False)
class ReuseVersion:
    """One deferred compaction; ``dataset_version`` is the version it committed onto."""

    dataset_version: int
    groups: tuple[ReuseGroup, ...]
    old_ids: frozenset[int] = field(init=False, repr=False, compare=False)
    new_ids: frozenset[int] = field(init=False, repr=False, compare=False)

    def __init__(self, dataset_version: int, groups: tuple[ReuseGroup, ...]) -> None:
        # As a group's: made per version when a lookup opens the index.
        self.__dict__.update(
            dataset_version=dataset_version,
            groups=groups,
            old_ids=_union([g.old_ids for g in groups]),
            new_ids=_union([g.new_ids for g in groups]),
        )


def _union(sets: list[frozenset[int]]) -> frozenset[int]:
    return sets[0] if len(sets) == 1 else frozenset().union(*sets)


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
        versions = []
        seen: set[int] = set()
        for v in sorted(pb.versions, key=_dataset_version):
            number = v.dataset_version
            at = f"{where} (reuse version {number})"
            groups = tuple([ReuseGroup.from_proto(g, at) for g in v.groups[:]])
            version = ReuseVersion(number, groups)
            if not seen.isdisjoint(version.old_ids):
                raise CorruptIndexError(f"{where}: two reuse versions replace one fragment")
            seen |= version.old_ids
            # Fragment ids are never reused: a version cannot write one replaced before
            # (walks that follow a row from fragment to fragment rely on it).
            if not seen.isdisjoint(version.new_ids):
                raise CorruptIndexError(
                    f"{where}: reuse version {number} writes a fragment an earlier version replaced"
                )
            versions.append(version)
        return cls(tuple(versions))


def _dataset_version(version: _Pb.Version) -> int:
    return int(version.dataset_version)


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
