"""Every scalar index type lancelet reads and writes, in one table.

A type is known by the name users pass to ``create_scalar_index`` and by the
``type_url`` of the details pylance records in the manifest.  An index whose
type_url is not here is listed but never used by the planner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet import io
from lancelet.errors import ArgumentError
from lancelet.index import bitmap, bloomfilter, btree, label_list, ngram, zonemap
from lancelet.index._files import IndexDetails
from lancelet.index.base import ScalarIndex
from lancelet.index.fts import details as fts_details
from lancelet.index.fts import segment as fts_segment
from lancelet.table.index import ROW_ID_KEYED_VERSIONS

Batches = Iterable[tuple[pa.Array, np.ndarray]]


@dataclass(frozen=True)
class IndexType:
    name: str
    details: IndexDetails
    # (batches, directory, value type, file format version) -> anything
    write: Callable[[Batches, io.Place, pa.DataType, str], Any]
    # (directory, value type) -> the index
    open: Callable[[io.Place, pa.DataType], ScalarIndex]
    # Keyword parameters ``create_scalar_index`` passes on to ``write``.
    parameters: frozenset[str] = frozenset()
    # The index version pylance writes on a dataset with stable row ids, where it
    # differs from ``details.index_version``.
    stable_version: int | None = None
    # On a dataset with stable row ids, the index versions that list rows by row id
    # rather than by row address (pylance 14 keys BITMAP and LABEL_LIST by id, and
    # BTREE at version 0; version 1 BTREEs, zone maps and Bloom filters by address).
    row_id_versions: frozenset[int] = frozenset()
    # Whether ``write`` checks its keyword parameters itself (else: positive integers).
    checks_parameters: bool = False

    def version_for(self, stable_row_ids: bool) -> int:
        """The index version to record for a new index."""
        if stable_row_ids and self.stable_version is not None:
            return self.stable_version
        return self.details.index_version

    def reads(self, version: int) -> bool:
        """Whether lancelet reads an index of this type at ``version``."""
        return version in {self.details.index_version, self.version_for(True)}

    def keyed_by_row_id(self, version: int, stable_row_ids: bool) -> bool:
        """Whether the index lists rows by stable row id (else by row address)."""
        return stable_row_ids and version in self.row_id_versions

    def build(
        self,
        batches: Batches,
        directory: io.Place,
        value_type: pa.DataType,
        file_version: str,
        params: Mapping[str, Any],
    ) -> IndexDetails:
        """Write the index and return the details the manifest records for it."""
        for key, value in params.items():
            if not self.checks_parameters:
                _check_parameter(self.name, key, value)
        written = self.write(batches, directory, value_type, file_version, **params)
        return written if isinstance(written, IndexDetails) else self.details


def _check_parameter(kind: str, key: str, value: Any) -> None:
    if key == "probability":
        ok = isinstance(value, float | int) and not isinstance(value, bool) and 0 < value < 1
        if not ok:
            raise ArgumentError(f"{kind} index: probability must be in (0, 1), got {value!r}")
    elif not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 2**32:
        raise ArgumentError(f"{kind} index: {key} must be a positive integer, got {value!r}")


TYPES = (
    IndexType(
        "BTREE",
        IndexDetails("/lance.table.BTreeIndexDetails", b"", 0),
        btree.write_btree,
        lambda directory, _: btree.BTreeIndex.open(directory),
        stable_version=1,
        row_id_versions=ROW_ID_KEYED_VERSIONS["/lance.table.BTreeIndexDetails"],
    ),
    IndexType(
        "BITMAP",
        IndexDetails("/lance.table.BitmapIndexDetails", b"", 0),
        bitmap.write_bitmap,
        lambda directory, _: bitmap.BitmapIndex.open(directory),
        row_id_versions=ROW_ID_KEYED_VERSIONS["/lance.table.BitmapIndexDetails"],
    ),
    IndexType(
        "LABEL_LIST",
        label_list.label_list_details(),
        label_list.write_label_list,
        lambda directory, _: label_list.LabelListIndex.open(directory),
        row_id_versions=ROW_ID_KEYED_VERSIONS["/lance.table.LabelListIndexDetails"],
    ),
    IndexType(
        "ZONEMAP",
        zonemap.zonemap_details(),
        zonemap.write_zonemap,
        lambda directory, _: zonemap.ZoneMapIndex.open(directory),
        frozenset({"rows_per_zone"}),
    ),
    IndexType(
        "BLOOMFILTER",
        bloomfilter.bloomfilter_details(),
        bloomfilter.write_bloomfilter,
        bloomfilter.BloomFilterIndex.open,
        frozenset({"number_of_items", "probability"}),
    ),
    IndexType(
        "NGRAM",
        ngram.NGRAM_DETAILS,
        ngram.write_ngram,
        lambda directory, _: ngram.NGramIndex.open(directory),
        row_id_versions=ROW_ID_KEYED_VERSIONS["/lance.table.NGramIndexDetails"],
    ),
    IndexType(
        "INVERTED",
        IndexDetails(fts_details.TYPE_URL, b"", 2),
        fts_segment.write_inverted,
        fts_segment.InvertedSegment.open,
        fts_details.KEYWORDS,
        row_id_versions=ROW_ID_KEYED_VERSIONS[fts_details.TYPE_URL],
        checks_parameters=True,
    ),
)
# pylance's other name of a full-text index.
BY_NAME = {t.name: t for t in TYPES} | {"FTS": TYPES[-1]}
BY_TYPE_URL = {t.details.type_url: t for t in TYPES}
