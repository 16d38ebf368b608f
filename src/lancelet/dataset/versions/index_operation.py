"""pylance's ``Index`` and ``IndexFile``: an index segment as a ``CreateIndex``
operation shows it (``read_transaction``) and takes it (``LanceDataset.commit``)."""

from __future__ import annotations

import uuid as uuid_lib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from pyroaring import BitMap, FrozenBitMap

from lancelet.errors import ArgumentError, UnsupportedOptionError
from lancelet.table.index import IndexDetails, IndexMetadata
from lancelet.table.index import IndexFile as StoredIndexFile


@dataclass
class IndexFile:
    """A file of an index segment, relative to its directory, with its size."""

    path: str
    size_bytes: int


@dataclass
class Index:
    """An index segment: ``fragment_ids`` are the fragments whose rows it holds (any
    iterable of ints is taken), ``index_details`` its type URL and details bytes."""

    uuid: str
    name: str
    fields: list[int]
    dataset_version: int
    fragment_ids: BitMap
    index_version: int
    created_at: datetime | None = None
    base_id: int | None = None
    files: list[IndexFile] | None = None
    index_details: tuple[str, bytes] | None = None
    covering_fields: list[int] = field(default_factory=list)


def public_index(index: IndexMetadata) -> Index:
    """A stored segment as pylance shows it."""
    created = None
    if index.created_at is not None:
        created = datetime.fromtimestamp(index.created_at / 1000, tz=timezone.utc)
    details = index.index_details
    return Index(
        uuid=str(index.uuid),
        name=index.name,
        fields=list(index.fields),
        dataset_version=index.dataset_version,
        fragment_ids=BitMap(index.fragment_bitmap or ()),
        index_version=index.index_version or 0,
        created_at=created,
        base_id=index.base_id,
        files=[IndexFile(f.path, f.size_bytes) for f in index.files],
        index_details=None if details is None else (details.type_url, details.value),
    )


def stored_index(index: Index, where: str) -> IndexMetadata:
    """The segment ``index`` describes, to commit."""
    if not isinstance(index, Index):
        raise TypeError(f"{where}: indices must be lancelet Index objects, not {index!r}")
    if index.covering_fields:
        raise UnsupportedOptionError(f"{where}: index {index.name!r}: covering_fields")
    try:
        uid = uuid_lib.UUID(str(index.uuid))
    except ValueError as exc:
        raise ArgumentError(f"{where}: index uuid {index.uuid!r} is not a UUID") from exc
    return IndexMetadata(
        uuid=uid,
        fields=tuple(_ints(index.fields, "fields", where)),
        name=index.name,
        dataset_version=index.dataset_version,
        fragment_bitmap=FrozenBitMap(_ints(index.fragment_ids, "fragment_ids", where)),
        index_details=_details(index.index_details, where),
        index_version=index.index_version,
        created_at=_millis(index.created_at),
        base_id=index.base_id,
        files=tuple(StoredIndexFile(f.path, f.size_bytes) for f in index.files or ()),
    )


def _ints(values: Iterable[int], name: str, where: str) -> list[int]:
    out = list(values)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in out):
        raise TypeError(f"{where}: an index's {name} must be integers, not {out!r}")
    return out


def _details(details: tuple[str, bytes] | None, where: str) -> IndexDetails | None:
    if details is None:
        return None
    type_url, value = details
    if not isinstance(type_url, str) or not isinstance(value, bytes):
        raise TypeError(f"{where}: index_details must be (type URL, bytes), not {details!r}")
    return IndexDetails(type_url, value)


def _millis(created: datetime | None) -> int | None:
    if created is None:
        return None
    if created.tzinfo is None:
        created = created.replace(tzinfo=timezone.utc)
    return int(created.timestamp() * 1000)
