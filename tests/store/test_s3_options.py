"""How lancelet finds and configures an S3 store: options given or read from the
environment, ``s3a://`` as ``s3://``, and clear errors for what cannot work (an
unknown option, a missing bucket, a store that stopped answering, an unsupported
scheme) before anything is written."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancelet as ll
from lancelet.errors import (
    DatasetNotFoundError,
    StorageError,
    UnsupportedOptionError,
    URIError,
)
from tests import s3server
from tests.s3server import S3Server
from tests.store import rows
from tests.store.conftest import S3Place

TABLE = rows.table(rows.make(range(12)))
# Fail at once rather than retry for minutes against a server that is gone.
NO_RETRIES = {"client_max_retries": "0", "client_retry_timeout": "0", "connect_timeout": "2s"}


def test_options_from_the_environment(s3: S3Place, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.server.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3server.ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3server.SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", s3server.REGION)
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    ll.write_dataset(TABLE, s3.uri)  # no storage_options at all
    assert any(k.startswith("ds/_versions/") for k in s3.objects())
    assert lance.dataset(s3.uri).to_table().equals(TABLE)
    lance.write_dataset(TABLE, s3.uri, mode="append")
    ours = ll.dataset(s3.uri)
    assert ours.count_rows() == 2 * TABLE.num_rows
    assert ours.version == 2


def test_s3a_is_s3(s3: S3Place) -> None:
    s3a = s3.uri.replace("s3://", "s3a://")
    ll.write_dataset(TABLE, s3a, storage_options=s3.options)
    assert lance.dataset(s3.uri, storage_options=s3.options).to_table().equals(TABLE)
    assert ll.dataset(s3.uri, storage_options=s3.options).to_table().equals(TABLE)
    ll.write_dataset(TABLE, s3.uri, mode="append", storage_options=s3.options)
    assert ll.dataset(s3a, storage_options=s3.options).count_rows() == 2 * TABLE.num_rows


@pytest.mark.parametrize("bad", [{"no_such_option": "1"}, {"use_opendal": "true"}])
def test_unknown_options_are_refused_before_anything_is_written(
    s3: S3Place, bad: dict[str, str]
) -> None:
    options = {**s3.options, **bad}
    (name,) = bad
    with pytest.raises(UnsupportedOptionError, match=name):
        ll.write_dataset(TABLE, s3.uri, storage_options=options)
    assert s3.objects() == []
    with pytest.raises(UnsupportedOptionError, match=name):
        ll.dataset(s3.uri, storage_options=options)
    with pytest.raises(UnsupportedOptionError, match=name):
        ll.file.LanceFileWriter(f"s3://{s3.bucket}/f.lance", storage_options=options)
    assert s3.objects() == []


def test_a_missing_bucket(s3_server: S3Server) -> None:
    uri = "s3://no-such-bucket-here/ds"
    options = {**s3_server.storage_options, **NO_RETRIES}
    with pytest.raises(StorageError) as opened:
        ll.dataset(uri, storage_options=options)
    with pytest.raises(StorageError) as written:
        ll.write_dataset(TABLE, uri, storage_options=options)
    for caught in (opened, written):
        assert "no-such-bucket-here" in str(caught.value)
        assert "NoSuchBucket" in str(caught.value)
    buckets = [b["Name"] for b in s3_server.client().list_buckets()["Buckets"]]
    assert "no-such-bucket-here" not in buckets


def test_a_missing_dataset_in_a_bucket(s3: S3Place) -> None:
    with pytest.raises(DatasetNotFoundError):
        ll.dataset(s3.uri, storage_options=s3.options)
    with pytest.raises(ValueError):  # pylance agrees there is nothing to open
        lance.dataset(s3.uri, storage_options=s3.options)
    ll.write_dataset(TABLE, s3.uri, storage_options=s3.options)
    with pytest.raises(DatasetNotFoundError):
        ll.dataset(s3.uri + "-other", storage_options=s3.options)


@pytest.mark.parametrize("uri", ["hdfs://namenode/ds", "s3+ddb://bucket/ds", "wasb://c/ds"])
def test_unsupported_schemes_write_nothing_locally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uri: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(URIError):
        ll.write_dataset(TABLE, uri, storage_options={"region": "us-east-1"})
    with pytest.raises(URIError):
        ll.dataset(uri)
    with pytest.raises(URIError):
        ll.file.LanceFileWriter(uri + "/f.lance")
    with pytest.raises(URIError):
        ll.fragment.write_fragments(TABLE, uri)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def private_server() -> Iterator[S3Server]:
    """A server of this test's own, which the test may stop."""
    server = s3server.start()
    try:
        yield server
    finally:
        server.stop()


def test_a_store_that_stops_answering_is_not_a_damaged_dataset(
    private_server: S3Server,
) -> None:
    options = {**private_server.storage_options, **NO_RETRIES}
    uri = f"s3://{private_server.new_bucket()}/ds"
    ll.write_dataset(TABLE, uri, max_rows_per_file=5, storage_options=options)
    deleted = ll.dataset(uri, storage_options=options)
    deleted.delete("k = 3")  # a deletion file, read on every scan
    fresh = ll.dataset(uri, storage_options=options)
    warm = ll.dataset(uri, storage_options=options)
    assert warm.count_rows() == TABLE.num_rows - 1
    assert warm.to_table().num_rows == TABLE.num_rows - 1
    private_server.stop()

    started = time.monotonic()
    # Data files not opened yet: the store's failure is reported as such, naming the
    # object and the cause.
    for scan in (fresh.to_table, lambda: fresh.take([0, 1])):
        with pytest.raises(StorageError) as caught:
            scan()
        assert "Connection refused" in str(caught.value)
        assert uri in str(caught.value)
    # A warm dataset answers what it read before from its caches (data and deletion
    # files never change once written), the same rows, without the store.
    assert warm.to_table().equals(TABLE.filter(pc.field("k") != 3))
    with pytest.raises(StorageError):
        ll.dataset(uri, storage_options=options)
    with pytest.raises(StorageError):
        warm.tags.list()
    assert time.monotonic() - started < 10


def test_options_are_checked_for_type(s3: S3Place) -> None:
    with pytest.raises(TypeError):
        ll.dataset(s3.uri, storage_options="endpoint=x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="region"):
        ll.write_dataset(TABLE, s3.uri, storage_options={**s3.options, "region": None})  # type: ignore[dict-item]
    assert s3.objects() == []
    # Non-string values become strings, as pylance's options are.
    ours = ll.write_dataset(
        TABLE, s3.uri, storage_options={**s3.options, "allow_http": True, "client_max_retries": 1}
    )
    assert ours.count_rows() == TABLE.num_rows


def test_options_serve_their_dataset_not_later_opens(s3: S3Place) -> None:
    # As in pylance, options belong to the call (and the dataset) they were given to:
    # opening the URI again without them reads the environment, which points at a
    # closed port on this machine (see conftest.py), never at the options given before.
    assert os.environ["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9"
    written = ll.write_dataset(TABLE, s3.uri, storage_options=s3.options)
    ll.write_dataset(TABLE, s3.uri, mode="append", storage_options=s3.options)
    # Datasets derived from an open one keep its options.
    assert written.checkout_version(2).count_rows() == 2 * TABLE.num_rows
    ds = ll.dataset(s3.uri, storage_options=s3.options)
    assert pa.Table.from_batches(list(ds.to_batches())).num_rows == 2 * TABLE.num_rows
    with pytest.raises((StorageError, DatasetNotFoundError)):
        ll.dataset(s3.uri, storage_options=NO_RETRIES)
    path = f"s3://{s3.bucket}/f.lance"
    with ll.file.LanceFileWriter(path, TABLE.schema, storage_options=s3.options) as writer:
        writer.write_batch(TABLE)
    read = ll.file.LanceFileReader(path, storage_options=s3.options).read_all().to_table()
    assert read.equals(TABLE)
    with pytest.raises(StorageError):
        ll.file.LanceFileReader(path, storage_options=NO_RETRIES)
