"""Reading objects by range: the tail arrives with the first request, announced ranges
arrive coalesced, reads inside fetched bytes cost no request, and a store that returns
fewer bytes than asked for is an error.

The memory store stands in for S3 (the same code path, without a server); requests are
counted by ``io.REQUEST_STATS``.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import obstore
import pytest

from lancelet import io
from lancelet.errors import StorageError
from lancelet.io import accounting, objects
from lancelet.io.objects import ObjectInputFile

FILES = io.FileIO()

KB = 1 << 10
MB = 1 << 20


@pytest.fixture
def stats() -> Iterator[io.objects.RequestStats]:
    io.REQUEST_STATS.reset()
    yield io.REQUEST_STATS
    io.REQUEST_STATS.reset()


def _object(size: int, seed: int = 1) -> tuple[str, bytes]:
    data = random.Random(seed).randbytes(size)
    uri = f"memory://{uuid.uuid4().hex}/data.lance"
    FILES.put(uri, data)
    return uri, data


def _open(uri: str) -> ObjectInputFile:
    source = FILES.open_input(uri)
    assert isinstance(source, ObjectInputFile)
    return source


def test_the_first_request_brings_the_tail(stats: io.objects.RequestStats) -> None:
    uri, data = _object(3 * MB)
    stats.reset()
    source = _open(uri)
    assert (stats.requests, stats.bytes_read) == (1, objects.TAIL_BYTES)
    assert source.size == len(data)
    # Footer and metadata reads come from that tail.
    for offset in (len(data) - 16, len(data) - objects.TAIL_BYTES, len(data) - 1000):
        length = len(data) - offset
        assert source.read(offset, length).to_pybytes() == data[offset:]
    assert stats.requests == 1


def test_a_small_object_arrives_whole(stats: io.objects.RequestStats) -> None:
    uri, data = _object(5000)
    stats.reset()
    source = _open(uri)
    for offset, length in ((0, 5000), (10, 20), (4999, 1)):
        assert source.read(offset, length).to_pybytes() == data[offset : offset + length]
    assert (stats.requests, stats.bytes_read) == (1, 5000)


def test_prefetch_coalesces_nearby_ranges(stats: io.objects.RequestStats) -> None:
    uri, data = _object(4 * MB)
    source = _open(uri)
    stats.reset()
    near = [(100, 10), (300 * KB, 10), (900 * KB, 50), (1800 * KB, 10)]  # gaps < 1 MiB
    far = [(3200 * KB, 100)]  # more than 1 MiB after the last, before the tail
    source.prefetch(near + far + [(0, 0)])
    # One request from 100 to the end of the last near range, one for the far range.
    assert stats.requests == 2
    assert stats.bytes_read == (1800 * KB + 10 - 100) + 100
    # Every range, and anything between the near ranges, is served without a request.
    for offset, length in near + far + [(200, 600 * KB), (1000 * KB, 800 * KB)]:
        assert source.read(offset, length).to_pybytes() == data[offset : offset + length]
    # Ranges already fetched are not fetched again.
    source.prefetch([*near, (len(data) - 100, 50)])
    assert stats.requests == 2


def test_prefetch_order_does_not_matter(stats: io.objects.RequestStats) -> None:
    uri, data = _object(2 * MB)
    source = _open(uri)
    stats.reset()
    ranges = [(700 * KB, 5), (10, 5), (400 * KB, 5), (10, 5)]
    source.prefetch(ranges)
    assert stats.requests == 1
    assert stats.bytes_read == 700 * KB + 5 - 10
    for offset, length in ranges:
        assert source.read(offset, length).to_pybytes() == data[offset : offset + length]
    assert stats.requests == 1


def test_a_smaller_gap_fetches_ranges_apart(
    stats: io.objects.RequestStats, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A take's gap: ranges 20 KiB apart are fetched one by one, and as many as a
    hundred are cut into calls that run at once (on the fetching threads), whose
    buffers come back in order and are counted on the caller's thread."""
    uri, data = _object(4 * MB)
    source = _open(uri)
    calls: list[int] = []
    real = obstore.get_ranges

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(len(kwargs["starts"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(obstore, "get_ranges", counted)
    stats.reset()
    ranges = [(i * 30 * KB, 10 * KB) for i in range(100)]
    scan = accounting.Counters()
    with accounting.collecting(scan):
        source.prefetch(ranges, gap=16 * KB)
    assert (stats.requests, stats.bytes_read) == (100, 100 * 10 * KB)
    assert (scan.requests, scan.bytes_read) == (100, 100 * 10 * KB)
    assert len(calls) == objects.FETCH_THREADS and sum(calls) == 100
    for offset, length in ranges:
        assert source.read(offset, length).to_pybytes() == data[offset : offset + length]
    assert stats.requests == 100


def test_reads_fetch_at_least_a_block(stats: io.objects.RequestStats) -> None:
    uri, data = _object(3 * MB)
    source = _open(uri)
    stats.reset()
    assert source.read(0, 10).to_pybytes() == data[:10]
    assert (stats.requests, stats.bytes_read) == (1, objects.MIN_FETCH_BYTES)
    # A reader walking the file in small steps pays no request per step.
    for offset in range(10, objects.MIN_FETCH_BYTES - 100, 4 * KB):
        assert source.read(offset, 100).to_pybytes() == data[offset : offset + 100]
    assert stats.requests == 1
    # A read larger than a block fetches exactly what it asks for.
    big = objects.MIN_FETCH_BYTES * 2
    assert source.read(MB, big).to_pybytes() == data[MB : MB + big]
    assert (stats.requests, stats.bytes_read) == (2, objects.MIN_FETCH_BYTES + big)
    # A read near the end is not extended past it.
    end = len(data) - objects.TAIL_BYTES
    assert source.read(end - 10, 20).to_pybytes() == data[end - 10 : end + 10]
    assert stats.bytes_read == objects.MIN_FETCH_BYTES + big + objects.TAIL_BYTES + 10


def test_a_block_that_covers_earlier_ones_serves_their_ranges(
    stats: io.objects.RequestStats,
) -> None:
    # Small blocks first, then one prefetch that covers them all: every byte of that
    # prefetch must be served from memory, however many smaller blocks lie inside it.
    uri, data = _object(8 * MB)
    source = _open(uri)
    for i in range(1, 7):
        source.read(i * MB, 1)
    source.prefetch([(0, 7 * MB)])
    stats.reset()
    for offset in (10, MB + 100 * KB, 5 * MB + 512 * KB, 6 * MB + 600 * KB, 7 * MB - 10):
        assert source.read(offset, 10).to_pybytes() == data[offset : offset + 10]
    assert stats.requests == 0


def test_random_reads_and_prefetches(stats: io.objects.RequestStats) -> None:
    rng = random.Random(11)
    uri, data = _object(6 * MB, seed=3)
    source = _open(uri)
    seen: list[tuple[int, int]] = []  # every range read or prefetched so far
    for _ in range(200):
        if rng.random() < 0.2:
            ranges = [
                (rng.randrange(len(data) - 64 * KB), rng.randrange(64 * KB)) for _ in range(5)
            ]
            source.prefetch(ranges)
            before = stats.requests
            for offset, length in ranges:
                assert source.read(offset, length).to_pybytes() == data[offset : offset + length]
            assert stats.requests == before  # prefetched ranges cost nothing more
            seen += ranges
        else:
            offset = rng.randrange(len(data))
            length = rng.randrange(min(len(data) - offset, 300 * KB) + 1)
            assert source.read(offset, length).to_pybytes() == data[offset : offset + length]
            seen.append((offset, length))
    # Whatever was fetched once stays: reading any of it again costs no request.
    before = stats.requests
    for offset, length in seen:
        assert source.read(offset, length).to_pybytes() == data[offset : offset + length]
    assert stats.requests == before


def test_concurrent_readers_share_one_file() -> None:
    uri, data = _object(3 * MB, seed=5)
    source = _open(uri)
    errors: list[BaseException] = []

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(100):
                offset = rng.randrange(len(data))
                length = rng.randrange(min(len(data) - offset, 200 * KB) + 1)
                if source.read(offset, length).to_pybytes() != data[offset : offset + length]:
                    raise AssertionError(f"wrong bytes at {offset}+{length}")
                if rng.random() < 0.1:
                    source.prefetch([(rng.randrange(len(data) - 10), 10)])
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(seed,)) for seed in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_short_responses_are_refused() -> None:
    # The object shrinks after it was opened: what the store returns no longer covers
    # what the reader asks for, and must not be handed out as if it did.
    uri, _ = _object(600 * KB)
    source = _open(uri)
    FILES.put(uri, b"\0" * (200 * KB))
    with pytest.raises(StorageError, match="got"):
        source.read(0, 10)
    with pytest.raises(StorageError):
        source.prefetch([(100 * KB, 10), (300 * KB, 10)])
    with pytest.raises(StorageError):
        source.prefetch([(400 * KB, 10)])  # wholly past the end now: the store refuses


def test_short_range_from_the_store_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow as pa

    uri, data = _object(600 * KB)
    source = _open(uri)
    storage = source._storage

    def short_range(key: str, where: str, start: int, end: int) -> pa.Buffer:
        return pa.py_buffer(data[start : end - 1])

    def short_ranges(key: str, where: str, starts: list[int], ends: list[int]) -> list[pa.Buffer]:
        return [pa.py_buffer(data[s : e - 1]) for s, e in zip(starts, ends, strict=True)]

    monkeypatch.setattr(storage, "get_range", short_range)
    monkeypatch.setattr(storage, "get_ranges", short_ranges)
    with pytest.raises(StorageError, match="got"):
        source.read(0, 10)
    with pytest.raises(StorageError, match="got"):
        source.prefetch([(100 * KB, 10)])


def test_a_missing_object_cannot_be_opened() -> None:
    with pytest.raises(FileNotFoundError):
        FILES.open_input(f"memory://{uuid.uuid4().hex}/none.lance")
