"""Single Lance files on S3: ``LanceFileWriter``/``LanceFileReader`` with
``storage_options``, each library reading what the other wrote."""

from __future__ import annotations

import lance.file
import pyarrow as pa
import pytest

import lancelet as ll
from tests.store.conftest import S3Place
from tests.versions import STORAGE_VERSION

TABLE = pa.table(
    {
        "id": pa.array(range(2000), pa.int64()),
        "name": pa.array([None if i % 11 == 0 else f"n{i}" for i in range(2000)]),
        "vals": pa.array([[i, i + 1][: i % 3] for i in range(2000)], pa.list_(pa.int32())),
    }
)


def test_lancelet_writes_a_file_pylance_reads(s3: S3Place) -> None:
    path = f"s3://{s3.bucket}/files/ours.lance"
    with ll.file.LanceFileWriter(
        path, TABLE.schema, version=STORAGE_VERSION, storage_options=s3.options
    ) as writer:
        for batch in TABLE.to_batches(max_chunksize=700):
            writer.write_batch(batch)
    assert s3.objects("files/") == ["files/ours.lance"]
    theirs = lance.file.LanceFileReader(path, storage_options=s3.options)
    assert theirs.read_all().to_table().equals(TABLE)
    ours = ll.file.LanceFileReader(path, storage_options=s3.options)
    assert ours.num_rows() == TABLE.num_rows
    assert ours.read_all().to_table().equals(TABLE)
    assert ours.read_range(1500, 100).to_table().equals(TABLE.slice(1500, 100))
    rows = [3, 999, 1000, 1999]
    assert ours.take_rows(rows).to_table().equals(TABLE.take(rows))


def test_pylance_writes_a_file_lancelet_reads(s3: S3Place) -> None:
    path = f"s3://{s3.bucket}/files/theirs.lance"
    writer = lance.file.LanceFileWriter(
        path, TABLE.schema, version=STORAGE_VERSION, storage_options=s3.options
    )
    writer.write_batch(TABLE)
    writer.close()
    ours = ll.file.LanceFileReader(path, storage_options=s3.options)
    assert ours.read_all().to_table().equals(TABLE)
    assert ours.read_all(columns=["name"]).to_table().equals(TABLE.select(["name"]))
    assert ours.take_rows([0, 1234]).to_table().equals(TABLE.take([0, 1234]))


def test_an_aborted_file_leaves_nothing(s3: S3Place) -> None:
    path = f"s3://{s3.bucket}/files/aborted.lance"
    writing = ll.file.LanceFileWriter(path, TABLE.schema, storage_options=s3.options)
    with pytest.raises(RuntimeError), writing as writer:
        writer.write_batch(TABLE)
        raise RuntimeError("the writer failed")
    assert s3.objects() == []


def test_a_missing_file(s3: S3Place) -> None:
    with pytest.raises(FileNotFoundError):
        ll.file.LanceFileReader(f"s3://{s3.bucket}/files/none.lance", storage_options=s3.options)
