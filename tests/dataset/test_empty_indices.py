"""Indices built on a dataset with no rows: every type builds, pylance reads them, and
rows added later are found (through a delta segment after optimize_indices)."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from tests.versions import STORAGE_VERSION

SCHEMA = pa.schema(
    [
        pa.field("btree", pa.int32()),
        pa.field("bitmap", pa.int32()),
        pa.field("label_list", pa.list_(pa.string())),
        pa.field("ngram", pa.string()),
        pa.field("zonemap", pa.int32()),
        pa.field("bloomfilter", pa.int32()),
    ]
)
ROW = pa.table(
    {
        "btree": pa.array([1], pa.int32()),
        "bitmap": pa.array([1], pa.int32()),
        "label_list": [["foo", "bar"]],
        "ngram": ["apple"],
        "zonemap": pa.array([1], pa.int32()),
        "bloomfilter": pa.array([1], pa.int32()),
    }
)
FILTERS = {
    "btree = 1": 1,
    "btree = 0": 0,
    "bitmap = 1": 1,
    "array_has_any(label_list, ['foo'])": 1,
    "array_has_any(label_list, ['oof'])": 0,
    "contains(ngram, 'apple')": 1,
    "contains(ngram, 'banana')": 0,
    "zonemap = 1": 1,
    "bloomfilter = 1": 1,
}


@pytest.mark.parametrize("optimize", [False, True])
def test_indices_of_an_empty_dataset(tmp_path: Path, optimize: bool) -> None:
    ds = ll.write_dataset([], tmp_path, schema=SCHEMA, data_storage_version=STORAGE_VERSION)
    for column in SCHEMA.names:
        ds.create_scalar_index(column, index_type=column.upper())
    assert len(lance.dataset(tmp_path).list_indices()) == len(SCHEMA.names)
    ds.insert(ROW)
    if optimize:
        ds.optimize.optimize_indices(num_indices_to_merge=0)
        assert len(ll.dataset(tmp_path).list_indices()) == 2 * len(SCHEMA.names)
    for sql, rows in FILTERS.items():
        assert ll.dataset(tmp_path).to_table(filter=sql).num_rows == rows, sql
        assert lance.dataset(tmp_path).to_table(filter=sql).num_rows == rows, sql
