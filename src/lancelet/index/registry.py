"""Every scalar index type lancelet reads and writes, in one table.

A type is known by the name users pass to ``create_scalar_index`` and by the
``type_url`` of the details pylance records in the manifest.  An index whose
type_url is not here is listed but never used by the planner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet.index import bitmap, bloomfilter, btree, label_list, zonemap
from lancelet.index._files import IndexDetails
from lancelet.index.base import ScalarIndex

Batches = Iterable[tuple[pa.Array, np.ndarray]]


@dataclass(frozen=True)
class IndexType:
    name: str
    details: IndexDetails
    # (batches, directory, value type, file format version) -> anything
    write: Callable[[Batches, str, pa.DataType, str], Any]
    # (directory, value type) -> the index
    open: Callable[[str, pa.DataType], ScalarIndex]


TYPES = (
    IndexType(
        "BTREE",
        IndexDetails("/lance.table.BTreeIndexDetails", b"", 0),
        btree.write_btree,
        lambda directory, _: btree.BTreeIndex.open(directory),
    ),
    IndexType(
        "BITMAP",
        IndexDetails("/lance.table.BitmapIndexDetails", b"", 0),
        bitmap.write_bitmap,
        lambda directory, _: bitmap.BitmapIndex.open(directory),
    ),
    IndexType(
        "LABEL_LIST",
        label_list.label_list_details(),
        label_list.write_label_list,
        lambda directory, _: label_list.LabelListIndex.open(directory),
    ),
    IndexType(
        "ZONEMAP",
        zonemap.zonemap_details(),
        zonemap.write_zonemap,
        lambda directory, _: zonemap.ZoneMapIndex.open(directory),
    ),
    IndexType(
        "BLOOMFILTER",
        bloomfilter.bloomfilter_details(),
        bloomfilter.write_bloomfilter,
        bloomfilter.BloomFilterIndex.open,
    ),
)
BY_NAME = {t.name: t for t in TYPES}
BY_TYPE_URL = {t.details.type_url: t for t in TYPES}
