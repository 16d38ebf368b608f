"""Each dataset signs its requests with its own credentials (issue 27): two datasets
in one bucket, opened in one process with two access keys, used from threads and from
a pickled copy in another process.  The local S3 server logs the access key of every
request it receives, so the test sees which key reached which dataset's objects."""

from __future__ import annotations

import multiprocessing
import pickle
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest

import lancelet as ll
from tests import s3server
from tests.s3server import RequestLog, S3Server

ALICE, BOB, CAROL = "alice-key-id", "bob-key-id", "carol-key-id"


@pytest.fixture(scope="module")
def recorded() -> Iterator[tuple[S3Server, RequestLog]]:
    server, log = s3server.start_recording()
    try:
        yield server, log
    finally:
        server.stop()


def _options(server: S3Server, key: str) -> dict[str, str]:
    return {**server.storage_options, "aws_access_key_id": key, "aws_secret_access_key": key}


def _table(start: int, rows: int = 50) -> pa.Table:
    ids = pa.array(range(start, start + rows), pa.int64())
    return pa.table({"id": ids, "name": pa.array([f"row {i}" for i in ids.to_pylist()])})


def _count_in_child(pickled: bytes) -> int:
    dataset = pickle.loads(pickled)
    dataset.insert(_table(1000, 5))  # a write from the copy, too
    return int(dataset.count_rows())


def _keys(log: RequestLog, bucket: str, prefix: str) -> set[str]:
    return {r.access_key for r in log.under(bucket, prefix)}


def test_each_dataset_uses_its_own_key(recorded: tuple[S3Server, RequestLog]) -> None:
    server, log = recorded
    bucket = server.new_bucket("credentials")
    a_uri, b_uri = f"s3://{bucket}/a", f"s3://{bucket}/b"
    ll.write_dataset(_table(0), a_uri, storage_options=_options(server, ALICE))
    ll.write_dataset(_table(100), b_uri, storage_options=_options(server, BOB))
    a = ll.dataset(a_uri, storage_options=_options(server, ALICE))
    b = ll.dataset(b_uri, storage_options=_options(server, BOB))

    def work(dataset: ll.LanceDataset, start: int) -> int:
        dataset.insert(_table(start, 10))
        return int(dataset.to_table(filter="id >= 0").num_rows)

    with ThreadPoolExecutor(4) as pool:
        first = pool.map(work, [a, b], [200, 300])
        # A third dataset in the same bucket with a third key changes nothing for a
        # and b: no options are kept per bucket.
        ll.write_dataset(_table(0), f"s3://{bucket}/c", storage_options=_options(server, CAROL))
        then = pool.map(work, [a, b], [400, 500])
        assert [*first, *then] == [60, 60, 70, 70]
    assert a.count_rows() == 70 and b.count_rows() == 70

    spawn = multiprocessing.get_context("spawn")
    with spawn.Pool(1) as child:
        assert child.apply(_count_in_child, (pickle.dumps(a),)) == 75

    assert ll.dataset(a_uri, storage_options=_options(server, ALICE)).count_rows() == 75
    assert _keys(log, bucket, "a/") == {ALICE}
    assert _keys(log, bucket, "b/") == {BOB}
    assert _keys(log, bucket, "c/") == {CAROL}
