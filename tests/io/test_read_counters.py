"""lancelet.iops_counter and bytes_read_counter: they grow with every read request and
the bytes it returns, on each backend."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lancelet
from lancelet import io
from lancelet.io import counters

FILES = io.FileIO()


def _deltas(action: object) -> tuple[int, int]:
    iops, read = lancelet.iops_counter(), lancelet.bytes_read_counter()
    action()  # type: ignore[operator]
    return lancelet.iops_counter() - iops, lancelet.bytes_read_counter() - read


@pytest.mark.parametrize("where", ["local", "memory"])
def test_whole_object_reads_are_counted(tmp_path: Path, where: str) -> None:
    uri = str(tmp_path / "obj") if where == "local" else "memory:///counters/obj"
    FILES.put(uri, b"x" * 100)
    assert _deltas(lambda: FILES.read_bytes(uri)) == (1, 100)


@pytest.mark.parametrize("where", ["local", "memory"])
def test_range_reads_are_counted(tmp_path: Path, where: str) -> None:
    uri = str(tmp_path / "obj") if where == "local" else "memory:///counters/ranges"
    FILES.put(uri, bytes(range(256)) * 4096)
    source = FILES.open_input(uri)
    iops, read = _deltas(lambda: source.read(1000, 24))
    assert iops == 1
    assert read >= 24  # an object store fetches at least MIN_FETCH_BYTES
    source.close()


def test_writes_alone_are_not_counted(tmp_path: Path) -> None:
    assert _deltas(lambda: FILES.put(str(tmp_path / "w"), b"abc")) == (0, 0)


def test_scans_count_reads(tmp_path: Path) -> None:
    ds = lancelet.write_dataset(pa.table({"a": [1, 2, 3]}), tmp_path / "ds")
    iops, read = _deltas(lambda: lancelet.dataset(tmp_path / "ds").to_table())
    assert iops > 0 and read > 0
    assert _deltas(ds.to_table)[0] > 0


def test_counters_are_module_functions() -> None:
    assert lancelet.iops_counter is counters.iops_counter
    assert lancelet.bytes_read_counter is counters.bytes_read_counter


@pytest.mark.parametrize("size", [1000, 1 << 20])
def test_a_local_range_read_as_an_array_is_counted_and_equal(tmp_path: Path, size: int) -> None:
    """A small file is read whole, a large one mapped: either way a range read as a
    numpy view is one request holding the range's bytes."""
    data = (bytes(range(256)) * (size // 256 + 1))[:size]
    uri = str(tmp_path / "obj")
    FILES.put(uri, data)
    source = FILES.open_input(uri)
    found: list[bytes] = []
    assert _deltas(lambda: found.append(source.read_array(300, 500).tobytes())) == (1, 500)
    assert found == [data[300:800]] == [source.read(300, 500).to_pybytes()]
    source.close()
