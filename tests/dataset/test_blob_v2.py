"""Blob v2 columns (pylance 14, ``lance-encoding:blob`` in format 2.2): lancelet does
not read them yet, and says so rather than calling the dataset corrupt; the data file
itself, whose descriptor struct pylance writes with unnumbered children, reads as the
descriptors pylance's scan returns."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import UnsupportedFeatureError
from lancelet.file import LanceFileReader
from tests.storage import list_names


@pytest.fixture
def blob_dataset(tmp_path: Path) -> Path:
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"}),
        ]
    )
    table = pa.table({"id": [1, 2, 3], "b": [b"x" * 10, b"y" * 100_000, None]}, schema=schema)
    lance.write_dataset(table, tmp_path / "ds", data_storage_version="2.2")
    return tmp_path / "ds"


def test_opening_is_refused_naming_the_column(blob_dataset: Path) -> None:
    with pytest.raises(UnsupportedFeatureError, match="'b' is a blob v2 column"):
        ll.dataset(blob_dataset)


def test_data_file_reads_as_pylance_descriptors(blob_dataset: Path) -> None:
    (name,) = [n for n in list_names(blob_dataset / "data") if n.endswith(".lance")]
    path = str(blob_dataset / "data" / name)
    got = LanceFileReader(path).read_all().to_table()
    want = lance.dataset(blob_dataset).to_table()
    assert got.column_names == ["id", "b"]
    assert got.column("id").equals(want.column("id"))
    assert got.column("b").type == want.column("b").type
    assert got.column("b").to_pylist() == want.column("b").to_pylist()
    # An inline blob and one in a sidecar file, then a null.
    kinds = [None if d is None else d["kind"] for d in got.column("b").to_pylist()]
    assert kinds == [0, 1, None]
