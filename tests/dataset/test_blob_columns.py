"""Blob columns (``lance-encoding:blob``) in 2.1 datasets: lancelet writes them so
pylance reads them, and ``take_blobs`` / ``BlobColumn`` give what pylance gives."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lancelet as ll
from lancelet.errors import UnsupportedFeatureError

BLOB = {"lance-encoding:blob": "true"}
SCHEMA = pa.schema(
    [
        pa.field("blobs", pa.large_binary(), metadata=BLOB),
        pa.field("idx", pa.uint64()),
    ]
)
FIRST = [b"foo", b"bar" * 1000, None]
SECOND = [b"qux", b"", b"corge"]


def _write(module: object, uri: Path) -> None:
    write = module.write_dataset  # type: ignore[attr-defined]
    write(pa.table([pa.array(FIRST, pa.large_binary()), pa.array([0, 1, 2], pa.uint64())],
                   schema=SCHEMA), uri, data_storage_version="2.1")  # fmt: skip
    write(pa.table([pa.array(SECOND, pa.large_binary()), pa.array([3, 4, 5], pa.uint64())],
                   schema=SCHEMA), uri, mode="append")  # fmt: skip


def _contents(blobs: list) -> list[bytes | None]:  # type: ignore[type-arg]
    out = []
    for blob in blobs:
        if blob is None:
            out.append(None)
            continue
        with blob as f:
            out.append(f.read())
    return out


@pytest.mark.parametrize("writer", ["lancelet", "pylance"])
def test_take_blobs_matches_pylance(tmp_path: Path, writer: str) -> None:
    uri = tmp_path / "ds"
    _write(ll if writer == "lancelet" else lance, uri)
    ours, theirs = ll.dataset(uri), lance.dataset(uri)
    ids = theirs.to_table(columns=[], with_row_id=True).column("_rowid").to_pylist()
    want = _contents(theirs.take_blobs("blobs", ids=ids))
    assert want == FIRST + SECOND
    assert _contents(ours.take_blobs("blobs", ids=ids)) == want
    assert _contents(ours.take_blobs("blobs", addresses=ids)) == want
    picked = _contents(theirs.take_blobs("blobs", indices=[4, 0, 2]))
    assert _contents(ours.take_blobs("blobs", indices=[4, 0, 2])) == picked


def test_pylance_reads_lancelet_blob_descriptions(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(ll, uri)
    got = lance.dataset(uri).to_table().column("blobs").to_pylist()
    sizes = [None if d is None else d["size"] for d in got]
    assert sizes == [None if v is None else len(v) for v in FIRST + SECOND]


def test_blob_file_reads_and_seeks(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(ll, uri)
    (blob,) = ll.dataset(uri).take_blobs("blobs", indices=[1])
    assert blob is not None
    with blob as f:
        assert f.size() == 3000
        assert f.read(2) == b"ba"
        assert f.seek(4) == 4
        assert f.read(3) == b"arb"
        assert f.tell() == 7
    assert blob.closed


def test_take_of_deleted_row_is_refused_as_in_pylance(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    _write(lance, uri)
    ids = lance.dataset(uri).to_table(columns=[], with_row_id=True).column("_rowid").to_pylist()
    lance.dataset(uri).delete("idx = 1")
    message = "A take operation that includes row addresses must not target deleted"
    with pytest.raises(NotImplementedError, match=message):
        lance.dataset(uri).take_blobs("blobs", ids=ids)
    with pytest.raises(NotImplementedError, match=message):
        ll.dataset(uri).take_blobs("blobs", ids=ids)


def test_blob_columns_in_2_0_files_are_refused(tmp_path: Path) -> None:
    table = pa.table([pa.array(FIRST, pa.large_binary()), pa.array([0, 1, 2], pa.uint64())],
                     schema=SCHEMA)  # fmt: skip
    with pytest.raises(UnsupportedFeatureError, match="blob column"):
        ll.write_dataset(table, tmp_path / "ds", data_storage_version="2.0")


def test_blob_column_wraps_binary_values() -> None:
    values = [b"foo", None, b"baz"]
    for dtype in (pa.binary(), pa.large_binary()):
        ours = [f.read() for f in ll.BlobColumn(pa.array(values, dtype))]
        theirs = [f.read() for f in lance.BlobColumn(pa.array(values, dtype))]
        assert ours == theirs == [b"foo", b"", b"baz"]
    with pytest.raises(ValueError, match="Expected a binary array"):
        ll.BlobColumn(pa.array([1, 2, 3]))


def test_appending_blobs_to_a_2_2_dataset_is_refused(tmp_path: Path) -> None:
    uri = tmp_path / "ds"
    ds = ll.write_dataset(pa.table({"idx": pa.array([0], pa.uint64())}), uri,
                          data_storage_version="2.2")  # fmt: skip
    ds.add_columns(pa.field("blobs", pa.large_binary(), metadata=BLOB))
    rows = pa.table(
        {"idx": pa.array([1], pa.uint64()), "blobs": pa.array([b"x"], pa.large_binary())}
    )
    with pytest.raises(NotImplementedError, match="blob column"):
        ll.write_dataset(rows.select(["idx", "blobs"]), uri, mode="append")
    assert ll.dataset(uri).count_rows() == 1
