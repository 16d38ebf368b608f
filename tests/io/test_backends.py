"""The local backend and the memory object store answer every storage call alike.

Each test runs against a fresh local directory and a fresh ``memory://`` prefix;
expected answers are the bytes and names the test itself wrote.
"""

from __future__ import annotations

import os
import random
import threading
import uuid
from pathlib import Path

import pytest

from lancelet import io
from lancelet.errors import LanceFileError

FILES = io.FileIO()


@pytest.fixture(params=["local", "memory"])
def base(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "local":
        return str(tmp_path / "root")
    return f"memory://{uuid.uuid4().hex}/root"


def _tree(base: str) -> dict[str, int]:
    return {name: info.size for name, info in FILES.list_tree(base)}


def test_put_then_read(base: str) -> None:
    FILES.put(io.join(base, "a/b.bin"), b"12345")
    FILES.put(io.join(base, "empty"), b"")
    assert FILES.read_bytes(io.join(base, "a/b.bin")) == b"12345"
    assert FILES.read_bytes(io.join(base, "empty")) == b""
    FILES.put(io.join(base, "a/b.bin"), b"replaced", durable=False)
    assert FILES.read_bytes(io.join(base, "a/b.bin")) == b"replaced"


def test_missing_objects(base: str) -> None:
    missing = io.join(base, "missing")
    with pytest.raises(FileNotFoundError):
        FILES.read_bytes(missing)
    with pytest.raises(FileNotFoundError):
        FILES.size_of(missing)
    assert FILES.head(missing) is None
    assert not FILES.exists(missing)
    with pytest.raises((FileNotFoundError, LanceFileError)):
        FILES.open_input(missing)


def test_head(base: str) -> None:
    path = io.join(base, "x")
    FILES.put(path, b"abc")
    found = FILES.head(path)
    assert found is not None and found.size == 3 and found.modified_ns > 0
    assert FILES.size_of(path) == 3 and FILES.exists(path)


def test_put_if_not_exists(base: str) -> None:
    path = io.join(base, "_versions/1.manifest")
    assert FILES.put_if_not_exists(path, b"first")
    assert not FILES.put_if_not_exists(path, b"second")
    assert FILES.read_bytes(path) == b"first"
    assert _tree(base) == {"_versions/1.manifest": 5}  # the loser left nothing behind


def test_listing(base: str) -> None:
    FILES.put(io.join(base, "a/b.bin"), b"12345")
    FILES.put(io.join(base, "a/c/d.bin"), b"xy")
    FILES.put(io.join(base, "top"), b"")
    FILES.put(io.join(base + "-sibling", "not-below"), b"!")
    assert sorted(FILES.list_dir(base)) == ["a", "top"]
    assert sorted(FILES.list_dir(io.join(base, "a"))) == ["b.bin", "c"]
    assert FILES.list_dir(io.join(base, "nothing")) == []
    assert FILES.list_dir(io.join(base, "top")) == []
    assert _tree(base) == {"a/b.bin": 5, "a/c/d.bin": 2, "top": 0}
    assert _tree(io.join(base, "a")) == {"b.bin": 5, "c/d.bin": 2}
    assert _tree(io.join(base, "nothing")) == {}
    assert FILES.is_dir(io.join(base, "a")) and FILES.is_dir(io.join(base, "a/c"))
    assert not FILES.is_dir(io.join(base, "a/b.bin"))
    assert not FILES.is_dir(io.join(base, "top"))
    assert not FILES.is_dir(io.join(base, "nothing"))
    # A prefix that is not a whole name is not a directory.
    assert not FILES.is_dir(io.join(base, "a/c/d"))


def test_names_are_taken_as_they_are(base: str) -> None:
    # A name joined below a location is the object's name, even where it looks like
    # URI syntax (an escape, a query, a fragment): listing gives it back, unchanged.
    names = ["a%20b", "what?", "#1", "100%", "x%2Fy", "a b"]
    for name in names:
        FILES.put(io.join(base, name), name.encode())
    assert sorted(FILES.list_dir(base)) == sorted(names)
    assert sorted(_tree(base)) == sorted(names)
    for name in FILES.list_dir(base):
        assert FILES.read_bytes(io.join(base, name)) == name.encode()
        FILES.delete(io.join(base, name))
    assert _tree(base) == {}


def test_delete(base: str) -> None:
    path = io.join(base, "a/x")
    FILES.put(path, b"x")
    FILES.put(io.join(base, "a/y"), b"y")
    FILES.delete(path)
    FILES.delete(path)  # already gone: no error
    assert not FILES.exists(path)
    assert _tree(base) == {"a/y": 1}


def test_remove_tree(base: str) -> None:
    for name in ("d/1", "d/e/2", "d/e/f/3", "keep"):
        FILES.put(io.join(base, name), b"-")
    FILES.put(io.join(base, "d-sibling/4"), b"-")
    FILES.remove_tree(io.join(base, "d"))
    FILES.remove_tree(io.join(base, "never-was"))
    assert _tree(base) == {"keep": 1, "d-sibling/4": 1}
    assert not FILES.is_dir(io.join(base, "d"))


def test_remove_empty_dirs(base: str) -> None:
    FILES.put(io.join(base, "d/e/x"), b"-")
    FILES.delete(io.join(base, "d/e/x"))
    FILES.put(io.join(base, "d/kept"), b"-")
    FILES.remove_empty_dirs(io.join(base, "d"))
    assert _tree(base) == {"d/kept": 1}
    assert FILES.list_dir(io.join(base, "d")) == ["kept"]


def test_output_commit(base: str) -> None:
    path = io.join(base, "out/file.bin")
    out = FILES.open_output(path)
    out.write(b"abc")
    out.write(bytearray(b"de"))
    out.write(memoryview(b"fgh"))
    assert out.position == 8
    assert not FILES.exists(path)  # nothing visible before the commit
    out.commit()
    assert FILES.read_bytes(path) == b"abcdefgh"
    with FILES.open_output(path) as again:
        again.write(b"new")
    assert FILES.read_bytes(path) == b"new"


def test_output_abort_leaves_nothing(base: str) -> None:
    path = io.join(base, "out/file.bin")
    out = FILES.open_output(path)
    out.write(b"x" * 1000)
    out.abort()
    assert not FILES.exists(path)
    assert _tree(base) == {}
    with pytest.raises(RuntimeError), FILES.open_output(path) as failing:
        failing.write(b"partial")
        raise RuntimeError("the writer failed")
    assert _tree(base) == {}


def test_abort_keeps_the_previous_object(base: str) -> None:
    path = io.join(base, "file.bin")
    FILES.put(path, b"old")
    out = FILES.open_output(path)
    out.write(b"new")
    out.abort()
    assert FILES.read_bytes(path) == b"old"


def test_random_ranges_read_back(base: str) -> None:
    rng = random.Random(7)
    data = rng.randbytes(700_000)  # several fetch blocks beyond the tail
    path = io.join(base, "data.bin")
    FILES.put(path, data)
    source = FILES.open_input(path)
    try:
        assert source.size == len(data)
        for _ in range(300):
            offset = rng.randrange(len(data))
            length = rng.randrange(min(len(data) - offset, 100_000) + 1)
            assert source.read(offset, length).to_pybytes() == data[offset : offset + length]
        ranges = [(rng.randrange(len(data) - 5000), rng.randrange(1, 5000)) for _ in range(20)]
        source.prefetch(ranges)
        for offset, length in ranges:
            assert source.read(offset, length).to_pybytes() == data[offset : offset + length]
        assert source.read(0, len(data)).to_pybytes() == data
        assert source.read(len(data), 0).to_pybytes() == b""
    finally:
        source.close()


def _stored(base: str, name: str, rng: random.Random, size: int) -> tuple[bytes, io.InputFile]:
    """``size`` random bytes stored under ``name``, and the file opened for reading."""
    data = rng.randbytes(size)
    path = io.join(base, name)
    FILES.put(path, data)
    return data, FILES.open_input(path)


def test_bytes_lie_in_memory_as_aligned_as_in_the_file(base: str) -> None:
    # As a memory map places them: a range that starts at a multiple of 64 in the file
    # starts at a multiple of 64 in memory, so arrays decoded in place are aligned.
    rng = random.Random(3)
    data, source = _stored(base, "aligned.bin", rng, 900_000)
    ranges = [(rng.randrange(len(data) - 1000), rng.randrange(1, 1000)) for _ in range(50)]
    source.prefetch(ranges[:10])
    for offset, length in [*ranges, (len(data) - 100, 100), (0, 64)]:
        found = source.read(offset, length)
        assert found.to_pybytes() == data[offset : offset + length]
        assert (found.address - offset) % 64 == 0, (offset, found.address % 64)


def test_reads_of_a_small_file(base: str) -> None:
    path = io.join(base, "small")
    FILES.put(path, b"0123456789")
    source = FILES.open_input(path)
    assert source.size == 10
    assert source.read(3, 4).to_pybytes() == b"3456"
    assert source.read(0, 10).to_pybytes() == b"0123456789"
    empty = io.join(base, "empty")
    FILES.put(empty, b"")
    assert FILES.open_input(empty).size == 0


def test_put_if_not_exists_race_has_one_winner(base: str) -> None:
    path = io.join(base, "_versions/2.manifest")
    threads = 8
    start = threading.Barrier(threads)
    won: list[int] = []

    def race(i: int) -> None:
        start.wait()
        if FILES.put_if_not_exists(path, f"writer {i}".encode() * 1000):
            won.append(i)

    workers = [threading.Thread(target=race, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(won) == 1
    assert FILES.read_bytes(path) == f"writer {won[0]}".encode() * 1000
    assert list(_tree(base)) == ["_versions/2.manifest"]


def test_local_files_are_where_the_path_says(tmp_path: Path) -> None:
    path = tmp_path / "d" / "f"
    FILES.put(str(path), b"bytes")
    assert path.read_bytes() == b"bytes"
    assert FILES.read_bytes(path) == b"bytes"  # a PathLike works too
    assert os.listdir(tmp_path / "d") == ["f"]  # no temporary file left over


def test_released_ranges_read_back(base: str) -> None:
    """A reader done with ranges lets them go; bytes cut from them before, and
    reads after, still hold the file's bytes."""
    rng = random.Random(11)
    data, source = _stored(base, "released.bin", rng, 1_000_000)
    cut = [(rng.randrange(len(data) - 50_000), rng.randrange(1, 50_000)) for _ in range(30)]
    held = [(offset, source.read(offset, length)) for offset, length in cut]
    source.release([*cut, (0, len(data)), (len(data) - 10, 10), (5, 0)])
    for offset, buffer in held:
        assert buffer.to_pybytes() == data[offset : offset + buffer.size]
    assert source.read(0, len(data)).to_pybytes() == data


def _mapped_kib(path: str) -> int:
    """Resident KiB of this process's mappings of ``path`` (Linux)."""
    resident, inside = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            first = line.split(maxsplit=1)[0]
            if "-" in first and not first.endswith(":"):  # a mapping's header
                inside = line.rstrip("\n").endswith(path)
            elif inside and first == "Rss:":
                resident += int(line.split()[1])
    return resident


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs Linux's smaps")
def test_released_pages_leave_resident_memory(tmp_path: Path) -> None:
    path = str(tmp_path / "big.bin")
    FILES.put(path, bytes(range(256)) * (32 << 12))  # 32 MiB
    source = FILES.open_input(path)
    whole = source.read(0, source.size)
    assert sum(whole.to_pybytes()[::4096]) >= 0  # touches every page
    assert _mapped_kib(path) >= 30 << 10
    source.release([(100, source.size - 100)])
    assert _mapped_kib(path) <= 8  # the first page, partly outside, stays
    assert whole.to_pybytes() == bytes(range(256)) * (32 << 12)
