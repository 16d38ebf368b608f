"""The typed dictionaries pylance's ``lance.dataset`` names for what its calls return
(``versions()`` entries, tags, update/delete/merge_insert counts...); lancelet's calls
return plain dicts of these shapes."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, TypedDict

import pyarrow as pa
from pyroaring import BitMap

if TYPE_CHECKING:
    from lancelet.dataset.dataset import LanceDataset
    from lancelet.dataset.versions.transactions import Transaction


class Version(TypedDict):
    version: int
    timestamp: int | datetime
    metadata: dict[str, str]


class VersionRef(TypedDict):
    version: int


class Tag(TypedDict):
    branch: str | None
    version: int
    created_at: datetime | None
    updated_at: datetime | None
    manifest_size: int
    metadata: dict[str, str]


class UpdateResult(TypedDict):
    num_rows_updated: int


class DeleteResult(TypedDict):
    num_deleted_rows: int


class ExecuteResult(TypedDict):
    num_inserted_rows: int
    num_updated_rows: int
    num_deleted_rows: int


class AlterColumn(TypedDict, total=False):
    path: str
    name: str | None
    nullable: bool | None
    data_type: pa.DataType | None


class IndexInformation(TypedDict):
    """One index segment, as ``list_indices`` lists it."""

    name: str
    type: str
    uuid: str
    fields: list[str]
    version: int
    fragment_ids: BitMap
    base_id: int | None


class BulkCommitResult(TypedDict):
    dataset: LanceDataset
    merged: Transaction


__all__ = [
    "AlterColumn",
    "BulkCommitResult",
    "DeleteResult",
    "ExecuteResult",
    "IndexInformation",
    "Tag",
    "UpdateResult",
    "Version",
    "VersionRef",
]
