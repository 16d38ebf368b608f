"""Takes from an object store (the memory store) fetch only what their rows need: the
pages' chunk sizes and repetition indexes first, then the chunks or row bytes that hold
the rows; what they return is what pylance reads locally, for every 2.1 layout."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader as RefReader
from lance.file import LanceFileWriter as RefWriter

from lancelet import io
from lancelet.file import LanceFileReader, prefetch
from lancelet.io.objects import ObjectStorage

FILES = io.FileIO()
ROWS = 20_000


def _long(i: int) -> str:
    return f"{i:08d}" + "x" * (200 + i % 300)  # wide enough for full-zip pages


def _table() -> pa.Table:
    """Every 2.1 layout pylance writes: mini-block pages plain, with dictionaries and
    with a repetition index (lists), full-zip pages of variable and of fixed width,
    with and without lists, a constant page; nulls in most."""
    rng = np.random.default_rng(5)
    ints = rng.integers(0, 1 << 40, ROWS)
    offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 4, ROWS))]).astype(np.int32)
    items = int(offsets[-1])
    return pa.table(
        {
            "i": pa.array(ints, mask=ints % 11 == 0),
            "s": pa.array([f"w{v % 1000}" for v in ints]),
            "d": pa.array(np.array(["red", "green", "blue", None], dtype=object)[ints % 4]),
            "long": pa.array([None if i % 7 == 0 else _long(i) for i in range(ROWS)]),
            "l": pa.ListArray.from_arrays(
                pa.array(offsets), pa.array(rng.random(items)), mask=pa.array(ints % 13 == 0)
            ),
            "ll": pa.ListArray.from_arrays(
                pa.array(offsets), pa.array([_long(i) for i in range(items)])
            ),
            "st": pa.StructArray.from_arrays(
                [pa.array(ints % 7), pa.array([f"y{v % 5}" for v in ints])], names=["x", "y"]
            ),
            "z": pa.nulls(ROWS, pa.int32()),
            "v": pa.FixedSizeListArray.from_arrays(
                pa.array(rng.random(ROWS * 64).astype(np.float32)), 64
            ),
        }
    )


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def remote(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    """A file of about 8 MB in five pages per column, written by pylance and copied into
    the memory store; its local original for the oracle."""
    local = tmp_path_factory.mktemp("remote-takes") / "f.lance"
    with RefWriter(
        str(local), version=request.param, max_page_bytes=64 << 10, data_cache_bytes=64 << 10
    ) as writer:
        for batch in _table().to_batches(max_chunksize=4000):
            writer.write_batch(batch)
    uri = f"memory://remote-takes-{uuid.uuid4().hex}/f.lance"
    FILES.put(uri, local.read_bytes())
    return uri, local


@pytest.fixture
def misses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, int]]]:
    """The reads no prefetch announced (each a request of its own), as they happen."""
    found: list[tuple[int, int]] = []
    fetch = ObjectStorage.get_range

    def counted(self: ObjectStorage, key: str, uri: str, start: int, end: int) -> pa.Buffer:
        found.append((start, end - start))
        return fetch(self, key, uri, start, end)

    monkeypatch.setattr(ObjectStorage, "get_range", counted)
    yield found


@pytest.fixture
def rounds(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many ranges each prefetch fetched (one round trip each), as they happen."""
    found: list[int] = []
    fetch = ObjectStorage.get_ranges

    def counted(
        self: ObjectStorage, key: str, uri: str, starts: list[int], ends: list[int]
    ) -> list[pa.Buffer]:
        found.append(len(starts))
        return fetch(self, key, uri, starts, ends)

    monkeypatch.setattr(ObjectStorage, "get_ranges", counted)
    yield found


def _rows(count: int, seed: int) -> np.ndarray:
    return np.sort(np.random.default_rng(seed).choice(ROWS, count, replace=False))


def test_layouts_covered(remote: tuple[str, Path]) -> None:
    reader = LanceFileReader(remote[0], file_io=FILES)
    kinds = {p.layout.WhichOneof("layout") for c in reader._columns for p in c.pages if p.layout}
    assert kinds == {"mini_block_layout", "full_zip_layout", "constant_layout"}
    assert all(len(c.pages) > 1 for c in reader._columns)


@pytest.mark.parametrize(
    "rows",
    [
        np.array([0]),
        np.array([ROWS - 1]),
        _rows(7, 1),
        _rows(300, 2),
        np.arange(3990, 4010),  # across a page boundary
        np.array([17, 5, 17, 9000, 5]),  # unsorted, repeated
    ],
    ids=["first", "last", "few", "hundreds", "run", "unsorted"],
)
def test_takes_read_only_announced_bytes(
    remote: tuple[str, Path],
    rows: np.ndarray,
    misses: list[tuple[int, int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every byte the decoders read was fetched by the two rounds before them."""
    monkeypatch.setattr(prefetch, "TAKE_SAVING", 0)  # whatever the take would save
    uri, local = remote
    want = RefReader(str(local)).read_all().to_table().take(pa.array(rows))
    reader = LanceFileReader(uri, file_io=FILES)
    misses.clear()  # opening may read past the tail
    assert reader.take_rows(rows).to_table().equals(want)
    assert misses == []
    # Again, with the pages' decoders made: only the rows' bytes are fetched.
    assert reader.take_rows(rows).to_table().equals(want)
    batches = list(reader.take_rows(rows, batch_size=3).to_batches())
    assert pa.Table.from_batches(batches, schema=want.schema).equals(want)
    assert misses == []


def test_a_sparse_take_fetches_a_small_part_of_the_file(
    remote: tuple[str, Path], rounds: list[int], misses: list[tuple[int, int]]
) -> None:
    uri, local = remote
    rows = _rows(5, 3)
    reader = LanceFileReader(uri, file_io=FILES)
    io.REQUEST_STATS.reset()
    rounds.clear()
    misses.clear()
    got = reader.take_rows(rows).to_table()
    assert got.equals(RefReader(str(local)).take_rows(rows).to_table())
    size = local.stat().st_size
    assert io.REQUEST_STATS.bytes_read < size // 20, (io.REQUEST_STATS, size)
    assert len(rounds) == 2 and misses == []


def test_a_dense_take_fetches_whole_pages_at_once(
    remote: tuple[str, Path], rounds: list[int], misses: list[tuple[int, int]]
) -> None:
    """A take of half the rows saves too little to be worth a round trip: its pages
    come in one round, as a scan's do."""
    uri, local = remote
    rows = np.arange(0, ROWS, 2)
    reader = LanceFileReader(uri, columns=["i", "s"], file_io=FILES)
    rounds.clear()
    misses.clear()
    got = reader.take_rows(rows).to_table()
    assert got.equals(RefReader(str(local), columns=["i", "s"]).take_rows(rows).to_table())
    assert len(rounds) == 1 and misses == []


def test_blob_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blob pages are fetched whole (their values, outside the page, as they are read)."""
    monkeypatch.setattr(prefetch, "TAKE_SAVING", 0)
    field = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    values = [None if i % 5 == 0 else bytes([i % 256]) * (i * 37 % 5000) for i in range(500)]
    table = pa.table({"n": pa.array(range(500)), "b": pa.array(values, pa.large_binary())})
    local = tmp_path / "blob.lance"
    with RefWriter(str(local), version="2.1") as writer:
        writer.write_batch(table.cast(pa.schema([pa.field("n", pa.int64()), field])))
    uri = f"memory://remote-takes-{uuid.uuid4().hex}/blob.lance"
    FILES.put(uri, local.read_bytes())
    rows = np.array([3, 10, 11, 250, 499])
    want = RefReader(str(local)).take_rows(rows).to_table()
    reader = LanceFileReader(uri, file_io=FILES)
    assert reader._columns[1].pages[0].layout.WhichOneof("layout") == "blob_layout"
    assert reader.take_rows(rows).to_table().equals(want)
