"""Files read from an object store (the memory store) give what pylance reads locally,
through every read path, and the pages a read needs arrive in a few requests."""

from __future__ import annotations

import uuid
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader as RefReader
from lance.file import LanceFileWriter as RefWriter

from lancelet import io
from lancelet.file import LanceFileReader
from lancelet.io.objects import TAIL_BYTES

FILES = io.FileIO()

ROWS = 50_000


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    ints = rng.integers(0, 1 << 40, ROWS)
    words = np.array(["alpha", "beta", "gamma", "delta", ""], dtype=object)[ints % 5]
    lists = pa.ListArray.from_arrays(
        pa.array(np.arange(0, 3 * ROWS + 1, 3, dtype=np.int32)),
        pa.array(rng.random(3 * ROWS)),
    )
    return pa.table(
        {
            "i": pa.array(ints, mask=ints % 11 == 0),
            "s": pa.array(words.tolist()),
            "l": lists,
            "st": pa.StructArray.from_arrays(
                [pa.array(ints % 7), pa.array(words.tolist())], names=["x", "y"]
            ),
        }
    )


@pytest.fixture(scope="module", params=["2.0", "2.2"])
def remote(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    """A file pylance wrote (with small pages, so reads span many), copied into the
    memory store; its local original for the oracle."""
    local = tmp_path_factory.mktemp("remote") / "f.lance"
    with RefWriter(str(local), version=request.param, max_page_bytes=64 << 10) as writer:
        writer.write_batch(_table())
    uri = f"memory://remote-reads-{uuid.uuid4().hex}/f.lance"
    FILES.put(uri, local.read_bytes())
    return uri, local


def _oracle(local: Path) -> pa.Table:
    return RefReader(str(local)).read_all().to_table()


def test_whole_file(remote: tuple[str, Path]) -> None:
    uri, local = remote
    assert LanceFileReader(uri, file_io=FILES).read_all().to_table().equals(_oracle(local))


@pytest.mark.parametrize(("start", "count"), [(0, 1), (1234, 20_000), (ROWS - 7, 7)])
def test_ranges_and_batches(remote: tuple[str, Path], start: int, count: int) -> None:
    uri, local = remote
    want = _oracle(local).slice(start, count)
    reader = LanceFileReader(uri, file_io=FILES)
    assert reader.read_range(start, count).to_table().equals(want)
    batches = list(reader.read_range(start, count, batch_size=3001).to_batches())
    assert pa.Table.from_batches(batches, schema=want.schema).equals(want)


def test_takes(remote: tuple[str, Path]) -> None:
    uri, local = remote
    rows = np.sort(np.random.default_rng(3).choice(ROWS, 300, replace=False))
    want = _oracle(local).take(pa.array(rows))
    assert LanceFileReader(uri, file_io=FILES).take_rows(rows).to_table().equals(want)
    assert (
        LanceFileReader(uri, columns=["s"], file_io=FILES)
        .take_rows(rows)
        .to_table()
        .equals(want.select(["s"]))
    )


def test_a_scan_costs_a_few_requests(remote: tuple[str, Path]) -> None:
    """Many pages, few round trips: the tail first, then the pages coalesced."""
    uri, _ = remote
    reader = LanceFileReader(uri, file_io=FILES)
    pages = sum(len(c.pages) for c in reader._columns)
    io.REQUEST_STATS.reset()
    reader.read_all().to_table()
    assert io.REQUEST_STATS.requests <= 4 < pages, (io.REQUEST_STATS, pages)
    # What was fetched for the read is let go once it is done: the file's tail stays.
    held = sum(b.size for b in reader._source._blocks)  # type: ignore[attr-defined]
    assert held <= TAIL_BYTES


def test_a_scan_in_batches_fetches_each_byte_once(remote: tuple[str, Path]) -> None:
    uri, local = remote
    reader = LanceFileReader(uri, file_io=FILES)
    io.REQUEST_STATS.reset()
    batches = list(reader.read_all(batch_size=999).to_batches())
    assert pa.Table.from_batches(batches).equals(_oracle(local))
    # Each page once (plus the ranges merged across small gaps), never page by batch.
    assert io.REQUEST_STATS.bytes_read <= local.stat().st_size


def test_dataset_on_the_memory_store_matches_pylance(tmp_path: Path) -> None:
    """pylance writes locally; the same bytes in the memory store read the same."""
    local = tmp_path / "ds"
    lance.write_dataset(_table(), local, max_rows_per_file=20_000)
    lance.dataset(local).delete("i % 3 = 0")
    root = f"memory://remote-ds-{uuid.uuid4().hex}"
    for path in local.rglob("*"):
        if path.is_file():
            FILES.put(io.join(root, path.relative_to(local).as_posix()), path.read_bytes())
    import lancelet
    from lancelet.transaction.store import DatasetStore

    # The same store the files were put in (a memory:// open is otherwise a new store).
    ours = lancelet.LanceDataset(root, _store=DatasetStore(root, file_io=FILES))
    theirs = lance.dataset(local)
    assert ours.to_table().equals(theirs.to_table())
    assert ours.to_table(filter="s = 'beta'", columns=["i", "l"]).equals(
        theirs.to_table(filter="s = 'beta'", columns=["i", "l"])
    )
