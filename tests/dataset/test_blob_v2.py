"""Blob v2 columns (pylance 14's ``lance-encoding:blob`` in format 2.2) that pylance
wrote: lancelet scans their descriptors as pylance does, and ``take_blobs`` finds
each value wherever pylance put it (in the data file, in a shared sidecar file, in
a sidecar file of its own); the data file itself, whose descriptor struct pylance
writes with unnumbered children, reads as the descriptors pylance's scan returns."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.file import LanceFileReader
from tests.storage import list_names

# Inline, in the shared sidecar file, null, empty, in a sidecar file of its own,
# and the largest inline value and the smallest shared one pylance chooses.
VALUES = [b"x" * 10, b"y" * 100_000, None, b"", b"z" * 5_000_000, b"w" * 65_536, b"v" * 65_537]


@pytest.fixture
def blob_dataset(tmp_path: Path) -> Path:
    schema = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"}),
        ]
    )
    table = pa.table({"id": range(len(VALUES)), "b": VALUES}, schema=schema)
    lance.write_dataset(table, tmp_path / "ds", data_storage_version="2.2")
    return tmp_path / "ds"


def _bytes(blobs: list) -> list[bytes | None]:  # type: ignore[type-arg]
    return [None if b is None else b.readall() for b in blobs]


def test_scans_give_pylance_descriptors(blob_dataset: Path) -> None:
    ours, theirs = ll.dataset(blob_dataset), lance.dataset(blob_dataset)
    assert ours.to_table().equals(theirs.to_table())
    assert ours.to_table().schema == theirs.to_table().schema
    got = ours.to_table(columns=["b"], filter="id >= 3")
    assert got.equals(theirs.to_table(columns=["b"], filter="id >= 3"))


def test_take_blobs_reads_every_storage_kind(blob_dataset: Path) -> None:
    ours, theirs = ll.dataset(blob_dataset), lance.dataset(blob_dataset)
    kinds = {d["kind"] for d in theirs.to_table().column("b").to_pylist() if d is not None}
    assert kinds == {0, 1, 2}  # the fixture covers them all
    rows = list(range(len(VALUES)))[::-1]
    assert _bytes(ours.take_blobs("b", indices=rows)) == [VALUES[i] for i in rows]
    assert _bytes(theirs.take_blobs("b", indices=rows)) == [VALUES[i] for i in rows]
    ids = theirs.to_table(with_row_id=True).column("_rowid").to_pylist()
    assert _bytes(ours.take_blobs("b", ids=ids[2:5])) == VALUES[2:5]
    assert _bytes(ours.take_blobs("b", addresses=ids[4:])) == VALUES[4:]


def test_data_file_reads_as_pylance_descriptors(blob_dataset: Path) -> None:
    (name,) = [n for n in list_names(blob_dataset / "data") if n.endswith(".lance")]
    path = str(blob_dataset / "data" / name)
    got = LanceFileReader(path).read_all().to_table()
    want = lance.dataset(blob_dataset).to_table()
    assert got.column_names == ["id", "b"]
    assert got.column("id").equals(want.column("id"))
    assert got.column("b").type == want.column("b").type
    assert got.column("b").to_pylist() == want.column("b").to_pylist()
